"""helpers.lessons.nb04_scaling_out: notebook 04's script excerpt, its scaling sentences, its
throughput table, and its set-up's and record's contents."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pytest

from helpers.data.paths import REPO_ROOT
from helpers.lessons.nb04_scaling_out import Setup
from helpers.lessons.nb04_scaling_out import coverage_table
from helpers.lessons.nb04_scaling_out import excerpt
from helpers.lessons.nb04_scaling_out import read_results
from helpers.lessons.nb04_scaling_out import verdict
from helpers.toolkit.benchmarking import Ratio

SCRIPT = REPO_ROOT / "notebooks" / "scripts" / "train_ddp.py"


def test_the_excerpt_holds_the_sharded_reader_dedented() -> None:
    text = excerpt(SCRIPT, "reader = ndd.readers.Caffe2(path=args.data, shard_id", "max_batch_size=")
    lines = text.splitlines()
    assert lines[0].startswith("reader = ndd.readers.Caffe2(") and lines[-1].strip().endswith(")")
    assert "shard_id=rank, num_shards=world" in text and "pad_last_batch=True" in text
    loop = excerpt(SCRIPT, "for step, (jpegs, labels) in enumerate(", "optimizer.step()")
    assert loop.startswith("for step") and "capture=True" in loop
    assert loop.splitlines()[-1] == "    optimizer.step()"


def test_an_excerpt_whose_markers_are_gone_says_to_update_them(tmp_path) -> None:
    script = tmp_path / "s.py"
    script.write_text("a = 1\nb = 2\n")
    with pytest.raises(ValueError, match="s.py: no lines from 'a =' to 'zzz'.*update the excerpt"):
        excerpt(script, "a =", "zzz")


def test_on_cpu_processes_the_verdict_says_what_the_ratios_cannot_show() -> None:
    text = verdict(
        Ratio(0.9, 0.85, 0.95, 3, True),
        Ratio(0.8, 0.7, 0.9, 3, True),
        1.9,
        gpus=False,
        processes=2,
        global_batch=128,
        cores=2,
    )
    assert "shared 2 CPU cores" in text and "not how GPUs scale" in text and "not judged here" in text
    assert "slower than one process at the same batch per process (0.90x [0.85-0.95])" in text
    assert "slower than one process at the same global batch of 128 (0.80x [0.70-0.90])" in text


@pytest.mark.parametrize(
    ("weak", "verdict_words"),
    [
        (Ratio(1.95, 1.92, 1.98, 3, True), "met: the whole interval clears it"),
        (Ratio(1.5, 1.4, 1.6, 3, True), "not met: the whole interval is below it"),
        (Ratio(1.9, 1.7, 2.1, 3, True), "inconclusive: the interval contains it"),
    ],
)
def test_on_gpus_the_goal_follows_the_interval(weak, verdict_words) -> None:
    text = verdict(
        weak, Ratio(1.5, 1.45, 1.55, 3, True), 1.9, gpus=True, processes=2, global_batch=128, cores=16
    )
    assert verdict_words in text and "faster than one GPU" in text


def test_strong_scaling_is_said_to_gain_less_only_when_the_intervals_are_apart() -> None:
    apart = verdict(
        Ratio(1.9, 1.85, 1.95, 3, True),
        Ratio(1.3, 1.2, 1.4, 3, True),
        1.9,
        gpus=True,
        processes=2,
        global_batch=128,
        cores=16,
    )
    overlapping = verdict(
        Ratio(1.9, 1.5, 1.95, 3, True),
        Ratio(1.6, 1.2, 1.7, 3, True),
        1.9,
        gpus=True,
        processes=2,
        global_batch=128,
        cores=16,
    )
    assert "gained less" in apart and "gained less" not in overlapping


def test_a_launch_result_is_read_without_its_arguments_and_its_coverage_tabled(tmp_path) -> None:
    out = tmp_path / "r.json"
    coverage = {
        "samples": 10,
        "distinct": 9,
        "data_set": 9,
        "duplicates": 1,
        "shared_between_ranks": 0,
        "complete": True,
        "per_rank": [5, 5],
        "shard_of_rank": [1, 0],
    }
    out.write_text(
        json.dumps({"arguments": {"data": "/somewhere"}, "epochs": [{"epoch": 1, "coverage": coverage}]})
    )
    run = read_results(out)
    assert "arguments" not in run
    table = coverage_table(run)
    assert table.loc[1, "duplicates"] == 1 and table.loc[1, "shard of each rank"] == [1, 0]


def test_the_throughput_table_gives_each_configuration_its_geometric_mean_and_interval() -> None:
    from helpers.lessons.nb04_scaling_out import throughput_table

    runs = {
        "single": [{"samples_per_s": r, "timed_steps": 192} for r in (100.0, 110.0, 105.0)],
        "multi": [{"samples_per_s": r, "timed_steps": 96} for r in (180.0, 200.0, 190.0)],
    }
    throughput, table = throughput_table(
        runs, {"single": (1, 64), "multi": (2, 64)}, {"single": "1 process", "multi": "all processes"}
    )
    estimate = (180.0 * 200.0 * 190.0) ** (1 / 3)  # 189.8: the geometric mean, not the median 190
    assert throughput["multi"]["geometric_mean"] == pytest.approx(estimate, rel=1e-9)
    assert throughput["multi"]["median"] == 190.0 and throughput["single"]["n"] == 3
    # the 95% interval of the geometric mean: Student's t with 2 degrees of freedom (4.303, not the
    # normal 1.96) on the logarithms of this configuration's 3 launches
    logs = [math.log(v) for v in (180.0, 200.0, 190.0)]
    half = 4.302652729911275 * statistics.stdev(logs) / math.sqrt(3)
    assert throughput["multi"]["ci95"] == pytest.approx(
        [math.exp(statistics.fmean(logs) - half), math.exp(statistics.fmean(logs) + half)], rel=1e-6
    )
    assert table.loc["all processes", "per process"] == 95
    assert table.loc["all processes", "global batch"] == 128
    assert table.loc["1 process", "timed steps per launch"] == 192


def setup_of(device: str, tmp_path: Path) -> Setup:
    """A set-up as notebook 04's ``set_up`` makes it, for a run on ``device``, without copying data."""
    source = REPO_ROOT / "data" / "dali_extra" / "db" / "MNIST" / "training"
    return Setup(
        source=source,
        train_path=tmp_path / "training",
        test_path=source.parent / "testing",
        demo_data=tmp_path / "demo",
        device=device,
        backend="nccl" if device == "gpu" else "gloo",
        gpus=2 if device == "gpu" else 0,
        records=512,
        workdir=tmp_path,
        processes=2,
        batch_size=64,
        epochs=3,
        launches=3,
        learning_rate=0.05,
        demo_records=500,
        num_threads=1,
        accuracy_tolerance=5.0,
        seed=7,
        launch_timeout=300,
        results_dir=str(tmp_path / "results"),
    )


def test_the_set_up_records_its_resolved_parameters_and_nothing_of_this_machine(tmp_path: Path) -> None:
    from dataclasses import FrozenInstanceError

    setup = setup_of("cpu", tmp_path)
    assert setup.parameters == {
        "data_path": "data/dali_extra/db/MNIST/training",
        "test_path": "data/dali_extra/db/MNIST/testing",
        "device": "cpu",
        "backend": "gloo",
        "processes": 2,
        "batch_size": 64,
        "epochs": 3,
        "launches": 3,
        "learning_rate": 0.05,
        "demo_records": 500,
        "num_threads": 1,
        "accuracy_tolerance": 5.0,
        "seed": 7,
        "records": 512,
        "launch_timeout": 300,
    }  # no work folder, GPU count or results folder
    with pytest.raises(FrozenInstanceError):
        setup.device = "gpu"  # type: ignore[misc]


def lessons_of() -> dict:
    """What notebook 04's lessons make, at the size ``record`` reads."""
    from helpers.toolkit.benchmarking import ratio

    rates = {
        "single": [100.0, 110.0, 105.0],
        "multi": [90.0, 95.0, 100.0],
        "single_global": [99.0, 101.0, 98.0],
    }
    weak, strong = ratio(rates["multi"], rates["single"]), ratio(rates["multi"], rates["single_global"])
    return {
        "runs": {},
        "labels": {},
        "configurations": {},
        "launch_order": [],
        "throughput": {k: {"geometric_mean": v[0]} for k, v in rates.items()},
        "weak": weak,
        "strong": strong,
        "goals": {"weak scaling": weak.goal(1.9, count="launches")},
        "accuracy": {"mean": {"single_global": 0.91, "multi": 0.9}},
        "checked": None,
        "padding": 0,
        "failure": None,
        "too_many_processes": "",
        "two_nodes": None,
    }


def test_the_record_takes_its_headline_from_the_lessons_and_its_parameters_from_the_set_up(
    tmp_path: Path,
) -> None:
    from helpers.lessons.nb04_scaling_out import record
    from helpers.toolkit.benchmarking import Record

    setup, lessons = setup_of("gpu", tmp_path), lessons_of()
    recorded = record(setup, **lessons)
    assert isinstance(recorded, Record) and recorded.parameters == setup.parameters
    assert recorded.headline == {
        "processes": 2,
        "samples_per_s_single": 100.0,
        "samples_per_s_multi": 90.0,
        "speedup_weak": lessons["weak"].ratio,
        "speedup_strong": lessons["strong"].ratio,
        "accuracy_single": 0.91,
        "accuracy_multi": 0.9,
    }
    assert recorded.results["strong_scaling"] == lessons["strong"].as_record("launches")
    assert recorded.results["gpus_visible"] == 2


def test_a_run_on_cpu_processes_records_no_verdict_for_a_goal_stated_for_gpus(tmp_path: Path) -> None:
    from helpers.lessons.nb04_scaling_out import record
    from tools.goal_check import goal_problems

    lessons = lessons_of()
    (goal,) = record(setup_of("cpu", tmp_path), **lessons).results["goals"].values()
    assert goal["verdict"] is None and goal["goal"] == 1.9 and goal["launches"] == 3
    assert goal_problems(goal) == []  # not judged is not a problem; a wrong verdict is
    assert goal_problems({**goal, "verdict": "met"})
    assert lessons["goals"]["weak scaling"]["verdict"] == "not met"  # the lessons' own goal is left as it was
    on_gpus = record(setup_of("gpu", tmp_path), **lessons).results
    assert on_gpus["goals"]["weak scaling"]["verdict"] == "not met"


def test_no_committed_record_of_cpu_processes_judges_the_gpu_goal() -> None:
    from tools.records import records

    held = [
        r
        for r in records()
        if "04-scaling-out" in r.notebooks
        and r.notebooks["04-scaling-out"].parameters.get("backend") == "gloo"
    ]
    assert held, "no committed record of notebook 04 on CPU processes"
    for record in held:
        for name, goal in (record.notebooks["04-scaling-out"].results.get("goals") or {}).items():
            assert goal["verdict"] is None, (record.name, name, goal["verdict"])


def test_the_accuracies_compared_are_the_means_of_the_launches_and_their_gap_in_points(capsys) -> None:
    from helpers.lessons.nb04_scaling_out import compare_accuracy

    runs = {
        "single": [{"held_out_accuracy": 0.5}],  # not compared: another global batch
        "single_global": [{"held_out_accuracy": 0.90}, {"held_out_accuracy": 0.92}],
        "multi": [{"held_out_accuracy": 0.88}, {"held_out_accuracy": 0.90}],
    }
    labels = {"single_global": "1 process, global batch", "multi": "all processes"}
    found = compare_accuracy(runs, labels, tolerance=1.0)
    assert found["mean"] == pytest.approx({"single_global": 0.91, "multi": 0.89})
    assert found["gap_points"] == pytest.approx(2.0) and not found["within"] and found["launches"] == 2
    said = capsys.readouterr().out
    assert "91.00% for 1 process, global batch (launches: 90.00% to 92.00%)" in said
    assert "2.00 points apart, more than the 1 point(s) allowed." in said
    assert compare_accuracy(runs, labels, tolerance=2.5)["within"]
