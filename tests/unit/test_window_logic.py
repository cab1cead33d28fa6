"""The window's Qt-free logic, in core (issue 29): what the Run, Profile, compare and
device widgets decide, tested without a widget. Each function here was a method or
helper inside inspector/ui/ before."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from pygments.token import Comment, Keyword, Name, Operator

from inspector.core.archive import open_archive
from inspector.core.device_choices import CPU, parse_devices
from inspector.core.graph_run_results import results_summary
from inspector.core.inline_diff import inline_changes
from inspector.core.inputs import plan_archive_inputs
from inspector.core.job_words import window_terms
from inspector.core.latency_series import LatencySeries
from inspector.core.line_highlight import highlight_line
from inspector.core.run_ranges import GeneratorRanges, SizeRange, run_boxes
from inspector.core.run_results import RunRecord, results_csv, results_json, run_label
from inspector.core.source_spans import python_spans
from inspector.core.token_categories import token_category
from inspector.jobs.spec import RunSpec

DEMO = Path(__file__).resolve().parents[2] / "resources" / "demo" / "toy-tiny.pt2"


def test_run_boxes_clamp_a_choice_into_the_archives_ranges() -> None:
    ranges = GeneratorRanges(SizeRange(2, 8, "batch"), SizeRange(2, 16, "seq_len"))
    batch, tokens = run_boxes(ranges, 4096, 256)
    assert (batch.low, batch.high, tokens.low, tokens.high) == (2, 8, 1, 16)
    assert batch.clamp(None) == 2  # the default 1 moved into 2:8
    assert batch.clamp(100) == 8 and batch.clamp(0) == 2 and batch.clamp(5) == 5
    assert tokens.clamp(None) == 16 and tokens.clamp(64) == 16
    assert "accepts 2 to 8" in batch.tip and "at most 16" in tokens.tip
    fixed, _ = run_boxes(GeneratorRanges(SizeRange(3, 3, None), None), 4096, 256)
    assert (fixed.low, fixed.high) == (3, 3) and "fixed at 3" in fixed.tip
    unknown, free = run_boxes(None, 4096, 256)  # ranges not read yet: the job's limits
    assert (unknown.low, unknown.high, free.high, unknown.clamp(None)) == (1, 4096, 256, 1)


def _record() -> RunRecord:
    spec = RunSpec(file="a.pt2", device="cpu", mode="export", compile=True,
                   precision="fp32", batch=2, max_tokens=3, trust=True)
    series = LatencySeries(run_label(spec), "#000000")
    rec = RunRecord(spec, series, result={"tokens": 3})
    for step, ms in enumerate((1.0, 2.5, 4.0)):
        series.append(ms)
        rec.repeats.append(0)
        rec.steps.append(step)
    return rec


def test_results_files_hold_every_token_and_no_trust() -> None:
    rec = _record()
    assert rec.label == "export + compile, fp32, cpu, batch 2"
    rows = list(csv.DictReader(io.StringIO(results_csv([rec]).decode())))
    assert [r["ms"] for r in rows] == ["1.0000", "2.5000", "4.0000"]
    assert rows[0]["compile"] == "1" and rows[2]["step"] == "2" and rows[0]["run"] == "1"
    doc = json.loads(results_json([rec]))
    assert doc[0]["per_token_ms"] == [1.0, 2.5, 4.0] and doc[0]["result"] == {"tokens": 3}
    assert "trust" not in doc[0]["options"] and doc[0]["options"]["batch"] == 2


def test_latency_series_grows_past_its_buffer() -> None:
    s = LatencySeries("x", "#000")
    for i in range(3000):
        s.append(float(i % 7))
    assert s.n == 3000 and s.peak == 6.0 and len(s.values()) == 3000
    assert s.percentiles()[0] == 3.0
    assert s != LatencySeries("x", "#000")  # a run is itself, not its samples


def test_window_terms_name_controls() -> None:
    assert window_terms("load it only with --trust") == "load it only if you trust it"
    assert window_terms("use --batch 2 or --max-tokens 8") == "use Batch 2 or Max tokens 8"


def test_inline_changes_mark_whole_words() -> None:
    a, b = inline_changes("x = arange(4, device='cpu')", "x = arange(4, device='cuda')")
    assert a == [(22, 25)] and b == [(22, 26)]
    assert inline_changes("same", "same") == ([], [])


def test_parse_devices_labels_and_cpu_first() -> None:
    got = parse_devices({"devices": [{"id": "cuda:0", "name": "NVIDIA H200",
                                      "memory_bytes": 141_000_000_000}, {"id": 3}, "junk"]})
    assert got[0] == CPU and got[1].label == "cuda:0 - NVIDIA H200 (141 GB)" and len(got) == 2


def test_results_summary_says_what_failed_where() -> None:
    check = {"device": "cuda", "programs": [{"name": "decoder", "ok": False,
                                             "failures": [{}, {}]}, {"name": "encoder", "ok": True}]}
    text = results_summary(check, None)
    assert text == "Check on cuda: decoder: 2 nodes would fail; encoder runs there"
    assert results_summary(None, None) == "Check or Profile to see results here."
    prof = {"device": "cpu", "repeats": 3, "programs": [{"name": "encoder", "forward_ms": 2.0,
                                                          "warning": "noisy"}]}
    assert "Profile  encoder on cpu: forward" in results_summary(None, prof)
    assert results_summary(None, prof).endswith("Warning  noisy")


def test_plan_archive_inputs_reads_the_demo() -> None:
    with open_archive(DEMO) as archive:
        plans = plan_archive_inputs(archive, ["encoder"], ("s99=5",), ())
    assert [i.shape for i in plans["encoder"].inputs] == [(5, 3, 224, 224)]
    assert plans["encoder"].symbols == {"s99": 5}


def test_one_token_map_for_every_highlighter() -> None:
    assert token_category(Comment.Preproc) == "builtin"  # C++ #include
    assert token_category(Keyword.Type) == "annotation" and token_category(Keyword) == "keyword"
    assert token_category(Name.Function) == "function"
    assert token_category(Name.Function, function="target") == "target"
    assert token_category(Operator) == "operator" and token_category(Name) is None
    # the listing colours op targets as "target", through the same map
    cats = {cat for _s, _e, cat in highlight_line("x = torch.ops.aten.add.Tensor(a, b)")}
    assert "target" in cats and "function" not in cats
    # Python sources: a multi-line string is a string on each of its lines
    spans = python_spans('"""doc\nstring"""\ndef f(x):\n    return x  # c\n')
    assert spans[1] == [(0, 9, "string")]
    assert ("function" in {c for *_, c in spans[2]}) and spans[3][-1][2] == "comment"


def test_shapes_summary_counts_inputs_dims_and_symbols() -> None:
    from inspector.core.shapes import archive_shapes, shapes_summary

    with open_archive(DEMO) as archive:
        lines = {ps.name: shapes_summary(ps) for ps in archive_shapes(archive)}
    assert lines == {"decoder": "decoder: 2 inputs · 3 dynamic dims · 2 symbols",
                     "encoder": "encoder: 1 input · 1 dynamic dim · 1 symbol"}
