"""The graph picture's model against torch's own FX graph (issue 31).

For every program of the fidelity corpus that torch can load (graph_corpus.py's
multi-program archive, the release fixtures in tests/data), and for every graph in
it (control-flow subgraphs too), the edges of each level of core/graph_model.py —
the graph's root and every module of its `nn_module_stack` tree — equal the edges
torch's FX graph has once its nodes are put in the same boxes: FX's `node.users`
(args and kwargs), each node boxed by torch's own `node.meta["nn_module_stack"]`,
a collapsed module's edges the union of its members' edges that cross its border,
the values crossing the level's border as `in`/`out` ports.

FX nodes are matched to the file's nodes by position (FX adds a `getitem` node per
element of a multi-output node and a `get_attr` node per subgraph argument; those
belong to the node they come from), checked by op name as it goes.
"""

from __future__ import annotations

import operator
import os
from pathlib import Path
from typing import Any

import graph_corpus
import pytest

from inspector.core.archive import open_archive
from inspector.core.graph_model import GraphModel, graph_paths

pytestmark = pytest.mark.slow  # the corpus's graphs against torch's, edge by edge: minutes

DATA = Path(__file__).resolve().parents[1] / "data"
EXPORTDB = ["cond_operands", "cond_branch_nested_function", "dynamic_shape_map", "list_unpack",
            "dictionary", "nested_function", "scalar_output", "static_for_loop",
            "constrain_as_size_example", "pytree_flatten", "user_input_mutation",
            "dynamic_shape_view", "dynamic_shape_slicing", "cond_closed_over_variable"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    given = os.environ.get("PT2I_TEST_GRAPH_CORPUS")  # dev loop: reuse one build
    if given and Path(given).exists():
        with open_archive(given) as ar:
            return Path(given), sorted(ar.program_names)
    if given:
        path, programs, skipped = graph_corpus.build(Path(given), exportdb=EXPORTDB)
    else:
        path, programs, skipped = graph_corpus.cached_build(exportdb=EXPORTDB)
    print("\ncorpus:", len(programs), "programs; skipped:", *skipped, sep="\n  ")
    return path, sorted(programs)


# --- torch's side, boxed independently ---------------------------------------------------

def _fx_chain(node: Any) -> list[str]:
    stack = node.meta.get("nn_module_stack") or {}
    out: list[str] = []
    for key, value in stack.items():
        if str(key).startswith("_empty_nn_module_stack"):
            continue  # the deserializer's stand-in for "no module" (torch's own key)
        path = value[0] if isinstance(value, tuple) else None
        if path and (not out or out[-1] != path):
            out.append(path)
    return out


class FxSide:
    """One FX graph with each node matched to the file's node (or input) it stands for."""

    def __init__(self, fx_graph: Any, graph: Any, path: str) -> None:
        self.fx = fx_graph
        self.prefix = f"{path}." if path else ""  # get_attr targets are relative
        fx_nodes = list(fx_graph.nodes)
        placeholders = [n for n in fx_nodes if n.op == "placeholder"]
        assert len(placeholders) == len(graph.inputs)
        self.key: dict[Any, tuple] = {}  # FX node -> ("ph", name) | ("node", file name)
        for ph, arg in zip(placeholders, graph.inputs):
            names = arg.tensor_names()
            self.key[ph] = ("ph", names[0] if names else ph.name)
        ours = iter(graph.nodes)
        owner: dict[Any, Any] = {}  # FX node -> our Node
        for n in fx_nodes:
            if n.op in ("placeholder", "output", "get_attr"):
                continue
            src = n.args[0] if n.target is operator.getitem and n.args else None
            if src is not None and src in owner:  # an element of a multi-output node
                owner[n] = owner[src]
                continue
            node = next(ours)
            assert node.op_name in str(n.target) or node.op_name in n.name, (node.target, n.target)
            owner[n] = node
        assert next(ours, None) is None, "file nodes left over"
        self.owner = owner
        for n, node in owner.items():
            self.key[n] = ("node", node.name)
        # module tree, each path where first met (the model's rule)
        self.depth: dict[str, int] = {}
        parent: dict[str, str] = {}
        self.chain: dict[Any, list[str]] = {}
        first: dict[str, list[str]] = {}
        for n in fx_nodes:
            if n in owner and owner[n].name not in first and n.target is not operator.getitem:
                first[owner[n].name] = self._cut(_fx_chain(n), parent)
        for n in fx_nodes:
            if n in owner:
                self.chain[n] = first.get(owner[n].name, [])
        for n in fx_nodes:
            if n.op == "get_attr":
                users = list(n.users)
                assert len(users) == 1, n
                self.chain[n] = self.chain[users[0]]

    def _cut(self, chain: list[str], parent: dict[str, str]) -> list[str]:
        out: list[str] = []
        for d, path in enumerate(chain, 1):
            above = out[-1] if out else ""
            if path not in self.depth:
                self.depth[path], parent[path] = d, above
            if self.depth[path] != d or parent[path] != above:
                break
            out.append(path)
        return out

    def inside(self, n: Any, scope: str) -> bool:
        if n.op in ("placeholder", "output"):
            return False
        if not scope:
            return True
        chain, d = self.chain[n], self.depth[scope]
        return len(chain) >= d and chain[d - 1] == scope

    def box(self, n: Any, scope: str) -> tuple:
        d = self.depth[scope] if scope else 0
        chain = self.chain[n]
        if len(chain) > d:
            return ("m", chain[d])
        if n.op == "get_attr":
            return ("g", self.prefix + str(n.target))
        return ("n", self.key[n][1])

    def edges(self, scope: str) -> set[tuple]:
        out: set[tuple] = set()
        for u in self.fx.nodes:
            for v in u.users:
                iu, iv = self.inside(u, scope), self.inside(v, scope)
                if iu and iv:
                    a, b = self.box(u, scope), self.box(v, scope)
                elif iv:
                    a, b = ("in", self.key[u]), self.box(v, scope)
                elif iu:
                    a, b = self.box(u, scope), ("out", self.key[u])
                elif not scope and u.op == "placeholder" and v.op == "output":
                    a, b = ("in", self.key[u]), ("out", self.key[u])
                else:
                    continue
                if a != b:
                    out.add((a, b))
        return out


# --- our side ----------------------------------------------------------------------------

def our_edges(model: GraphModel, scope: str) -> set[tuple]:
    graph = model.graph
    producer: dict[str, tuple] = {}
    for arg in graph.inputs:
        for name in arg.tensor_names():
            producer[name] = ("ph", name)
    for node in graph.nodes:
        for name in node.output_names():
            producer.setdefault(name, ("node", node.name))

    def key(box_id: str) -> tuple:
        kind, _, rest = box_id.partition(":")
        if kind in ("in", "out"):
            value = rest[len(scope) + 1:]  # in:<scope>:<value>
            return (kind, producer[value])
        return (kind, rest)

    return {(key(e.src), key(e.dst)) for e in model.level(scope).edges}


def _fx_graph_of(gm: Any, path: str) -> Any:
    """The FX graph module of the subgraph at `path` (`true_graph_0.false_graph_0`)."""
    return gm.get_submodule(path) if path else gm


def check_program(program: Any, ep: Any) -> int:
    """Every level of every graph; the number of levels checked."""
    checked = 0
    for path, graph in graph_paths(program).items():
        model = GraphModel(program, path)
        fx = FxSide(_fx_graph_of(ep.graph_module, path).graph, graph, path)
        assert set(model.modules) == set(fx.depth), path
        for scope in ["", *model.modules]:
            theirs, ours = fx.edges(scope), our_edges(model, scope)
            assert ours == theirs, (program.name, path, scope,
                                    sorted(ours - theirs)[:5], sorted(theirs - ours)[:5])
            checked += 1
    return checked


@pytest.mark.timeout(1800)  # exporting the corpus: ~5 min on a loaded 2-core machine
def test_levels_have_torchs_edges_on_the_corpus(corpus) -> None:
    # defining the HF output types registers them with pytree (`import transformers`
    # alone is lazy: it defines them only once a model was built in this process)
    import transformers.modeling_outputs  # noqa: F401
    from torch.export.pt2_archive._package import load_pt2

    path, names = corpus
    eps = load_pt2(str(path)).exported_programs
    levels = programs = 0
    with open_archive(path) as ar:
        for name in names:
            levels += check_program(ar.program(name), eps[name])
            programs += 1
    print(f"{programs} programs, {levels} levels")
    assert programs >= 45 and levels >= 200


def test_levels_have_torchs_edges_on_the_release_fixtures() -> None:
    import torch

    checked = 0
    for path in sorted(DATA.glob("*/*.pt2")):
        try:
            ep = torch.export.load(str(path))
        except Exception:  # noqa: BLE001 - a release this torch cannot load
            continue
        with open_archive(path) as ar:
            checked += check_program(ar.program(ar.program_names[0]), ep)
    assert checked >= 10


# --- the overlay: which box carries each node's annotations ---------------------------

def _expected_overlay(fx: FxSide, opened: frozenset[str],
                      heat: dict[str, float], severity: dict[str, str]) -> tuple[dict, dict]:
    """Torch's side: each file node boxed by torch's nn_module_stack with `opened` open
    (the outermost closed module holding it, else its own box); per box the sum of its
    nodes' heat and the worst of their severities."""
    from inspector.core.annotations import SEVERITIES

    box_heat: dict[str, float] = {}
    box_sev: dict[str, str] = {}
    seen: set[str] = set()
    for n, node in fx.owner.items():
        if node.name in seen:
            continue  # the getitem elements of a multi-output node are that node
        seen.add(node.name)
        chain = fx.chain[n]
        closed = next((p for p in chain if p not in opened), None)
        box = f"m:{closed}" if closed is not None else f"n:{node.name}"
        box_heat[box] = box_heat.get(box, 0.0) + heat[node.name]
        s = severity[node.name]
        if box not in box_sev or SEVERITIES.index(s) < SEVERITIES.index(box_sev[box]):
            box_sev[box] = s
    return box_heat, box_sev


def check_overlay(program: Any, ep: Any) -> int:
    """The root picture of every graph, all closed and with the first level open: each
    box's overlay is what torch's module tree gives. The number of pictures checked."""
    from inspector.core.annotations import SEVERITIES, AnnotationLayer, Heat, Mark
    from inspector.core.graph_overlay import overlay
    from inspector.core.graph_picture import GraphPicture

    checked = 0
    for path, graph in graph_paths(program).items():
        model = GraphModel(program, path)
        names = [node.name for node in graph.nodes]
        if len(set(names)) != len(names):
            continue  # nameless or repeated names: annotations are keyed by name
        fx = FxSide(_fx_graph_of(ep.graph_module, path).graph, graph, path)
        heat = {name: float(k + 1) for k, name in enumerate(names)}
        severity = {name: SEVERITIES[(7 * k) % 3] for k, name in enumerate(names)}
        layers = [AnnotationLayer("check", marks={n: Mark(s, f"why {n}") for n, s in severity.items()}),
                  AnnotationLayer("profile", heat={n: Heat(v, f"{v:g} ms") for n, v in heat.items()},
                                  title="time")]
        painter = GraphPicture(model)
        first = frozenset(p for p, info in model.modules.items() if info.depth == 1)
        for opened in (frozenset(), first):
            pic = painter.picture("", opened)
            got = overlay(pic, model, layers)
            want_heat, want_sev = _expected_overlay(fx, opened, heat, severity)
            assert {b: o.severity for b, o in got.boxes.items()} == want_sev, (program.name, path)
            top = max(want_heat.values(), default=1.0)
            assert {b: round(o.level, 9) for b, o in got.boxes.items()} == {
                b: round(v / top, 9) for b, v in want_heat.items()}, (program.name, path)
            if names:  # a graph with no node has no heat to show
                assert got.heat_source == "profile" and got.heat_title == "time"
            checked += 1
    return checked


def test_overlays_put_each_nodes_annotations_on_torchs_box_on_the_corpus(corpus) -> None:
    import transformers.modeling_outputs  # noqa: F401
    from torch.export.pt2_archive._package import load_pt2

    path, names = corpus
    eps = load_pt2(str(path)).exported_programs
    pictures = 0
    with open_archive(path) as ar:
        for name in names:
            pictures += check_overlay(ar.program(name), eps[name])
    print(f"{pictures} pictures")
    assert pictures >= 80
