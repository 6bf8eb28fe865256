"""Whether a recorded goal holds together (tools.goal_check): the fields it needs, a ratio inside
its interval, and a verdict that the interval gives, by the notebooks' own rule."""

from __future__ import annotations

import pytest

from helpers.toolkit.benchmarking import Ratio
from tools.goal_check import goal_problems


def _goal(ratio: float, low: float, high: float, goal: float, verdict: str | None, **count: int) -> dict:
    return {"ratio": ratio, "ci95": [low, high], "goal": goal, "verdict": verdict, **(count or {"trials": 5})}


@pytest.mark.parametrize(
    "low, high, verdict",
    [(1.6, 1.8, "met"), (1.2, 1.4, "not met"), (1.4, 1.6, "inconclusive")],
)
def test_a_verdict_the_interval_gives_is_accepted_and_any_other_named(low, high, verdict) -> None:
    ratio = (low + high) / 2
    assert Ratio(ratio, low, high, 5, paired=True).verdict(1.5) == verdict  # the notebooks' rule
    assert goal_problems(_goal(ratio, low, high, 1.5, verdict)) == []
    for other in {"met", "not met", "inconclusive"} - {verdict}:
        (problem,) = goal_problems(_goal(ratio, low, high, 1.5, other))
        assert problem.startswith(f"verdict {other!r}, but the interval") and repr(verdict) in problem


def test_a_goal_not_judged_launches_in_place_of_trials_and_what_is_missing() -> None:
    assert goal_problems(_goal(1.0, 0.4, 2.6, 1.9, None, launches=3)) == []  # 04 on CPU processes
    assert goal_problems({"ratio": 1.0, "goal": 1.5}) == ["lacks ci95, verdict, trials"]
    (outside,) = goal_problems(_goal(2.0, 1.2, 1.4, 1.5, "not met"))
    assert outside == "ratio 2 lies outside its interval [1.2, 1.4]"
