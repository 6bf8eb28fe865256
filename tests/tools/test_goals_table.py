"""The results page's goals (tools.goals_table, tools.goal_check): each notebook's goals from the
newest GPU record, a verdict only where its interval gives it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from fakes import H200
from fakes import fake_goal
from fakes import fake_record

from tools import goal_check
from tools import goals_table


def test_goals_come_from_the_newest_gpu_record(tmp_path: Path) -> None:
    goals = {
        "a / b": fake_goal(1.7, 1.6, 1.8, "met"),
        "c / d": fake_goal(1.4, 1.2, 1.45, "not met"),
        "e / f": fake_goal(1.5, 1.4, 1.6, "inconclusive", launches=3),
    }
    # notebook 04 ran on another GPU machine, earlier: its goals come from there
    fake_record(
        tmp_path / "old-gpu.json",
        "2026-03-01T09:00:00+00:00",
        {
            "03-x": {"headline": {}, "results": {"goals": {"old": fake_goal(9, 8, 10, "met")}}},
            "04-z": {
                "headline": {},
                "results": {"goals": {"w": fake_goal(1.9, 1.4, 2.0, "inconclusive", launches=3)}},
            },
        },
        machine={**H200, "gpu_count": 1},
    )
    fake_record(
        tmp_path / "gpu.json",
        "2026-03-02T09:00:00+00:00",
        {"01-y": {"headline": {}}, "03-x": {"headline": {}, "results": {"goals": goals}}},
        machine=H200,
    )
    fake_record(
        tmp_path / "cpu.json",
        "2026-03-03T09:00:00+00:00",
        {"03-x": {"headline": {}, "results": {"goals": {"cpu": fake_goal(9, 8, 10, "met")}}}},
    )
    table = goals_table.render_goals_table(tmp_path)
    assert table.splitlines()[2:8] == [
        "| 01 · no goals recorded | — | — | — | — | — |",
        "| 03 · a / b | >= 1.5x | 1.70x | 1.60x–1.80x | met | 5 trials |",
        "| 03 · c / d | >= 1.5x | 1.40x | 1.20x–1.45x | not met | 5 trials |",
        "| 03 · e / f | >= 1.5x | 1.50x | 1.40x–1.60x | inconclusive | 3 launches |",
        "| 04 · w | >= 1.5x | 1.90x | 1.40x–2.00x | inconclusive | 3 launches |",
        "",
    ]
    assert (
        "[gpu.json](results/gpu.json) (2x NVIDIA H200, full scale, device auto → cpu, 2026-03-02); "
        "[old-gpu.json](results/old-gpu.json) (NVIDIA H200, full scale"
    ) in table
    # a newer record on another GPU than the goals' H200: its verdicts say how that GPU compares
    fake_record(
        tmp_path / "h100.json",
        "2026-03-04T09:00:00+00:00",
        {"03-x": {"headline": {}, "results": {"goals": {"a / b": goals["a / b"]}}}},
        machine={**H200, "gpu": "NVIDIA H100", "gpu_count": 1},
    )
    rows = goals_table.render_goals_table(tmp_path).splitlines()
    assert rows[3:7] == [  # and beside it the newest H200 record's verdicts, named
        "| 03 · a / b | >= 1.5x | 1.70x | 1.60x–1.80x | met on an NVIDIA H100; not judged (stated for "
        "an H200) | 5 trials |",
        "| 03 · a / b (NVIDIA H200, gpu.json) | >= 1.5x | 1.70x | 1.60x–1.80x | met | 5 trials |",
        "| 03 · c / d (NVIDIA H200, gpu.json) | >= 1.5x | 1.40x | 1.20x–1.45x | not met | 5 trials |",
        "| 03 · e / f (NVIDIA H200, gpu.json) | >= 1.5x | 1.50x | 1.40x–1.60x | inconclusive | 3 launches |",
    ]
    assert "[gpu.json](results/gpu.json)" in rows[-1] and "[h100.json](results/h100.json)" in rows[-1]


def test_a_goal_without_its_interval_is_refused(tmp_path: Path) -> None:
    fake_record(
        tmp_path / "gpu.json",
        "2026-03-02T09:00:00+00:00",
        {
            "03-x": {
                "headline": {},
                "results": {"goals": {"a / b": {"ratio": 0.84, "goal": 0.95, "met": False}}},
            }
        },
        machine=H200,
    )
    with pytest.raises(ValueError, match="gpu.json, 03-x, goal 'a / b': lacks ci95, verdict, trials"):
        goals_table.render_goals_table(tmp_path)


def test_without_a_gpu_record_the_goals_table_says_so(tmp_path: Path) -> None:
    fake_record(tmp_path / "cpu.json", "2026-03-03T09:00:00+00:00", {"03-x": {"headline": {}}})
    assert "no record of a GPU machine" in goals_table.render_goals_table(tmp_path)


@pytest.mark.parametrize(
    "goal,problem",
    [
        (fake_goal(1.7, 1.6, 1.8, "inconclusive"), "verdict 'inconclusive', but .* says 'met'"),
        (fake_goal(1.5, 1.4, 1.6, "met"), "says 'inconclusive'"),
        (fake_goal(1.4, 1.2, 1.49, "inconclusive"), "says 'not met'"),
        (fake_goal(2.0, 1.6, 1.8, "met"), "ratio 2 lies outside its interval"),
        ({"ratio": 1.7, "ci95": [1.6, 1.8], "goal": 1.5}, "lacks verdict, trials"),
    ],
)
def test_a_verdict_must_follow_its_interval(tmp_path: Path, goal: dict[str, Any], problem: str) -> None:
    assert any(re.search(problem, p) for p in goal_check.goal_problems(goal)), goal_check.goal_problems(goal)
    fake_record(
        tmp_path / "gpu.json",
        "2026-03-02T09:00:00+00:00",
        {"03-x": {"headline": {}, "results": {"goals": {"g": goal}}}},
        machine=H200,
    )
    with pytest.raises(ValueError, match=r"gpu.json, 03-x, goal 'g'"):
        goals_table.render_goals_table(tmp_path)


def test_goals_that_only_a_cpu_record_holds_are_stated_not_judged(tmp_path: Path) -> None:
    fake_record(
        tmp_path / "gpu.json",
        "2026-03-02T09:00:00+00:00",
        {"01-y": {"headline": {}, "results": {"goals": {"a / b": fake_goal(1.7, 1.6, 1.8, "met")}}}},
        machine=H200,
    )
    fake_record(
        tmp_path / "cpu.json",
        "2026-03-03T09:00:00+00:00",
        {
            "01-y": {"headline": {}, "results": {"goals": {"cpu only": fake_goal(9, 8, 10, "met")}}},
            "04-z": {
                "headline": {},
                "results": {"goals": {"w / v": fake_goal(1.0, 0.4, 2.6, "inconclusive", launches=3)}},
            },
        },
    )
    rows = [r for r in goals_table.render_goals_table(tmp_path).splitlines() if r.startswith("| 0")]
    assert rows == [
        "| 01 · a / b | >= 1.5x | 1.70x | 1.60x–1.80x | met | 5 trials |",
        "| 04 · w / v | >= 1.5x | — | — | not judged: no GPU run of this notebook's current version | — |",
    ]
    # a GPU machine's record of CPU processes (04 with fewer GPUs than processes) holds no verdict
    fake_record(
        tmp_path / "gpu-cpu-processes.json",
        "2026-03-04T09:00:00+00:00",
        {
            "04-z": {
                "headline": {},
                "results": {"goals": {"w / v": fake_goal(1.0, 0.4, 2.6, None, launches=3)}},
            }
        },
        machine=H200,
    )
    rows = [r for r in goals_table.render_goals_table(tmp_path).splitlines() if r.startswith("| 04")]
    assert rows == [
        "| 04 · w / v | >= 1.5x | 1.00x | 0.40x–2.60x | not judged: the run's processes were "
        "on the CPU | 3 launches |"
    ]
