"""What the window knows about an opened archive, built off the GUI thread.

`build_program_view` does all per-program work (parse, listing, search index,
users of each value, module tree data, weight rows) in a worker, so the window
only ever swaps in finished objects. Qt-free: the window runs these functions
through inspector/ui/tasks.py, and they are unit-tested without Qt.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inspector.core.annotations import AnnotationStore
from inspector.core.archive import Archive, open_archive
from inspector.core.errors import ArchiveError, InspectorError
from inspector.core.first_screen import first_screen_of
from inspector.core.frames import parse_module_stack
from inspector.core.gcpause import gc_paused
from inspector.core.listing import CLASS, Listing, render_listing, render_listing_chunks, value_users
from inspector.core.dtypes import DTYPE_ITEMSIZE
from inspector.core.program import Node, Program, TensorMeta, parse_tensor_meta
from inspector.core.search import SearchIndex


@dataclass
class WeightRow:
    fqn: str
    kind: str  # parameter / buffer / constant
    shape: str
    dtype: str
    device: str
    nbytes: int | None
    record: str
    pickled: bool
    shared_with: list[str] = field(default_factory=list)


@dataclass
class ModuleInfo:
    path: str
    cls: str
    count: int = 0  # nodes directly inside (innermost module == this one)


@dataclass
class ProgramView:
    """A program ready to show. `index`, `users` and `modules` arrive in a second
    step (index_view, applied on the GUI thread) for big programs, so the
    listing paints first."""

    name: str
    program: Program
    listing: Listing
    line_graph: list[str]  # line -> name of the graph it belongs to
    index: SearchIndex | None = None
    users: dict[tuple[str, str], list[int]] | None = None  # (graph, value) -> reader lines
    modules: dict[str, ModuleInfo] | None = None  # path -> info (ancestors included)
    weights: list[WeightRow] = field(default_factory=list)
    seconds: float = 0.0  # reading + listing (what the first paint waited for)
    index_seconds: float = 0.0
    # A big program's listing is streamed: the first chunk is listed before the
    # view is shown, index_view writes the rest (render_listing_chunks) before it
    # indexes. `listed` is how many lines are written and consistent (set by the
    # writing thread after each chunk: read only lines below it while streaming).
    rest: Iterator[Listing] | None = field(default=None, repr=False)
    listed: int = 0
    _graphs_seen: int = field(default=0, repr=False)  # CLASS lines line_graph has seen
    # one writer at a time: a cancelled stream may still be in its chunk when
    # another task goes on with the same generator
    _stream_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def complete(self) -> bool:
        return self.index is not None

    @property
    def streaming(self) -> bool:
        """Lines are still being written (index_view writes them)."""
        return self.rest is not None

    @property
    def node_count(self) -> int:
        return self.program.node_count

    def node_at(self, line: int) -> Node | None:
        return self.listing.node_at(line)

    def graph_at(self, line: int) -> str:
        return self.line_graph[line] if 0 <= line < len(self.line_graph) else ""

    # Names come in two kinds: a name read off the listing (a word under the
    # cursor, a link of the details pane) is the name FX prints (`input_1`),
    # a node's own fields name values as the file does (`input`). Lookups take
    # printed names and map them through Listing.value_name.
    def definition_line(self, name: str, line: int) -> int | None:
        """The line defining the value the listing prints as `name` near `line`."""
        graph = self.graph_at(line)
        return self.listing.definitions.get((graph, self.listing.value_name(graph, name)))

    def users_of(self, name: str, line: int) -> list[int]:
        """Lines reading the value the listing prints as `name` near `line`."""
        graph = self.graph_at(line)
        return (self.users or {}).get((graph, self.listing.value_name(graph, name)), [])

    def shown_name(self, graph: str, name: str) -> str:
        """How the listing prints the value `name` of the file."""
        return self.listing.printed_name(graph, name)

    def shown_namer(self, node: Node):
        """name in the file -> printed name, in the graph of `node`."""
        graph = node.graph.name
        return lambda name: self.listing.printed_name(graph, name)

    def shown_inputs(self, node: Node) -> list[str]:
        """The values `node` reads, as the listing prints them."""
        graph = node.graph.name
        return [self.listing.printed_name(graph, n) for n in node.input_names()]

    def node_users(self, node: Node) -> dict[str, list[int]]:
        """printed output name -> lines reading it."""
        graph, users = node.graph.name, self.users or {}
        return {self.listing.printed_name(graph, n): users.get((graph, n), [])
                for n in node.output_names()}

    def source_lines(self, file: str, line: int) -> list[int]:
        return self.index.source_lines(file, line) if self.index is not None else []

    def module_lines(self, path: str) -> list[int]:
        """Lines of the nodes inside module `path` (its submodules included)."""
        if self.index is None or self.modules is None:
            return []
        table = self.index.keys["module"]
        prefix = path + "."
        lines: set[int] = set()
        for key, lst in table.items():
            if key in self.modules and (key == path or key.startswith(prefix) or not path):
                lines.update(lst)
        return sorted(lines)


@dataclass
class ArchiveDoc:
    path: Path
    archive: Archive
    views: dict[str, ProgramView] = field(default_factory=dict)

    @property
    def program_names(self) -> list[str]:
        return self.archive.program_names


@dataclass(eq=False)
class ListedArchive:
    """One side of a comparison, as the selection model's panels read a document:
    the programs the comparison parsed and listed, viewed (listed_view) as they are
    asked for. No archive stays open, so no annotations (an empty store)."""

    path: Path
    program_names: list[str]
    views: dict[str, ProgramView] = field(default_factory=dict)
    annotations: AnnotationStore = field(default_factory=AnnotationStore)
    closed: bool = False

    def view(self, program: str | None = None) -> ProgramView | None:
        return self.views.get(program) if program else None


def listed_view(name: str, program: Program, listing: Listing) -> ProgramView:
    """A complete view (indexed: users, modules, source lines) of a program already
    parsed and listed, e.g. by a comparison (worker side; no weights)."""
    with gc_paused(freeze=True):
        view = ProgramView(name, program, listing, [])
        _grow(view)
    return complete_view(view)


# Programs above this size are shown before their search index is built.
SPLIT_ABOVE_NODES = 20_000


def build_program_view(archive: Archive, name: str, complete: bool | None = None) -> ProgramView:
    """Read and list a program; also index it unless it is big and `complete`
    is None (then the caller runs index_view after showing it)."""
    t0 = time.perf_counter()
    with gc_paused(freeze=True):
        program = archive.program(name)
        split = not complete and complete is not False and program.node_count > SPLIT_ABOVE_NODES
        if split:  # paint the first chunk; index_view writes the rest
            chunks = render_listing_chunks(program)
            listing = next(chunks)
        else:
            chunks, listing = None, render_listing(program)
        view = ProgramView(name, program, listing, [], weights=_weights(archive, name, program),
                           rest=chunks)
        _grow(view)
    view.seconds = time.perf_counter() - t0
    if not split and complete is not False:
        complete_view(view)
    return view


def _grow(view: ProgramView) -> None:
    """After a chunk: extend line_graph to the written lines, then publish them."""
    n = len(view.listing.lines)
    graphs = list(view.program.graphs())
    kinds, out = view.listing.kinds, view.line_graph
    current = out[-1] if out else ""
    for i in range(len(out), n):  # each CLASS line starts the next graph in walk order
        if kinds[i] == CLASS:
            if view._graphs_seen < len(graphs):
                current = graphs[view._graphs_seen].name
            view._graphs_seen += 1
        out.append(current)
    view.listed = n


def stream_listing(view: ProgramView, grew: Callable[[int], object] | None = None,
                   stop: Callable[[], bool] | None = None) -> bool:
    """Write the rest of a streamed listing (worker side), calling `grew(lines)` after
    each chunk. False when `stop()` said to stop first (the view stays streaming)."""
    with view._stream_lock, gc_paused(freeze=True):
        rest = view.rest
        if rest is None:
            return True
        for _ in rest:
            _grow(view)
            if grew is not None:
                grew(view.listed)
            if stop is not None and stop():
                return False
        view.rest = None
    return True


@dataclass
class ViewIndex:
    index: SearchIndex
    users: dict[tuple[str, str], list[int]]
    modules: dict[str, ModuleInfo]
    seconds: float

    def apply(self, view: ProgramView) -> ProgramView:
        """Attach to the view (on the GUI thread: the shown view never changes
        under the painting thread's feet)."""
        view.users, view.modules, view.index = self.users, self.modules, self.index
        view.index_seconds = self.seconds
        return view


def index_view(view: ProgramView) -> ViewIndex:
    """The search index, users and module data of a listed program (worker side);
    a streamed listing is written whole first."""
    t0 = time.perf_counter()
    stream_listing(view)
    with gc_paused(freeze=True):
        index = SearchIndex(view.listing)
        users = value_users(view.program, view.listing)
        modules = _modules(view.program)
    return ViewIndex(index, users, modules, time.perf_counter() - t0)


def complete_view(view: ProgramView) -> ProgramView:
    return index_view(view).apply(view)


def open_document(path: str | Path, program: str | None = None,
                  first_screen: Callable[[str, list[str]], object] | None = None
                  ) -> tuple[ArchiveDoc, ProgramView | None]:
    """The archive and the view of its first program (`program`, else the one a
    user would look at first). `first_screen(name, lines)`, for a big program:
    its first listing lines, made before it is parsed (the caller may paint them
    meanwhile; the call returns before the parse starts)."""
    archive = open_archive(path)
    doc = ArchiveDoc(Path(path), archive)
    names = archive.program_names
    if not names:
        return doc, None
    first = program if program in names else _preferred(names)
    if first_screen is not None:
        lines = first_screen_of(archive, first)
        if lines:
            first_screen(first, lines)
    view = build_program_view(archive, first)
    doc.views[first] = view
    return doc, view


def _preferred(names: list[str]) -> str:
    # "model" is torch.export.save's default; the toy archive leads with its decoder
    for n in ("model", "decoder"):
        if n in names:
            return n
    return names[0]


def _modules(program: Program) -> dict[str, ModuleInfo]:
    modules: dict[str, ModuleInfo] = {}
    seen: dict[str, tuple] = {}
    for node in program.all_nodes():
        text = node.nn_module_stack
        if not text:
            continue
        entries = seen.get(text)
        if entries is None:
            entries = seen[text] = parse_module_stack(text)
        for e in entries:
            if e.path not in modules:
                modules[e.path] = ModuleInfo(e.path, e.class_name)
        if entries:
            modules[entries[-1].path].count += 1
    return modules


def _weights(archive: Archive, name: str, program: Program) -> list[WeightRow]:
    kinds = {s.target: s.kind for s in program.input_specs if s.target}
    rows: list[WeightRow] = []
    for which in ("weights", "constants"):
        try:
            config = archive.payload_config(name, which)
        except InspectorError:
            continue
        for fqn, entry in (config or {}).items():
            if not isinstance(entry, dict):
                continue
            meta = entry.get("tensor_meta") or {}
            rows.append(_weight_row(fqn, entry, meta, kinds.get(fqn, which[:-1])))
    by_record: dict[str, list[WeightRow]] = {}
    for row in rows:
        if row.record:
            by_record.setdefault(row.record, []).append(row)
    for group in by_record.values():
        if len(group) > 1:
            for row in group:
                row.shared_with = [r.fqn for r in group if r is not row]
    return rows


def _weight_row(fqn: str, entry: dict[str, Any], meta: dict[str, Any], kind: str) -> WeightRow:
    """One weights/constants config entry, its tensor_meta decoded by the program parser
    (one decoder of the serialized TensorMeta)."""
    try:
        tm: TensorMeta | None = parse_tensor_meta(meta, f"{kind} {fqn}")
    except ArchiveError:  # a damaged entry still gets its row
        tm = None
    if tm is None:
        shape, dtype, device, nbytes = "[?]", "dtype?", "?", None
    else:
        shape, dtype, device = tm.shape_text(), tm.dtype_name, str(tm.device)
        nbytes = tm.nbytes() if tm.dtype in DTYPE_ITEMSIZE else None
    return WeightRow(
        fqn=fqn, kind=kind, shape=shape, dtype=dtype, device=device, nbytes=nbytes,
        record=str(entry.get("path_name", "")), pickled=bool(entry.get("use_pickle")),
    )
