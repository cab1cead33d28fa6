"""A panel's last options in QSettings: its widgets bound to the fields of one JSON
object under one key, each field with a type and a default.

The settings file is the user's: hand-edited, truncated, or written by an older
version. So a field that is missing, not JSON, of the wrong type, or not one of a
combo's choices puts its widget back to its default (what the widget showed when it
was bound) — restoring never raises and never leaves a half-applied value.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtWidgets import (
    QAbstractButton,
    QComboBox,
    QDoubleSpinBox,
    QLineEdit,
    QSpinBox,
    QWidget,
)

from inspector.ui import settings as keys


@dataclass
class _Field:
    kinds: tuple[type, ...]  # what a stored value must be (bool is never an int here)
    get: Callable[[], Any]
    set: Callable[[Any], None]
    default: Any


def _is(value: Any, kinds: tuple[type, ...]) -> bool:
    if isinstance(value, bool) and bool not in kinds:
        return False  # JSON true is not a spin box's 1
    return isinstance(value, kinds)


class SavedOptions:
    """`bind` widgets (or `field` any value), then `restore()` once and `save()`
    whenever the options are used."""

    def __init__(self, key: str) -> None:
        self.key = key
        self._fields: dict[str, _Field] = {}
        self._stored: dict[str, Any] = {}  # the object as last read

    # -- binding --
    def bind(self, name: str, widget: QWidget, required: bool = False) -> None:
        """A spin box (int or float), check box, line edit or combo box (its item
        data; an editable combo: its text, added as an item when not listed).
        `required`: an empty text is no value (the default stays)."""
        if isinstance(widget, QSpinBox):
            self.field(name, (int,), widget.value, lambda v: widget.setValue(_c_int(v)))
        elif isinstance(widget, QDoubleSpinBox):
            self.field(name, (int, float), widget.value, lambda v: widget.setValue(float(v)))
        elif isinstance(widget, QAbstractButton):
            self.field(name, (bool,), widget.isChecked, widget.setChecked)
        elif isinstance(widget, QLineEdit):
            self.field(name, (str,), widget.text,
                       lambda v: widget.setText(_non_empty(v) if required else v))
        elif isinstance(widget, QComboBox):
            if widget.isEditable():
                self.field(name, (str,), widget.currentText, lambda v: _choose_text(widget, v))
            else:
                self.field(name, (str, int, float), widget.currentData,
                           lambda v: _choose_data(widget, v))
        else:
            raise TypeError(f"cannot bind a {type(widget).__name__} to a setting")

    def field(self, name: str, kinds: tuple[type, ...], get: Callable[[], Any],
              set: Callable[[Any], None]) -> None:  # noqa: A002
        """Any value: `set` may raise ValueError/TypeError/KeyError for a value it
        refuses (the default is set instead). The default is `get()` now."""
        self._fields[name] = _Field(kinds, get, set, get())

    # -- reading and writing --
    def restore(self) -> None:
        """Every bound field from the stored object, or its default."""
        self._stored = self._read()
        for name, f in self._fields.items():
            value = self._stored.get(name)
            if value is None or not _is(value, f.kinds) or not self._apply(f, value):
                self._apply(f, f.default)

    def stored(self, name: str, kinds: tuple[type, ...], default: Any = None) -> Any:
        """A field as last restored, if it has the type (for a value the panel
        applies later, such as a program the next archive may have)."""
        value = self._stored.get(name)
        return value if value is not None and _is(value, kinds) else default

    def save(self, **values: Any) -> None:
        """The bound widgets' values; `values` adds or replaces fields (JSON types)."""
        doc = {name: f.get() for name, f in self._fields.items()}
        doc.update(values)
        keys.set_value(self.key, json.dumps(doc))
        self._stored = doc

    def _read(self) -> dict[str, Any]:
        raw = keys.settings().value(self.key, "")
        if not isinstance(raw, str) or not raw:
            return {}
        try:
            doc = json.loads(raw)
        except ValueError:
            return {}
        return doc if isinstance(doc, dict) else {}

    @staticmethod
    def _apply(f: _Field, value: Any) -> bool:
        try:
            f.set(value)
        except (ValueError, TypeError, KeyError, OverflowError):
            return False
        return True


def _c_int(value: int) -> int:
    # out of range, PySide warns and raises; clamping into the box's range is Qt's
    if not -(2 ** 31) <= value < 2 ** 31:
        raise OverflowError(value)
    return value


def _non_empty(text: str) -> str:
    if not text.strip():
        raise ValueError("no text")
    return text


def _choose_data(combo: QComboBox, value: Any) -> None:
    index = combo.findData(value)
    if index < 0:
        raise ValueError(f"{value!r} is not a choice")
    combo.setCurrentIndex(index)


def _choose_text(combo: QComboBox, text: str) -> None:
    index = combo.findText(_non_empty(text))
    if index < 0:
        combo.addItem(text, text)
        index = combo.count() - 1
    combo.setCurrentIndex(index)
