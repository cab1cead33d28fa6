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

Its stack traces name files as paths relative to where they were installed
(`transformers/models/gpt2/modeling_gpt2.py`, `inspector/jobs/toy.py`), not this
machine's absolute paths: the Source pane finds them on any machine as the package
installed there (core/sources.py). tests/unit/test_demo_frames.py fails when a
frame's line no longer holds the code it names (toy.py edited): run this again.
"""

from __future__ import annotations

import argparse
import shutil
import site
import sys
import sysconfig
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from inspector.jobs.export import export_archive  # noqa: E402
from inspector.jobs.protocol import Emitter  # noqa: E402
from inspector.jobs.spec import ExportSpec  # noqa: E402

DEMO_SPEC = ExportSpec(preset="tiny", seed=0, batch_min=1, batch_max=64, seq_min=2,
                       seq_max=256, example_batch=2, example_seq=8, device="cpu")
MAX_BYTES = 5 * 1024 * 1024  # "a few MB": the wheel ships it


def machine_prefixes() -> list[str]:
    """This machine's folders that stack traces start with, longest first: the
    checkout (our own files) and the site-packages folders (the libraries)."""
    found = {str(ROOT) + "/"}
    for key in ("purelib", "platlib"):
        found.add(sysconfig.get_paths()[key].rstrip("/") + "/")
    for folder in site.getsitepackages():
        found.add(folder.rstrip("/") + "/")
    return sorted(found, key=len, reverse=True)


def portable_paths(path: Path) -> None:
    """Rewrite the archive's JSON records with `machine_prefixes()` cut from every
    path (the zip is copied record by record; nothing else changes)."""
    prefixes = [p.encode() for p in machine_prefixes()]
    with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".pt2", delete=False) as tmp:
        out = Path(tmp.name)
    try:
        with zipfile.ZipFile(path) as zin, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zout:
            for info in zin.infolist():
                data = zin.read(info)
                if info.filename.endswith(".json"):
                    for prefix in prefixes:
                        data = data.replace(prefix, b"")
                zout.writestr(info, data)
        with zipfile.ZipFile(out) as z:
            for name in z.namelist():
                data = z.read(name)
                left = [p for p in prefixes if p in data]
                assert not left, f"{name} still names {left[0].decode()}"
        shutil.move(out, path)
    finally:
        out.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=ROOT / "resources" / "demo" / "toy-tiny.pt2")
    args = parser.parse_args(argv)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    result = export_archive(DEMO_SPEC, args.output, emit=Emitter(sys.stderr))
    portable_paths(args.output)

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
