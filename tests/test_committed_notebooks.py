"""The committed notebooks: outputs that come from one real run, and that still reproduce."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from helpers.data_sources import REPO_ROOT
from helpers.suite import notebooks, without_injected_parameters

RECORDS = sorted((REPO_ROOT / "results").glob("notebooks-*.json"))


def _code_cells(notebook: Path) -> list:
    return [c for c in nbformat.read(notebook, as_version=4).cells if c.cell_type == "code"]


@pytest.mark.parametrize("notebook", notebooks(), ids=lambda p: p.stem)
def test_outputs_come_from_one_execution_in_order(notebook: Path) -> None:
    cells = _code_cells(notebook)
    assert [c.execution_count for c in cells] == list(range(1, len(cells) + 1))
    errors = [o for c in cells for o in c.outputs if o.output_type == "error"]
    assert not errors, f"{notebook.name} has committed error outputs"
    assert nbformat.read(notebook, as_version=4).metadata.get("papermill"), "not run by papermill"


@pytest.mark.parametrize("notebook", notebooks(), ids=lambda p: p.stem)
def test_outputs_match_the_committed_results(notebook: Path) -> None:
    """The notebook's last output (its headline) is the headline of the committed record, which
    names the GPU it ran on."""
    assert RECORDS, "no results/notebooks-*.json for the committed notebooks"
    record = json.loads(RECORDS[-1].read_text())
    assert record["machine"]["gpu"], "the committed notebooks must come from a GPU run"
    entry = record["notebooks"][notebook.stem]
    assert entry["parameters"]["device"] == "gpu"
    shown = ast.literal_eval(_code_cells(notebook)[-1].outputs[-1]["data"]["text/plain"])
    assert shown == {k: pytest.approx(v, abs=0.006) for k, v in entry["headline"].items()}



def test_nbval_reproduces_the_checked_outputs(tmp_path: Path) -> None:
    """pytest --nbval-lax on the committed notebooks, run here with their own defaults: the
    papermill-injected parameters of the GPU run (device="gpu") are left out of the copy."""
    for notebook in notebooks():
        nbformat.write(without_injected_parameters(notebook), tmp_path / notebook.name)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval-lax",
         "--nbval-sanitize-with", str(REPO_ROOT / "tests" / "nbval_sanitize.cfg"),
         *sorted(str(p) for p in tmp_path.glob("*.ipynb"))],
        cwd=tmp_path, capture_output=True, text=True, timeout=1200)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " passed" in result.stdout
