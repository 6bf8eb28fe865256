"""Notebook 04: the lines of its training script a learner reads first, and the sentences that say
what a run's weak and strong scaling mean, on GPUs or on CPU processes (generated from the
run's ratios, never typed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from helpers.benchmarking import Ratio
from helpers.benchmarking import versus


def excerpt(path: Path, first: str, last: str) -> str:
    """The lines of ``path`` from the first line that holds ``first`` to the next one that holds
    ``last``, both included, dedented by the first line's indentation."""
    lines = Path(path).read_text().splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if first in line)
        end = next(i for i in range(start, len(lines)) if last in lines[i])
    except StopIteration:
        raise ValueError(f"{Path(path).name}: no lines from {first!r} to {last!r}; the script "
                         "changed: update the excerpt's markers") from None
    indent = len(lines[start]) - len(lines[start].lstrip())
    return "\n".join(line[indent:] if line[:indent].isspace() else line.lstrip()
                     for line in lines[start:end + 1])


def verdict(weak: Ratio, strong: Ratio, goal: float, *, gpus: bool, processes: int,
            global_batch: int, cores: int) -> str:
    """What a run's scaling ratios say. On GPUs: weak and strong scaling against one GPU, the
    goal's verdict by the interval, and whether strong scaling gained less (the intervals apart).
    On CPU processes: that the ratios show how the processes share the cores, not GPU scaling."""
    verdicts = {"met": "met: the whole interval clears it",
                "not met": "not met: the whole interval is below it",
                "inconclusive": "inconclusive: the interval contains it"}
    if not gpus:
        return (f"These {processes} processes shared {cores} CPU cores: they were "
                + versus(weak, "one process at the same batch per process")
                + f" and {versus(strong, 'one process at the same global batch of ' + str(global_batch))}. "
                "That shows how they divide the cores, not how GPUs scale; the goal of "
                f"{goal:g}x is a goal for {processes} GPUs, not judged here: run the notebook on a "
                "machine with them.")
    sentence = (f"Weak scaling: {processes} GPUs trained {weak} the samples per second of one GPU "
                f"({weak.trials} launches each); the goal, at least {goal:g}x, is "
                f"{verdicts[weak.verdict(goal)]}. Strong scaling, the global batch fixed at "
                f"{global_batch}: {processes} GPUs were "
                + versus(strong, "one GPU", faster="faster than", slower="slower than") + ".")
    if strong.high < weak.low:
        sentence += (" Strong scaling gained less than weak scaling (the intervals do not overlap): "
                     "each GPU gets a smaller batch, so what every step pays whatever its size "
                     "weighs more; these launches do not measure which cost that is.")
    return sentence


def read_results(out: Path) -> dict:
    """What rank 0 of a launch wrote (``--out``), without its arguments (paths of this machine)."""
    import json

    result = json.loads(Path(out).read_text())
    result.pop("arguments", None)
    return result


def coverage_table(run: dict) -> Any:
    """Per epoch of a ``--check-coverage`` launch: the samples the ranks read, the distinct records,
    the data set's size, the repeats (padding), the records two ranks read, whether the union is
    the data set, the samples per rank and the shard each rank read (a pandas DataFrame)."""
    import pandas as pd

    keys = ("samples", "distinct", "data_set", "duplicates", "shared_between_ranks", "complete")
    return pd.DataFrame([{"epoch": e["epoch"], **{k: e["coverage"][k] for k in keys},
                          "per rank": e["coverage"]["per_rank"],
                          "shard of each rank": e["coverage"]["shard_of_rank"]}
                         for e in run["epochs"]]).set_index("epoch")
