"""The generator's ranges read from real archives (the bundled demo, exported by
`pt2-inspector export`), without torch: defaults, refusals, caps."""

from __future__ import annotations

import dataclasses

import pytest

from inspector.core.archive import open_archive
from inspector.core.run_ranges import (
    DEFAULT_MAX_TOKENS,
    GeneratorRanges,
    SizeRange,
    fit_max_tokens,
    generator_ranges,
    run_defaults,
    run_problems,
)
from inspector.jobs.spec import RunSpec, RunSpecError
from inspector.resources import demo_archive


@pytest.fixture(scope="module")
def demo() -> GeneratorRanges:
    with open_archive(demo_archive()) as archive:
        return generator_ranges(archive)


def test_ranges_are_the_programs_own(demo: GeneratorRanges) -> None:
    with open_archive(demo_archive()) as archive:
        dec = archive.program("decoder")
        ids = dec.graph.tensor_values[dec.user_inputs()[0].name]
        batch_sym, seq_sym = ids.sizes[0], ids.sizes[1]
        assert (demo.batch.min, demo.batch.max) == (dec.range_constraints[batch_sym].min,
                                                    dec.range_constraints[batch_sym].max)
        assert (demo.seq.min, demo.seq.max) == (dec.range_constraints[seq_sym].min,
                                                dec.range_constraints[seq_sym].max)
    assert demo.seq.runtime_min == 0  # a range from 2 lets 0 and 1 through (torch's rule)


def test_defaults_fit_the_ranges(demo: GeneratorRanges) -> None:
    d = run_defaults(demo)
    assert demo.batch.contains(d.batch) and d.max_tokens == min(DEFAULT_MAX_TOKENS, demo.seq.max)
    narrow = GeneratorRanges(SizeRange(2, 16, "s0"), SizeRange(2, 32, "s1"))
    assert run_defaults(narrow) == dataclasses.replace(run_defaults(narrow), batch=2, max_tokens=32)
    fixed = GeneratorRanges(SizeRange(4, 4, None), SizeRange(1, 8, "s1"))
    assert run_defaults(fixed).batch == 4


def test_refusals_and_caps() -> None:
    r = GeneratorRanges(SizeRange(2, 16, "s0"), SizeRange(4, 128, "s1"))
    batch, seq = run_problems(r, 1)
    assert batch.startswith("batch 1 is outside the archive's batch range 2:16")
    assert "generation starts from one token" in seq
    assert fit_max_tokens(r, 200) == (128, "max tokens 200 capped at 128: the archive's "
                                           "seq_len range ends there")
    assert fit_max_tokens(r, 20) == (20, None)
    assert run_problems(GeneratorRanges(None, None), 3) == []  # not a toy archive: no opinion


def test_run_spec_takes_defaults_from_the_archive() -> None:
    spec, notes = RunSpec(file=str(demo_archive())).fit_archive()
    assert spec.batch == 1 and spec.max_tokens == DEFAULT_MAX_TOKENS and notes == []
    spec, notes = RunSpec(file=str(demo_archive()), max_tokens=256).fit_archive()
    assert spec.max_tokens == 256 and notes == []  # the demo's seq_len goes to 256
    with pytest.raises(RunSpecError, match="outside the archive's batch range 1:64"):
        RunSpec(file=str(demo_archive()), batch=65).fit_archive()
    assert "--batch" not in RunSpec(file="x").to_argv()  # unset: the child decides the same way


def test_export_spec_warnings_before_exporting() -> None:
    from inspector.jobs.spec import ExportSpec

    assert ExportSpec().warnings() == []  # the defaults export and run
    (example,) = ExportSpec(example_batch=1, batch_min=1, batch_max=16).warnings()
    assert "example batch size 1" in example and "2 or more" in example
    (seq,) = ExportSpec(seq_min=4, seq_max=128).warnings()
    assert "generation starts from one token" in seq
    assert ExportSpec(batch_min=1, batch_max=1, example_batch=1).warnings() == []  # static
