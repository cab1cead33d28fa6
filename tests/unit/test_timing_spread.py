"""core/timing_spread: the spread every timing carries, and the one-line warning."""

from __future__ import annotations

import numpy as np
import pytest

from inspector.core.timing_spread import (
    LoadWatch,
    load_average,
    percentile,
    range_text,
    relative_range,
    spread,
    unsteady_warning,
)


@pytest.mark.parametrize("values", [[3.0], [1.0, 2.0], [5.0, 1.0, 4.0, 2.0, 3.0],
                                    [0.9, 1.1, 1.0, 7.5, 1.05, 0.98]])
def test_spread_matches_numpy(values):
    s = spread(values)
    assert s["n"] == len(values)
    for key, q in (("p50", 50), ("q1", 25), ("q3", 75)):
        assert s[key] == pytest.approx(float(np.percentile(values, q)), abs=1e-4)
        assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)))
    assert (s["min"], s["max"]) == (min(values), max(values))


def test_range_text_names_the_runs():
    assert range_text(spread([1.0, 1.2, 1.1])) == "1.10 ms (1.00-1.20 over 3 runs)"
    assert range_text(spread([2.0])) == "2.00 ms (1 run)"


def test_steady_runs_on_an_idle_machine_say_nothing():
    assert unsteady_warning(what="x", runs=[1.0, 1.05, 1.1], load=0.3, cpus=2, threads=1) is None
    assert relative_range([1.0]) == 0.0


def test_wide_spread_is_one_line_with_what_to_do():
    w = unsteady_warning(what="per-token times", runs=[1.0, 1.1, 2.0], load=0.5, cpus=4,
                         threads=4)
    assert w is not None and "\n" not in w
    assert "runs differ by 91%" in w and "1-2 ms over 3 runs" in w
    assert "--threads 1" in w and "more repeats" in w


def test_busy_machine_is_named_even_when_runs_agree():
    w = unsteady_warning(what="t", runs=[1.0, 1.0], load=6.0, cpus=2, threads=1)
    assert w is not None and "load average 6.0 on 2 CPUs" in w and "an idle machine" in w
    assert "--threads 1" not in w  # already one thread
    # at the CPU count counts, just below does not
    assert unsteady_warning(what="t", runs=[1.0], load=2.0, cpus=2, threads=1)
    assert unsteady_warning(what="t", runs=[1.0], load=1.99, cpus=2, threads=1) is None


@pytest.mark.parametrize("ratio,warns", [(0.49, True), (0.5, False), (1.0, False),
                                         (1.5, False), (1.51, True), (64.23, True)])
def test_node_sum_outside_half_to_one_and_a_half_warns(ratio, warns):
    w = unsteady_warning(what="encoder's times", runs=[1.0, 1.0], load=None, cpus=2,
                         threads=2, node_ratio=ratio)
    assert (w is not None) == warns
    if warns:
        assert f"nodes sum to {ratio:.2f}x the forward" in w and "--threads 1" in w


def test_load_watch_keeps_the_peak():
    watch = LoadWatch()
    watch.sample()
    now = load_average()
    assert watch.peak == now  # None where the system has no load average
