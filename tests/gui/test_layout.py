"""Issue 16 item 2: room to work. The window at 1024x700, 1400x880 and 1920x1080 with
each pane and panel shown: nothing cropped, the Run dashboard whole without
scrolling, module names and audit titles whole; Reset Layout; a layout saved in a
small window does not spoil a large one; more registered panels still fit.

Each picture is written to $PT2I_SHOTS_DIR (default: the test's temp folder) as
ui16-<width>-<pane>.png, to be looked at."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QApplication, QDockWidget, QLabel, QScrollArea, QWidget

from inspector.ui.window.main_window import (
    LEFT_FRACTION,
    LEFT_MIN,
    NARROW_WIDTH,
    RIGHT_FRACTION,
    RIGHT_MIN,
    MainWindow,
)

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "resources" / "demo" / "toy-tiny.pt2"
SIZES = ((1024, 700), (1400, 880), (1920, 1080))


def _settle(n: int = 8) -> None:
    for _ in range(n):
        QApplication.processEvents()


def _inside(widget: QWidget, window: QWidget) -> bool:
    """Whether `widget` is shown whole inside the window."""
    if not widget.isVisible():
        return False
    top_left = widget.mapTo(window, widget.rect().topLeft())
    return window.rect().contains(QRect(top_left, widget.size()))


def _not_cropped(scroll: QScrollArea) -> bool:
    """A panel in its scroll area: as wide as the view (it reflowed), never wider."""
    return (not scroll.horizontalScrollBar().isVisible()
            and scroll.widget().width() <= scroll.viewport().width())


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("PT2I_SHOTS_DIR") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _open(qtbot, size: tuple[int, int]) -> MainWindow:
    w = MainWindow(remember=False)
    qtbot.addWidget(w)
    w.resize(*size)
    w.show()
    qtbot.waitExposed(w)
    with qtbot.waitSignal(w.loadsFinished, timeout=60000):
        w.open_archive(DEMO)
    _settle()
    return w


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_every_pane_has_room(qtbot, size, shots):
    w = _open(qtbot, size)
    try:
        assert w.width() == size[0] and w.height() == size[1]
        tag = f"ui16-{size[0]}"
        # the listing itself, with its side panes
        tab = w.current_tab()
        assert tab.listing.width() >= 320 and tab.listing.height() >= 200
        tree = w.modules.tree
        assert tree.header().sectionSize(0) >= tree.sizeHintForColumn(0)  # names whole
        labels = [it.text(0) for it in tree.findItems("*", Qt.MatchFlag.MatchWildcard
                                                      | Qt.MatchFlag.MatchRecursive)]
        assert "h.0" in labels and "h.1" in labels
        for key, dock in (("details", w.dock_details), ("source", w.dock_source),
                          ("tables", w.dock_tables)):
            dock.show()
            dock.raise_()
            _settle()
            assert dock.width() >= 220 and dock.height() >= 90
            w.grab().save(str(shots / f"{tag}-{key}.png"))
        # the side panels: reflowed to their dock, never cropped on the right
        for key, dock in w.job_panels.docks.items():
            w.show_panel(key)
            _settle()
            assert dock.isVisible()
            assert _not_cropped(dock.widget()), f"{key} cropped at {size}"
            w.grab().save(str(shots / f"{tag}-{key}.png"))
        audit = w.job_panels.audit
        qtbot.waitUntil(lambda: audit.report is not None, timeout=60000)
        w.show_panel("audit")
        _settle()
        _titles_whole(audit.before)
        # the Run dashboard: a mode with all of it in view, no scrolling
        run = w.show_panel("run")
        _settle()
        assert not w.dock_details.isVisible() and not w.dock_modules.isVisible()
        assert w.modes.pages["run"] is run  # the whole central area, no scrolling
        assert run.minimumSizeHint().width() <= run.width()
        assert run.minimumSizeHint().height() <= run.height()
        for part in (run.run_button, run.stop_button, run.chart.plot, run.chart.hist_plot,
                     run.stats, run.progress, run.save_chart_button):
            assert _inside(part, w), f"{part.objectName() or type(part).__name__} at {size}"
        plot_rect = run.chart.plot.plotItem.vb.sceneBoundingRect()
        assert plot_rect.height() >= 150 and plot_rect.width() >= 300  # room for the axes
        assert run.stats.height() >= 90
        w.grab().save(str(shots / f"{tag}-run.png"))
        # back to the listing: its docks as they were
        w.set_mode("listing")
        _settle()
        assert w.dock_details.isVisible()
        # the module tree beside the listing, or (a narrow window) a tab beside Details
        assert w.dock_modules.isVisible() or (
            size[0] < NARROW_WIDTH and w.dock_modules in w.tabifiedDockWidgets(w.dock_details))
        assert w.minimumSizeHint().width() <= 1024 and w.minimumSizeHint().height() <= 700
    finally:
        w.close()


def _titles_whole(tree) -> None:
    """Every rule title reads whole: its row is as tall as the title wrapped at the
    column's width (no "…")."""
    assert tree.topLevelItemCount() > 2
    column = tree.header().sectionSize(0)
    for i in range(tree.topLevelItemCount()):
        item = tree.topLevelItem(i)
        fm = QFontMetrics(item.font(0))
        text_width = column - tree.indentation() - tree.iconSize().width() - 12
        needed = fm.boundingRect(QRect(0, 0, text_width, 100_000), Qt.TextFlag.TextWordWrap,
                                 item.text(0)).height()
        assert tree.visualItemRect(item).height() >= needed, item.text(0)


def test_retarget_before_and_after_are_not_squeezed(qtbot, tmp_path, shots):
    w = _open(qtbot, (1024, 700))
    try:
        audit = w.show_panel("audit")
        qtbot.waitUntil(lambda: audit.report is not None, timeout=60000)
        with qtbot.waitSignal(audit.retargeted, timeout=60000):
            assert audit.retarget_to("cuda", tmp_path / "toy-cuda.pt2")
        qtbot.waitUntil(lambda: w.tabs.count() == 2, timeout=60000)
        w.show_panel("audit")
        _settle()
        assert audit.after_box.isVisible()
        # a 300 px dock: one over the other, each tree the dock's width
        assert audit.split.orientation() == Qt.Orientation.Vertical
        for tree in (audit.before, audit.after_tree):
            assert tree.width() >= audit.width() - 40
            _titles_whole(tree)
        w.grab().save(str(shots / "ui16-1024-audit-retarget.png"))
        # a wide dock (in a wider window): side by side
        w.resize(1600, 900)
        _settle()
        w.resizeDocks([w.job_panels.docks["audit"]], [700], Qt.Orientation.Horizontal)
        _settle()
        assert audit.width() >= 560
        assert audit.split.orientation() == Qt.Orientation.Horizontal
    finally:
        w.close()


def test_reset_layout_puts_every_dock_back(qtbot):
    w = _open(qtbot, (1400, 880))
    try:
        w.dock_modules.setFloating(True)
        w.dock_details.hide()
        w.job_panels.docks["export"].setFloating(True)
        w.removeDockWidget(w.dock_source)
        w.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, w.dock_source)
        w.show_panel("run")
        assert w.act_reset_layout in w.view_menu.actions()
        w.act_reset_layout.trigger()
        _settle()
        assert w.modes.current == "listing"
        docks = [d for d in w.findChildren(QDockWidget) if d.parent() is w]
        assert not any(d.isFloating() for d in docks)
        assert all(d.toggleViewAction().isChecked() for d in docks)
        assert w.dockWidgetArea(w.dock_source) == Qt.DockWidgetArea.BottomDockWidgetArea
        assert w.dock_tables in w.tabifiedDockWidgets(w.dock_source)
        right = set(w.tabifiedDockWidgets(w.dock_details))
        assert {w.job_panels.docks["audit"], w.job_panels.docks["export"]} <= right
        assert abs(w.dock_details.width() - max(RIGHT_MIN, int(1400 * RIGHT_FRACTION))) < 40
        assert abs(w.dock_modules.width() - max(LEFT_MIN, int(1400 * LEFT_FRACTION))) < 40
    finally:
        w.close()


def test_small_window_layout_does_not_spoil_a_large_one(qtbot, temp_settings):
    small = MainWindow()
    qtbot.addWidget(small)
    small.resize(1024, 700)
    small.show()
    qtbot.waitExposed(small)
    small.resizeDocks([small.dock_details, small.dock_modules], [230, 150],
                      Qt.Orientation.Horizontal)
    _settle()
    small.close()
    big = MainWindow()
    qtbot.addWidget(big)
    try:
        big.resize(1920, 1080)  # e.g. the next start on a larger screen
        big.show()
        qtbot.waitExposed(big)
        _settle()
        assert big._restored
        assert abs(big.dock_details.width() - max(RIGHT_MIN, int(1920 * RIGHT_FRACTION))) < 40
        assert abs(big.dock_modules.width() - max(LEFT_MIN, int(1920 * LEFT_FRACTION))) < 40
        big.close()
        # the same size again: the saved layout as it was left
        again = MainWindow()
        qtbot.addWidget(again)
        again.resize(1920, 1080)
        again.show()
        qtbot.waitExposed(again)
        _settle()
        assert abs(again.dock_details.width() - big.dock_details.width()) < 10
        again.close()
    finally:
        big.close()


def test_more_registered_panels_still_fit(qtbot, monkeypatch, shots):
    """Other panels come through the registry (shapes, profile, diff, weights): side
    panels tab with Details, dashboards become modes; 1024x700 still works."""
    from inspector.ui.panels import registry

    def side(text):
        return lambda ws, services: QLabel(text)

    extra = [registry.PanelSpec("side_a", "Side A", side("side a"), "right"),
             registry.PanelSpec("side_b", "Side B", side("side b"), "right"),
             registry.PanelSpec("mode_a", "Mode A", side("mode a"), "central"),
             registry.PanelSpec("mode_b", "Mode B", side("mode b"), "central")]
    monkeypatch.setattr(registry, "PANELS", [*registry.PANELS, *extra])
    w = _open(qtbot, (1024, 700))
    try:
        right_keys = [p.key for p in registry.PANELS if p.area == "right"]
        central = [p.title for p in registry.PANELS if p.area == "central"]
        right = set(w.tabifiedDockWidgets(w.dock_details))
        for key in right_keys:
            assert w.job_panels.docks[key] in right
        from PySide6.QtWidgets import QTabBar

        bars = [b for b in w.findChildren(QTabBar) if b.parent() is w]
        # Details and every right-hand panel share one tab bar (the module tree too,
        # in a window narrower than NARROW_WIDTH)
        full = [b for b in bars if b.count() == 1 + len(right_keys) + (w.width() < NARROW_WIDTH)]
        assert full and all(b.elideMode() == Qt.TextElideMode.ElideNone
                            and b.usesScrollButtons() for b in bars)  # whole tab titles
        assert [a.text() for a in w.modes.bar.actions()] == ["Listing", *central]
        assert w.modes.actions["mode_b"].shortcut().toString() == f"Ctrl+{1 + len(central)}"
        for key in ("side_a", "mode_a", "mode_b"):
            w.show_panel(key)
            _settle()
            assert w.job_panels[key].isVisible()
        assert w.minimumSizeHint().width() <= 1024 and w.minimumSizeHint().height() <= 700
        w.set_mode("listing")
        _settle()
        assert w.current_tab().listing.width() >= 320
        w.grab().save(str(shots / "ui16-1024-extra-panels.png"))
    finally:
        w.close()
