"""A notebook's set-up, executed in the test's own process: the code cells of its bookkeeping up
to the first lesson after its parameters (tagged ``parameters`` or ``hide-input``: the guard, the
parameters, the check of their names, the imports, the check of their values).

A refusal of a bad parameter happens there, so a test of one needs no kernel: the cells run as
papermill would run them, with the given parameters in a cell of their own after the
``parameters`` cell (headed ``# Parameters``, which ``helpers.parameters.reject_unknown_parameters``
looks for in IPython's ``In``), in the notebook's folder. Each notebook's integration test still
runs it once in a kernel through ``tools.suite.run_notebook``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import nbformat

from helpers.parameters import INJECTED_TAG
from helpers.parameters import PAPERMILL_INJECTED

SETUP_TAGS = {"parameters", "hide-input"}


def setup_cells(notebook: Path) -> list[nbformat.NotebookNode]:
    """The set-up's code cells: those tagged ``parameters`` or ``hide-input`` from the top up to
    the first code cell of neither tag after the ``parameters`` cell. A lesson that comes before
    the parameters (self-contained, the notebook's opening) is not part of it and is left out."""
    cells: list[nbformat.NotebookNode] = []
    parameters_seen = False
    for cell in nbformat.read(notebook, as_version=4).cells:
        tags = set(cell.metadata.get("tags", []))
        # a cell an earlier papermill run left: the runner drops it too
        if cell.cell_type != "code" or INJECTED_TAG in tags:
            continue
        if not tags & SETUP_TAGS:
            if parameters_seen:
                break
            continue  # the opening lesson
        parameters_seen = parameters_seen or "parameters" in tags
        cells.append(cell)
    return cells


def run_setup(notebook: Path, parameters: dict[str, Any] | None = None) -> dict[str, Any]:
    """Execute the set-up cells with ``parameters`` injected; returns the notebook's globals.
    Raises what a cell raises (a ParameterError, a DataSourceError, ...)."""
    history: list[str] = [""]  # IPython's In: In[0] is empty
    namespace: dict[str, Any] = {"__name__": "__main__", "In": history}
    sources = []
    for cell in setup_cells(notebook):
        sources.append(cell.source)
        if "parameters" in cell.metadata.get("tags", []) and parameters:
            sources.append("\n".join([PAPERMILL_INJECTED, *(f"{k} = {v!r}" for k, v in parameters.items())]))
    before = Path.cwd()
    os.chdir(notebook.parent)  # the kernel's folder under the runner
    try:
        for source in sources:
            history.append(source)
            code = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
            exec(compile(code, f"<{notebook.name}>", "exec"), namespace)  # noqa: S102
    finally:
        os.chdir(before)
    return namespace
