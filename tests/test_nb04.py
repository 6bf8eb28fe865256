"""Notebook 04 (scaling out), CPU tier: the notebook at CI scale (2 gloo processes, a two-"node"
launch, a rank that dies), the training script's refusals, and the launcher's guarantees."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import check_clean_run
from conftest import check_goal

from helpers.benchmarking import interleaved_order
from helpers.benchmarking import rate_interval
from helpers.benchmarking import ratio
from helpers.devices import gpu_available
from helpers.parameters import ParameterError
from helpers.paths import REPO_ROOT
from tools import run_notebooks
from tools import run_parameters

NOTEBOOK = REPO_ROOT / "notebooks" / "04-scaling-out.ipynb"
# its refusals of bad parameters, run in its set-up by tests/test_notebook_refusals.py
REFUSALS = [
    ({"processes": 1}, ParameterError, "parameter processes must be at least 2"),
    ({"records": 10**9}, ParameterError, "records: use at most"),
]
SCRIPT = REPO_ROOT / "notebooks" / "scripts" / "train_ddp.py"


def _ci_parameters() -> dict:
    return run_parameters.parameters_for(NOTEBOOK, "ci", "auto")  # the notebook's metadata


@pytest.fixture(scope="module")
def run04(ci_run: dict[str, run_notebooks.NotebookRun]) -> run_notebooks.NotebookRun:
    """Notebook 04 in the shared CI-scale run (conftest's ``ci_run``)."""
    run = ci_run[NOTEBOOK.stem]
    assert run.ok, run.error
    return run


@pytest.mark.notebook
def test_ci_run_has_no_errors_and_ends_with_the_headline(run04) -> None:
    check_clean_run(run04, "nb04")


def _check_coverage(run: dict) -> None:
    for epoch in run["epochs"]:
        c = epoch["coverage"]
        assert c["complete"] and c["distinct"] == c["data_set"] == run["data_set"]
        assert c["shared_between_ranks"] == 0
        assert c["samples"] == run["steps_per_epoch"] * run["global_batch_size"]
        assert c["duplicates"] == c["samples"] - c["data_set"]
        assert len(c["per_rank"]) == run["world_size"]
        assert len(set(c["per_rank"])) == 1  # padding gives every rank the same steps


@pytest.mark.notebook
def test_the_debug_check_saw_every_record_once_and_shards_rotate(run04) -> None:
    document = run04.results
    checked, parameters = document.results["coverage_check"], document.parameters
    assert document.parameters["device"] == "cpu" or gpu_available()
    assert checked["coverage_checked"] and not checked["stick_to_shard"]
    assert checked["world_size"] == parameters["processes"]
    assert checked["data_set"] == min(parameters["demo_records"], parameters["records"])
    _check_coverage(checked)
    world = checked["world_size"]
    # DALI's default: every rank moves on to the next shard after each epoch
    assert [e["coverage"]["shard_of_rank"] for e in checked["epochs"]] == [
        [(rank + epoch) % world for rank in range(world)] for epoch in range(len(checked["epochs"]))]


@pytest.mark.notebook
def test_timed_launches_alternate_and_skip_the_bookkeeping(run04) -> None:
    document = run04.results
    runs, parameters = document.results["runs"], document.parameters
    names = ["single", "multi", "single_global"]
    assert list(runs) == names
    assert document.results["launch_order"] == [
        [k, name] for k in range(parameters["launches"]) for name in interleaved_order(names, k)]
    for name, world in zip(names, (1, parameters["processes"], 1), strict=True):
        assert len(runs[name]) == parameters["launches"]
        for run in runs[name]:
            assert run["world_size"] == world and run["data_set"] == parameters["records"]
            assert len(run["epochs"]) == parameters["epochs"]
            assert not run["coverage_checked"]
            assert all(e["coverage"] is None for e in run["epochs"])
            timed = run["epochs"][1:]  # the warm-up epoch is left out
            # the batches DALI made ahead of a timed epoch (DALI 2.4: one) are trained on untimed
            assert run["epochs"][0]["untimed_steps"] == 0
            assert all(e["untimed_steps"] == 1 for e in timed)
            assert run["timed_steps"] == (parameters["epochs"] - 1) * (run["steps_per_epoch"] - 1)
            assert all(e["samples"] == (run["steps_per_epoch"] - 1) * run["global_batch_size"]
                       for e in timed)
            assert run["samples_per_s"] == pytest.approx(
                sum(e["samples"] for e in timed) / sum(e["seconds"] for e in timed))
    assert runs["single"][0]["global_batch_size"] == parameters["batch_size"]
    assert runs["multi"][0]["global_batch_size"] == runs["single_global"][0]["global_batch_size"]


@pytest.mark.notebook
def test_processes_learn_like_one(run04) -> None:
    document = run04.results
    runs, headline, parameters = document.results["runs"], document.headline, document.parameters
    for launches in runs.values():
        for run in launches:
            assert run["epochs"][-1]["loss"] < run["epochs"][0]["loss"]
            assert run["captured_operators"][:4] == ["Image", "Uniform", "Rotate",
                                                     "CropMirrorNormalize"]
    accuracy = document.results["accuracy"]
    for key, name in (("accuracy_single", "single_global"), ("accuracy_multi", "multi")):
        per_launch = [run["held_out_accuracy"] for run in runs[name]]
        assert headline[key] == pytest.approx(sum(per_launch) / len(per_launch))
    gap = abs(headline["accuracy_multi"] - headline["accuracy_single"]) * 100
    assert accuracy["gap_points"] == pytest.approx(gap)
    assert accuracy["within"] and gap <= parameters["accuracy_tolerance"]
    assert headline["accuracy_multi"] > 0.5  # far above chance (10 classes)


@pytest.mark.notebook
def test_scaling_ratios_come_with_intervals_and_verdicts(run04) -> None:
    document = run04.results
    results, headline, parameters = document.results, document.headline, document.parameters
    rates = {name: [run["samples_per_s"] for run in launches]
             for name, launches in results["runs"].items()}
    (name, goal), = results["goals"].items()
    # no parameter value in the name: the batch size and process count are parameters
    assert str(parameters["batch_size"]) not in name and f"{parameters['processes']} " not in name
    assert set(goal) == {"ratio", "ci95", "goal", "verdict", "launches"}
    check_goal(goal, 0.95 * parameters["processes"], len(rates["single"]))
    assert goal["launches"] >= parameters["launches"]
    weak = ratio(rates["multi"], rates["single"])  # paired by round
    judged = weak.goal(goal["goal"], count="launches")
    # the goal is stated for GPUs: CPU processes (gloo) record its ratio and no verdict
    assert goal == (judged if parameters["backend"] == "nccl" else {**judged, "verdict": None})
    assert headline["speedup_weak"] == pytest.approx(weak.ratio)
    strong, recomputed = results["strong_scaling"], ratio(rates["multi"], rates["single_global"])
    assert strong["launches"] >= parameters["launches"]
    assert strong["ratio"] == pytest.approx(recomputed.ratio)
    assert headline["speedup_strong"] == pytest.approx(recomputed.ratio)
    for key, name in (("samples_per_s_single", "single"), ("samples_per_s_multi", "multi")):
        assert headline[key] == pytest.approx(rate_interval(rates[name])[0])
        assert results["throughput"][name]["n"] == parameters["launches"]


@pytest.mark.notebook
def test_a_dying_rank_fails_the_launch_and_writes_nothing(run04) -> None:
    failure = run04.results.results["failing_rank"]
    rank = run04.results.parameters["processes"] - 1
    assert failure["returncode"] != 0 and failure["results_written"] is False
    assert f"rank {rank} exited with status 3 first" in failure["message"]
    assert failure["crash_line"].startswith(f"rank {rank}: simulated crash at step 3")
    assert failure["seconds"] < 120  # torchrun stopped the survivors: no collective timeout


@pytest.mark.notebook
def test_two_nodes_met_at_one_rendezvous_and_stuck_to_their_shards(run04) -> None:
    two, parameters = run04.results.results["two_nodes"], run04.results.parameters
    assert two["world_size"] == 2 and two["backend"] == "gloo" and two["stick_to_shard"]
    assert two["data_set"] == min(parameters["demo_records"], parameters["records"])
    _check_coverage(two)
    for e in two["epochs"]:  # each rank the same samples; beyond the data set, only the padding
        per_rank = e["coverage"]["per_rank"]
        assert per_rank[0] == per_rank[1] and sum(per_rank) - two["data_set"] == e["coverage"]["duplicates"]
    assert [e["coverage"]["shard_of_rank"] for e in two["epochs"]] == [[0, 1]] * len(two["epochs"])


@pytest.mark.notebook
def test_too_few_processes_are_refused_by_name_in_a_run(tmp_path: Path) -> None:
    """The integration run of 04's refusals (the others: tests/test_notebook_refusals.py)."""
    run = run_notebooks.run_notebook(NOTEBOOK, tmp_path, {**_ci_parameters(), "processes": 1})
    assert not run.ok and "parameter processes must be at least 2" in run.error
