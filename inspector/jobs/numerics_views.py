"""A node value that covers the elements of a value already compared: that comparison again.

Most of an exported transformer's view nodes (view, reshape, permute, unsqueeze, an
alias, a `_to_copy` that returns its input) make, in both runs, a tensor over
exactly the memory of an earlier node's value. Where both runs' tensors are dense
(every element of that memory once), start where the earlier ones start, and lay
their elements out alike (the same shape and strides in the two runs, as the
earlier pair did), the node pairs the same (reference, candidate) elements as the
earlier node, only reordered: max |c - r|, the sums, the dot products, NaN/Inf
counts and the tolerance verdict are the same numbers (sums up to their order). GPT-2
25M: 136 of 370 compared values, 11M of 59M elements.

The earlier pair is held by weak references only (the lockstep still frees it at
its last use); an entry whose tensors are gone, or were changed in place since (their
version counter moved), is not used.
"""

from __future__ import annotations

import weakref
from dataclasses import replace
from typing import Any

from inspector.jobs.numerics_compare import Comparison


class ComparedValues:
    """The comparisons of the dense tensors compared so far, by where they start."""

    PRUNE_AT = 512  # entries: past this, the ones whose tensors are gone are dropped

    def __init__(self, torch: Any) -> None:
        self._torch = torch
        self._seen: dict[tuple[int, int], tuple[Any, int, Any, int, Comparison]] = {}

    def _key(self, ref: Any, cand: Any) -> tuple[int, int] | None:
        """(reference address, candidate address) when the pair can be looked up or
        remembered: two plain dense tensors, laid out alike, with elements."""
        torch = self._torch
        if not (type(ref) is torch.Tensor and type(cand) is torch.Tensor):
            return None
        functorch = torch._C._functorch
        for t in (ref, cand):
            if (t.layout != torch.strided or t.is_meta or t.numel() == 0
                    or functorch.is_batchedtensor(t) or functorch.is_gradtrackingtensor(t)
                    or not _dense(t)):
                return None
        if ref.shape != cand.shape or ref.stride() != cand.stride():
            return None
        return ref.data_ptr(), cand.data_ptr()

    def lookup(self, ref: Any, cand: Any) -> Comparison | None:
        """The comparison of an earlier pair over the same elements, with this
        pair's shape, or None."""
        key = self._key(ref, cand)
        entry = self._seen.get(key) if key is not None else None
        if entry is None:
            return None
        ref_then, ref_version, cand_then, cand_version, got = entry
        r0, c0 = ref_then(), cand_then()
        if (r0 is None or c0 is None or _version(r0) != ref_version
                or _version(c0) != cand_version or r0.numel() != ref.numel()
                or r0.dtype != ref.dtype or c0.dtype != cand.dtype
                or r0.device != ref.device or c0.device != cand.device):
            return None
        return replace(got, shape=list(ref.shape), dtypes=list(got.dtypes),
                       notes=list(got.notes))

    def remember(self, ref: Any, cand: Any, got: Comparison) -> None:
        key = self._key(ref, cand)
        versions = (_version(ref), _version(cand)) if key is not None else (None, None)
        if None in versions:
            return
        if len(self._seen) >= self.PRUNE_AT:
            self._seen = {k: e for k, e in self._seen.items()
                          if e[0]() is not None and e[2]() is not None}
        self._seen[key] = (weakref.ref(ref), versions[0], weakref.ref(cand), versions[1], got)


def _dense(tensor: Any) -> bool:
    """Every element of the memory from its start to start + numel, once: in some
    order of its dimensions (length-1 ones aside), its strides are contiguous ones."""
    expected = 1
    for stride, size in sorted((st, sz) for sz, st in zip(tensor.shape, tensor.stride())
                               if sz != 1):
        if stride != expected:
            return False
        expected *= size
    return True


def _version(tensor: Any) -> int | None:
    """The tensor's in-place version counter (shared with its views), or None for
    an inference-mode tensor, which keeps none (so it is never remembered)."""
    try:
        return tensor._version
    except RuntimeError:
        return None
