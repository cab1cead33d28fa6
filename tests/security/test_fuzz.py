"""Fuzzing real archives: random byte flips in the zip, and random mutations of
the JSON records (values replaced by other types, huge values, deleted keys).

The contract, checked in-process through the core API (tests/security/
exercise.py: open, info summary, listing, search, audit): each mutated file is
either read or refused with an InspectorError; anything else is a bug. The base
archive carries live payloads (pickles torch would run, code strings), so every
example also checks that nothing ran (the marker file stays absent).

CI runs a short deterministic pass. Release check (the long run):

    PT2I_FUZZ_EXAMPLES=10000 .venv/bin/pytest tests/security/test_fuzz.py -q

Each example costs 1-40 ms; 10,000 per test (20,000 cases) take about 6 minutes.
"""

from __future__ import annotations

import copy
import json
import os
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zipcraft
from exercise import exercise
from hostile_corpus import (CONSTANTS_CONFIG, PROGRAM, WEIGHTS_CONFIG, Base, by_name,
                            shell_touch, touch_code)
from inspector.core.errors import InspectorError
from readers import disagreements, ours

EXAMPLES = int(os.environ.get("PT2I_FUZZ_EXAMPLES", "150"))
LONG_RUN = "PT2I_FUZZ_EXAMPLES" in os.environ
FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not LONG_RUN,  # CI: the same examples every run; release: fresh ones
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


class Hostile:
    """The `pickle-everywhere` case (every payload torch would run) plus code in
    the program's strings (symbolic sizes, a range constraint, a stack trace), as
    editable parts, and its marker: every payload, and the code the JSON fuzzer
    injects, would create that one file."""

    def __init__(self, base: Base, work: Path) -> None:
        path, self.marker = by_name("pickle-everywhere").make(base, work)
        self.code = shell_touch(self.marker)
        pickled = Base.load(path)
        self.work = work
        program = json.dumps(_seed_code(pickled.json(PROGRAM), self.code,
                                        touch_code(self.marker))).encode()
        self.base = Base(path, pickled.top, [(rel, program if rel == PROGRAM else data)
                                             for rel, data in pickled.entries])
        self.zip_bytes = self.base.zip()
        self.docs = {rel: self.base.json(rel) for rel in (PROGRAM, WEIGHTS_CONFIG, CONSTANTS_CONFIG)}
        self.paths = {rel: list(_paths(doc)) for rel, doc in self.docs.items()}

    def check(self, data: bytes) -> None:
        fd, name = tempfile.mkstemp(suffix=".pt2", dir=self.work)
        with os.fdopen(fd, "wb") as fp:
            fp.write(data)
        try:
            exercise(Path(name))
        except InspectorError:
            pass  # a clear refusal is within the contract
        else:
            # Read: then torch's zip reader must find the same records, same bytes.
            assert disagreements(ours, Path(name)) == [], "torch reads it differently"
        finally:
            os.unlink(name)
        assert not self.marker.exists(), "the mutated archive ran code"


def _seed_code(doc: Any, shell: str, python: str) -> Any:
    """Code where a reader that evaluated strings would run it: one size of each
    symbolic tensor (sympify), a range constraint's symbol, and a stack trace's
    code line (which the listing shows). The base stays readable (as the corpus'
    `code-in-symbolic-sizes` case is)."""
    graph = doc["graph_module"]["graph"]
    seeded = 0
    for meta in graph["tensor_values"].values():
        for i, size in enumerate(meta["sizes"]):
            if "as_expr" in size:
                meta["sizes"][i] = {"as_expr": {"expr_str": shell, "hint": None}}
                seeded += 1
                break
    assert seeded, "the base archive has no symbolic sizes to seed"
    doc["range_constraints"][f"eval({python!r})"] = {"min_val": 0, "max_val": 5}
    node = graph["nodes"][0]
    node["metadata"]["stack_trace"] = f'File "<string>", line 1, in <module>\n    {shell}'
    return doc


def _with_code(value: Any, code: str) -> Any:
    """The strategy's CODE placeholder, replaced by this case's own payload."""
    if isinstance(value, str):
        return value.replace(CODE, code)
    if isinstance(value, list):
        return [_with_code(v, code) for v in value]
    if isinstance(value, dict):
        return {k: _with_code(v, code) for k, v in value.items()}
    return value


def _paths(doc: Any, prefix: tuple = ()) -> Any:
    """Every (key/index path) in a JSON document, containers included."""
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _paths(v, prefix + (i,))


@pytest.fixture(scope="module")
def hostile(base: Base, tmp_path_factory: pytest.TempPathFactory) -> Hostile:
    return Hostile(base, tmp_path_factory.mktemp("fuzz"))


def test_the_base_carries_live_code(hostile: Hostile) -> None:
    """The seeded base is readable, shows the code as text, and that code is live:
    run, it creates the very marker `check()` looks for (so the check can fail)."""
    from inspector.core.archive import open_archive
    from inspector.core.listing import render_listing

    path = hostile.work / "seeded.pt2"
    path.write_bytes(hostile.zip_bytes)
    exercise(path)
    with open_archive(path) as archive:
        program = archive.program("model")
        assert hostile.code in render_listing(program).text()  # the stack trace's code line
        sizes = [str(s) for meta in program.graph.tensor_values.values() for s in meta.sizes]
        assert any(hostile.code in s for s in sizes), "no code among the symbolic sizes"
    assert not hostile.marker.exists()
    exec(hostile.code)  # noqa: S102 - the proof that the payload is live
    try:
        assert hostile.marker.exists()
        with pytest.raises(AssertionError, match="ran code"):
            hostile.check(hostile.zip_bytes)
    finally:
        hostile.marker.unlink()


# --- byte-level mutations -----------------------------------------------------------

flips = st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255)),
                 min_size=1, max_size=12)


@FUZZ_SETTINGS
@given(flips=flips, cut=st.one_of(st.none(), st.floats(0, 1)),
       zone=st.sampled_from(["anywhere", "directory", "headers"]))
def test_byte_flips(hostile: Hostile, flips: list[tuple[float, int]], cut: float | None,
                    zone: str) -> None:
    data = bytearray(hostile.zip_bytes)
    # Flips land anywhere, or where a zip reader is most fragile: the central
    # directory and end record (last ~2 KB), or the local headers' first bytes.
    lo, hi = {"anywhere": (0, len(data)),
              "directory": (max(0, len(data) - 2048), len(data)),
              "headers": (0, min(len(data), 512))}[zone]
    for where, value in flips:
        data[lo + int(where * (hi - lo))] = value
    if cut is not None:
        data = data[: int(cut * len(data))]
    hostile.check(bytes(data))


# --- JSON-level mutations -----------------------------------------------------------

# Replaced by the case's own code (`Hostile.code`, which creates its marker) when
# a mutation is applied: the marker check then covers the injected code too.
CODE = "<<CODE>>"
values = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70),
    st.sampled_from([0, -1, 2**31, 2**63 - 1, 2**64, 10**30, 1e308, -0.0, 1e-320]),
    st.text(max_size=20), st.sampled_from(["", CODE, "\x1b[2J\x1b]0;x\x07", "\ud7ff\ue000",
                                           "s" * 100_000, "Add(" * 50 + "Symbol('s0')" + ")" * 50,
                                           "torch.ops.aten.add.Tensor", "cpu", "cuda:0"]),
    st.lists(st.integers(), max_size=4), st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
    st.just({"as_tensor": {"name": "x"}}), st.just({"as_expr": {"expr_str": CODE}}),
    st.just([[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]),
)
mutation = st.tuples(st.sampled_from([PROGRAM, PROGRAM, PROGRAM, WEIGHTS_CONFIG, CONSTANTS_CONFIG]),
                     st.floats(0, 1, exclude_max=True),
                     st.sampled_from(["replace", "replace", "delete", "duplicate", "wrap"]),
                     values)


def _apply(doc: Any, path: tuple, op: str, value: Any) -> Any:
    if not path:
        return value if op == "replace" else [doc] if op == "wrap" else doc
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    if op == "replace":
        parent[key] = value
    elif op == "wrap":
        parent[key] = [parent[key]]
    elif op == "delete":
        del parent[key]
    elif op == "duplicate" and isinstance(parent, list):
        parent.insert(key, parent[key])
    elif op == "duplicate":
        parent[f"{key}_copy"] = parent[key]
    return doc


@FUZZ_SETTINGS
@given(mutations=st.lists(mutation, min_size=1, max_size=6))
def test_json_mutations(hostile: Hostile, mutations: list[tuple[str, float, str, Any]]) -> None:
    docs = {rel: json.loads(json.dumps(doc)) for rel, doc in hostile.docs.items()}
    for rel, where, op, value in mutations:
        paths = hostile.paths[rel]
        path = paths[int(where * len(paths))]
        try:  # a copy: st.just values are shared between examples and mutations
            docs[rel] = _apply(docs[rel], path, op, _with_code(copy.deepcopy(value), hostile.code))
        except (KeyError, IndexError, TypeError):
            pass  # an earlier mutation removed or replaced that path
    replace = {rel: json.dumps(doc, ensure_ascii=False).encode("utf-8", "surrogatepass")
               for rel, doc in docs.items()}
    hostile.check(hostile.base.zip(replace=replace, compress=zipfile.ZIP_STORED))


# --- zip-structure mutations: where zip readers disagree (issue 18) -------------------

entry_change = st.tuples(
    st.floats(0, 1, exclude_max=True),
    st.sampled_from(["swapcase", "upper-top", "other-top", "descriptor", "utf8-flag",
                     "dos-folder", "unix-folder", "zip64", "duplicate", "duplicate-case",
                     "to-front", "non-ascii", "folder-slash"]))


def _mutate_entries(base: Base, entries: list[dict], where: float, change: str) -> None:
    i = int(where * len(entries))
    e = entries[i]
    name = e["name"]
    if change == "swapcase":
        e["name"] = base.top + name[len(base.top):].swapcase()
    elif change == "upper-top":
        e["name"] = base.top.upper() + name[len(base.top):]
    elif change == "other-top":
        e["name"] = "zz/" + name[len(base.top):]
    elif change == "descriptor":
        e["flags"] = e.get("flags", 0) | 0x8
    elif change == "utf8-flag":
        e["flags"] = e.get("flags", 0) ^ 0x800
    elif change == "dos-folder":
        e["external_attr"] = 0x10
    elif change == "unix-folder":
        e.update(made_by=0x031E, external_attr=0o040755 << 16)
    elif change == "zip64":
        e["zip64"] = True
    elif change == "duplicate":
        entries.append(dict(e))
    elif change == "duplicate-case":
        entries.append(dict(e, name=base.top + name[len(base.top):].upper()))
    elif change == "to-front":
        entries.insert(0, entries.pop(i))
    elif change == "non-ascii":
        e["name"] = name + "\u00e9"
    elif change == "folder-slash":
        e["name"] = name + "/"


@FUZZ_SETTINGS
@given(changes=st.lists(entry_change, min_size=1, max_size=5))
def test_zip_structure_mutations(hostile: Hostile, changes: list[tuple[float, str]]) -> None:
    base = hostile.base
    entries = [{"name": base.top + rel, "data": data} for rel, data in base.entries]
    for where, change in changes:
        _mutate_entries(base, entries, where, change)
    hostile.check(zipcraft.crafted_zip(entries))
