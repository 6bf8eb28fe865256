"""GPU tier: notebook 05 in a `tools.suite run --device gpu` output folder (make test-gpu)."""

from __future__ import annotations

from collections.abc import Callable

from test_nb05 import GOALS, NAME, check_fully_captured, check_goals, check_trials

Results = Callable[[str], dict]


def test_the_h200_run_judged_every_goal_over_five_rounds_or_more(gpu_results: Results) -> None:
    document = gpu_results(NAME)
    parameters, results = document["parameters"], document["results"]
    assert document["machine"]["gpu"] and parameters["device"] == "gpu"
    assert parameters["trials"] >= 5 and set(parameters["models"]) >= {"resnet50", "resnet18"}
    assert set(results["goals"]) == set(GOALS)
    check_goals(document)
    check_trials(document)
    check_fully_captured(document)


def test_the_gpu_knobs_were_measured(gpu_results: Results) -> None:
    document = gpu_results(NAME)
    configs = document["results"]["selection"]["configs"]
    knobs = {c["knob"] for c in configs.values()}
    assert {"hw_decoder_load", "threads", "DataLoader workers"} <= knobs
    loads = {c["hw_decoder_load"] for c in configs.values() if c["knob"] == "hw_decoder_load"}
    assert loads == set(document["parameters"]["hw_decoder_loads"])
    assert document["results"]["device_memory_gib"] > 0
    for run in document["results"]["end_to_end"].values():  # training allocates through torch
        assert all(r["peak_gib"] > 0 for rows in run["trials"].values() for r in rows)


def test_the_loaders_agree_and_a_corrupt_file_is_named_on_the_gpu(gpu_results: Results) -> None:
    results = gpu_results(NAME)["results"]
    assert results["labels_agree"] and results["pixels_agree"] and results["channels_visible"]
    assert results["corrupt_file"]["named"] is True
    assert set(results["corrupt_file"]["dali_says"]) == {"cpu", "gpu"}


def test_the_profile_split_each_models_gpu_time_between_the_model_and_dali(
        gpu_results: Results) -> None:
    """One profiled epoch per model and loader: training alone runs only the model's kernels;
    fed by DALI, kernels of DALI's own streams run too; every part fits in the epoch's span."""
    document = gpu_results(NAME)
    profile = document["results"]["gpu_profile"]
    assert set(profile) == set(document["parameters"]["models"])
    for split in profile.values():
        assert set(split) == {"training alone", "pipeline mode, same knobs", "best dynamic mode"}
        assert split["training alone"]["loader_ms"] == 0
        for label, t in split.items():
            assert 0 < t["model_ms"] <= t["busy_ms"] <= t["span_ms"]
            assert t["overlap_ms"] <= min(t["model_ms"], t["loader_ms"]) + 1e-6
            if label != "training alone":
                assert t["loader_ms"] > 0 and t["loader_kernels"]
