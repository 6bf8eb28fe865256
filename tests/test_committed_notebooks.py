"""The committed notebooks: outputs that come from one real run (nbval, `make nbval`, checks
that they still reproduce)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import nbformat
import pytest

from tools.results_table import records
from tools.suite import notebooks

# the most recently recorded run of the committed notebooks, whatever the file names say
RECORD = next((p for p, _ in reversed(records()) if p.match("notebooks-*.json")), None)


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
    assert RECORD, "no results/notebooks-*.json for the committed notebooks"
    record = json.loads(RECORD.read_text())
    assert record["machine"]["gpu"], "the committed notebooks must come from a GPU run"
    entry = record["notebooks"][notebook.stem]
    assert entry["parameters"]["device"] == "gpu"
    shown = ast.literal_eval(_code_cells(notebook)[-1].outputs[-1]["data"]["text/plain"])
    assert shown == {k: pytest.approx(v, rel=1e-4, abs=0.006) for k, v in entry["headline"].items()}
