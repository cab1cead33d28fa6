"""Corpus for the listing fidelity test: real torch exports, saved, loaded back.

Every case is a real `torch.export` of a module (PyTorch's ExportDB examples,
tiny HuggingFace models built from configs, hand-written modules that hit the
corners of the printer: multi-output ops, symbolic arithmetic, control flow,
mutations, constants, dtypes, kwargs), saved with torch's own writers. The
reference text is what torch prints after loading the same file:
`torch.export.load(F).graph_module.print_readable()` (or `load_pt2(F)` for a
multi-program archive), so the comparison is against torch's deserializer and
FX's code generator, not against our idea of them.

Run it directly for a quick report without pytest:
    .venv/bin/python tests/unit/fidelity_cases.py [NAME_SUBSTRING ...]
"""

from __future__ import annotations

import difflib
import json
import re
import sys
import time
import traceback
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# FX ends a statement with `;  a = b = None` where values die; the listing
# leaves those out (issue 2 says to ignore them).
_DEAD_TAIL = re.compile(r";  (?:[A-Za-z_][A-Za-z_0-9]* = )+None$")


def normalize(text_or_lines: str | list[str]) -> list[str]:
    """Non-blank lines, stripped, without FX's `;  x = None` tails."""
    lines = text_or_lines.split("\n") if isinstance(text_or_lines, str) else text_or_lines
    out = []
    for line in lines:
        line = _DEAD_TAIL.sub("", line.rstrip()).strip()
        if line:
            out.append(line)
    return out


@dataclass
class Comparison:
    case: str
    group: str
    program: str
    theirs: list[str]
    ours: list[str]
    seconds: float = 0.0
    matched: int = 0
    diff: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        sm = difflib.SequenceMatcher(None, self.theirs, self.ours, autojunk=False)
        self.matched = sum(b.size for b in sm.get_matching_blocks())
        if self.matched != len(self.theirs) or len(self.ours) != len(self.theirs):
            self.diff = list(difflib.unified_diff(self.theirs, self.ours, "torch", "ours",
                                                  lineterm="", n=0))

    @property
    def total(self) -> int:
        # Extra lines of ours count against us too.
        return max(len(self.theirs), len(self.ours))

    @property
    def ratio(self) -> float:
        return self.matched / self.total if self.total else 1.0

    @property
    def file_lines(self) -> tuple[int, int]:
        """(`# File:` comment lines of torch's that we reproduce, how many torch has)."""
        ours = set(self.ours)
        theirs = [line for line in self.theirs if line.startswith("# File:")]
        return sum(1 for line in theirs if line in ours), len(theirs)


@dataclass
class Archive:
    name: str
    group: str
    path: Path
    multi: bool = False
    seconds: float = 0.0  # export + save


# Archives rewritten without node names, as older torch wrote them (the
# deserializer then names nodes itself, through FX's namespace).
LEGACY_FROM = ("ops/custom_ops", "ops/multi_output", "cond/nested_cond", "cond/while_loop_map",
               "cond/associative_scan", "ops/unbacked", "decomp/norms_train", "hf/bart")


@dataclass
class Skip:
    name: str
    stage: str  # export / save / load
    reason: str


# --- building --------------------------------------------------------------------

Builder = Callable[[], "dict[str, Any] | Any"]

# ExportDB examples exported again in strict mode (dynamo).
STRICT_EXPORTDB = ("cond_branch_class_method", "cond_operands", "dynamic_shape_map",
                   "constrain_as_size_example", "list_unpack", "dictionary",
                   "user_input_mutation", "dynamic_shape_constructor")


def _exportdb_builders() -> Iterator[tuple[str, str, Builder]]:
    import torch
    from torch._export.db.examples import all_examples

    for name, case in sorted(all_examples().items()):
        def build(case: Any = case) -> Any:
            model = case.model
            if not isinstance(model, torch.nn.Module):
                # a few cases are plain functions; export wants a module
                fn = model

                class Wrap(torch.nn.Module):
                    def forward(self, *a: Any, **k: Any) -> Any:
                        return fn(*a, **k)
                model = Wrap()
            return torch.export.export(model, case.example_args, case.example_kwargs,
                                       dynamic_shapes=case.dynamic_shapes)
        yield f"exportdb/{name}", "exportdb", build
    # strict mode (dynamo) gives other names, stack traces and node shapes
    for name in STRICT_EXPORTDB:
        case = all_examples().get(name)
        if case is None:  # renamed upstream: the strict count check then fails
            continue

        def build_strict(case: Any = case) -> Any:
            return torch.export.export(case.model, case.example_args, case.example_kwargs,
                                       dynamic_shapes=case.dynamic_shapes, strict=True)
        yield f"exportdb-strict/{name}", "exportdb", build_strict


def build_corpus(out_dir: Path, only: list[str] | None = None) -> tuple[list[Archive], list[Skip]]:
    """Export, save and reload every case; returns what torch could round-trip."""
    import torch

    from fidelity_models import custom_builders, hf_builders

    archives: list[Archive] = []
    skipped: list[Skip] = []
    builders = list(_exportdb_builders()) + list(custom_builders()) + list(hf_builders())
    for name, group, build in builders:
        if only and not any(s in name for s in only):
            continue
        path = out_dir / (name.replace("/", "__") + ".pt2")
        started = time.perf_counter()
        try:
            result = build()
        except Exception as exc:  # noqa: BLE001 - a case torch cannot export is skipped
            skipped.append(Skip(name, "export", _why(exc)))
            continue
        multi = isinstance(result, dict)
        try:
            if multi:
                from torch.export.pt2_archive._package import package_pt2
                package_pt2(str(path), exported_programs=result)
            else:
                torch.export.save(result, str(path))
        except Exception as exc:  # noqa: BLE001
            skipped.append(Skip(name, "save", _why(exc)))
            continue
        archives.append(Archive(name, group, path, multi, time.perf_counter() - started))
        if name in LEGACY_FROM:
            legacy = path.with_name(path.stem + "__noname.pt2")
            strip_node_names(path, legacy)
            archives.append(Archive(name + "#noname", "legacy", legacy, multi))
    return archives, skipped


# One build per source version, whichever test asks first: the corpus is the same
# for every test that compares against it (listing, shapes, weights, lean parse,
# diff), and exporting it is the slowest setup of the default run. The whole corpus
# lives in the suite's disk cache (tests/export_cache.py: shared by the xdist
# workers and later runs, keyed by torch/transformers and this file and
# fidelity_models.py); a narrowed ask (FIDELITY_ONLY=...) filters it when it is
# there, or builds just what it asked into the session's temp folder.
_SESSION: dict[tuple[str, ...], tuple[list[Archive], list[Skip]]] = {}
_HERE = Path(__file__).resolve().parent
_SOURCES = (_HERE / "fidelity_cases.py", _HERE / "fidelity_models.py")


def _cached_corpus(build: bool) -> tuple[list[Archive], list[Skip]] | None:
    """The whole corpus from the disk cache (made now when `build`, else None when
    it is not there yet)."""
    from export_cache import cached_dir, complete, source_key

    key = source_key(*_SOURCES)
    if not build and complete("fidelity-corpus", key) is None:
        return None

    def make(folder: Path) -> None:
        archives, skipped = build_corpus(folder)
        manifest = {"archives": [{"name": a.name, "group": a.group, "file": a.path.name,
                                  "multi": a.multi, "seconds": a.seconds} for a in archives],
                    "skipped": [{"name": k.name, "stage": k.stage, "reason": k.reason}
                                for k in skipped]}
        (folder / "manifest.json").write_text(json.dumps(manifest))

    folder = cached_dir("fidelity-corpus", key, make)
    _register_as_the_build_did()
    manifest = json.loads((folder / "manifest.json").read_text())
    return ([Archive(a["name"], a["group"], folder / a["file"], a["multi"], a["seconds"])
             for a in manifest["archives"]],
            [Skip(k["name"], k["stage"], k["reason"]) for k in manifest["skipped"]])


def _register_as_the_build_did() -> None:
    """What exporting the corpus registers in its process, registered in this one
    too, so torch loads a cached corpus here as it would in the process that built
    it: the custom ops of fidelity_models (torch resolves `fidelity::...` targets)
    ExportDB's examples (some register ops when imported), and HuggingFace's output
    types (defining them registers them with torch's pytree: the hf/ archives'
    signatures name them, and torch cannot load those archives without)."""
    import transformers.modeling_outputs  # noqa: F401
    from torch._export.db.examples import all_examples

    from fidelity_models import _custom_ops

    _custom_ops()
    all_examples()


def session_corpus(tmp_path_factory: Any, only: list[str] | None = None
                   ) -> tuple[list[Archive], list[Skip]]:
    """build_corpus(only), exported once (the whole corpus: once per source version,
    in the disk cache). Returns fresh lists and Archive/Skip copies, so one test's
    appends or edits never reach another; the files are shared and read-only
    (write anything new to your own tmp folder)."""
    key = tuple(only or ())
    if key not in _SESSION:
        full = _SESSION.get(()) or _cached_corpus(build=not key)
        if full is not None:  # the whole corpus is there: filter it like build_corpus does
            _SESSION[()] = full
            _SESSION[key] = (full if not key else
                             ([a for a in full[0] if any(s in a.name for s in key)],
                              [k for k in full[1] if any(s in k.name for s in key)]))
        else:
            out = tmp_path_factory.mktemp("fidelity-corpus")
            _SESSION[key] = build_corpus(out, list(key) or None)
    archives, skipped = _SESSION[key]
    return ([Archive(a.name, a.group, a.path, a.multi, a.seconds) for a in archives],
            [Skip(k.name, k.stage, k.reason) for k in skipped])


def program_texts(path: Path) -> dict[str, bytes]:
    """Each program's JSON text in the archive at `path`, by program name."""
    with zipfile.ZipFile(path) as z:
        return {Path(n).stem: z.read(n) for n in z.namelist()
                if "/models/" in n and n.endswith(".json")}


def rewrite_nodes(src: Path, dst: Path, change: Callable[[dict], None]) -> None:
    """Copy an archive, calling `change(node)` on every node of its programs'
    JSON, those of control-flow subgraphs included (as an older torch wrote them)."""
    def walk(graph: dict) -> None:
        for node in graph.get("nodes", []):
            change(node)
            for inp in node.get("inputs", []):
                sub = inp.get("arg", {}).get("as_graph")
                if isinstance(sub, dict):
                    walk(sub["graph"])

    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if "/models/" in info.filename and info.filename.endswith(".json"):
                doc = json.loads(data)
                walk(doc["graph_module"]["graph"])
                data = json.dumps(doc).encode()
            zout.writestr(info, data)


def strip_node_names(src: Path, dst: Path) -> None:
    """Copy an archive, dropping every node's `name` from its program JSON."""
    rewrite_nodes(src, dst, lambda node: node.pop("name", None))


def _why(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip().split("\n")[0]
    return text[:160]


# --- comparing --------------------------------------------------------------------

# torch.export.load of each corpus file, once per session: the listing test
# prints these and the argument test reads their nodes (loading is most of
# either test's time). The programs are shared: read them, never change them.
_LOADED: dict[Path, dict[str, Any]] = {}


def torch_programs(archive: Archive) -> dict[str, Any]:
    """The archive's ExportedPrograms as torch.export.load (or load_pt2) gives them."""
    if archive.path not in _LOADED:
        import torch

        if archive.multi:
            from torch.export.pt2_archive._package import load_pt2
            _LOADED[archive.path] = dict(load_pt2(str(archive.path)).exported_programs)
        else:
            _LOADED[archive.path] = {"model": torch.export.load(str(archive.path))}
    return _LOADED[archive.path]


def torch_texts(archive: Archive) -> dict[str, str]:
    """What torch prints for each program of the archive after loading it."""
    return {name: ep.graph_module.print_readable(print_output=False)
            for name, ep in torch_programs(archive).items()}


def compare(archive: Archive, texts: dict[str, str] | None = None) -> list[Comparison]:
    """Our listing of each program against torch's text (`texts`, from
    torch_texts, computed here when not given)."""
    from inspector.core.archive import open_archive
    from inspector.core.listing import render_listing

    if texts is None:
        texts = torch_texts(archive)
    out = []
    with open_archive(archive.path) as arc:
        for name, text in texts.items():
            ours = render_listing(arc.program(name)).lines
            out.append(Comparison(archive.name, archive.group, name, normalize(text),
                                  normalize(ours), archive.seconds))
    return out


def table(comparisons: list[Comparison], skipped: list[Skip]) -> str:
    rows = [f"{'case':46} {'program':12} {'match':>11} {'ratio':>8} {'# File':>9} {'export':>7}"]
    for c in comparisons:
        fm, ft = c.file_lines
        rows.append(f"{c.case:46} {c.program:12} {c.matched:>5}/{c.total:<5} "
                    f"{100 * c.ratio:7.2f}% {fm:>4}/{ft:<4} {c.seconds:6.1f}s")
    matched = sum(c.matched for c in comparisons)
    total = sum(c.total for c in comparisons)
    fm = sum(c.file_lines[0] for c in comparisons)
    ft = sum(c.file_lines[1] for c in comparisons)
    rows.append(f"TOTAL {len(comparisons)} programs: {matched}/{total} lines identical "
                f"({100 * matched / max(total, 1):.3f}%), `# File:` lines {fm}/{ft}")
    for s in skipped:
        rows.append(f"skipped {s.name} ({s.stage}): {s.reason}")
    return "\n".join(rows)


if __name__ == "__main__":
    import tempfile

    sys.path.insert(0, str(Path(__file__).parent))
    import transformers  # noqa: F401  (HF output types must be registered for load)

    with tempfile.TemporaryDirectory() as tmp:
        archives, skipped = build_corpus(Path(tmp), sys.argv[1:] or None)
        comps: list[Comparison] = []
        for a in archives:
            try:
                comps.extend(compare(a))
            except Exception as exc:  # noqa: BLE001
                traceback.print_exc()
                skipped.append(Skip(a.name, "load/compare", _why(exc)))
        for c in comps:
            if c.diff:
                print(f"--- {c.case}:{c.program}")
                for line in c.diff[:60]:
                    print("   ", line[:300])
        print(table(comps, skipped))
