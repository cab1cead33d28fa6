"""AOTInductor packages, described from their records: never compiled, never loaded.

`torch._inductor.aoti_compile_and_package` writes a `.pt2` whose
`data/aotinductor/<model>/` folder holds a compiled model: `*.wrapper.so`
(native code torch dlopens), the C++ it was built from (`*.wrapper.cpp`,
`*.kernel.cpp`), and `*_metadata.json` naming what it was compiled for
(`AOTI_DEVICE_KEY`, `AOTI_PLATFORM`, `AOTI_MACHINE`, `AOTI_CPU_ISA`,
`AOTI_COMPUTE_CAPABILITY`). Sometimes the program JSON (`models/<model>.json`)
and the weights come along.

Here each compiled model becomes a CompiledModel (what it was built for, its
files), and its wrapper's comments become the kernel list: inductor writes
`// Topologically Sorted Source Nodes: [linear], Original ATen: [aten.t,
aten.addmm]` before each kernel call, naming the FX nodes of the program that
the kernel computes. Sources are read as bounded text; nothing is compiled or
executed. Qt-free: a window panel shows these objects.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from inspector.core.errors import ArchiveError

if TYPE_CHECKING:
    from inspector.core.archive import Archive, Record
    from inspector.core.listing import Listing
    from inspector.core.program import Program

AOTI_PREFIX = "data/aotinductor/"
# A metadata record holds five short strings (156 bytes for a CPU build).
MAX_METADATA_BYTES = 64 * 1024
# Generated C++ grows with the model: the wrapper of a 1,100-node GPT-2
# decoder is a few MB; 64 MiB per source keeps a hostile one bounded.
MAX_SOURCE_BYTES = 64 * 1024 * 1024
# Kernels listed per source file (a big model has a few thousand calls).
MAX_KERNELS = 100_000

_META_KEYS = {
    "AOTI_DEVICE_KEY": "device",
    "AOTI_PLATFORM": "platform",
    "AOTI_MACHINE": "machine",
    "AOTI_CPU_ISA": "cpu_isa",
    "AOTI_COMPUTE_CAPABILITY": "compute_capability",
}
_SOURCE_SUFFIXES = (".cpp", ".cc", ".cu", ".h", ".hpp", ".py")
_COMMENT = re.compile(
    r"^\s*(?://|#)\s*Topologically Sorted Source Nodes:\s*\[(.*?)\],\s*"
    r"Original ATen:\s*\[(.*?)\]\s*$")
# a call: `name(`, `AOTI_TORCH_ERROR_CODE_CHECK(name(`, `kernels.name(`
_CALL = re.compile(r"^\s*(?:AOTI_TORCH_ERROR_CODE_CHECK\()?\s*(?:[\w:]+(?:\.|->))?"
                   r"([A-Za-z_]\w*)\s*\(")
_EXTERN_KERNEL = re.compile(r'^\s*extern\s+"C"\s+\w+\s+(\w+)\s*\(')
# helpers the wrapper calls around kernels, never kernels themselves
_NOT_KERNELS = frozenset({
    "aoti_torch_empty_strided", "assert_size_stride", "reinterpret_tensor_wrapper",
    "wrap_with_raii_handle_if_needed", "if", "for", "while", "return", "static_cast",
    "reinterpret_cast", "RAIIAtenTensorHandle", "AtenTensorHandle", "sizeof",
    "_check_aoti_runtime_check_inputs_env", "aoti_torch_delete_tensor_object",
    "aoti_torch_new_tensor_handle", "aoti_torch_get_data_ptr", "std", "assert",
})
_LOOKAHEAD = 16  # code lines after a comment in which its kernel call is sought


@dataclass(frozen=True)
class Kernel:
    """One kernel call of a compiled model, with what it computes."""

    name: str  # cpp_fused_mul_relu_1, triton_poi_fused_..., aoti_torch_cpu_addmm_out
    source: str  # record path of the file it was found in
    line: int  # 1-based line of its call (or definition) in that file
    source_nodes: tuple[str, ...]  # FX node names of the program ([] unknown)
    aten_ops: tuple[str, ...]  # aten.t, aten.addmm

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "source": self.source, "line": self.line,
                "source_nodes": list(self.source_nodes), "aten_ops": list(self.aten_ops)}


@dataclass
class CompiledModel:
    """One `data/aotinductor/<name>/` folder."""

    name: str
    device: str = ""  # cpu, cuda, xpu ...
    platform: str = ""  # linux, darwin, win32
    machine: str = ""  # x86_64, aarch64
    cpu_isa: str = ""  # "AVX512 AVX512_VNNI AMX_TILE"
    compute_capability: str = ""  # "90" for an H100 build; "" on CPU
    files: list[Record] = field(default_factory=list)
    metadata_files: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # unreadable metadata, ...

    @property
    def libraries(self) -> list[Record]:
        """Native code: what torch dlopens when it loads the package."""
        return [r for r in self.files if r.risk]

    @property
    def wrappers(self) -> list[str]:
        return [r.path for r in self.files if r.path.endswith(".wrapper.cpp")]

    @property
    def sources(self) -> list[str]:
        """C++ (and Python) source records, wrappers first: shown, never compiled."""
        srcs = [r.path for r in self.files if r.path.endswith(_SOURCE_SUFFIXES)]
        return sorted(srcs, key=lambda p: (not p.endswith(".wrapper.cpp"), p))

    @property
    def target(self) -> str:
        """What it runs on, in words: `cpu (linux x86_64, AVX512 AVX512_VNNI)`,
        `cuda compute capability 90 (linux x86_64)`."""
        where = " ".join(x for x in (self.platform, self.machine) if x)
        if self.device and self.device != "cpu" and self.compute_capability:
            head = f"{self.device} compute capability {self.compute_capability}"
        else:
            head = self.device or "an unknown device"
        extra = ", ".join(x for x in (where, f"CPU ISA {self.cpu_isa}" if self.cpu_isa else "")
                          if x)
        return f"{head} ({extra})" if extra else head

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "device": self.device, "platform": self.platform,
            "machine": self.machine, "cpu_isa": self.cpu_isa,
            "compute_capability": self.compute_capability,
            "files": [dict(r.as_dict(), native_code=r.risk) for r in self.files],
            "problems": list(self.problems),
        }


def model_of(path: str) -> str | None:
    """The compiled model a record belongs to (`data/aotinductor/<model>/...`)."""
    if not path.startswith(AOTI_PREFIX):
        return None
    rest = path[len(AOTI_PREFIX):]
    return rest.split("/", 1)[0] if "/" in rest else None


def compiled_models(archive: Archive) -> list[CompiledModel]:
    """Every compiled model of the archive, with its metadata read (bounded)."""
    models: dict[str, CompiledModel] = {}
    for rec in archive.records:
        name = model_of(rec.path)
        if name is None:
            continue
        model = models.get(name)
        if model is None:
            model = models[name] = CompiledModel(name)
        model.files.append(rec)
    for model in models.values():
        for rec in model.files:
            if rec.path.endswith("_metadata.json"):
                model.metadata_files.append(rec.path)
                _read_metadata(archive, rec.path, model)
    return [models[n] for n in sorted(models)]


def _read_metadata(archive: Archive, rel: str, model: CompiledModel) -> None:
    try:
        doc = archive.read_json(rel, MAX_METADATA_BYTES)
    except ArchiveError as exc:
        model.problems.append(str(exc))
        return
    if not isinstance(doc, dict):
        model.problems.append(f"record {rel} is not a JSON object")
        return
    for key, attr in _META_KEYS.items():
        value = doc.get(key)
        if isinstance(value, str) and value and not getattr(model, attr):
            setattr(model, attr, value[:200])


def read_source(archive: Archive, rel: str) -> str:
    """A source record as text, to show (UTF-8, undecodable bytes replaced)."""
    return archive.read_bytes(rel, MAX_SOURCE_BYTES).decode("utf-8", errors="replace")


def kernels(archive: Archive, model: CompiledModel) -> list[Kernel]:
    """The kernels of a compiled model: each commented call in its sources,
    then each kernel defined there that no comment names (CPU builds give
    `cpp_fused_*` kernels no comment). A source that cannot be read (over
    the limit, corrupt) is skipped and named in `model.problems`."""
    texts: dict[str, str] = {}
    for rel in model.sources:
        try:
            texts[rel] = read_source(archive, rel)
        except ArchiveError as exc:
            if str(exc) not in model.problems:
                model.problems.append(str(exc))
    out: list[Kernel] = []
    for rel, text in texts.items():
        out.extend(parse_kernels(text, rel, MAX_KERNELS - len(out)))
    named = {k.name for k in out}
    for rel, text in texts.items():
        for k in _defined_kernels(text, rel):
            if len(out) >= MAX_KERNELS:
                return out
            if k.name not in named:
                named.add(k.name)
                out.append(k)
    return out


def parse_kernels(text: str, source: str, limit: int = MAX_KERNELS) -> list[Kernel]:
    """Commented kernel calls of one source file, in order (at most `limit`)."""
    lines = text.splitlines()
    out: list[Kernel] = []
    for i, line in enumerate(lines):
        if "Topologically Sorted Source Nodes" not in line:
            continue
        m = _COMMENT.match(line)
        if m is None:
            continue
        nodes, ops = _names(m.group(1)), _names(m.group(2))
        name, at = _next_call(lines, i + 1)
        if len(out) >= limit:
            break
        out.append(Kernel(name or "?", source, (at if name else i) + 1, nodes, ops))
    return out


def _names(text: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in text.split(",") if x.strip())


def _next_call(lines: list[str], start: int) -> tuple[str | None, int]:
    seen = 0
    for j in range(start, len(lines)):
        stripped = lines[j].strip()
        if not stripped or stripped.startswith(("//", "#", "static ", "auto ", "AtenTensorHandle ",
                                                "RAIIAtenTensorHandle ", "int64_t ", "const ")):
            if "Topologically Sorted Source Nodes" in stripped:
                return None, start  # the next comment came first
            continue
        seen += 1
        if seen > _LOOKAHEAD:
            break
        m = _CALL.match(stripped)
        if m and m.group(1) not in _NOT_KERNELS:
            return m.group(1), j
        if m and m.group(1) == "AOTI_TORCH_ERROR_CODE_CHECK":
            continue
    return None, start


def _defined_kernels(text: str, source: str) -> Iterable[Kernel]:
    for i, line in enumerate(text.splitlines()):
        if "extern" in line:
            m = _EXTERN_KERNEL.match(line)
            if m and not source.endswith(".wrapper.cpp"):
                # the kernel file defines them; the wrapper only declares them
                yield Kernel(m.group(1), source, i + 1, (), ())


def kernel_lines(kernel: Kernel, listing: Listing, graph: str = "") -> dict[str, int]:
    """{source node: listing line} for the nodes of a kernel the listing shows
    (the package's program, when it has one)."""
    out: dict[str, int] = {}
    for node in kernel.source_nodes:
        line = listing.definitions.get((graph, listing.value_name(graph, node)))
        if line is not None:
            out[node] = line
    return out


def program_for(archive: Archive, model: CompiledModel) -> Program | None:
    """The program the model was compiled from, when the package holds it."""
    if model.name in archive.program_names:
        return archive.program(model.name)
    return None


def describe_file(rec: Record) -> str:
    """What a record of a compiled model is, in words."""
    base = posixpath.basename(rec.path)
    if rec.risk:
        return "native code (never loaded by pt2-inspector)"
    if base.endswith(".wrapper.cpp"):
        return "wrapper C++ source"
    if base.endswith(".kernel.cpp"):
        return "kernel C++ source"
    if base.endswith("_metadata.json"):
        return "build metadata"
    if base.endswith(_SOURCE_SUFFIXES):
        return "source"
    return "data"


@dataclass
class PackageModel:
    """A compiled model as the window shows it: the model, its kernels, and
    the name of the program it came from when the package holds it."""

    model: CompiledModel
    kernels: list[Kernel]
    program: str | None


def describe_package(archive: Archive) -> list[PackageModel]:
    """Every compiled model with its kernels (reads the sources, bounded: run
    it off the GUI thread)."""
    names = set(archive.program_names)
    return [PackageModel(m, kernels(archive, m), m.name if m.name in names else None)
            for m in compiled_models(archive)]


def has_compiled_models(archive: Archive) -> bool:
    """Cheap (the record list only): whether there is anything for describe_package."""
    return any(model_of(r.path) is not None for r in archive.records)
