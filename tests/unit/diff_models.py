"""Real archive pairs for the diff tests (torch runs here, in tests only).

Each builder exports once per session and caches the file (audit_models._cached).
The variants of one module live in this file on purpose: their stack traces
point at the same source lines, as a user's re-export of edited code would.
"""

from __future__ import annotations

import operator
from pathlib import Path
from typing import Any

from audit_models import _cached

# The source text of the statement that only the `extra` variant runs.
INSERTED_LINE = "h = h + 0.5  # the inserted node"


def chain_archive(root: Path, *, extra: bool, seed: int = 0) -> Path:
    """A block of adds around a Linear; `extra` inserts one add in the middle,
    which renames every later add of the program (add_3 -> add_4)."""

    def build(path: Path) -> None:
        import torch

        class Block(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.lin = torch.nn.Linear(4, 4)

            def forward(self, h: torch.Tensor) -> torch.Tensor:
                h = h + 1.0
                h = h + 2.0
                if extra:
                    h = h + 0.5  # the inserted node
                h = h + 3.0
                h = self.lin(h) + 4.0
                return h + 5.0

        class Chain(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.block = Block()

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return self.block(x.relu() + 0.25).sum(dim=1)

        torch.manual_seed(seed)
        model = Chain()
        batch = torch.export.Dim("batch", min=2, max=16)
        ep = torch.export.export(model, (torch.randn(3, 4),), dynamic_shapes=({0: batch},))
        torch.export.save(ep, str(path))

    return _cached(root, f"chain-{'extra' if extra else 'plain'}-{seed}", build)


def moved_source_archive(root: Path, which: int) -> Path:
    """The same computation written twice, at other source lines and under
    other class names: only stack traces and module stacks differ."""

    def build(path: Path) -> None:
        import torch

        class First(torch.nn.Module):
            def forward(self, x: torch.Tensor) -> torch.Tensor:
                y = x.sin() * 2.0
                return (y + x).cumsum(0)

        # (a few lines apart, so the line numbers differ too)

        class Second(torch.nn.Module):
            def forward(self, x: torch.Tensor) -> torch.Tensor:
                y = x.sin() * 2.0
                return (y + x).cumsum(0)

        model = (First, Second)[which]()
        ep = torch.export.export(model, (torch.randn(3, 4),))
        torch.export.save(ep, str(path))

    return _cached(root, f"moved-{which}", build)


def toy_ranges_archive(root: Path) -> Path:
    """The toy (tiny preset, seed 0, like audit_models.toy_archive) exported
    again with other Dim ranges."""

    from export_cache import toy_export

    # the real export child, as toy_archive (made once per source version; `root` unused)
    return toy_export(["--batch", "1:32", "--seq-len", "4:128"], file="toy-ranges.pt2")[0]


# --- what torch says about an archive -----------------------------------------------

def torch_node_count(ep: Any) -> int:
    """Nodes of the program as the archive stores them: torch's call_function
    nodes in every graph module, without the getitem nodes the deserializer
    adds for multi-output calls (the archive keeps those as the call's outputs)."""
    count = 0
    for module in ep.graph_module.modules():
        graph = getattr(module, "graph", None)
        if graph is not None:
            count += sum(1 for n in graph.nodes
                         if n.op == "call_function" and n.target is not operator.getitem)
    return count


def torch_device_literal_nodes(ep: Any, device_type: str) -> set[str]:
    """Names of the top graph's nodes with a torch.device argument of that type."""
    import torch
    from torch.utils import _pytree as pytree

    return {n.name for n in ep.graph.nodes if n.op == "call_function" and any(
        isinstance(v, torch.device) and v.type == device_type
        for v in pytree.tree_leaves((n.args, n.kwargs)))}


def torch_ranges(ep: Any) -> dict[str, tuple[int, int | None]]:
    """{symbol: (min, max)} from the loaded program; max None when unbounded."""
    out = {}
    for sym, vr in ep.range_constraints.items():
        upper = vr.upper
        out[str(sym)] = (int(vr.lower), int(upper) if upper.is_finite else None)
    return out
