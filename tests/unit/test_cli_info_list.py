"""`info` and `list` as a user runs them: real processes, real archives."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "inspector", *args],
                          capture_output=True, text=True, timeout=120)


def test_info_json(small_archive: Path) -> None:
    proc = cli("info", str(small_archive), "--json")
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info["path"] == str(small_archive)
    assert info["archive_version"] == 0
    (program,) = info["programs"]
    assert program["name"] == "model"
    assert program["schema_version"].startswith("8.")
    assert program["torch_version"].startswith("2.")
    assert program["nodes"] > 5
    assert [i["name"] for i in program["inputs"]] == ["x", "y"]
    assert program["inputs"][1]["type"] == "f32[2, 3]"
    (sym,) = program["range_constraints"]
    assert program["range_constraints"][sym] == {"min": 2, "max": 64}
    by_path = {r["path"]: r for r in info["records"]}
    assert by_path["data/sample_inputs/model.pt"]["risk"] is True
    assert by_path["models/model.json"]["kind"] == "program"
    assert set(by_path["models/model.json"]) >= {"path", "size", "kind", "risk"}


def test_info_text_names_risky_records(small_archive: Path) -> None:
    proc = cli("info", str(small_archive))
    assert proc.returncode == 0
    assert "program model:" in proc.stdout
    assert "data/sample_inputs/model.pt" in proc.stdout


def test_list_matches_torch_print_readable(small_archive: Path) -> None:
    import torch

    proc = cli("list", str(small_archive))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "# program: model"
    ours = [ln.strip() for ln in lines[1:] if ln.strip()]
    theirs = [ln.split(";  ")[0].strip()
              for ln in torch.export.load(small_archive).graph_module.print_readable(
                  print_output=False).splitlines() if ln.strip()]
    assert ours == theirs


def test_list_one_program(small_archive: Path) -> None:
    proc = cli("list", str(small_archive), "--program", "model")
    assert proc.returncode == 0
    assert proc.stdout.startswith("class GraphModule(torch.nn.Module):")


@pytest.mark.parametrize("command", ["info", "list"])
def test_bad_input_is_one_error_line(tmp_path: Path, command: str) -> None:
    bad = tmp_path / "bad.pt2"
    bad.write_text("<html>not an archive</html>")
    proc = cli(command, str(bad))
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1
    assert "Traceback" not in proc.stderr


def test_unknown_program_and_missing_file(small_archive: Path, tmp_path: Path) -> None:
    proc = cli("list", str(small_archive), "--program", "nope")
    assert proc.returncode == 2 and "no program named 'nope'" in proc.stderr
    proc = cli("info", str(tmp_path / "missing.pt2"))
    assert proc.returncode == 2 and "does not exist" in proc.stderr


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pt2"
    bad.write_text("nope")
    proc = cli("info", str(bad), "--debug")
    assert proc.returncode == 2 and "Traceback" in proc.stderr


def test_info_and_list_never_import_torch(small_archive: Path) -> None:
    code = (
        "import sys, io, contextlib\n"
        "from inspector.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main(['info', {str(small_archive)!r}]) == 0\n"
        f"    assert main(['list', {str(small_archive)!r}]) == 0\n"
        "print('torch' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


def test_terminal_controls_from_the_file_are_escaped() -> None:
    """What a file says reaches stdout without live escape sequences; JSON keeps
    the data (as \\u escapes)."""
    import io
    import json as jsonlib
    from contextlib import redirect_stdout

    from inspector import cli

    class Echo:
        NAME, HELP = "echo-test", ""

        @staticmethod
        def add_arguments(parser) -> None:
            parser.add_argument("--json", action="store_true")

        @staticmethod
        def run(args) -> int:
            text = "prog\x1b]0;pwned\x07\x9b"
            print(jsonlib.dumps({"name": text}, ensure_ascii=False) if args.json else text)
            return 0

    original = cli.COMMANDS
    cli.COMMANDS = (*original, Echo)
    try:
        out = io.StringIO()
        with redirect_stdout(out):
            assert cli.main(["echo-test"]) == 0
        assert "\x1b" not in out.getvalue() and "\\x1b]0;pwned\\x07\\x9b" in out.getvalue()
        out = io.StringIO()
        with redirect_stdout(out):
            assert cli.main(["echo-test", "--json"]) == 0
        assert jsonlib.loads(out.getvalue()) == {"name": "prog\x1b]0;pwned\x07\x9b"}
        assert "\x1b" not in out.getvalue()
    finally:
        cli.COMMANDS = original
