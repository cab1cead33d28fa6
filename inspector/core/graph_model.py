"""The dataflow of one module of a program, as boxes and edges: the picture's model.

A *level* is what one module (a `nn_module_stack` path; "" is the graph's root)
looks like from inside: its own nodes are boxes, each child module is one box
(its node count, the values entering and leaving it), the values that come from
outside the module are `in:` boxes at its top and the values it hands out are
`out:` boxes at its bottom; at the graph's root those are the placeholders and
the graph's outputs. A control-flow subgraph a node reads (cond/while/map/scan)
is a `g:` box that opens the subgraph's own graph.

Edges follow the values: one edge per (producer box, consumer box) pair, with the
values it carries. A child module's edges are therefore the union of its members'
edges that cross its boundary. Levels depend on their module alone, so each is
computed once and expanding a child only asks for the child's level.

Box ids are stable text: `n:<node>`, `m:<module path>`, `g:<subgraph path>`,
`in:<scope>:<value>`, `out:<scope>:<value>`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from inspector.core.frames import parse_module_stack
from inspector.core.program import Graph, Node, Program

NODE, MODULE, SUBGRAPH, INPUT, OUTPUT = "node", "module", "subgraph", "input", "output"
WEIGHT_KINDS = ("parameter", "buffer", "tensor_constant", "custom_obj", "constant_input")


@dataclass
class Box:
    id: str
    kind: str  # NODE, MODULE, SUBGRAPH, INPUT, OUTPUT
    label: str  # the op, the module's last name, the value's printed name
    detail: str = ""  # the output's dtype and shape, the module's class and size
    node: str | None = None  # the node's name in the file (NODE)
    module: str | None = None  # the module path (MODULE)
    graph: str | None = None  # the subgraph's path (SUBGRAPH; graph_paths)
    value: str | None = None  # the value an INPUT/OUTPUT box stands for
    count: int = 0  # nodes inside (MODULE, SUBGRAPH)
    # an INPUT that is a parameter, buffer or constant: the picture folds it into
    # its readers (a model's weights would be most of its boxes), the model keeps it
    weight: bool = False


@dataclass
class Edge:
    src: str
    dst: str
    values: list[str] = field(default_factory=list)  # names in the file


@dataclass
class Level:
    graph: str  # the graph's path: "" for the program's top graph
    scope: str  # module path, "" for the graph's root
    boxes: dict[str, Box]
    edges: list[Edge]

    def children(self) -> list[str]:
        """The module paths of this level's module boxes (the ones that open)."""
        return [b.module for b in self.boxes.values() if b.kind == MODULE and b.module]


@dataclass
class ModuleInfo:
    path: str
    cls: str
    depth: int  # 1 for a child of the root
    parent: str  # "" for a child of the root
    children: list[str] = field(default_factory=list)
    count: int = 0  # nodes inside, its submodules' included


def _module_chain(text: str | None, cache: dict) -> tuple[tuple[str, str], ...]:
    """(path, class) of the modules a node sits in, outermost first, the root left out
    (it is the level every node is in) and a module repeated at once kept once."""
    chain = cache.get(text)
    if chain is None:
        out: list[tuple[str, str]] = []
        for entry in parse_module_stack(text):
            if entry.path and (not out or out[-1][0] != entry.path):
                out.append((entry.path, entry.class_name))
        chain = cache[text] = tuple(out)
    return chain


def graph_paths(program: Program) -> dict[str, Graph]:
    """Each graph of a program under its path: "" the top graph, a subgraph under the
    names leading to it (`true_graph_0.false_graph_0`: nested graphs reuse names, as
    FX's submodules of submodules do)."""
    out: dict[str, Graph] = {}

    def walk(graph: Graph, path: str) -> None:
        out.setdefault(path, graph)
        for sub in graph.subgraphs:
            walk(sub, f"{path}.{sub.name}" if path else sub.name)

    walk(program.graph, "")
    return out


class GraphModel:
    """One graph of a program (its top graph, or a control-flow subgraph) as levels.

    `namer(graph, name)` gives the name the listing prints for a value (FX renames
    inputs named after builtins); labels use it, ids keep the file's names."""

    def __init__(self, program: Program, graph: str = "",
                 namer: Callable[[str, str], str] | None = None) -> None:
        self._paths = graph_paths(program)
        found = self._paths.get(graph)
        if found is None:
            raise KeyError(graph)
        self.program = program
        self.path = graph  # the graph's path (graph_paths)
        self.graph: Graph = found
        self._namer = namer or (lambda _g, name: name)
        self._levels: dict[tuple[str, bool], Level] = {}
        nodes = self.graph.nodes
        self.nodes: list[Node] = list(nodes)
        self.modules: dict[str, ModuleInfo] = {}
        self.chains: list[tuple[str, ...]] = []
        # module path -> indices of the nodes inside it (its submodules' included)
        self._members: dict[str, list[int]] = {"": []}
        cache: dict = {}
        modules = self.modules
        for i, node in enumerate(self.nodes):
            chain = _module_chain(node.metadata.get("nn_module_stack"), cache)
            paths: list[str] = []
            for depth, (path, cls) in enumerate(chain, 1):
                info = modules.get(path)
                if info is None:
                    parent = paths[-1] if paths else ""
                    info = modules[path] = ModuleInfo(path, cls, depth, parent)
                    self._members[path] = []
                    if parent:
                        modules[parent].children.append(path)
                if info.depth != depth or (paths and info.parent != paths[-1]):
                    break  # a path met before at another place in the tree: keep the first
                paths.append(path)
                info.count += 1
                self._members[path].append(i)
            self.chains.append(tuple(paths))
        self._members[""] = list(range(len(self.nodes)))
        # values: who makes each, who reads it
        self.placeholders: list[str] = []
        self.weights: set[str] = set()
        if not graph:
            self.weights = {s.name for s in program.input_specs if s.kind in WEIGHT_KINDS}
        self.producer: dict[str, int] = {}  # value -> node index; -1 for a graph input
        self.users: dict[str, list[int]] = {}
        for arg in self.graph.inputs:
            for name in arg.tensor_names():
                self.placeholders.append(name)
                self.producer[name] = -1
        self._reads: list[list[str]] = []
        self._subgraphs: list[list[str]] = []
        self._writes: list[list[str]] = []
        for i, node in enumerate(self.nodes):
            for name in node.output_names():
                self.producer.setdefault(name, i)
            self._writes.append(node.output_names())
        for i, node in enumerate(self.nodes):
            reads = list(dict.fromkeys(node.input_names()))
            self._reads.append(reads)
            for name in reads:
                self.users.setdefault(name, []).append(i)
            self._subgraphs.append([g for inp in node.inputs
                                    if (g := inp.arg.graph_name()) is not None])
        self.outputs: list[str] = []
        for arg in self.graph.outputs:
            self.outputs.extend(arg.tensor_names())
        self._output_set = set(self.outputs)

    # --- what is inside what ----------------------------------------------------------

    def depth(self, scope: str) -> int:
        return self.modules[scope].depth if scope else 0

    def inside(self, index: int, scope: str) -> bool:
        if not scope:
            return True
        chain, d = self.chains[index], self.modules[scope].depth
        return len(chain) >= d and chain[d - 1] == scope

    def inside_module(self, path: str, scope: str) -> bool:
        """Module `path` is `scope` or below it."""
        while path:
            if path == scope:
                return True
            path = self.modules[path].parent
        return not scope

    def box_of_node(self, index: int, scope: str) -> str:
        """The box of `scope`'s level that holds node `index` (which is inside it)."""
        chain, d = self.chains[index], self.depth(scope)
        return f"n:{self.nodes[index].name}" if len(chain) == d else f"m:{chain[d]}"

    # --- levels -----------------------------------------------------------------------

    def level(self, scope: str = "", flat: bool = False) -> Level:
        """`scope`'s level; `flat`: every node inside it a box of its own (no groups)."""
        level = self._levels.get((scope, flat))
        if level is None:
            if scope and scope not in self.modules:
                raise KeyError(scope)
            level = self._levels[(scope, flat)] = self._build_level(scope, flat)
        return level

    def _build_level(self, scope: str, flat: bool) -> Level:
        d = self.depth(scope)
        boxes: dict[str, Box] = {}
        edges: dict[tuple[str, str], Edge] = {}
        chains, nodes = self.chains, self.nodes
        member_set = set(self._members[scope]) if scope else None

        def edge(src: str, dst: str, value: str) -> None:
            e = edges.get((src, dst))
            if e is None:
                e = edges[(src, dst)] = Edge(src, dst)
            if value not in e.values:
                e.values.append(value)

        for i in self._members[scope]:
            chain = chains[i]
            node = nodes[i]
            if flat or len(chain) == d:
                box = f"n:{node.name}"
                if box not in boxes:
                    boxes[box] = self._node_box(box, node)
                for g in self._subgraphs[i]:
                    sub = f"{self.path}.{g}" if self.path else g
                    gid = f"g:{sub}"
                    if gid not in boxes:
                        boxes[gid] = self._subgraph_box(gid, sub, g)
                    edge(gid, box, g)
            else:
                box = f"m:{chain[d]}"
                if box not in boxes:
                    boxes[box] = self._module_box(box, chain[d])
            for value in self._reads[i]:
                p = self.producer.get(value)
                if p is None:
                    continue  # a symbol no node makes (a size of an input): no edge in FX
                if p >= 0 and (member_set is None or p in member_set):
                    src = f"n:{nodes[p].name}" if flat else self.box_of_node(p, scope)
                else:
                    src = f"in:{scope}:{value}"
                    if src not in boxes:
                        boxes[src] = self._port_box(src, INPUT, value)
                if src != box:
                    edge(src, box, value)
            for value in self._writes[i]:
                if value in self._output_set or (member_set is not None and any(
                        u not in member_set for u in self.users.get(value, ()))):
                    dst = f"out:{scope}:{value}"
                    if dst not in boxes:
                        boxes[dst] = self._port_box(dst, OUTPUT, value)
                    edge(box, dst, value)
        if not scope:  # an input handed straight back out
            for value in self.outputs:
                if self.producer.get(value) == -1:
                    src, dst = f"in::{value}", f"out::{value}"
                    boxes.setdefault(src, self._port_box(src, INPUT, value))
                    boxes.setdefault(dst, self._port_box(dst, OUTPUT, value))
                    edge(src, dst, value)
        return Level(self.path, scope, boxes, list(edges.values()))

    # --- boxes ------------------------------------------------------------------------

    def value_text(self, value: str) -> str:
        """`f32[2, 64]` for a tensor, `Sym(s0)` for a symbolic int, "" otherwise."""
        meta = self.graph.tensor_values.get(value)
        if meta is not None:
            return meta.annotation()
        for table in (self.graph.sym_int_values, self.graph.sym_float_values,
                      self.graph.sym_bool_values):
            if value in table:
                return f"Sym({table[value]})"
        return ""

    def _node_box(self, box: str, node: Node) -> Box:
        outs = node.output_names()
        detail = self.value_text(outs[0]) if outs else ""
        if len(outs) > 1:
            detail += f" (+{len(outs) - 1})"
        return Box(box, NODE, node.op_name, detail, node=node.name)

    def _module_box(self, box: str, path: str) -> Box:
        info = self.modules[path]
        name = path.rsplit(".", 1)[-1]
        return Box(box, MODULE, name, f"{info.cls} · {info.count} nodes", module=path,
                   count=info.count)

    def _subgraph_box(self, box: str, path: str, name: str) -> Box:
        sub = self._paths.get(path)
        count = len(sub.nodes) if sub is not None else 0
        return Box(box, SUBGRAPH, name, f"subgraph · {count} nodes",
                   graph=path if sub is not None else None, count=count)

    def _port_box(self, box: str, kind: str, value: str) -> Box:
        return Box(box, kind, self._namer(self.graph.name, value), self.value_text(value),
                   value=value, weight=kind == INPUT and value in self.weights)


class ProgramGraphs:
    """The GraphModel of each graph of a program, made when first asked for."""

    def __init__(self, program: Program, namer: Callable[[str, str], str] | None = None) -> None:
        self.program = program
        self._namer = namer
        self._models: dict[str, GraphModel] = {}
        self._where: dict[str, tuple[str, int]] | None = None

    def graph_names(self) -> list[str]:
        """The graphs' paths (graph_paths), the top graph "" first."""
        return list(graph_paths(self.program))

    def model(self, graph: str = "") -> GraphModel:
        model = self._models.get(graph)
        if model is None:
            model = self._models[graph] = GraphModel(self.program, graph, self._namer)
        return model

    def find_node(self, name: str) -> tuple[str, tuple[str, ...]] | None:
        """(graph path, modules holding it) of a node; None when no graph has it. The
        names are indexed once (the listing's cursor asks at every move)."""
        if self._where is None:
            where: dict[str, tuple[str, int]] = {}
            for path, g in graph_paths(self.program).items():
                for i, node in enumerate(g.nodes):
                    where.setdefault(node.name, (path, i))
            self._where = where
        found = self._where.get(name)
        if found is None:
            return None
        path, index = found
        return path, self.model(path).chains[index]
