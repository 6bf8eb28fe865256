"""What papermill is handed at each scale (tools.run_parameters): only what changes a notebook's
defaults; a bad scale or notebook refused before any kernel."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes import RUNNER_ENTRY
from fakes import runnable_notebook

from helpers.toolkit.parameters import check_known
from tools import record_format
from tools import run_parameters
from tools import suite


@pytest.mark.parametrize("gpu", [False, True], ids=["cpu-machine", "gpu-machine"])
def test_papermill_is_handed_only_what_changes_the_defaults(monkeypatch, gpu: bool) -> None:
    """The scales come from each notebook's metadata; a value equal to the default, or the
    device that "auto" resolves to on the machine, is not injected (`make test-gpu` on a GPU
    machine injects nothing: the executed notebooks have no injected cell)."""
    here = "gpu" if gpu else "cpu"
    monkeypatch.setattr(run_parameters, "resolve_device", lambda device: here if device == "auto" else device)
    for notebook in run_parameters.notebooks():
        declared = run_parameters.declared_parameters(notebook)
        scales = run_parameters.scales_of(notebook)
        assert {"ci", "bench"} <= set(scales), notebook.name
        assert declared["device"] == "auto", notebook.name
        for scale in record_format.SCALES:
            changed = {k: v for k, v in scales.get(scale, {}).items() if declared[k] != v}
            assert run_parameters.parameters_for(notebook, scale, here) == changed
            assert run_parameters.parameters_for(notebook, scale, "auto") == changed
            other = "cpu" if gpu else "gpu"
            assert run_parameters.parameters_for(notebook, scale, other) == {**changed, "device": other}
            check_known(declared, changed, notebook.name)
        assert run_parameters.parameters_for(notebook, "full", here) == {}


def test_bad_parameters_of_a_scale_stop_the_suite_before_any_kernel(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(run_parameters, "ROOT", tmp_path)
    runnable_notebook(
        tmp_path / "notebooks" / "12-scale.ipynb",
        "open('ran', 'w').write('yes')",
        entry={**RUNNER_ENTRY, "scales": {"ci": {"answr": 7}, "bench": {}}},
    )
    with pytest.raises(SystemExit, match="12-scale.ipynb: unknown parameter answr; did you mean answer"):
        suite.run_suite("auto", "ci", tmp_path / "out")
    assert not (tmp_path / "out").exists() and not (tmp_path / "ran").exists()


def test_unknown_scale_or_notebook(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="unknown scale"):
        run_parameters.parameters_for(run_parameters.notebooks()[0], "huge", "auto")
    with pytest.raises(SystemExit, match="no notebook matches"):
        run_parameters.notebooks(["99"])
    with pytest.raises(
        SystemExit,
        match=r"11-bare.ipynb: metadata\['dali_tutorials'\] lacks title, learn, "
        r"needs_gpu, scales; .*helpers/data/registry.py",
    ):
        run_parameters.parameters_for(runnable_notebook(tmp_path / "11-bare.ipynb", entry=None), "ci", "auto")
    runnable_notebook(tmp_path / "notebooks" / "13-untitled.ipynb", entry={**RUNNER_ENTRY, "title": ""})
    with pytest.raises(SystemExit, match=r"13-untitled.ipynb: metadata\['dali_tutorials'\] lacks title;"):
        run_parameters.notebooks(root=tmp_path)  # a run stops before any kernel
