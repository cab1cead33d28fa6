"""Entry point of the PyInstaller bundles (packaging/*.spec).

A bundle has no `python` to run `python -m inspector.jobs JOB ...` with: its
sys.executable is the bundle's own program. So the job runner's usual command line,
`[sys.executable, "-m", "inspector.jobs", ...]`, arrives here, and we route it to
the jobs entry point (and `-m inspector.desktop_install` to the launcher
installer); everything else is the normal `pt2-inspector` command.
"""

from __future__ import annotations

import multiprocessing
import sys


# Modules a bundle can run as `PROGRAM -m MODULE ...`, like `python -m` would.
_RUNNABLE = {
    "inspector.jobs": "inspector.jobs.__main__",
    "inspector.desktop_install": "inspector.desktop_install",
}


def main() -> int:  # returns only for `-m MODULE`
    multiprocessing.freeze_support()  # torch's DataLoader & co. re-exec the program
    if len(sys.argv) >= 3 and sys.argv[1] == "-m" and sys.argv[2] in _RUNNABLE:
        import importlib

        module = importlib.import_module(_RUNNABLE[sys.argv[2]])
        return module.main(sys.argv[3:])
    from inspector.cli import console

    console()  # as the console script: ends the process (a one-shot command at once)


if __name__ == "__main__":
    raise SystemExit(main())
