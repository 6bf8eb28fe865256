"""Copies of the notebooks to work in or to test: working copies for `make lab` (with a note
that says where their stored outputs came from) and the copies that `make nbval` runs (only the
notebooks with checked cells, at a scale's parameters). Every copy is made without papermill's
injected parameters; a working copy that exists is never overwritten.

    python -m tools.suite copy --to DIR [--fresh] [--provenance] [--checked-only] [--scale ci]
"""

from __future__ import annotations

import platform
from pathlib import Path

import nbformat
from papermill.parameterize import parameterize_notebook

from tools.run_parameters import notebooks
from tools.run_parameters import parameters_for
from tools.run_parameters import without_injected_parameters

PROVENANCE = "lab-provenance"  # the tag of the note at the top of a lab copy


def provenance_cell(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A note that says where the stored outputs of a working copy came from."""
    run = notebook.metadata.get("papermill") or {}
    date = (run.get("end_time") or "")[:10] or "an unrecorded date"
    took = f"{run['duration'] / 60:.1f} min" if run.get("duration") else "runtime unrecorded"
    cell = nbformat.v4.new_markdown_cell(
        f"> **Stored outputs.** Until you run a cell, the output under it is the one stored with "
        f"the committed notebook: the run of {date} that made it ({took}; the machine it ran on "
        "is in `results/` and on the docs' Results page). Running a cell replaces its output "
        "with your machine's; to get the stored outputs back, delete this copy and run "
        "`make lab` again."
    )
    cell.metadata["tags"] = [PROVENANCE]
    return cell


CHECKED = "nbval-check-output"  # the tag of a cell whose outputs nbval compares


def has_checked_cells(notebook: Path) -> bool:
    return any(CHECKED in c.metadata.get("tags", []) for c in nbformat.read(notebook, as_version=4).cells)


def copy_notebooks(
    dest: Path,
    fresh: bool = False,
    provenance: bool = False,
    checked_only: bool = False,
    scale: str | None = None,
) -> list[Path]:
    """Copies of the notebooks without papermill's injected parameters, in ``dest``: working
    copies for `make lab` (an existing copy is kept: it may hold your work; ``provenance``: a
    note first that says where its stored outputs came from) or for nbval (``fresh``:
    replaced; ``checked_only``: only the notebooks with cells whose outputs nbval compares, as
    the others are executed once already by the CI-scale run of the tests; ``scale``: that
    scale's parameters injected as papermill injects them, in a cell after the parameters)."""
    dest.mkdir(parents=True, exist_ok=True)
    copies = []
    for notebook in notebooks():
        if checked_only and not has_checked_cells(notebook):
            continue
        copy = dest / notebook.name
        if fresh or not copy.exists():
            node = without_injected_parameters(notebook)
            # the kernel's Python, as JupyterLab would write it on opening the copy: a copy made
            # from a run on another Python (the GPU runner's) would otherwise open as modified
            node.metadata.setdefault("language_info", {})["version"] = platform.python_version()
            if provenance:
                node.cells.insert(0, provenance_cell(nbformat.read(notebook, as_version=4)))
            if scale not in (None, "full"):
                node = parameterize_notebook(node, parameters_for(notebook, scale, "auto"))
            nbformat.write(node, copy)
        copies.append(copy)
    return copies
