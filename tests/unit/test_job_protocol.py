"""The parent-side event stream both job parents use (jobs/protocol.py EventStream),
fed real bytes: split lines, garbage, the held error event, the stderr tail, codes;
and the CLI parent (jobs/runner.run_job) against the real `python -m inspector.jobs`."""

from __future__ import annotations

import json

import pytest

from inspector.jobs import protocol as p
from inspector.jobs.runner import JobError, run_job


def _line(**event) -> bytes:
    return (json.dumps(event) + "\n").encode()


def test_lines_split_across_reads_join():
    s = p.EventStream("export")
    data = _line(event="progress", stage="save", fraction=0.5) + _line(event="result", ok=1)
    out = []
    for i in range(0, len(data), 7):  # 7-byte reads, as a pipe may deliver them
        out += s.feed(data[i:i + 7])
    assert [e["event"] for e in out] == ["progress", "result"]
    assert s.terminal and s.finish(0) is None


def test_garbage_is_a_warning_and_a_last_line_without_newline_counts():
    s = p.EventStream()
    out = s.feed(b"not json\n" + _line(event="log", level="info", message="hi")[:-1])
    assert out[0]["event"] == "log" and out[0]["level"] == "warning"
    assert "not a JSON event" in out[0]["message"]
    assert s.flush() == [{"event": "log", "level": "info", "message": "hi"}]


def test_error_event_keeps_its_code_and_gets_the_stderr_tail():
    s = p.EventStream("run")
    s.stderr.feed(b"x" * (p.STDERR_KEEP_BYTES * 3))
    s.stderr.feed(b"\ntorch: CUDA out of memory\n")
    s.feed(_line(event="error", message="out of memory on cuda:0", details="trace",
                 code="oom"))
    failure = s.finish(1)
    assert failure == p.JobFailure("out of memory on cuda:0", failure.details, "oom", 1)
    assert failure.details.startswith("trace\n\n--- stderr ---\n")
    assert failure.details.endswith("torch: CUDA out of memory")
    assert len(s.stderr.text()) <= p.STDERR_KEEP_BYTES


def test_unknown_codes_and_crashes():
    s = p.EventStream("run")
    s.feed(_line(event="error", message="m", details="", code="made-up"))
    assert s.finish(1).code == p.FAILED
    crashed = p.EventStream("run")
    crashed.stderr.feed(b"Segmentation fault\n")
    f = crashed.finish(-11, crashed=True)
    assert f.code == p.CRASHED and f.exit_code == -11 and "Segmentation fault" in f.details
    assert "the run job ended without a result" in f.message


def test_error_codes_of_exceptions():
    from inspector.core.errors import ArchiveError, InspectorError
    from inspector.jobs.load import UntrustedArchiveError
    from inspector.jobs.spec import ExportSpecError

    assert p.error_code(UntrustedArchiveError("would run code", ["x.so"])) == p.UNTRUSTED
    assert p.error_code(ExportSpecError("bad range")) == p.SPEC
    assert p.error_code(ArchiveError("bad zip")) == p.ARCHIVE
    assert p.error_code(InspectorError("other")) == p.FAILED
    assert p.error_code(KeyError("bug")) == p.INTERNAL

    class Coded(InspectorError):
        code = p.DEVICE

    assert p.error_code(Coded("no such device")) == p.DEVICE


def test_cli_parent_raises_a_coded_job_error():
    with pytest.raises(JobError, match="usage: python -m inspector.jobs JOB") as info:
        run_job("no-such-job")
    assert info.value.code == p.USAGE and info.value.exit_code == 1

