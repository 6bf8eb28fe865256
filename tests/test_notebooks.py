"""Every notebook, executed headless at CI scale, and what it recorded."""

from __future__ import annotations

import hashlib
from pathlib import Path

import nbformat
import pytest

from helpers.devices import gpu_available
from helpers.paths import REPO_ROOT, default_data_dir
from tools import suite

pytestmark = pytest.mark.notebook


def _fingerprint() -> dict[str, str]:
    """The committed notebooks and the data manifests: running a notebook must not change them."""
    files = sorted(REPO_ROOT.glob("notebooks/*.ipynb")) + sorted(default_data_dir().rglob("MANIFEST.json"))
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


@pytest.fixture(scope="module")
def ci_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, suite.NotebookRun]:
    before = _fingerprint()
    out = tmp_path_factory.mktemp("ci-run")
    runs = suite.run_suite("auto", "ci", out)
    assert _fingerprint() == before, "running the notebooks changed committed files or data"
    return {run.name: run for run in runs}


def test_every_notebook_ran(ci_run) -> None:
    assert set(ci_run) == {p.stem for p in suite.notebooks()}
    for run in ci_run.values():
        assert run.ok, run.error
        executed = nbformat.read(run.executed, as_version=4)
        assert not [o for c in executed.cells for o in c.get("outputs", [])
                    if o.get("output_type") == "error"]


def _results(ci_run, name: str) -> dict:
    return ci_run[name].results


def test_getting_started_records_what_it_taught(ci_run) -> None:
    document = _results(ci_run, "01-getting-started")
    results, parameters = document["results"], document["parameters"]
    assert results["epoch_batch_sizes"] == [parameters["batch_size"]] * 3
    assert results["first_image_shape"] == [427, 640, 3]
    assert len(set(results["unshuffled_labels"])) == 1  # alphabetical order: one class
    assert results["shuffled_labels"] != results["unshuffled_labels"]
    assert results["fixed_rotation_corner_max"] == 0  # the fill value in the corners
    angles = results["random_angles"]
    assert all(-10 <= a <= 10 for a in angles) and len(set(angles)) == len(angles)
    rates = results["decode_rates"]
    assert set(rates) == {f"{d}@{n}" for d in (["cpu", "gpu"] if gpu_available() else ["cpu"])
                          for n in parameters["thread_counts"]}
    assert all(rate > 0 for trial in rates.values() for rate in trial)
    assert len(next(iter(rates.values()))) == parameters["trials"]


@pytest.mark.skipif(gpu_available(), reason="checks the CPU path of a GPU step")
def test_getting_started_skips_gpu_steps_with_a_message(ci_run) -> None:
    executed = nbformat.read(ci_run["01-getting-started"].executed, as_version=4)
    text = "".join(o.get("text", "") for c in executed.cells for o in c.get("outputs", []))
    assert text.count("Skipped: Step") == 2 and "Skipped: Timing the GPU decoder" in text


def test_capture_mode_matches_eager_and_learns(ci_run) -> None:
    document = _results(ci_run, "02-capture-mode")
    results, headline = document["results"], document["headline"]
    assert results["identical_batches"] is True
    assert headline["eager_samples_per_s"] > 0 and headline["capture_samples_per_s"] > 0
    assert headline["final_loss_eager"] == pytest.approx(headline["final_loss_capture"], rel=1e-5)
    for mode in ("eager", "capture"):
        runs = results["runs"][mode]
        assert len(runs) == document["parameters"]["trials"]
        assert all(len(r["epoch_samples_per_s"]) == document["parameters"]["epochs"] - 1 for r in runs)
        assert all(r["losses"][-1] < r["losses"][0] for r in runs)
    assert results["captured_operators"][:4] == ["Image", "Uniform", "Rotate", "CropMirrorNormalize"]
    assert results["capture_rules_demo"] == {
        "rotate_with_global": ["Image"], "rotate_with_invariant": ["Image", "Uniform", "Rotate"]}


@pytest.mark.parametrize("parameters,message", [
    ({"batch_size": 0}, "parameter batch_size must be a positive integer"),
    ({"batch_size": 22}, "batch_size=22 is larger than the 21 images"),
    ({"image_dir": "/no/such/folder"}, "image folder /no/such/folder does not exist"),
])
def test_bad_parameter_values_fail_with_their_name(tmp_path: Path, parameters, message) -> None:
    notebook = REPO_ROOT / "notebooks" / "01-getting-started.ipynb"
    run = suite.run_notebook(notebook, tmp_path, parameters)
    assert not run.ok and message in run.error
    assert run.executed.is_file()


@pytest.mark.skipif(gpu_available(), reason="needs a machine without a GPU")
def test_asking_for_the_gpu_without_one_says_use_cpu(tmp_path: Path) -> None:
    run = suite.run_notebook(REPO_ROOT / "notebooks" / "02-capture-mode.ipynb", tmp_path,
                             {"device": "gpu"})
    assert not run.ok and "GPUUnavailableError" in run.error and 'device="cpu"' in run.error
