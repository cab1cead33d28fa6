"""Byte counts as people read them, in binary units (as allocators and GPU specs
count). Apart from memory_plan (which imports numpy) so that a view can write sizes
without loading the planner."""

from __future__ import annotations


def format_bytes(n: float | int | None) -> str:
    """1536 -> '1.50 KiB'."""
    if n is None:
        return "?"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.2f} {unit}"
        value /= 1024
    return f"{value:.2f} TiB"
