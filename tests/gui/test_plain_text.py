"""Text from a file is plain text in every widget of the window (issue 18).

An archive carries HTML in every field the window shows: program name (the file
names under models/ and data/), torch_version, node names, stack-trace files,
functions and code lines, module paths and classes, metadata. The test opens it,
shows every dock and panel, walks every node of the listing (the details pane,
the source pane and the module tree follow), audits it (the findings tree), then
walks EVERY widget of the application: a QLabel or tooltip that Qt would render
as rich text (its textFormat, or Qt.mightBeRichText for AutoText and tooltips)
must show the payload's tags literally — escaped HTML is fine, live HTML is not.

Each payload is live: the same strings in a QLabel left on AutoText render as
HTML (`test_payloads_are_live`), so the walk can fail.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import orjson
import pytest
from PySide6.QtCore import QCoreApplication, Qt, QTimer
from PySide6.QtGui import Qt as GuiQt, QTextDocument
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QApplication,
    QDockWidget,
    QLabel,
    QMenu,
    QMessageBox,
    QTabBar,
    QTextEdit,
    QWidget,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "security"))

from archive_factory import ArchiveFactory  # noqa: E402
from hostile_corpus import CONSTANTS_CONFIG, PROGRAM, SAMPLE_INPUTS, WEIGHTS_CONFIG, Base, export_base_archive  # noqa: E402

# Every payload shows "PWN" right after a tag; rendered as HTML, the tag is gone.
# Zip names cannot hold "/": the program-name payload has no closing tag.
PROGRAM_NAME = "<h1>PWN-prog<img src=x.png width=900 height=900>"
IMG = "<img src='/tmp/pwn.png' width=900 height=900><a href='file:///etc/passwd'>click</a>"


def pay(field: str) -> str:
    return f"<b>PWN-{field}</b>{IMG}"


def _nodes(obj):
    """Every node of the program, those of subgraphs (torch.cond branches) included."""
    if isinstance(obj, dict):
        if "target" in obj and "metadata" in obj:
            yield obj
        for v in obj.values():
            yield from _nodes(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _nodes(v)


def _hostile_program(doc: dict) -> dict:
    doc["torch_version"] = "2.13" + pay("torch_version")
    for i, node in enumerate(list(_nodes(doc))):
        meta = node.get("metadata") or {}
        meta["stack_trace"] = (
            f'File "/tmp/<i>PWN-dir/<i>PWN-file{i}<img src=x>.py", line 3, in <b>PWN-fn</b>{IMG}\n'
            f"    y = '<b>PWN-code</b>{IMG}'\u202e gnp.exe\n")
        meta["nn_module_stack"] = "L__self__,,<b>PWN-cls</b>;L__m,<b>PWN-mod</b>,<i>PWN-modcls</i>"
        meta["torch_fn"] = pay("meta")
        node["metadata"] = meta
    return doc


def build_hostile(base: Base, out: Path) -> Path:
    """The base archive with HTML in every field, and its program renamed."""
    doc = _hostile_program(base.json())
    renames = {
        PROGRAM: f"models/{PROGRAM_NAME}.json",
        WEIGHTS_CONFIG: f"data/weights/{PROGRAM_NAME}_weights_config.json",
        CONSTANTS_CONFIG: f"data/constants/{PROGRAM_NAME}_constants_config.json",
        SAMPLE_INPUTS: f"data/sample_inputs/{PROGRAM_NAME}.pt",
    }
    import zipcraft

    entries = []
    for rel, data in base.entries:
        if rel == PROGRAM:
            data = orjson.dumps(doc)
        entries.append((base.top + renames.get(rel, rel), data))
    out.write_bytes(zipcraft.write_zip(entries))
    return out


# ---------------------------------------------------------------- the walk


def rendered(text: str, fmt: Qt.TextFormat = Qt.TextFormat.AutoText) -> str:
    """What a person sees for `text` in a widget of format `fmt`."""
    rich = fmt == Qt.TextFormat.RichText or (
        fmt == Qt.TextFormat.AutoText and GuiQt.mightBeRichText(text))
    if not rich:
        return text
    doc = QTextDocument()
    doc.setHtml(text)
    return doc.toPlainText()


_LIVE = re.compile(r"(?<![>])PWN")  # "PWN" not right after a literal tag: HTML ran


def live_html(shown: str) -> bool:
    return bool(_LIVE.search(shown))


def _item_tips(view: QAbstractItemView, limit: int = 3000) -> list[str]:
    model = view.model()
    if model is None:
        return []
    tips, stack = [], [model.index(r, 0) for r in range(min(model.rowCount(), limit))]
    seen = 0
    while stack and seen < limit:
        idx = stack.pop()
        seen += 1
        for c in range(model.columnCount(idx.parent())):
            cell = idx.siblingAtColumn(c)
            tip = model.data(cell, Qt.ItemDataRole.ToolTipRole)
            if tip:
                tips.append(str(tip))
        stack += [model.index(r, 0, idx) for r in range(min(model.rowCount(idx), limit))]
    return tips


def walk(found: list[str]) -> int:
    """Every text any widget of the application would render; live HTML -> `found`.
    Returns how many texts showed a payload (so the walk cannot pass vacuously)."""
    hits = 0

    def check(where: str, shown: str) -> None:
        nonlocal hits
        if "PWN" in shown:
            hits += 1
            if live_html(shown):
                found.append(f"{where}: {shown[:160]!r}")

    widgets: list[QWidget] = []
    for top in QApplication.topLevelWidgets():
        widgets.append(top)
        widgets += top.findChildren(QWidget)
    for w in widgets:
        name = f"{type(w).__name__}#{w.objectName()}"
        if w.toolTip():
            check(name + ".toolTip", rendered(w.toolTip()))
        if isinstance(w, QLabel):
            check(name, rendered(w.text(), w.textFormat()))
        elif isinstance(w, QAbstractButton):
            check(name, w.text())
        elif isinstance(w, QTextEdit):
            check(name, w.toPlainText())  # what it shows, HTML or not
        if isinstance(w, QDockWidget):
            check(name + ".title", w.windowTitle())
        if isinstance(w, QTabBar):
            for i in range(w.count()):
                check(f"{name}.tabToolTip", rendered(w.tabToolTip(i)))
                check(f"{name}.tab", w.tabText(i))
        if isinstance(w, QAbstractItemView):
            for tip in _item_tips(w):
                check(name + ".itemToolTip", rendered(tip))
        if isinstance(w, QMenu):  # menu items are plain text; their tooltips are not
            for action in w.actions():
                check(f"{name}.action", action.text())
                if action.toolTip():
                    check(f"{name}.actionToolTip", rendered(action.toolTip()))
    return hits


# ---------------------------------------------------------------- tests


@pytest.fixture(scope="module")
def base(archive_factory: ArchiveFactory) -> Base:
    return Base.load(export_base_archive(archive_factory))


def test_payloads_are_live(qtbot) -> None:
    """The same strings in widgets left on Qt's default would render as HTML: a
    walk over them reports every one (the check below can fail)."""
    holder = QWidget()
    qtbot.addWidget(holder)
    labels = [QLabel(t, holder) for t in (pay("x"), PROGRAM_NAME, "2.13" + pay("torch_version"))]
    labels[0].setToolTip(pay("tip"))
    holder.show()
    found: list[str] = []
    hits = walk(found)
    assert hits >= 4 and len(found) >= 4, found
    # and the payload really is HTML: an <img> of 900 px makes the label that wide
    assert labels[1].sizeHint().width() >= 900


@pytest.mark.slow
def test_every_widget_shows_file_text_as_plain_text(qtbot, window, open_wait, base: Base,
                                                    tmp_path: Path) -> None:
    path = build_hostile(base, tmp_path / "hostile.pt2")
    tab = open_wait(path)
    assert tab is not None and tab.view is not None, window.last_error and window.last_error.text()
    assert tab.view.name == PROGRAM_NAME  # the payload reached the window
    for dock in window.findChildren(QDockWidget):
        dock.show()
        dock.raise_()
    audit = window.job_panels.panels["audit"]
    qtbot.waitUntil(lambda: audit.before.topLevelItemCount() > 0, timeout=30000)
    audit.before.expandAll()
    found: list[str] = []
    hits = 0
    width0 = window.width()
    # every node line: the details, source pane and module tree follow the cursor
    for line, node in enumerate(tab.view.listing.line_nodes):
        if node is None:
            continue
        tab.listing.set_current_line(line)
        QCoreApplication.processEvents()
        hits += walk(found)
    # a frame of the trace in the source pane (missing file: the recorded code shows)
    window._show_frame(window.details.frames[-1])
    window.modules.tree.expandAll()
    hits += walk(found)
    assert hits > 20, "the payloads never reached a widget: the walk proves nothing"
    assert not found, "\n".join(found[:20])
    assert window.width() <= max(width0, 1400)  # a crafted name does not grow the window
    # the payload shows literally where it is shown (not rendered, not dropped)
    assert "<b>PWN-code</b>" in window.details.plain_text()
    assert "\\u202e" in window.details.plain_text()  # the bidi control is marked
    assert "PWN-prog" in window.status_label.full_text()


def test_open_error_dialog_is_plain_text(qtbot, window, base: Base, tmp_path: Path) -> None:
    """The "Cannot open archive" dialog quotes archive_format and entry names."""
    bad = tmp_path / "bad.pt2"
    bad.write_bytes(base.zip(replace={"archive_format": pay("format").encode()},
                             add=[(PROGRAM_NAME.replace("<h1>", "<h1>x") + "/extra", b"1")]))
    with qtbot.waitSignal(window.loadsFinished, timeout=30000):
        window.open_archive(bad)
    box = window.last_error
    assert box is not None and "PWN" in box.text() + box.informativeText() + box.detailedText()
    found: list[str] = []
    assert walk(found) > 0
    assert not found, found
    for label in box.findChildren(QLabel):
        if label.text():
            assert label.textFormat() == Qt.TextFormat.PlainText
            assert not label.openExternalLinks()


def test_trust_question_cannot_hide_its_warning(qtbot, base: Base) -> None:
    """The Run panel's question quotes record names: they show as written."""
    from inspector.ui.panels.run import RunPanel

    panel = RunPanel()
    qtbot.addWidget(panel)
    name = "<h1>PWN-rec</h1><p style='font-size:1px'>"
    message = (f"the archive holds a pickle (data/constants/{name}); "
               f"<b>PWN-hide</b><div style='display:none'>")
    seen: dict[str, object] = {}

    def answer() -> None:
        box = QApplication.activeModalWidget()
        if not isinstance(box, QMessageBox):
            QTimer.singleShot(100, answer)
            return
        found: list[str] = []
        seen["hits"] = walk(found)
        seen["found"] = found
        seen["text"] = box.text()
        box.button(QMessageBox.StandardButton.No).click()

    QTimer.singleShot(200, answer)
    assert panel.confirm_trust(message) is False
    assert seen["hits"] and not seen["found"], seen
    assert "Load it anyway" in str(seen["text"]) and "<h1>PWN-rec</h1>" in str(seen["text"])


# A file name may hold markup (no "/"): the Welcome page's Recent list, the tab
# tooltip and the Open Recent menu show it as written.
RECENT_NAME = "<img src=pwn.png width=700 height=400><a href=x.pt2>PWN Verified safe.pt2"


def test_recent_files_and_tab_tooltips_are_plain_text(qtbot, window, open_wait, base: Base,
                                                     tmp_path: Path) -> None:
    folder = tmp_path / "<b>PWN-dir"
    folder.mkdir()
    hostile = folder / RECENT_NAME
    hostile.write_bytes(base.path.read_bytes())
    width0 = window.width()
    tab = open_wait(hostile)
    assert tab is not None and tab.view is not None, window.last_error and window.last_error.text()
    found: list[str] = []
    hits = walk(found)  # the tab's tooltip, the Open Recent menu
    window.close_tab(window.tabs.indexOf(tab))
    QCoreApplication.processEvents()
    assert window.stack.currentWidget() is window.welcome
    hits += walk(found)  # the Welcome page's Recent list
    assert hits >= 4, "the name never reached a widget: the walk proves nothing"
    assert not found, "\n".join(found)
    first = window.welcome.recent_buttons[0]
    assert first.full_text == RECENT_NAME  # as written (elided in the middle when long)
    assert first.text().startswith("<img src=") and first.text().endswith("Verified safe.pt2")
    assert window.width() <= max(width0, 1400)
    assert window.welcome.sizeHint().width() < 1400  # a 700-px <img> would widen it
    with qtbot.waitSignal(window.loadsFinished, timeout=60000):  # the entry opens the file
        window.welcome.recent_buttons[0].click()
    assert window.current_tab() is not None and window.current_tab().doc.path.resolve() == hostile.resolve()


def test_a_long_text_is_cut_then_marked() -> None:
    """`shown` marks the invisible characters of what it shows and counts what it cut,
    whatever the length (it marks only the head: a megabyte tooltip costs 2,000 chars)."""
    from inspector.core.text import mark_invisible
    from inspector.ui.plain import shown

    head = "a\u202eb\u200bc"  # a bidi override and a zero-width space, marked
    text = head + "x" * 1_000_000
    out = shown(text, 50)
    full = mark_invisible(text)
    assert out == full[:50] + f"… ({len(full) - 50:,} more characters)"
    assert shown(head, 50) == mark_invisible(head)
    assert shown("x" * 50, 50) == "x" * 50
