"""Issue 16 item 4 (window side): the Run panel's options come from the archive's
ranges (the same Qt-free functions the CLI uses), remembered values are clamped into
them, refusals are inline and in the window's words; the Export panel shows its
spec's warnings without blocking; the audit's default target is the CLI's.

Archives are real: the tiny toy exported by the export job with chosen ranges."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from export_cache import toy_export
from _panel_helpers import ROOT, no_leaks  # noqa: F401

from inspector.core.archive import open_archive
from inspector.core.run_ranges import DEFAULT_MAX_TOKENS, generator_ranges, run_defaults
from inspector.ui import settings as keys
from inspector.core.job_words import window_terms
from inspector.ui.panels.run import RUN_OPTIONS_KEY, RunPanel
from inspector.ui.workspace import Workspace

DEMO = ROOT / "resources" / "demo" / "toy-tiny.pt2"


def _export(folder: Path, name: str, *args: str) -> Path:
    """The toy exported by the real export child with ARGS, once per source version
    (tests/export_cache.py; `folder` is not used)."""
    return toy_export(list(args), file=name)[0]


@pytest.fixture(scope="module")
def archives(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("run-ranges")
    return {
        # batch 2:16 (so the default batch 1 does not fit), seq_len 2:32 (< 64 tokens)
        "narrow": _export(folder, "narrow.pt2", "--batch", "2:16", "--seq-len", "2:32"),
        # a static sequence length: generation (1, 2, 3... tokens) cannot run
        "static": _export(folder, "static.pt2", "--seq-len", "8:8", "--example-seq-len", "8"),
    }


def _panel(qtbot, path: Path | None = None) -> RunPanel:
    panel = RunPanel(Workspace())
    qtbot.addWidget(panel)
    if path is not None:
        panel.set_archive(str(path))
        qtbot.waitUntil(lambda: panel.ranges is not None, timeout=30000)
    return panel


def test_batch_and_tokens_come_from_the_archive(qtbot, no_leaks, archives):
    path = archives["narrow"]
    with open_archive(path) as archive:
        ranges = generator_ranges(archive)
    assert (ranges.batch.min, ranges.batch.max) == (2, 16)  # what the export was asked for
    assert ranges.seq.max == 32
    defaults = run_defaults(ranges)
    panel = _panel(qtbot, path)
    try:
        assert (panel.batch.minimum(), panel.batch.maximum()) == (2, 16)
        assert panel.batch.value() == defaults.batch == 2
        assert panel.max_tokens.maximum() == 32
        assert panel.max_tokens.value() == defaults.max_tokens == 32 < DEFAULT_MAX_TOKENS
        assert "2 to 16" in panel.batch.toolTip() and "32" in panel.max_tokens.toolTip()
        assert panel.problems() == [] and not panel.problem.isVisibleTo(panel)
        assert panel.run_button.isEnabled() == panel.has_torch
        # the spec the panel would start is the one the CLI fits from the same archive
        spec = panel.spec()
        fitted, _notes = type(spec)(file=str(path)).fit_archive()
        assert (spec.batch, spec.max_tokens) == (fitted.batch, fitted.max_tokens)
        # the demo archive (batch 1:64, seq_len 2:256): its own defaults
        panel.set_archive(str(DEMO))
        qtbot.waitUntil(lambda: panel.ranges is not None, timeout=30000)
        assert (panel.batch.minimum(), panel.batch.maximum()) == (1, 64)
        assert (panel.batch.value(), panel.max_tokens.value()) == (1, DEFAULT_MAX_TOKENS)
    finally:
        panel.shutdown()


def test_remembered_options_are_clamped_not_lost(qtbot, no_leaks, archives):
    keys.set_value(RUN_OPTIONS_KEY, json.dumps({"batch": 40, "max_tokens": 100, "repeats": 3}))
    panel = _panel(qtbot, archives["narrow"])
    try:
        assert panel.repeats.value() == 3
        assert (panel.batch.value(), panel.max_tokens.value()) == (16, 32)  # clamped
        # an archive with room again: the remembered choice, not the clamped value
        panel.set_archive(str(DEMO))
        qtbot.waitUntil(lambda: panel.ranges is not None, timeout=30000)
        assert (panel.batch.value(), panel.max_tokens.value()) == (40, 100)
        # a value the user types is their choice from then on
        panel.batch.setValue(9)
        panel.set_archive(str(archives["narrow"]))
        qtbot.waitUntil(lambda: panel.ranges is not None, timeout=30000)
        assert panel.batch.value() == 9
    finally:
        panel.shutdown()


def test_an_archive_that_cannot_run_is_refused_inline(qtbot, no_leaks, archives):
    panel = _panel(qtbot, archives["static"])
    try:
        problems = panel.problems()
        assert problems and "cannot be run" in problems[0]
        assert "fixed at 8" in problems[0]
        assert panel.problem.isVisibleTo(panel) and panel.problem.text() == "\n".join(problems)
        assert "--" not in panel.problem.text()  # no CLI flag inside the window
        assert not panel.run_button.isEnabled()
        assert panel.start_run() is False and not panel.runner.is_running()
    finally:
        panel.shutdown()


def test_job_messages_name_window_controls(qtbot, no_leaks, tmp_path):
    """A real refusal from the run job (eager mode on an archive without the toy's
    config names `--mode export`): the panel says "Mode export"."""
    bare = tmp_path / "bare.pt2"
    with zipfile.ZipFile(DEMO) as src, zipfile.ZipFile(bare, "w") as dst:
        for info in src.infolist():
            if not info.filename.endswith("extra/pt2_inspector.json"):
                dst.writestr(info, src.read(info))
    panel = _panel(qtbot, bare)
    if not panel.has_torch:
        pytest.skip("needs torch for the run job")
    try:
        panel.mode.setCurrentIndex(panel.mode.findData("eager"))
        panel.max_tokens.setValue(2)
        panel.warmup.setValue(0)
        with qtbot.waitSignal(panel.runner.finished, timeout=300_000):
            assert panel.start_run()
        text = panel.status.text()
        assert text.startswith("Run failed:") and "Mode export" in text, text
        assert "--" not in text
    finally:
        panel.shutdown()
    assert window_terms("load it only with --trust") == "load it only if you trust it"
    assert window_terms("x (--trust on the command line)") == "x"
    assert window_terms("use --batch 2 or --max-tokens 8") == "use Batch 2 or Max tokens 8"


def test_export_panel_warns_without_blocking(qtbot, no_leaks, tmp_path):
    from inspector.ui.panels.export import ExportPanel

    panel = ExportPanel(Workspace())
    qtbot.addWidget(panel)
    panel.output.setText(str(tmp_path / "out.pt2"))
    try:
        assert panel.validate() and not panel.warning.isVisibleTo(panel)
        assert panel.spec().warnings() == []
        panel.seq.set_values(3, 32, 8)  # generation starts from one token: cannot run
        warnings = panel.spec().warnings()
        assert warnings and any("seq_len" in w for w in warnings)
        assert panel.warning.isVisibleTo(panel)
        assert panel.warning.text() == "\n".join(f"Warning: {w}" for w in warnings)
        assert panel.export_button.isEnabled()  # a warning, not a refusal
        panel.seq.set_values(1, 32, 1)  # example size 1: torch specializes it
        assert any("example seq_len size 1" in w for w in panel.spec().warnings())
        assert "example seq_len size 1" in panel.warning.text()
        assert panel.export_button.isEnabled()
    finally:
        panel.shutdown()


def test_audit_default_target_is_the_clis(qtbot, no_leaks, capsys):
    """Same default, same findings: the panel's first audit and `pt2-inspector audit
    --json` on the same archive."""
    from collections import Counter

    from inspector.cli import main
    from inspector.core.audit_report import DEFAULT_TARGET
    from inspector.ui.panels.audit import AuditPanel

    ws = Workspace()
    panel = AuditPanel(ws)
    qtbot.addWidget(panel)
    try:
        assert panel.target_device() == DEFAULT_TARGET
        panel.audit(str(DEMO))
        qtbot.waitUntil(lambda: panel.report is not None, timeout=60000)
        assert panel.report.target == DEFAULT_TARGET
        main(["audit", str(DEMO), "--json"])
        cli = json.loads(capsys.readouterr().out)
        cli_findings = cli["findings"] if isinstance(cli, dict) else cli
        assert Counter(f["severity"] for f in cli_findings) == \
            Counter(f.severity for f in panel.report.findings)
    finally:
        panel.shutdown()
