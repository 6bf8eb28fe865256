"""The headless runner (tools.run_notebooks): papermill handed paths, a failing cell named and its
notebook kept, parameters checked before a kernel starts, a run folder each, the commit told, what
it warns of."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from fakes import SAVE_ANSWER
from fakes import runnable_notebook
from nbformat.v4 import new_code_cell
from nbformat.v4 import new_notebook

from helpers.data.paths import REPO_ROOT
from helpers.toolkit.parameters import INJECTED_TAG
from tools import run_notebooks


@pytest.mark.notebook  # starts a Jupyter kernel
def test_a_failing_cell_is_named_and_its_notebook_kept(tmp_path: Path) -> None:
    notebook = runnable_notebook(tmp_path / "07-broken.ipynb", "print('fine')", "1 / 0")
    run = run_notebooks.run_notebook(notebook, tmp_path / "out", {})
    assert not run.ok
    assert "cell 2" in run.error and "ZeroDivisionError" in run.error
    assert run.executed.is_file()  # kept for inspection
    text = run_notebooks.summary([run], tmp_path / "out")
    assert "07-broken" in text and "FAILED" in text and str(run.executed) in text


@pytest.mark.notebook  # starts a Jupyter kernel
def test_papermill_is_handed_paths_and_a_stale_injected_cell_is_dropped(tmp_path: Path) -> None:
    notebook = runnable_notebook(tmp_path / "09-stale.ipynb", SAVE_ANSWER.format(name="09-stale"))
    node = nbformat.read(notebook, as_version=4)
    stale = new_code_cell("# Parameters\nanswer = 7\n")
    stale.metadata["tags"] = [INJECTED_TAG]
    node.cells.insert(1, stale)
    node.metadata["papermill"] = {"parameters": {"answer": 7}}  # what that older run recorded
    nbformat.write(node, notebook)
    run = run_notebooks.run_notebook(notebook, tmp_path / "out", {})
    assert run.ok, run.error
    executed = nbformat.read(run.executed, as_version=4)
    assert [c.source for c in executed.cells if INJECTED_TAG in c.metadata.get("tags", [])] == []
    assert not executed.metadata["papermill"].get("parameters")  # nothing was handed over
    assert run.results.results == {"answer": 42}  # the notebook's own default, not the stale 7
    recorded = executed.metadata["papermill"]
    assert recorded["input_path"] == str(notebook)  # a path, never a copy of the notebook
    assert recorded["output_path"] == f"<run>/notebooks/{run.executed.name}"  # the run's folder, unnamed


def test_the_commit_outside_git_is_unknown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(run_notebooks.COMMIT_VARIABLE, raising=False)
    assert run_notebooks.git_commit(tmp_path) == "unknown"


def test_a_copy_is_told_its_commit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A copy of the checkout with another checkout's .git (or none): the variable wins."""
    monkeypatch.setenv(run_notebooks.COMMIT_VARIABLE, "3ed0794-dirty")
    assert run_notebooks.git_commit(tmp_path) == run_notebooks.git_commit() == "3ed0794-dirty"


@pytest.mark.parametrize(
    "parameters,message",
    [
        ({"answr": 1}, "unknown parameter answr; did you mean answer?"),
        ({"answer": "42"}, "parameter answer must be of type int"),
    ],
)
def test_bad_parameters_stop_the_run_before_execution(tmp_path: Path, parameters, message) -> None:
    notebook = runnable_notebook(tmp_path / "08-params.ipynb", "open('ran', 'w').write('yes')")
    run = run_notebooks.run_notebook(notebook, tmp_path / "out", parameters)
    assert not run.ok and message in run.error
    assert not (tmp_path / "ran").exists() and not run.executed.exists()


def test_each_run_gets_its_own_folder(tmp_path: Path, monkeypatch) -> None:
    """Runs of the same kind that start in the same second still get folders of their own."""

    class FrozenClock(dt.datetime):
        @classmethod
        def now(cls, tz=None):
            return cls(2026, 11, 30, 12, 0, 0)

    monkeypatch.setattr(run_notebooks._dt, "datetime", FrozenClock)
    folders = [run_notebooks.default_out_dir("run", tmp_path) for _ in range(3)]
    assert len(set(folders)) == 3 and all(f.is_dir() for f in folders)
    assert folders[0].name == "run-20261130-120000"


@pytest.mark.slow
def test_a_relative_output_folder_still_receives_the_results(tmp_path: Path, monkeypatch) -> None:
    """The kernel runs in the notebook's folder, so the runner hands it absolute paths only
    (`make test-gpu OUT=build/gpu-run` gives a relative one)."""
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    notebook = runnable_notebook(notebooks / "08-answer.ipynb", SAVE_ANSWER.format(name="08-answer"))
    monkeypatch.chdir(tmp_path)
    run = run_notebooks.run_notebook(notebook, Path("build") / "run", {})
    assert run.ok, run.error
    assert run.results.results == {"answer": 42}
    assert (tmp_path / "build" / "run" / "results" / "08-answer.json").is_file()
    assert not (notebooks / "build").exists()


@pytest.mark.notebook  # starts a Jupyter kernel
def test_a_warning_names_an_installed_packages_file_without_the_machines_folders(tmp_path: Path) -> None:
    warning = "/opt/torch/.venv/lib/python3.12/site-packages/torch/profiler/profiler.py:224: UserWarning"
    assert (
        run_notebooks.portable_text(warning) == "<site-packages>/torch/profiler/profiler.py:224: UserWarning"
    )
    assert (
        run_notebooks.portable_text("see notebooks/05.ipynb and ~/x/site-packages/y")
        == "see notebooks/05.ipynb and ~/x/site-packages/y"
    )  # not an absolute path: left alone
    notebook = runnable_notebook(
        tmp_path / "08-warns.ipynb",
        "import sys\nprint('/usr/lib/python3/dist-packages/tqdm/auto.py:21: TqdmWarning', "
        "file=sys.stderr)\nraise RuntimeError('x')",
    )
    run = run_notebooks.run_notebook(notebook, tmp_path / "out", {})
    cells = nbformat.read(run.executed, as_version=4).cells
    (outputs,) = [c.outputs for c in cells if "TqdmWarning" in c.source]
    assert outputs[0].text == "<site-packages>/tqdm/auto.py:21: TqdmWarning\n"
    assert outputs[1].output_type == "error"


def test_a_full_run_says_first_how_long_it_should_take() -> None:
    from tools import records
    from tools.inventory import duration
    from tools.inventory import runtimes
    from tools.run_notebooks import expected_time
    from tools.run_parameters import notebooks

    chosen = notebooks(["01", "02"])
    column = runtimes()[False]
    took = sum(column[n.stem].notebooks[n.stem].seconds for n in chosen)
    line = expected_time(chosen, "cpu", "full")
    assert line is not None and line.startswith(f"expected: about {duration(took)} for 2 notebook(s)")
    # the machine those records ran on: the reference machine's label, not a guess about this one
    assert f"records took on {records.machine_heading(column['01-getting-started'].machine)}" in line
    assert "CPU only" in line and "GPU" not in line
    assert expected_time(chosen, "cpu", "ci") is None  # a CI-scale run has no record to go by


@pytest.mark.notebook  # starts a Jupyter kernel
def test_the_runners_kernels_do_not_warn_about_tcp(tmp_path: Path) -> None:
    """papermill's kernels, started with the runner's arguments, print no TCP warning (without
    them every kernel does)."""
    from tools.run_notebooks import KERNEL
    from tools.run_notebooks import KERNEL_ARGUMENTS

    source = tmp_path / "n.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell("print(1)")]), source)
    code = (
        "import papermill, sys; papermill.execute_notebook(sys.argv[1], sys.argv[2], "
        "kernel_name=sys.argv[3], progress_bar=False, extra_arguments=sys.argv[4:])"
    )
    quiet = subprocess.run(
        [sys.executable, "-c", code, str(source), str(tmp_path / "o.ipynb"), KERNEL, *KERNEL_ARGUMENTS],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert quiet.returncode == 0, quiet.stderr[-2000:]
    assert "without encryption" not in quiet.stderr + quiet.stdout


def test_the_runs_folder_and_a_folder_of_packages_are_written_without_the_machines_folders(
    tmp_path: Path,
) -> None:
    out, packages = tmp_path / "gpurun", tmp_path / "site"
    folders = run_notebooks.machine_folders(out, f"{packages}{os.pathsep}{REPO_ROOT}")
    assert folders == {str(out): "<run>/", str(packages): "<site-packages>/"}  # not the checkout
    printed = (
        f"results: {out}/results/06.json\n"
        f'  File "{packages}/nvidia/dali/_ops.py", line 1087, in _batches\n'
        f"kept: {out}x/y and {tmp_path}/other\n"
    )
    assert run_notebooks.portable_text(printed, folders) == (
        "results: <run>/results/06.json\n"
        '  File "<site-packages>/nvidia/dali/_ops.py", line 1087, in _batches\n'
        f"kept: {out}x/y and {tmp_path}/other\n"
    )  # only those folders, whole: a sibling's name that starts the same is left alone
    # a run into the checkout or the home is already printed relative: nothing to rewrite
    assert run_notebooks.machine_folders(REPO_ROOT / "build" / "run", "") == {}
    assert run_notebooks.machine_folders(Path.home() / "out", "") == {}


def test_a_run_outside_the_checkout_records_its_paths_relative_to_its_folder(tmp_path: Path) -> None:
    out = tmp_path / "out"
    executed = out / "notebooks" / "08-paths.ipynb"
    executed.parent.mkdir(parents=True)
    node = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("print(path)")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"results: {out}/results/08.json\n")]
    node.cells = [cell]
    nbformat.write(node, executed)
    run_notebooks.record_paths(
        executed, REPO_ROOT / "notebooks" / "08-paths.ipynb", run_notebooks.machine_folders(out, "")
    )
    written = nbformat.read(executed, as_version=4)
    assert written.metadata.papermill == {
        "input_path": "notebooks/08-paths.ipynb",
        "output_path": "<run>/notebooks/08-paths.ipynb",
    }
    assert written.cells[0].outputs[0].text == "results: <run>/results/08.json\n"
