"""Fixtures of the hostile-archive suite: one real archive exported once per
session, from which tests/security/hostile_corpus.py makes the hostile cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from archive_factory import ArchiveFactory
from hostile_corpus import Base, export_base_archive


@pytest.fixture(scope="session")
def base_archive(archive_factory: ArchiveFactory) -> Path:
    return export_base_archive(archive_factory)


@pytest.fixture(scope="session")
def base(base_archive: Path) -> Base:
    return Base.load(base_archive)
