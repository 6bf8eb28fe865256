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
    assert results["parameters"]["device"] == "gpu"


def test_getting_started_timed_both_decoders(gpu_run: Path) -> None:
    results = _results(gpu_run, "01-getting-started")["results"]
    devices = {key.split("@")[0] for key in results["decode_rates"]}
    assert devices == {"cpu", "gpu"}
    assert results["gpu_decode_mean_abs_difference_vs_cpu"] < 5  # same images, other IDCT


def test_capture_mode_matches_eager_on_the_gpu(gpu_run: Path) -> None:
    results = _results(gpu_run, "02-capture-mode")
    assert results["results"]["identical_batches"] is True
    headline = results["headline"]
    assert headline["final_loss_eager"] == pytest.approx(headline["final_loss_capture"], rel=1e-4)
    assert results["results"]["captured_operators"][:2] == ["Image", "Uniform"]
