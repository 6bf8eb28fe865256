"""Notebook 01, executed at CI scale (``ci_run``): what it records, and how it fails."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from conftest import check_goal

from helpers.benchmarking import Ratio
from helpers.benchmarking import rate_interval
from helpers.benchmarking import ratio
from helpers.data_sources import DataSourceError
from helpers.devices import gpu_available
from helpers.parameters import ParameterError
from helpers.paths import REPO_ROOT

NOTEBOOK = REPO_ROOT / "notebooks" / "01-getting-started.ipynb"
# its refusals of bad parameters, run in its set-up by tests/test_notebook_refusals.py
REFUSALS = [
    ({"batch_size": 0}, ParameterError, "parameter batch_size must be a positive integer"),
    ({"batch_size": 22}, ParameterError, "batch_size=22 is larger than the 21 images"),
    ({"image_dir": "/no/such/folder"}, DataSourceError, "image folder /no/such/folder does not exist"),
    ({"speed_batch_size": 65}, ParameterError, "speed_batch_size=65 is larger than speed_images=64"),
    ({"hw_decoder_loads": [0.5, 2.0]}, ParameterError,
     "hw_decoder_loads must be a non-empty list of numbers in [0, 1]"),
    ({"trials": 1}, ParameterError,
     "parameter trials must be at least 2, not 1: a 95% interval needs two trials"),
    ({"batchsize": 8}, ParameterError, "unknown parameter batchsize; did you mean batch_size?"),
]
notebook_tests = pytest.mark.notebook


@notebook_tests
def test_getting_started_records_what_it_taught(ci_run) -> None:
    document = ci_run["01-getting-started"].results
    results, parameters = document.results, document.parameters
    assert results["epoch_batch_sizes"] == [parameters["batch_size"]] * 3
    assert results["first_image_shape"] == [427, 640, 3]
    assert results["slice_shape"] == [100, 150, 3]
    assert results["classes"] == ["everyday", "space"]
    assert len(set(results["unshuffled_labels"])) == 1  # alphabetical order: one class
    assert results["shuffled_labels"] != results["unshuffled_labels"]
    assert results["fixed_rotation_corner_max"] == 0  # the fill value in the corners
    angles = results["random_angles"]
    assert all(-10 <= a <= 10 for a in angles) and len(set(angles)) == len(angles)
    assert results["random_without_batch_size"] == "Tensor"
    # DALI 2.4.0 returns the whole batch for a range (the notebook shows it); a fix would give 2
    sizes = results["select_range_batch_sizes"]
    assert set(sizes) == {"select(slice(0, 2))", "select([0, 1])"}
    assert all(size in (2, parameters["batch_size"]) for size in sizes.values())


@notebook_tests
def test_getting_started_shows_what_shuffling_does_to_epochs(ci_run) -> None:
    document = ci_run["01-getting-started"].results
    results, batch_size = document.results, document.parameters["batch_size"]
    images = results["images"]
    epochs = list(results["shuffle_epochs"].values())
    assert len(epochs) == 5 and all(len(rows) == 3 for rows in epochs)
    plain, plain_padded, default_fill, fitted_fill, padded = epochs
    wrapped = -(-images // batch_size) * batch_size - images  # the last batch takes these from the next pass
    assert all(row["distinct photos"] == images and row["photos read twice or more"] == wrapped
               for row in plain)
    for rows in (plain_padded, padded):  # pad_last_batch: every epoch one pass over the photos
        assert all(row["distinct photos"] == images for row in rows)
    assert all(row["distinct photos"] <= images for rows in epochs for row in rows)
    assert default_fill == fitted_fill  # the buffer size changed no count on 21 photos


def _check_ratio(record: dict, trials: int) -> None:
    assert set(record) >= {"ratio", "ci95", "trials"} and record["trials"] == trials, record


def recomputed_ratios(results: dict, parameters: dict) -> dict[str, Ratio]:
    """Every ratio notebook 01 records, recomputed with helpers.benchmarking.ratio from the trials
    its record keeps (the sweep's ``decode_rates``, the ``confirmation_rates``)."""
    rates, reference = results["decode_rates"], results["reference_threads"]
    threads, cpu = parameters["thread_counts"], rates[f"cpu@{reference}"]
    recomputed = {}
    if len(threads) > 1:
        recomputed["cpu_most_over_fewest_threads"] = ratio(rates[f"cpu@{max(threads)}"],
                                                           rates[f"cpu@{min(threads)}"])
    if parameters["device"] == "gpu":
        loads = parameters["hw_decoder_loads"]
        default = 0.65 if 0.65 in loads else loads[0]
        recomputed["gpu_over_cpu"] = ratio(rates[f"gpu-hw{default:g}@{reference}"], cpu)
        if min(loads) != max(loads):
            recomputed["hw_load_highest_over_lowest"] = ratio(rates[f"gpu-hw{max(loads):g}@{reference}"],
                                                              rates[f"gpu-hw{min(loads):g}@{reference}"])
        confirmed, best = results["confirmation_rates"], results["best_settings"]
        recomputed["best_gpu_over_cpu"] = ratio(confirmed[best["hw_decoder_load_at_reference"]],
                                                confirmed[f"cpu@{reference}"])
        recomputed["best_gpu_over_best_cpu"] = ratio(confirmed[best["gpu"]], confirmed[best["cpu"]])
    return recomputed


def check_ratios(document) -> None:
    """Notebook 01's ratios, headline rates and goal as the trials in its record give them."""
    results, parameters, headline = document.results, document.parameters, document.headline
    recomputed = recomputed_ratios(results, parameters)
    assert results["ratios"] == {key: {"ratio": r.ratio, "ci95": [r.low, r.high], "trials": r.trials}
                                 for key, r in recomputed.items()}
    for key in ("gpu_over_cpu", "best_gpu_over_cpu", "best_gpu_over_best_cpu"):
        if key in headline:
            assert headline[key] == pytest.approx(recomputed[key].ratio), key
    reference = results["reference_threads"]
    assert headline["cpu_decode_img_s"] == pytest.approx(
        rate_interval(results["decode_rates"][f"cpu@{reference}"])[0])
    if "best_gpu_over_cpu" in recomputed:
        (goal,) = results["goals"].values()
        assert goal == recomputed["best_gpu_over_cpu"].goal(8)


@notebook_tests
def test_getting_started_times_distinct_images_on_every_decoder(ci_run) -> None:
    document = ci_run["01-getting-started"].results
    results, parameters = document.results, document.parameters
    assert results["speed_distinct_images"] == parameters["speed_images"]
    on_gpu = parameters["device"] == "gpu"
    decoders = ["cpu"] + ([f"gpu-hw{load:g}" for load in parameters["hw_decoder_loads"]] if on_gpu else [])
    rates = results["decode_rates"]
    assert set(rates) == {f"{d}@{n}" for d in decoders for n in parameters["thread_counts"]}
    assert all(len(trial) == parameters["trials"] and min(trial) > 0 for trial in rates.values())
    assert results["reference_threads"] in parameters["thread_counts"]
    assert "cpu_most_over_fewest_threads" in results["ratios"]
    for record in results["ratios"].values():
        _check_ratio(record, parameters["trials"])
    check_ratios(document)  # each ratio and headline rate, recomputed from the recorded trials
    headline = document.headline
    assert headline["cpu_decode_img_s"] > 0
    assert not [key for key in headline if "thread" in key]  # parameter values live in parameters
    expected = {"cpu_decode_img_s"} | ({"gpu_decode_img_s", "gpu_over_cpu", "best_gpu_decode_img_s",
                                         "best_gpu_over_cpu", "best_hw_decoder_load",
                                         "best_gpu_over_best_cpu"} if on_gpu else set())
    assert set(headline) == expected


@notebook_tests
def test_getting_started_records_its_goal_with_its_interval(ci_run) -> None:
    document = ci_run["01-getting-started"].results
    results, parameters = document.results, document.parameters
    goals = results["goals"]
    if parameters["device"] != "gpu":
        assert goals == {}  # the goal compares the GPU with the CPU
        return
    (name, goal), = goals.items()
    assert name == f"hardware-decoder GPU / CPU decode at {results['reference_threads']} threads"
    check_goal(goal, 8, parameters["trials"])
    assert goal == recomputed_ratios(results, parameters)["best_gpu_over_cpu"].goal(8)


@notebook_tests
@pytest.mark.skipif(gpu_available(), reason="checks the CPU path of the GPU steps")
def test_getting_started_prints_each_skip_where_its_step_is(ci_run) -> None:
    executed = nbformat.read(ci_run["01-getting-started"].executed, as_version=4)

    def output_of(marker: str) -> str:
        cells = [c for c in executed.cells if c.cell_type == "code" and marker in c.source]
        assert len(cells) == 1, marker
        return "".join(o.get("text", "") for o in cells[0].outputs)

    assert "Skipped: Step 7" in output_of('skip_message("Step 7")')
    assert "Skipped: Step 8" in output_of('skip_message("Step 8")')
    sweep = output_of('rates = interleaved_trials(sweep')
    assert "Skipped: Timing the GPU decoder" in sweep and "sweep: round 1 of" in sweep


@notebook_tests
def test_a_mistyped_parameter_fails_under_plain_papermill(tmp_path: Path) -> None:
    """The integration run of the refusals (the others: tests/test_notebook_refusals.py): in a
    kernel under plain papermill, without the runner's check."""
    result = subprocess.run(
        [sys.executable, "-m", "papermill", str(NOTEBOOK), str(tmp_path / NOTEBOOK.name),
         "-p", "batchsize", "8", "--cwd", str(REPO_ROOT / "notebooks")],
        capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode != 0
    assert "unknown parameter batchsize; did you mean batch_size?" in result.stdout + result.stderr
