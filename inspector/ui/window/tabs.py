"""What the window asks of every tab (the `Tab` protocol), instead of `hasattr`.

The archive tab (ArchiveTab: the listing, and an AOTInductor package's compiled
model page, CompiledModelView), a big archive's first-screen tab (FirstScreenTab)
and the compare tab (CompareTab) all answer it. The window calls `set_theme` when
the colour scheme changes, `shutdown` before it drops a tab or closes (a tab's
own worker stops first; an archive tab's document is closed by the Workspace), and
`publish` when a tab becomes the current one. Where the user is in a tab goes
through the selection model (workspace.selection), never through the window: the
listing and the compare view both publish their cursor there.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from PySide6.QtWidgets import QTabWidget, QWidget

from inspector.ui.widgets.theme import Theme


@runtime_checkable
class Tab(Protocol):
    def set_theme(self, theme: Theme) -> None:
        """Repaint in `theme` (the window's colour scheme changed)."""

    def shutdown(self) -> None:
        """Stop the tab's own work: it is about to be dropped or the window closes."""

    def publish(self) -> None:
        """It is the current tab now: tell the selection model where its cursor is."""


def as_tab(widget: QWidget | None) -> Tab | None:
    """The tab `widget` is (a page of the window's QTabWidget), or None."""
    return widget if isinstance(widget, Tab) else None


def tabs_of(tabs: QTabWidget) -> list[Tab]:
    """Every page of `tabs` that answers the protocol, in tab order."""
    return [t for i in range(tabs.count()) if (t := as_tab(tabs.widget(i))) is not None]
