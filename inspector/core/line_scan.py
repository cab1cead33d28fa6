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

from collections.abc import Sequence
from itertools import chain

import numpy as np

# bytes of text compared per pass: the pass's bool temporary stays in the L2
# cache (measured at 400k nodes: 1 MiB 25-33 ms per query, 64 KiB 33-40 ms,
# one 80 MB pass 47-59 ms)
CHUNK = 1 << 20
# every SAMPLE-th byte estimates how common each byte is (which of the needle's
# bytes to compare first); only speed depends on it, never the result
SAMPLE = 61
# a rarest byte more common than 1 in DENSE bytes ("_" or a digit in node names)
# leaves too many candidates to gather one by one: the pass compares the
# second rarest byte too (name:add_ 8.5 -> 4.4 ms over the 400k node names)
DENSE = 64


class LineText:
    """Lines, each distinct one once, joined by newlines into one UTF-8 buffer
    and searched for literals."""

    def __init__(self, lines: Sequence[str], lower: bool = False, dedupe: bool = True) -> None:
        """`lower`: search the lowercased lines (each lowercased alone: a final
        sigma lowercases by what follows it). `dedupe=False` for lines known to
        repeat little (a field's keys): each is then stored as it comes."""
        self.count = len(lines)
        # C-level loops only (0.4 s at 770,000 lines, most of it hashing them):
        # each line's first occurrence, the distinct lines are those that are it
        n = len(lines)
        first = dict(zip(reversed(lines), range(n - 1, -1, -1))) if dedupe else {}
        self._readers: Groups | None = None  # the lines that read each distinct line
        if not dedupe or len(first) == n:
            self.distinct: list[str] = list(lines)
        else:
            which = np.fromiter(map(first.__getitem__, lines), np.int64, n)
            kept = np.flatnonzero(which == np.arange(n))
            self.distinct = list(map(lines.__getitem__, kept.tolist()))  # not copies
            number = np.empty(n, np.int64)
            number[kept] = np.arange(kept.size)
            self._readers = Groups.of_labels(number[which], kept.size)
            del which, number
        del first
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

    def find_lines(self, needle: str) -> list[int]:
        """Sorted indices of the lines that contain `needle` (none for an empty
        needle or one with a newline: a match never spans two lines)."""
        return self.expand(self.find_distinct(needle))

    def find_distinct(self, needle: str) -> list[int]:
        """As find_lines, as indices into `distinct`: to test each distinct line
        further before `expand`."""
        if not needle or "\n" in needle or not self.count:
            return []
        return self._lines_of(self._positions(needle.encode("utf-8", "surrogatepass")))

    def expand(self, found: list[int]) -> list[int]:
        """Sorted indices into `distinct` -> every line that reads so, in order."""
        if self._readers is None or not found:
            return found
        return self._readers.union(found, disjoint=True)

    def _positions(self, needle: bytes) -> np.ndarray:
        """Sorted byte offsets where `needle` starts."""
        arr, m = self.arr, len(needle)
        last = arr.size - m + 1  # a match starts before this offset
        if last <= 0:
            return np.empty(0, np.int64)
        rank = self._rank
        order = sorted(range(m), key=lambda j: rank[needle[j]])
        pair = m > 1 and rank[needle[order[0]]] * DENSE > max(int(rank.sum()), 1)
        one, two = order[0], order[1] if pair else -1
        rest = [(j, needle[j]) for j in order[2 if pair else 1:]]
        eq = np.empty(min(CHUNK, last), bool)
        eq2 = np.empty(eq.size, bool) if pair else eq
        parts = []
        for s in range(0, last, CHUNK):
            e = min(s + CHUNK, last)
            mask = eq[:e - s]
            np.equal(arr[s + one:e + one], needle[one], out=mask)
            if pair:
                np.equal(arr[s + two:e + two], needle[two], out=eq2[:e - s])
                mask &= eq2[:e - s]
            hit = np.flatnonzero(mask)
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


class Groups:
    """Lists of ints (a key's listing lines) as one array: the union of many
    lists in a few numpy calls, where a set over 30,000 lists took ~30 ms."""

    def __init__(self, flat: np.ndarray, first: np.ndarray) -> None:
        self.flat, self.first = flat, first  # group g is flat[first[g]:first[g + 1]]

    @classmethod
    def of_lists(cls, lists: Sequence[Sequence[int]]) -> Groups:
        first = np.zeros(len(lists) + 1, np.int64)
        np.cumsum(np.fromiter(map(len, lists), np.int64, len(lists)), out=first[1:])
        flat = np.fromiter(chain.from_iterable(lists), np.int64, int(first[-1]))
        return cls(flat, first)

    @classmethod
    def of_labels(cls, label: np.ndarray, groups: int) -> Groups:
        """Group g: the indices i with label[i] == g, in order."""
        first = np.zeros(groups + 1, np.int64)
        np.cumsum(np.bincount(label, minlength=groups), out=first[1:])
        return cls(np.argsort(label, kind="stable"), first)

    def union(self, groups: Sequence[int], disjoint: bool = False) -> list[int]:
        """The sorted members of these groups, each once (`disjoint`: no member
        is in two groups, so sorting is enough)."""
        if not len(groups):
            return []
        ids = np.asarray(groups, np.int64)
        lo, hi = self.first[ids], self.first[ids + 1]
        sizes = hi - lo
        if int(sizes.max(initial=0)) <= 1:  # one member each (a name's line)
            members = self.flat[lo[sizes > 0]]
        else:  # offsets lo..hi-1 of every group, as one index array
            ends = np.cumsum(sizes)
            members = self.flat[np.arange(int(ends[-1]), dtype=np.int64)
                                + np.repeat(lo - (ends - sizes), sizes)]
        return (np.sort(members) if disjoint else np.unique(members)).tolist()
