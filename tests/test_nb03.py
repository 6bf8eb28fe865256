"""Notebook 03 (feeding PyTorch fast): executed at CI scale on the CPU tier, and the checks of a
GPU run (skipped without --gpu-run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.data_sources import REPO_ROOT
from tools import suite

NOTEBOOK = REPO_ROOT / "notebooks" / "03-feeding-pytorch-fast.ipynb"
NAME = NOTEBOOK.stem
LOADERS = ("eager", "capture", "pipeline", "dataloader")
HEADLINE = ("eager_samples_per_s", "capture_samples_per_s", "pipeline_default_samples_per_s",
            "dataloader_samples_per_s", "ceiling_samples_per_s", "best_dynamic_samples_per_s",
            "best_pipeline_samples_per_s", "best_over_pipeline", "best_over_dataloader",
            "best_over_best_pipeline", "best_over_ceiling")


@pytest.fixture(scope="module")
def document(ci_run: dict[str, suite.NotebookRun]) -> dict:
    """What notebook 03 recorded in the shared CI-scale run (conftest's ``ci_run``)."""
    run = ci_run[NAME]
    assert run.ok, run.error
    return run.results


@pytest.mark.notebook
def test_every_loader_has_a_throughput_at_every_batch_size(document) -> None:
    parameters, runs = document["parameters"], document["results"]["runs"]
    for loader in LOADERS:
        for batch in parameters["batch_sizes"]:
            trials = runs[f"{loader} b{batch}"]["trials"]
            assert len(trials) == parameters["trials"]
            assert all(len(t["epoch_samples_per_s"]) == parameters["timed_epochs"] for t in trials)
            assert all(rate > 0 for t in trials for rate in t["epoch_samples_per_s"])
    assert runs["ceiling b64"]["trials"]
    assert all(document["headline"][key] > 0 for key in HEADLINE)


@pytest.mark.notebook
def test_time_split_is_measured_per_loader(document) -> None:
    split = document["results"]["time_split"]
    batches = document["parameters"]["batch_sizes"]
    assert set(split) == {f"{loader} b{b}" for loader in LOADERS for b in batches} | {"ceiling b64"}
    assert all(v["data_ms_per_step"] > 0 and v["train_ms_per_step"] > 0 for v in split.values())
    # an epoch of the ceiling only slices tensors; eager mode decodes and rotates on the way
    assert split["ceiling b64"]["data_ms_per_step"] < split["eager b64"]["data_ms_per_step"]


@pytest.mark.notebook
def test_loaders_deliver_the_same_data(document) -> None:
    results = document["results"]
    assert results["dali_loaders_bit_equal"] is True
    checks = results["equal_data"]
    assert {"capture, no rotation, CPU decode", "pipeline, no rotation, CPU decode",
            "dataloader, no rotation, CPU decode", "capture, rotated, CPU decode"} <= set(checks)
    assert all(c["labels_equal"] and c["max_grey_levels"] <= 1.0 for c in checks.values())
    assert results["rotated_bit_equal"] is True  # same RNG seed, same angles, same decoder


@pytest.mark.notebook
def test_knobs_are_measured_in_the_same_run(document) -> None:
    results, parameters = document["results"], document["parameters"]
    knobs = results["knobs"]
    assert {"comparison", "large-batch training", "threads", "labels cast in torch",
            "overlap"} <= set(knobs)
    assert {k["threads"] for k in knobs["threads"]} == set(parameters["thread_counts"])
    assert {k["step"] for k in knobs["large-batch training"]} == set(parameters["batch_sizes"][1:])
    overlap = {(k["loader"], k["overlap"]) for k in knobs["overlap"]}
    assert ("capture", "thread") in overlap
    assert (("nodes", "prefetcher") in overlap) == results["nodes_available"]
    assert all(k["samples_per_s"] > 0 and 0 <= k["accuracy"] <= 1
               for rows in knobs.values() for k in rows)


@pytest.mark.notebook
def test_capture_captures_every_call_and_the_profile_names_costs(document) -> None:
    results = document["results"]
    assert results["captured_operators"] == ["Image", "Uniform", "Rotate", "CropMirrorNormalize",
                                             "Squeeze", "Cast"]
    profile = results["profile"]
    assert profile["top"] and profile["total_us_per_step"] > 0
    assert sum(profile["share_by_package"].values()) == pytest.approx(1.0)
    assert "DALI (Python side)" in profile["share_by_package"]


@pytest.mark.notebook
def test_goals_are_ratios_of_the_run_and_judged_only_on_a_gpu(document) -> None:
    headline, results = document["headline"], document["results"]
    goals = results["goals"]
    assert goals["best dynamic / pipeline mode default"]["ratio"] == pytest.approx(
        headline["best_dynamic_samples_per_s"] / headline["pipeline_default_samples_per_s"])
    assert goals["best dynamic / ceiling"]["ratio"] == pytest.approx(headline["best_over_ceiling"])
    on_gpu = document["parameters"]["device"] == "gpu"
    assert all((g["met"] is None) != on_gpu for g in goals.values())


@pytest.mark.notebook
def test_loader_batch_sizes_must_be_multiples_of_the_step(tmp_path: Path) -> None:
    run = suite.run_notebook(NOTEBOOK, tmp_path, {"batch_sizes": [64, 100], "device": "cpu"})
    assert not run.ok and "must be a multiple of the first (64)" in run.error


# GPU tier: checks of a `tools.suite run --device gpu` output folder (make test-gpu)


def _gpu_results(gpu_run: Path) -> dict:
    path = gpu_run / "results" / f"{NAME}.json"
    assert path.is_file(), f"{NAME} wrote no results: {path}"
    return json.loads(path.read_text())


def test_gpu_run_measured_the_gpu_knobs(gpu_run: Path) -> None:
    document = _gpu_results(gpu_run)
    results, parameters = document["results"], document["parameters"]
    assert document["machine"]["gpu"] and parameters["device"] == "gpu"
    knobs = results["knobs"]
    assert {k["batch"] for k in knobs["decode on the CPU"]} == set(parameters["batch_sizes"])
    assert {k["hw_decoder_load"] for k in knobs["hw_decoder_load"]} == set(
        parameters["hw_decoder_loads"])
    assert results["dali_loaders_bit_equal"] is True and results["rotated_bit_equal"] is True
    assert all(isinstance(g["met"], bool) for g in results["goals"].values())


def test_gpu_run_best_dynamic_configuration_keeps_accuracy(gpu_run: Path) -> None:
    results = _gpu_results(gpu_run)["results"]
    best = next(r for rows in results["knobs"].values() for r in rows
                if r["name"] == results["best"]["dynamic"])
    assert best["step"] == 64
    assert best["accuracy"] >= results["reference_accuracy"] - 0.005
