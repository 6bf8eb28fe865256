"""The errors a user's value can cause, shared by the teaching code and the data layer: each
message names the value and says what to do. A leaf: it imports nothing of the project."""

from __future__ import annotations


class ParameterError(ValueError):
    """A notebook parameter has a value it cannot take; the message names it."""
