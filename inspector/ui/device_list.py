"""The devices torch sees, listed once by the devices job (a child: the window never
imports torch) and shared by the panels that offer a device choice."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QComboBox

from inspector.core.device_choices import CPU, DeviceInfo, parse_devices

if TYPE_CHECKING:
    from inspector.ui.job_runner import JobRunner


class DeviceSource(QObject):
    """Runs the devices job on `refresh()`; `devices` is [cpu] until it answers."""

    changed = Signal(list)  # list[DeviceInfo]
    failed = Signal(str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.devices: list[DeviceInfo] = [CPU]
        self.torch_version: str | None = None
        self._runner: JobRunner | None = None
        self.asked = False
        self.closed = False

    @property
    def runner(self) -> JobRunner:
        """The devices job's runner, made (and the job protocol imported) when first
        needed: not on the window's way to its first screen."""
        if self._runner is None:
            from inspector.ui.job_runner import JobRunner

            self._runner = JobRunner(self)
            self._runner.result.connect(self._on_result)
            self._runner.error.connect(lambda msg, _details: self.failed.emit(msg))
        return self._runner

    def refresh(self) -> None:
        """List the devices again (a child that imports torch: a few seconds); nothing
        once shut down (a panel's deferred first look can come after the window closed)."""
        if self.closed:
            return
        self.asked = True
        self.runner.start("devices")

    def ensure(self) -> None:
        """Ask once, the first time someone needs the list."""
        if not self.asked:
            self.refresh()

    def shutdown(self) -> None:
        self.closed = True
        if self._runner is not None:
            self._runner.shutdown()

    def _on_result(self, event: dict[str, Any]) -> None:
        self.devices = parse_devices(event)  # core/device_choices.py
        self.torch_version = event.get("torch")
        self.changed.emit(list(self.devices))


def fill_combo(combo: QComboBox, devices: list[DeviceInfo]) -> None:
    """Replace the choices, keeping the current one when it is still offered."""
    current = combo.currentData()
    combo.blockSignals(True)
    combo.clear()
    for dev in devices:
        combo.addItem(dev.label, dev.id)
    index = combo.findData(current)
    combo.setCurrentIndex(max(index, 0))
    combo.blockSignals(False)
    if combo.currentData() != current:
        combo.currentIndexChanged.emit(combo.currentIndex())
