"""Help > About, the app icon, and the .pt2 MIME type as a real desktop reads it."""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QSize, Qt  # noqa: E402
from PySide6.QtGui import QImage  # noqa: E402
from PySide6.QtWidgets import QApplication, QLabel  # noqa: E402

import inspector  # noqa: E402
from inspector import resources  # noqa: E402
from inspector.ui.window.about import AboutDialog, show_about, version_rows  # noqa: E402
from inspector.ui.app_icon import app_icon  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _installed(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def test_about_lists_versions_and_copies_them(qtbot):
    dialog = show_about(None)
    qtbot.addWidget(dialog)
    qtbot.waitExposed(dialog)
    text = dialog.versions.toPlainText()
    assert f"pt2-inspector: {inspector.__version__}" in text
    assert f"torch: {_installed('torch')}" in text
    assert f"transformers: {_installed('transformers')}" in text
    assert "Qt: 6." in text and "Python: 3." in text

    QApplication.clipboard().clear()
    qtbot.mouseClick(dialog.copy_button, Qt.MouseButton.LeftButton)
    assert QApplication.clipboard().text() == text
    assert dialog.copy_button.text() == "Copied"


def test_about_reads_versions_without_importing_torch():
    # Importing torch costs seconds; About must not do it behind the user's back.
    code = (
        "import os, sys; os.environ['QT_QPA_PLATFORM'] = 'offscreen'\n"
        "from PySide6.QtWidgets import QApplication; app = QApplication([])\n"
        "from inspector.ui.window.about import AboutDialog; d = AboutDialog(); d.show(); app.processEvents()\n"
        "print('torch' in sys.modules, 'transformers' in sys.modules)\n"
        "print(d.versions.toPlainText())\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    first, *rest = result.stdout.splitlines()
    assert first == "False False"
    assert any(line.startswith("torch: ") for line in rest)


def test_missing_optional_package_reads_not_installed(monkeypatch):
    monkeypatch.setattr("inspector.ui.window.about._OPTIONAL", ("no-such-dist-pt2",))
    assert ("no-such-dist-pt2", "not installed") in version_rows()


def test_app_icon_has_every_rendered_size(qapp):
    icon = app_icon()
    sizes = {s.width() for s in icon.availableSizes()}
    assert set(resources.ICON_SIZES) <= sizes
    assert not icon.pixmap(QSize(16, 16)).isNull()


def test_about_dialog_shows_the_icon(qtbot):
    dialog = AboutDialog()
    qtbot.addWidget(dialog)
    assert dialog.windowTitle() == f"About {resources.APP_NAME}"
    # The picture it shows is the shipped 64 px icon, pixel for pixel (not any pixmap).
    shown = [label.pixmap() for label in dialog.findChildren(QLabel)
             if not label.pixmap().isNull()]
    assert len(shown) == 1
    shipped = QImage(str(resources.icon_png(64)))
    assert not shipped.isNull()
    argb = QImage.Format.Format_ARGB32_Premultiplied  # how a pixmap holds it
    assert shown[0].toImage().convertToFormat(argb) == shipped.convertToFormat(argb)


# --- the MIME package, read by Qt's own freedesktop MIME database -------------------

_MIME_PROBE = """
import sys
from PySide6.QtCore import QMimeDatabase
db = QMimeDatabase()
for path in sys.argv[1:]:
    print(db.mimeTypeForFile(path, QMimeDatabase.MatchMode.MatchContent).name())
print(db.mimeTypeForFile("any-name.pt2", QMimeDatabase.MatchMode.MatchExtension).name())
"""


def test_desktop_recognises_pt2_by_glob_and_by_content(tmp_path):
    data = tmp_path / "data"
    (data / "mime" / "packages").mkdir(parents=True)
    shutil.copy(resources.mime_file(), data / "mime" / "packages")
    if shutil.which("update-mime-database"):  # the compiled cache, as desktops use it
        subprocess.run(["update-mime-database", str(data / "mime")], check=True,
                       capture_output=True, timeout=60)
    # A real archive under a name that hides it: only the magic can tell.
    renamed = tmp_path / "archive.bin"
    shutil.copy(resources.demo_archive(), renamed)
    plain_zip = tmp_path / "plain.bin"
    with zipfile.ZipFile(plain_zip, "w") as z:
        z.writestr("notes/readme.txt", "a zip that is not a .pt2")
    env = {**os.environ, "XDG_DATA_DIRS": str(data), "XDG_DATA_HOME": str(tmp_path / "home")}
    result = subprocess.run([sys.executable, "-c", _MIME_PROBE, str(renamed), str(plain_zip)],
                            capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    by_content, plain, by_glob = result.stdout.split()
    assert by_content == resources.MIME_TYPE
    assert plain == "application/zip"
    assert by_glob == resources.MIME_TYPE
