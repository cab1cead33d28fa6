"""What a newcomer saw (issue 29), each in the real window on the bundled demo or a
real toy export: a frame's tint that nothing cleared, the Source pane silent about
another version of a file, a listing cut at the right, a compiled run with no word
that it compiles. (The Audit explanation and the Export ranges table have their
tests beside their panels': test_audit_panel.py, test_export_panel.py.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from _panel_helpers import no_leaks  # noqa: E402,F401
from PySide6.QtCore import QUrl  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from inspector.core.frames import parse_stack_trace  # noqa: E402
from inspector.core.selection import SOURCE_LINE  # noqa: E402
from inspector.core.sources import PathMapping  # noqa: E402
from inspector.resources import demo_archive  # noqa: E402
from inspector.ui.panels.run import RunPanel  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TOY = "inspector/jobs/toy.py"  # as the demo's stack traces record it
COMPILING = "compiling (first call)…"
LISTING_SHARE = 0.6  # of a 1400 px window, at least (the figure)


def _settle(n: int = 8) -> None:
    for _ in range(n):
        QApplication.processEvents()


@pytest.fixture
def demo_tab(open_wait):
    return open_wait(demo_archive())


def _toy_frame(tab):
    """A decoder node whose trace passes through toy.py (the `out = self.decoder(`
    frame, which made every decoder node), and that frame's index in its trace."""
    for line, node in enumerate(tab.view.listing.line_nodes):
        if node is None or tab.view.listing.line_of(node) != line:
            continue
        frames = parse_stack_trace(node.stack_trace)
        for i, f in enumerate(frames):
            if f.file == TOY:
                return line, node, i, f
    raise AssertionError("no decoder node made through toy.py")


def test_a_frame_tinting_many_nodes_is_cleared_by_the_next_click(qtbot, window, demo_tab):
    """The demo's toy.py frame made all 193 decoder nodes: a click on it tints them,
    and a click on another node clears the tint and its status text (it used to stay
    wherever one clicked, since every node was one of the tinted)."""
    tab = demo_tab
    line, node, index, frame = _toy_frame(tab)
    tab.listing.set_current_line(line)
    summary = window.status_label.text()
    window.details.browser.anchorClicked.emit(QUrl(f"frame:{index}"))  # a click on the frame
    lit = tab.listing.related_lines()
    assert len(lit) >= 190 and window.source.header.text().startswith(f"toy.py:{frame.line}")
    assert f"toy.py:{frame.line}: {len(lit)} nodes highlighted" == window.status_label.text()
    other = next(ln for ln in sorted(lit) if ln != line)
    tab.listing.set_current_line(other)  # a click on another of the tinted nodes
    assert tab.listing.related_lines() == set()
    assert SOURCE_LINE not in window.workspace.selection.highlights
    assert window.status_label.text() == summary
    assert not window.source.header.text().startswith("toy.py")  # its own source line


def test_the_source_pane_says_what_node_says_about_another_version(qtbot, window, demo_tab,
                                                                  tmp_path):
    """The local toy.py is another version (4 lines added at its top): `node` says the
    code is 4 lines further down there, and so does the Source pane, which marks it
    there (it used to mark the recorded line, other code, without a word)."""
    local = tmp_path / "jobs"
    local.mkdir()
    text = (ROOT / TOY).read_text()
    (local / "toy.py").write_text("# another\n# version\n# of\n# toy.py\n" + text)
    tab = demo_tab
    line, node, index, frame = _toy_frame(tab)
    mapping = f"inspector/jobs={local}"
    cli = subprocess.run([sys.executable, "-m", "inspector", "node", str(demo_archive()),
                          node.name, "--program", tab.view.name, "--map", mapping],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert cli.returncode == 0, cli.stderr
    note = f"this code is at line {frame.line + 4} there: another version"
    assert note in cli.stdout
    window.source.set_path_mappings([PathMapping.parse(mapping)])
    tab.listing.set_current_line(line)
    window.details.browser.anchorClicked.emit(QUrl(f"frame:{index}"))
    header = window.source.header.text()
    assert header.startswith(f"toy.py:{frame.line} ") and header.endswith(note)
    assert window.source.marked_line() == frame.line + 4  # where the code is here
    assert window.source.editor.textCursor().block().text().strip() == frame.code.strip()
    # the nodes lit are still those of the recorded line
    assert node.name in {tab.view.node_at(ln).name for ln in window.source_nodes()}


def _sized(qtbot, window, size) -> None:
    window.resize(*size)
    window.reset_layout()
    qtbot.waitUntil(lambda: window.width() == size[0], timeout=5000)
    _settle()


@pytest.mark.parametrize("size", [(1400, 900), (1024, 700)], ids=["1400x900", "1024x700"])
def test_the_listing_gets_most_of_the_width(qtbot, window, demo_tab, size):
    """At 1400x900 the listing has at least 60% of the width (it had ~600 px: every
    op line cut at the right); at 1024x700 more than half, room for ~70 columns."""
    _sized(qtbot, window, size)
    listing = demo_tab.listing
    share = LISTING_SHARE if size[0] >= 1400 else 0.5
    assert listing.width() >= share * window.width(), (listing.width(), window.width())
    first, last = listing.visible_columns()
    assert last - first >= (90 if size[0] >= 1400 else 70)


@pytest.mark.parametrize("size", [(1400, 900), (1024, 700)], ids=["1400x900", "1024x700"])
def test_a_node_asked_for_and_a_match_scroll_into_view(qtbot, window, demo_tab, size):
    """A node asked for by name (as a panel asks) and a search match far right
    scroll into view sideways: the value's name and its op, never past the edge."""
    _sized(qtbot, window, size)
    tab = demo_tab
    listing = tab.listing
    view = tab.view
    # the node of the longest statement line whose op starts past the listing's edge
    first, last = listing.visible_columns()
    statements = [ln for ln, n in enumerate(view.listing.line_nodes)
                  if n is not None and view.listing.line_of(n) == ln]

    def op_end(ln: int) -> int:
        text = view.listing.lines[ln]
        return text.find("(", text.find(" = "))

    far = [ln for ln in statements if op_end(ln) > last]
    assert far, "no op past the edge: nothing to scroll to"
    line = min(far, key=op_end)  # one whose name and op fit together
    text = view.listing.lines[line]
    listing.horizontalScrollBar().setValue(0)
    listing.set_current_line(0)
    window.workspace.select_node(view.name, view.node_at(line).name)
    assert listing.current_line() == line
    name_col = len(text) - len(text.lstrip())
    first, last = listing.visible_columns()
    if op_end(line) - name_col <= last - first:  # both fit: both show
        assert first <= name_col + 0.5 and op_end(line) <= last, (first, last, name_col, op_end(line))
    else:  # the name at the left edge, as much of its op as fits
        assert abs(first - name_col) < 1, (first, name_col)
    # a search match at the end of a long line: the one shown is scrolled to
    listing.horizontalScrollBar().setValue(0)
    word = text.rstrip().rstrip(")").rsplit(" ", 1)[-1].strip("(,")
    tab.search.set_text(word)
    qtbot.waitUntil(lambda: tab.match_count() > 0, timeout=10000)
    cur = listing.current_line()
    at = next((ln for ln in tab.result.lines if ln >= cur), tab.result.lines[0])  # the one shown
    start, end = tab.result.spans(listing.line_text(at))[0]
    name_at = len(listing.line_text(at)) - len(listing.line_text(at).lstrip())
    first, last = listing.visible_columns()
    assert first <= start and (end <= last or first >= name_at - 0.5), (first, last, start, end)


def test_a_compiled_run_says_it_compiles(qtbot, no_leaks, toy_archive):
    """torch.compile compiles inside the first call, for tens of seconds with no event:
    the bar says "compiling (first call)…" with the time so far (it sat at "warm-up 1/1
    50%")."""
    panel = RunPanel()
    qtbot.addWidget(panel)
    panel.resize(1000, 650)
    panel.show()
    try:
        panel.set_archive(str(toy_archive))
        panel.compile.setChecked(True)
        panel.mode.setCurrentIndex(panel.mode.findData("eager"))
        panel.batch.setValue(1)
        panel.max_tokens.setValue(4)
        panel.warmup.setValue(1)
        panel.repeats.setValue(1)
        assert panel.start_run()
        qtbot.waitUntil(lambda: COMPILING in panel.progress.format(), timeout=240_000)
        first = panel.progress.format()
        assert first.startswith("warm-up 1/1: compiling (first call)… ") and first.endswith(" s")
        # the elapsed time counts (the first call compiles for seconds)
        qtbot.waitUntil(lambda: panel.progress.format() != first
                        or not panel.runner.is_running(), timeout=30_000)
        if panel.runner.is_running():
            later = panel.progress.format()
            assert COMPILING in later and int(later.split()[-2]) > int(first.split()[-2])
        panel.stop()
    finally:
        panel.shutdown()
