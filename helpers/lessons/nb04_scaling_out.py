"""Notebook 04: its set-up (the parameters checked, the data found and copied: a frozen
:class:`Setup`), the lines of its training script a learner reads first, the throughput table, the
sentences that say what a run's weak and strong scaling mean, on GPUs or on CPU processes
(generated from the run's ratios, never typed), and its record, built in one call from the set-up
and what its lessons made."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helpers.data.data_sources import locate_data
from helpers.data.lmdb_subset import first_records
from helpers.data.lmdb_subset import record_count
from helpers.data.paths import relative
from helpers.data.paths import work_folder
from helpers.toolkit.benchmarking import Ratio
from helpers.toolkit.benchmarking import Record
from helpers.toolkit.benchmarking import rate_interval
from helpers.toolkit.benchmarking import summarize
from helpers.toolkit.benchmarking import versus
from helpers.toolkit.devices import gpu_count
from helpers.toolkit.devices import resolve_device
from helpers.toolkit.harness import fold
from helpers.toolkit.parameters import ParameterError
from helpers.toolkit.parameters import at_least
from helpers.toolkit.parameters import positive_int
from helpers.toolkit.parameters import reject_unknown_parameters

NOTEBOOK = "04-scaling-out.ipynb"


@dataclass(frozen=True)
class Setup:
    """The notebook's parameters as checked and resolved by :func:`set_up`, read by attribute."""

    source: Path  # the training LMDB the records come from (``data_path``, or the suite's MNIST)
    train_path: Path  # its first ``records`` records (the source itself when it holds no more)
    test_path: Path
    demo_data: Path  # the first ``demo_records``: the coverage check, the crash, two "nodes"
    device: str  # where the processes run: "gpu" with enough GPUs, else "cpu"
    backend: str  # "nccl" or "gloo"
    gpus: int  # GPUs that DALI finds on this machine (recorded in the results, not a parameter)
    records: int  # ``records`` resolved: None gives 24,000 on GPUs, 4,096 on a CPU (at most the source's)
    workdir: Path  # build/nb04: the copies of the records and the launches' results
    processes: int
    batch_size: int
    epochs: int
    launches: int
    learning_rate: float
    demo_records: int
    num_threads: int
    accuracy_tolerance: float
    seed: int
    launch_timeout: int
    results_dir: str | None  # where the results JSON goes (None: build/results); not recorded

    @property
    def parameters(self) -> dict[str, Any]:
        """What the record keeps: the resolved values, paths relative to the checkout."""
        return {
            "data_path": relative(self.source),
            "test_path": relative(self.test_path),
            "device": self.device,
            "backend": self.backend,
            "processes": self.processes,
            "batch_size": self.batch_size,
            "epochs": self.epochs,
            "launches": self.launches,
            "learning_rate": self.learning_rate,
            "demo_records": self.demo_records,
            "num_threads": self.num_threads,
            "accuracy_tolerance": self.accuracy_tolerance,
            "seed": self.seed,
            "records": self.records,
            "launch_timeout": self.launch_timeout,
        }


def set_up(
    history: Sequence[str],
    *,
    data_path: str | None,
    test_path: str | None,
    device: str,
    processes: int,
    batch_size: int,
    epochs: int,
    launches: int,
    learning_rate: float,
    records: int | None,
    demo_records: int,
    num_threads: int,
    accuracy_tolerance: float,
    seed: int,
    launch_timeout: int,
    results_dir: str | None,
) -> Setup:
    """The notebook's parameters checked (each refused by name), the data found and its first
    ``records`` copied into ``build/nb04`` (removed at the end); prints what the runs will use.
    ``history`` is IPython's ``In`` (an unknown parameter that papermill injected is refused by
    name)."""
    reject_unknown_parameters(history, NOTEBOOK)
    data = locate_data()
    source = Path(data_path or data.mnist_training)
    device = resolve_device(device)
    at_least(
        dict(
            processes=processes,
            epochs=epochs,
            launches=launches,
            batch_size=batch_size,
            num_threads=num_threads,
            demo_records=demo_records,
            launch_timeout=launch_timeout,
        ),
        {
            "processes": (2, "the notebook compares one process with several"),
            "epochs": (2, "the first epoch of each launch is an untimed warm-up"),
            "launches": (
                2,
                "a 95% interval needs two launches of each configuration (3 or more give a useful one)",
            ),
            **dict.fromkeys(("batch_size", "num_threads", "demo_records", "launch_timeout"), 1),
        },
    )
    gpus = gpu_count()
    if device == "gpu" and gpus < processes:
        print(
            f"Skipped: the {processes}-GPU runs need {processes} GPUs, and DALI finds {gpus} on this "
            f"machine. The runs below use {processes} CPU processes with gloo instead: the same "
            "script and checks, without GPU scaling figures."
        )
        device = "cpu"
    available = record_count(source)
    if records is None:
        records = min(available, 24000 if device == "gpu" else 4096)
    elif positive_int("records", records) > available:
        raise ParameterError(
            f"parameter records is {records:,}, and {relative(source)} holds "
            f"{available:,} records: use at most {available:,}, or None"
        )
    workdir = work_folder("nb04")  # build/nb04, emptied now
    train_path = first_records(source, workdir / "training", records) if records < available else source
    demo = first_records(train_path, workdir / "demo", min(demo_records, records))
    setup = Setup(
        source,
        train_path,
        Path(test_path or data.mnist_testing),
        demo,
        device,
        "nccl" if device == "gpu" else "gloo",
        gpus,
        records,
        workdir,
        processes,
        batch_size,
        epochs,
        launches,
        learning_rate,
        demo_records,
        num_threads,
        accuracy_tolerance,
        seed,
        launch_timeout,
        results_dir,
    )
    print(
        f"{processes} processes on {device} ({setup.backend}), {gpus} GPU(s) visible; training on the "
        f"first {records:,} records of {relative(source)}"
    )
    return setup


def throughput_table(
    runs: Mapping[str, list[dict]], configurations: Mapping[str, tuple[int, int]], labels: Mapping[str, str]
) -> tuple[dict[str, dict], Any]:
    """Each configuration's samples per second over its launches: the figures (geometric mean,
    95% interval, spread) and a table of them per configuration (a pandas DataFrame)."""
    import pandas as pd

    throughput = {}
    for k, rs in runs.items():
        values = [r["samples_per_s"] for r in rs]
        estimate, low, high = rate_interval(values)
        throughput[k] = {**summarize(values), "geometric_mean": estimate, "ci95": [low, high]}
    table = pd.DataFrame.from_dict(
        orient="index",
        data={
            labels[k]: {
                "processes": configurations[k][0],
                "batch per process": configurations[k][1],
                "global batch": configurations[k][0] * configurations[k][1],
                "samples/s (geometric mean)": round(t["geometric_mean"]),
                "95% interval": f"{t['ci95'][0]:,.0f} to {t['ci95'][1]:,.0f}",
                "per process": round(t["geometric_mean"] / configurations[k][0]),
                "CV": f"{t['cv']:.1%}" + (" (noisy)" if t["noisy"] else ""),
                "launches": t["n"],
                "timed steps per launch": runs[k][0]["timed_steps"],
            }
            for k, t in throughput.items()
        },
    )
    shown = ["processes", "global batch", "samples/s (geometric mean)", "95% interval", "per process", "CV"]
    return throughput, fold(table, shown)


def compare_accuracy(runs: Mapping[str, list[dict]], labels: Mapping[str, str], tolerance: float) -> dict:
    """The held-out accuracies of the two configurations that must match, all processes
    (``multi``) and 1 process at the same global batch (``single_global``): each launch's, their
    means, the gap between the means in points and whether it is within ``tolerance`` points.
    Prints the sentence that says so."""
    per_launch = {k: [r["held_out_accuracy"] for r in runs[k]] for k in ("single_global", "multi")}
    mean = {k: statistics.fmean(v) for k, v in per_launch.items()}
    gap = abs(mean["multi"] - mean["single_global"]) * 100
    launches = len(per_launch["multi"])

    def spread(values: list[float]) -> str:
        return f"{min(values):.2%} to {max(values):.2%}" if len(values) > 1 else f"{values[0]:.2%}"

    print(
        f"Held-out accuracy, mean over {launches} launches: {mean['single_global']:.2%} for "
        f"{labels['single_global']} (launches: {spread(per_launch['single_global'])}), "
        f"{mean['multi']:.2%} for {labels['multi']} ({spread(per_launch['multi'])}): "
        f"{gap:.2f} points apart, {'within' if gap <= tolerance else 'more than'} the "
        f"{tolerance:g} point(s) allowed."
    )
    return {
        "per_launch": per_launch,
        "mean": mean,
        "gap_points": gap,
        "tolerance_points": tolerance,
        "within": gap <= tolerance,
        "launches": launches,
    }


def record(
    setup: Setup,
    *,
    runs: Mapping[str, list[dict]],
    labels: Mapping[str, str],
    configurations: Mapping[str, tuple[int, int]],
    launch_order: list,
    throughput: Mapping[str, dict],
    weak: Ratio,
    strong: Ratio,
    goals: Mapping[str, dict[str, Any]],
    accuracy: Mapping[str, Any],
    checked: Any,
    padding: int,
    failure: Any,
    too_many_processes: str,
    two_nodes: Any,
) -> Record:
    """The notebook's record, from its set-up and what its lessons made. The goal is stated for
    GPUs: a run on CPU processes records its ratio with the verdict ``None`` (not judged), never a
    verdict that every page says it does not give."""
    if setup.device != "gpu":
        goals = {name: {**goal, "verdict": None} for name, goal in goals.items()}
    mean_accuracy = accuracy["mean"]
    headline = {
        "processes": setup.processes,
        "samples_per_s_single": throughput["single"]["geometric_mean"],
        "samples_per_s_multi": throughput["multi"]["geometric_mean"],
        "speedup_weak": weak.ratio,
        "speedup_strong": strong.ratio,
        "accuracy_single": mean_accuracy["single_global"],
        "accuracy_multi": mean_accuracy["multi"],
    }
    results = {
        "runs": dict(runs),
        "labels": dict(labels),
        "configurations": dict(configurations),
        "launch_order": launch_order,
        "throughput": dict(throughput),
        "goals": dict(goals),
        "strong_scaling": strong.as_record("launches"),
        "accuracy": dict(accuracy),
        "coverage_check": checked,
        "padding_per_epoch_multi": padding,
        "failing_rank": failure,
        "too_many_processes": too_many_processes,
        "two_nodes": two_nodes,
        "gpus_visible": setup.gpus,
    }
    return Record(setup.parameters, results, headline)


def excerpt(path: Path, first: str, last: str) -> str:
    """The lines of ``path`` from the first line that holds ``first`` to the next one that holds
    ``last``, both included, dedented by the first line's indentation."""
    lines = Path(path).read_text().splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if first in line)
        end = next(i for i in range(start, len(lines)) if last in lines[i])
    except StopIteration:
        raise ValueError(
            f"{Path(path).name}: no lines from {first!r} to {last!r}; the script "
            "changed: update the excerpt's markers"
        ) from None
    indent = len(lines[start]) - len(lines[start].lstrip())
    return "\n".join(
        line[indent:] if line[:indent].isspace() else line.lstrip() for line in lines[start : end + 1]
    )


def verdict(
    weak: Ratio, strong: Ratio, goal: float, *, gpus: bool, processes: int, global_batch: int, cores: int
) -> str:
    """What a run's scaling ratios say. On GPUs: weak and strong scaling against one GPU, the
    goal's verdict by the interval, and whether strong scaling gained less (the intervals apart).
    On CPU processes: that the ratios show how the processes share the cores, not GPU scaling."""
    verdicts = {
        "met": "met: the whole interval clears it",
        "not met": "not met: the whole interval is below it",
        "inconclusive": "inconclusive: the interval contains it",
    }
    if not gpus:
        return (
            f"These {processes} processes shared {cores} CPU cores: they were "
            + versus(weak, "one process at the same batch per process")
            + f" and {versus(strong, 'one process at the same global batch of ' + str(global_batch))}. "
            "That shows how they divide the cores, not how GPUs scale; the goal of "
            f"{goal:g}x is a goal for {processes} GPUs, not judged here: run the notebook on a "
            "machine with them."
        )
    sentence = (
        f"Weak scaling: {processes} GPUs trained {weak} the samples per second of one GPU "
        f"({weak.trials} launches each); the goal, at least {goal:g}x, is "
        f"{verdicts[weak.verdict(goal)]}. Strong scaling, the global batch fixed at "
        f"{global_batch}: {processes} GPUs were "
        + versus(strong, "one GPU", faster="faster than", slower="slower than")
        + "."
    )
    if strong.high < weak.low:
        sentence += (
            " Strong scaling gained less than weak scaling (the intervals do not overlap): "
            "each GPU gets a smaller batch, so what every step pays whatever its size "
            "weighs more; these launches do not measure which cost that is."
        )
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
    table = pd.DataFrame(
        [
            {
                "epoch": e["epoch"],
                **{k: e["coverage"][k] for k in keys},
                "per rank": e["coverage"]["per_rank"],
                "shard of each rank": e["coverage"]["shard_of_rank"],
            }
            for e in run["epochs"]
        ]
    ).set_index("epoch")
    return fold(table, keys)
