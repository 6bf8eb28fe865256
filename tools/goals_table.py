"""The results page's goals table (block ``goals``), generated from the committed records.

Each notebook's ``results.goals`` in the newest record of a machine with a GPU that holds the
notebook (01-03 may come from a run on one GPU, 04 from one on two),
``{name: {"ratio", "ci95": [low, high], "goal", "verdict", "trials"}}`` (``"launches"`` in place
of ``"trials"`` for notebook 04); a row per goal, labelled with its name. The verdict must follow
the interval (``tools.goal_check``), or the table is not generated. A notebook without goals gets
a row saying so, and goals that only a record without a GPU holds are stated, not judged. The
goals are stated for an H200 (``helpers.data.registry.GOALS_GPU``): a record of another GPU shows
its verdicts marked not judged, with the newest H200 record's rows beside them, named.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from helpers.data.registry import GOALS_GPU
from helpers.data.registry import judges_goals
from tools.goal_check import goal_problems
from tools.notebook_tables import GENERATED
from tools.records import RESULTS
from tools.records import column_heading
from tools.records import newest_per_notebook
from tools.records import records


def _goal_row(
    notebook: str, name: str, goal: dict[str, Any], where: str, gpu: str | None, of: str = ""
) -> str:
    label = f"{notebook[:2]} · {name}{of}"
    problems = goal_problems(goal)
    if problems:
        raise ValueError(f"{where}, goal {name!r}: {'; '.join(problems)}")
    low, high = goal["ci95"]
    count = f"{goal['launches']} launches" if "launches" in goal else f"{goal['trials']} trials"
    verdict = goal["verdict"] or "not judged: the run's processes were on the CPU"
    if goal["verdict"] and not judges_goals(gpu):  # another GPU's verdict: how it compares
        verdict = f"{verdict} on an {gpu}; not judged (stated for an {GOALS_GPU})"
    return (
        f"| {label} | >= {goal['goal']:g}x | {goal['ratio']:.2f}x | {low:.2f}x–{high:.2f}x | "
        f"{verdict} | {count} |"
    )


def render_goals_table(results_dir: Path = RESULTS, prefix: str = "") -> str:
    """The goals of each notebook in the newest record of a machine with a GPU that holds it
    (Markdown)."""
    newest = newest_per_notebook([r for r in records(results_dir) if r.has_gpu])
    lines = [
        "| Goal | target | measured | 95% interval | verdict | trials |",
        "|---|---:|---:|---:|---|---:|",
    ]
    if not newest:
        return "\n".join([*lines, "| no record of a GPU machine in results/ | — | — | — | — | — |"])
    for notebook, record in sorted(newest.items()):
        goals = record.notebooks[notebook].results.get("goals")
        if not goals:
            lines.append(f"| {notebook[:2]} · no goals recorded | — | — | — | — | — |")
            continue
        lines += [
            _goal_row(notebook, name, goal, f"{record.name}, {notebook}", record.machine.get("gpu"))
            for name, goal in goals.items()
        ]
    # where the newest GPU record is another GPU's, the newest that judged the goals too, named
    judged = newest_per_notebook(
        [r for r in records(results_dir) if r.has_gpu and judges_goals(r.machine.get("gpu"))]
    )
    also = {
        notebook: record
        for notebook, record in judged.items()
        if not judges_goals(newest[notebook].machine.get("gpu"))
        and record.notebooks[notebook].results.get("goals")
    }
    for notebook, record in sorted(also.items()):
        lines += [
            _goal_row(
                notebook,
                name,
                goal,
                f"{record.name}, {notebook}",
                record.machine.get("gpu"),
                f" ({record.machine.get('gpu')}, {record.name})",
            )
            for name, goal in record.notebooks[notebook].results["goals"].items()
        ]
    # goals that only a record without a GPU holds: stated, never judged here
    elsewhere = newest_per_notebook([r for r in records(results_dir) if not r.has_gpu])
    for notebook, record in sorted(elsewhere.items()):
        if notebook in newest:
            continue
        for name, goal in (record.notebooks[notebook].results.get("goals") or {}).items():
            lines.append(
                f"| {notebook[:2]} · {name} | >= {goal['goal']:g}x | — | — | not judged: no "
                "GPU run of this notebook's current version | — |"
            )
    lines[2:] = sorted(lines[2:], key=lambda row: row[2:4])  # in notebook order
    sources = {
        record.name: f"[{record.name}]({prefix}results/{record.name}) ({column_heading(record, ', {}')})"
        for record in [*newest.values(), *also.values()]
    }
    lines += [
        "",
        (
            f"Each notebook's `results.goals` in the newest record of a machine with a GPU that "
            f"holds it: {'; '.join(sources.values())}. A goal is met when the 95% interval of "
            "its ratio clears the target, not met when the interval lies below it, "
            f"inconclusive otherwise. The targets are stated for an {GOALS_GPU}: a record of another GPU "
            f"shows how that GPU compares, marked not judged, beside the newest {GOALS_GPU} record's "
            f"verdicts. {GENERATED}"
        ),
    ]
    return "\n".join(lines)
