"""core/run_layers.py on results of the real check and profile jobs (a child each) over
a real small archive: the layers carry exactly the job's nodes, times and messages."""

from __future__ import annotations

import pytest
from archive_factory import ArchiveFactory

from inspector.core.annotations import ERROR, resolve
from inspector.core.archive import open_archive
from inspector.core.listing import render_listing
from inspector.core.run_layers import (
    CHECK_SOURCE,
    PROFILE_SOURCE,
    check_layers,
    failure_rows,
    ms_text,
    node_rows,
    profile_layers,
)


def _job(job: str, *args: str) -> dict:
    from inspector.jobs.runner import run_job

    result = run_job(job, list(args))
    result.pop("event", None)
    return result


@pytest.fixture(scope="module")
def listing(small_archive):
    with open_archive(small_archive) as archive:
        name = archive.program_names[0]
        program = archive.program(name)
        yield name, program, render_listing(program)


def test_profile_layer_times_every_node_the_job_timed(small_archive, listing):
    name, program, lst = listing
    result = _job("profile", str(small_archive), "--device", "cpu", "--warmup", "0",
                  "--repeats", "1")
    nodes = result["programs"][0]["nodes"]
    layer = profile_layers(result)[name]
    assert layer.source == PROFILE_SOURCE
    assert set(layer.heat) == {n["name"] for n in nodes}
    for n in nodes:
        assert layer.heat[n["name"]].value == n["ms"]
        assert layer.heat[n["name"]].text == ms_text(n["ms"])
    assert {m["path"]: m["ms"] for m in result["programs"][0]["modules"]} == \
        {p: h.value for p, h in layer.modules.items()}
    # every timed node lands on its listing line (the job's 1-based line)
    out = resolve([layer], program, lst)
    for n in nodes:
        assert n["line"] - 1 in out.heat, n["name"]
    rows = node_rows(result)
    assert [r.name for r in rows] == [n["name"] for n in nodes]
    assert sum(r.share for r in rows) == pytest.approx(1.0, abs=1e-3)


@pytest.fixture(scope="module")
def baked_archive(archive_factory: ArchiveFactory):
    """A model whose `arange` export bakes to cpu, added to the input: fails on cuda."""
    import torch

    class Baked(torch.nn.Module):
        def forward(self, x):
            return x + torch.arange(x.shape[1], device="cpu")

    return archive_factory.export("run_layers/baked", Baked(), (torch.randn(2, 5),))


def test_check_layer_marks_each_failure_with_torchs_message(baked_archive):
    result = _job("check", str(baked_archive), "--device", "cuda")
    name = result["programs"][0]["name"]
    failures = result["programs"][0]["failures"]
    assert failures, "x (cuda) + arange (baked cpu) must fail on cuda"
    layer = check_layers(result)[name]
    assert layer.source == CHECK_SOURCE and not layer.heat
    for f in failures:
        assert layer.marks[f["node"]].severity == ERROR
        assert f["message"] in layer.marks[f["node"]].tooltip
    assert [(r.node, r.message) for r in failure_rows(result)] == \
        [(f["node"], f["message"]) for f in failures] + \
        [(u["node"], u["message"]) for u in result["programs"][0].get("unchecked") or []]


def test_ms_text_fits_the_heat_column():
    for ms in (0.0004, 0.0123, 0.5, 1.234, 12.34, 123.4, 98765.4):
        assert len(ms_text(ms)) <= 10
    assert ms_text(1.234) == "1.23 ms" and ms_text(0.0123) == "0.012 ms"
