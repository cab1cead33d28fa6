"""ExportSpec.validate names the field it refuses (the Export panel marks that spin
box from it, never from the message's words)."""

from __future__ import annotations

import pytest

from inspector.jobs.spec import ExportSpec, ExportSpecError


@pytest.mark.parametrize("changes, field", [
    ({"batch_min": -1}, "batch.min"),
    ({"seq_max": 300}, "seq_len.max"),
    ({"batch_max": 1 << 21}, "batch.max"),
    ({"seq_min": 10, "seq_max": 4}, "seq_len"),
    ({"example_batch": 65}, "batch.example"),
    ({"example_seq": 1}, "seq_len.example"),
    ({"preset": "huge"}, "preset"),
    ({"seed": -1}, "seed"),
    ({"device": "tpu"}, "device"),
])
def test_validate_names_the_field(changes, field):
    with pytest.raises(ExportSpecError) as info:
        ExportSpec(**changes).validate()
    assert info.value.field == field


def test_a_valid_spec_passes_and_a_plain_error_has_no_field():
    assert ExportSpec().validate() == ExportSpec()
    assert ExportSpecError("choose an output file (.pt2)").field is None
