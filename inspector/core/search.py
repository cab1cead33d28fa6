"""Queries over a listing: plain text, regex, and `field:value` terms.

The window searches as the user types, on listings of 100,000+ nodes, so
everything a query needs is computed once per listing (SearchIndex): the
lowercased text of every line, and per field a map from distinct keys (op
names, devices, module paths, files, ...) to the listing lines of the nodes that
carry them. A field term then scans only the distinct keys (hundreds, not
100,000 nodes), and free text is one pass of `in`/`re.search` over the lines.

Query language (terms are AND-ed; whatever is not a field term is free text,
matched against the line as the user typed it):

  op:arange            nodes whose operator name contains "arange"
  target:aten.to       nodes whose full target contains the text
  name:add_            nodes whose name contains the text
  device:cpu           nodes with a device literal argument (device(type='cpu'))
  module:decoder.h.0   nodes inside that module (path prefix); class names too
  file:modeling_gpt2.py[:573]  nodes whose stack trace passes through that file
                       (and that line)

Field values are compared case-insensitively; with `regex` on, a field value is a
regular expression searched in the key. Nothing here imports Qt or torch.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from inspector.core.frames import parse_module_stack, parse_stack_trace
from inspector.core.listing import STATEMENT, Listing
from inspector.core.program import Node

FIELDS = ("op", "target", "name", "device", "module", "file")
_FIELD_TERM = re.compile(r"(?<!\S)(" + "|".join(FIELDS) + r"):(\S+)")
_FILE_LINE = re.compile(r"^(.+):(\d+)$")


class SearchError(ValueError):
    """The query cannot be run (e.g. an invalid regular expression)."""


@dataclass(frozen=True)
class Query:
    text: str = ""  # free text (may be empty when only field terms are given)
    fields: tuple[tuple[str, str], ...] = ()
    case_sensitive: bool = False
    regex: bool = False

    @property
    def empty(self) -> bool:
        return not self.text and not self.fields


def parse_query(raw: str, case_sensitive: bool = False, regex: bool = False) -> Query:
    fields = tuple((m.group(1), m.group(2)) for m in _FIELD_TERM.finditer(raw))
    text = _FIELD_TERM.sub("", raw).strip() if fields else raw
    if not text.strip():
        text = ""
    return Query(text, fields, case_sensitive, regex)


@dataclass
class SearchResult:
    lines: list[int]  # sorted listing lines
    query: Query
    _pattern: re.Pattern[str] | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.lines)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Where to highlight in one matching line: the free-text occurrences,
        or the whole statement for a field-only query."""
        q = self.query
        if q.text:
            if self._pattern is not None:
                return [m.span() for m in self._pattern.finditer(text) if m.end() > m.start()]
            needle = q.text if q.case_sensitive else q.text.lower()
            hay = text if q.case_sensitive else text.lower()
            out, start = [], hay.find(needle)
            while start >= 0:
                out.append((start, start + len(needle)))
                start = hay.find(needle, start + len(needle))
            return out
        stripped = len(text) - len(text.lstrip())
        return [(stripped, len(text))] if text.strip() else []


class SearchIndex:
    """Everything queries need about one listing, computed once."""

    def __init__(self, listing: Listing) -> None:
        self.listing = listing
        self.lines = listing.lines
        self.lower = [line.lower() for line in listing.lines]
        # field -> key -> listing lines (each node's statement lines)
        self.keys: dict[str, dict[str, list[int]]] = {f: {} for f in FIELDS}
        self.file_lines: dict[tuple[str, int], list[int]] = {}
        self._build()

    def _build(self) -> None:
        keys = self.keys
        op, target, name, device, module, files = (keys[f] for f in FIELDS)
        file_lines = self.file_lines
        kinds = self.listing.kinds
        seen: set[int] = set()
        for line, node in enumerate(self.listing.line_nodes):
            if node is None or kinds[line] != STATEMENT:
                continue
            nid = id(node)
            if nid in seen:  # getitem lines follow their node: the node counts once
                continue
            seen.add(nid)
            _add(op, node.op_name, line)
            _add(target, node.target, line)
            _add(name, node.name, line)
            for dev in _device_literals(node):
                _add(device, dev, line)
            stack = node.nn_module_stack
            if stack:
                entries = parse_module_stack(stack)
                if entries:
                    _add(module, entries[-1].path, line)
                    for cls in {e.class_name for e in entries}:
                        _add(module, cls, line)
            trace = node.stack_trace
            if trace:
                done: set[str] = set()
                for frame in parse_stack_trace(trace):
                    if frame.file not in done:
                        done.add(frame.file)
                        _add(files, frame.file, line)
                    lst = file_lines.setdefault((frame.file, frame.line), [])
                    if not lst or lst[-1] != line:
                        lst.append(line)

    # -- queries --
    def search(self, query: Query | str, limit_lines: Iterable[int] | None = None) -> SearchResult:
        if isinstance(query, str):
            query = parse_query(query)
        if query.empty:
            return SearchResult([], query)
        candidates: list[int] | None = None
        for fname, value in query.fields:
            lines = self.field_lines(fname, value, query.regex)
            candidates = lines if candidates is None else _intersect(candidates, lines)
        pattern = None
        if query.text:
            pattern = _compile(query) if query.regex else None
            candidates = self._text_lines(query, pattern, candidates)
        return SearchResult(sorted(candidates or []), query, pattern)

    def field_lines(self, fname: str, value: str, regex: bool = False) -> list[int]:
        if fname not in self.keys:
            raise SearchError(f"unknown field {fname!r} (fields: {', '.join(FIELDS)})")
        if fname == "file" and not regex:
            m = _FILE_LINE.match(value)
            if m:
                return self.source_lines(m.group(1), int(m.group(2)))
        table = self.keys[fname]
        match = _key_matcher(fname, value, regex)
        hits = [k for k in table if match(k)]
        if fname == "module" and not regex and not hits:
            low = value.lower()  # no module has that prefix: try it as a fragment
            hits = [k for k in table if low in k.lower()]
        return _union(table[k] for k in hits)

    def source_lines(self, file: str, line: int) -> list[int]:
        """Listing lines of the nodes whose stack trace passes through file:line
        (`file` may be a full path or a path suffix such as modeling_gpt2.py)."""
        exact = self.file_lines.get((file, line))
        if exact is not None:
            return list(exact)
        parts = [lst for (f, ln), lst in self.file_lines.items()
                 if ln == line and _file_matches(f, file)]
        return _union(parts)

    def _text_lines(self, query: Query, pattern: re.Pattern[str] | None,
                    candidates: list[int] | None) -> list[int]:
        if pattern is not None:
            search = pattern.search
            lines = self.lines
            if candidates is None:
                return [i for i, s in enumerate(lines) if search(s)]
            return [i for i in candidates if search(lines[i])]
        if query.case_sensitive:
            hay, needle = self.lines, query.text
        else:
            hay, needle = self.lower, query.text.lower()
        if candidates is None:
            return [i for i, s in enumerate(hay) if needle in s]
        return [i for i in candidates if needle in hay[i]]


# --- helpers ------------------------------------------------------------------

def _add(table: dict[str, list[int]], key: str, line: int) -> None:
    lst = table.get(key)
    if lst is None:
        table[key] = [line]
    else:
        lst.append(line)


def _device_literals(node: Node) -> list[str]:
    out = []
    for inp in node.inputs:
        if inp.arg.kind == "as_device" and isinstance(inp.arg.value, dict):
            dtype = str(inp.arg.value.get("type"))
            index = inp.arg.value.get("index")
            out.append(dtype if index is None else f"{dtype}:{index}")
    return out


def _compile(query: Query) -> re.Pattern[str]:
    try:
        return re.compile(query.text, 0 if query.case_sensitive else re.IGNORECASE)
    except re.error as exc:
        raise SearchError(f"invalid regular expression: {exc}") from None


def _key_matcher(fname: str, value: str, regex: bool) -> Callable[[str], bool]:
    if regex:
        try:
            pat = re.compile(value, re.IGNORECASE)
        except re.error as exc:
            raise SearchError(f"invalid regular expression in {fname}: {exc}") from None
        return lambda k: pat.search(k) is not None
    low = value.lower()
    if fname == "module":
        return lambda k: (k.lower() == low or k.lower().startswith(low + ".")
                          or (low == "" and k == ""))
    if fname == "device":
        return lambda k: k.lower() == low or k.lower().split(":")[0] == low
    if fname == "file":
        return lambda k: _file_matches(k, value)
    return lambda k: low in k.lower()


def _file_matches(path: str, wanted: str) -> bool:
    p = path.replace("\\", "/").lower()
    w = wanted.replace("\\", "/").lower()
    return p == w or p.endswith("/" + w) or (w in p)


def _union(parts: Iterable[list[int]]) -> list[int]:
    parts = list(parts)
    if not parts:
        return []
    if len(parts) == 1:
        return sorted(parts[0])
    merged: set[int] = set()
    for p in parts:
        merged.update(p)
    return sorted(merged)


def _intersect(a: list[int], b: list[int]) -> list[int]:
    sb = set(b)
    return [x for x in a if x in sb]
