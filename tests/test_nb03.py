"""Notebook 03 (feeding PyTorch fast): executed at CI scale on the CPU tier, and the checks of a
GPU run (skipped without --gpu-run)."""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import pytest
from conftest import check_goal

from helpers.parameters import ParameterError
from helpers.paths import REPO_ROOT
from tools import suite

NOTEBOOK = REPO_ROOT / "notebooks" / "03-feeding-pytorch-fast.ipynb"
# its refusals of bad parameters, run in its set-up by tests/test_notebook_refusals.py
REFUSALS = [
    ({"batch_sizes": [64, 100], "device": "cpu"}, ParameterError,
     "every loader batch size must be a multiple of the first (64)"),
]
NAME = NOTEBOOK.stem
ROLES = ("eager, batch 64", "capture, batch 64", "pipeline mode, default", "best dynamic mode",
         "best pipeline mode", "pipeline mode, same knobs", "best DataLoader", "ceiling")
GOALS = {"best dynamic / pipeline mode default": 1.5, "best dynamic / best DataLoader": 1.5,
         "best dynamic / pipeline mode, same knobs": 0.95, "best dynamic / ceiling": 0.8}


@pytest.fixture(scope="module")
def document(ci_run: dict[str, suite.NotebookRun]) -> dict:
    """What notebook 03 recorded in the shared CI-scale run (conftest's ``ci_run``)."""
    run = ci_run[NAME]
    assert run.ok, run.error
    return run.results


def check_goals(document: dict) -> None:
    """Every goal: the ratio of the confirmation rounds' rates, inside its interval, with the
    verdict that the interval gives."""
    results, parameters = document.results, document.parameters
    goals, trials = results["goals"], results["confirmation"]["trials"]
    picks = results["confirmation"]["picks"]
    assert set(goals) == set(GOALS)
    for name, g in goals.items():
        check_goal(g, GOALS[name], parameters["trials"])
    # the ratio is the geometric mean of the per-round ratios of the two configurations
    a = [r["samples_per_s"] for r in trials[picks["best dynamic mode"]]]
    b = [r["samples_per_s"] for r in trials[picks["ceiling"]]]
    per_round = [math.log(x / y) for x, y in zip(a, b, strict=True)]
    assert goals["best dynamic / ceiling"]["ratio"] == pytest.approx(
        math.exp(sum(per_round) / len(per_round)))


@pytest.mark.notebook
def test_selection_then_confirmation_with_interleaved_trials(document) -> None:
    results, parameters = document.results, document.parameters
    selection, confirmation = results["selection"], results["confirmation"]
    assert all(len(t) == parameters["selection_trials"] for t in selection["trials"].values())
    assert all(len(t) == parameters["trials"] for t in confirmation["trials"].values())
    assert set(confirmation["picks"]) == set(ROLES)
    picks = confirmation["picks"]
    # the picks are the selection's best by median, measured again in the confirmation
    configs = selection["configs"]
    dynamic = [n for n, c in configs.items() if c["loader"] in ("eager", "capture", "nodes")]
    best = max(dynamic, key=lambda n: statistics.median(r["samples_per_s"]
                                                        for r in selection["trials"][n]))
    assert picks["best dynamic mode"] == best
    same = confirmation["configs"][picks["pipeline mode, same knobs"]]
    best_config = configs[best]
    assert same["loader"] == "pipeline" and all(
        same[k] == best_config[k] for k in ("batch", "decode", "threads", "hw_decoder_load"))
    assert {c["workers"] for c in configs.values() if c["loader"] == "dataloader"} == \
        set(parameters["dataloader_workers"])
    names = list(configs)
    assert len(names) == len(set(names))  # no configuration under two names
    assert all(r["samples_per_s"] > 0 for rows in confirmation["trials"].values() for r in rows)


@pytest.mark.notebook
def test_goals_carry_ratio_interval_verdict_and_trials(document) -> None:
    check_goals(document)


@pytest.mark.notebook
def test_every_loader_reads_every_record_once_in_every_epoch(document) -> None:
    results, parameters = document.results, document.parameters
    epochs = parameters["warmup_epochs"] + parameters["timed_epochs"]
    keys = results["epoch_keys"]
    assert {"eager", "capture", "pipeline", "dataloader"} <= set(keys)
    assert all(len(v) == epochs and all(v) for v in keys.values())
    assert results["same_records_every_epoch"] is True
    assert parameters["epoch_records"] % max(parameters["batch_sizes"]) == 0


@pytest.mark.notebook
def test_loaders_deliver_the_same_data(document) -> None:
    results = document.results
    assert results["dali_loaders_bit_equal"] is True
    checks = results["equal_data"]
    assert {"capture, no rotation", "pipeline, no rotation", "dataloader, no rotation",
            "capture, rotated", "capture, background thread, rotated"} <= set(checks)
    assert all(c["labels_equal"] and c["max_grey_levels"] <= 1.0 for c in checks.values())
    assert results["rotated_bit_equal"] is True  # same RNG seed, same angles, same decoder


@pytest.mark.notebook
def test_time_split_and_profile(document) -> None:
    results = document.results
    split = results["time_split"]
    assert set(split) == set(results["confirmation"]["trials"])
    assert all(v["data_ms_per_step"] > 0 and v["train_ms_per_step"] > 0 for v in split.values())
    assert results["captured_operators"] == ["Image", "Uniform", "Rotate", "CropMirrorNormalize",
                                             "Squeeze", "Cast"]
    profile = results["profile"]
    assert profile["top"] and sum(profile["share_by_package"].values()) == pytest.approx(1.0)


@pytest.mark.notebook
def test_batch_sizes_that_are_not_multiples_of_the_first_are_refused_in_a_run(tmp_path: Path) -> None:
    """The integration run of 03's refusals (the others: tests/test_notebook_refusals.py)."""
    run = suite.run_notebook(NOTEBOOK, tmp_path / "run", {"batch_sizes": [64, 100], "device": "cpu"})
    assert not run.ok and "must be a multiple of the first (64)" in run.error
