"""Checking notebook parameters, so that a bad value fails at once with its name."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class ParameterError(ValueError):
    """A notebook parameter has a value it cannot take; the message names it."""


def positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ParameterError(f"parameter {name} must be a positive integer, not {value!r}")
    return value


def positive_ints(name: str, values: Any) -> list[int]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values:
        raise ParameterError(f"parameter {name} must be a non-empty list of positive integers, "
                             f"not {values!r}")
    return [positive_int(f"{name}[{i}]", v) for i, v in enumerate(values)]


def check_known(declared: dict[str, Any], given: dict[str, Any], notebook: str) -> None:
    """Fail on parameters that the notebook does not declare (papermill itself only warns) or
    whose type differs from the declared default's (``None`` defaults accept anything)."""
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise ParameterError(
            f"{notebook} has no parameter {', '.join(unknown)}; "
            f"its parameters are: {', '.join(sorted(declared))}"
        )
    for name, value in given.items():
        default = declared[name]
        if default is None or value is None:
            continue
        expected = float if isinstance(default, float) else type(default)
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) if expected is float \
            else isinstance(value, expected) and isinstance(value, bool) == isinstance(default, bool)
        if not ok:
            raise ParameterError(
                f"{notebook}: parameter {name} must be of type {expected.__name__} (its default is "
                f"{default!r}), not {type(value).__name__} {value!r}"
            )
