"""Where each value of a program's top graph is in the listing, and where it came from.

`check` and `profile` run torch's FX graph and speak of its nodes by name; the user
reads our listing. Torch's node names are the names the listing prints on the left
of each statement (the listing reproduces print_readable, names included, also for
the `getitem` nodes the deserializer adds), so a name is the key that joins a run to
the listing line, the module (`nn_module_stack`) and the source frames of a node.

Lines here are 1-based, as `pt2-inspector list --program NAME` numbers them.
"""

from __future__ import annotations

from dataclasses import dataclass

from inspector.core.frames import Frame, ModuleEntry, parse_module_stack, parse_stack_trace
from inspector.core.listing import DEF, Listing, render_listing
from inspector.core.program import Program

GETITEM = "_operator.getitem"
GET_ATTR = "get_attr"


@dataclass(frozen=True, slots=True)
class NodeInfo:
    name: str  # as the listing prints it (and torch names the FX node)
    line: int  # 1-based line in `list --program` output
    target: str  # as the listing prints it: torch.ops.aten.embedding.default
    modules: tuple[ModuleEntry, ...]  # outermost first
    frames: tuple[Frame, ...]  # outermost first

    @property
    def module(self) -> str:
        """The innermost module's path ("" at the root or without a module)."""
        return self.modules[-1].path if self.modules else ""

    def frame_dicts(self) -> list[dict[str, object]]:
        """The `frames` of a check/profile failure record."""
        return [{"file": f.file, "line": f.line, "function": f.function, "code": f.code,
                 "user": f.is_user} for f in self.frames]


def node_index(program: Program, listing: Listing | None = None) -> dict[str, NodeInfo]:
    """Every value the top graph's nodes define -> its NodeInfo (placeholders left out).

    A multi-output node's own statement and each `getitem` line after it are
    separate entries, as they are separate FX nodes; the getitems share the
    producing node's module and frames, as torch's copies of the metadata do."""
    listing = listing if listing is not None else render_listing(program)
    out: dict[str, NodeInfo] = {}
    for (graph_name, name), line in listing.definitions.items():
        if graph_name != "" or listing.kinds[line] == DEF:
            continue
        node = listing.node_at(line)
        if node is None:  # `input_1 = input`: a renamed placeholder
            continue
        if listing.line_of(node) == line:
            target = node.target
        elif listing.lines[line].lstrip().startswith(f"{name} = self."):
            target = GET_ATTR  # a control-flow subgraph fetched for its HOP call
        else:
            target = GETITEM
        out[name] = NodeInfo(name, line + 1, target, parse_module_stack(node.nn_module_stack),
                             parse_stack_trace(node.stack_trace))
    return out
