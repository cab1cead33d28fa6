"""How much a zip record may expand: the one zip-bomb rule, judged by the sizes
the zip directory declares, before a single byte is inflated.

torch writes every record stored (uncompressed), and deflated real weights
shrink little (float data compresses ~1.1x); deflate's best case is ~1032x, which
only a run of one repeated byte reaches. So a compressed record over 1 MiB that
declares more than 200 times its compressed size is a bomb, not a torch archive:
a 5.7 MB file declaring a 5 GB weight costs a reader 26 s of CPU to stream, and
torch.export.load inflates it whole into memory. Retarget refuses such a record
before copying it, the weight reader (core/weights.py: `weights`, `report`, the
Weights panel) before reading it, and a loader that hands the archive to torch
calls `refuse_bombs` before torch opens it.

Pure Python, no Qt, no torch; sizes only (a lying header is caught by the
stream ending early or its CRC, where a reader reads at all).
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterable

from inspector.core.errors import InspectorError

BOMB_MIN_BYTES = 1024 * 1024
BOMB_RATIO = 200


class InflationError(InspectorError):
    """A record that declares far more bytes than its compressed data (a zip bomb)."""


def inflation_problem(name: str, declared: int, compressed: int, *, stored: bool) -> str | None:
    """Why a record of these sizes must not be inflated, or None when it may be."""
    if stored or declared <= BOMB_MIN_BYTES or declared <= BOMB_RATIO * max(compressed, 1):
        return None
    return (f"record {name} declares {declared:,} bytes from {compressed:,} compressed "
            f"({declared / max(compressed, 1):,.0f}x; a zip bomb, not a torch archive: torch "
            f"stores records uncompressed, real data shrinks little, and over {BOMB_RATIO}x "
            "is refused before inflating)")


def zipinfo_problem(info: zipfile.ZipInfo, name: str | None = None) -> str | None:
    return inflation_problem(name or info.filename, info.file_size, info.compress_size,
                             stored=info.compress_type == zipfile.ZIP_STORED)


def refuse_bombs(infos: Iterable[zipfile.ZipInfo], error: type[Exception] = InflationError) -> None:
    """Raise `error` naming the first bomb among `infos` (e.g. an archive's
    weight and constant records, before torch.export.load reads them)."""
    for info in infos:
        problem = zipinfo_problem(info)
        if problem is not None:
            raise error(problem)
