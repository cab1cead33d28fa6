"""The parent side stays light: the CLI and the window import these without torch."""

from __future__ import annotations

import io
import subprocess
import sys

from inspector.commands.export import ProgressBar
from inspector.jobs.runner import child_env, job_argv
from inspector.jobs.spec import RunSpec, RunSpecError


def test_parent_modules_do_not_import_torch():
    code = (
        "import sys\n"
        "import inspector.jobs.export, inspector.jobs.spec, inspector.jobs.runner\n"
        "import inspector.jobs.load, inspector.jobs.timed_generation, inspector.jobs.devices\n"
        "import inspector.commands.export, inspector.commands.run, inspector.commands.devices\n"
        "heavy = [m for m in ('torch', 'transformers', 'PySide6') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=child_env(), timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_progress_bar_draws_only_on_a_terminal():
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    tty, pipe = Tty(), io.StringIO()
    for stream in (tty, pipe):
        bar = ProgressBar(stream, width=10)
        bar.update("export decoder", 0.5)
        bar.close()
    assert tty.getvalue() == "\r[#####-----]  50% export decoder      \n"
    assert pipe.getvalue() == ""


def test_run_spec_argv_and_checks():
    spec = RunSpec(file="a.pt2", device="cuda:1", mode="eager", compile=True,
                   precision="bf16", batch=4, max_tokens=32, warmup=2, repeats=3, trust=True)
    argv = job_argv("run", spec.to_argv())
    assert argv[1:4] == ["-m", "inspector.jobs", "run"]
    assert argv[4] == "a.pt2" and "--compile" in argv and "--trust" in argv
    for bad, message in ((RunSpec(file="a", device="tpu"), "bad device 'tpu'"),
                         (RunSpec(file="a", max_tokens=300), "max tokens 300 is out of range"),
                         (RunSpec(file="a", batch=0), "batch 0 is out of range")):
        try:
            bad.validate()
        except RunSpecError as exc:
            assert message in str(exc)
        else:
            raise AssertionError(f"{bad} passed validation")
