"""Notebook 04 (scaling out), CPU tier: the notebook at CI scale (2 gloo processes, a two-"node"
launch, a rank that dies), the training script's refusals, the launcher's guarantees, and the
recipe, as one process and under torchrun."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import check_clean_run
from conftest import check_goal

from helpers.data.paths import REPO_ROOT
from helpers.toolkit.benchmarking import interleaved_order
from helpers.toolkit.benchmarking import rate_interval
from helpers.toolkit.benchmarking import ratio
from helpers.toolkit.devices import gpu_available
from helpers.toolkit.parameters import ParameterError
from tools import run_notebooks
from tools import run_parameters

NOTEBOOK = REPO_ROOT / "notebooks" / "04-scaling-out.ipynb"
# its refusals of bad parameters, run in its set-up by tests/notebooks/test_notebook_refusals.py
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
        [(rank + epoch) % world for rank in range(world)] for epoch in range(len(checked["epochs"]))
    ]


@pytest.mark.notebook
def test_timed_launches_alternate_and_skip_the_bookkeeping(run04) -> None:
    document = run04.results
    runs, parameters = document.results["runs"], document.parameters
    names = ["single", "multi", "single_global"]
    assert list(runs) == names
    assert document.results["launch_order"] == [
        [k, name] for k in range(parameters["launches"]) for name in interleaved_order(names, k)
    ]
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
            assert all(e["samples"] == (run["steps_per_epoch"] - 1) * run["global_batch_size"] for e in timed)
            assert run["samples_per_s"] == pytest.approx(
                sum(e["samples"] for e in timed) / sum(e["seconds"] for e in timed)
            )
    assert runs["single"][0]["global_batch_size"] == parameters["batch_size"]
    assert runs["multi"][0]["global_batch_size"] == runs["single_global"][0]["global_batch_size"]


@pytest.mark.notebook
def test_processes_learn_like_one(run04) -> None:
    document = run04.results
    runs, headline, parameters = document.results["runs"], document.headline, document.parameters
    for launches in runs.values():
        for run in launches:
            assert run["epochs"][-1]["loss"] < run["epochs"][0]["loss"]
            assert run["captured_operators"][:4] == ["Image", "Uniform", "Rotate", "CropMirrorNormalize"]
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
    rates = {name: [run["samples_per_s"] for run in launches] for name, launches in results["runs"].items()}
    ((name, goal),) = results["goals"].items()
    # no parameter value in the name: the batch size and process count are parameters
    assert str(parameters["batch_size"]) not in name and f"{parameters['processes']} " not in name
    assert set(goal) == {"ratio", "ci95", "goal", "verdict", "launches"}
    check_goal("04-scaling-out", name, goal, len(rates["single"]), processes=parameters["processes"])
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
    """The integration run of 04's refusals (the others: tests/notebooks/test_notebook_refusals.py)."""
    run = run_notebooks.run_notebook(NOTEBOOK, tmp_path, {**_ci_parameters(), "processes": 1})
    assert not run.ok and "parameter processes must be at least 2" in run.error


# --- the recipe: the script's core, run as a user runs it (tools.recipes) -----------------------

RECIPE_RECORDS = 501  # shards of 250 and 251 records: the padding differs between the ranks
RECIPE_BATCH = 32  # 8 steps per epoch and rank
# what each rank prints per epoch, from its own copy of the loss summed over the ranks (not
# anchored to lines: with PYTHONUNBUFFERED, one rank's newline may come after the other's text)
RECIPE_LINE = re.compile(r"rank (\d+)/(\d+), epoch (\d+): (\d+) steps, mean loss (\d+\.\d{4}|nan|inf)")
# put before the recipe in the torchrun test: which records each rank's reader hands over, per
# epoch (the reader's source_info of each sample: "<path> at key <LMDB key>"); DALI's own class is
# patched, the recipe's text is not touched
OBSERVER = """import nvidia.dali.experimental.dynamic as _ndd

_next_epoch, SEEN = _ndd.readers.Caffe2.next_epoch, []


def _observed(self, *args, **kwargs):
    SEEN.append([])
    for batch in _next_epoch(self, *args, **kwargs):
        info = _ndd.get_property(batch[0], key="source_info")
        SEEN[-1].extend(bytes(info.select(i).torch().tolist()).decode() for i in range(info.batch_size))
        yield batch


_ndd.readers.Caffe2.next_epoch = _observed
"""
# put after it: what each rank hands over, in a file of its own (the ranks share one stdout)
WRITE_RANK = """
import hashlib as _hashlib
import json as _json

_weights = b"".join(p.detach().cpu().numpy().tobytes() for p in model.parameters())
with open(f"rank{rank}.json", "w") as _file:
    _json.dump({"rank": rank, "world": world, "seen": SEEN, "initialized": dist.is_initialized(),
                "checksum": _hashlib.sha256(_weights).hexdigest()}, _file)
"""


def _recipe_data(tmp_path: Path) -> Path:
    from helpers.data.data_sources import locate_data
    from helpers.data.lmdb_subset import first_records

    return first_records(locate_data(verbose=False).mnist_training, tmp_path / "data", RECIPE_RECORDS)


def _recipe_settings(data: Path, device: str, epochs: int) -> dict:
    return {
        "DATA": str(data),
        "DEVICE": device,
        "BATCH": RECIPE_BATCH,
        "EPOCHS": epochs,
        "LR": 0.05,
        "THREADS": 1,
    }


def _check_one_process(run_recipe, device: str, tmp_path: Path) -> None:
    report = run_recipe(
        NOTEBOOK,
        _recipe_settings(_recipe_data(tmp_path), device, 2),
        {
            "rank": "rank",
            "world": "world",
            "steps": "steps",
            "loss": "total.item() / world / steps",
            "images": "[list(images.torch().shape), str(images.torch().dtype), str(images.torch().device)]",
            "range": "[images.torch().min().item(), images.torch().max().item()]",
            "targets": "[targets.torch().tolist(), str(targets.torch().dtype)]",
            "initialized": "dist.is_initialized()",
            "model": "str(next(model.parameters()).device)",
        },
    )
    # without torchrun's environment: rank 0 of a group of 1, which it left at the end
    assert (report["rank"], report["world"], report["initialized"]) == (0, 1, False), report
    assert report["steps"] == math.ceil(RECIPE_RECORDS / RECIPE_BATCH)  # the whole data set, padded
    shape, dtype, on = report["images"]
    assert shape == [RECIPE_BATCH, 1, 28, 28] and dtype == "torch.float32", report  # NCHW
    low, high = report["range"]  # normalized with MNIST's mean and std: black is -0.1307 / 0.3081
    assert low == pytest.approx(-0.1307 / 0.3081, abs=1e-3) and 1 < high <= (1 - 0.1307) / 0.3081 + 1e-3
    assert on.startswith("cuda" if device == "gpu" else "cpu") and report["model"] == on, report
    labels, label_type = report["targets"]
    assert len(labels) == RECIPE_BATCH and set(labels) <= set(range(10)) and label_type == "torch.int64"
    # it learned: after 2 epochs, well below chance (ln 10 = 2.30 for 10 classes)
    assert math.isfinite(report["loss"]) and report["loss"] < 2.0, report


@pytest.mark.slow
def test_the_recipe_runs_without_the_suite(run_recipe, tmp_path: Path) -> None:
    """The recipe as one process (no torchrun), on the CPU (gloo): rank 0 of 1, the whole data
    set each epoch, NCHW floats and class indices, a loss below chance, the group left."""
    _check_one_process(run_recipe, "cpu", tmp_path)


def test_the_recipe_on_the_gpu(gpu_run, run_recipe, tmp_path: Path) -> None:
    _check_one_process(run_recipe, "gpu", tmp_path)


@pytest.mark.slow
def test_the_recipe_under_torchrun_shards_the_data_and_keeps_the_ranks_in_step(tmp_path: Path) -> None:
    """The recipe as `torchrun --nproc-per-node=2` runs it, 2 CPU processes (gloo), 2 epochs:
    in each epoch the ranks read disjoint records that together are the data set (padding aside:
    each rank repeats records of its own shard only), in the second epoch each the other's shard
    (DALI's default); both print the same finite loss, lower in the second epoch; DDP leaves
    both with the same weights."""
    from tools import recipes

    found = recipes.recipe(NOTEBOOK)
    assert found is not None
    data = _recipe_data(tmp_path)
    script = tmp_path / "recipe_04.py"
    script.write_text(OBSERVER + recipes.script(found, _recipe_settings(data, "cpu", 2), {}) + WRITE_RANK)
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2", script.name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        env={**env, "OMP_NUM_THREADS": "1"},
    )
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert [(r["rank"], r["world"], r["initialized"]) for r in ranks] == [(0, 2, False), (1, 2, False)]
    assert ranks[0]["checksum"] == ranks[1]["checksum"]  # DDP kept the replicas identical
    steps = math.ceil(math.ceil(RECIPE_RECORDS / 2) / RECIPE_BATCH)
    keys = [[[k.rsplit(" at key ", 1)[1] for k in epoch] for epoch in r["seen"]] for r in ranks]
    assert [len(epochs) for epochs in keys] == [2, 2]
    for epoch in range(2):
        mine, theirs = keys[0][epoch], keys[1][epoch]
        assert len(mine) == len(theirs) == steps * RECIPE_BATCH  # the same steps on both ranks
        # shards of 250 and 251 records, padded to 256 each by repeating their own records
        assert sorted(len(k) - len(set(k)) for k in (mine, theirs)) == [5, 6]
        assert not set(mine) & set(theirs)  # no record read by both ranks
        assert len(set(mine) | set(theirs)) == RECIPE_RECORDS  # together, the whole data set
    # DALI's default (stick_to_shard=False): each rank reads the other's shard in the second epoch
    assert set(keys[0][1]) == set(keys[1][0]) and set(keys[1][1]) == set(keys[0][0])
    printed = sorted(
        (int(e), int(r), int(w), int(s), float(loss)) for r, w, e, s, loss in RECIPE_LINE.findall(done.stdout)
    )
    assert [p[:4] for p in printed] == [
        (0, 0, 2, steps),
        (0, 1, 2, steps),
        (1, 0, 2, steps),
        (1, 1, 2, steps),
    ], done.stdout
    losses = [p[4] for p in printed]
    assert losses[0] == losses[1] and losses[2] == losses[3]  # averaged over the ranks: one value
    assert all(math.isfinite(x) for x in losses) and losses[2] < losses[0], losses
