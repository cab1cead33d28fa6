"""The Dim editor: validation before running, a real tiny export, cancel."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from _panel_helpers import _alive, no_leaks, wait_gone  # noqa: E402,F401
from PySide6.QtCore import Qt  # noqa: E402

from inspector.core.archive import open_archive  # noqa: E402
from inspector.ui.panels.export import ExportPanel, split_fix  # noqa: E402


@pytest.fixture
def out_dir(tmp_path):
    folder = tmp_path / "out"  # tmp_path itself also holds the test's settings
    folder.mkdir()
    return folder


@pytest.fixture
def panel(qtbot, no_leaks, out_dir):
    p = ExportPanel()
    qtbot.addWidget(p)
    p.output.setText(str(out_dir / "toy-tiny.pt2"))
    yield p
    p.shutdown()


def _invalid(spin) -> bool:
    return bool(spin.property("invalid"))


def test_default_spec_is_valid(panel):
    assert panel.validate()
    assert panel.export_button.isEnabled()
    assert not panel.problem.isVisible()


@pytest.mark.parametrize("edit, row, spin_name, words", [
    (("seq", "max_spin", 300), "seq_len", "max_spin", "over 256"),
    (("seq", "min_spin", 300), "seq_len", "min_spin", "min must be <= max"),
    (("batch", "min_spin", -1), "batch", "min_spin", "cannot be negative"),
    (("seq", "example_spin", 1), "seq_len", "example_spin", "outside the range"),
    (("batch", "example_spin", 65), "batch", "example_spin", "outside the range"),
])
def test_bad_ranges_are_marked_before_running(qtbot, panel, edit, row, spin_name, words):
    dim_name, field, value = edit
    dim = getattr(panel, dim_name)
    getattr(dim, field).setValue(value)
    found = panel.problems()
    assert words in found[row]
    assert _invalid(getattr(dim, spin_name))
    other = panel.batch if dim is panel.seq else panel.seq
    assert not any(_invalid(s) for s in (other.min_spin, other.max_spin, other.example_spin))
    assert not panel.export_button.isEnabled()
    assert words in panel.problem.text()
    # Clicking anyway starts nothing.
    assert not panel.start_export()
    assert not panel.runner.is_running()
    # Fixing it clears the mark.
    getattr(dim, field).setValue({"max_spin": 64, "min_spin": 2, "example_spin": 8}[field])
    assert panel.validate(), panel.problems()
    assert not _invalid(getattr(dim, spin_name))
    assert panel.export_button.isEnabled()


def test_slider_and_spin_boxes_follow_each_other(panel):
    panel.seq.slider.setValue((4, 100))
    assert panel.seq.values()[:2] == (4, 100)
    panel.seq.max_spin.setValue(200)
    assert tuple(int(v) for v in panel.seq.slider.value()) == (4, 200)
    assert panel.spec().seq_min == 4 and panel.spec().seq_max == 200


def test_output_must_be_a_writable_pt2(panel, tmp_path):
    panel.output.setText(str(tmp_path / "missing" / "x.pt2"))
    assert "does not exist" in panel.problems()["output"]
    panel.output.setText(str(tmp_path / "x.zip"))
    assert "must end in .pt2" in panel.problems()["output"]
    assert not panel.export_button.isEnabled()


def test_torch_suggested_fix_is_split_out():
    head, fix = split_fix("torch.export rejected the Dim ranges: Constraints violated "
                          "(batch)!; Suggested fixes: batch = Dim('batch', max=8)")
    assert fix == "batch = Dim('batch', max=8)"
    assert head.endswith("Constraints violated (batch)!")


def test_real_tiny_export_from_the_panel_opens_a_new_tab(qtbot, no_leaks, window, toy_tab,
                                                         toy_archive, out_dir):
    panel = window.job_panels.export
    window.job_panels.docks["export"].raise_()
    out = out_dir / "toy-tiny.pt2"
    panel.output.setText(str(out))
    panel.batch.set_values(1, 8, 2)
    panel.seq.set_values(2, 32, 8)
    stages: list[str] = []
    panel.runner.progress.connect(lambda stage, _f: stages.append(stage))
    with qtbot.waitSignal(panel.archiveExported, timeout=300_000) as blocker:
        qtbot.mouseClick(panel.export_button, Qt.LeftButton)
        assert panel.runner.is_running() and panel.cancel_button.isEnabled()
        assert not panel.export_button.isEnabled()
    path, _result = blocker.args
    assert Path(path) == out.resolve() and out.is_file()
    assert {"export encoder", "export decoder", "save"} <= set(stages)
    with open_archive(out) as archive:
        assert sorted(archive.program_names) == ["decoder", "encoder"]
        ranges = {r.text() for r in archive.program("decoder").range_constraints.values()}
    assert ranges == {"[1, 8]", "[2, 32]"}
    # The new archive opens in a new tab.
    qtbot.waitUntil(lambda: window.tabs.count() == 2
                    and window.current_archive_path() == str(out.resolve()), timeout=60000)
    qtbot.waitUntil(lambda: not panel.runner.is_running(), timeout=5000)
    assert panel.output.text() == str(out_dir / "toy-tiny-2.pt2")  # never the open tab
    assert panel.export_button.isEnabled() and not panel.cancel_button.isEnabled()
    # Compared with the archive that was open (the default export: batch 1:64, seq 2:256).
    qtbot.waitUntil(lambda: panel.compare_box.isVisibleTo(panel), timeout=30000)
    rows = {(r[0], r[1]): r[2:] for r in panel.compare_table.rows()}
    assert rows[("decoder", "input_ids[1]")] == ("[2, 256]", "[2, 32]")
    assert rows[("decoder", "input_ids[0]")] == ("[1, 64]", "[1, 8]")
    assert rows[("encoder", "pixel_values[0]")] == ("[1, 64]", "[1, 8]")
    assert toy_archive.name in panel.compare_box.title()
    assert "Exported toy-tiny.pt2" in panel.status.text()


def test_cancel_ends_the_child_and_writes_nothing(qtbot, panel, out_dir):
    out = out_dir / "toy-tiny.pt2"
    saw: list[str] = []

    def on_progress(stage: str, _fraction: float) -> None:
        saw.append(stage)
        if stage == "save":  # the child is writing its partial folder now
            pid.append(panel.runner.pid())
            running.append(_alive(pid[-1]))
            panel.cancel()

    pid: list[int] = []
    running: list[bool] = []
    panel.runner.progress.connect(on_progress)
    with qtbot.waitSignal(panel.runner.cancelled, timeout=240_000):
        assert panel.start_export()
    assert running == [True]  # cancelled while it wrote, once
    assert "cancelled" in panel.status.text()
    assert panel.export_button.isEnabled()
    # Gone, and its partial folder with it; uncancelled, it would finish writing `out`.
    # How fast is bench_ui_jobs.py's to measure, not a test's.
    assert not wait_gone({pid[0]}, timeout=60.0), "export child still running after cancel"
    qtbot.waitUntil(lambda: not any(out_dir.iterdir()), timeout=60_000)
    assert not out.exists()


def test_torch_error_is_shown_with_its_suggested_fix(qtbot, panel, out_dir):
    # Example batch 1 is inside 1:64, so our checks pass; torch specializes it and refuses.
    panel.batch.set_values(1, 64, 1)
    assert panel.validate()
    with qtbot.waitSignal(panel.exportFailed, timeout=300_000) as blocker:
        assert panel.start_export()
    message, details = blocker.args
    assert "Constraints violated (batch)" in message
    text = panel.status.text()
    assert "Export failed:" in text and "Suggested fix:" in text and "batch = 1" in text
    assert "Traceback" not in text  # the traceback is one click away, not in the face
    assert panel.details_button.isVisibleTo(panel) and not panel.details.isVisibleTo(panel)
    qtbot.mouseClick(panel.details_button, Qt.LeftButton)
    assert panel.details.isVisibleTo(panel)
    assert "Suggested fixes" in panel.details.toPlainText()
    qtbot.waitUntil(lambda: not panel.runner.is_running(), timeout=5000)
    assert list(out_dir.iterdir()) == []
    assert panel.export_button.isEnabled()
    # The last options come back in the next session (QSettings, a temp file in tests).
    again = ExportPanel()
    qtbot.addWidget(again)
    assert again.spec() == panel.spec() and again.output.text() == panel.output.text()


def test_refuses_to_overwrite_the_archive_in_the_current_tab(no_leaks, window, toy_tab,
                                                             toy_archive):
    panel = window.job_panels.export
    panel.output.setText(str(toy_archive))
    assert "open in the current tab" in panel.problems()["output"]
    assert not panel.export_button.isEnabled()


def test_with_no_archive_before_the_table_compares_nothing(qtbot, panel, out_dir):
    """Issue 29: exported with no archive open, the ranges table has nothing to compare
    with: its Before column says "—", never "— (static)" (which claims the dimension
    was static in an archive that does not exist), and no row is marked changed."""
    panel.batch.set_values(1, 8, 2)
    panel.seq.set_values(2, 32, 8)
    with qtbot.waitSignal(panel.compared, timeout=300_000):
        assert panel.start_export()
    rows = panel.compare_table.rows()
    assert rows and {r[2] for r in rows} == {"—"}
    assert ("decoder", "input_ids[1]", "—", "[2, 32]") in rows
    assert not any(panel.compare_table.item(r, 3).font().bold() for r in range(len(rows)))
    assert panel.compare_box.title() == "Range constraints of toy-tiny.pt2"
    qtbot.waitUntil(lambda: not panel.runner.is_running(), timeout=5000)
