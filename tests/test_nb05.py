"""Notebook 05 (photographs at scale): executed at CI scale on the CPU tier through the shared
``ci_run`` fixture, with assertions on what it records; its errors for a bad ``image_dir``. The
checks of its H200 run are in tests/test_gpu_tier.py."""

from __future__ import annotations

import math
import statistics

import pytest
from conftest import check_goal
from notebook_setup import run_setup

from helpers.data_sources import locate_photos
from helpers.parameters import ParameterError
from helpers.paths import REPO_ROOT
from helpers.records import NotebookResults
from tools import suite

NOTEBOOK = REPO_ROOT / "notebooks" / "05-photos-at-scale.ipynb"
# its refusals of bad parameters, run in its set-up by tests/test_notebook_refusals.py
REFUSALS = [
    ({"batchsize": 32}, ParameterError, "unknown parameter batchsize; did you mean batch_size?"),
]
NAME = NOTEBOOK.stem
GOALS = {"ResNet-50: best dynamic / ceiling": ("resnet50", 0.97),
         "ResNet-50: best dynamic / pipeline mode, same knobs": ("resnet50", 0.97),
         "ResNet-50: best dynamic / best DataLoader": ("resnet50", 1.8),
         "ResNet-18: best dynamic / pipeline mode, same knobs": ("resnet18", 0.97),
         "ResNet-18: best dynamic / best DataLoader": ("resnet18", 2.5),
         "alone: best capture / pipeline mode, same knobs": (None, 0.95),
         "cpu: DataLoader / dynamic mode, CPU time per image": (None, 3.0)}
ROLES = {"ceiling", "best DataLoader", "best pipeline mode", "pipeline mode, same knobs", "best dynamic mode",
         "other dynamic mode"}
CAPTURED = ["ImageRandomCrop", "Resize", "CoinFlip", "CropMirrorNormalize"]  # and the labels' operators


@pytest.fixture(scope="module")
def document(ci_run: dict[str, suite.NotebookRun]) -> NotebookResults:
    """What notebook 05 recorded in the shared CI-scale run (conftest's ``ci_run``)."""
    run = ci_run[NAME]
    assert run.ok, run.error
    return run.results


def _geometric_mean_ratio(a: list[float], b: list[float]) -> float:
    logs = [math.log(x / y) for x, y in zip(a, b, strict=True)]
    return math.exp(sum(logs) / len(logs))


def check_goals(document: dict) -> None:
    """Every goal of the models that ran: the paired ratio of the confirmation rounds, inside its
    interval, with the verdict that the interval gives."""
    results, parameters = document.results, document.parameters
    goals = results["goals"]
    models = parameters["models"]
    assert set(goals) == {n for n, (model, _) in GOALS.items() if model is None or model in models}
    for name, g in goals.items():
        low, high = g["ci95"]
        model = GOALS[name][0]
        rounds = (results["alone"] if model is None else results["end_to_end"][model])["rounds"]
        check_goal(g, GOALS[name][1], rounds)
    alone = results["alone"]
    cpu = [[r["cpu_s_per_1000"] for r in alone["trials"][alone["picks"][role]]]
           for role in ("best DataLoader", "best capture")]
    assert goals["cpu: DataLoader / dynamic mode, CPU time per image"]["ratio"] == pytest.approx(
        _geometric_mean_ratio(*cpu))
    for model in parameters["models"]:
        run = results["end_to_end"][model]
        a, b = ([r["images_per_s"] for r in run["trials"][run["picks"][role]]]
                for role in ("best dynamic mode", "best DataLoader"))
        short = "ResNet-50" if model == "resnet50" else "ResNet-18"
        assert goals[f"{short}: best dynamic / best DataLoader"]["ratio"] == pytest.approx(
            _geometric_mean_ratio(a, b))


def check_trials(document: dict) -> None:
    """Selection then confirmation, in interleaved rounds of a fixed amount of work each."""
    results, parameters = document.results, document.parameters
    selection, alone = results["selection"], results["alone"]
    assert all(len(t) == parameters["selection_trials"] for t in selection["trials"].values())
    assert parameters["trials"] <= alone["rounds"] <= parameters["most_trials"]
    assert all(len(t) == alone["rounds"] for t in alone["trials"].values())
    configs = selection["configs"]
    assert {c["workers"] for c in configs.values() if c["loader"] == "dataloader"} == \
        set(parameters["dataloader_workers"])
    # the best DataLoader is the selection's best by median, measured again
    dataloaders = [n for n, c in configs.items() if c["loader"] == "dataloader"]
    best = max(dataloaders,
               key=lambda n: statistics.median(r["images_per_s"] for r in selection["trials"][n]))
    assert alone["picks"]["best DataLoader"] == best
    for model in parameters["models"]:
        run = results["end_to_end"][model]
        assert set(run["picks"]) == ROLES
        assert parameters["trials"] <= run["rounds"] <= parameters["most_trials"]
        assert all(len(t) == run["rounds"] for t in run["trials"].values())
        assert all(len(t) == parameters["selection_trials"] for t in run["selection"].values())
        dynamic = [n for n in run["selection"] if n.startswith("capture")]
        assert run["picks"]["best dynamic mode"] == max(
            dynamic, key=lambda n: statistics.median(r["images_per_s"] for r in run["selection"][n]))
    for records, epochs in [(alone["trials"], parameters["alone_epochs"]),
                            *((run["trials"], 1) for run in results["end_to_end"].values())]:
        for rows in records.values():
            for r in rows:  # a loader alone runs alone_epochs epochs a trial, one feeding a model
                assert r["images"] == epochs * parameters["epoch_images"] and r["images_per_s"] > 0
                assert r["cpu_s_per_1000"] > 0 and 0 <= r["wait_fraction"] <= 1


@pytest.mark.notebook
def test_selection_then_confirmation_in_interleaved_rounds(document) -> None:
    check_trials(document)


@pytest.mark.notebook
def test_goals_carry_ratio_interval_verdict_and_trials(document) -> None:
    check_goals(document)


def check_fully_captured(document: dict) -> None:
    """Every capture loop's guard saw the whole training preprocessing captured, and the
    pipeline mode "at the same knobs" has the best capture loop's threads and hw_decoder_load."""
    alone = document.results["alone"]
    assert alone["captured"] and all(ops.split(", ")[:4] == CAPTURED for ops in alone["captured"].values())
    configs = alone["configs"]
    same, best = configs[alone["picks"]["pipeline mode, same knobs"]], configs[alone["picks"]["best capture"]]
    assert (same["loader"], same["threads"], same["hw_decoder_load"]) == \
        ("pipeline", best["threads"], best["hw_decoder_load"])


@pytest.mark.notebook
def test_every_capture_loop_captured_the_whole_preprocessing(document) -> None:
    check_fully_captured(document)


@pytest.mark.notebook
def test_labels_channel_order_and_normalization_agree_across_loaders(document) -> None:
    results = document.results
    agreement = results["agreement"]
    assert results["labels_agree"] and results["pixels_agree"] and results["channels_visible"]
    assert all(a["labels_equal"] for a in agreement.values())
    assert agreement["pipeline mode"]["mean_levels"] <= 1.0  # the same operators
    assert agreement["DataLoader"]["channel_mean_levels"] <= 2.0
    swapped = agreement["DataLoader, channels reversed (BGR)"]
    assert swapped["mean_levels"] > 3 * agreement["DataLoader"]["mean_levels"]


@pytest.mark.notebook
def test_cpu_time_counts_the_dataloader_workers(document) -> None:
    """The DataLoader decodes in its workers: its CPU time per image can only be that of a JPEG
    decode (a millisecond or more) if the workers are counted."""
    alone = document.results["alone"]
    dataloader = alone["trials"][alone["picks"]["best DataLoader"]]
    assert statistics.fmean(r["cpu_s_per_1000"] for r in dataloader) > 1.0
    for run in document.results["end_to_end"].values():
        ceiling = run["trials"][run["picks"]["ceiling"]]
        assert all(r["wait_fraction"] < 0.05 for r in ceiling)  # its data is in memory already


@pytest.mark.notebook
def test_a_truncated_jpeg_is_named(document) -> None:
    corrupt = document.results["corrupt_file"]
    assert corrupt["named"] is True
    assert (document.results["device_memory_gib"] is None) == (document.parameters["device"] == "cpu")
    assert "is not a readable image" in corrupt["message"] and "Remove or replace" in corrupt["message"]
    # what DALI itself said, kept beside it: on the CPU it names the sample's file, relative to file_root
    assert "astronaut_00000.jpg" in corrupt["dali_says"]["cpu"] and corrupt["check_decodable_ms_per_file"] > 0


def test_an_imagenet_style_folder_of_your_own_is_checked_and_read(capsys: pytest.CaptureFixture[str]) -> None:
    """``image_dir`` with train/ and val/ of class subfolders: the set-up checks the headers of
    every file and reads train/ and val/ from it. The lessons after the set-up read only
    ``train_dir``, ``val_dir`` and ``classes``, which the CI-scale run exercises on this photo set
    (``ci_run``), so the set-up runs here alone, in this process (``notebook_setup.run_setup``)."""
    photos = locate_photos(128, verbose=False)
    namespace = run_setup(NOTEBOOK, {"image_dir": str(photos.root), "device": "cpu", "batch_size": 16})
    assert "checked the headers of 128 files" in capsys.readouterr().out
    assert (namespace["train_dir"], namespace["val_dir"]) == (photos.train, photos.val)
    assert namespace["classes"] == sorted(p.name for p in photos.train.iterdir() if p.is_dir())
