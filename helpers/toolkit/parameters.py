"""Checking notebook parameters, so that a bad value fails at once with its name."""

from __future__ import annotations

import ast
import difflib
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from helpers.data.errors import ParameterError

__all__ = [
    "INJECTED_TAG",
    "PAPERMILL_INJECTED",
    "ParameterError",
    "at_least",
    "check_known",
    "positive_int",
    "positive_ints",
    "reject_unknown_parameters",
]

# the first line of the cell that papermill injects after the one tagged `parameters`
PAPERMILL_INJECTED = "# Parameters"
# papermill's tag of that cell (an executed notebook keeps it): the runner, its copies, the tests'
# setup and the docs site each drop or reshape the tagged cell
INJECTED_TAG = "injected-parameters"


def positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ParameterError(f"parameter {name} must be a positive integer, not {value!r}")
    return value


def positive_ints(name: str, values: Any) -> list[int]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values:
        raise ParameterError(
            f"parameter {name} must be a non-empty list of positive integers, not {values!r}"
        )
    return [positive_int(f"{name}[{i}]", v) for i, v in enumerate(values)]


def at_least(namespace: Mapping[str, Any], minimums: Mapping[str, int | tuple[int, str]]) -> None:
    """The one call that checks a notebook's whole-number parameters: each name of ``minimums`` in
    ``namespace`` (the parameters a lesson's set-up was given, by name) is an integer of at least
    its minimum, given as a number or as ``(minimum, why)``: ``{"batch_size": 1, "trials": (2, "a
    95% interval needs two trials")}``. The first that is not raises a ParameterError with its
    name, its value and why."""
    for name, minimum in minimums.items():
        least, why = minimum if isinstance(minimum, tuple) else (minimum, "")
        value = positive_int(name, namespace[name])
        if value < least:
            raise ParameterError(
                f"parameter {name} must be at least {least}, not {value}" + (f": {why}" if why else "")
            )


def check_known(declared: dict[str, Any], given: dict[str, Any], notebook: str) -> None:
    """Fail on parameters that the notebook does not declare (papermill itself only warns), with
    the declared name closest to a mistyped one, or whose type differs from the declared
    default's (``None`` defaults accept anything). The one check of parameters: the runner
    (``tools.run_notebooks``) calls it before it starts a kernel, and each notebook through
    :func:`reject_unknown_parameters` under plain papermill."""
    for name in sorted(set(given) - set(declared)):
        close = difflib.get_close_matches(name, list(declared), n=1)
        hint = f"; did you mean {close[0]}?" if close else "."
        raise ParameterError(
            f"{notebook}: unknown parameter {name}{hint} Its parameters are: {', '.join(sorted(declared))}"
        )
    for name, value in given.items():
        default = declared[name]
        if default is None or value is None:
            continue
        expected = float if isinstance(default, float) else type(default)
        ok = (
            isinstance(value, (int, float)) and not isinstance(value, bool)
            if expected is float
            else isinstance(value, expected) and isinstance(value, bool) == isinstance(default, bool)
        )
        if not ok:
            raise ParameterError(
                f"{notebook}: parameter {name} must be of type {expected.__name__} (its default is "
                f"{default!r}), not {type(value).__name__} {value!r}"
            )


def _assignments(source: str) -> dict[str, Any]:
    """Top-level ``name = literal`` assignments of a cell (other values read as None)."""
    found: dict[str, Any] = {}
    for node in ast.parse(source).body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    try:
                        found[target.id] = ast.literal_eval(node.value)
                    except ValueError:
                        found[target.id] = None
    return found


def reject_unknown_parameters(history: Sequence[str], notebook: str = "this notebook") -> None:
    """Under papermill, fail on an injected parameter that the ``parameters`` cell does not
    declare, or whose type differs from its default's (papermill itself only warns).

    ``history`` is IPython's ``In``: the cells run so far. The cell that papermill injects
    starts with ``# Parameters``; everything assigned in the cells before it is declared.
    Interactively nothing is injected, and this does nothing."""
    cells = [c for c in history if c.strip()]
    injected = [i for i, c in enumerate(cells) if c.lstrip().startswith(PAPERMILL_INJECTED)]
    if not injected:
        return
    declared: dict[str, Any] = {}
    for cell in cells[: injected[-1]]:
        try:
            declared.update(_assignments(cell))
        except SyntaxError:  # an IPython magic, not Python
            continue
    check_known(declared, _assignments(cells[injected[-1]]), notebook)
