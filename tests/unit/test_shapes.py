"""`shapes` against torch's own ExportedProgram, on archives torch wrote and loads.

Issue 12: for every program, `shapes --json` `inputs` (shape as `str` of each size,
dtype without `torch.`) and `symbols` (min, max, and the input dims whose size is
exactly that symbol) must equal what `torch.export.load` gives: placeholder
`meta["val"]` and `range_constraints`. The corpus is the listing's
(fidelity_cases.py / fidelity_models.py: ExportDB, HF tiny models, derived dims,
unbacked symbols, control flow, multi-program archives) plus cases made for
shapes here (a derived expression input, Dim.AUTO specializing, torch._check
assertions, shared symbols). Everything is exported at test time with real torch.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from archive_factory import ArchiveFactory

from fidelity_cases import Archive, Skip, session_corpus

# --- cases made for the shapes view ------------------------------------------------


def _shape_builders() -> list[tuple[str, Any]]:
    import torch
    from torch.export import Dim, export

    nn = torch.nn

    class Affine(nn.Module):
        def forward(self, x: torch.Tensor, y: torch.Tensor) -> Any:
            return x[1:] * 2, y[:-1]

    def derived_affine() -> Any:  # input sizes `2*s + 1` and `2*s` (Dim arithmetic)
        d = Dim("d", min=3, max=50)
        return export(Affine(), (torch.randn(11, 2), torch.randn(10)),
                      dynamic_shapes=({0: 2 * d + 1}, {0: 2 * d}))

    class Shared(nn.Module):
        def forward(self, ids: torch.Tensor, hidden: torch.Tensor, mask: torch.Tensor) -> Any:
            return hidden[:, : ids.shape[1]] * mask[..., None] + ids[..., None]

    def shared_symbol() -> Any:  # one batch symbol read by three inputs
        b, s = Dim("b", min=1, max=16), Dim("s", min=4, max=128)
        return export(Shared(), (torch.ones(2, 8), torch.randn(2, 8, 3), torch.ones(2, 8)),
                      dynamic_shapes=({0: b, 1: s}, {0: b, 1: s}, {0: b, 1: s}))

    class Auto(nn.Module):
        def forward(self, x: torch.Tensor) -> Any:
            return x.reshape(-1, 4) @ torch.ones(4, 2)

    def auto_specialized() -> Any:  # Dim.AUTO on dim 1, which the code pins to 4
        return export(Auto(), (torch.randn(3, 4),), dynamic_shapes=({0: Dim.AUTO, 1: Dim.AUTO},))

    class Checked(nn.Module):
        def forward(self, x: torch.Tensor, n: torch.Tensor) -> Any:
            k = n.item()
            torch._check(k >= 1)
            torch._check(k <= x.shape[0])
            return x[:k].sum(0), torch.zeros(k, 2)

    def runtime_checks() -> Any:  # unbacked u0 with assertions that mention s and u
        return export(Checked(), (torch.randn(6, 3), torch.tensor(2)),
                      dynamic_shapes=({0: Dim("n", min=2, max=40)}, None))

    class Scalars(nn.Module):
        def forward(self, x: torch.Tensor, k: int, flag: bool) -> Any:
            return x * k if flag else x

    def scalar_inputs() -> Any:  # non-tensor user inputs next to a tensor
        return export(Scalars(), (torch.randn(3, 2), 4, True),
                      dynamic_shapes=({0: Dim("r", min=2, max=9)}, None, None))

    return [("shapes/derived_affine", derived_affine), ("shapes/shared_symbol", shared_symbol),
            ("shapes/auto_specialized", auto_specialized),
            ("shapes/runtime_checks", runtime_checks), ("shapes/scalar_inputs", scalar_inputs)]


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory, archive_factory: ArchiveFactory
           ) -> tuple[list[Archive], list[Skip]]:
    import transformers  # noqa: F401 - HF output types must be registered for load

    # SHAPES_ONLY=hf/,shapes/ narrows the corpus while working (the breadth test then fails)
    only = [x for x in os.environ.get("SHAPES_ONLY", "").split(",") if x]
    archives, skipped = session_corpus(tmp_path_factory, only or None)
    archives = [a for a in archives if "#noname" not in a.name]  # same shapes as the named file
    for name, build in _shape_builders():
        if only and not any(s in name for s in only):
            continue
        # this file's own cases, beside the shared corpus
        archives.append(Archive(name, "shapes", archive_factory.save(name, build)))
    return archives, skipped


# --- torch's side ------------------------------------------------------------------


def _torch_programs(archive: Archive) -> dict[str, Any]:
    import torch

    if archive.multi:
        from torch.export.pt2_archive._package import load_pt2
        return dict(load_pt2(str(archive.path)).exported_programs)
    return {"model": torch.export.load(str(archive.path))}


def _bound(value: Any) -> int | None:
    if not getattr(value, "is_finite", True) or getattr(value, "is_infinite", False):
        return None  # int_oo / -int_oo / oo
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError, AttributeError):
        return None


def torch_view(ep: Any) -> dict[str, Any]:
    """What torch says: user inputs' shapes and dtypes, symbols' ranges and sources."""
    import torch

    from torch.export.graph_signature import ConstantArgument, InputKind

    placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    inputs = []
    sources: dict[str, list[str]] = {}
    for spec in ep.graph_signature.input_specs:
        if spec.kind != InputKind.USER_INPUT:
            continue
        if isinstance(spec.arg, ConstantArgument):  # an int/str/None the caller passed
            inputs.append({"value": str(spec.arg.value), "shape": None, "dtype": None})
            continue
        name = spec.arg.name
        val = placeholders[name].meta.get("val") if name in placeholders else None
        if isinstance(val, torch.Tensor):
            shape = [str(s) for s in val.shape]
            inputs.append({"name": name, "shape": shape,
                           "dtype": str(val.dtype).removeprefix("torch.")})
            for i, s in enumerate(shape):
                sources.setdefault(s, []).append(f"{name}.shape[{i}]")
        else:  # a SymInt/SymFloat/object input
            inputs.append({"name": name, "shape": None, "dtype": None})
    symbols = {str(sym): {"min": _bound(r.lower), "max": _bound(r.upper),
                          "sources": sources.get(str(sym), [])}
               for sym, r in ep.range_constraints.items()}
    return {"inputs": inputs, "symbols": symbols, "guards": sorted(ep._guards_code),
            "assertions": sorted(_torch_assertion_nodes(ep))}


def _torch_assertion_nodes(ep: Any) -> list[str]:
    """The runtime shape assertions torch put in the graphs (its own op names:
    `_assert_scalar`, `_assert_async`, `sym_constrain_range[_for_size]`, their
    functional forms), control-flow subgraphs included."""
    import torch

    names = []
    for mod in ep.graph_module.modules():
        if isinstance(mod, torch.fx.GraphModule):
            for n in mod.graph.nodes:
                op = getattr(n.target, "__name__", str(n.target))
                if n.op == "call_function" and ("assert_scalar" in op or "assert_async" in op
                                                or "constrain_range" in op):
                    names.append(n.name)
    return names


def ours_via_cli(path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    from inspector.cli import main

    capsys.readouterr()
    assert main(["shapes", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _comparable(program: dict[str, Any]) -> dict[str, Any]:
    return {"inputs": [{k: i[k] for k in (("value",) if i["kind"] == "constant" else ("name",))
                        + ("shape", "dtype")} for i in program["inputs"]],
            "symbols": {n: {k: s[k] for k in ("min", "max", "sources")}
                        for n, s in program["symbols"].items()},
            "guards": sorted(g["code"] for g in program["guards"]),
            "assertions": sorted(a["node"] for a in program["assertions"])}


# --- the checks ----------------------------------------------------------------------


@pytest.mark.slow
def test_inputs_and_symbols_equal_torch(corpus: tuple[list[Archive], list[Skip]],
                                        capsys: pytest.CaptureFixture[str]) -> None:
    archives, _ = corpus
    compared, mismatches, unloadable = 0, [], []
    symbols_seen = sources_seen = expressions_seen = guards_seen = assertions_seen = 0
    for archive in archives:
        try:
            theirs = {name: torch_view(ep) for name, ep in _torch_programs(archive).items()}
        except Exception as exc:  # noqa: BLE001 - a file torch itself cannot load is not ours to judge
            unloadable.append(f"{archive.name}: {type(exc).__name__}")
            continue
        ours = {p["name"]: _comparable(p) for p in ours_via_cli(archive.path, capsys)["programs"]}
        assert set(ours) == set(theirs), archive.name
        for name, expected in theirs.items():
            compared += 1
            if ours[name] != expected:
                mismatches.append(f"{archive.name}:{name}\n  torch: {expected}\n  ours:  {ours[name]}")
            symbols_seen += len(expected["symbols"])
            sources_seen += sum(len(s["sources"]) for s in expected["symbols"].values())
            expressions_seen += sum(1 for i in expected["inputs"] for s in i["shape"] or ()
                                    if not s.isdigit() and not s.isidentifier())
            guards_seen += len(expected["guards"])
            assertions_seen += len(expected["assertions"])
    with capsys.disabled():
        print(f"\nshapes: {compared} programs compared with torch, {symbols_seen} symbols, "
              f"{sources_seen} sources, {expressions_seen} derived input sizes, "
              f"{guards_seen} guards, {assertions_seen} runtime assertions; "
              f"torch could not load {len(unloadable)}: {unloadable}")
    assert not mismatches, "\n".join(mismatches[:10])
    if not os.environ.get("SHAPES_ONLY"):
        # guard against the corpus quietly shrinking
        # (measured: 90 programs, 58 symbols, 64 sources, 4 derived input sizes)
        assert compared >= 80 and symbols_seen >= 50 and sources_seen >= 55
        assert expressions_seen >= 2 and len(unloadable) <= 3
        assert guards_seen >= 1 and assertions_seen >= 3
        names = {a.name for a in archives}
        assert {"hf/gpt2", "hf/bert", "hf/llama", "hf/vit", "ops/unbacked", "ops/derived_dims",
                "shapes/derived_affine", "shapes/runtime_checks"} <= names


def _program(corpus: tuple[list[Archive], list[Skip]], case: str,
             capsys: pytest.CaptureFixture[str], name: str = "model") -> dict[str, Any]:
    archive = next((a for a in corpus[0] if a.name == case), None)
    if archive is None:
        pytest.skip(f"{case} not in this corpus run")
    doc = ours_via_cli(archive.path, capsys)
    return next(p for p in doc["programs"] if p["name"] == name)


def test_shared_symbol_lists_every_input_dim(corpus, capsys) -> None:
    p = _program(corpus, "shapes/shared_symbol", capsys)
    by_sources = {tuple(s["sources"]): s for s in p["symbols"].values()}
    batch = by_sources[("ids.shape[0]", "hidden.shape[0]", "mask.shape[0]")]
    seq = by_sources[("ids.shape[1]", "hidden.shape[1]", "mask.shape[1]")]
    assert (batch["min"], batch["max"], batch["example"]) == (1, 16, 2)
    assert (seq["min"], seq["max"], seq["example"]) == (4, 128, 8)
    assert p["inputs"][0]["dtype"] == "float32" and p["inputs"][1]["shape"][2] == "3"


def test_derived_input_sizes_are_listed_with_their_sources(corpus, capsys) -> None:
    p = _program(corpus, "shapes/derived_affine", capsys)
    x, y = p["inputs"]
    # torch keys range_constraints by the derived expressions too, and the root
    # symbol, which no input has as its exact size
    (sym,) = [n for n, s in p["symbols"].items() if not s["sources"]]
    assert (p["symbols"][sym]["min"], p["symbols"][sym]["max"]) == (3, 50)
    assert x["shape"][0] == f"2*{sym} + 1" and y["shape"][0] == f"2*{sym}"
    assert p["symbols"][f"2*{sym} + 1"]["sources"] == ["x.shape[0]"]
    assert (p["symbols"][f"2*{sym} + 1"]["min"], p["symbols"][f"2*{sym} + 1"]["max"]) == (7, 101)
    derived = {d["expr"]: d for d in p["derived"]}
    assert derived[f"2*{sym} + 1"]["sources"] == ["x.shape[0]"]
    assert derived[f"2*{sym} + 1"]["symbols"] == [sym]
    assert derived[f"2*{sym} + 1"]["example"] == 11


def test_runtime_assertions_read_like_torch_checks(corpus, capsys) -> None:
    import torch

    p = _program(corpus, "shapes/runtime_checks", capsys)
    archive = next(a for a in corpus[0] if a.name == "shapes/runtime_checks")
    ep = torch.export.load(str(archive.path))
    # torch's own assertion nodes, with the sympy text torch printed into each message
    theirs = {n.name: n.args[1] for n in ep.graph.nodes
              if n.op == "call_function" and "assert_scalar" in str(n.target)}
    ours = {a["node"]: a for a in p["assertions"] if a["op"] == "_assert_scalar"}
    assert set(ours) == set(theirs) and theirs
    for name, message in theirs.items():
        assert f"expression {ours[name]['condition']} on node" in message or "==" in ours[name]["condition"]
        assert ours[name]["file"] == __file__ and ours[name]["code"].startswith("torch._check(") \
            or ours[name]["code"].startswith("k = n.item()")
    unbacked = [s for s in p["symbols"].values() if s["defined_by"]]
    assert unbacked and all(s["assertions"] for s in unbacked)
    assert any(">= 1" in c for s in unbacked for c in s["assertions"])


def test_auto_specialization_and_guards(corpus, capsys) -> None:
    p = _program(corpus, "shapes/auto_specialized", capsys)
    assert p["inputs"][0]["shape"][1] == "4"  # torch pinned the AUTO dim
    assert len(p["symbols"]) == 1


def test_guards_are_torchs_own_and_torch_enforces_them(archive_factory: ArchiveFactory,
                                                       capsys) -> None:
    """Exports whose dims torch relates (Dim.AUTO): `shapes` lists exactly the guards
    torch computed at export (`ep._guards_code`, before any save), readable; and each
    one is real: torch's own `ep.module()` of the loaded file refuses inputs that
    break it and runs inputs that keep it."""
    import torch
    from torch.export import Dim, export

    class Same(torch.nn.Module):
        def forward(self, x: torch.Tensor, y: torch.Tensor) -> Any:
            return x + y

    class Prefix(torch.nn.Module):
        def forward(self, x: torch.Tensor, y: torch.Tensor) -> Any:
            return x[: y.shape[0]] * 2

    auto = Dim.AUTO
    cases = [
        ("same", Same(), (torch.randn(3, 4), torch.randn(3, 4)),
         ({0: auto, 1: auto}, {0: auto, 1: auto}),
         {"x.shape[0] == y.shape[0]", "x.shape[1] == y.shape[1]"},
         (torch.randn(5, 2), torch.randn(5, 2)), (torch.randn(5, 2), torch.randn(6, 2))),
        ("prefix", Prefix(), (torch.randn(6, 4), torch.randn(3)), ({0: auto}, {0: auto}),
         {"y.shape[0] <= x.shape[0]"},
         (torch.randn(9, 4), torch.randn(4)), (torch.randn(3, 4), torch.randn(4))),
    ]
    for name, model, example, dynamic, readable, keeps, breaks in cases:
        ep = export(model, example, dynamic_shapes=dynamic)
        theirs = list(ep._guards_code)
        assert theirs, name  # torch did record a guard here
        path = archive_factory.save(f"shapes/guards_{name}", ep)
        (program,) = ours_via_cli(path, capsys)["programs"]
        assert sorted(g["code"] for g in program["guards"]) == sorted(theirs), name
        assert {g["text"] for g in program["guards"]} == readable, name
        loaded = torch.export.load(str(path)).module()
        loaded(*keeps)
        with pytest.raises(Exception, match="Guard failed"):
            loaded(*breaks)


def test_guards_are_readable() -> None:
    from inspector.core.shapes import readable_guard

    assert readable_guard("L['y'].size()[0] == L['x'].size()[0]") == "y.shape[0] == x.shape[0]"
    assert readable_guard("2*L['x'].stride()[1] <= 8") == "2*x.stride(1) <= 8"
    assert readable_guard("L['flat_args'][0].size()[0] == L['flat_args'][1].size()[0]",
                          ["x", "y"]) == "x.shape[0] == y.shape[0]"


def test_conditions_are_readable() -> None:
    from inspector.core.symbolic import render_condition, render_expr

    eq = render_expr("Equality(Symbol('s0', integer=True), Mul(Integer(2), Symbol('s1')))")
    assert eq == "Eq(s0, 2*s1)"
    assert render_condition(eq) == "s0 == 2*s1"
    assert render_condition("Ne(Mod(s0, 2), 0) & (s1 > 3)") == "Mod(s0, 2) != 0 & s1 > 3"
    assert render_condition("u0 >= 0") == "u0 >= 0"


def test_multi_program_archive(corpus, capsys) -> None:
    archive = next((a for a in corpus[0] if a.multi), None)
    if archive is None:
        pytest.skip("no multi-program archive in this run")
    doc = ours_via_cli(archive.path, capsys)
    assert len(doc["programs"]) >= 2
    from inspector.cli import main

    name = doc["programs"][1]["name"]
    assert main(["shapes", str(archive.path), "--json", "--program", name]) == 0
    one = json.loads(capsys.readouterr().out)
    assert [p["name"] for p in one["programs"]] == [name]


# --- the command as a user runs it -------------------------------------------------


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "inspector", *args],
                          capture_output=True, text=True, timeout=120)


def test_text_output_and_bad_input(small_archive: Path, tmp_path: Path) -> None:
    proc = _cli("shapes", str(small_archive))
    assert proc.returncode == 0, proc.stderr
    assert "program model" in proc.stdout and "x.shape[0]" in proc.stdout
    assert "[2, 64]" in proc.stdout
    for args, why in ((["--program", "nope"], "no program named 'nope'"), ([], None)):
        target = str(small_archive) if why else str(tmp_path / "missing.pt2")
        bad = _cli("shapes", target, *args)
        assert bad.returncode == 2
        lines = bad.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), bad.stderr
        assert "Traceback" not in bad.stderr and not bad.stdout
        if why:
            assert why in lines[0]
    junk = tmp_path / "junk.pt2"
    junk.write_bytes(b"not a zip at all")
    bad = _cli("shapes", str(junk), "--json")
    assert bad.returncode == 2 and bad.stderr.startswith("error: ") and not bad.stdout


# --- specializations and the hover text, on the bundled demo archive ---------------


def _with_record(src: Path, dst: Path, edit: Any) -> Path:
    import zipfile

    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename.endswith("extra/pt2_inspector.json"):
                data = json.dumps(edit(json.loads(data))).encode()
            zout.writestr(info, data)
    return dst


def test_a_requested_dim_that_came_out_constant_is_flagged(tmp_path: Path) -> None:
    from inspector.core.archive import open_archive
    from inspector.core.shapes import archive_shapes, program_shapes, requested_dims
    from inspector.resources import demo_archive

    demo = demo_archive()
    with open_archive(demo) as archive:
        # the demo's record predates `dynamic_shapes`: derived from its spec
        asked = requested_dims(archive)
        assert asked["decoder"]["input_ids"] == {0: "batch", 1: "seq_len"}
        assert all(not s.specialized for s in archive_shapes(archive))

    def claim(record: dict) -> dict:  # as if the export had asked for a Dim on dim 1
        record["dynamic_shapes"] = {"decoder": {"encoder_hidden_states": {"0": "batch",
                                                                          "1": "tokens"}}}
        return record
    edited = _with_record(demo, tmp_path / "claimed.pt2", claim)
    with open_archive(edited) as archive:
        (dec,) = archive_shapes(archive, "decoder")
        (spec,) = dec.specialized
        assert spec.source == "encoder_hidden_states.shape[1]" and spec.size == "50"
        assert "'tokens'" in spec.reason
        # across programs: the same input symbolic in one program, constant in another
        program = archive.program("decoder")
        plain = program_shapes(program)
        assert plain.specialized == []


def test_symbol_tooltip_says_range_sources_and_example() -> None:
    """The tooltip of the demo decoder's batch symbol says what torch's own loader
    says of it: its range (range_constraints), the inputs whose size it is (the
    placeholders' meta["val"]) and the example size (torch's example_inputs)."""
    import transformers.modeling_outputs  # noqa: F401 - the toy's output types, for pytree
    from torch.export.pt2_archive._package import load_pt2

    from inspector.core.archive import open_archive
    from inspector.core.shapes import archive_shapes, symbol_tooltip
    from inspector.resources import demo_archive

    ep = load_pt2(str(demo_archive())).exported_programs["decoder"]
    users = [s.arg.name for s in ep.graph_signature.input_specs if s.kind.name == "USER_INPUT"]
    vals = {n.name: n.meta["val"] for n in ep.graph.nodes if n.name in users}
    batch = str(vals["input_ids"].shape[0])
    sources = [f"{name}.shape[{i}]" for name in users for i, size in enumerate(vals[name].shape)
               if str(size) == batch]
    (rng,) = [r for sym, r in ep.range_constraints.items() if str(sym) == batch]
    example = ep.example_inputs[0][users.index("input_ids")].shape[0]
    assert sources == ["input_ids.shape[0]", "encoder_hidden_states.shape[0]"]

    with open_archive(demo_archive()) as archive:
        (dec,) = archive_shapes(archive, "decoder")
    tip = symbol_tooltip(dec, batch)
    assert tip is not None
    assert tip.splitlines()[0] == f"{batch}: [{int(rng.lower)}, {int(rng.upper)}]"
    assert f"{', '.join(sources)} (they must match at run time)" in tip
    assert f"example value at export: {example}" in tip
    assert symbol_tooltip(dec, "nope") is None


def test_a_dim_constant_here_and_symbolic_in_another_program_is_flagged() -> None:
    from inspector.core.shapes import InputShape, ProgramShapes, _cross_program

    def prog(name: str, shape: list[str]) -> ProgramShapes:
        return ProgramShapes(name, [InputShape("x", shape, "float32", "tensor")], {}, [], [], [])
    a, b = prog("prefill", ["s0", "3"]), prog("decode", ["1", "3"])
    _cross_program([a, b])
    assert a.specialized == []
    (spec,) = b.specialized
    assert (spec.source, spec.size) == ("x.shape[0]", "1") and "'prefill'" in spec.reason
