"""A notebook's set-up, executed in the test's own process: the code cells from the top up to its
first lesson after the parameters (a lesson that opens the notebook before them is left out),
which are its bookkeeping (tagged ``parameters`` or ``hide-input``: the guard, the parameters,
the check of their names, the imports, the check of their values).

A refusal of a bad parameter happens there, so a test of one needs no kernel: the cells run as
papermill would run them, with the given parameters in a cell of their own after the
``parameters`` cell (headed ``# Parameters``, which ``helpers.toolkit.parameters.reject_unknown_parameters``
looks for in IPython's ``In``), in the notebook's folder. Each notebook's integration test still
runs it once in a kernel through ``tools.run_notebooks.run_notebook``.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest

from helpers.data.paths import REPO_ROOT
from helpers.data.registry import notebook_paths
from helpers.toolkit.parameters import INJECTED_TAG
from helpers.toolkit.parameters import PAPERMILL_INJECTED

SETUP_TAGS = {"parameters", "hide-input"}


def setup_cells(notebook: Path) -> list[nbformat.NotebookNode]:
    """The code cells of either tag from the top up to the first lesson after the parameters
    (the first code cell of neither tag that follows the ``parameters`` cell). A notebook that
    opens with its lesson, before its parameters, keeps that lesson self-contained: its cells
    are not part of the set-up and are left out."""
    cells, parameters_seen = [], False
    for cell in nbformat.read(notebook, as_version=4).cells:
        tags = set(cell.metadata.get("tags", []))
        # a cell an earlier papermill run left: the runner drops it too
        if cell.cell_type != "code" or INJECTED_TAG in tags:
            continue
        if not tags & SETUP_TAGS:
            if parameters_seen:
                break
            continue  # the opening lesson
        parameters_seen |= "parameters" in tags
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


# Each notebook's refusals of bad parameters are written in its own test file, tests/notebooks/test_nbNN.py,
# as ``REFUSALS = [(parameters, error class, words of the message), ...]`` (or ``pytest.param`` of
# the same, with marks); tests/notebooks/test_notebook_refusals.py runs them for every notebook of the
# registry, so a new notebook's are picked up without a list to edit.
REFUSALS = "REFUSALS"


def notebook_test_file(notebook: Path, root: Path) -> Path:
    """The test file of a notebook of the checkout ``root``: tests/notebooks/test_nbNN.py."""
    return root / "tests" / "notebooks" / f"test_nb{notebook.name[:2]}.py"


def _module(path: Path) -> Any:
    """The test module at ``path``: the one pytest imported already, or a fresh import."""
    imported = sys.modules.get(path.stem)
    if imported is not None and Path(getattr(imported, "__file__", "")).resolve() == path.resolve():
        return imported
    spec = importlib.util.spec_from_file_location(f"refusals_of_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def refusal_cases(root: Path = REPO_ROOT) -> list[Any]:
    """``pytest.param(notebook stem, parameters, error, message)`` for each refusal of each notebook
    of the registry (``helpers.data.registry``) of the checkout ``root``; a notebook whose test file, or
    whose ``REFUSALS`` in it, is missing gets one case with ``error`` None and what to add."""
    cases = []
    for notebook in notebook_paths(root):
        file = notebook_test_file(notebook, root)
        found = getattr(_module(file), REFUSALS, None) if file.is_file() else None
        if not found:
            what = (
                f"{file.relative_to(root)} is missing"
                if not file.is_file()
                else f"{file.relative_to(root)} has no {REFUSALS}"
            )
            cases.append(
                pytest.param(
                    notebook.stem,
                    {},
                    None,
                    f"{what}: list the notebook's refusals of bad parameters there as "
                    f"{REFUSALS} = [(parameters, error class, words of the message)]",
                    id=f"{notebook.stem}-missing",
                )
            )
            continue
        for index, case in enumerate(found):
            values, marks = (case.values, case.marks) if hasattr(case, "marks") else (case, ())
            cases.append(pytest.param(notebook.stem, *values, marks=marks, id=f"{notebook.stem}-{index}"))
    return cases
