"""Build a PyInstaller bundle and smoke-test it on the demo archive.

    .venv/bin/pip install -e '.[packaging]'        # PyInstaller
    .venv/bin/python packaging/build_bundle.py viewer   # no torch: small download
    .venv/bin/python packaging/build_bundle.py full     # everything
    .venv/bin/python packaging/build_bundle.py viewer --no-build   # re-run the smoke test

Output: dist/<name>/ (run dist/<name>/<name>), build files in build/pyinstaller/.
The smoke test runs the *bundled* program from outside the source tree: --version,
info/list/audit/retarget on the demo archive the bundle carries, --screenshot of the window
(offscreen), and for the viewer, that torch is really absent and that `export` says
so in one `error:` line. For the full bundle, `devices --json` checks that a job
child (`-m inspector.jobs`, routed by packaging/entry.py) starts from the bundle,
and a real tiny export runs inside it.
Prints build time and bundle size; exits 1 if any check failed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAMES = {"viewer": "pt2-inspector-viewer", "full": "pt2-inspector"}


def build(flavor: str, dist: Path, work: Path) -> float:
    spec = ROOT / "packaging" / f"{NAMES[flavor]}.spec"
    start = time.perf_counter()
    cmd = [sys.executable, "-m", "PyInstaller", "--noconfirm", "--log-level", "WARN",
           "--distpath", str(dist), "--workpath", str(work), str(spec)]
    print("$", " ".join(cmd), flush=True)
    done = subprocess.run(cmd, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"error: PyInstaller failed (exit {done.returncode}); see its output above")
    return time.perf_counter() - start


def folder_size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


class Smoke:
    def __init__(self, exe: Path, scratch: Path) -> None:
        self.exe, self.scratch, self.failed = exe, scratch, 0
        self.env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
        self.env.pop("PYTHONPATH", None)

    def run(self, *args: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.exe), *args], capture_output=True, text=True,
                              timeout=timeout, cwd=self.scratch, env=self.env)

    def check(self, label: str, ok: bool, detail: str = "") -> None:
        print(f"  {'PASS' if ok else 'FAIL'}  {label}")
        if not ok:
            self.failed += 1
            if detail:
                print("        " + detail.strip().replace("\n", "\n        ")[-3000:])


def smoke(flavor: str, bundle: Path) -> int:
    exe = bundle / NAMES[flavor]
    internal = bundle / "_internal"
    demo = internal / "inspector" / "_resources" / "demo" / "toy-tiny.pt2"
    print(f"smoke test of {exe}")
    with tempfile.TemporaryDirectory(prefix="pt2-smoke-") as tmp:
        s = Smoke(exe, Path(tmp))
        r = s.run("--version")
        s.check(f"--version -> {r.stdout.strip()!r}", r.returncode == 0
                and r.stdout.startswith("pt2-inspector "), r.stderr)
        s.check("bundle carries the demo archive and the desktop files",
                demo.is_file() and any((demo.parent.parent).glob("*.desktop")), str(demo))
        if not demo.is_file():
            return 1
        r = s.run("info", str(demo))
        s.check("info DEMO", r.returncode == 0 and bool(r.stdout.strip()), r.stdout + r.stderr)
        r = s.run("list", str(demo))
        s.check(f"list DEMO ({len(r.stdout.splitlines())} lines)",
                r.returncode == 0 and len(r.stdout.splitlines()) > 10, r.stderr)
        r = s.run("audit", str(demo))
        s.check(f"audit DEMO (exit {r.returncode}: 0 clean, 1 findings)",
                r.returncode in (0, 1) and "Traceback" not in r.stderr, r.stdout + r.stderr)
        moved = Path(tmp) / "retargeted.pt2"
        r = s.run("retarget", str(demo), "--device", "cuda:0", "-o", str(moved))
        s.check("retarget DEMO --device cuda:0 (no torch, no GPU needed)",
                r.returncode == 0 and moved.is_file(), r.stdout + r.stderr)
        png, empty = Path(tmp) / "window.png", Path(tmp) / "empty.png"
        r = s.run("--screenshot", str(png), str(demo))
        shot_ok = r.returncode == 0 and png.is_file() and png.stat().st_size > 10_000
        s.check("--screenshot PNG DEMO (window rendered offscreen)", shot_ok, r.stdout + r.stderr)
        if shot_ok:
            # An archive that failed to open leaves the empty start page: compare.
            r = s.run("--screenshot", str(empty))
            s.check("the screenshot shows the archive, not the empty window",
                    r.returncode == 0 and empty.is_file()
                    and empty.read_bytes() != png.read_bytes(), r.stdout + r.stderr)
        if shot_ok:
            keep = bundle.parent / f"{NAMES[flavor]}-smoke.png"
            shutil.copy(png, keep)
            print(f"        screenshot kept at {keep}")
        if flavor == "viewer":
            s.check("no torch/transformers inside the bundle",
                    not (internal / "torch").exists() and not (internal / "transformers").exists())
            out = Path(tmp) / "out.pt2"
            r = s.run("export", "-o", str(out))
            lines = r.stderr.strip().splitlines()
            s.check("export without torch: exit 2, one `error:` line saying so, nothing written",
                    r.returncode == 2 and len(lines) == 1 and lines[0].startswith("error:")
                    and "needs torch" in lines[0] and not out.exists(), r.stdout + r.stderr)
        else:
            r = s.run("devices", "--json", timeout=600)
            s.check("devices --json (a job child started from the bundle)",
                    r.returncode == 0 and '"cpu"' in r.stdout, r.stdout + r.stderr)
            out = Path(tmp) / "exported.pt2"
            r = s.run("export", "--preset", "tiny", "-o", str(out), timeout=900)
            s.check("export --preset tiny (real torch.export inside the bundle)",
                    r.returncode == 0 and out.is_file(), r.stdout + r.stderr)
            if out.is_file():
                r = s.run("info", str(out))
                s.check("info on the archive the bundle exported", r.returncode == 0,
                        r.stdout + r.stderr)
        return 1 if s.failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("flavor", choices=sorted(NAMES))
    parser.add_argument("--no-build", action="store_true", help="smoke-test an existing build")
    parser.add_argument("--no-smoke", action="store_true", help="build only")
    parser.add_argument("--dist", type=Path, default=ROOT / "dist")
    parser.add_argument("--work", type=Path, default=ROOT / "build" / "pyinstaller")
    args = parser.parse_args(argv)
    bundle = args.dist / NAMES[args.flavor]
    if not args.no_build:
        seconds = build(args.flavor, args.dist, args.work)
        print(f"built {bundle} in {seconds:.0f} s")
    if not bundle.is_dir():
        print(f"error: no bundle at {bundle} (build it first)", file=sys.stderr)
        return 2
    print(f"bundle size: {folder_size(bundle) / 2**20:.0f} MiB on disk ({bundle})")
    return 0 if args.no_smoke else smoke(args.flavor, bundle)


if __name__ == "__main__":
    raise SystemExit(main())
