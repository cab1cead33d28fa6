"""A sub-command's plain command line, parsed as argparse would parse it,
without argparse.

`pt2-inspector list FILE` is the command line people type most, and the one
issue 17 times as a whole process. argparse costs it ~4 ms of ~90: its import
(with gettext and locale), and building the parser, where every help string is
looked up in gettext's catalogs on disk. When every word of a command line is
a positional and there is one word per positional, the namespace argparse would
return is known from the command's `add_arguments` alone: each positional gets
its word, every option its default. `plain_args` records what `add_arguments`
declares and builds that namespace, or returns None where it could differ in
any way (an option, `--help`, a word too many or too few, an argument kind not
reproduced here): then argparse parses the line, with its own help and errors.
tests/unit/test_cli_plain_args.py compares both for every command.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

EXIT_USAGE = 2
_SUPPRESS = "==SUPPRESS=="  # argparse.SUPPRESS
_PREFIX = "-"  # the parsers' prefix_chars (argparse's default)
# what an option may declare and still take its default on a plain line
_OPTION_KEYS = frozenset(("action", "help", "metavar", "default", "dest", "choices", "type",
                          "required"))
_ACTION_DEFAULTS = {"store": None, "append": None, "store_true": False, "store_false": True}


def add_common_arguments(parser: Any) -> None:
    """What every parser takes (an ArgumentParser, or the recorder here)."""
    parser.add_argument("--debug", action="store_true", help="show tracebacks")


class _NotPlain(Exception):
    """add_arguments declared something this module does not reproduce."""


class _Recorder:
    """Takes `add_arguments`' calls in place of an ArgumentParser: the
    positionals' names, and each option's destination and default."""

    __slots__ = ("positionals", "defaults")  # setting anything else fails: not plain

    def __init__(self) -> None:
        self.positionals: list[str] = []
        self.defaults: dict[str, Any] = {}

    def add_argument(self, *names: str, **kwargs: Any) -> None:
        if len(names) == 1 and not names[0].startswith(_PREFIX):
            if set(kwargs) - {"help", "metavar"}:  # nargs, type, choices, default...
                raise _NotPlain(names[0])
            self.positionals.append(names[0])
            self.defaults.setdefault(names[0], None)
            return
        if not names or not all(n.startswith(_PREFIX) for n in names):
            raise _NotPlain(names)
        action = kwargs.get("action", "store")
        if (set(kwargs) - _OPTION_KEYS or action not in _ACTION_DEFAULTS
                or kwargs.get("required", False)):
            raise _NotPlain(names)
        default = kwargs.get("default", _ACTION_DEFAULTS[action])
        # argparse passes a string default through `type` (and hides SUPPRESS)
        if isinstance(default, str) and ("type" in kwargs or default == _SUPPRESS):
            raise _NotPlain(names)
        # the first action of a destination sets its default, as in argparse
        self.defaults.setdefault(kwargs.get("dest") or _option_dest(names), default)

    def __getattr__(self, name: str) -> Any:
        # groups, set_defaults, anything else of an ArgumentParser: not reproduced
        raise _NotPlain(name)


def _option_dest(names: Sequence[str]) -> str:
    """argparse's destination of an option: its first long name, else its first
    name, without the prefix, dashes as underscores."""
    long = [n for n in names if len(n) > 1 and n[1] in _PREFIX]
    return (long or list(names))[0].lstrip(_PREFIX).replace("-", "_")


def plain_args(command: Any, words: Sequence[str]) -> SimpleNamespace | None:
    """The namespace `command`'s parser would return for `words` (what follows
    the command's name), or None when argparse must parse them."""
    if any(w.startswith(_PREFIX) for w in words):
        return None  # an option, --help, `--`, a negative number: argparse's
    recorder = _Recorder()
    try:
        add_common_arguments(recorder)
        command.add_arguments(recorder)
    except (_NotPlain, AttributeError):  # AttributeError: it set an attribute of the parser
        return None
    if len(words) != len(recorder.positionals):
        return None  # argparse's error names what is missing or extra
    args = SimpleNamespace(**recorder.defaults)
    for name, word in zip(recorder.positionals, words):
        setattr(args, name, word)
    return args
