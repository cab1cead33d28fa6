"""The `pt2-inspector` command: the window by default, sub-commands for headless use.

Each sub-command lives in its own module under `inspector/commands/` and exposes
`NAME`, `HELP`, `add_arguments(parser)` and `run(args) -> int`; the table in
`inspector/commands/__init__.py` names them, and only the chosen command's module
is imported and only its parser built (and argparse imported only for a
command line of more than positionals: inspector/commands/plain.py). This
module only dispatches and turns user errors into the one-line contract:
`error: <what> (<why>)` on stderr, exit 2, no traceback (unless --debug);
`console` is the same as a whole process (a one-shot command ends at once).
"""

from __future__ import annotations

import gc
import os
import signal
import sys
from collections.abc import Sequence
from typing import NoReturn

from inspector.commands import COMMANDS, Command
from inspector.commands.plain import EXIT_USAGE, plain_args
from inspector.core.errors import InspectorError
from inspector.core.text import ESCAPES, JSON_ESCAPES


# What a file says is printed with terminal controls, bidi controls and
# invisible characters escaped (inspector/core/text.py says why): text output
# shows visible escapes; JSON output \u escapes, which keep the data identical
# (they can only occur inside JSON strings there).
_TEXT_ESCAPES = ESCAPES
_JSON_ESCAPES = JSON_ESCAPES


class _SafeStream:
    """stdout for commands that print what a file says."""

    def __init__(self, stream, table: dict[int, str]) -> None:
        self._stream, self._table = stream, table

    def write(self, text: str) -> int:
        return self._stream.write(text.translate(self._table))

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP (a closed terminal, `kill`): unwound like Ctrl+C, so the
    `finally` blocks that remove partial files run (by default both signals end
    the process on the spot)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _terminate(signum: int, frame: object) -> None:
    raise Terminated(signum)


def _handle_termination() -> None:
    for name in ("SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        # keep a signal the caller chose to ignore (nohup) ignored
        if sig is not None and signal.getsignal(sig) is signal.SIG_DFL:
            signal.signal(sig, _terminate)


def _print_traceback() -> None:
    import traceback  # only for --debug: not worth its import on every start

    traceback.print_exc()


def _command(name: str) -> Command | None:
    return next((c for c in COMMANDS if c.NAME == name), None)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = _command(argv[0]) if argv else None
    if command is not None:
        args = plain_args(command, argv[1:])
        if args is None:  # anything but positionals: argparse (its help, its errors)
            from inspector.commands.parsers import command_parser

            args = command_parser(command).parse_args(argv[1:])
        runner = command.run
        table = _JSON_ESCAPES if getattr(args, "json", False) else _TEXT_ESCAPES
    else:
        from inspector.commands.parsers import gui_parser

        args = gui_parser().parse_args(argv)
        from inspector.commands import gui  # Qt is imported only on this path

        runner = gui.run
        table = _TEXT_ESCAPES
    stdout = sys.stdout
    sys.stdout = _SafeStream(stdout, table)  # type: ignore[assignment]
    _handle_termination()
    try:
        return runner(args)
    except InspectorError as exc:
        if args.debug:
            _print_traceback()
        sys.stderr.write(f"error: {str(exc).translate(_TEXT_ESCAPES)}\n")
        return EXIT_USAGE
    except Terminated as exc:
        sys.stderr.write(f"error: terminated ({exc}); nothing was written\n")
        return 128 + exc.signum
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted (Ctrl+C); nothing was written\n")
        return 130
    except BrokenPipeError:
        # `pt2-inspector list F | head`: the reader left; that is not an error.
        sys.stderr.close()
        return 0
    except Exception as exc:  # a bug of ours: still one line unless --debug
        if args.debug:
            _print_traceback()
        else:
            sys.stderr.write(
                f"error: internal error: {type(exc).__name__}: {str(exc).translate(_TEXT_ESCAPES)} "
                "(run again with --debug for the traceback, and please report it)\n"
            )
        return EXIT_USAGE
    finally:
        sys.stdout = stdout


def console() -> NoReturn:
    """The `pt2-inspector` console script and `python -m inspector`: `main` as a
    whole process.

    A one-shot command (the table in inspector/commands says which) prints and is
    done, so its process needs neither the cyclic GC, whose passes over the
    hundreds of thousands of objects a program parses into find nothing to free
    until the end, nor the interpreter's teardown, which frees every one of them
    and every module one by one. Measured on the full-size toy decoder (issue 17):
    about 20 ms of a 120 ms `list`. So it runs with the GC off and ends with
    os._exit once stdout and stderr are flushed (what teardown would still have
    done for it). Every other command keeps the ordinary exit: threads, child
    processes, atexit handlers and temporary files get their usual end.
    """
    argv = sys.argv[1:]
    command = _command(argv[0]) if argv else None
    if not getattr(command, "one_shot", False):
        raise SystemExit(main(argv))
    gc.disable()
    _exit_now(main(argv))


def _exit_now(code: int) -> NoReturn:
    """End the process with `code` at once, after what teardown would still have
    done for a one-shot command: flush stdout and stderr."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        pass  # the reader left (`list F | head`): not an error, as in main
    except (OSError, ValueError) as exc:  # a full disk behind `> file`
        code = EXIT_USAGE
        try:
            sys.stderr.write(f"error: cannot write the output ({exc})\n")
        except (OSError, ValueError):
            pass
    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        pass  # closed after a broken pipe (main), or gone: nowhere left to say it
    os._exit(code)


if __name__ == "__main__":
    console()
