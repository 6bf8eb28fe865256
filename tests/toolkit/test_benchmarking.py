from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from helpers.toolkit.benchmarking import Ratio
from helpers.toolkit.benchmarking import Record
from helpers.toolkit.benchmarking import goal_lines
from helpers.toolkit.benchmarking import interleaved_order
from helpers.toolkit.benchmarking import interleaved_trials
from helpers.toolkit.benchmarking import machine_info
from helpers.toolkit.benchmarking import rate_interval
from helpers.toolkit.benchmarking import ratio
from helpers.toolkit.benchmarking import save_results
from helpers.toolkit.benchmarking import summarize
from helpers.toolkit.benchmarking import versus


def test_summarize() -> None:
    s = summarize([3.0, 1.0, 2.0, 10.0])
    assert s["median"] == 2.5 and s["min"] == 1.0 and s["max"] == 10.0 and s["n"] == 4
    assert s["spread"] == pytest.approx(9.0 / 2.5)
    assert s["cv"] == pytest.approx(s["stdev"] / 4.0) and s["noisy"]
    assert summarize([5.0])["stdev"] == 0.0 and not summarize([5.0])["noisy"]
    assert not summarize([100.0, 101.0, 99.0])["noisy"]
    with pytest.raises(ValueError):
        summarize([])


def test_interleaved_order_rotates_every_position() -> None:
    names = ["a", "b", "c", "d"]
    orders = [interleaved_order(names, k) for k in range(4)]
    assert all(sorted(o) == names for o in orders)
    for name in names:  # each configuration takes each position once over len(names) rounds
        assert sorted(o.index(name) for o in orders) == [0, 1, 2, 3]
    assert orders[1] == ["b", "c", "d", "a"]  # rotated by one
    assert [interleaved_order(["x", "y"], k) for k in range(3)] == [["x", "y"], ["y", "x"], ["x", "y"]]
    assert interleaved_order([], 3) == []


def test_interleaved_trials_runs_rounds_in_that_order() -> None:
    calls: list[tuple[str, int]] = []
    records = interleaved_trials(["x", "y"], lambda n, t: calls.append((n, t)) or f"{n}{t}", 3)
    assert calls == [("x", 0), ("y", 0), ("y", 1), ("x", 1), ("x", 2), ("y", 2)]
    assert records == {"x": ["x0", "x1", "x2"], "y": ["y0", "y1", "y2"]}
    with pytest.raises(ValueError, match="unique"):
        interleaved_trials(["x", "x"], lambda n, t: 0, 1)
    with pytest.raises(ValueError, match="at least 1"):
        interleaved_trials(["x"], lambda n, t: 0, 0)


def test_paired_ratio_is_the_geometric_mean_of_round_ratios() -> None:
    r = ratio([200.0, 220.0, 180.0], [100.0, 110.0, 90.0])
    assert r.paired and r.trials == 3
    assert r.ratio == pytest.approx(2.0) and r.low == pytest.approx(2.0) and r.high == pytest.approx(2.0)
    noisy = ratio([210.0, 190.0, 205.0, 195.0, 200.0], [100.0, 100.0, 100.0, 100.0, 100.0])
    assert noisy.low < noisy.ratio < noisy.high
    assert noisy.ratio == pytest.approx(
        math.exp(sum(math.log(v / 100) for v in (210, 190, 205, 195, 200)) / 5)
    )


def test_pairing_removes_a_drift_shared_by_both_sides() -> None:
    # the machine slows down round by round; A is always 1.5x B within a round
    b = [100.0, 80.0, 60.0, 40.0, 20.0]
    a = [1.5 * v for v in b]
    paired = ratio(a, b)
    assert paired.low == pytest.approx(1.5) and paired.high == pytest.approx(1.5)
    unpaired = ratio(a, b[:4])  # unequal lengths: no pairing, the drift widens the interval
    assert not unpaired.paired and unpaired.high - unpaired.low > 1.0


def test_verdict_rule_met_not_met_inconclusive() -> None:
    assert Ratio(1.7, 1.6, 1.8, 5, True).verdict(1.5) == "met"
    assert Ratio(1.7, 1.5, 1.8, 5, True).verdict(1.5) == "met"  # the low end clears it
    assert Ratio(1.2, 1.1, 1.3, 5, True).verdict(1.5) == "not met"
    assert Ratio(1.55, 1.4, 1.7, 5, True).verdict(1.5) == "inconclusive"
    assert Ratio(1.45, 1.4, 1.7, 5, True).verdict(1.5) == "inconclusive"  # point below, interval not
    # on synthetic trials: a clear gain, a clear shortfall, and noise straddling the goal
    base = [100.0, 101.0, 99.0, 100.5, 99.5]
    assert ratio([2.0 * v for v in base], base).verdict(1.5) == "met"
    assert ratio([1.2 * v for v in base], base).verdict(1.5) == "not met"
    straddle = ratio([130.0, 170.0, 150.0, 120.0, 180.0], base)
    assert straddle.verdict(1.5) == "inconclusive"


def test_goal_record_and_its_line() -> None:
    r = Ratio(1.7, 1.6, 1.8, 5, True)
    assert r.goal(1.5) == {"ratio": 1.7, "ci95": [1.6, 1.8], "goal": 1.5, "verdict": "met", "trials": 5}
    assert "launches" in r.goal(1.9, count="launches")
    (line,) = goal_lines({"capture / eager": r.goal(1.6)})
    assert line == ("capture / eager: 1.70x, 95% interval [1.60, 1.80] over 5 trials (goal >= 1.6x): met")
    assert str(r) == "1.70x [1.60-1.80]"
    assert versus(r, "", faster="faster") == "faster (1.70x [1.60-1.80])"  # no reference: one space
    (line,) = goal_lines({"capture / eager": r.goal(1.6)}, judged=False)  # a run not on an H200
    assert line.endswith("(goal >= 1.6x): met on this machine, not judged (the goals are stated for an H200)")


def test_an_interval_that_excludes_1_never_prints_as_touching_it() -> None:
    assert str(Ratio(0.9345, 0.8735, 0.9998, 12, True)) == "0.9345x [0.8735-0.9998]"
    assert str(Ratio(1.02, 1.004, 1.05, 12, True)) == "1.020x [1.004-1.050]"
    assert str(Ratio(1.0, 0.97, 1.0, 12, True)) == "1.00x [0.97-1.00]"  # touching 1: as it is
    (line,) = goal_lines({"a / b": Ratio(0.95, 0.9, 0.996, 5, True).goal(0.9)})
    assert "95% interval [0.900, 0.996]" in line
    (line,) = goal_lines({"a / b": Ratio(0.98, 0.96866, 0.99051, 5, True).goal(0.97)})
    assert "95% interval [0.969, 0.991]" in line and line.endswith("inconclusive")  # not [0.97, ...]


def test_one_trial_gives_no_interval() -> None:
    r = ratio([200.0], [100.0])
    assert r.ratio == pytest.approx(2.0) and r.low == 0.0 and r.high == math.inf
    assert r.verdict(1.5) == "inconclusive"


def test_rates_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        ratio([1.0, 0.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="positive"):
        rate_interval([])


def test_rate_interval() -> None:
    estimate, low, high = rate_interval([100.0, 110.0, 90.0])
    assert low < estimate < high and estimate == pytest.approx((100 * 110 * 90) ** (1 / 3))
    assert rate_interval([5.0]) == (pytest.approx(5.0),) * 3


def test_machine_info_names_what_numbers_depend_on() -> None:
    info = machine_info()
    for key in ("cpu", "cpu_count", "dali", "torch", "gpu", "gpu_driver", "gpu_count"):
        assert key in info
    assert info["dali"].startswith("2.")


def test_save_results_writes_everything(tmp_path: Path) -> None:
    path = save_results("99-test", Record({"a": 1}, {"r": [1, 2]}, {"h": 3.0}), tmp_path)
    document = json.loads(path.read_text())
    assert path == tmp_path / "99-test.json"
    assert document["parameters"] == {"a": 1} and document["headline"] == {"h": 3.0}
    assert document["results"] == {"r": [1, 2]} and document["machine"]["dali"]
    assert not list(tmp_path.glob("*.tmp-*"))


def test_save_results_refuses_what_is_not_a_record(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="takes the Record"):
        save_results("99-test", ({"a": 1}, {"r": [1, 2]}, {"h": 3.0}), tmp_path)  # a plain tuple
    assert not list(tmp_path.iterdir())


def test_within_says_whether_the_interval_is_narrow_enough() -> None:
    steady = ratio([101.0, 99.0, 100.5, 99.5], [100.0, 100.0, 100.0, 100.0])
    assert steady.within(0.02) and not steady.within(0.001)
    noisy = ratio([130.0, 70.0, 120.0, 80.0], [100.0, 100.0, 100.0, 100.0])
    assert not noisy.within(0.02) and noisy.within(10.0)
    assert not ratio([1.0], [2.0]).within(0.5)  # one round: no interval at all


def test_a_ratio_as_a_record_is_its_ratio_interval_and_count() -> None:
    r = ratio([110.0, 120.0, 100.0], [100.0, 100.0, 100.0])
    record = r.as_record()
    assert record == {"ratio": r.ratio, "ci95": [r.low, r.high], "trials": 3}
    assert list(record) == ["ratio", "ci95", "trials"]  # the order committed records keep
    assert type(record["ci95"]) is list  # a JSON array, as written before
    assert json.loads(json.dumps(record)) == record
    assert Ratio(2.0, 1.5, 2.5, 4, False).as_record("launches") == {
        "ratio": 2.0,
        "ci95": [1.5, 2.5],
        "launches": 4,
    }


def test_a_ratio_beside_a_goal_keeps_its_bounds_on_their_side_of_the_goal() -> None:
    r = Ratio(1.729, 1.598, 1.871, 11, True)
    assert str(r) == "1.73x [1.60-1.87]"  # beside 1 only: two decimals
    assert r.shown_against(1.6) == "1.729x [1.598-1.871]"  # 1.598 must not read as 1.60, the goal
    assert r.shown_against(1.5) == str(r)


def test_a_bound_a_hair_above_one_is_printed_above_one() -> None:
    """The words follow the interval, and so must the printed bounds: 1.00001 is not "1.0000"."""
    r = Ratio(1.00003, 1.00001, 1.00005, 12, True)
    assert str(r) == "1.00003x [1.00001-1.00005]"
    assert versus(r, "x").startswith("faster than x (1.00003x [1.00001-")


def test_a_comparison_beside_a_goal_prints_the_bounds_the_goal_needs() -> None:
    """``versus(..., against=...)``: the same words, the interval with the decimals that keep each
    bound on its side of the goal (notebook 05's 0.973x [0.968-0.978] for a goal of 0.97)."""
    r = Ratio(0.9728, 0.9678, 0.9778, 7, True)
    assert versus(r, "training alone") == "slower than training alone (0.97x [0.97-0.98])"
    assert versus(r, "training alone", against=(0.97,)) == "slower than training alone (0.973x [0.968-0.978])"
    assert versus(r, "training alone", against=(0.5,)) == versus(r, "training alone")
