"""GPU tier: checks of a `tools.suite run --device gpu` output folder (make test-gpu)."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from tools.suite import notebooks


def _results(gpu_run: Path, name: str) -> dict:
    path = gpu_run / "results" / f"{name}.json"
    assert path.is_file(), f"{name} wrote no results: {path}"
    return json.loads(path.read_text())


@pytest.mark.parametrize("notebook", [p.stem for p in notebooks()])
def test_notebook_ran_on_the_gpu_without_errors(gpu_run: Path, notebook: str) -> None:
    executed = nbformat.read(gpu_run / "notebooks" / f"{notebook}.ipynb", as_version=4)
    errors = [c for c in executed.cells if c.cell_type == "code"
              for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, f"{notebook}: error outputs {[e['ename'] for e in errors]}"
    results = _results(gpu_run, notebook)
    assert results["machine"]["gpu"], "no GPU recorded in the results"
    parameters = results["parameters"]
    # notebook 04 runs its multi-process part on CPU processes when there are fewer GPUs than
    # processes (and says so); everything else runs on the GPU it was asked for
    too_few_gpus = results["machine"]["gpu_count"] < parameters.get("processes", 1)
    assert parameters["device"] == "gpu" or too_few_gpus, parameters


def test_getting_started_timed_every_decoder_and_hw_decoder_load(gpu_run: Path) -> None:
    document = _results(gpu_run, "01-getting-started")
    results, parameters, headline = document["results"], document["parameters"], document["headline"]
    loads = parameters["hw_decoder_loads"]
    assert {0.0, 1.0} <= set(loads)
    decoders = {key.split("@")[0] for key in results["decode_rates"]}
    assert decoders == {"cpu"} | {f"gpu-hw{load:g}" for load in loads}
    assert results["speed_distinct_images"] == parameters["speed_images"] >= 64
    reference = 4 if 4 in parameters["thread_counts"] else max(parameters["thread_counts"])
    best = headline[f"best_gpu_over_cpu_{reference}_threads"]
    assert best >= headline[f"gpu_over_cpu_{reference}_threads"] > 0
    assert headline["best_hw_decoder_load"] in loads
    # same photos, other chroma upsampling: a few levels at most
    assert results["gpu_decode_mean_abs_difference_vs_cpu"] < 5
    assert "gpu_fancy_upsampling_mean_abs_difference_vs_cpu" in results


def test_capture_mode_matches_eager_on_the_gpu(gpu_run: Path) -> None:
    document = _results(gpu_run, "02-capture-mode")
    results, headline = document["results"], document["headline"]
    assert results["identical_batches"] is True
    assert headline["last_epoch_mean_loss_eager"] == pytest.approx(
        headline["last_epoch_mean_loss_capture"], rel=1e-4)
    assert headline["test_accuracy_eager"] == headline["test_accuracy_capture"]
    assert results["test_accuracies"]["eager"] == results["test_accuracies"]["capture"]
    assert results["captured_operators"][:2] == ["Image", "Uniform"]


def test_capture_mode_compared_cpu_and_gpu_decoding(gpu_run: Path) -> None:
    document = _results(gpu_run, "02-capture-mode")
    placement, trials = document["results"]["decode_placement"], document["parameters"]["trials"]
    assert len(placement["cpu"]) == len(placement["gpu"]) == trials
    headline = document["headline"]
    assert headline["capture_cpu_decode_samples_per_s"] > 0
    assert headline["capture_gpu_decode_samples_per_s"] > 0
    assert headline["gpu_decode_over_cpu_decode"] == pytest.approx(
        headline["capture_gpu_decode_samples_per_s"] / headline["capture_cpu_decode_samples_per_s"])
