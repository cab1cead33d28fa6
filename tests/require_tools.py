"""PT2I_REQUIRE_TOOLS=1: a skipped test, or a skipped test file, fails instead.

.ci/run installs every tool the tests use (Xvfb, gcc, the desktop validators,
...) and sets PT2I_REQUIRE_TOOLS=1: there a skip ("needs Xvfb", "no C
compiler") means CI lost a tool, and it fails instead of passing quietly.
Elsewhere a skip names what to install, and `pytest -rs` lists them.

A pytest plugin (tests/conftest.py loads it), so tests/unit/test_require_tools.py
can run it on its own, in pytest-xdist workers as the README's command does: the
workers make the reports, and the changed outcome travels with them."""

from __future__ import annotations

import os

import pytest

REQUIRE_TOOLS = os.environ.get("PT2I_REQUIRE_TOOLS") == "1"


def _skip_reason(longrepr: object) -> str:
    return str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> object:
    outcome = yield
    report = outcome.get_result()
    if REQUIRE_TOOLS and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped under PT2I_REQUIRE_TOOLS=1: {_skip_reason(report.longrepr)}"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> object:
    outcome = yield
    report = outcome.get_result()
    if REQUIRE_TOOLS and report.skipped:
        report.outcome = "failed"
        report.longrepr = f"skipped under PT2I_REQUIRE_TOOLS=1: {_skip_reason(report.longrepr)}"
