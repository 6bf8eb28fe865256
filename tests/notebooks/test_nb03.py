"""Notebook 03 (feeding PyTorch fast): executed at CI scale on the CPU tier, and the checks of a
GPU run (tests/notebooks/test_gpu_tier.py calls ``check_goals`` and ``check_picks`` on it). Every figure is
recomputed from the recorded trials of the harness's two runs, the knobs and the confirmation."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from conftest import check_goal
from conftest import check_steady

from helpers.data.paths import REPO_ROOT
from helpers.toolkit.benchmarking import Ratio
from helpers.toolkit.benchmarking import rate_interval
from helpers.toolkit.benchmarking import ratio
from helpers.toolkit.parameters import ParameterError
from tools import run_notebooks

NOTEBOOK = REPO_ROOT / "notebooks" / "03-feeding-pytorch-fast.ipynb"
# its refusals of bad parameters, run in its set-up by tests/notebooks/test_notebook_refusals.py
REFUSALS = [
    (
        {"batch_sizes": [64, 100], "device": "cpu"},
        ParameterError,
        "every loader batch size must be a multiple of the first (64)",
    ),
]
NAME = NOTEBOOK.stem
KINDS = {"dynamic": ("capture", "eager"), "pipeline": ("pipeline",), "dataloader": ("dataloader",)}
# each goal: the way it compares the best dynamic mode with (a reference, or a pick), and its target
# what each goal compares the best dynamic way with (its target is 03's metadata's)
GOALS = {
    "best dynamic / pipeline mode default": ("references", "pipeline default"),
    "best dynamic / best DataLoader": ("picks", "dataloader"),
    "best dynamic / pipeline mode, same knobs": ("references", "same knobs"),
    "best dynamic / ceiling": ("references", "ceiling"),
}
SHARED_KNOBS = ("decode=", "threads=", "hw_decoder_load=")  # what pipeline mode shares with dynamic mode


@pytest.fixture(scope="module")
def document(ci_run: dict[str, run_notebooks.NotebookRun]):
    """What notebook 03 recorded in the shared CI-scale run (conftest's ``ci_run``)."""
    run = ci_run[NAME]
    assert run.ok, run.error
    return run.results


def rates(run: dict, name: str) -> list[float]:
    return [t["samples"] / t["seconds"] for t in run["ways"][name]["trials"]]


def recorded_ratio(run: dict, a: str, b: str) -> Ratio:
    """``a`` over ``b`` paired by round, as ``helpers.toolkit.harness.Results.ratio`` computes it."""
    return ratio(rates(run, a), rates(run, b))


def estimate(run: dict, name: str) -> float:
    return rate_interval(rates(run, name))[0]


def against(results: dict, where: tuple[str, str]) -> str:
    section, key = where
    return results["references"][key] if section == "references" else results["picks"][key]["best"]


def check_goals(document) -> None:
    """Every goal: the best dynamic mode over its reference in the confirmation's rounds, its
    interval and the verdict that the interval gives against its target."""
    results, parameters = document.results, document.parameters
    confirmation, best = results["confirmation"], results["picks"]["dynamic"]["best"]
    assert set(results["goals"]) == set(GOALS)
    for name, where in GOALS.items():
        goal = results["goals"][name]
        check_goal("03-feeding-pytorch-fast", name, goal, parameters["trials"])
        expected = recorded_ratio(confirmation, best, against(results, where))
        assert goal["ratio"] == pytest.approx(expected.ratio)
        assert goal["ci95"] == pytest.approx([expected.low, expected.high])
        assert goal["verdict"] == expected.verdict(goal["goal"])  # the target check_goal checked
    ceiling = results["goals"]["best dynamic / ceiling"]["ratio"]
    assert document.headline["best_over_ceiling"] == pytest.approx(ceiling)


def check_picks(document) -> None:
    """Each kind's pick is its best way by the confirmation's geometric mean, and its ties are
    exactly the others whose interval against it reaches 1; the references are like for like."""
    results = document.results
    confirmation = results["confirmation"]
    for kind, kinds in KINDS.items():
        names = [n for n, w in confirmation["ways"].items() if w["kind"] in kinds]
        best = max(names, key=lambda n: estimate(confirmation, n))
        pick = results["picks"][kind]
        assert pick["best"] == best
        tied = {n for n in names if n != best and recorded_ratio(confirmation, n, best).high >= 1}
        assert set(pick["ties"]) == tied
    top = results["picks"]["dynamic"]["best"]
    kind, batch, *options = top.split()
    shared = [o for o in options if o.startswith(SHARED_KNOBS)]
    assert results["references"]["same knobs"] == " ".join(["pipeline", batch, *shared])
    assert results["references"]["ceiling"] == f"ceiling {batch}"  # training alone, like for like
    assert confirmation["ways"][results["references"]["ceiling"]]["kind"] == "ceiling"
    headline = document.headline
    assert headline["best_dynamic_samples_per_s"] == pytest.approx(estimate(confirmation, top))
    assert headline["best_pipeline_samples_per_s"] == pytest.approx(
        estimate(confirmation, results["picks"]["pipeline"]["best"])
    )


@pytest.mark.notebook
def test_goals_and_picks_follow_the_confirmations_intervals(document) -> None:
    """Each goal's verdict and each pick (the best by its interval, or a tie) recomputed from the
    confirmation's trials."""
    check_goals(document)
    check_picks(document)


@pytest.mark.notebook
def test_the_confirmation_measures_the_knobs_best_again_with_the_baselines(document) -> None:
    results, parameters = document.results, document.parameters
    knobs, confirmation = results["knobs"], results["confirmation"]
    assert all(len(w["trials"]) == parameters["selection_trials"] for w in knobs["ways"].values())
    assert all(len(w["trials"]) == parameters["trials"] for w in confirmation["ways"].values())
    for kinds in KINDS.values():  # the two best of each kind in the knobs' rounds go on
        names = [n for n, w in knobs["ways"].items() if w["kind"] in kinds]
        assert set(sorted(names, key=lambda n: estimate(knobs, n))[-2:]) <= set(confirmation["ways"])
    step = parameters["batch_sizes"][0]
    assert {f"eager b{step}", f"capture b{step}", f"pipeline b{step}"} <= set(confirmation["ways"])
    workers = {int(n.split("workers=")[1].split(" ")[0]) for n in knobs["ways"] if n.startswith("dataloader")}
    assert workers == set(parameters["dataloader_workers"])
    assert {w["knob"] for w in knobs["ways"].values()} >= {
        "batch size",
        "threads",
        "labels cast in torch",
        "background thread",
        "eager mode",
        "workers",
        "prefetch_factor",
    }
    loader_batches = {
        int(n.split(" b")[1].split(" ")[0]) for n in knobs["ways"] if n.startswith("dataloader")
    }
    assert loader_batches == set(parameters["batch_sizes"])  # the DataLoader at every batch size DALI tries
    assert results["references"]["pipeline default"] == f"pipeline b{step}"


@pytest.mark.notebook
def test_every_trial_trains_whole_epochs_of_the_same_records_at_steady_state(document) -> None:
    """Every epoch of every loader is the subset's records, a whole number of the largest batch;
    every trial times whole epochs' worth until it lasts the run's least duration, hands over at
    most 5% of its batches untimed (the ones a DALI loader had ready), in recorded orders."""
    results, parameters = document.results, document.parameters
    epoch = parameters["epoch_records"]
    assert epoch % max(parameters["batch_sizes"]) == 0
    for run in (results["knobs"], results["confirmation"]):
        assert run["fed"] is True and run["min_seconds"] == parameters["min_seconds"] > 0
        batches = {name: epoch // int(name.split(" b", 1)[1].split(" ")[0]) for name in run["ways"]}
        check_steady(run, epoch_batches=batches)
        for name, way in run["ways"].items():
            ready = {"pipeline": 2, "capture": 1}.get(way["kind"], 0)
            assert {t["skipped"] for t in way["trials"]} == {ready}, name
            assert all(t["samples"] == t["batches"] * (epoch // batches[name]) for t in way["trials"]), name


@pytest.mark.notebook
def test_loaders_deliver_the_same_data(document) -> None:
    checks = {(c["check"], c["loaders"]): c for c in document.results["same_data"]}
    assert set(checks) == {
        ("no rotation", "capture / eager"),
        ("no rotation", "pipeline / eager"),
        ("no rotation", "DataLoader / eager"),
        ("rotated", "capture / eager"),
        ("rotated", "capture, background thread / eager"),
    }
    assert all(c["labels equal"] and c["most grey levels apart"] <= 1.0 for c in checks.values())
    assert all(c["bit equal"] for key, c in checks.items() if "DataLoader" not in key[1])
    assert all(c["batches"] == document.parameters["equal_data_batches"] for c in checks.values())


@pytest.mark.notebook
def test_the_lesson_captured_every_operator_and_the_profile_adds_up(document) -> None:
    results = document.results
    assert results["captured_operators"] == [
        "Image",
        "Uniform",
        "Rotate",
        "CropMirrorNormalize",
        "Squeeze",
        "Cast",
    ]
    profile = results["profile"]
    assert profile["top"] and sum(profile["share_by_package"].values()) == pytest.approx(1.0)
    assert math.isclose(
        sum(r["share"] for r in profile["top"]),
        sum(r["own_us_per_step"] for r in profile["top"]) / profile["total_us_per_step"],
    )


@pytest.mark.notebook
def test_batch_sizes_that_are_not_multiples_of_the_first_are_refused_in_a_run(tmp_path: Path) -> None:
    """The integration run of 03's refusals (the others: tests/notebooks/test_notebook_refusals.py)."""
    run = run_notebooks.run_notebook(NOTEBOOK, tmp_path / "run", {"batch_sizes": [64, 100], "device": "cpu"})
    assert not run.ok and "must be a multiple of the first (64)" in run.error


# --- the recipe: pipeline mode feeding the small model from a Caffe2 LMDB (tools.recipes) --------

RECIPE_RECORDS = 1000  # 3 batches of 256 and a partial one of 232: never padded
RECIPE_BATCH = 256
RECIPE_REPORT = {
    "epochs": "epochs",
    "images": "[list(images.shape), str(images.dtype), images.device.type]",
    "range": "[images.min().item(), images.max().item()]",
    "labels": "[labels.tolist(), str(labels.dtype), labels.device.type]",
}
# MNIST's normalization of 0-255 pixels: (0 - 0.1307 * 255) / (0.3081 * 255), (255 - ...) / ...
NORMALIZED = (-0.1307 / 0.3081, (1 - 0.1307) / 0.3081)


def check_recipe(run_recipe, tmp_path: Path, device: str) -> None:
    """Run the recipe on the first records of the MNIST LMDB; check what it handed to the model."""
    from helpers.data.data_sources import locate_data
    from helpers.data.lmdb_subset import first_records

    lmdb = first_records(locate_data(verbose=False).mnist_training, tmp_path / "lmdb", RECIPE_RECORDS)
    settings = {
        "LMDB": str(lmdb),
        "DEVICE": device,
        "BATCH": RECIPE_BATCH,
        "STEP": 64,
        "THREADS": 2,
        "EPOCHS": 3,
    }
    report = run_recipe(NOTEBOOK, settings, RECIPE_REPORT)
    # every record once an epoch: the last batch partial, not padded to BATCH
    assert [seen for seen, _ in report["epochs"]] == [RECIPE_RECORDS] * 3, report["epochs"]
    last = RECIPE_RECORDS % RECIPE_BATCH
    assert report["images"] == [[last, 1, 28, 28], "torch.float32", device], report["images"]
    low, high = report["range"]
    assert NORMALIZED[0] - 1e-3 <= low < 0 < high <= NORMALIZED[1] + 1e-3, report["range"]
    labels, dtype, where = report["labels"]
    assert len(labels) == last and set(labels) <= set(range(10)) and len(set(labels)) > 1, labels
    assert (dtype, where) == ("torch.int64", device)
    losses = [loss for _, loss in report["epochs"]]  # each epoch's mean
    # in 5 runs on this CPU the third epoch's mean was 0.77-0.80 of the first's
    assert all(math.isfinite(loss) for loss in losses) and losses[-1] < 0.9 * losses[0], losses


def test_the_recipe_reads_the_embedded_lmdb_from_the_notebooks_folder() -> None:
    """Its LMDB setting, a literal relative to notebooks/ (where the notebook runs), names the
    training LMDB `make data` builds."""
    import ast

    from helpers.data.paths import MNIST_TRAINING
    from helpers.data.paths import default_data_dir
    from tools import recipes

    found = recipes.recipe(NOTEBOOK)
    assert found is not None
    lmdb = (NOTEBOOK.parent / ast.literal_eval(found.settings["LMDB"].split("  #")[0])).resolve()
    assert lmdb == (default_data_dir() / "dali_extra" / MNIST_TRAINING).resolve()


@pytest.mark.slow
def test_the_recipe_runs_without_the_suite(run_recipe, tmp_path: Path) -> None:
    """The recipe on the CPU, in a process without the suite, on 1,000 records in batches of 256:
    every record once an epoch, normalized NCHW float32 digits, labels 0-9 as int64, each epoch's
    mean loss finite and falling."""
    check_recipe(run_recipe, tmp_path, "cpu")


def test_the_recipe_on_the_gpu(gpu_run, run_recipe, tmp_path: Path) -> None:
    check_recipe(run_recipe, tmp_path, "cuda")
