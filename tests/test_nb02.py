"""Notebook 02, executed at CI scale (``ci_run``), its inline model, and the held-out split."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
import torch
import torch.nn.functional as F
from conftest import check_goal
from torch import nn

from helpers import mnist_model
from helpers.benchmarking import rate_interval
from helpers.benchmarking import ratio
from helpers.devices import GPUUnavailableError
from helpers.devices import gpu_available
from helpers.parameters import ParameterError
from helpers.paths import REPO_ROOT
from tools import suite

NOTEBOOK = REPO_ROOT / "notebooks" / "02-capture-mode.ipynb"
# its refusals of bad parameters, run in its set-up by tests/test_notebook_refusals.py
REFUSALS = [
    ({"batchsize": 8}, ParameterError, "unknown parameter batchsize; did you mean batch_size?"),
    ({"epochs": "3"}, ParameterError, "parameter epochs must be a positive integer, not '3'"),
    ({"placement_epochs": 2}, ParameterError,
     "parameter placement_epochs must be at least 3, not 2: the first epoch of every training"),
    pytest.param({"device": "gpu"}, GPUUnavailableError, 'device="cpu"',
                 marks=pytest.mark.skipif(gpu_available(), reason="needs a machine without a GPU")),
]
notebook_tests = pytest.mark.notebook


@notebook_tests
def test_capture_mode_matches_eager_and_learns(ci_run) -> None:
    document = ci_run["02-capture-mode"].results
    results, headline, parameters = document.results, document.headline, document.parameters
    assert results["identical_batches"] is True
    training = results["training"]
    assert set(training) == {"eager", "capture"}
    for mode, run in training.items():
        assert len(run["epoch_samples_per_s"]) == parameters["epochs"] - 1  # the first is a warm-up
        assert len(run["losses"]) == parameters["epochs"]
        assert run["losses"][-1] < run["losses"][0]
        assert headline[f"{mode}_samples_per_s"] > 0
    assert training["eager"]["losses"] == pytest.approx(training["capture"]["losses"], rel=1e-5)
    assert headline["last_epoch_mean_loss_eager"] == pytest.approx(
        headline["last_epoch_mean_loss_capture"], rel=1e-5)
    expected = {"eager_samples_per_s", "capture_samples_per_s", "capture_over_eager",
                "last_epoch_mean_loss_eager", "last_epoch_mean_loss_capture", "test_accuracy_eager",
                "test_accuracy_capture"}
    if parameters["device"] == "gpu":
        expected |= {"capture_cpu_decode_samples_per_s", "capture_gpu_decode_samples_per_s",
                     "gpu_decode_over_cpu_decode"}
    assert set(headline) == expected


def check_capture_over_eager(document) -> None:
    """Notebook 02's goal, ratios, headline rates and largest loss gap, recomputed from the timed
    epochs and the losses its record keeps."""
    results, headline = document.results, document.headline
    training = results["training"]
    rates = {mode: run["epoch_samples_per_s"] for mode, run in training.items()}
    capture_over_eager = ratio(rates["capture"], rates["eager"])
    assert results["goals"]["capture / eager"] == capture_over_eager.goal(1.6)
    assert results["ratios"]["capture_over_eager"] == {
        "ratio": capture_over_eager.ratio, "ci95": [capture_over_eager.low, capture_over_eager.high],
        "trials": capture_over_eager.trials}
    assert headline["capture_over_eager"] == pytest.approx(capture_over_eager.ratio)
    for mode in ("eager", "capture"):
        assert headline[f"{mode}_samples_per_s"] == pytest.approx(rate_interval(rates[mode])[0])
    gap = max(abs(a - b) for a, b in zip(training["eager"]["losses"], training["capture"]["losses"],
                                         strict=True))
    assert results["largest_epoch_loss_gap"] == gap


@notebook_tests
def test_capture_mode_records_its_goals_with_their_intervals(ci_run) -> None:
    document = ci_run["02-capture-mode"].results
    results, parameters = document.results, document.parameters
    (name, goal), = results["goals"].items()
    assert name == "capture / eager"
    check_goal(goal, 1.6, parameters["epochs"] - 1)
    check_capture_over_eager(document)
    equality = results["equality_goal"]
    assert equality["verdict"] == "met" and equality["test_accuracy"] == results["test_accuracies"]
    assert equality["largest_epoch_loss_gap"] == results["largest_epoch_loss_gap"] <= 1e-4


@notebook_tests
def test_held_out_accuracy_is_recorded_for_both_modes(ci_run) -> None:
    document = ci_run["02-capture-mode"].results
    results, headline = document.results, document.headline
    accuracies = results["test_accuracies"]
    assert 0.5 < headline["test_accuracy_eager"] <= 1.0  # 10 classes: chance is 0.1
    assert {mode: run["test_accuracy"] for mode, run in results["training"].items()} == accuracies
    if results["embedded_data"]:
        assert results["test_digits"] == 1000


@notebook_tests
def test_shards_move_on_each_epoch_unless_told_to_stick(ci_run) -> None:
    demo = ci_run["02-capture-mode"].results.results["shard_demo"]
    (first, second), (stuck, stuck_2), (padded, padded_2) = demo.values()
    assert first == stuck == padded  # every reader starts on shard 0
    assert second != first  # by default, epoch 2 reads the next shard
    assert stuck_2 != stuck  # stick_to_shard alone: the last batch wrapped into the shard's start
    assert padded_2 == padded  # stick_to_shard and pad_last_batch: the same records every epoch


@notebook_tests
def test_capture_rules_recorded_with_evidence(ci_run) -> None:
    results = ci_run["02-capture-mode"].results.results
    assert results["captured_operators"][:4] == ["Image", "Uniform", "Rotate", "CropMirrorNormalize"]
    assert {"Squeeze", "Cast"} <= set(results["captured_operators"])
    assert results["capture_rules_demo"] == {
        "rotate_with_global": ["Image"], "rotate_with_invariant": ["Image", "Uniform", "Rotate"]}
    assert "Cannot change batch size" in results["batch_size_change_error"]
    if ci_run["02-capture-mode"].results.parameters["device"] != "gpu":
        assert results["decode_placement"] == {"cpu": [], "gpu": []}
        assert "gpu_decode_over_cpu_decode" not in results["ratios"]


@pytest.mark.skipif(gpu_available(), reason="needs a machine without a GPU")
@notebook_tests
def test_asking_for_the_gpu_without_one_says_use_cpu(tmp_path: Path) -> None:
    """The integration run of 02's refusals (the others: tests/test_notebook_refusals.py)."""
    run = suite.run_notebook(NOTEBOOK, tmp_path, {"device": "gpu"})
    assert not run.ok and "GPUUnavailableError" in run.error and 'device="cpu"' in run.error


def test_the_inline_model_is_the_helpers_model() -> None:
    """Notebook 02 shows the classifier's lines inline; helpers.mnist_model keeps a copy."""
    cells = [c.source for c in nbformat.read(NOTEBOOK, as_version=4).cells
             if c.cell_type == "code" and "class MNISTClassifier" in c.source]
    assert len(cells) == 1
    namespace = {"torch": torch, "nn": nn, "F": F, "print": lambda *args: None}
    exec(cells[0], namespace)  # noqa: S102 - the notebook's own cell, to compare its model
    torch.manual_seed(0)
    inline = namespace["MNISTClassifier"]()
    torch.manual_seed(0)
    helper = mnist_model.MNISTClassifier()

    def shapes(model):
        return [(k, tuple(v.shape)) for k, v in model.state_dict().items()]

    assert shapes(inline) == shapes(helper)
    images = torch.randn(5, 1, 28, 28)
    inline.load_state_dict(helper.state_dict())
    assert torch.equal(inline(images), helper(images))
