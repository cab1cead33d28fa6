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
