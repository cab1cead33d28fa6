"""Small things a first hour trips on: the Weights panel's empty plot (no axes with a
"(x0.001)" scale), its names elided in the middle, the retarget answer under its
button, and the retarget's default output outside the project's own demo folder."""

from __future__ import annotations

import os

import numpy as np
from PySide6.QtCore import Qt

from inspector.resources import demo_archive
from inspector.ui.workspace import Workspace


def test_histogram_has_no_empty_axes_and_no_scale_in_its_label(qtbot):
    from inspector.ui.widgets.weights_view import HistogramView

    view = HistogramView()
    qtbot.addWidget(view)
    view.resize(400, 200)
    view.show()
    assert not view.plot.isVisible()  # "Select a weight…" alone
    # all counts 0 (every value NaN/Inf, left out): pyqtgraph's auto scale said
    # "count (x0.001)" for that flat range
    view.set_histogram("w", np.array([-1.0, 0.0, 1.0, 2.0]), np.zeros(3, dtype=np.int64))
    qtbot.waitUntil(view.plot.isVisible)
    axis = view.plot.getAxis("left")
    qtbot.wait(50)  # pyqtgraph picks its SI scale as it lays the axis out
    assert "(x" not in axis.labelString() and "count" in axis.labelString()
    view.show_message("another")
    assert not view.plot.isVisible()


def test_weight_names_are_elided_in_the_middle(qtbot):
    from inspector.ui.panels.weights import WeightsPanel

    panel = WeightsPanel(Workspace())
    qtbot.addWidget(panel)
    assert panel.table.textElideMode() == Qt.TextElideMode.ElideMiddle


def test_retarget_default_output_is_not_the_bundled_demo_folder(qtbot, tmp_path):
    from inspector.ui.panels.audit import AuditPanel
    from inspector.ui.panels.export import default_output_dir

    panel = AuditPanel(Workspace())
    qtbot.addWidget(panel)
    panel.path = str(demo_archive())
    out = panel.default_output("cuda:0")
    assert out.parent != demo_archive().parent
    assert out == default_output_dir() / "toy-tiny-cuda0.pt2"
    mine = tmp_path / "model.pt2"
    mine.write_bytes(b"")
    panel.path = str(mine)
    assert panel.default_output("cuda") == tmp_path / "model-cuda.pt2"  # beside the user's own
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir()
        (locked / "m.pt2").write_bytes(b"")
        locked.chmod(0o500)
        panel.path = str(locked / "m.pt2")
        assert panel.default_output("cuda").parent == default_output_dir()


def test_retarget_answer_sits_under_its_button(qtbot):
    from inspector.ui.panels.audit import AuditPanel

    panel = AuditPanel(Workspace())
    qtbot.addWidget(panel)
    layout = panel.layout()
    order = [layout.itemAt(i).widget() for i in range(layout.count())]
    assert order.index(panel.status_area) < order.index(panel.split)
