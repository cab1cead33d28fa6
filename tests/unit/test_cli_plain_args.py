"""A command line of positionals only (`list FILE`) is parsed without argparse
(inspector/commands/plain.py, issue 17): the namespace must be the one argparse
gives, for every command; anything else must still reach argparse, with its
help and its errors; and `list` must print the same bytes either way, on real
archives."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from fidelity_cases import session_corpus
from inspector import cli
from inspector.commands import COMMANDS
from inspector.commands.parsers import command_parser
from inspector.commands.plain import plain_args

# words a file name may be (argparse takes each as a positional)
WORDS = ("model.pt2", "", "with space.pt2", "x-y=z", "ünï.pt2", "@args", "-", "a--b")


def _positionals(command) -> int:
    parser = command_parser(command)
    return sum(1 for a in parser._actions if not a.option_strings)


def _argparse(command, words: list[str]) -> dict | None:
    """What argparse makes of `words`, or None where it refuses them."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            return vars(command_parser(command).parse_args(words))
    except SystemExit:
        return None


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.NAME)
def test_plain_namespace_is_argparses(command) -> None:
    n = _positionals(command)
    for word in WORDS:
        if word.startswith("-"):
            continue  # argparse's alone (test below)
        words = [word] * n
        plain = plain_args(command, words)
        expected = _argparse(command, words)
        if plain is not None:
            # same names, same values, and defaults of the same types (node's --map [])
            assert vars(plain) == expected, (command.NAME, words)
            parser = command_parser(command)
            for action in parser._actions:
                if action.option_strings and action.dest in vars(plain):
                    assert type(getattr(plain, action.dest)) is type(action.default)


def test_plain_covers_the_file_commands() -> None:
    """The commands people type with just a file take the fast path; those with
    a required option (export, retarget, check, profile, report) do not."""
    by_name = {c.NAME: c for c in COMMANDS}
    for name in ("list", "info", "shapes", "weights", "node", "diff", "devices", "run"):
        command = by_name[name]
        assert plain_args(command, ["f.pt2"] * _positionals(command)) is not None, name
    for name in ("export", "retarget", "check", "profile", "report"):
        command = by_name[name]
        words = ["f.pt2"] * _positionals(command)
        assert plain_args(command, words) is None, name
        assert _argparse(command, words) is None, name  # argparse: a required option


def test_list_namespace_names_every_option() -> None:
    (command,) = [c for c in COMMANDS if c.NAME == "list"]
    assert vars(plain_args(command, ["f.pt2"])) == {
        "debug": False, "file": "f.pt2", "program": None, "as_torch": None}


@pytest.mark.parametrize("words", [
    [], ["a.pt2", "b.pt2"], ["-h"], ["--help"], ["--program", "x", "a.pt2"],
    ["a.pt2", "--debug"], ["--", "a.pt2"], ["-"], ["-1"], ["--as-torch=2.5", "a.pt2"],
])
def test_anything_else_goes_to_argparse(words: list[str]) -> None:
    (command,) = [c for c in COMMANDS if c.NAME == "list"]
    assert plain_args(command, words) is None


class _Declares:
    """A command whose add_arguments uses what plain.py does not reproduce."""

    NAME, HELP = "declares-test", ""

    def __init__(self, **kwargs) -> None:
        self.kwargs = kwargs

    def add_arguments(self, parser) -> None:
        parser.add_argument("file")
        kind = self.kwargs.get("kind")
        if kind == "group":
            parser.add_mutually_exclusive_group().add_argument("--a", action="store_true")
        elif kind == "set_defaults":
            parser.set_defaults(extra=1)
        elif kind == "attribute":
            parser.epilog = "more"
        else:
            parser.add_argument("--opt", **self.kwargs)


@pytest.mark.parametrize("kwargs", [
    {"kind": "group"}, {"kind": "set_defaults"}, {"kind": "attribute"},
    {"required": True}, {"type": int, "default": "3"}, {"nargs": "?"},
    {"action": "count"}, {"action": "store_const", "const": 1}, {"default": "==SUPPRESS=="},
])
def test_what_is_not_reproduced_goes_to_argparse(kwargs: dict) -> None:
    assert plain_args(_Declares(**kwargs), ["f.pt2"]) is None


@pytest.mark.parametrize("kwargs", [
    {}, {"default": "x"}, {"type": int, "default": 3}, {"choices": ["a", "b"], "default": "a"},
    {"action": "store_true"}, {"action": "store_false"}, {"action": "append", "default": []},
    {"dest": "other"}, {"metavar": "M", "help": "h"},
])
def test_what_is_reproduced_matches_argparse(kwargs: dict) -> None:
    command = _Declares(**kwargs)
    plain = plain_args(command, ["f.pt2"])
    assert plain is not None and vars(plain) == _argparse(command, ["f.pt2"])


def test_the_first_option_of_a_destination_sets_its_default() -> None:
    class Pair:
        NAME, HELP = "pair-test", ""

        @staticmethod
        def add_arguments(parser) -> None:
            parser.add_argument("--color", dest="color", action="store_true")
            parser.add_argument("--no-color", dest="color", action="store_false")
            parser.add_argument("-q", "--quiet-mode", "--q2", action="store_true")

    assert vars(plain_args(Pair, [])) == _argparse(Pair, []) == {
        "debug": False, "color": False, "quiet_mode": False}


def _main(argv: list[str], general: bool = False) -> tuple[int, str, str]:
    """`main(argv)` in this process: (exit code, stdout, stderr); `general`:
    through argparse whatever the line."""
    out, err = io.StringIO(), io.StringIO()
    original = cli.plain_args
    if general:
        cli.plain_args = lambda command, words: None
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main(argv)
            except SystemExit as exc:
                code = exc.code
    finally:
        cli.plain_args = original
    return code, out.getvalue(), err.getvalue()


def test_help_and_errors_are_argparses(small_archive: Path) -> None:
    code, out, err = _main(["list", "--help"])
    assert code == 0 and out.startswith("usage: pt2-inspector list") and "--as-torch" in out
    assert _main(["list"]) == (2, "", "error: the following arguments are required: FILE "
                                      "(see pt2-inspector list --help)\n")
    assert _main(["list", str(small_archive), "b"]) == (
        2, "", "error: unrecognized arguments: b (see pt2-inspector list --help)\n")
    assert _main(["list", "missing.pt2"]) == _main(["list", "missing.pt2"], general=True)
    assert _main(["list", "missing.pt2"])[0] == 2


def test_list_prints_the_same_bytes_either_way(small_archive: Path,
                                               tmp_path_factory: pytest.TempPathFactory) -> None:
    """Real archives (the fidelity corpus: ExportDB, HF models, control flow,
    several programs in one file): the plain parse and argparse print the same
    listing, the same stderr, the same exit code."""
    archives, _ = session_corpus(tmp_path_factory)
    paths = [small_archive] + [a.path for a in archives]
    assert len(paths) > 20 and any(a.multi for a in archives)
    for path in paths:
        plain = _main(["list", str(path)])
        assert plain == _main(["list", str(path)], general=True), path
        assert plain[0] == 0 and "class GraphModule" in plain[1], (path, plain[2])


def test_console_list_imports_no_argparse(small_archive: Path) -> None:
    """The whole process, as the console script runs it: the listing of a plain
    `list FILE` without argparse, gettext or locale (what its parser costs)."""
    code = (
        "import os, sys\n"
        f"sys.argv = ['pt2-inspector', 'list', {str(small_archive)!r}]\n"
        "_exit = os._exit\n"
        "def spy(code):\n"
        "    gone = sorted(m for m in ('argparse', 'gettext', 'locale') if m in sys.modules)\n"
        "    sys.stderr.write(f'{code} {gone}\\n'); sys.stderr.flush(); _exit(code)\n"
        "os._exit = spy\n"
        "from inspector import cli\n"
        "cli.console()\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.stderr == "0 []\n", proc.stderr
    assert proc.stdout == _main(["list", str(small_archive)], general=True)[1]


def test_plain_namespace_reads_like_argparses() -> None:
    """Commands read their arguments by attribute, as they read argparse's."""
    (command,) = [c for c in COMMANDS if c.NAME == "list"]
    args = plain_args(command, ["f.pt2"])
    assert isinstance(args, SimpleNamespace) and args.file == "f.pt2" and not args.debug
    assert getattr(args, "json", False) is False  # cli's escape table choice
