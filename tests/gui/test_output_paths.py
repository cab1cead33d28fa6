"""The window's own Save buttons follow the output rule of every command that
writes (core/atomic.py check_output_path, then an unnamed file renamed at the end)."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_run_panel_saves_follow_the_output_rule(qtbot, tmp_path: Path) -> None:
    """The Run panel's Save buttons write as every command does (core/atomic.py):
    a FIFO is refused, not opened (the open would freeze the window until a
    reader came), a link is left alone, a regular file is written whole."""
    import os
    import stat

    from inspector.core.atomic import OutputPathError
    from inspector.ui.panels.run import RunPanel

    panel = RunPanel()
    qtbot.addWidget(panel)
    fifo = tmp_path / "r.csv"
    os.mkfifo(fifo)
    with pytest.raises(OutputPathError, match="FIFO"):
        panel.save_results(fifo)
    victim = tmp_path / "victim.json"
    victim.write_text("keep")
    link = tmp_path / "link.json"
    link.symlink_to(victim)
    panel._saved(panel.save_results, str(link))  # the button's path: an error line, no crash
    assert "symbolic link" in panel.status_area.text(), panel.status_area.text()
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and os.path.islink(link)
    assert victim.read_text() == "keep"
    out = panel.save_results(tmp_path / "ok.csv")
    assert out.read_text().startswith("run,label,device")
    png = panel.save_chart(tmp_path / "c.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.png", "link.json", "ok.csv", "r.csv",
                                                          "victim.json"]
