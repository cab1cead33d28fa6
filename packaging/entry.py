"""Entry point of the PyInstaller bundles (packaging/*.spec).

A bundle has no `python` to run `python -m inspector.jobs JOB ...` with: its
sys.executable is the bundle's own program. So the job runner's usual command line,
`[sys.executable, "-m", "inspector.jobs", ...]`, arrives here, and we route it to
the jobs entry point; everything else is the normal `pt2-inspector` command.
"""

from __future__ import annotations

import multiprocessing
import sys


def main() -> int:
    multiprocessing.freeze_support()  # torch's DataLoader & co. re-exec the program
    if sys.argv[1:3] == ["-m", "inspector.jobs"]:
        from inspector.jobs.__main__ import main as jobs_main

        return jobs_main(sys.argv[3:])
    from inspector.cli import main as cli_main

    return cli_main(sys.argv[1:])


if __name__ == "__main__":
    raise SystemExit(main())
