"""Which lines of a big text contain a literal: a few numpy passes, no Python
loop per match.

The listing of a 400,000-node program is ~80 MB of text in ~770,000 lines.
`str.find` over it is ~40 ms before the first hit, and a Python step per hit
(find again, bisect the line) costs ~1.5 us: a common word such as "cpu"
(30,000 lines) took ~90 ms, "add" ~150 ms. Here the text is one UTF-8 buffer
viewed as uint8: the needle's rarest byte is compared against a cache-sized
chunk at a time (one vectorised pass), its other bytes then filter those few
candidates by gathers, and the surviving offsets become line numbers with one
searchsorted. A substring match in UTF-8 bytes is exactly a substring match in
the text (UTF-8 is self-synchronising), so results are those of
`needle in line` for every line.

Each distinct line is stored once: a listing repeats its stack-trace comments
("# File: ...modeling_gpt2.py:573 in forward, ...") in every layer, so the
400k-node listing's 79.5 MB hold 49.8 MB of distinct lines (420,542 of
773,302); a hit on a distinct line then stands for every line that reads so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

# bytes of text compared per pass: the pass's bool temporary stays in the L2
# cache (measured at 400k nodes: 1 MiB 25-33 ms per query, 64 KiB 33-40 ms,
# one 80 MB pass 47-59 ms)
CHUNK = 1 << 20
# every SAMPLE-th byte estimates how common each byte is (which of the needle's
# bytes to compare first); only speed depends on it, never the result
SAMPLE = 61


class LineText:
    """Lines, each distinct one once, joined by newlines into one UTF-8 buffer
    and searched for literals."""

    def __init__(self, lines: Sequence[str], lower: bool = False) -> None:
        """`lower`: search the lowercased lines (each lowercased alone: a final
        sigma lowercases by what follows it)."""
        self.count = len(lines)
        ids: dict[str, int] = {}
        which = np.fromiter((ids.setdefault(s, len(ids)) for s in lines), np.int64, len(lines))
        self.distinct: list[str] = list(ids)  # the given lines, not copies
        del ids
        self._order = self._first = None
        if len(self.distinct) < len(lines):
            # lines grouped by the distinct line they read: group d is
            # _order[_first[d]:_first[d + 1]], in listing order
            self._order = np.argsort(which, kind="stable")
            self._first = np.zeros(len(self.distinct) + 1, np.int64)
            np.cumsum(np.bincount(which, minlength=len(self.distinct)), out=self._first[1:])
        del which
        text = "\n".join(self.distinct)
        self.ascii = text.isascii()
        if lower:
            text = text.lower() if self.ascii else "\n".join([s.lower() for s in self.distinct])
        self.data = text.encode("utf-8", "surrogatepass")
        del text
        self.arr = np.frombuffer(self.data, dtype=np.uint8)
        starts = np.flatnonzero(self.arr == 10)
        if starts.size + 1 == len(self.distinct) or not self.distinct:
            starts += 1
            self.starts = np.concatenate((np.zeros(1, np.int64), starts.astype(np.int64)))
        else:  # a line holds a newline itself: offsets from each line's length
            sizes = np.fromiter((len(s.encode("utf-8", "surrogatepass")) + 1 for s in self.distinct),
                                np.int64, len(self.distinct))
            self.starts = np.concatenate((np.zeros(1, np.int64), np.cumsum(sizes)[:-1]))
        self._rank = np.bincount(self.arr[::SAMPLE], minlength=256)

    def find_lines(self, needle: str, test: Callable[[str], object] | None = None) -> list[int]:
        """Sorted indices of the lines that contain `needle` (none for an empty
        needle or one with a newline: a match never spans two lines) and, if
        `test` is given, for which test(line as given) is true (asked once per
        distinct line)."""
        if not needle or "\n" in needle or not self.count:
            return []
        found = self._lines_of(self._positions(needle.encode("utf-8", "surrogatepass")))
        if test is not None:
            distinct = self.distinct
            found = [d for d in found if test(distinct[d])]
        return self._expand(found)

    def _expand(self, found: list[int]) -> list[int]:
        """Distinct lines -> every line that reads so, in order."""
        if self._order is None or not found:
            return found
        ids = np.asarray(found, np.int64)
        lo, hi = self._first[ids], self._first[ids + 1]
        sizes = hi - lo
        if sizes.size and sizes.max() == 1:
            return np.sort(self._order[lo]).tolist()
        # positions lo..hi-1 of every group, as one index array
        ends = np.cumsum(sizes)
        idx = np.arange(ends[-1], dtype=np.int64) + np.repeat(lo - (ends - sizes), sizes)
        return np.sort(self._order[idx]).tolist()

    def _positions(self, needle: bytes) -> np.ndarray:
        """Sorted byte offsets where `needle` starts."""
        arr, m = self.arr, len(needle)
        last = arr.size - m + 1  # a match starts before this offset
        if last <= 0:
            return np.empty(0, np.int64)
        order = sorted(range(m), key=lambda j: self._rank[needle[j]])
        first, rest = order[0], [(j, needle[j]) for j in order[1:]]
        parts = []
        for s in range(0, last, CHUNK):
            e = min(s + CHUNK, last)
            hit = np.flatnonzero(arr[s + first:e + first] == needle[first])
            if not hit.size:
                continue
            hit += s
            for j, byte in rest:
                hit = hit[arr[hit + j] == byte]
                if not hit.size:
                    break
            else:
                parts.append(hit)
        if not parts:
            return np.empty(0, np.int64)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def _lines_of(self, pos: np.ndarray) -> list[int]:
        if not pos.size:
            return []
        starts = self.starts
        if pos.size <= starts.size:  # few hits: the line of each, then once each
            lines = np.searchsorted(starts, pos, side="right") - 1
            keep = np.empty(lines.size, bool)
            keep[0] = True
            np.not_equal(lines[1:], lines[:-1], out=keep[1:])
            return lines[keep].tolist()
        # more hits than lines ("e"): per line, whether a hit falls inside it
        first = np.searchsorted(pos, starts, side="left")
        bounds = np.append(first, pos.size)
        return np.flatnonzero(bounds[1:] > bounds[:-1]).tolist()
