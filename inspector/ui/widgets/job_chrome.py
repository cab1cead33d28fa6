"""The chrome a job panel wraps around its job (the Profile, Run and Numerics panels):
the progress bar, and the trusted rerun. It is given the job's signals (a `JobTask`:
the panel's JobRunner is one), never the runner itself.

Progress: 0..1000, "idle" until a job starts, "<kind>: <stage>  NN%" while it runs,
"<kind>: done" at its result. Trust: a child that refuses an archive because loading
it would run code from it fails with the code "untrusted" (`failure.untrusted`, never
matched by its text);
the panel asks the user (a plain-text box: the message quotes the archive's record
names), and on consent the same job runs again with --trust once this child is gone.
What is said about a failure stays the panel's (each says it its own way).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from PySide6.QtCore import QObject, SignalInstance
from PySide6.QtWidgets import QMessageBox, QProgressBar, QWidget

from inspector.ui.plain import message_box


def confirm_trust(parent: QWidget, message: str) -> bool:
    """Ask before loading an archive that runs code from it (No is the default)."""
    # plain text: the message names records of the archive, which must not be
    # able to hide this warning behind HTML of their own
    box = message_box(parent, QMessageBox.Icon.Warning, "Run code from this archive?",
                      f"{message}\n\nLoad it anyway and run it?",
                      QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                      QMessageBox.StandardButton.No)
    box.setObjectName("trustBox")
    try:
        return box.exec() == QMessageBox.StandardButton.Yes
    finally:
        box.deleteLater()


class JobTask(Protocol):
    """What the chrome follows of a job: its progress and how it failed."""

    progress: SignalInstance  # (stage: str, fraction: float in [0, 1])
    failed: SignalInstance  # (failure: has .untrusted, a JobFailure)


class JobChrome(QObject):
    def __init__(self, task: JobTask, parent: QWidget) -> None:
        super().__init__(parent)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setValue(0)
        self.progress.setFormat("idle")
        self.prefix = ""  # before the stage in the bar: "check: " (empty: the panel runs one kind)
        self._untrusted = False  # the last job's failure: the child refused the archive
        self._rerun: Callable[[], object] | None = None
        task.progress.connect(self._on_progress)
        task.failed.connect(self._on_failed)

    # -- progress --
    def starting(self, prefix: str = "") -> None:
        self.prefix = prefix
        self._untrusted = False  # never the last job's
        self.progress.setTextVisible(True)
        self.progress.setValue(0)
        self.progress.setFormat(f"{prefix}starting…")

    def done(self) -> None:
        self.progress.setValue(1000)
        self.progress.setFormat(f"{self.prefix}done")

    def _on_progress(self, stage: str, fraction: float) -> None:
        self.progress.setValue(int(fraction * 1000))
        self.progress.setFormat(f"{self.prefix}{stage}  %p%")

    # -- trust --
    def _on_failed(self, failure) -> None:
        self._untrusted = bool(failure.untrusted)  # read by the panel's error handler, next

    def offer_trust(self, message: str, trusted: bool, confirm: Callable[[str], bool],
                    rerun: Callable[[], object]) -> bool:
        """Call on the runner's error. True when the child refused the archive as
        untrusted, the job ran without trust (`trusted` False) and `confirm(message)`
        consents: `rerun` then runs once this child has finished (`finished`)."""
        untrusted, self._untrusted = self._untrusted, False
        if not untrusted or trusted or not confirm(message):
            return False
        self._rerun = rerun
        return True

    def forget_rerun(self) -> None:
        self._rerun = None

    def finished(self) -> None:
        """Call last in the panel's finished handler: the consented rerun, if any."""
        rerun, self._rerun = self._rerun, None
        if rerun is not None:
            rerun()
