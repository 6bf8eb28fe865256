"""Notebook 05 (photographs at scale): executed at CI scale on the CPU tier through the shared
``ci_run`` fixture, with assertions on what it records, every figure recomputed from the recorded
trials through ``helpers.harness.Results``; its errors for a bad ``image_dir``. The checks of its
H200 run are in tests/test_gpu_tier.py (they reuse ``check_trials``, ``check_goals`` and
``check_fully_captured``)."""

from __future__ import annotations

import statistics

import pytest
from conftest import check_goal
from conftest import check_steady
from notebook_setup import run_setup

from helpers.benchmarking import ratio
from helpers.data_sources import locate_photos
from helpers.harness import Results
from helpers.harness import Trial
from helpers.harness import Way
from helpers.parameters import ParameterError
from helpers.paths import REPO_ROOT
from helpers.photos_at_scale import CPU_GOAL
from helpers.photos_at_scale import GOALS as GOAL_SPECS
from helpers.results_file import NotebookResults
from tools import run_notebooks

NOTEBOOK = REPO_ROOT / "notebooks" / "05-photos-at-scale.ipynb"
# its refusals of bad parameters, run in its set-up by tests/test_notebook_refusals.py
REFUSALS = [
    ({"batchsize": 32}, ParameterError, "unknown parameter batchsize; did you mean batch_size?"),
]
NAME = NOTEBOOK.stem
# the goals' names and targets, as tools/findings.py and the notebook's metadata read them
GOALS = {"ResNet-50: best dynamic / ceiling": ("resnet50", 0.97),
         "ResNet-50: best dynamic / pipeline mode, same knobs": ("resnet50", 0.98),
         "ResNet-50: best dynamic / best DataLoader": ("resnet50", 1.5),
         "ResNet-18: best dynamic / pipeline mode, same knobs": ("resnet18", 0.97),
         "ResNet-18: best dynamic / best DataLoader": ("resnet18", 2.5),
         "alone: best capture / pipeline mode, same knobs": (None, 0.95),
         "cpu: DataLoader / dynamic mode, CPU time per image": (None, 3.0)}
ROLES = {"ceiling", "best DataLoader", "best pipeline mode", "pipeline mode, same knobs", "best dynamic mode",
         "eager"}
CAPTURED = ["ImageRandomCrop", "Resize", "CoinFlip", "CropMirrorNormalize"]  # and the labels' operators
TRIAL_FIELDS = ("samples", "seconds", "waited_s", "cpu_s", "peak_gib", "skipped", "batches", "epochs",
                "epoch_start_s", "settle_s")


@pytest.fixture(scope="module")
def document(ci_run: dict[str, run_notebooks.NotebookRun]) -> NotebookResults:
    """What notebook 05 recorded in the shared CI-scale run (conftest's ``ci_run``)."""
    run = ci_run[NAME]
    assert run.ok, run.error
    return run.results


def rebuilt(run: dict) -> Results:
    """A run of the harness as the record holds it (``Results.as_record``), rebuilt."""
    ways = [Way(name, lambda: None, kind=w["kind"], knob=w["knob"]) for name, w in run["ways"].items()]
    trials = {name: [Trial(**{k: t[k] for k in TRIAL_FIELDS},
                           busy={k: v for k, v in t.items() if k not in TRIAL_FIELDS and k != "rate"})
                     for t in w["trials"]] for name, w in run["ways"].items()}
    return Results(run["label"], run["unit"], ways, trials, run["seconds"], run["fed"])


def _runs(document: NotebookResults) -> tuple[Results, Results, dict[str, Results]]:
    results = document.results
    return (rebuilt(results["selection"]), rebuilt(results["alone"]),
            {m: rebuilt(run) for m, run in results["fed"].items()})


def check_trials(document: NotebookResults) -> None:
    """Knobs chosen in selection rounds by ``Results.pick``, then measured again: every way in every
    round, each trial the work it should be, the picks and roles as the rounds give them."""
    results, parameters = document.results, document.parameters
    selection, alone, fed = _runs(document)
    roles, knobs = results["roles"], results["knobs"]
    assert set(roles) == ROLES and set(fed) == set(parameters["models"])
    assert all(len(selection.rates(w.name)) == parameters["selection_trials"] for w in selection.ways)
    assert {knobs[w.name]["workers"] for w in selection.ways if w.kind == "DataLoader"} == \
        set(parameters["dataloader_workers"])
    for kind, role in (("DataLoader", "best DataLoader"), ("pipeline", "best pipeline mode"),
                       ("capture", "best dynamic mode")):
        pick = selection.pick([w.name for w in selection.ways if w.kind == kind])
        assert results["picks"][kind]["best"] == pick.best == roles[role]
        assert set(results["picks"][kind]["ties"]) == set(pick.ties)
    assert knobs[roles["pipeline mode, same knobs"]] == knobs[roles["best dynamic mode"]] == \
        knobs[roles["eager"]]
    assert {w.kind for w in alone.ways} == {"DataLoader", "pipeline", "capture", "eager"}
    epoch = parameters["epoch_images"] // parameters["batch_size"]  # batches an epoch
    runs = [(alone, "alone", parameters["trials"], parameters["trials"]),
            *((r, f"fed/{m}", parameters["trials"], parameters["most_trials"]) for m, r in fed.items())]
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
    assert set(goals) == {n for n, (model, _) in GOALS.items() if model is None or model in models}
    for name, g in goals.items():
        if name == CPU_GOAL:
            cpu = [[1000 * t.cpu_s / t.samples for t in alone.trials[roles[role]]]
                   for role in ("best DataLoader", "best dynamic mode")]
            expected = ratio(*cpu)
        else:
            model, a, b, _ = GOAL_SPECS[name]
            expected = (alone if model is None else fed[model]).ratio(roles[a], roles[b])
        check_goal(g, GOALS[name][1], expected.trials)
        assert (g["ratio"], *g["ci95"]) == pytest.approx((expected.ratio, expected.low, expected.high))
    headline = document.headline
    assert headline["cpu_dataloader_over_dynamic"] == pytest.approx(goals[CPU_GOAL]["ratio"])
    for model, run in fed.items():
        assert headline[f"{model}_ceiling_img_s"] == pytest.approx(run.estimate(roles["ceiling"])[0])
        assert headline[f"{model}_dynamic_over_dataloader"] == pytest.approx(
            run.ratio(roles["best dynamic mode"], roles["best DataLoader"]).ratio)


def check_fully_captured(document: NotebookResults) -> None:
    """Every capture loop's guard saw the whole preprocessing captured (the validation loop's has
    no random operators), and the batches each DALI loader had ready before a trial's timer were
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
    ``train_dir``, ``val_dir`` and ``classes``, which the CI-scale run exercises on this photo set
    (``ci_run``), so the set-up runs here alone, in this process (``notebook_setup.run_setup``)."""
    photos = locate_photos(128, verbose=False)
    namespace = run_setup(NOTEBOOK, {"image_dir": str(photos.root), "device": "cpu", "batch_size": 16})
    assert "checked the headers of 128 files" in capsys.readouterr().out
    assert (namespace["train_dir"], namespace["val_dir"]) == (photos.train, photos.val)
    assert namespace["classes"] == sorted(p.name for p in photos.train.iterdir() if p.is_dir())
    assert "train_images" not in namespace  # the opening lesson is no set-up: it is left out
