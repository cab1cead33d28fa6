"""Write small fixture archives with the torch this script runs under.

    /path/to/venv-with-torch-X/bin/python tests/data/make_fixtures.py [OUT_DIR]

writes OUT_DIR/<torch version>/ (default: tests/data/<torch version>/):
  <case>.pt2         torch.export.save of a tiny model (a few KB)
  <case>.txt         what that torch prints after loading the file back:
                     torch.export.load(F).graph_module.print_readable()
  manifest.json      per case, what that torch says about the loaded file:
                     user_inputs, range constraint symbols, schema version

The tests (tests/unit/test_torch_releases.py) compare the inspector's listing,
info and audit with these texts, without that torch. Run it once per release
(each in its own venv: `python3 -m venv V && V/bin/pip install torch==2.6.0`),
then commit the folder. The models use only APIs every release since 2.5
has, and cover what changed between releases: Dims without a max (2.5 writes
`Infinity`), float constants of -inf (2.5/2.6 write `-Infinity`), arguments
with defaults (schemas 7.3 and 8.2 write no `kind`), inputs named after
builtins, constant and string inputs, unbacked sizes, torch.cond.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from torch import nn
from torch.export import Dim, export


class Block(nn.Module):
    """linear(bias=...), slice(start/end), mean(keepdim=True), -inf fill."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.norm = nn.LayerNorm(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.lin(x)
        head = y[:1]
        rms = y.pow(2).mean(-1, keepdim=True)
        masked = y.masked_fill(y > 10, float("-inf"))
        return self.norm(masked * torch.rsqrt(rms + 1e-6)) + head.sum()


class Inputs(nn.Module):
    """Constant inputs of every kind, a string among them."""

    def forward(self, x, n, scale=0.5, flag=True, mode="fast"):  # type: ignore[no-untyped-def]
        y = x * n * scale
        return y.relu() if flag and mode == "fast" else y


class Branch(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        def yes(x: torch.Tensor) -> torch.Tensor:
            return x.cos() + 1

        def no(x: torch.Tensor) -> torch.Tensor:
            return x.sin() - 1

        return torch.cond(x.sum() > 0, yes, no, (x,))


class Unbacked(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        nz = torch.nonzero(x)  # a size known only at run time (u0)
        return nz.float().sum(0) + x[:2].sum()


class MultiOut(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        values, idx = x.max(dim=1)
        a, b = torch.split(x, [2, 2], dim=1)
        return values + idx.float() + (a * b).sum(1)


def cases() -> dict[str, object]:
    torch.manual_seed(0)
    batch = Dim("batch")  # no max: torch 2.5 writes "max_val": Infinity
    seq = nn.Sequential(nn.Linear(4, 4), nn.ReLU())  # its forward's argument is `input`
    return {
        "block": lambda: export(Block(), (torch.randn(3, 4),), dynamic_shapes=({0: batch},)),
        "sequential": lambda: export(seq, (torch.randn(3, 4),), dynamic_shapes=({0: batch},)),
        "inputs": lambda: export(Inputs(), (torch.randn(2), 3),
                                 {"scale": 0.5, "flag": True, "mode": "fast"}),
        "branch": lambda: export(Branch(), (torch.randn(3),)),
        "unbacked": lambda: export(Unbacked(), (torch.tensor([1.0, 0.0, 2.0]),)),
        "multi_out": lambda: export(MultiOut(), (torch.randn(3, 4),),
                                    dynamic_shapes=({0: Dim("rows", min=2, max=64)},)),
    }


def main() -> int:
    version = torch.__version__.split("+")[0]
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent
    out = root / version
    out.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, object] = {"torch": torch.__version__, "cases": {}}
    for name, build in cases().items():
        try:
            ep = build()
        except Exception as exc:  # noqa: BLE001 - a release that cannot export a case skips it
            print(f"skip {name}: {type(exc).__name__}: {str(exc)[:200]}")
            continue
        path = out / f"{name}.pt2"
        torch.export.save(ep, str(path))
        loaded = torch.export.load(str(path))
        (out / f"{name}.txt").write_text(loaded.graph_module.print_readable(print_output=False))
        manifest["cases"][name] = {  # type: ignore[index]
            "user_inputs": list(loaded.graph_signature.user_inputs),
            "range_constraints": sorted(str(k) for k in loaded.range_constraints),
            "bytes": path.stat().st_size,
        }
        print(f"wrote {path} ({path.stat().st_size} bytes)")
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
