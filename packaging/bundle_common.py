"""What both PyInstaller specs share (imported by packaging/*.spec).

Two bundles come out of one recipe:
- full:   the whole app, torch and transformers included (export, run, devices work);
- viewer: no torch, no transformers. Opening, listing, searching and auditing read
          the archive's zip and JSON only (inspector/core), so the viewer does all of
          that; the Export/Run panels and commands say they need torch.
"""

from __future__ import annotations

import sys
from pathlib import Path

from PyInstaller.utils.hooks import collect_submodules, copy_metadata

PACKAGING = Path(__file__).resolve().parent
ROOT = PACKAGING.parent
ENTRY = str(PACKAGING / "entry.py")

# resources/ goes where inspector/resources.py looks in an installed copy.
DATAS = [(str(ROOT / "resources"), "inspector/_resources")]

# Never needed by either bundle; some are optional imports of our dependencies
# that PyInstaller would otherwise follow (pyqtgraph -> matplotlib, scipy, ...).
COMMON_EXCLUDES = [
    "tkinter", "_tkinter", "matplotlib", "IPython", "jupyter_client", "notebook",
    "scipy", "pandas", "pytest", "_pytest", "hypothesis", "pytest_timeout", "PyInstaller",
    # Qt modules the app does not use (each drags in large Qt libraries).
    "PySide6.QtQml", "PySide6.QtQuick", "PySide6.QtQuickWidgets", "PySide6.QtQuick3D",
    "PySide6.QtWebEngineCore", "PySide6.QtWebEngineWidgets", "PySide6.QtMultimedia",
    "PySide6.Qt3DCore", "PySide6.QtCharts", "PySide6.QtDataVisualization",
    "PySide6.QtPdf", "PySide6.QtDesigner", "PySide6.QtUiTools", "PySide6.QtSql",
    "PySide6.QtTest", "PySide6.QtHelp", "PySide6.QtBluetooth", "PySide6.QtPositioning",
    "PySide6.QtLocation", "PySide6.QtSerialPort", "PySide6.QtNfc", "PySide6.QtSensors",
    "PySide6.QtRemoteObjects", "PySide6.QtScxml", "PySide6.QtStateMachine",
    "PySide6.QtTextToSpeech", "PySide6.QtSpatialAudio", "PySide6.QtHttpServer",
    "PySide6.QtWebSockets", "PySide6.QtWebChannel", "PySide6.QtGraphs",
    "PySide6.QtLabsStyleKit", "PySide6.QtQmlFeatures", "PySide6.QtQuickTest",
    "PySide6.QtQuickControls2",
    # No network use anywhere: this also drops Qt's TLS plugins and OpenSSL/Kerberos.
    "PySide6.QtNetwork",
]

# Only the full bundle runs torch; the viewer must not drag it in through an
# optional import somewhere (pyqtgraph, superqt and pygments all have a few).
TORCH_STACK = [
    "torch", "torchvision", "torchaudio", "transformers", "tokenizers", "safetensors",
    "huggingface_hub", "accelerate", "sympy", "mpmath", "networkx", "triton",
    "functorch", "onnx", "onnxruntime", "jinja2",
    # Optional import of numpy.__config__ (only for numpy.show_config()).
    "yaml",
]


def hiddenimports(flavor: str) -> list[str]:
    # The window and the commands are imported lazily (cli.py imports Qt only on
    # the GUI path), which PyInstaller's import scan cannot see. The viewer gets the
    # torch jobs' modules too: with torch excluded they fail to import with
    # ModuleNotFoundError('torch'), which is how the app knows to say "needs torch".
    del flavor
    return collect_submodules("inspector")


def datas(flavor: str) -> list[tuple[str, str]]:
    if flavor == "viewer":
        return DATAS
    # Help > About reads torch's and transformers' versions from their metadata
    # (importing torch just to show a version would cost seconds).
    return DATAS + copy_metadata("torch") + copy_metadata("transformers")


def excludes(flavor: str) -> list[str]:
    return COMMON_EXCLUDES + (TORCH_STACK if flavor == "viewer" else [])


# Windows/macOS take the 256 px PNG (PyInstaller converts it when Pillow is
# installed); Linux executables carry no icon: the .desktop file names it.
ICON = (str(ROOT / "resources" / "icons" / "hicolor" / "256x256" / "apps"
            / "io.github.pt2inspector.Pt2Inspector.png")
        if sys.platform in ("win32", "darwin") else None)
