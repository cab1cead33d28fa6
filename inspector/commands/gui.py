"""Default command: open the window (Qt imported only here).

`--screenshot PNG [FILE]` renders the window offscreen once every archive has
been read, writes the PNG and exits 0 (docs, tests, CI); an archive that cannot
be read gives the usual `error: ...` line and exit 2, and no PNG. The picture is
the window as a user meets it (default layout, archive as opened, nothing typed),
and it never reads or writes the user's settings or recent files: the settings
live in a temp folder for the process.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from inspector.core.errors import InspectorError
from inspector.xcb_check import check_xcb


def _demo_path() -> Path:
    from inspector.resources import demo_archive  # finds the checkout's resources/ too

    return demo_archive()


def run(args: argparse.Namespace) -> int:
    files = [Path(f) for f in getattr(args, "files", []) or []]
    if getattr(args, "demo", False):
        files.insert(0, _demo_path())
    screenshot = getattr(args, "screenshot", None)
    if screenshot:
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        out = Path(screenshot)
        if out.suffix.lower() != ".png":
            raise InspectorError(f"--screenshot writes a PNG: {out} does not end in .png")
        if not out.parent.exists():
            raise InspectorError(f"cannot write {out} (folder {out.parent} does not exist)")
    for f in files:
        if not f.exists():
            raise InspectorError(f"cannot open {f} (no such file)")
    # Qt aborts (exit 134) on a missing xcb library, naming only the first one:
    # find them all first and say so in one line.
    check_xcb()

    _import_qt_sparing_the_feature_scan()
    from PySide6.QtWidgets import QApplication

    from inspector.ui import qt_messages
    from inspector.ui import settings as keys
    from inspector.ui.window.main_window import MainWindow

    if screenshot:
        scratch = tempfile.TemporaryDirectory(prefix="pt2i-screenshot-")
        keys.use_location(scratch.name)  # before anything reads a setting

    qt_messages.install()  # drops Qt's "propagateSizeHints()" noise, keeps the rest
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("PT2 Inspector")
    app.setOrganizationName("pt2-inspector")
    try:
        from inspector.ui.app_icon import set_desktop_identity

        set_desktop_identity(app)
    except Exception:  # a missing icon must never stop the window
        pass
    window = MainWindow(remember=not screenshot)  # screenshots: the default layout
    if screenshot:
        with scratch:
            return _screenshot(app, window, files, Path(screenshot))
    window.show()
    for f in files:
        window.open_archive(f)
    _close_on_termination(app, window)
    return app.exec()


# Qt-free modules of the first screen (each pulls in its own imports)
FIRST_SCREEN_CORE = (
    "inspector.core.document",
    "inspector.core.annotations",
    "inspector.core.selection",
    "inspector.core.shapes",
    "inspector.core.heap",
    "inspector.core.line_highlight",
    "inspector.core.text",
    "inspector.core.aoti",
    "inspector.core.device_choices",
    "inspector.core.sources",
    "inspector.core.source_spans",
)


def _import_qt_sparing_the_feature_scan() -> None:
    """Import the first screen's Qt-free modules, then PySide6, and enter every
    module imported so far in PySide6's feature table.

    PySide6 installs an import hook for its `__feature__` switches (snake_case,
    true_property): the first time a module name is imported after PySide6, the hook
    reads that module's whole source (`inspect.getsource`) to see whether it mentions
    PySide6: ~130 modules on the way to the first screen, ~40 ms of the launch. This
    project selects no feature, so the answer changes nothing: the modules already
    imported are entered as the scan enters a module that does not use PySide6 (-1,
    "ignore this module"); the ui package, imported later, is scanned as before. Not
    in inspector.ui: importing that package imports PySide6 (pyside_refcounts.py).
    A PySide6 without that table is left as it is."""
    import importlib

    for name in FIRST_SCREEN_CORE:
        importlib.import_module(name)
    import PySide6.QtWidgets  # noqa: F401  (installs the hook)

    try:
        from PySide6.support import feature
    except ImportError:
        return
    table = getattr(feature, "pyside_feature_dict", None)
    if isinstance(table, dict):
        for name in list(sys.modules):
            table.setdefault(name, -1)


def _close_on_termination(app, window) -> None:
    """SIGTERM or SIGHUP (a logout, `kill`) close the window as its Close button does:
    running jobs are stopped and the layout is saved. The CLI's handler raises
    instead, which Qt's event loop would never let through; and Python runs a signal
    handler only between bytecodes, so a timer wakes the interpreter while Qt waits."""
    import signal

    from PySide6.QtCore import QTimer

    def close(signum: int, frame: object) -> None:
        window.close()
        app.quit()

    for name in ("SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is not None and signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, close)
    wake = QTimer(app)
    wake.timeout.connect(lambda: None)
    wake.start(200)


def _screenshot(app, window, files: list[Path], out: Path) -> int:
    from PySide6.QtCore import QEventLoop, QTimer

    window.resize(1500, 900)
    window.show()
    for f in files:
        window.open_archive(f)
    loop = QEventLoop()
    window.loadsFinished.connect(loop.quit)
    QTimer.singleShot(120_000, loop.quit)  # never hang a CI job
    if window.is_loading():
        loop.exec()
    for _ in range(5):
        app.processEvents()
    if window.last_error is not None:
        # an archive that cannot be read: the CLI contract (one error line,
        # exit 2, nothing written), not a picture of the error dialog
        message = window.last_error.text()
        window.last_error.close()
        window.close()
        raise InspectorError(message.replace("\n", " "))
    app.processEvents()
    pixmap = window.grab()
    if not pixmap.save(str(out), "PNG"):
        raise InspectorError(f"cannot write {out}")
    window.close()
    return 0
