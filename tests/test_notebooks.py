"""Every notebook, executed headless at CI scale (the ``ci_run`` fixture of conftest.py); each
notebook's own checks are in tests/test_nbNN*.py."""

from __future__ import annotations

import nbformat
import pytest

from tools import suite

pytestmark = pytest.mark.notebook


def test_every_notebook_ran(ci_run) -> None:
    assert set(ci_run) == {p.stem for p in suite.notebooks()}
    for run in ci_run.values():
        assert run.ok, run.error
        executed = nbformat.read(run.executed, as_version=4)
        assert not [o for c in executed.cells for o in c.get("outputs", [])
                    if o.get("output_type") == "error"]
