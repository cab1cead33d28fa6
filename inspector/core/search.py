"""Queries over a listing: plain text, regex, and `field:value` terms.

The window searches as the user types, on listings of 100,000+ nodes, so
everything a query needs is computed once per listing (SearchIndex): the
lowercased text of every line (one buffer, scanned by core/line_scan.py), and
per field a map from distinct keys (op names, devices, module paths, files, ...)
to the listing lines of the nodes that carry them. A field term then scans only
the distinct keys (hundreds, not 100,000 nodes), and free text is a few numpy
passes over the buffer. A regular expression with a literal it cannot match
without (`arange_` in `arange_\\d+`) finds the lines holding that literal the
same way and runs only on those lines; only a pattern without one runs over all
the text.

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
from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from inspector.core.frames import parse_line_number, parse_module_stack, parse_stack_trace
from inspector.core.listing import STATEMENT, Listing
from inspector.core.program import Node

if TYPE_CHECKING:  # line_scan imports numpy (~0.05 s): not before the first search
    from inspector.core.line_scan import Groups, LineText

try:  # re's own parser, to read a pattern's literals (3.11 renamed it)
    from re import _parser as _re_parser  # type: ignore[attr-defined]
except ImportError:  # Python 3.10
    import sre_parse as _re_parser  # type: ignore[no-redef]

FIELDS = ("op", "target", "name", "device", "module", "file")
# A listing this long gets its scan buffers (line_scan.py) when indexed, in the
# worker, so its first search is as quick as the next; a shorter one's take
# milliseconds at the first search, and making them at open (numpy's import alone
# is ~0.05 s) delayed the window's first listing (issue 33).
PREBUILD_LINES = 20_000
_FIELD_TERM = re.compile(r"(?<!\S)(" + "|".join(FIELDS) + r"):(\S+)")
_FILE_LINE = re.compile(r"^(.+):([0-9]+)$")


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
        # field terms: mark the field values where the line shows them (op:arange
        # marks "arange"); the match line itself is tinted by the view anyway
        low = text.lower()
        out = []
        for _field, value in q.fields:
            needle = value.lower().rsplit(":", 1)[0] if _field == "file" else value.lower()
            needle = needle.rsplit("/", 1)[-1]
            start = low.find(needle) if needle else -1
            while start >= 0:
                out.append((start, start + len(needle)))
                start = low.find(needle, start + len(needle))
        return sorted(out)


class SearchIndex:
    """Everything queries need about one listing, computed once."""

    def __init__(self, listing: Listing) -> None:
        self.listing = listing
        self.lines = listing.lines
        # field -> key -> listing lines (each node's statement line)
        self.keys: dict[str, dict[str, list[int]]] = {f: {} for f in FIELDS}
        self.file_lines: dict[tuple[str, int], list[int]] = {}
        self._lower_keys: dict[str, list[tuple[str, str]]] = {}
        # op/target/name keys joined, for a vectorised substring scan (name has a
        # key per node: 100,000 Python-level tests took 170 ms)
        self._key_text: dict[str, LineText] = {}
        self._key_lines: dict[str, Groups] = {}  # the same keys' lines, in that order
        # case_sensitive -> the lines (lowercased unless case-sensitive) as one buffer
        self._scan: dict[bool, LineText] = {}
        # only for a regex without a literal: all lines joined by \n, and offsets
        self._text: dict[bool, str] = {}
        self._starts: list[int] = []
        self._ascii = True
        self._build()
        if len(self.lines) >= PREBUILD_LINES:
            for f in _SUBSTRING_FIELDS:
                self._substring_keys(f)
            self._scanner(False)

    def _build(self) -> None:
        keys = self.keys
        op, target, name, device = keys["op"], keys["target"], keys["name"], keys["device"]
        kinds = self.listing.kinds
        seen: set[int] = set()
        # Real programs repeat a few hundred distinct stack traces and module
        # stacks over thousands of nodes: group lines by text, parse each once.
        by_trace: dict[str, list[int]] = {}
        by_stack: dict[str, list[int]] = {}
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
            meta = node.metadata
            stack = meta.get("nn_module_stack")
            if stack:
                _add(by_stack, stack, line)
            trace = meta.get("stack_trace")
            if trace:
                _add(by_trace, trace, line)
        # values FX prints under another name (an input `input` is printed
        # `input_1`): both names find the line that defines the value
        listing = self.listing
        for (gname, shown), file_name in listing.file_names.items():
            line = listing.aliases.get((gname, file_name), listing.definitions.get((gname, file_name)))
            if line is None:
                continue
            for key in (shown, file_name):
                if line not in name.get(key, ()):
                    _add(name, key, line)
        module = keys["module"]
        for stack, lines in by_stack.items():
            entries = parse_module_stack(stack)
            if entries:
                _extend(module, entries[-1].path, lines)
                for cls in {e.class_name for e in entries}:
                    _extend(module, cls, lines)
        files, file_lines = keys["file"], self.file_lines
        for trace, lines in by_trace.items():
            done: set[object] = set()
            for frame in parse_stack_trace(trace):
                if frame.file not in done:
                    done.add(frame.file)
                    _extend(files, frame.file, lines)
                loc = (frame.file, frame.line)
                if loc not in done:
                    done.add(loc)
                    _extend(file_lines, loc, lines)
        for table in (module, files, file_lines):
            for lst in table.values():
                lst.sort()
        for f, table in keys.items():
            self._lower_keys[f] = [(k.lower(), k) for k in table]

    def _substring_keys(self, fname: str) -> tuple[Groups, LineText]:
        """Field `fname`'s lowercased keys as one buffer, and each key's lines."""
        if fname not in self._key_text:
            from inspector.core.line_scan import Groups, LineText

            lower = self._lower_keys[fname]
            self._key_text[fname] = LineText([lk for lk, _ in lower], dedupe=False)
            self._key_lines[fname] = Groups.of_lists([self.keys[fname][k] for _, k in lower])
        return self._key_lines[fname], self._key_text[fname]

    def _scanner(self, case_sensitive: bool) -> LineText:
        """The lines as one buffer; lowercased line by line unless case-sensitive,
        so a hit there is a hit of `needle.lower() in line.lower()`."""
        scan = self._scan.get(case_sensitive)
        if scan is None:
            from inspector.core.line_scan import LineText

            scan = self._scan[case_sensitive] = LineText(self.lines, lower=not case_sensitive)
            self._ascii = scan.ascii
        return scan

    def _joined(self, case_sensitive: bool) -> str:
        """All lines in one string, for a regex with no literal to look for: a
        C-speed scan finds matches, and a bisect over line offsets names their
        lines (10x faster than a per-line loop)."""
        text = self._text.get(case_sensitive)
        if text is None:
            text = "\n".join(self.lines)
            if not case_sensitive:
                lowered = text.lower()
                # lower() keeps offsets only if no character changes length
                text = lowered if len(lowered) == len(text) else text
            self._text[case_sensitive] = text
            if not self._starts:
                self._starts = _offsets(self.lines)
        return text

    # -- queries --
    def search(self, query: Query | str) -> SearchResult:
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
                return self.source_lines(m.group(1), parse_line_number(m.group(2)))
        table = self.keys[fname]
        if fname in _SUBSTRING_FIELDS and not regex:
            key_lines, key_text = self._substring_keys(fname)
            return key_lines.union(key_text.find_lines(value.lower()))
        match = _key_matcher(fname, value, regex)
        hits = [k for low, k in self._lower_keys[fname] if match(low)]
        if fname == "module" and not regex and not hits:
            low = value.lower()  # no module has that prefix: try it as a fragment
            hits = [k for lk, k in self._lower_keys[fname] if low in lk]
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
        lines = self.lines
        if candidates is not None:  # few lines already chosen by field terms
            if pattern is not None:
                return [i for i in candidates if pattern.search(lines[i])]
            if query.case_sensitive:
                return [i for i in candidates if query.text in lines[i]]
            needle = query.text.lower()
            return [i for i in candidates if needle in lines[i].lower()]
        if pattern is None:
            needle = query.text if query.case_sensitive else query.text.lower()
            return self._scanner(query.case_sensitive).find_lines(needle)
        if _may_span_lines(query.text):  # as given, line by line
            found = self._literal_lines(pattern, False)
            return found if found is not None else [i for i, s in enumerate(lines) if pattern.search(s)]
        self._scanner(False)  # knows whether the text is ASCII
        lowered = not query.case_sensitive and self._ascii and _lowercase_safe(query.text)
        if lowered:
            # IGNORECASE disables re's literal-prefix scan (1.2 s instead of 0.1 s
            # on 200k lines); a pattern without capitals matches the lowercased
            # text case-sensitively with the same result (ASCII text only:
            # ignoring case, "s" also matches "ſ", which lowercases to itself).
            pattern = re.compile(query.text, re.MULTILINE)
        found = self._literal_lines(pattern, lowered)
        if found is not None:
            return found
        text = self._joined(False if lowered else True)
        starts = self._starts
        n = len(starts)
        out: list[int] = []
        search = pattern.search
        m = search(text, 0)
        while m is not None:
            i = bisect_right(starts, m.start()) - 1
            out.append(i)
            if i + 1 >= n:
                break
            m = search(text, starts[i + 1])
        return out

    def _literal_lines(self, pattern: re.Pattern[str], lowered: bool) -> list[int] | None:
        """The lines `pattern` matches (on the lowercased line if `lowered`), found
        by the literal every match contains: the lines holding it, then the
        pattern on each of those alone. None when the pattern has no such literal
        (or, ignoring case, when case folding could match it outside ASCII)."""
        literal = _required_literal(pattern)
        if not literal:
            return None
        if pattern.flags & re.IGNORECASE:
            # ASCII text, ASCII literal: a case-insensitive match of the literal
            # is exactly the lowercased literal in the lowercased line
            scan = self._scanner(False)
            if not (self._ascii and literal.isascii()):
                return None
            literal = literal.lower()
        else:  # the literal itself, in the text the pattern runs on
            scan = self._scanner(not lowered)
        search, text = pattern.search, scan.distinct  # each distinct line tried once
        if lowered:
            return scan.expand([d for d in scan.find_distinct(literal) if search(text[d].lower())])
        return scan.expand([d for d in scan.find_distinct(literal) if search(text[d])])


def scan_lines(lines: Sequence[str], query: Query | str) -> SearchResult | None:
    """What `query` finds in `lines` without an index (the lines of a listing
    written so far, while its index is built): the lines SearchIndex.search
    finds for the same lines, for a query of free text alone; None for one with
    field terms, which only the index can answer. A Python pass over the lines
    (~0.1 s for 700,000 of them): for a worker thread, not the GUI's."""
    if isinstance(query, str):
        query = parse_query(query)
    if query.fields:
        return None
    if query.empty:
        return SearchResult([], query)
    if query.regex:
        pattern = _compile(query)
        search = pattern.search
        return SearchResult([i for i, s in enumerate(lines) if search(s)], query, pattern)
    if query.case_sensitive:
        needle = query.text
        return SearchResult([i for i, s in enumerate(lines) if needle in s], query)
    needle = query.text.lower()
    return SearchResult([i for i, s in enumerate(lines) if needle in s.lower()], query)


# --- helpers ------------------------------------------------------------------

def _add(table: dict[str, list[int]], key: str, line: int) -> None:
    lst = table.get(key)
    if lst is None:
        table[key] = [line]
    else:
        lst.append(line)


_SUBSTRING_FIELDS = ("op", "target", "name")


def _offsets(lines: list[str]) -> list[int]:
    starts, pos = [], 0
    for line in lines:
        starts.append(pos)
        pos += len(line) + 1
    return starts


def _extend(table: dict, key, lines: list[int]) -> None:
    lst = table.get(key)
    if lst is None:
        table[key] = list(lines)
    else:
        lst.extend(lines)


def _may_span_lines(pattern: str) -> bool:
    """Patterns that could match a newline in the joined text (\\s, [^x], \\n,
    dot-all) run line by line instead, so a match never spans two lines."""
    return any(t in pattern for t in ("\\s", "[^", "\\n", "\\W", "\\D", "\\S", "(?s", "\\x0a"))


def _required_literal(pattern: re.Pattern[str]) -> str:
    """The longest run of characters every match of `pattern` contains ("arange_"
    in arange_\\d+, "b" in a?b, none in a|b): the pattern's top-level sequence, as
    re's own parser reads it (escapes, verbose mode, inline flags), through plain
    groups. "" when there is none or the parser is not the one expected."""
    try:
        tree = _re_parser.parse(pattern.pattern, pattern.flags)
        literal, subpattern = _re_parser.LITERAL, _re_parser.SUBPATTERN
    except Exception:  # private module: any change in it only costs speed
        return ""
    best: list[str] = []
    run: list[str] = []

    def walk(items) -> None:
        nonlocal best, run
        for op, av in items:
            if op is literal:
                run.append(chr(av))
                continue
            if op is subpattern and not av[1] and not av[2]:  # (...) without flags
                walk(av[3])
                continue
            if len(run) > len(best):
                best = run
            run = []

    try:
        walk(tree)
    except Exception:
        return ""
    return "".join(max(best, run, key=len))


def _lowercase_safe(pattern: str) -> bool:
    """Whether `pattern`, case-sensitive on lowercased ASCII text, matches where
    it matches the text itself ignoring case: no capital or non-ASCII character
    in it (escapes and ranges included: [@-Z], \\x41) and no (?-i:...)."""
    if any(c.isupper() for c in pattern) or not pattern.isascii():
        return False
    try:
        tree = _re_parser.parse(pattern, 0)
        ops = type(_re_parser.LITERAL)
        names = {_re_parser.LITERAL, _re_parser.NOT_LITERAL}
        range_op, subpattern = _re_parser.RANGE, _re_parser.SUBPATTERN
    except Exception:  # invalid (compiled elsewhere) or a changed private module
        return False

    def safe(item) -> bool:
        if isinstance(item, (int, str)) or item is None:
            return True
        if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], ops):
            op, av = item
            if op in names:
                return not (65 <= av <= 90 or av > 127)
            if op is range_op:
                return av[1] < 65 or 90 < av[0] and av[1] <= 127
            if op is subpattern and av[2] & re.IGNORECASE:
                return False
            return safe(av)
        return all(safe(x) for x in item)

    try:
        return safe(tree)
    except Exception:
        return False


def _device_literals(node: Node) -> list[str]:
    return [str(device) for inp in node.inputs if (device := inp.arg.device()) is not None]


def _compile(query: Query) -> re.Pattern[str]:
    try:
        # MULTILINE: ^ and $ are line bounds in the joined text too
        flags = re.MULTILINE | (0 if query.case_sensitive else re.IGNORECASE)
        return re.compile(query.text, flags)
    except re.error as exc:
        raise SearchError(f"invalid regular expression: {exc}") from None


def _key_matcher(fname: str, value: str, regex: bool) -> Callable[[str], bool]:
    """A test over lowercased keys."""
    if regex:
        try:
            pat = re.compile(value, re.IGNORECASE)
        except re.error as exc:
            raise SearchError(f"invalid regular expression in {fname}: {exc}") from None
        return lambda k: pat.search(k) is not None
    low = value.lower()
    if fname == "module":
        dotted = low + "."
        return lambda k: k == low or k.startswith(dotted)
    if fname == "device":
        return lambda k: k == low or k.split(":")[0] == low
    if fname == "file":
        return lambda k: _file_matches(k, low)
    return lambda k: low in k


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
