"""Benchmark (issue 33): launch to pixels, on a real X server (Xvfb), judged by the
screen itself, side by side in one run, interleaved:

  bare window   a bare PySide6 window showing 40 lines of text (python -c)
  demo          `pt2-inspector resources/demo/toy-tiny.pt2`: the demo's listing
  big (--big)   `pt2-inspector BIG.pt2`, a 100,000-node program (bench_window.py's
                builder), against a bare `python -c 'orjson.loads(...)'` process
                of its program JSON (wall time to exit: no window at all)

This process grabs the whole screen (Qt on the xcb platform, grabWindow of the root)
every few milliseconds from the moment it starts a child; "on screen" is the first
grab whose dark ("ink") pixels reach 90% of what the settled screen shows (text
drawn; a blinking cursor does not move it). Targets: demo <= 2.5x the bare window;
big's first lines <= 0.5x the bare orjson.loads process. Exit 1 on a miss.

    python tests/benchmarks/bench_startup.py [--rounds 3] [--big] [--toy TOY.pt2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
DISPLAY = ":93"
SIZE = (1400, 900)
BARE_WINDOW = """
import sys
from PySide6.QtWidgets import QApplication, QPlainTextEdit
app = QApplication(sys.argv)
w = QPlainTextEdit()
w.setPlainText("\\n".join(f"line {i}: some text of a listing, drawn in the window" for i in range(40)))
w.resize(1400, 900)
w.show()
app.exec()
"""


def ink(image) -> int:
    """Dark pixels of a grab (a numpy view of its bytes: fast enough for ~10 ms)."""
    import numpy as np

    from PySide6.QtGui import QImage

    img = image.toImage().convertToFormat(QImage.Format.Format_Grayscale8)
    ptr = img.constBits()
    arr = np.frombuffer(ptr, dtype=np.uint8, count=img.sizeInBytes())
    return int((arr < 110).sum())


def to_pixels(screen, argv: list[str], env: dict[str, str], settle_s: float = 2.0,
              limit_s: float = 60.0) -> float:
    """Seconds from starting `argv` to its first grab with 90% of the settled ink."""
    from PySide6.QtWidgets import QApplication

    base = ink(screen.grabWindow(0))
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    frames: list[tuple[float, int]] = []
    last_change = t0
    try:
        while True:
            QApplication.processEvents()
            now = time.perf_counter()
            value = ink(screen.grabWindow(0)) - base
            if frames and abs(value - frames[-1][1]) > 50:
                last_change = now
            frames.append((now - t0, value))
            if value > 500 and now - last_change > settle_s:
                break
            if now - t0 > limit_s:
                raise SystemExit(f"{argv[-1]}: nothing settled on screen after {limit_s:.0f} s")
            time.sleep(0.004)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    final = frames[-1][1]
    return next(t for t, v in frames if v >= 0.9 * final)


def parse_wall(argv: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, check=True, capture_output=True)
    return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--big", action="store_true", help="also the 100,000-node program")
    parser.add_argument("--toy", type=Path, help="a tiny toy archive to build the big one from")
    args = parser.parse_args()
    if shutil.which("Xvfb") is None:
        print("skipped: needs Xvfb (apt-get install xvfb)")
        return 0
    xvfb = subprocess.Popen(["Xvfb", DISPLAY, "-screen", "0", f"{SIZE[0]}x{SIZE[1]}x24", "-wr", "-nolisten",
                             "tcp"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    tmp = tempfile.TemporaryDirectory(prefix="pt2i-startup-")
    try:
        time.sleep(1.0)
        os.environ["DISPLAY"] = DISPLAY
        os.environ["QT_QPA_PLATFORM"] = "xcb"
        from PySide6.QtWidgets import QApplication

        app = QApplication([])
        screen = app.primaryScreen()
        env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM",)}
        env.update(DISPLAY=DISPLAY, QT_QPA_PLATFORM="xcb", PYTHONPATH=str(ROOT),
                   XDG_CONFIG_HOME=tmp.name)  # a fresh settings folder: the default layout
        demo = ROOT / "resources" / "demo" / "toy-tiny.pt2"
        runs: dict[str, list[float]] = {"bare window": [], "demo": []}
        big = big_json = None
        if args.big:
            from bench_window import build_big_archive, export_toy  # type: ignore[import-not-found]

            toy = args.toy or export_toy(Path(tmp.name))
            big, nodes, _ = build_big_archive(toy, Path(tmp.name) / "big.pt2")
            import zipfile

            with zipfile.ZipFile(big) as z:
                name = next(n for n in z.namelist() if n.endswith("models/decoder.json"))
                big_json = Path(tmp.name) / "decoder.json"
                big_json.write_bytes(z.read(name))
            runs.update({"big": [], "orjson.loads": []})
        for _ in range(args.rounds):
            runs["bare window"].append(to_pixels(screen, [sys.executable, "-c", BARE_WINDOW], env))
            runs["demo"].append(to_pixels(screen, [sys.executable, "-m", "inspector", str(demo)], env))
            if big is not None:
                runs["big"].append(to_pixels(screen, [sys.executable, "-m", "inspector", str(big)], env))
                runs["orjson.loads"].append(parse_wall(
                    [sys.executable, "-c", "import sys, orjson; orjson.loads(open(sys.argv[1], 'rb').read())",
                     str(big_json)], env))
        med = {k: statistics.median(v) for k, v in runs.items()}
        print(f"launch to pixels on Xvfb {SIZE[0]}x{SIZE[1]}, {args.rounds} rounds interleaved, "
              f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (medians; all runs)")
        for k, v in runs.items():
            print(f"  {k:<14} {med[k]:6.2f} s   [{', '.join(f'{x:.2f}' for x in v)}]")
        misses = []
        ratio = med["demo"] / med["bare window"]
        print(f"  demo / bare window: {ratio:.2f}x (target <= 2.5x)")
        if ratio > 2.5:
            misses.append("demo")
        if big is not None:
            r = med["big"] / med["orjson.loads"]
            print(f"  big first lines / bare orjson.loads process: {r:.2f}x (target <= 0.5x)")
            if r > 0.5:
                misses.append("big")
        print("MISS: " + ", ".join(misses) if misses else "all targets met")
        return 1 if misses else 0
    finally:
        xvfb.terminate()
        xvfb.wait()
        tmp.cleanup()


if __name__ == "__main__":
    raise SystemExit(main())
