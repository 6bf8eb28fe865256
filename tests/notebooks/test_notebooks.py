"""Every notebook, executed headless at CI scale (the ``ci_run`` fixture of conftest.py); each
notebook's own checks are in tests/test_nbNN*.py."""

from __future__ import annotations

import nbformat
import pytest

from tools import run_parameters

pytestmark = pytest.mark.notebook


def test_every_notebook_ran(ci_run) -> None:
    assert set(ci_run) == {p.stem for p in run_parameters.notebooks()}
    for run in ci_run.values():
        assert run.ok, run.error
        executed = nbformat.read(run.executed, as_version=4)
        assert not [
            o for c in executed.cells for o in c.get("outputs", []) if o.get("output_type") == "error"
        ]


@pytest.mark.parametrize("notebook", run_parameters.notebooks(), ids=lambda p: p.stem)
def test_cells_folded_on_the_site_are_folded_in_jupyterlab(notebook) -> None:
    """A cell tagged hide-input (the docs fold its code) has jupyter.source_hidden (JupyterLab folds
    it), and no other cell hides its code: the site and the lab copies fold the same cells."""
    for cell in nbformat.read(notebook, as_version=4).cells:
        tagged = "hide-input" in cell.metadata.get("tags", [])
        hidden = bool(cell.metadata.get("jupyter", {}).get("source_hidden"))
        assert tagged == hidden, (
            f"{notebook.name}, cell {cell.get('id')}: hide-input {tagged}, source_hidden {hidden}"
        )
