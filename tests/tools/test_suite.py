"""The runner's command line (tools.suite): a run records how it was made, notebooks side by side
only at CI scale, each saving to its own run, and no path of the machine in the command it
records."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest
from fakes import SAVE_ANSWER
from fakes import runnable_notebook

from helpers.data.paths import REPO_ROOT
from helpers.data.results_file import NotebookResults
from helpers.toolkit.parameters import INJECTED_TAG
from tools import run_notebooks
from tools import run_parameters
from tools import run_record
from tools import suite
from tools.record_format import Record
from tools.record_format import RunFacts
from tools.record_format import RunLog


@pytest.mark.notebook  # starts a Jupyter kernel
def test_a_run_records_how_it_was_made_and_injects_nothing_that_changes_nothing(
    tmp_path: Path, monkeypatch
) -> None:
    """`make test-gpu` on a GPU machine: --device gpu where the notebook's "auto" picks the GPU
    anyway. Papermill is handed nothing, so the executed notebook has no injected cell; run.json
    states scale, device, what papermill was handed, the command and the commit, and the record
    made from the folder carries them per notebook. Paths inside the checkout are relative."""
    monkeypatch.setattr(run_parameters, "ROOT", tmp_path)
    monkeypatch.setattr(run_parameters, "resolve_device", lambda device: "gpu")
    notebook = runnable_notebook(
        tmp_path / "notebooks" / "10-paths.ipynb", SAVE_ANSWER.format(name="10-paths")
    )
    node = nbformat.read(notebook, as_version=4)
    node.cells[0].source += '\ndevice = "auto"'
    nbformat.write(node, notebook)
    out = run_notebooks.default_out_dir("test-paths")
    try:
        [run] = suite.run_suite("gpu", "full", out, command="python -m tools.suite run --device gpu")
        assert run.ok, run.error
        executed = nbformat.read(run.executed, as_version=4)
        assert not [c for c in executed.cells if INJECTED_TAG in c.metadata.get("tags", [])]
        recorded = executed.metadata["papermill"]
        assert recorded["parameters"] == {}
        assert recorded["output_path"] == run.executed.relative_to(REPO_ROOT).as_posix()
        log = RunLog.read(out)
        assert (log.scale, log.device_asked) == ("full", "gpu")
        entry = log.notebooks["10-paths"]
        assert entry.parameters == {}
        assert entry.command == "python -m tools.suite run --device gpu"
        assert entry.commit == run_notebooks.git_commit() != ""
        NotebookResults(
            "10-paths", "2026-11-30T10:00:00+00:00", {"gpu": "X"}, {"device": "gpu"}, {}, {}
        ).write(out / "results")
        record = Record.read(run_record.write_record(out, tmp_path / "r.json"))
        assert record.notebooks["10-paths"].run == RunFacts(
            "full", "gpu", "gpu", {}, "python -m tools.suite run --device gpu", entry.commit
        )
        assert record.notebooks["10-paths"].seconds == entry.seconds
    finally:
        shutil.rmtree(out)


@pytest.mark.notebook  # starts a Jupyter kernel
def test_notebooks_side_by_side_each_save_to_their_own_run_and_leave_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``jobs=2``: each kernel is told its own results folder (no variable of the runner's own
    environment), and the runs come back in the notebooks' order."""
    import os

    from helpers.data.results_file import RESULTS_FOLDER_VARIABLE

    monkeypatch.delenv(RESULTS_FOLDER_VARIABLE, raising=False)
    monkeypatch.setattr(run_parameters, "ROOT", tmp_path)
    for name in ("01-a", "02-b"):
        runnable_notebook(
            tmp_path / "notebooks" / f"{name}.ipynb",
            "import time; time.sleep(1)",
            SAVE_ANSWER.format(name=name),
        )
    runs = suite.run_suite("auto", "full", tmp_path / "out", jobs=2)
    assert [r.name for r in runs] == ["01-a", "02-b"] and all(r.ok for r in runs), [r.error for r in runs]
    assert sorted(p.name for p in (tmp_path / "out" / "results").iterdir()) == ["01-a.json", "02-b.json"]
    assert RESULTS_FOLDER_VARIABLE not in os.environ
    assert set(RunLog.read(tmp_path / "out").notebooks) == {"01-a", "02-b"}


def test_notebooks_side_by_side_only_at_ci_scale(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        suite.main(["run", "--jobs", "2", "--out", str(tmp_path)])  # full scale: timings kept
    assert not list(tmp_path.iterdir())


def test_the_command_line_holds_no_path_of_the_machine(tmp_path: Path) -> None:
    line = run_notebooks.command_line(
        ["run", "--out", str(REPO_ROOT / "build" / "x"), "--to", str(tmp_path / "r.json")]
    )
    assert line == "python -m tools.suite run --out build/x --to .../r.json"
