"""One node, described for a person: its statement, module, users and frames.

What `pt2-inspector node` prints (and what the window's details pane shows):
the listing line of the node, its nn.Module path, the statements that read
its values, and its stack frames, each with the local file that holds that
source here (inspector/core/sources.py), checked against the recorded code.
"""

from __future__ import annotations

from typing import Any

from inspector.core.errors import InspectorError
from inspector.core.frames import module_path, parse_stack_trace
from inspector.core.listing import Listing
from inspector.core.program import Node, Program
from inspector.core.sources import SourceResolver, check_line


class NodeNotFoundError(InspectorError):
    """No node of that name in the program."""


def find_node(program: Program, name: str) -> Node:
    """The node named `name` (or that defines the value `name`); a nested
    graph's node can be named `SUBGRAPH.NAME`. The top graph wins a tie."""
    graph_name, _, short = name.rpartition(".") if "." in name else ("", "", name)
    candidates = []
    for graph in program.graphs():
        if graph_name and graph.name != graph_name:
            continue
        for node in graph.nodes:
            if node.name == short or short in node.output_names():
                candidates.append(node)
    if not candidates:
        raise NodeNotFoundError(
            f"no node {name!r} in program {program.name!r} (names are as `list` shows "
            "them; a nested graph's node is SUBGRAPH.NAME)")
    return candidates[0]


def users_of(program: Program, node: Node) -> list[Node | None]:
    """Nodes of the same graph that read one of its values; None stands for
    the graph's `return` statement."""
    outs = set(node.output_names())
    graph = node.graph
    users: list[Node | None] = [n for n in graph.nodes
                                if n is not node and outs.intersection(n.input_names())]
    if any(outs.intersection(o.tensor_names()) for o in graph.outputs):
        users.append(None)
    return users


def describe_node(program: Program, listing: Listing, node: Node,
                  resolver: SourceResolver) -> dict[str, Any]:
    """A JSON-ready description (the `node --json` contract)."""
    line = listing.line_of(node)
    frames = []
    for frame in parse_stack_trace(node.stack_trace):
        local = resolver.resolve(frame.file)
        entry: dict[str, Any] = {
            "file": frame.file, "line": frame.line, "function": frame.function,
            # `line` is 0 when the recorded number is unreal (2**64); this is the number shown
            "line_text": frame.line_text,
            "code": frame.code, "user": frame.is_user, "local": local,
        }
        if local is not None:
            check = check_line(local, frame.line, frame.code)
            entry["local_check"] = check.status
            entry["local_line"] = check.line
            if check.status in ("moved", "differs"):
                entry["local_code"] = check.local_code
        frames.append(entry)
    users = []
    for user in users_of(program, node):
        if user is None:
            users.append({"name": "output", "line": _return_line(program, listing, node.graph.name)})
        else:
            at = listing.line_of(user)
            users.append({"name": user.name, "line": None if at is None else at + 1})
    return {
        "program": program.name,
        "graph": node.graph.name,
        "name": node.name,
        "target": node.target,
        "statement": listing.lines[line].strip() if line is not None else "",
        "listing_line": None if line is None else line + 1,
        "module": module_path(node.nn_module_stack),
        "users": users,
        "frames": frames,
    }


def _return_line(program: Program, listing: Listing, graph_name: str) -> int | None:
    """1-based line of a graph's `return` (the listing renders one per graph, in
    program.graphs() order, as the window's users map assumes too)."""
    from inspector.core.listing import RETURN

    returns = [i for i, k in enumerate(listing.kinds) if k == RETURN]
    for graph, line in zip(program.graphs(), returns):
        if graph.name == graph_name:
            return line + 1
    return None
