"""Whether a recorded goal holds together: the fields it needs, a ratio inside its 95% interval,
and a verdict that follows the interval by the rule the notebooks judge by
(:meth:`helpers.toolkit.benchmarking.Ratio.verdict`), or none (``None``: not judged, as notebook 04 records
a goal stated for GPUs on a run of CPU processes). The results page's goals table
(``tools.goals_table``), the findings (``tools.findings``) and the notebooks' tests
(``tests/conftest.py``, ``check_goal``) refuse a goal that does not.
"""

from __future__ import annotations

from typing import Any

from helpers.toolkit.benchmarking import Ratio


def goal_problems(goal: dict[str, Any]) -> list[str]:
    """What is wrong with a recorded goal (an empty list when nothing is): the fields it lacks,
    or a verdict that does not follow its 95% interval (``None`` says it was not judged)."""
    count = "launches" if "launches" in goal else "trials"
    missing = [k for k in ("ratio", "ci95", "goal", "verdict", count) if k not in goal]
    if missing:
        return [f"lacks {', '.join(missing)}"]
    low, high = goal["ci95"]
    # the rule the notebooks judge by (helpers.toolkit.benchmarking), applied to what the record says
    expected = Ratio(goal["ratio"], low, high, goal[count], paired=True).verdict(goal["goal"])
    problems = []
    if not low <= goal["ratio"] <= high:
        problems.append(f"ratio {goal['ratio']:.3g} lies outside its interval [{low:.3g}, {high:.3g}]")
    if goal["verdict"] is not None and goal["verdict"] != expected:
        problems.append(
            f"verdict {goal['verdict']!r}, but the interval [{low:.3g}, {high:.3g}] against "
            f"the goal {goal['goal']:g} says {expected!r}"
        )
    return problems
