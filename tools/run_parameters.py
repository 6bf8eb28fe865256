"""Which notebooks the runner runs, and what papermill is handed for each.

The notebooks are the registry's (``helpers.data.registry``: every ``notebooks/NN-*.ipynb``), and the
parameters of each scale come from the notebook's own metadata,
``metadata["dali_tutorials"]["scales"][scale]``; ``full`` is the notebook's own defaults.
Papermill is handed only the parameters that change something: none that equals the notebook's
default, and no ``device`` that its default ``"auto"`` resolves to on this machine, so
`make test-gpu` on a GPU machine injects nothing (papermill then adds no injected cell) and the
executed notebooks run exactly as a reader's copy does. A cell that an earlier papermill run
injected is dropped (:func:`without_injected_parameters`) before a run and in every copy.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import nbformat
import papermill

from helpers.data import registry
from helpers.data.paths import REPO_ROOT
from helpers.data.registry import RegistryError
from helpers.toolkit.devices import resolve_device
from helpers.toolkit.parameters import INJECTED_TAG
from tools.record_format import SCALES

# the checkout whose notebooks run; which they are, and the parameters of each scale, come from
# the registry (helpers.data.registry: each notebook's own metadata)
ROOT = REPO_ROOT


def notebooks(only: list[str] | None = None, root: Path | None = None) -> list[Path]:
    """The registry's notebooks (of ``root``, by default the checkout), or those whose names start
    with one of ``only``; a notebook whose metadata lacks its entry stops the run before any kernel."""
    try:
        found = [entry.path for entry in registry.notebooks(root or ROOT)]
    except RegistryError as error:
        raise SystemExit(f"error: {error}") from None
    if only:
        chosen = [p for p in found if any(p.stem.startswith(o) for o in only)]
        if not chosen:
            raise SystemExit(f"no notebook matches {only}; there are: {[p.stem for p in found]}")
        return chosen
    return found


def scales_of(notebook: Path) -> dict[str, dict[str, Any]]:
    """The runner's parameters of each scale, from the notebook's registry entry (its metadata)."""
    try:
        return registry.read(notebook).scales
    except RegistryError as error:
        raise SystemExit(f"error: {error}") from None


def parameters_for(notebook: Path, scale: str, device: str) -> dict[str, Any]:
    """What papermill is handed for ``scale`` and ``device``: the scale's parameters from the
    notebook's metadata and ``device``, less those that would change nothing (a value equal to
    the notebook's default, or a device that its default ``"auto"`` resolves to here)."""
    if scale not in SCALES:
        raise SystemExit(f"unknown scale {scale!r}; choose one of {', '.join(SCALES)}")
    parameters: dict[str, Any] = {}
    if scale != "full":
        scales = scales_of(notebook)
        if scale not in scales:
            raise SystemExit(
                f"{notebook.name} has no parameters for scale {scale!r}: add them to its metadata "
                f'as "dali_tutorials": {{"scales": {{"{scale}": {{...}}}}}} (scales it has: '
                f"{', '.join(sorted(scales)) or 'none'})"
            )
        parameters = dict(scales[scale])
    if device != "auto":
        parameters["device"] = device
    defaults = declared_parameters(notebook)
    if defaults.get("device") == "auto":
        defaults["device"] = resolve_device("auto")
    return {
        name: value
        for name, value in parameters.items()
        if name not in defaults or defaults[name] != value or type(defaults[name]) is not type(value)
    }


def declared_parameters(notebook: Path) -> dict[str, Any]:
    """The notebook's parameters (its cell tagged ``parameters``) with their defaults."""
    declared = papermill.inspect_notebook(str(notebook))
    out = {}
    for name, spec in declared.items():
        try:
            out[name] = ast.literal_eval(spec["default"])  # the parameters cell's literals
        except (ValueError, SyntaxError):
            out[name] = None
    return out


def without_injected_parameters(notebook: Path) -> nbformat.NotebookNode:
    """The notebook without a cell that an earlier papermill run injected (papermill keeps such
    a cell when it is given no parameters): every run starts from the notebook's own defaults."""
    node = nbformat.read(notebook, as_version=4)
    node.cells = [c for c in node.cells if INJECTED_TAG not in c.metadata.get("tags", [])]
    # papermill keeps the parameters it recorded last time when it is given none: drop them too
    node.metadata.get("papermill", {}).pop("parameters", None)
    return node
