"""The window on a real tiny GPT-2 decoder exported on CPU: opening, search,
source links, module tree, dataflow navigation, drag-and-drop, bad files."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent
from PySide6.QtWidgets import QMessageBox

from inspector.core.archive import open_archive
from inspector.core.errors import ArchiveError
from inspector.core.frames import module_path, parse_stack_trace
from inspector.core.listing import render_listing
from inspector.ui import settings as keys
from inspector.ui.widgets.weights_view import COLUMNS

ROOT = Path(__file__).resolve().parents[2]
CPU_LITERAL = "device(type='cpu')"


def _line_of_op(tab, op: str) -> int:
    for line, node in enumerate(tab.view.listing.line_nodes):
        if node is not None and node.op_name == op and tab.view.listing.line_of(node) == line:
            return line
    raise AssertionError(f"no {op} node")


def _click_line(qtbot, tab, line: int, column: int = 0, modifier=Qt.KeyboardModifier.NoModifier):
    view = tab.listing
    view.ensure_visible(line)
    view.horizontalScrollBar().setValue(0)
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, modifier,
                     view.point_at(line, column))


def test_open_shows_the_listing_and_counts(window, toy_tab, toy_archive):
    with open_archive(toy_archive) as archive:
        expected = render_listing(archive.program("decoder")).lines
        nodes = archive.program("decoder").node_count
    assert window.tabs.count() == 1
    assert toy_tab.view.name == "decoder"
    assert toy_tab.listing.line_count() == len(expected)
    assert toy_tab.listing.line_text(5) == expected[5]
    assert f"{nodes:,} nodes" in window.status_label.text()
    assert "2 programs" in window.status_label.text()
    assert toy_tab.programs.count() == 2
    assert window.windowTitle().startswith(toy_archive.name)
    assert keys.recent_files()[0] == str(toy_archive.resolve())


def test_typing_cpu_finds_every_baked_device(qtbot, window, toy_tab):
    lines = toy_tab.view.listing.lines
    baked = [i for i, text in enumerate(lines) if CPU_LITERAL in text]
    assert len(baked) >= 10  # the toy decoder bakes arange/to/_assert_tensor_metadata
    qtbot.keyClick(window, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert toy_tab.search.edit.hasFocus()
    qtbot.keyClicks(toy_tab.search.edit, "cpu")
    qtbot.waitUntil(lambda: toy_tab.result is not None and toy_tab.search.count.text() != "")
    cpu_lines = [i for i, text in enumerate(lines) if "cpu" in text.lower()]
    assert toy_tab.result.lines == cpu_lines
    assert set(baked) <= set(toy_tab.result.lines)
    assert toy_tab.search.count.text() == f"{len(cpu_lines)} matches"
    # Enter / F3 walk the matches; Shift+F3 goes back
    qtbot.keyClick(toy_tab.search.edit, Qt.Key.Key_Return)
    first = toy_tab.listing.current_line()
    assert first in cpu_lines
    assert toy_tab.search.count.text().endswith(f"of {len(cpu_lines)}")
    qtbot.keyClick(window, Qt.Key.Key_F3)
    second = toy_tab.listing.current_line()
    assert second in cpu_lines and second > first
    qtbot.keyClick(window, Qt.Key.Key_F3, Qt.KeyboardModifier.ShiftModifier)
    assert toy_tab.listing.current_line() == first


def test_field_queries_case_and_regex(qtbot, toy_tab):
    toy_tab.search.set_text("op:arange")
    aranges = [i for i, n in enumerate(toy_tab.view.listing.line_nodes)
               if n is not None and n.op_name == "arange" and toy_tab.view.listing.line_of(n) == i]
    assert toy_tab.result.lines == aranges
    toy_tab.search.set_text("device:cpu")
    assert toy_tab.match_count() == sum(CPU_LITERAL in t for t in toy_tab.view.listing.lines)
    toy_tab.search.case.setChecked(True)
    toy_tab.search.set_text("CPU")
    assert toy_tab.match_count() == 0
    toy_tab.search.case.setChecked(False)
    toy_tab.search.regex.setChecked(True)
    toy_tab.search.set_text(r"arange_\d+:")
    assert toy_tab.match_count() >= 1
    toy_tab.search.set_text("([")
    assert toy_tab.search.count.text() == "invalid"
    toy_tab.search.regex.setChecked(False)


def test_click_a_node_shows_details_and_its_source(qtbot, window, toy_tab):
    line = _line_of_op(toy_tab, "arange")
    _click_line(qtbot, toy_tab, line)
    assert toy_tab.listing.current_line() == line
    node = toy_tab.view.node_at(line)
    text = window.details.plain_text()
    assert node.target in text and "int64" in text and "Stack trace" in text
    frames = parse_stack_trace(node.stack_trace)
    inner = frames[-1]
    assert window.source.frame == inner
    assert not window.source.missing
    assert window.source.marked_line() == inner.line
    marked = window.source.editor.document().findBlockByNumber(inner.line - 1).text().strip()
    assert marked == inner.code.strip()
    # this source line produced this node (and maybe others): count + next/prev
    expected = toy_tab.view.index.source_lines(inner.file, inner.line)
    assert line in expected
    assert window.source_nodes() == expected
    assert f"{len(expected)} node" in window.source.nodes_label.text()


def test_library_frames_fold_and_unfold(qtbot, window, toy_tab):
    line = _line_of_op(toy_tab, "arange")
    _click_line(qtbot, toy_tab, line)
    window.details.set_fold(True)
    folded = window.details.plain_text()
    window.details.set_fold(False)
    full = window.details.plain_text()
    node = toy_tab.view.node_at(line)
    for frame in parse_stack_trace(node.stack_trace):
        assert f":{frame.line}" in full
    assert len(full) > len(folded)


def test_missing_source_file_says_so(window):
    from inspector.core.frames import Frame

    frame = Frame("/nowhere/model_code.py", 42, "forward", "x = torch.arange(n, device='cpu')", True)
    window.source.show_frame(frame)
    assert window.source.missing
    assert "not found" in window.source.header.text()
    assert "x = torch.arange(n, device='cpu')" in window.source.editor.toPlainText()


def _spread(tab, line: int) -> int:
    """How many nodes the innermost source line of the node on `line` made."""
    node = tab.view.node_at(line)
    if node is None or tab.view.listing.line_of(node) != line:
        return 0
    frames = parse_stack_trace(node.stack_trace)
    return len(tab.view.index.source_lines(frames[-1].file, frames[-1].line)) if frames else 0


def test_source_line_selects_its_nodes_with_next_previous(qtbot, window, toy_tab):
    # A node whose source line (one the pane can show) made several: next/previous have
    # somewhere to go.
    for line in (ln for ln in range(toy_tab.listing.line_count()) if _spread(toy_tab, ln) > 1):
        _click_line(qtbot, toy_tab, line)
        if not window.source.missing:
            break
    else:
        raise AssertionError("no shown source line made more than one node")
    inner = window.source.frame
    # the user clicks a source line: the nodes it produced light up in the listing
    editor = window.source.editor
    rect = editor.cursorRect()
    qtbot.mouseClick(editor.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert editor.textCursor().blockNumber() == inner.line - 1
    expected = toy_tab.view.index.source_lines(inner.file, inner.line)
    assert toy_tab.listing.related_lines() == set(expected) and len(expected) > 1
    start = toy_tab.listing.current_line()
    window.source.next_btn.click()
    assert toy_tab.listing.current_line() in expected
    assert toy_tab.listing.current_line() != start
    window.source.prev_btn.click()
    assert toy_tab.listing.current_line() == start


def test_module_tree_selects_the_modules_nodes(qtbot, window, toy_tab):
    path = "decoder.transformer.h.0"
    assert path in window.modules.paths()
    assert window.modules.select_path(path)
    related = toy_tab.listing.related_lines()
    assert related
    for line in related:
        mp = module_path(toy_tab.view.node_at(line).nn_module_stack)
        assert mp == path or mp.startswith(path + ".")
    inside = {i for i, n in enumerate(toy_tab.view.listing.line_nodes)
              if n is not None and toy_tab.view.listing.line_of(n) == i
              and (module_path(n.nn_module_stack) + ".").startswith(path + ".")}
    assert related == inside
    assert toy_tab.listing.current_line() == min(related)


def test_ctrl_click_jumps_to_definition_and_back(qtbot, window, toy_tab):
    listing = toy_tab.view.listing
    line = _line_of_op(toy_tab, "add")  # add = aten.add.Tensor(arange, 0)
    text = listing.lines[line]
    arg = toy_tab.view.node_at(line).input_names()[0]
    column = text.index("(" + arg) + 1
    _click_line(qtbot, toy_tab, line, column, Qt.KeyboardModifier.ControlModifier)
    target = toy_tab.listing.current_line()
    assert target == toy_tab.view.definition_line(arg, line)
    assert listing.lines[target].strip().startswith(arg)
    qtbot.keyClick(window, Qt.Key.Key_Left, Qt.KeyboardModifier.AltModifier)
    assert toy_tab.listing.current_line() == line
    qtbot.keyClick(window, Qt.Key.Key_Right, Qt.KeyboardModifier.AltModifier)
    assert toy_tab.listing.current_line() == target
    # F12 on the add line jumps too
    toy_tab.listing.set_current_line(line)
    qtbot.keyClick(window, Qt.Key.Key_F12)
    assert toy_tab.listing.current_line() == target


def test_users_of_a_value_are_highlighted(qtbot, window, toy_tab):
    line = _line_of_op(toy_tab, "arange")
    toy_tab.listing.set_current_line(line)
    name = toy_tab.view.node_at(line).output_names()[0]
    qtbot.keyClick(window, Qt.Key.Key_F12, Qt.KeyboardModifier.ShiftModifier)
    users = toy_tab.listing.related_lines()
    assert users
    for u in users:
        node = toy_tab.view.node_at(u)
        assert node is not None and name in node.input_names()
    assert "user" in window.details.plain_text().lower()


def test_keyboard_navigation(qtbot, window, toy_tab):
    from PySide6.QtGui import QGuiApplication

    view = toy_tab.listing
    view.setFocus()
    view.set_current_line(0)
    qtbot.keyClick(view, Qt.Key.Key_Down)
    assert view.current_line() == 1
    qtbot.keyClick(view, Qt.Key.Key_PageDown)
    assert view.current_line() > 5
    qtbot.keyClick(view, Qt.Key.Key_End, Qt.KeyboardModifier.ControlModifier)
    assert view.current_line() == view.line_count() - 1
    assert view.current_line() in view.visible_range()
    qtbot.keyClick(view, Qt.Key.Key_Home, Qt.KeyboardModifier.ControlModifier)
    assert view.current_line() == 0
    qtbot.keyClick(view, Qt.Key.Key_Down)
    qtbot.keyClick(view, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)
    assert QGuiApplication.clipboard().text() == view.line_text(1).strip()


def test_program_switcher_reads_the_other_program(qtbot, window, toy_tab):
    with qtbot.waitSignal(window.loadsFinished, timeout=60000):
        toy_tab.programs.setCurrentText("encoder")
    assert toy_tab.view.name == "encoder"
    assert "encoder" in window.status_label.text()
    assert window.modules.paths()
    toy_tab.programs.setCurrentText("decoder")  # already read: immediate
    assert toy_tab.view.name == "decoder"


def test_select_node_and_gutter_marks(qtbot, window, toy_tab):
    line = _line_of_op(toy_tab, "arange")
    node = toy_tab.view.node_at(line)
    toy_tab.listing.set_current_line(0)
    assert window.select_node("decoder", node.name)
    assert toy_tab.listing.current_line() == line
    # The audit panel publishes its own layer when the archive opens; layers merge.
    audit = window.job_panels.audit
    qtbot.waitUntil(lambda: audit.report is not None, timeout=60000)
    # a device='cpu' literal: a warning with the default target (none), as in the CLI
    assert toy_tab.listing.line_marks()[line] == "warning"
    window.workspace.clear_annotations(toy_tab.doc, "audit")
    assert toy_tab.listing.line_marks() == {}
    window.set_line_marks({line: "error", line + 1: "warning"})
    assert toy_tab.listing.line_marks() == {line: "error", line + 1: "warning"}
    # Painted: each marked line's gutter holds its severity's colour, an unmarked one none.
    view = toy_tab.listing
    view.ensure_visible(line, center=True)
    image = view.viewport().grab().toImage()

    def gutter_colours(ln: int) -> set[str]:
        y = view.point_at(ln).y()
        return {image.pixelColor(x, y).name() for x in range(view.gutter_width())}

    severity = {s: c.name() for s, c in view.theme.severity.items()}
    assert gutter_colours(line) & set(severity.values()) == {severity["error"]}
    assert gutter_colours(line + 1) & set(severity.values()) == {severity["warning"]}
    assert not gutter_colours(line + 2) & set(severity.values())


def test_side_tables(qtbot, window, toy_tab, toy_archive):
    t = window.tables
    window.dock_tables.raise_()  # filled once on screen (behind Source at launch)
    qtbot.waitUntil(lambda: t.signature.rowCount() > 0, timeout=5000)
    assert t.signature.rowCount() == len(toy_tab.view.program.input_specs) + len(
        toy_tab.view.program.output_specs)
    kinds = {t.signature.item(r, 1).text() for r in range(t.signature.rowCount())}
    assert {"parameter", "user_input", "user_output"} <= kinds
    # the weights are the Weights panel's (the Tables dock's own tab is gone)
    model = window.job_panels["weights"].model
    qtbot.waitUntil(lambda: model.rowCount() > 0, timeout=30000)
    names = {model.data(model.index(r, 0)): r for r in range(model.rowCount())}
    # GPT-2 ties lm_head to wte: one record, two names
    r = names["decoder.lm_head.weight"]
    assert "decoder.transformer.wte.weight" in model.data(model.index(r, COLUMNS.index("Shared with")))
    assert model.data(model.index(r, COLUMNS.index("Shape"))) == "[1024, 64]"
    with open_archive(toy_archive) as archive:
        assert t.records.rowCount() == len(archive.records)
    assert t.ranges.rowCount() == len(toy_tab.view.program.range_constraints)


def test_drop_files_opens_tabs(qtbot, window, toy_archive):
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(toy_archive))])
    event = QDropEvent(QPointF(200, 200), Qt.DropAction.CopyAction, mime,
                       Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    with qtbot.waitSignal(window.archiveOpened, timeout=60000) as blocker:
        window.dropEvent(event)
    assert blocker.args == [str(toy_archive)]
    assert window.tabs.count() == 1
    assert window.current_archive_path() == str(toy_archive)


def test_bad_file_shows_the_archive_error(qtbot, window, tmp_path, toy_archive):
    bad = tmp_path / "broken.pt2"
    bad.write_bytes(b"this is not a zip archive at all")
    try:
        open_archive(bad)
    except ArchiveError as exc:
        expected = str(exc)
    else:
        raise AssertionError("the broken file opened")
    with qtbot.waitSignal(window.loadsFinished, timeout=10000):
        window.open_archive(bad)
    box = window.last_error
    assert isinstance(box, QMessageBox) and box.isVisible()
    assert box.text() == expected
    assert box.detailedText()  # the traceback, one click away
    box.close()
    assert window.tabs.count() == 0
    # the window is still fine: a good file opens after it
    with qtbot.waitSignal(window.loadsFinished, timeout=60000):
        window.open_archive(toy_archive)
    assert window.tabs.count() == 1


def test_add_panel_and_settings_round_trip(qtbot, window, toy_tab, temp_settings):
    from PySide6.QtWidgets import QLabel

    dock = window.add_panel("Extra", QLabel("panel"))
    assert dock.widget().widget().text() == "panel"
    assert dock.toggleViewAction() in window.view_menu.actions()
    window.close()
    s = keys.settings()
    assert s.value(keys.GEOMETRY) is not None
    assert s.value(keys.WINDOW_STATE) is not None
    assert window.recent_menu.actions()[0].text().endswith(str(toy_archive_path(toy_tab)))


def toy_archive_path(tab) -> Path:
    return tab.doc.path.resolve()


def test_no_torch_in_the_window_process(toy_archive, tmp_path):
    """Build the window and open an archive in a fresh interpreter: torch stays out."""
    script = textwrap.dedent(f"""
        import os, sys
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
        from PySide6.QtCore import QEventLoop, QSettings, QTimer
        from PySide6.QtWidgets import QApplication
        QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, {str(tmp_path / "settings-notorch")!r})
        app = QApplication([])
        from inspector.ui.window.main_window import MainWindow
        w = MainWindow(); w.show()
        loop = QEventLoop(); w.loadsFinished.connect(loop.quit)
        QTimer.singleShot(60000, loop.quit)
        w.open_archive({str(toy_archive)!r}); loop.exec()
        assert w.current_tab() is not None and w.current_tab().view is not None
        w.current_tab().search.set_text("cpu")
        print("TORCH" if "torch" in sys.modules else "NO-TORCH", w.current_tab().match_count())
        w.close()
    """)
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    verdict, count = proc.stdout.split()[-2:]
    assert verdict == "NO-TORCH"
    assert int(count) > 0


def test_screenshot_of_the_demo_writes_a_png(tmp_path):
    out = tmp_path / "window.png"
    env = {"QT_QPA_PLATFORM": "offscreen", "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
           "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-m", "inspector.cli", "--demo", "--screenshot", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20000


def test_big_programs_paint_before_their_index(qtbot, window, toy_archive, monkeypatch):
    """Above SPLIT_ABOVE_NODES the listing shows first and search waits for the
    index built in the background (forced here on the toy by a zero threshold)."""
    from inspector.core import document

    monkeypatch.setattr(document, "SPLIT_ABOVE_NODES", 0)
    shown = []
    window.archiveOpened.connect(lambda p: shown.append(window.current_tab().view.complete))
    with qtbot.waitSignal(window.loadsFinished, timeout=60000):
        window.open_archive(toy_archive)
    assert shown == [False]  # painted before the index existed
    tab = window.current_tab()
    assert tab.view.complete
    tab.search.set_text("device:cpu")
    assert tab.match_count() == sum(CPU_LITERAL in t for t in tab.view.listing.lines)
    assert "decoder.transformer.h.0" in window.modules.paths()


def test_dark_palette_switches_the_listing_theme(qtbot, window, toy_tab):
    from PySide6.QtGui import QColor, QPalette
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    old = app.palette()
    try:
        dark = QPalette(old)
        dark.setColor(QPalette.ColorRole.Window, QColor("#202124"))
        app.setPalette(dark)
        window.apply_theme()
        assert toy_tab.listing.theme.dark
        app.setPalette(old)
        window.apply_theme()
        assert not toy_tab.listing.theme.dark
    finally:
        app.setPalette(old)


def test_source_pane_reads_only_python_sources(tmp_path):
    from inspector.ui.widgets.source_pane import read_source

    py = tmp_path / "model.py"
    py.write_text("x = 1\n")
    assert read_source(str(py)) == "x = 1\n"
    secret = tmp_path / "secret.txt"
    secret.write_text("token")
    assert read_source(str(secret)) is None
    assert read_source("/proc/self/environ") is None
    assert read_source(str(tmp_path / "missing.py")) is None
