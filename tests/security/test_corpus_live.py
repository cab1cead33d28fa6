"""The corpus's payloads are live: what torch would do with them does run them.

Without this, "the marker never appears" could pass because a payload is inert.
Each test hands a payload to the loader torch uses for that record and checks
that the marker appears (payloads only create a file in the test's temp folder).
"""

from __future__ import annotations

import ctypes
import io
import pickle
from pathlib import Path

import pytest

from hostile_corpus import (
    SAMPLE_INPUTS,
    Base,
    by_name,
    plain_pickle,
    shared_library,
    shell_touch,
    torch_pickle,
)


def test_pickles_run_when_unpickled(tmp_path: Path) -> None:
    import torch

    marker = tmp_path / "MARKER"
    torch.load(io.BytesIO(torch_pickle(marker)), weights_only=False)  # use_pickle weights/constants
    assert marker.exists()
    marker.unlink()
    pickle.loads(plain_pickle(marker))  # opaque_obj_* (pickle.loads)
    assert marker.exists()


def test_torch_export_load_runs_the_sample_inputs_payload(base: Base, tmp_path: Path) -> None:
    import torch

    case = by_name("pickle-sample-inputs")
    path, marker = case.make(base, tmp_path)
    assert SAMPLE_INPUTS in case.risky
    try:
        torch.export.load(path)
    except Exception:  # the payload is not a valid sample-inputs tuple: it ran first
        pass
    assert marker.exists(), "torch.export.load should have run the sample-inputs pickle"


def test_shared_library_runs_when_loaded(tmp_path: Path) -> None:
    marker = tmp_path / "MARKER"
    data = shared_library(marker, tmp_path)
    if not data.startswith(b"\x7fELF") or len(data) < 1000:
        pytest.skip("no C compiler: the .so case uses an inert stand-in")
    lib = tmp_path / "payload_copy.so"
    lib.write_bytes(data)
    ctypes.CDLL(str(lib))  # what the AOTInductor loader does
    assert marker.exists()


def test_shape_strings_run_when_sympified(tmp_path: Path) -> None:
    import sympy

    marker = tmp_path / "MARKER"
    try:
        sympy.sympify(shell_touch(marker))  # what torch does with expr_str / range keys
    except Exception:
        pass
    assert marker.exists()


# --- the reader cases (issue 18): torch runs what a zipfile reader did not vet -------

def _export_load(path: Path) -> None:
    import torch

    try:
        torch.export.load(path)
    except Exception:  # the payload is not a valid constant: it ran first
        pass


@pytest.mark.parametrize("name", ["reader-case-variant-opaque-record",
                                  "reader-case-variant-config",
                                  "reader-bytes-before-zip-two-directories"])
def test_torch_export_load_runs_the_reader_payloads(name: str, base: Base, tmp_path: Path) -> None:
    path, marker = by_name(name).make(base, tmp_path)
    _export_load(path)
    assert marker.exists(), f"{name}: torch.export.load should have run the hidden pickle"


def test_torch_reads_the_first_entrys_folder(base: Base, tmp_path: Path) -> None:
    """torch.export.load itself refuses to list such a file, but its reader (what a
    loader reading records by name uses, as load.py does) reads the hidden copy:
    the config that marks `const` a pickle, and the pickle, which runs."""
    import torch
    from torch.export.pt2_archive._package import PT2ArchiveReader

    from hostile_corpus import CONSTANTS_CONFIG

    path, marker = by_name("reader-second-top-folder-first").make(base, tmp_path)
    reader = PT2ArchiveReader(str(path))
    config = reader.read_string(CONSTANTS_CONFIG)
    assert '"use_pickle":true' in config.replace(" ", "")
    torch.load(io.BytesIO(reader.read_bytes("data/constants/tensor_0")), weights_only=False)
    assert marker.exists()
