"""Notebook 05 (photographs at scale): executed at CI scale on the CPU tier through the shared
``ci_run`` fixture, with assertions on what it records, every figure recomputed from the recorded
trials through ``helpers.toolkit.harness.Results``; its errors for a bad ``image_dir``. The checks of its
H200 run are in tests/notebooks/test_gpu_tier.py (they reuse ``check_trials``, ``check_goals`` and
``check_fully_captured``)."""

from __future__ import annotations

import math
import shutil
import statistics
from pathlib import Path

import nbformat
import pytest
from conftest import check_goal
from conftest import check_steady
from notebook_setup import run_setup

from helpers.data.data_sources import locate_photos
from helpers.data.paths import REPO_ROOT
from helpers.data.results_file import NotebookResults
from helpers.lessons.nb05_photos_at_scale import CPU_GOAL
from helpers.lessons.nb05_photos_at_scale import GOALS as GOAL_SPECS
from helpers.toolkit.benchmarking import ratio
from helpers.toolkit.harness import Results
from helpers.toolkit.parameters import ParameterError
from tools import run_notebooks

NOTEBOOK = REPO_ROOT / "notebooks" / "05-photos-at-scale.ipynb"
# its refusals of bad parameters, run in its set-up by tests/notebooks/test_notebook_refusals.py
REFUSALS = [
    ({"batchsize": 32}, ParameterError, "unknown parameter batchsize; did you mean batch_size?"),
]
NAME = NOTEBOOK.stem
# the goals' names and targets, as tools/findings.py and the notebook's metadata read them
# the model each goal needs (None: loading alone); their targets are 05's metadata's
GOALS = {
    "ResNet-50: best dynamic / ceiling": "resnet50",
    "ResNet-50: best dynamic / pipeline mode, same knobs": "resnet50",
    "ResNet-50: best dynamic / best DataLoader": "resnet50",
    "ResNet-18: best dynamic / pipeline mode, same knobs": "resnet18",
    "ResNet-18: best dynamic / best DataLoader": "resnet18",
    "alone: best capture / pipeline mode, same knobs": None,
    "cpu: DataLoader / dynamic mode, CPU time per image": None,
}
ROLES = {
    "ceiling",
    "best DataLoader",
    "best pipeline mode",
    "pipeline mode, same knobs",
    "best dynamic mode",
    "eager",
}
CAPTURED = ["ImageRandomCrop", "Resize", "CoinFlip", "CropMirrorNormalize"]  # and the labels' operators


@pytest.fixture(scope="module")
def document(ci_run: dict[str, run_notebooks.NotebookRun]) -> NotebookResults:
    """What notebook 05 recorded in the shared CI-scale run (conftest's ``ci_run``)."""
    run = ci_run[NAME]
    assert run.ok, run.error
    return run.results


def _runs(document: NotebookResults) -> tuple[Results, Results, dict[str, Results]]:
    results = document.results
    return (
        Results.from_record(results["selection"]),
        Results.from_record(results["alone"]),
        {m: Results.from_record(run) for m, run in results["fed"].items()},
    )


def check_trials(document: NotebookResults) -> None:
    """Knobs chosen in selection rounds by ``Results.pick``, then measured again: every way in every
    round, each trial the work it should be, the picks and roles as the rounds give them."""
    results, parameters = document.results, document.parameters
    selection, alone, fed = _runs(document)
    roles, knobs = results["roles"], results["knobs"]
    assert set(roles) == ROLES and set(fed) == set(parameters["models"])
    assert all(len(selection.rates(w.name)) == parameters["selection_trials"] for w in selection.ways)
    # each knob alone: every worker count; DALI's thread counts at its default hw_decoder_load and,
    # on a GPU only, each hw_decoder_load at `threads`: the same knobs for pipeline mode and capture
    assert sorted(knobs[w.name]["workers"] for w in selection.ways if w.kind == "DataLoader") == sorted(
        set(parameters["dataloader_workers"])
    )
    loads = parameters["hw_decoder_loads"] if parameters["device"] == "gpu" else []
    expected = {(t, 0.65) for t in [parameters["threads"], *parameters["thread_counts"]]} | {
        (parameters["threads"], load) for load in loads
    }
    for kind in ("pipeline", "capture"):
        assert {
            (knobs[w.name]["threads"], knobs[w.name]["hw_decoder_load"])
            for w in selection.ways
            if w.kind == kind
        } == expected, kind
    for kind, role in (
        ("DataLoader", "best DataLoader"),
        ("pipeline", "best pipeline mode"),
        ("capture", "best dynamic mode"),
    ):
        pick = selection.pick([w.name for w in selection.ways if w.kind == kind])
        assert results["picks"][kind]["best"] == pick.best == roles[role]
        assert set(results["picks"][kind]["ties"]) == set(pick.ties)
    assert (
        knobs[roles["pipeline mode, same knobs"]]
        == knobs[roles["best dynamic mode"]]
        == knobs[roles["eager"]]
    )
    assert {w.kind for w in alone.ways} == {"DataLoader", "pipeline", "capture", "eager"}
    epoch = parameters["epoch_images"] // parameters["batch_size"]  # batches an epoch
    runs = [
        (alone, "alone", parameters["trials"], parameters["trials"]),
        *((r, f"fed/{m}", parameters["trials"], parameters["most_trials"]) for m, r in fed.items()),
    ]
    for run, key, least, most in runs:
        rounds = len(run.rates(run.ways[0].name))
        assert least <= rounds <= most
        record = results["alone"] if key == "alone" else results["fed"][key[4:]]
        assert record["min_seconds"] == parameters["min_seconds"] > 0
        check_steady(record, epoch_batches={w.name: epoch for w in run.ways})  # whole epochs, >= min_seconds
        for way in run.ways:
            assert len(run.trials[way.name]) == rounds
            for t in run.trials[way.name]:
                assert t.samples == t.batches * parameters["batch_size"]
                assert t.cpu_s > 0 and 0 <= t.waited_s <= t.seconds
    for run in fed.values():
        assert {roles[r] for r in ROLES - {"eager"}} == {w.name for w in run.ways}
        assert run.way(roles["ceiling"]).kind == "ceiling"


def check_goals(document: NotebookResults) -> None:
    """Every goal of the models that ran, recomputed from the trials, with
    the verdict its interval gives; the headline's ratios are the goals'."""
    results, parameters = document.results, document.parameters
    _, alone, fed = _runs(document)
    roles, goals = results["roles"], results["goals"]
    models = parameters["models"]
    assert set(goals) == {n for n, model in GOALS.items() if model is None or model in models}
    for name, g in goals.items():
        if name == CPU_GOAL:
            cpu = [
                [1000 * t.cpu_s / t.samples for t in alone.trials[roles[role]]]
                for role in ("best DataLoader", "best dynamic mode")
            ]
            expected = ratio(*cpu)
        else:
            model, a, b = GOAL_SPECS[name]
            expected = (alone if model is None else fed[model]).ratio(roles[a], roles[b])
        check_goal("05-photos-at-scale", name, g, expected.trials)
        assert (g["ratio"], *g["ci95"]) == pytest.approx((expected.ratio, expected.low, expected.high))
    headline = document.headline
    assert headline["cpu_dataloader_over_dynamic"] == pytest.approx(goals[CPU_GOAL]["ratio"])
    for model, run in fed.items():
        assert headline[f"{model}_ceiling_img_s"] == pytest.approx(run.estimate(roles["ceiling"])[0])
        assert headline[f"{model}_dynamic_over_dataloader"] == pytest.approx(
            run.ratio(roles["best dynamic mode"], roles["best DataLoader"]).ratio
        )


def check_fully_captured(document: NotebookResults) -> None:
    """Every capture loop's guard (the harness's capture ways' and, in newer records, section 3's
    whole loop's) saw the whole preprocessing captured (the validation loop's has no random
    operators), and the batches each DALI loader had ready before a trial's timer were
    handed over untimed: two for pipeline mode (its prefetch queue), one for a capture loop, none
    for eager mode, a DataLoader and training alone."""
    results = document.results
    captured = results["captured"]
    assert captured.pop("ValLoader")[:3] == ["Image", "Resize", "CropMirrorNormalize"]
    assert captured and all(ops[:4] == CAPTURED for ops in captured.values())
    _, alone, fed = _runs(document)
    expected = {"pipeline": 2, "capture": 1}
    for run in (alone, *fed.values()):
        for way in run.ways:
            assert {t.skipped for t in run.trials[way.name]} == {expected.get(way.kind, 0)}, way.name


@pytest.mark.notebook
def test_knobs_chosen_then_measured_again_in_interleaved_rounds(document) -> None:
    check_trials(document)


@pytest.mark.notebook
def test_goals_recomputed_from_the_trials(document) -> None:
    check_goals(document)


@pytest.mark.notebook
def test_every_capture_loop_captured_the_whole_preprocessing(document) -> None:
    assert "the whole loop" in document.results["captured"]  # section 3's loop, the model's step in it
    check_fully_captured(document)


@pytest.mark.notebook
def test_labels_channel_order_and_normalization_agree_across_loaders(document) -> None:
    agreement = document.results["agreement"]
    rows = agreement["rows"]
    assert agreement["labels_agree"] and agreement["pixels_agree"] and agreement["channels_visible"]
    assert all(r["labels_equal"] for r in rows.values())
    assert rows["pipeline mode"]["mean_levels"] <= 1.0  # the same operators
    assert rows["DataLoader"]["channel_mean_levels"] <= 2.0
    assert rows["DataLoader, channels reversed (BGR)"]["mean_levels"] > 3 * rows["DataLoader"]["mean_levels"]


@pytest.mark.notebook
def test_cpu_time_counts_the_dataloader_workers(document) -> None:
    """The DataLoader decodes in its workers: its CPU time per image can only be that of a JPEG
    decode (a millisecond or more) if the workers are counted; training alone never waits."""
    _, alone, fed = _runs(document)
    roles = document.results["roles"]
    loader = alone.trials[roles["best DataLoader"]]
    assert statistics.fmean(1000 * t.cpu_s / t.samples for t in loader) > 1.0
    for run in fed.values():
        assert all(t.waiting < 0.05 for t in run.trials[roles["ceiling"]])


def test_the_picks_are_printed_with_each_ways_name_whole() -> None:
    """A way's name holds commas (`capture, threads 4, hw_decoder_load 1`): the cell that picks the
    knobs prints each pick with ``Pick.described`` (names in backticks, the best named), not
    ``str(pick)``."""
    cells = [c.source for c in nbformat.read(NOTEBOOK, as_version=4).cells if c.cell_type == "code"]
    (picking,) = [c for c in cells if "selection.pick(" in c]
    assert "{pick.described()}" in picking and "{pick}" not in picking


@pytest.mark.notebook
def test_a_truncated_jpeg_is_named(document) -> None:
    corrupt = document.results["corrupt_file"]
    assert corrupt["named"] is True
    assert "is not a readable image" in corrupt["message"] and "Remove or replace" in corrupt["message"]
    # what DALI itself said, kept beside it: on the CPU it names the sample's file, relative to file_root
    assert "astronaut_00000.jpg" in corrupt["dali_says"]["cpu"]


def test_an_imagenet_style_folder_of_your_own_is_checked_and_read(capsys: pytest.CaptureFixture[str]) -> None:
    """``image_dir`` with train/ and val/ of class subfolders: the set-up checks the headers of
    every file and reads train/ and val/ from it. The lessons after the set-up read only
    ``setup.train_dir``, ``setup.val_dir`` and ``setup.classes``, which the CI-scale run exercises
    on this photo set (``ci_run``), so the set-up runs here alone, in this process
    (``notebook_setup.run_setup``)."""
    photos = locate_photos(128, verbose=False)
    namespace = run_setup(NOTEBOOK, {"image_dir": str(photos.root), "device": "cpu", "batch_size": 16})
    assert "checked the headers of 128 files" in capsys.readouterr().out
    setup = namespace["setup"]
    assert (setup.train_dir, setup.val_dir) == (photos.train, photos.val)
    assert list(setup.classes) == sorted(p.name for p in photos.train.iterdir() if p.is_dir())
    assert (setup.batch_size, namespace["batch_size"]) == (16, 16)
    assert setup.parameters["image_dir"] == "data/photos-128"  # relative: nothing of this machine
    assert "train_images" not in namespace  # the opening lesson is no set-up: it is left out


# --- the recipe: the notebook's loop in one cell, run as a user runs it (tools.recipes) ----------

RECIPE_BATCH = 8  # the folder holds 8 photos: every epoch is one batch of the same photos
RECIPE_EPOCHS = 12  # 12 epochs of one step each, every one run to its end
RECIPE_WARMUP = 4  # steps of its linear warm-up to LR
# ImageNet's normalization of 0-255 pixels: (0 - 123.675) / 58.395 and (255 - 103.53) / 57.375
NORMALIZED = (-2.12, 2.64)
RECIPE_REPORT = {
    "n_classes": "n_classes",
    "losses": "[x.item() for x in _losses]",  # LOSS_OBSERVER's
    "warmup": "[optimizer.param_groups[0]['lr'], LR * BATCH / 256, WARMUP, warmup.last_epoch]",
    "images": "[list(images.shape), str(images.dtype), images.device.type]",
    "channels_last": "images.is_contiguous(memory_format=torch.channels_last)",
    "range": "[images.min().item(), images.max().item()]",
    "labels": "[labels.tolist(), str(labels.dtype), labels.device.type]",
}
# put before the recipe: every step's loss, as the model's step computed it (the recipe prints an
# epoch's last); torch's function is patched, not the recipe
LOSS_OBSERVER = """import torch as _torch

_cross_entropy, _losses = _torch.nn.functional.cross_entropy, []


def _observed_loss(*args, **kwargs):
    loss = _cross_entropy(*args, **kwargs)
    _losses.append(loss.detach())
    return loss


_torch.nn.functional.cross_entropy = _observed_loss
"""
# what the capture loop records at its traced step; on the GPU the labels' copy there too
CAPTURED_BY_RECIPE = ["ImageRandomCrop", "Resize", "CoinFlip", "CropMirrorNormalize", "Squeeze", "Cast"]
# put before the recipe: the operators its capture loop captured, after each step (DALI's private
# capture context, which helpers.toolkit.capture_guard reads too); DALI's class is patched, not the recipe
CAPTURE_OBSERVER = """import nvidia.dali.experimental.dynamic as _ndd
from nvidia.dali.experimental.dynamic._capture import CaptureContext as _Context

_next_epoch, _captured = _ndd.readers.File.next_epoch, []


def _observed(self, *args, **kwargs):
    for batch in _next_epoch(self, *args, **kwargs):
        context = _Context.current()
        yield batch
        _captured.append([node.op_class.__name__ for node in context.nodes])


_ndd.readers.File.next_epoch = _observed
"""


def _one_batch_folder(tmp_path: Path) -> Path:
    """Two classes of the embedded photos, 4 JPEGs each: RECIPE_BATCH photos in all."""
    photos = locate_photos(128, verbose=False)
    root = tmp_path / "photos"
    for name in photos.classes[:2]:
        (root / name).mkdir(parents=True)
        for jpeg in sorted((photos.train / name).glob("*.jpg"))[: RECIPE_BATCH // 2]:
            shutil.copy(jpeg, root / name)
    return root


def _recipe_settings(folder: Path, device: str, epochs: int = RECIPE_EPOCHS) -> dict:
    return {
        "FOLDER": str(folder),
        "DEVICE": device,
        "MODEL": "resnet18",
        "SIZE": 32,
        "BATCH": RECIPE_BATCH,
        "THREADS": 2,
        "EPOCHS": epochs,
        "WARMUP": RECIPE_WARMUP,
    }


def _check_recipe(device: str, tmp_path: Path) -> None:
    from tools import recipes

    found = recipes.recipe(NOTEBOOK)
    assert found is not None
    settings = _recipe_settings(_one_batch_folder(tmp_path), device)
    report = recipes.run(
        recipes.Recipe(NOTEBOOK, LOSS_OBSERVER + found.source), settings, RECIPE_REPORT, tmp_path
    )
    on = "cuda" if device == "gpu" else "cpu"
    assert report["n_classes"] == 2
    # what the model was handed: NCHW floats in channels_last order, normalized, on the model's device
    assert report["images"] == [[RECIPE_BATCH, 3, 32, 32], "torch.float32", on], report
    assert report["channels_last"], "a permuted NHWC batch is channels_last"
    low, high = report["range"]
    assert NORMALIZED[0] - 0.01 <= low < 0 < high <= NORMALIZED[1] + 0.01, report["range"]
    # a batch is the whole folder, shuffled: each class's 4 photos, labelled by its subfolder
    labels, dtype, labels_on = report["labels"]
    assert sorted(labels) == [0] * 4 + [1] * 4 and (dtype, labels_on) == ("torch.int64", on), report
    # one loss per step, one step an epoch, EPOCHS in all; on the same 8 photos (new crops each step) it
    # falls well below its start (lr 0.1 x 8/256; in 7 runs on this CPU the last 4 steps' mean was
    # at most 0.28 of the first 3 steps')
    losses = report["losses"]
    assert len(losses) == RECIPE_EPOCHS and all(math.isfinite(x) for x in losses), losses
    # the warm-up: WARMUP steps to the full rate (LR for 256 images, scaled to BATCH), then held there
    lr, full, warmup, steps = report["warmup"]
    assert (warmup, steps) == (RECIPE_WARMUP, RECIPE_EPOCHS) and lr == pytest.approx(full), report["warmup"]
    assert statistics.fmean(losses[-4:]) < 0.6 * statistics.fmean(losses[:3]), losses


def _check_capture(device: str, tmp_path: Path) -> None:
    from tools import recipes

    found = recipes.recipe(NOTEBOOK)
    assert found is not None
    observed = recipes.Recipe(NOTEBOOK, CAPTURE_OBSERVER + found.source)
    report = recipes.run(
        observed,
        _recipe_settings(_one_batch_folder(tmp_path), device, epochs=3),
        {"captured": "_captured"},
        tmp_path,
    )
    expected = CAPTURED_BY_RECIPE[:4] + ["Copy"] * (device == "gpu") + CAPTURED_BY_RECIPE[4:]
    # after every step of the 3 epochs, each run to its end: every operator call captured
    assert report["captured"] == [expected] * 3, report


@pytest.mark.slow
def test_the_recipe_runs_without_the_suite(tmp_path: Path) -> None:
    """The recipe on the CPU, in a process without the suite, on a folder of 8 photos of 2
    classes with BATCH 8: NCHW float32 crops in channels_last order, normalized, labels 0 and 1
    by subfolder, EPOCHS finite losses, one an epoch, that fall on the same photos."""
    _check_recipe("cpu", tmp_path)


@pytest.mark.slow
def test_the_recipe_captures_every_operator(tmp_path: Path) -> None:
    """Every DALI call of the recipe's loop is captured, none eager: its settings are wrapped in
    ndd.capture.invariant, its other arguments literals or tuples."""
    _check_capture("cpu", tmp_path)


def test_the_recipe_on_the_gpu(gpu_run, tmp_path: Path) -> None:
    _check_recipe("gpu", tmp_path)


def test_the_recipe_captures_every_operator_on_the_gpu(gpu_run, tmp_path: Path) -> None:
    """On the GPU the labels' copy (`to_device`) is captured too."""
    _check_capture("gpu", tmp_path)
