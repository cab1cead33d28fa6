"""Two FX interpreters run in lockstep, so no run keeps every intermediate.

`steps` runs a graph module node by node with torch's own `torch.fx.Interpreter`
(its `run_node`, its last-use bookkeeping: a value is freed after its last user ran,
as `Interpreter.run` frees it) and yields each node with its value. `pairs` walks the
reference run and advances the candidate run only as far as the node matched with
the reference's current one; the candidate values it passes on the way that are
matched with a later reference node wait in `pending` (a reordering of the two
graphs; none when both run one graph). So at any moment each run holds its live
values plus the few pending ones: never a whole forward's intermediates.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any


class NodeFailed(Exception):
    """A node of one run raised: which run, which node, torch's exception."""

    def __init__(self, run: str, node: Any, exc: BaseException) -> None:
        super().__init__(str(exc))
        self.run = run
        self.node = node
        self.exc = exc


def steps(torch: Any, gm: Any, args: list[Any], run: str,
          before: Callable[[], None] | None = None) -> Iterator[tuple[Any, Any]]:
    """(node, value) for every node of `gm` in program order (the output node last),
    each value as torch's Interpreter computes it. `before` runs before each node
    (the CPU self-check sets the thread count of its run there)."""
    interp = torch.fx.Interpreter(gm)
    interp.env = {}
    interp.args_iter = iter(args)
    last_uses = interp.user_to_last_uses
    for node in gm.graph.nodes:
        if before is not None:
            before()
        try:
            value = interp.run_node(node)
        except Exception as exc:  # noqa: BLE001 - reported as that run's failing node
            raise NodeFailed(run, node, exc) from exc
        interp.env[node] = value
        yield node, value
        value = None
        for dead in last_uses.get(node, ()):
            del interp.env[dead]
        if node.op == "output":
            return


def pairs(ref: Iterator[tuple[Any, Any]], cand: Iterator[tuple[Any, Any]],
          match: dict[str, str]) -> Iterator[tuple[Any, Any, str | None, Any]]:
    """(ref node, ref value, cand name or None, cand value) in the reference's order.
    A reference node without a partner, or whose partner the candidate never made,
    comes with (None, None)."""
    wanted = set(match.values())
    pending: dict[str, Any] = {}
    done = False
    for rnode, rvalue in ref:
        cname = match.get(rnode.name)
        if cname is None:
            yield rnode, rvalue, None, None
            continue
        while cname not in pending and not done:
            try:
                cnode, cvalue = next(cand)
            except StopIteration:
                done = True
                break
            if cnode.name in wanted:
                pending[cnode.name] = cvalue
            cvalue = None
        if cname in pending:
            yield rnode, rvalue, cname, pending.pop(cname)
        else:
            yield rnode, rvalue, None, None
    for _ in cand:  # run the candidate to its end: a failure there is still reported
        pass
