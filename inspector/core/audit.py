"""Rules that find what export baked into a program -> findings.

The seed's decoder, exported on a CPU box, failed on the GPU with "Expected all
tensors to be on the same device": export had frozen `device=cpu` into `arange`
and friends. These rules find such values (device literals, weights recorded on
a device, lifted constants, dimensions fixed to the example's sizes) and what
loading needs besides torch (pytree types, custom ops, compiled binaries,
records torch would unpickle). Pure Python over the parsed program: no torch.

Lines: `Finding.line` is the 0-based index into `Listing.lines` (what the window
uses); `Finding.as_dict()` (the CLI's `--json`) writes it 1-based, as people and
editors count lines. `Finding.from_dict` undoes that.
"""

from __future__ import annotations

import re
from array import array
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import orjson

from inspector.core.device_names import same_device
from inspector.core.findings import (  # noqa: F401  (re-exported: the audit's vocabulary)
    CODE_IN_NAMES,
    DEVICE_LITERAL,
    DTYPE_LITERAL,
    ERROR,
    INFO,
    LIFTED_CONSTANT,
    OPERATOR_ARGUMENT,
    PORTABILITY,
    RISKY_RECORD,
    RULE_TITLES,
    RULES,
    SEVERITIES,
    SPECIALIZED_DIM,
    WARNING,
    WEIGHT_DEVICE,
    AuditError,
    Finding,
    at_least,
    check_rules,
    counts,
    sort_findings,
)
from inspector.core.frames import (
    first_user_frame,
    is_library_file,
    parse_stack_trace,
    summary_frame,
)
from inspector.core.program import (
    KNOWN_SCHEMA_MAJOR,
    ArgKind,
    Argument,
    Device,
    Node,
    Program,
    TensorMeta,
    decode_device,
    nodes_mentioning,
)
from inspector.core.summary import format_size

if TYPE_CHECKING:
    from inspector.core.archive import Archive, Record

# Op namespaces torch itself registers: ops from any other namespace need their
# library loaded before torch.export.load can rebuild the graph.
TORCH_OP_NAMESPACES = frozenset({
    "aten", "prims", "higher_order", "rngprims", "_c10d_functional", "c10d_functional",
    "_c10d_functional_autograd", "_dtensor", "quantized_decomposed", "quantized",
    "_quantized", "inductor", "onednn", "mkldnn", "profiler", "_export", "_higher_order_ops",
})
# Non-`torch.ops` targets the serializer writes for Python builtins.
_BUILTIN_TARGET_PREFIXES = ("_operator.", "operator.", "math.", "builtins.", "torch.")
# pytree node types that torch registers itself.
_TORCH_PYTREE_PREFIXES = ("builtins.", "collections.", "torch.")
# Argument names whose integer values are sizes (compared with example sizes).
_SIZE_ARG_NAMES = frozenset({
    "size", "sizes", "shape", "end", "start", "length", "split_size", "split_sizes",
    "repeats", "output_size", "new_size",
})
_SIZE_LIST_KINDS = frozenset({ArgKind.INTS, ArgKind.SYM_INTS})
# as they appear in a node's text (`"name": "size"`), for nodes_mentioning
_SIZE_ARG_WORDS = tuple(f'"{n}"' for n in sorted(_SIZE_ARG_NAMES))
_IDENT = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_DEVICE_KINDS = frozenset({ArgKind.DEVICE, ArgKind.STRING_TO_ARGUMENT})
_PINNED_GUARD = re.compile(r"==\s*-?\d+\s*$|^\s*-?\d+\s*==")


class Listing(Protocol):
    """What the audit needs from inspector.core.listing.Listing."""

    def line_of(self, node: Node) -> int | None: ...


# --- entry points -------------------------------------------------------------

def audit_archive(archive: Archive, *, target: Device | None = None,
                  rules: Iterable[str] | None = None,
                  listings: dict[str, Listing] | None = None,
                  programs: Sequence[str] | None = None) -> list[Finding]:
    """Every rule over every program (or `programs`) of an opened archive."""
    wanted = check_rules(rules)
    names = list(programs) if programs else list(archive.program_names)
    findings: list[Finding] = []
    for name in names:
        program = archive.program(name)
        configs = {}
        if WEIGHT_DEVICE in wanted and archive.layout == "pt2":
            configs = {which: archive.payload_config(name, which)
                       for which in ("weights", "constants")}
        findings += audit_program(program, target=target, rules=wanted,
                                  listing=(listings or {}).get(name), payload_configs=configs)
    if RISKY_RECORD in wanted or PORTABILITY in wanted:
        findings += audit_records(archive.records, set(names), wanted)
    if PORTABILITY in wanted:
        from inspector.core.audit_load import audit_loadability

        findings += audit_loadability(archive, target, [archive.program(n) for n in names])
    # (its programs' findings come sorted: a near-sorted run, ~20 ms for 31,000)
    return sort_findings(findings)


def audit_program(program: Program, *, target: Device | None = None,
                  rules: Iterable[str] | None = None, listing: Listing | None = None,
                  payload_configs: dict[str, dict[str, Any]] | None = None) -> list[Finding]:
    """The program-level rules, in sort_findings' order. `listing` fills `line`;
    `payload_configs` ({"weights": config, "constants": config}) adds the
    archive's own records."""
    wanted = check_rules(rules)
    ctx = _Context(program, target, listing)
    # made in sort_findings' order (31,000 at 400k nodes); DEVICE_LITERAL is RULES[0]
    literals = _device_literals(ctx) if DEVICE_LITERAL in wanted else []
    if WEIGHT_DEVICE in wanted:
        _weight_devices(ctx, payload_configs or {})
    if LIFTED_CONSTANT in wanted:
        _lifted_constants(ctx)
    if SPECIALIZED_DIM in wanted:
        _specialized_dims(ctx)
    if PORTABILITY in wanted:
        _portability(ctx)
    if DTYPE_LITERAL in wanted:
        _dtype_literals(ctx)
    if CODE_IN_NAMES in wanted or OPERATOR_ARGUMENT in wanted:
        _code_in_names(ctx, wanted)
    return literals + sort_findings(ctx.findings)


_SEVERITY_RANK = {severity: i for i, severity in enumerate(SEVERITIES)}  # sort_findings' order


def audit_records(records: Iterable[Record], programs: set[str],
                  rules: Iterable[str] | None = None) -> list[Finding]:
    """Archive-level rules over the record list (no record is read)."""
    from inspector.core import archive as ar

    wanted = check_rules(rules)
    findings: list[Finding] = []
    for rec in records:
        program = _record_program(rec.path, programs)
        if RISKY_RECORD in wanted and rec.risk:
            sample = rec.kind == ar.SAMPLE_INPUTS
            native = rec.kind == ar.AOTI_BINARY
            loader = ("the package (torch._inductor.aoti_load_package)" if native
                      else "this archive with torch.export.load")
            findings.append(Finding(
                RISKY_RECORD, INFO if sample else WARNING, program, None, None,
                f"{rec.path} ({format_size(rec.size)}): {rec.why or 'torch would execute code from it'}. "
                f"Loading {loader} runs that code; only load archives from people you trust.",
                None,
                None if sample else (
                    "compiled code has no data-only form: load the package only if you trust "
                    "who compiled it, or compile the program yourself "
                    "(torch._inductor.aoti_compile_and_package)" if native else
                    "re-export and save with torch.export.save from a torch "
                    "that writes raw tensors (no pickles), or drop the record"),
                rec.kind))
    return findings


# --- rules --------------------------------------------------------------------

class _Context:
    def __init__(self, program: Program, target: Device | None, listing: Listing | None):
        self.program = program
        self.target = target
        self.listing = listing
        self.findings: list[Finding] = []

    def add(self, rule: str, severity: str, message: str, *, node: Node | None = None,
            node_name: str | None = None, fix: str | None = None, group: str | None = None,
            source: str | None = None) -> None:
        line = None
        if node is not None:
            node_name = node.name
            if self.listing is not None:
                line = self.listing.line_of(node)
            if source is None:
                source = _source(node)
        self.findings.append(Finding(rule, severity, self.program.name, node_name, line,
                                     message, source, fix, group))

    def differs(self, device: Device) -> bool:
        return self.target is not None and not same_device(device, self.target)


def _source(node: Node) -> str | None:
    return _trace_source(node.stack_trace)


# Per stack trace, not per node: a finding repeats on every layer of a big
# program (31,000 on the 400k-node one), and its nodes share a few traces.
@lru_cache(maxsize=4096)
def _trace_source(trace: str | None) -> str | None:
    frame = first_user_frame(parse_stack_trace(trace))
    return frame.location if frame else None


@lru_cache(maxsize=4096)
def _trace_where(trace: str | None) -> str:
    """The library line a node came from, when it is not the user's own line."""
    frame = summary_frame(trace)
    if not frame or first_user_frame(parse_stack_trace(trace)) and \
            not is_library_file(frame[0]):
        return ""
    return f" (in {_short_path(frame[0])}:{frame[1]}, {frame[2]})"


_T = TypeVar("_T")


def _column(nodes: Sequence[Node], name: str, make: Callable[[Sequence[Node]], _T]) -> _T:
    """What a rule reads from a graph's nodes whatever the target (device
    arguments, literal sizes, op namespaces): made by a program's first audit
    and kept with a lean program's nodes (core/program/lean.py, immutable once
    made), so an audit of a 400k-node program (again, for another target or
    rules) visits these columns, not the nodes. A plain list (the full parse,
    control-flow subgraphs: small) is scanned each time."""
    memo = getattr(nodes, "memo", None)
    return memo(name, make) if memo is not None else make(nodes)


def _spelled_as_is(name: str) -> bool:
    """Whether JSON text holds `name` as `"name"` whoever wrote it (writers
    differ in what they escape: non-ASCII, `/`; LazyNodes.mentioning finds
    `\\u` escapes itself)."""
    return name.isascii() and name.isprintable() and not any(c in name for c in '"\\/')


def _short_path(path: str) -> str:
    """site-packages/transformers/x.py -> transformers/x.py."""
    for marker in ("site-packages/", "dist-packages/"):
        if marker in path:
            return path.split(marker, 1)[1]
    return path


def _device_args(node: Node) -> Iterable[tuple[str, Device]]:
    for inp in node.inputs:
        for key, device in inp.arg.devices():
            yield (inp.name if key is None else f"{inp.name}[{key!r}]"), device


# A device literal's site: (op, argument, device, stack trace). Its message, source
# and fix are the same wherever it repeats (every layer of a big program).
_Site = tuple[str, str, Device, str | None]


class _Arguments:
    """What the rules read from a node sequence's arguments, whatever the target.

    Device arguments: the distinct sites, then per argument (in node and
    argument order) its node, the node's name and its site's index. Sizes:
    {literal size: indices of the nodes that have it in a size argument}
    (_size_literals)."""

    __slots__ = ("sites", "nodes", "names", "site_of", "sizes")

    def __init__(self, nodes: Sequence[Node]) -> None:
        sites: dict[_Site, int] = {}
        self.nodes: list[Node] = []
        self.names: list[str] = []
        self.site_of = array("q")
        self.sizes: dict[int, array] = {}
        for node in _argument_nodes(nodes):
            device = sized = False
            for inp in node.inputs:  # cheap tests first: most nodes have neither
                if inp.arg.kind in _DEVICE_KINDS:
                    device = True
                if inp.name in _SIZE_ARG_NAMES:
                    sized = True
            if device:
                op, trace = node.op_name, node.stack_trace
                for arg_name, dev in _device_args(node):
                    self.nodes.append(node)
                    self.names.append(node.name)
                    self.site_of.append(sites.setdefault((op, arg_name, dev, trace), len(sites)))
            if sized:
                for value in _size_literals(node):
                    at = self.sizes.get(value)
                    if at is None:
                        at = self.sizes[value] = array("q")
                    at.append(node.index)
        self.sites: list[_Site] = list(sites)


def _argument_nodes(nodes: Sequence[Node]) -> Iterable[Node]:
    """The nodes _Arguments must look at: all of them where they are made already
    (the listing made them: walking 400,000 made nodes takes a tenth of
    searching their texts), else those whose text may name a device kind or a
    size argument (LazyNodes.mentioning), so the rest are never made."""
    made = getattr(nodes, "made_count", None)
    if made is None or made() == len(nodes):
        return nodes
    return nodes_mentioning(nodes, _DEVICE_KINDS | frozenset(_SIZE_ARG_WORDS))


def _device_literals(ctx: _Context) -> list[Finding]:
    """The rule's findings, in sort_findings' order: by severity and device
    (per site), then by line; the 400k-node program has 31,000 of them."""
    target = ctx.target
    program = ctx.program.name
    line_of = ctx.listing.line_of if ctx.listing is not None else None
    # (severity's rank, device) -> [findings, their lines], in the rule's order
    buckets: dict[tuple[int, str], tuple[list[Finding], list[int | None]]] = {}
    for graph in ctx.program.graphs():
        column = _column(graph.nodes, "arguments", _Arguments)
        if not column.nodes:
            continue
        # what a finding says, once per site: (severity, message, source, fix, group)
        said = [_device_text(site, target, ctx.differs(site[2])) for site in column.sites]
        lines = [line_of(n) for n in column.nodes] if line_of is not None else \
            [None] * len(column.nodes)
        made = [Finding(DEVICE_LITERAL, said[s][0], program, name, line, said[s][1],
                        said[s][2], said[s][3], said[s][4])
                for name, line, s in zip(column.names, lines, column.site_of)]
        keys = {(_SEVERITY_RANK[t[0]], t[4]) for t in said}
        if len(keys) == 1 and not buckets:
            buckets[keys.pop()] = (made, lines)
            continue
        for f, line in zip(made, lines):
            found, at = buckets.setdefault((_SEVERITY_RANK[f.severity], f.group), ([], []))
            found.append(f)
            at.append(line)
    out: list[Finding] = []
    for key in sorted(buckets):
        found, lines = buckets[key]
        out += _by_line(found, lines)
    return out


def _by_line(findings: list[Finding], lines: list[int | None]) -> list[Finding]:
    """`findings` stably sorted by line (None first), as sort_findings orders
    findings of one rule, program, severity and group; usually they already are
    (nodes in listing order), which is checked, not assumed."""
    keys = lines if None not in lines else [-1 if n is None else n for n in lines]
    if keys == sorted(keys):  # type: ignore[type-var]
        return findings
    order = sorted(range(len(keys)), key=keys.__getitem__)
    return [findings[i] for i in order]


def _device_text(site: _Site, target: Device | None, bad: bool
                 ) -> tuple[str, str, str | None, str, str]:
    op, arg_name, device, trace = site
    if op == "_assert_tensor_metadata":
        what = f"checks that its input is on {device} and fails otherwise"
    elif op in ("to", "_to_copy", "copy", "_to_device"):
        what = f"copies its input to {device}"
    else:
        what = f"creates its result on {device}"
    if bad:
        why = (f"run on {target}, that mixes devices (\"Expected all tensors to be on "
               "the same device\")")
    else:
        why = ("export froze the device the example ran on, whatever device the "
               "inputs are on at run time")
    # Matching the named target is fine for that target (info, so a
    # retargeted archive passes `audit --target DEV` in CI); with no
    # target we cannot tell, so it is a warning.
    severity = ERROR if bad else (INFO if target is not None else WARNING)
    return (severity,
            f"{op} has {arg_name}={device} baked in{_trace_where(trace)}: it {what}; {why}",
            _trace_source(trace),
            f"pt2-inspector retarget FILE --device {target or 'DEVICE'} -o OUT.pt2 "
            "(or export on the target device)",
            str(device))


def _weight_devices(ctx: _Context, configs: dict[str, dict[str, Any]]) -> None:
    program = ctx.program
    labels = {"parameter": "parameters", "buffer": "buffers",
              "tensor_constant": "tensor constants"}
    groups: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    seen_targets: set[str] = set()
    tv = program.graph.tensor_values
    for spec in program.input_specs:
        if spec.kind not in labels or spec.name not in tv:
            continue
        meta = tv[spec.name]
        g = groups[(spec.kind, str(meta.device))]
        g[0] += 1
        g[1] += meta.nbytes() or 0
        if spec.target:
            seen_targets.add(spec.target)
    # Config entries not reached through a placeholder (e.g. aliases) still load.
    for which, config in configs.items():
        for fqn, entry in config.items():
            if fqn in seen_targets or not isinstance(entry, dict):
                continue
            meta = entry.get("tensor_meta")
            if not isinstance(meta, dict):
                continue
            kind = "parameter" if entry.get("is_param") else (
                "buffer" if which == "weights" else "tensor_constant")
            g = groups[(kind, str(decode_device(meta.get("device")) or Device("unknown")))]
            g[0] += 1
    for (kind, dev), (count, nbytes) in sorted(groups.items()):
        device = _parse_device_text(dev)
        bad = ctx.differs(device)
        msg = (f"{count} {labels[kind]} ({format_size(nbytes)}) recorded on {dev}: "
               f"torch.export.load puts them on {dev}")
        msg += (f", not on {ctx.target}; a run on {ctx.target} must move them first"
                if bad else "")
        ctx.add(WEIGHT_DEVICE, WARNING if bad else INFO, msg, group=dev,
                fix=f"pt2-inspector retarget FILE --device {ctx.target} -o OUT.pt2"
                if bad else None)


def _parse_device_text(text: str) -> Device:
    kind, _, index = text.partition(":")
    return Device(kind, int(index) if index.isdigit() else None)


def _lifted_constants(ctx: _Context) -> None:
    program = ctx.program
    wanted = {s.name: s for s in program.input_specs if s.kind == "tensor_constant"}
    if not wanted:
        return
    first_use: dict[str, Node] = {}
    nodes: Iterable[Node] = program.graph.nodes
    if all(_spelled_as_is(name) for name in wanted):  # only nodes whose text may name one
        nodes = nodes_mentioning(program.graph.nodes, [f'"{name}"' for name in wanted])
    for node in nodes:
        for name in node.input_names():
            if name in wanted and name not in first_use:
                first_use[name] = node
        if len(first_use) == len(wanted):
            break
    tv = program.graph.tensor_values
    for name, spec in wanted.items():
        meta = tv.get(name)
        shape = f"{meta.annotation()}, {format_size(meta.nbytes() or 0)}" if meta else "unknown size"
        user = first_use.get(name)
        ctx.add(LIFTED_CONSTANT, INFO,
                f"constant {spec.target or name} ({shape}) is frozen into the program: "
                "a tensor made in forward or a plain tensor attribute; changing it on the "
                "module later does not change the exported program",
                node_name=name, group=spec.target or name,
                source=_source(user) if user else None,
                fix="register it as a buffer (register_buffer) if it must be part of the "
                    "state dict")


def _specialized_dims(ctx: _Context) -> None:
    program = ctx.program
    for sym, rng in sorted(program.range_constraints.items()):
        if rng.min is not None and rng.min == rng.max:
            ctx.add(SPECIALIZED_DIM, WARNING,
                    f"dimension {sym} has range {rng.text()}: export fixed it to {rng.min}, "
                    "so every other size is refused",
                    group=sym, fix="widen the Dim's min/max, or find the code that fixes it "
                                   "(torch.export's 'specialized' messages name it)")
    tv = program.graph.tensor_values
    for spec in program.user_inputs():
        meta = tv.get(spec.name)
        if meta is None or not meta.sizes:
            continue
        static = [(i, s) for i, s in enumerate(meta.sizes) if isinstance(s, int)]
        if not static:
            continue
        dims = ", ".join(f"{i}={s}" for i, s in static)
        ctx.add(SPECIALIZED_DIM, INFO,
                f"input {spec.name} {meta.annotation()} has static dims ({dims}): "
                "only these sizes are accepted",
                node_name=spec.name, group=spec.name,
                fix="pass dynamic_shapes with a Dim for each dim that varies")
    for guard in program.guards_code:
        pinned = bool(_PINNED_GUARD.search(guard))
        ctx.add(SPECIALIZED_DIM, WARNING if pinned else INFO,
                f"export assumes `{guard}`: inputs that break it are rejected"
                + (" (a size pinned to a number)" if pinned else ""),
                group="guards", fix=None)
    _literal_example_sizes(ctx)


def _free_symbol_hints(program: Program) -> dict[int, set[str]]:
    """{example value: symbols whose example it was}, for symbols not fixed by a range."""
    by_value: dict[int, set[str]] = defaultdict(set)
    for graph in program.graphs():
        for expr, hint in graph.size_hints.items():
            if not expr.isidentifier() or hint < 2:
                continue
            rng = program.range_constraints.get(expr)
            if rng is not None and rng.min is not None and rng.min == rng.max:
                continue
            by_value[hint].add(expr)
    return by_value


def _literal_sizes(node: Node) -> Iterable[tuple[str, int]]:
    for inp in node.inputs:
        if inp.name not in _SIZE_ARG_NAMES:
            continue
        arg = inp.arg
        single = arg.int_value()
        if single is not None:
            yield inp.name, single
        elif arg.kind in _SIZE_LIST_KINDS:
            for item in arg.items() or ():
                # a literal int, or a SymInt export specialized to one
                value = item.int_value() if item.kind == ArgKind.INT else _sym_int_literal(item)
                if value is not None:
                    yield inp.name, value


def _sym_int_literal(arg: Argument) -> int | None:
    sym = arg.sym()
    return sym.literal if sym is not None and type(sym.literal) is int else None


def _size_literals(node: Node) -> set[int]:
    """The distinct literal ints of `node`'s size arguments (those
    _literal_sizes yields). A third of a big program's nodes name a size
    argument, so _literal_sizes is inlined and the usual node costs one pass."""
    found: set[int] = set()
    for inp in node.inputs:
        if inp.name not in _SIZE_ARG_NAMES:
            continue
        kind, value = inp.arg.kind, inp.arg.value
        if kind == "as_int":
            if isinstance(value, int):
                found.add(value)
        elif kind == "as_ints" and isinstance(value, list):
            found.update(v for v in value if isinstance(v, int))
        elif kind == "as_sym_ints" and isinstance(value, list):
            for v in value:
                if isinstance(v, dict):
                    v = v.get("as_int")
                    if isinstance(v, int):
                        found.add(v)
    return found


def _hinted_nodes(nodes: Sequence[Node], hints: dict[int, set[str]]
                  ) -> list[tuple[Node, list[int]]]:
    """(node, its distinct literal sizes that are keys of `hints`, sorted) for each
    node of `nodes` that has one, in node order."""
    column = _column(nodes, "arguments", _Arguments).sizes
    found: dict[int, list[int]] = defaultdict(list)
    for value in sorted(hints):
        for i in column.get(value, ()):
            found[i].append(value)
    return [(nodes[i], found[i]) for i in sorted(found)]


def _literal_example_sizes(ctx: _Context) -> None:
    """A literal size equal to a dynamic dim's example size, in a node whose result
    does not depend on that dim: likely a Python int computed from the example
    (e.g. `torch.zeros(batch_size, ...)` with a captured int). One finding per
    node. Where the value flows matters: a node that only reshapes tensors of
    static shape (swin's attention mask, `view(14 // 7, 7, 14 // 7, 7)`, with a
    batch of 2) meets the number by coincidence, so that is info; a node that
    creates a tensor from sizes alone (`zeros(2, 4)`) keeps the warning."""
    by_value = _free_symbol_hints(ctx.program)
    if not by_value:
        return
    for graph in ctx.program.graphs():
        tv = graph.tensor_values
        for node, values in _hinted_nodes(graph.nodes, by_value):
            mentioned = _symbols_of(node, tv)
            hits = [(v, sorted(by_value[v])) for v in values if not by_value[v] & mentioned]
            if not hits:
                continue  # the node already follows that dim symbolically
            reads = [tv[n] for n in node.input_names() if n in tv]
            static_only = bool(reads) and all(isinstance(d, int) for m in reads for d in m.sizes)
            arg_name = next(a for a, v in _literal_sizes(node) if v == hits[0][0])
            sizes = " and ".join(f"{v} (the example size of dynamic dim {' / '.join(syms)})"
                                 for v, syms in hits)
            if static_only:
                ctx.add(SPECIALIZED_DIM, INFO,
                        f"{node.op_name} has {arg_name} containing {sizes}, but it only "
                        "reshapes or reads tensors of static shape, which no dynamic dim "
                        "feeds: most likely a coincidence",
                        node=node, group=hits[0][1][0], fix=None)
                continue
            ctx.add(SPECIALIZED_DIM, WARNING,
                    f"{node.op_name} has {arg_name} containing {sizes}: if it came from the "
                    "example input, other sizes will break here",
                    node=node, group=hits[0][1][0],
                    fix="compute the size from the tensor (x.shape[i]) instead of a "
                        "Python int")


def _symbols_of(node: Node, tv: dict[str, TensorMeta]) -> set[str]:
    out: set[str] = set()
    for name in node.output_names() + node.input_names():
        meta = tv.get(name)
        if meta is None:
            continue
        for s in meta.sizes:
            if isinstance(s, str):
                out.update(_IDENT.findall(s))
    return out


def _portability(ctx: _Context) -> None:
    program = ctx.program
    if program.schema_version[0] > KNOWN_SCHEMA_MAJOR:
        ctx.add(PORTABILITY, WARNING,
                f"schema version {program.schema_version[0]}.{program.schema_version[1]} is "
                f"newer than this inspector knows ({KNOWN_SCHEMA_MAJOR}.x): fields may be "
                "missed, and older torch releases cannot load it",
                group="schema", fix="load it with the torch that wrote it "
                                    f"({program.torch_version}) or newer")
    packages: dict[str, set[str]] = defaultdict(set)
    for entry in program.module_call_graph:
        sig = entry.get("signature")
        if not isinstance(sig, dict):
            continue
        for key in ("in_spec", "out_spec"):
            for type_name in _pytree_types(sig.get(key)):
                if not type_name.startswith(_TORCH_PYTREE_PREFIXES):
                    packages[type_name.split(".", 1)[0]].add(type_name)
    for package, types in sorted(packages.items()):
        names = ", ".join(sorted(types))
        ctx.add(PORTABILITY, WARNING,
                f"inputs/outputs use pytree types from {package} ({names}): "
                f"torch.export.load fails unless `{package}` is imported first",
                group=package,
                fix=f"import {package} before torch.export.load, or return plain "
                    "tuples/dicts from forward before exporting")
    first: dict[str, tuple[Node, int]] = {}
    for graph in program.graphs():
        for ns, (i, count) in _column(graph.nodes, "namespaces", _namespace_column).items():
            if ns in first:
                first[ns] = (first[ns][0], first[ns][1] + count)
            else:
                first[ns] = (graph.nodes[i], count)
    for ns, (node, count) in sorted(first.items()):
        ctx.add(PORTABILITY, WARNING,
                f"{count} node(s) call ops outside torch ({ns}, e.g. {node.target}): the library "
                "that registers them must be loaded before torch.export.load",
                node=node, group=ns,
                fix=f"import the package that defines {ns} ops (or torch.ops.load_library)")


def _namespace_column(nodes: Sequence[Node]) -> dict[str, tuple[int, int]]:
    """{op namespace outside torch: (index of its first node, its node count)}."""
    targets_of = getattr(nodes, "targets", None)  # without making the nodes
    targets = targets_of() if targets_of else [n.target for n in nodes]
    out: dict[str, tuple[int, int]] = {}
    # a program has few distinct targets; in order of first use, so the first
    # target of a namespace holds its first node
    for target, count in Counter(targets).items():
        ns = _custom_namespace(target)
        if ns is None:
            continue
        if ns in out:
            out[ns] = (out[ns][0], out[ns][1] + count)
        else:
            out[ns] = (targets.index(target), count)
    return out


def _custom_namespace(target: str) -> str | None:
    if target.startswith("torch.ops."):
        ns = target.split(".", 3)[2]
        return None if ns in TORCH_OP_NAMESPACES else ns
    if target.startswith(_BUILTIN_TARGET_PREFIXES):
        return None
    return target.rsplit(".", 1)[0] or target


def _pytree_types(spec: Any) -> list[str]:
    """Type names in a serialized treespec (JSON text), parsed as data only."""
    if not isinstance(spec, str) or not spec:
        return []
    try:
        doc = orjson.loads(spec)
    except orjson.JSONDecodeError:
        return []
    out: list[str] = []
    stack = [doc]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            t = item.get("type")
            if isinstance(t, str):
                out.append(t)
            children = item.get("children_spec")
            if isinstance(children, list):
                stack.extend(children)
    return out


def _record_program(path: str, programs: set[str]) -> str | None:
    base = path.rsplit("/", 1)[-1]
    stem = base.rsplit(".", 1)[0]
    for candidate in (stem, stem.rsplit("_", 2)[0]):
        if candidate in programs:
            return candidate
    return None


# --- dtype-literal ------------------------------------------------------------

def _dtype_literals(ctx: _Context) -> None:
    """Floating dtype literals export froze from the example (core/dtype_literals.py
    judges which, and keeps the model's own casts out): harmless at fp32, they make a
    bf16/fp16 run fail (an assert) or run at fp32 (a cast, a factory). Info: what
    `retarget --dtype` and `numerics --precision` rewrite."""
    from inspector.core.dtype_literals import ASSERT, BFLOAT16, literals_of, plan_program

    # Only nodes whose text holds a dtype are made (a lean program keeps the others
    # unmade). The dtypes need propagating only where the model casts to fp32 itself
    # (an assert downstream of its own cast keeps fp32); otherwise every assert of a
    # source dtype is frozen, as the plan would say of one fed by the inputs.
    nodes = list(nodes_mentioning(ctx.program.graph.nodes, ('"as_scalar_type"',)))
    found = [lit for node in nodes for lit in literals_of(node)]
    if not found:
        return
    if any(lit.kept for lit in found):
        found = plan_program(ctx.program, BFLOAT16).literals
    by_name = {n.name: n for n in nodes}
    for lit in found:
        node = by_name.get(lit.node)
        op = lit.target.removeprefix("torch.ops.")
        if lit.kind == ASSERT:
            message = (f"{op} checks {lit.arg}=torch.{lit.dtype_name}, the example's dtype: "
                       "with bf16 weights it raises 'Tensor dtype mismatch'")
        else:
            message = (f"{op} has {lit.arg}=torch.{lit.dtype_name} frozen from the example "
                       "(its source line computes the dtype): a bf16 run computes this at "
                       f"{lit.dtype_name}" + _trace_where(node.stack_trace if node else None))
        ctx.add(DTYPE_LITERAL, INFO, message, node=node, node_name=lit.node,
                fix="pt2-inspector retarget FILE --dtype bf16 -o OUT.pt2", group=lit.kind)


# --- code in names (issue 27): the loader's own checks (core/vetting.py) -----------------

_REFUSED_FIX = ("do not load it with torch: a genuine export never writes this; check, "
                "profile and run refuse the file (--trust does not change that)")
_SPEC_FIELDS = {"parameter": "parameter name", "buffer": "buffer name",
                "tensor_constant": "tensor constant name", "custom_obj": "custom obj name"}
_OUTPUT_FQN_FIELDS = {"buffer_mutation": "buffer name", "parameter_mutation": "parameter name",
                      "gradient_to_parameter": "parameter name"}
_META_TEXT_KEYS = ("stack_trace", "custom", "nn_module_stack")


def _code_in_names(ctx: _Context, wanted: set[str] | frozenset[str] | Sequence[str]) -> None:
    """What `check`/`profile`/`run` refuse, found by the same checks over what the
    reader parsed: every string torch resolves (node targets, operator arguments:
    `operator-argument`) or pastes into the code FX generates and execs (names,
    FQNs, keyword names, input spec keywords, symbolic sizes, guards:
    `code-in-names`). On a lean program only the nodes the screens of
    core/vetting.py point at are made (a handful; none in a genuine export)."""
    from inspector.core import vetting as v

    program = ctx.program
    seen: set[tuple] = set()

    def add(field: str, problem: str, node: Node | None = None, severity: str = ERROR) -> None:
        rule = OPERATOR_ARGUMENT if field in ("node target", "operator argument") else CODE_IN_NAMES
        key = (rule, field, problem, node.name if node is not None else None)
        if rule not in wanted or key in seen:
            return
        seen.add(key)
        if severity == ERROR:
            message = f"{field} {problem}" + (
                "" if "torch would" in problem
                else ": torch would run it as code when it loads or runs the program")
            fix = _REFUSED_FIX
        else:
            message = f"{field} {problem}"
            fix = "load it only with FX_GRAPH_SHOW_META unset"
        ctx.add(rule, severity, message, node=node, group=field, fix=fix)

    for graph in program.graphs():
        nodes = graph.nodes
        lazy = hasattr(nodes, "suspects")
        targets = nodes.targets() if lazy else [n.target for n in nodes]
        for target in dict.fromkeys(targets):
            problem = v.target_problem(target)
            if problem:
                add("node target", problem, nodes[targets.index(target)])
        names = nodes.names_in_file() if lazy else [n.name if n.name_in_file else None
                                                    for n in nodes]
        for i in v.bad_names(["" if n == "" else n for n in names]):
            if names[i] not in (None, ""):
                add("node name", v.name_problem(names[i]) or "", nodes[i])
        suspects = (nodes.suspects(v.SUSPECT_ARGUMENTS, v.suspect_metadata) if lazy
                    else range(len(nodes)))
        for i in suspects:
            node = nodes[i]
            doc = {"target": node.target, "inputs": [
                {"name": a.name, "arg": {a.arg.kind: a.arg.value}, "kind": a.kind}
                for a in node.inputs], "outputs": [{o.kind: o.value} for o in node.outputs],
                "metadata": node.metadata}
            for field, problem in v.node_problems(doc):
                if field != "node target":
                    add("operator argument" if field == "operator argument" else
                        "keyword name" if field.endswith("keyword name") else field,
                        problem, node)
            for key in _META_TEXT_KEYS:
                problem = v.docstring_problem(node.metadata.get(key), key)
                if problem:
                    add(f"metadata {key}", problem, node, WARNING)
        for arg in graph.inputs:
            for field, problem in v.argument_problems(arg.kind, arg.value, "placeholder name"):
                add(field, problem)
        for arg in graph.outputs:
            for field, problem in v.argument_problems(arg.kind, arg.value):
                add(field, problem)
        for table in (graph.tensor_values, graph.sym_int_values, graph.sym_bool_values,
                      graph.sym_float_values, graph.custom_obj_values):
            keys = list(table)
            for i in v.bad_names(keys):
                add("value name", v.name_problem(keys[i]) or "")
        values = graph.tensor_values
        for key in (values.symbolic() if hasattr(values, "symbolic") else list(values)):
            for size in (*values[key].sizes, *values[key].strides, values[key].storage_offset):
                if isinstance(size, str):
                    problem = v.size_problem(size)
                    if problem:
                        add("symbolic shape", problem)
    for spec in program.input_specs:
        problem = v.name_problem(spec.name)
        if problem:
            add("placeholder name", problem)
        field = _SPEC_FIELDS.get(spec.kind)
        if field and spec.target is not None:
            problem = v.fqn_problem(spec.target)
            if problem:
                add(field, problem)
    for out in program.output_specs:
        field = _OUTPUT_FQN_FIELDS.get(out.kind)
        if field and out.target is not None:
            problem = v.fqn_problem(out.target)
            if problem:
                add(field, problem)
    for key in program.range_keys:
        problem = v.range_key_problem(key)
        if problem:
            add("range constraint key", problem)
    for guard in program.guards_code:
        problem = v.guard_problem(guard)
        if problem:
            add("guard", problem)
    for field, problem in v.module_call_problems(program.module_call_graph):
        add(field, problem)
    for entry in program.module_call_graph:
        sig = entry.get("signature") if isinstance(entry, dict) else None
        if isinstance(sig, dict):
            for key in ("in_spec", "out_spec"):
                problem = v.pytree_problem(sig.get(key))
                if problem:
                    add("pytree type", problem)


def code_in_names(archive: Archive) -> list[dict[str, Any]]:
    """The code-in-names and operator-argument findings (what check, profile and run
    refuse, by the loader's own checks: core/vetting.py), for `info`'s summary."""
    return [f.as_dict() for f in audit_archive(archive, rules=[CODE_IN_NAMES, OPERATOR_ARGUMENT])]
