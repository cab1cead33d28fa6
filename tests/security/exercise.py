"""Everything the viewer does with a file without torch, in-process.

`exercise(path)` opens the archive, summarises it (what `info` prints, text and
JSON), parses and renders every program (what `list` prints) and audits it when
the audit exists. The contract: it returns, or raises InspectorError. Any other
exception is a bug in pt2-inspector (the CLI would print "internal error").
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from inspector.core.archive import Archive, open_archive
from inspector.core.listing import render_listing
from inspector.core.summary import archive_summary


def _optional(module: str, *names: str) -> Callable[..., Any] | None:
    """A function of a module another helper is still writing (None until it exists)."""
    try:
        mod = importlib.import_module(module)
    except ImportError:
        return None
    for name in names:
        fn = getattr(mod, name, None)
        if callable(fn):
            return fn
    return None


def _format_info() -> Callable[[dict[str, Any]], str] | None:
    return _optional("inspector.commands.info", "format_text")


def _audit() -> Callable[..., Any] | None:
    return _optional("inspector.core.audit", "audit_archive", "audit")


def _search_index() -> Callable[..., Any] | None:
    return _optional("inspector.core.search", "SearchIndex")


# One query per field and free text: every field map is built from file data.
_QUERIES = ("op:add", "target:aten", "name:x", "device:cpu", "module:lin", "file:py:1",
            "linear", "torch.ops")


def exercise(path: Path) -> Archive:
    """Returns the (closed) archive for further checks of its records."""
    with open_archive(path) as archive:
        summary = archive_summary(archive)
        orjson.dumps(summary)
        fmt = _format_info()
        if fmt is not None:
            fmt(summary)
        for name in archive.program_names:
            program = archive.program(name)
            listing = render_listing(program)
            listing.text().encode("utf-8")  # what `list` writes to a UTF-8 stdout
            for i in range(len(listing)):
                listing.node_at(i)
            index = _search_index()
            if index is not None:
                found = index(listing)  # builds per-field maps from names, traces, modules
                for query in _QUERIES:
                    found.search(query)
        audit = _audit()
        if audit is not None:
            audit(archive)
    return archive
