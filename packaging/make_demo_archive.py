"""Regenerate resources/demo/toy-tiny.pt2, the archive `pt2-inspector --demo` opens.

    .venv/bin/python packaging/make_demo_archive.py [--output PATH]

The tiny preset (hidden 64, 2 layers, 2 heads; random weights from seed 0) exported on
CPU by the same code as `pt2-inspector export` (inspector/jobs/export.py), with the seed
blog's ranges: batch 1:64, seq_len 2:256. Example inputs are the smallest that keep both
dims dynamic (batch 2, seq_len 8), so the pickled sample inputs stay ~1.2 MB of the
~3.7 MB. Being exported on CPU, its decoder carries the baked `device=cpu` literals the
audit finds: that is part of the demo.

The weights and graph are reproducible (same seed, same torch/transformers); the zip's
bytes differ between runs only by torch's serialization id.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from inspector.jobs.export import export_archive  # noqa: E402
from inspector.jobs.protocol import Emitter  # noqa: E402
from inspector.jobs.spec import ExportSpec  # noqa: E402

DEMO_SPEC = ExportSpec(preset="tiny", seed=0, batch_min=1, batch_max=64, seq_min=2,
                       seq_max=256, example_batch=2, example_seq=8, device="cpu")
MAX_BYTES = 5 * 1024 * 1024  # "a few MB": the wheel ships it


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=ROOT / "resources" / "demo" / "toy-tiny.pt2")
    args = parser.parse_args(argv)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    result = export_archive(DEMO_SPEC, args.output, emit=Emitter(sys.stderr))

    from inspector.core.archive import open_archive

    with open_archive(args.output) as ar:
        assert ar.program_names == ["decoder", "encoder"], ar.program_names
        assert "pt2_inspector.json" in ar.extra_names()
    size = args.output.stat().st_size
    if size > MAX_BYTES:
        print(f"error: {args.output} is {size / 1e6:.1f} MB, over {MAX_BYTES / 1e6:.0f} MB",
              file=sys.stderr)
        return 1
    print(f"wrote {args.output} ({size / 1e6:.2f} MB, programs {result['programs']}, "
          f"{result['seconds']:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
