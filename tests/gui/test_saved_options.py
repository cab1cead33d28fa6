"""The panels' saved options (inspector/ui/panels/saved_options.py), with real widgets
offscreen: a round trip across two instances (of the helper, and of every panel that
remembers options), and a settings file holding garbage — not JSON, the wrong JSON,
values of the wrong type, choices that do not exist, numbers no spin box holds —
gives the defaults and never raises.
"""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QComboBox, QDoubleSpinBox, QLineEdit, QSpinBox, QWidget

from inspector.ui import settings as keys
from inspector.ui.panels.audit import AUDIT_OPTIONS_KEY, NO_TARGET, AuditPanel
from inspector.ui.panels.export import EXPORT_OPTIONS_KEY, ExportPanel
from inspector.ui.panels.profile import PROFILE_OPTIONS_KEY, ProfilePanel
from inspector.ui.panels.run import RUN_OPTIONS_KEY, RunPanel
from inspector.ui.panels.saved_options import SavedOptions

KEY = "test/options"


class Form(QWidget):
    """One widget of every kind the helper binds, at known defaults."""

    def __init__(self) -> None:
        super().__init__()
        self.spin = QSpinBox(self)
        self.spin.setRange(0, 100)
        self.spin.setValue(5)
        self.real = QDoubleSpinBox(self)
        self.real.setRange(0.0, 10.0)
        self.real.setValue(1.5)
        self.check = QCheckBox("on", self)
        self.line = QLineEdit("default", self)
        self.combo = QComboBox(self)
        for name in ("fp32", "bf16", "fp16"):
            self.combo.addItem(name.upper(), name)
        self.device = QComboBox(self)
        self.device.setEditable(True)
        self.device.addItems(["cpu", "cuda"])
        self.options = SavedOptions(KEY)
        for name in ("spin", "real", "check", "line", "combo", "device"):
            self.options.bind(name, getattr(self, name))
        self.options.restore()

    def values(self) -> tuple:
        return (self.spin.value(), self.real.value(), self.check.isChecked(), self.line.text(),
                self.combo.currentData(), self.device.currentText())


DEFAULTS = (5, 1.5, False, "default", "fp32", "cpu")


def _form(qtbot) -> Form:
    form = Form()
    qtbot.addWidget(form)
    return form


def test_round_trip_across_two_instances(qtbot) -> None:
    first = _form(qtbot)
    assert first.values() == DEFAULTS  # nothing stored yet
    first.spin.setValue(42)
    first.real.setValue(7.25)
    first.check.setChecked(True)
    first.line.setText("s70=16 s72=2")
    first.combo.setCurrentIndex(2)
    first.device.setEditText("cuda:3")  # typed, not one of the items
    first.options.save(extra="kept")
    second = _form(qtbot)
    assert second.values() == (42, 7.25, True, "s70=16 s72=2", "fp16", "cuda:3")
    assert second.device.findText("cuda:3") >= 0  # added as an item
    assert second.options.stored("extra", (str,)) == "kept"
    assert second.options.stored("extra", (int,), default=-1) == -1  # the wrong type


@pytest.mark.parametrize("stored", [
    "not json {", "[1, 2, 3]", "null", "42", '"a string"',
])
def test_a_corrupt_file_gives_the_defaults(qtbot, stored: str) -> None:
    keys.set_value(KEY, stored)
    assert _form(qtbot).values() == DEFAULTS


def test_each_bad_field_falls_back_alone(qtbot) -> None:
    """Good fields are kept; each bad one gives its widget's default."""
    keys.set_value(KEY, json.dumps({
        "spin": 2 ** 40,  # no QSpinBox holds it (PySide raises OverflowError)
        "real": "7.5",  # a string, not a number
        "check": 1,  # not a bool
        "line": ["a", "list"],
        "combo": "fp64",  # not one of the choices
        "device": "   ",  # nothing typed
    }))
    assert _form(qtbot).values() == DEFAULTS
    keys.set_value(KEY, json.dumps({"spin": True, "real": 3, "check": True, "line": 5,
                                    "combo": "bf16", "device": "mps"}))
    assert _form(qtbot).values() == (5, 3.0, True, "default", "bf16", "mps")


def test_a_stored_non_string_setting_is_ignored(qtbot) -> None:
    """QSettings may hand back a list (an unquoted comma in a hand-edited INI)."""
    keys.set_value(KEY, ["{\"spin\": 9", " \"line\": \"x\"}"])
    assert _form(qtbot).values() == DEFAULTS


def test_binding_an_unknown_widget_says_so(qtbot) -> None:
    with pytest.raises(TypeError, match="QWidget"):
        SavedOptions(KEY).bind("w", QWidget())


# ---------------------------------------------------------------- the panels


def _run_panel(qtbot) -> RunPanel:
    panel = RunPanel()
    qtbot.addWidget(panel)
    return panel


def test_run_panel_round_trip_and_garbage(qtbot) -> None:
    first = _run_panel(qtbot)
    defaults = (first.mode.currentData(), first.compile.isChecked(), first.precision.currentData(),
                first.warmup.value(), first.repeats.value())
    first.mode.setCurrentIndex(first.mode.count() - 1)
    first.compile.setChecked(not defaults[1])
    first.precision.setCurrentIndex(first.precision.count() - 1)
    first.warmup.setValue(7)
    first.repeats.setValue(11)
    first.options.save()
    chosen = (first.mode.currentData(), first.compile.isChecked(), first.precision.currentData(),
              7, 11)
    assert chosen != defaults
    first.shutdown()
    second = _run_panel(qtbot)
    assert (second.mode.currentData(), second.compile.isChecked(), second.precision.currentData(),
            second.warmup.value(), second.repeats.value()) == chosen
    second.shutdown()
    keys.set_value(RUN_OPTIONS_KEY, json.dumps({"mode": 3, "compile": "yes", "precision": "fp8",
                                                "warmup": "7", "repeats": -5.5}))
    third = _run_panel(qtbot)
    assert (third.mode.currentData(), third.compile.isChecked(), third.precision.currentData(),
            third.warmup.value(), third.repeats.value()) == defaults
    third.shutdown()


def test_profile_panel_round_trip_and_garbage(qtbot) -> None:
    first = ProfilePanel()
    qtbot.addWidget(first)
    defaults = (first.precision.currentData(), first.warmup.value(), first.repeats.value(),
                first.dims.text(), first.inputs.text())
    first.precision.setCurrentIndex(1)
    first.warmup.setValue(9)
    first.repeats.setValue(3)
    first.dims.setText("s70=16")
    first.inputs.setText("input_ids=2x16")
    first._remember()  # what start() saves
    first.shutdown()
    second = ProfilePanel()
    qtbot.addWidget(second)
    assert (second.precision.currentData(), second.warmup.value(), second.repeats.value(),
            second.dims.text(), second.inputs.text()) == ("bf16", 9, 3, "s70=16", "input_ids=2x16")
    second.shutdown()
    keys.set_value(PROFILE_OPTIONS_KEY, json.dumps({"precision": None, "warmup": [1],
                                                    "repeats": 0.5, "dims": 16, "program": 3}))
    third = ProfilePanel()
    qtbot.addWidget(third)
    assert (third.precision.currentData(), third.warmup.value(), third.repeats.value(),
            third.dims.text(), third.inputs.text()) == defaults
    third.shutdown()


def test_export_panel_round_trip_and_garbage(qtbot, tmp_path) -> None:
    first = ExportPanel()
    qtbot.addWidget(first)
    default_spec, default_output = first.spec(), first.output.text()
    first.seed.setValue(first.seed.value() + 17)
    first.strict.setChecked(not first.strict.isChecked())
    spec, output = first.spec(), str(tmp_path / "mine.pt2")
    assert spec != default_spec
    first._remember(spec, output)  # what a started export saves
    first.shutdown()
    second = ExportPanel()
    qtbot.addWidget(second)
    assert (second.spec(), second.output.text()) == (spec, output)
    second.shutdown()
    for stored in ({"spec": {"seed": "abc", "strict": True}, "output": 7},
                   {"spec": {"no_such_option": 1}, "output": ""},
                   {"spec": "preset=tiny"}):
        keys.set_value(EXPORT_OPTIONS_KEY, json.dumps(stored))
        third = ExportPanel()
        qtbot.addWidget(third)
        assert (third.spec(), third.output.text()) == (default_spec, default_output), stored
        third.shutdown()


def test_audit_panel_round_trip_and_garbage(qtbot) -> None:
    first = AuditPanel()
    qtbot.addWidget(first)
    default = first.target.currentText()
    first.target.setEditText("cuda:3")
    qtbot.keyClick(first.target.lineEdit(), Qt.Key.Key_Return)  # typed: saved once valid
    second = AuditPanel()
    qtbot.addWidget(second)
    assert second.target_device() == "cuda:3"
    second.target.setCurrentIndex(second.target.findText(NO_TARGET))  # picked: saved
    third = AuditPanel()
    qtbot.addWidget(third)
    assert third.target_device() is None
    keys.set_value(AUDIT_OPTIONS_KEY, json.dumps({"target": {"device": "cuda"}}))
    fourth = AuditPanel()
    qtbot.addWidget(fourth)
    assert fourth.target.currentText() == default
