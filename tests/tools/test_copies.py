"""Copies of the notebooks (tools.copies): working copies without injected parameters that keep your
work, nbval's at CI scale, this kernel's Python named."""

from __future__ import annotations

from pathlib import Path

import nbformat

from helpers.toolkit.parameters import INJECTED_TAG
from tools import run_parameters
from tools.copies import copy_notebooks
from tools.copies import has_checked_cells


def test_copies_drop_injected_parameters_and_keep_your_work(tmp_path: Path) -> None:
    copies = copy_notebooks(tmp_path)
    assert [c.name for c in copies] == [n.name for n in run_parameters.notebooks()]
    for copy in copies:
        node = nbformat.read(copy, as_version=4)
        assert not [c for c in node.cells if INJECTED_TAG in c.metadata.get("tags", [])]
    copies[0].write_text("my work")
    copy_notebooks(tmp_path)
    assert copies[0].read_text() == "my work"
    copy_notebooks(tmp_path, fresh=True)
    assert copies[0].read_text() != "my work"


def test_nbval_copies_at_ci_scale_carry_its_parameters_after_the_parameters_cell(tmp_path: Path) -> None:
    """`make nbval`'s copies: only the notebooks with checked cells, each with the CI scale's
    parameters in a cell of papermill's own after its parameters cell."""
    copies = copy_notebooks(tmp_path, fresh=True, checked_only=True, scale="ci")
    assert copies and all(has_checked_cells(c) for c in copies)
    assert len(copies) < len(run_parameters.notebooks())
    for copy in copies:
        cells = nbformat.read(copy, as_version=4).cells
        tags = [c.metadata.get("tags", []) for c in cells]
        at = next(i for i, t in enumerate(tags) if "parameters" in t)
        assert INJECTED_TAG in tags[at + 1], copy.name
        wanted = run_parameters.parameters_for(run_parameters.ROOT / "notebooks" / copy.name, "ci", "auto")
        assert wanted and all(f"{k} = {v!r}" in cells[at + 1].source for k, v in wanted.items())
        assert sum(INJECTED_TAG in t for t in tags) == 1
    plain = copy_notebooks(tmp_path / "plain", checked_only=True)
    assert not any(
        INJECTED_TAG in c.metadata.get("tags", [])
        for copy in plain
        for c in nbformat.read(copy, as_version=4).cells
    )


def test_copies_name_this_kernels_python_so_that_jupyterlab_has_nothing_to_rewrite(tmp_path: Path) -> None:
    """The committed notebooks record the Python of the machine they ran on (the GPU runner's);
    JupyterLab rewrites language_info from the kernel on opening, which marks a copy modified."""
    import platform

    for copy in copy_notebooks(tmp_path, fresh=True):
        assert (
            nbformat.read(copy, as_version=4).metadata["language_info"]["version"]
            == platform.python_version()
        )
