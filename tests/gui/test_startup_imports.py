"""What the window's start imports (issue 33): the first screen needs Qt and our
reader, not numpy (~0.05 s), pyqtgraph (~0.08 s) or torch. Each of those is imported
when the view that needs it is first used; this test fails when a module-level import
brings one back onto the launch path. A fresh interpreter, since this test process
has them all imported already."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "resources" / "demo" / "toy-tiny.pt2"
HEAVY = ("numpy", "pyqtgraph", "torch", "transformers")

SCRIPT = """
import json, sys
from pathlib import Path
from PySide6.QtWidgets import QApplication
app = QApplication([])
from inspector.ui.window.main_window import MainWindow
heavy = %r
w = MainWindow(remember=False)
w.resize(1400, 900)
w.show()
app.processEvents()
shown = [m for m in heavy if m in sys.modules]
from inspector.core.document import open_document
open_document(Path(sys.argv[1]), None, first_screen=lambda name, lines: None)
read = [m for m in heavy if m in sys.modules]
print(json.dumps({"shown": shown, "read": read}))
""" % (HEAVY,)


def test_the_window_and_the_first_listing_import_no_numpy_pyqtgraph_or_torch():
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(DEMO)], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found == {"shown": [], "read": []}
