"""Notebook 02, executed at CI scale (``ci_run``), its inline model, and the held-out split."""

from __future__ import annotations

import math
from pathlib import Path

import nbformat
import pytest
import torch
import torch.nn.functional as F
from conftest import check_goal
from torch import nn

from helpers.data.paths import REPO_ROOT
from helpers.toolkit import mnist_model
from helpers.toolkit.benchmarking import rate_interval
from helpers.toolkit.benchmarking import ratio
from helpers.toolkit.devices import GPUUnavailableError
from helpers.toolkit.devices import gpu_available
from helpers.toolkit.parameters import ParameterError
from tools import run_notebooks

NOTEBOOK = REPO_ROOT / "notebooks" / "02-capture-mode.ipynb"
# its refusals of bad parameters, run in its set-up by tests/notebooks/test_notebook_refusals.py
REFUSALS = [
    ({"batchsize": 8}, ParameterError, "unknown parameter batchsize; did you mean batch_size?"),
    ({"epochs": "3"}, ParameterError, "parameter epochs must be a positive integer, not '3'"),
    (
        {"placement_epochs": 2},
        ParameterError,
        "parameter placement_epochs must be at least 3, not 2: the first epoch of each way is an untimed",
    ),
    pytest.param(
        {"device": "gpu"},
        GPUUnavailableError,
        'device="cpu"',
        marks=pytest.mark.skipif(gpu_available(), reason="needs a machine without a GPU"),
    ),
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
        # the harness's warm-up epochs train nothing; every round trains the same epochs in both modes
        epochs = {t["epochs"] for t in results["harness"]["training"]["ways"][mode]["trials"]}
        assert len(epochs) == 1 and len(run["trial_samples_per_s"]) == parameters["epochs"] - 1
        assert len(run["losses"]) == (parameters["epochs"] - 1) * epochs.pop()
        assert run["losses"][-1] < run["losses"][0]
        assert headline[f"{mode}_samples_per_s"] > 0
    assert training["eager"]["losses"] == pytest.approx(training["capture"]["losses"], rel=1e-5)
    assert headline["last_epoch_mean_loss_eager"] == pytest.approx(
        headline["last_epoch_mean_loss_capture"], rel=1e-5
    )
    expected = {
        "eager_samples_per_s",
        "capture_samples_per_s",
        "capture_over_eager",
        "last_epoch_mean_loss_eager",
        "last_epoch_mean_loss_capture",
        "test_accuracy_eager",
        "test_accuracy_capture",
    }
    if parameters["device"] == "gpu":
        expected |= {
            "capture_cpu_decode_samples_per_s",
            "capture_gpu_decode_samples_per_s",
            "gpu_decode_over_cpu_decode",
        }
    assert set(headline) == expected


def trial_rates(document, run: str, way: str) -> list[float]:
    """A way's rate in each trial, from the harness's record of its trials (samples / seconds)."""
    trials = document.results["harness"][run]["ways"][way]["trials"]
    return [t["samples"] / t["seconds"] for t in trials]


def check_capture_over_eager(document) -> None:
    """Notebook 02's goal, ratios, headline rates and largest loss gap, recomputed from the trials
    that the harness recorded and the losses of each epoch."""
    results, headline = document.results, document.headline
    training = results["training"]
    rates = {mode: trial_rates(document, "training", mode) for mode in ("eager", "capture")}
    for mode in rates:
        assert training[mode]["trial_samples_per_s"] == pytest.approx(rates[mode])
        assert headline[f"{mode}_samples_per_s"] == pytest.approx(rate_interval(rates[mode])[0])
    capture_over_eager = ratio(rates["capture"], rates["eager"])
    assert results["goals"]["capture / eager"] == capture_over_eager.goal(1.6)
    assert results["ratios"]["capture_over_eager"] == {
        "ratio": capture_over_eager.ratio,
        "ci95": [capture_over_eager.low, capture_over_eager.high],
        "trials": capture_over_eager.trials,
    }
    assert headline["capture_over_eager"] == pytest.approx(capture_over_eager.ratio)
    trials = results["harness"]["training"]["ways"]["eager"]["trials"]
    assert results["samples_per_epoch"] * trials[0]["epochs"] == trials[0]["samples"]
    assert {
        t["batches"] + t["skipped"]
        for w in results["harness"]["training"]["ways"].values()
        for t in w["trials"]
    } == {trials[0]["batches"]}  # the same work in both modes (eager hands none)
    ways = results["harness"]["training"]["ways"]
    # a capture loop ends an epoch with one batch of the next under way: handed over before the
    # timer (and trained on, step_ready); eager mode has none
    assert {t["skipped"] for t in ways["eager"]["trials"]} == {0}
    assert {t["skipped"] for t in ways["capture"]["trials"]} == {1}
    gap = max(
        abs(a - b) for a, b in zip(training["eager"]["losses"], training["capture"]["losses"], strict=True)
    )
    assert results["largest_epoch_loss_gap"] == gap


def check_placement(document) -> None:
    """Decoding on the GPU over decoding on the CPU, recomputed from the recorded trials (a GPU
    run); without a GPU, nothing recorded."""
    results, headline = document.results, document.headline
    if document.parameters["device"] != "gpu":
        assert results["decode_placement"] == {"cpu": [], "gpu": []}
        assert results["harness"]["placement"] is None
        assert "gpu_decode_over_cpu_decode" not in results["ratios"]
        return
    rates = {
        where: trial_rates(document, "placement", f"decode on the {where.upper()}")
        for where in ("cpu", "gpu")
    }
    assert set(results["decode_placement"]) == set(rates)
    for where, values in rates.items():
        assert results["decode_placement"][where] == pytest.approx(values)
    gpu_over_cpu = ratio(rates["gpu"], rates["cpu"])
    assert results["ratios"]["gpu_decode_over_cpu_decode"]["ci95"] == pytest.approx(
        [gpu_over_cpu.low, gpu_over_cpu.high]
    )
    assert headline["gpu_decode_over_cpu_decode"] == pytest.approx(gpu_over_cpu.ratio)
    for where, values in rates.items():
        assert headline[f"capture_{where}_decode_samples_per_s"] == pytest.approx(rate_interval(values)[0])


@notebook_tests
def test_capture_mode_records_its_goals_with_their_intervals(ci_run) -> None:
    document = ci_run["02-capture-mode"].results
    results, parameters = document.results, document.parameters
    ((name, goal),) = results["goals"].items()
    assert name == "capture / eager"
    check_goal("02-capture-mode", name, goal, parameters["epochs"] - 1)
    check_capture_over_eager(document)
    check_placement(document)
    check_equality(document)


def check_equality(document) -> None:
    """The equality goal recomputed from the recorded losses of every epoch and the held-out
    accuracies (helpers.lessons.nb02_capture_mode.equality_goal), not read back: it must be what the record
    says, and met."""
    from helpers.lessons.nb02_capture_mode import equality_goal

    results = document.results
    losses = {mode: results["training"][mode]["losses"] for mode in ("eager", "capture")}
    recomputed = equality_goal(losses, results["test_accuracies"])
    recorded = results["equality_goal"]
    assert {k: v for k, v in recorded.items() if k != "largest_epoch_loss_gap"} == {
        k: v for k, v in recomputed.items() if k != "largest_epoch_loss_gap"
    }
    assert recomputed["largest_epoch_loss_gap"] == pytest.approx(recorded["largest_epoch_loss_gap"])
    assert recomputed["largest_epoch_loss_gap"] == pytest.approx(results["largest_epoch_loss_gap"])
    assert recomputed["verdict"] == "met", recomputed


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
def test_capture_rules_recorded_with_evidence(ci_run) -> None:
    results = ci_run["02-capture-mode"].results.results
    assert results["captured_operators"][:4] == ["Image", "Uniform", "Rotate", "CropMirrorNormalize"]
    assert {"Squeeze", "Cast"} <= set(results["captured_operators"])
    assert results["capture_rules_demo"] == {
        "rotate_with_global": ["Image"],
        "rotate_with_invariant": ["Image", "Uniform", "Rotate"],
    }
    assert "Cannot change batch size" in results["batch_size_change_error"]


@notebook_tests
def test_the_run_says_what_it_will_do_and_how_far_the_rounds_drift(ci_run) -> None:
    """The planned work is printed before the timing, and the per-round ratios' lowest and highest
    are the recorded trials'."""
    run = ci_run["02-capture-mode"]
    text = "\n".join(
        str(o.get("text", "")) + str(o.get("data", {}).get("text/markdown", ""))
        for c in nbformat.read(run.executed, as_version=4).cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
    )
    assert text.index("Planned: 2 ways x") < text.index("eager and capture: ")
    rates = {mode: trial_rates(run.results, "training", mode) for mode in ("eager", "capture")}
    per_round = [c / e for c, e in zip(rates["capture"], rates["eager"], strict=True)]
    assert f"ranged from {min(per_round):.2f}x to {max(per_round):.2f}x" in text
    assert "Hardware sampler:" in text or run.results.machine["gpu"]


def _visible_code(cell) -> bool:
    return cell.cell_type == "code" and not cell.metadata.get("jupyter", {}).get("source_hidden")


def test_the_goal_cell_judges_the_equality_goal_as_it_judges_the_others() -> None:
    """Off an H200, the goal lines say that they are not judged: the equality goal's line too."""
    cells = [c.source for c in nbformat.read(NOTEBOOK, as_version=4).cells if c.cell_type == "code"]
    (goal_cell,) = [c for c in cells if "goal_lines(" in c]
    assert "goal_lines(goals, judged=judged)" in goal_cell
    assert "equality_line(equality, judged=judged)" in goal_cell


def test_the_notebook_opens_with_its_lesson_and_keeps_its_cells_short() -> None:
    """Under the title (and its generated bottom line), at most 110 words, then the first visible
    code: a capture loop under a guard that prints what it captured, before the parameters. No
    visible code cell over 30 non-blank lines but the recipe, no folded one over 12; no cell writes the record
    but the last folded one."""
    cells = nbformat.read(NOTEBOOK, as_version=4).cells
    first = next(i for i, c in enumerate(cells) if _visible_code(c))
    intro = [
        c.source
        for c in cells[:first]
        if c.cell_type == "markdown" and "bottom-line" not in c.metadata.get("tags", [])
    ]
    words = len(" ".join(intro).split("\n", 1)[1].split())  # the title's line left out
    assert words <= 110, f"{words} words before the first lesson"
    lesson = cells[first].source
    assert "import nvidia.dali.experimental.dynamic as ndd" in lesson and "capture=True" in lesson
    assert "CaptureGuard(" in lesson and "print(guard)" in lesson
    parameters = next(i for i, c in enumerate(cells) if "parameters" in c.metadata.get("tags", []))
    assert parameters > first
    for cell in cells:
        if cell.cell_type != "code" or "recipe" in cell.metadata.get("tags", []):
            continue  # the recipe keeps the recipes' rules (tests/tools/test_recipes.py)
        lines = len([line for line in cell.source.splitlines() if line.strip()])  # blank lines left out
        assert lines <= (30 if _visible_code(cell) else 12), cell.source[:80]
    writers = [c for c in cells if c.cell_type == "code" and "save_results(" in c.source]
    assert len(writers) == 1 and not _visible_code(writers[0])
    assert not any("results[" in c.source or "headline[" in c.source for c in cells if _visible_code(c))


@pytest.mark.skipif(gpu_available(), reason="needs a machine without a GPU")
@notebook_tests
def test_asking_for_the_gpu_without_one_says_use_cpu(tmp_path: Path) -> None:
    """The integration run of 02's refusals (the others: tests/notebooks/test_notebook_refusals.py)."""
    run = run_notebooks.run_notebook(NOTEBOOK, tmp_path, {"device": "gpu"})
    assert not run.ok and "GPUUnavailableError" in run.error and 'device="cpu"' in run.error


def test_the_inline_model_is_the_helpers_model() -> None:
    """Notebook 02 shows the classifier's lines inline; helpers.toolkit.mnist_model keeps a copy."""
    cells = [
        c.source
        for c in nbformat.read(NOTEBOOK, as_version=4).cells
        if c.cell_type == "code" and "class MNISTClassifier" in c.source
    ]
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


def test_the_training_loop_is_in_sight_before_the_harness_and_the_harness_runs_its_functions() -> None:
    """One visible cell holds the whole loop, in capture mode, before any harness runs: the reader,
    its epoch, DALI's calls and the model's step; the harness's feeds and step call the same
    functions (``preprocess``, ``train_step``), defined once."""
    cells = [c for c in nbformat.read(NOTEBOOK, as_version=4).cells if c.cell_type == "code"]
    loops = [
        i
        for i, c in enumerate(cells)
        if _visible_code(c)
        and "next_epoch(batch_size=batch_size, capture=True)" in c.source
        and "train_step(model, optimizer" in c.source
    ]
    assert len(loops) == 1
    loop = cells[loops[0]].source
    for piece in (
        "ndd.readers.Caffe2(",
        "ndd.decoders.image(",
        "ndd.random.uniform(",
        "ndd.rotate(",
        "def preprocess(",
        "def train_step(",
        "loss.backward()",
        "optimizer.step()",
        "print(guard)",
    ):
        assert piece in loop, piece
    harness = next(i for i, c in enumerate(cells) if "harness.run(" in c.source)
    assert loops[0] < harness
    later = "\n".join(c.source for c in cells[loops[0] + 1 :] if "recipe" not in c.metadata.get("tags", []))
    assert "preprocess(jpegs, labels, self.rng, self.decode)" in later
    assert "train_step(feed.model, feed.optimizer, images, targets)" in later
    assert "def preprocess(" not in later and "def train_step(" not in later and "backward()" not in later


# --- the recipe: capture-mode training on MNIST, run as a user runs it (tools.recipes) ----------

RECIPE_RECORDS, RECIPE_BATCH, RECIPE_EPOCHS = 512, 32, 3
# MNIST's normalization of 0-255 pixels: (0 - 0.1307 * 255) / (0.3081 * 255), (255 - ...) / ...
NORMALIZED = ((0 - 0.1307 * 255) / (0.3081 * 255), (255 - 0.1307 * 255) / (0.3081 * 255))
RECIPE_REPORT = {
    "losses": "losses",
    "seen": "seen",
    "images": "[list(x.shape), str(x.dtype), x.device.type]",
    "range": "[x.min().item(), x.max().item()]",
    "labels": "[list(y.shape), str(y.dtype), y.device.type, y.min().item(), y.max().item()]",
}
# put before the recipe: the operators its capture loop captured, after each step (DALI's private
# capture context, which helpers.toolkit.capture_guard reads too); DALI's class is patched, not the
# recipe. _GRAY and _RANGE: values of the recipe's arguments that capture mode cannot prove constant
CAPTURE_OBSERVER = """import nvidia.dali.experimental.dynamic as _ndd
import nvidia.dali.types as _types
from nvidia.dali.experimental.dynamic._capture import CaptureContext as _Context

_next_epoch, _captured = _ndd.readers.Caffe2.next_epoch, []
_GRAY, _RANGE = _types.GRAY, (-7.5, 7.5)


def _observed(self, *args, **kwargs):
    for batch in _next_epoch(self, *args, **kwargs):
        context = _Context.current()
        yield batch
        _captured.append(sorted({node.op_class.__name__ for node in context.nodes}) if context else None)


_ndd.readers.Caffe2.next_epoch = _observed
"""
CAPTURED_BY_RECIPE = sorted(["Image", "Uniform", "Rotate", "CropMirrorNormalize"])


def _mnist(tmp_path: Path) -> Path:
    """The first RECIPE_RECORDS records of the training LMDB."""
    from helpers.data.data_sources import locate_data
    from helpers.data.lmdb_subset import first_records

    return first_records(locate_data(verbose=False).mnist_training, tmp_path / "mnist", RECIPE_RECORDS)


def _settings(lmdb: Path, device: str, epochs: int = RECIPE_EPOCHS) -> dict:
    return {
        "DATA": str(lmdb),
        "DEVICE": device,
        "BATCH": RECIPE_BATCH,
        "EPOCHS": epochs,
        "LR": 0.05,
        "SEED": 1,
    }


def _observed(lmdb: Path, device: str, tmp_path: Path, edits: dict[str, str]) -> list:
    """What each step of one epoch of the recipe captured, with ``edits`` (old text -> new) made
    to its loop."""
    from tools import recipes

    found = recipes.recipe(NOTEBOOK)
    assert found is not None
    source = found.source
    for old, new in edits.items():
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    observed = recipes.Recipe(NOTEBOOK, CAPTURE_OBSERVER + source)
    report = recipes.run(observed, _settings(lmdb, device, epochs=1), {"captured": "_captured"}, tmp_path)
    return report["captured"]


def _check_recipe(run_recipe, device: str, tmp_path: Path) -> None:
    """The recipe on a small LMDB: whole epochs of normalized digits and their labels on the
    model's device, a loss that falls, every operator captured at every step; then its loop broken
    two ways: nothing provable (DALI's warning, made an error by the recipe, stops it) and one
    argument unprovable (that operator and those after it run eagerly, silently)."""
    on, lmdb = ("cuda" if device == "gpu" else "cpu"), _mnist(tmp_path)
    report = run_recipe(NOTEBOOK, _settings(lmdb, device), RECIPE_REPORT)
    assert report["images"] == [[RECIPE_BATCH, 1, 28, 28], "torch.float32", on], report
    shape, dtype, labels_on, least, most = report["labels"]
    assert (shape, dtype, labels_on) == ([RECIPE_BATCH], "torch.int64", on), report
    assert 0 <= least <= most <= 9, report
    low, high = report["range"]
    assert low == pytest.approx(NORMALIZED[0], abs=1e-4) and 0 < high <= NORMALIZED[1] + 1e-4, report
    assert report["seen"] == RECIPE_RECORDS  # the last epoch, whole: 16 batches of 32
    losses = report["losses"]
    assert len(losses) == RECIPE_EPOCHS and all(math.isfinite(x) for x in losses), losses
    assert losses[-1] < losses[0], losses
    steps = RECIPE_RECORDS // RECIPE_BATCH
    copy = ["Copy"] if device == "gpu" else []  # on a GPU: decoded on the CPU, then copied there
    assert _observed(lmdb, device, tmp_path, {}) == [sorted(CAPTURED_BY_RECIPE + copy)] * steps
    nothing = {"output_type=types.GRAY": "output_type=_GRAY", "range=(-7.5, 7.5)": "range=_RANGE"}
    with pytest.raises(AssertionError, match="capture=True was specified but no operators were captured"):
        _observed(lmdb, device, tmp_path, nothing)
    eager_range = _observed(lmdb, device, tmp_path, {"range=(-7.5, 7.5)": "range=_RANGE"})
    assert eager_range == [sorted(["Image", *copy])] * steps


@pytest.mark.slow
def test_the_recipe_runs_without_the_suite(run_recipe, tmp_path: Path) -> None:
    """The recipe on the CPU, in a process without the suite (tools.recipes.run), on the first 512
    records of the training LMDB."""
    _check_recipe(run_recipe, "cpu", tmp_path)


def test_the_recipe_on_the_gpu(gpu_run, run_recipe, tmp_path: Path) -> None:
    _check_recipe(run_recipe, "gpu", tmp_path)
