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


SCAN_SCRIPT = """
import json, sys
spare = sys.argv[1] == "spare"
if spare:
    from inspector.commands import gui
    gui._import_qt_sparing_the_feature_scan()
else:
    import PySide6.QtWidgets
from PySide6.support import feature
scanned = []
scan = feature._mod_uses_pyside
feature._mod_uses_pyside = lambda module: scanned.append(module.__name__) or scan(module)
from PySide6.QtWidgets import QApplication
app = QApplication([])
from inspector.ui.window.main_window import MainWindow
w = MainWindow(remember=False)
print(json.dumps(scanned))
"""


def test_the_launch_spares_the_first_screens_modules_pysides_source_scan():
    """PySide6's feature hook reads each module's source when it is first imported
    after PySide6 (inspector/commands/gui.py says why that is skipped): the modules
    the launch imports first are not read again, the ui package still is."""
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", PYTHONPATH=str(ROOT))

    def scanned(mode: str) -> list[str]:
        out = subprocess.run([sys.executable, "-c", SCAN_SCRIPT, mode], env=env, cwd=ROOT,
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1])

    plain, spared = scanned("plain"), scanned("spare")
    assert "inspector.core.document" in plain and "inspector.core.document" not in spared
    assert not [m for m in spared if m.startswith("inspector.core.")]
    assert "inspector.ui.window.main_window" in spared  # uses PySide6: still scanned
    assert len(spared) < len(plain) / 2
