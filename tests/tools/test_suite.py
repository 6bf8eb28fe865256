"""The headless runner: failures name the notebook and the cell, parameters are checked first."""

from __future__ import annotations

import datetime as dt
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell
from nbformat.v4 import new_notebook

from helpers.data import embedded_data
from helpers.data.paths import MNIST_TRAINING
from helpers.data.paths import REPO_ROOT
from helpers.data.results_file import NotebookResults
from helpers.toolkit.parameters import INJECTED_TAG
from helpers.toolkit.parameters import check_known
from tools import record_format
from tools import run_notebooks
from tools import run_parameters
from tools import run_record
from tools import suite
from tools.copies import copy_notebooks
from tools.copies import has_checked_cells
from tools.record_format import LoggedNotebook
from tools.record_format import Record
from tools.record_format import RunFacts
from tools.record_format import RunLog

SAVE_ANSWER = (
    "import os, pathlib\nfrom helpers.data.results_file import NotebookResults\n"
    "NotebookResults.now('{name}', {{}}, {{'answer': answer}}, {{}}, {{'answer': answer}})"
    ".write(pathlib.Path(os.environ['DALI_TUTORIALS_RESULTS']))"
)


# a registry entry (helpers.data.registry): what the runner needs of a notebook's metadata
ENTRY = {"title": "A test", "learn": "nothing", "needs_gpu": "No", "scales": {"ci": {}, "bench": {}}}


def _notebook(path: Path, *cells: str, entry: dict | None = ENTRY) -> Path:
    nb = new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    if entry is not None:
        nb.metadata["dali_tutorials"] = entry
    path.parent.mkdir(parents=True, exist_ok=True)
    nb.cells = [new_code_cell("answer = 42\nlabel = 'x'"), *[new_code_cell(c) for c in cells]]
    nb.cells[0].metadata["tags"] = ["parameters"]
    nbformat.write(nb, path)
    return path


@pytest.mark.notebook  # starts a Jupyter kernel
def test_a_failing_cell_is_named_and_its_notebook_kept(tmp_path: Path) -> None:
    notebook = _notebook(tmp_path / "07-broken.ipynb", "print('fine')", "1 / 0")
    run = run_notebooks.run_notebook(notebook, tmp_path / "out", {})
    assert not run.ok
    assert "cell 2" in run.error and "ZeroDivisionError" in run.error
    assert run.executed.is_file()  # kept for inspection
    text = run_notebooks.summary([run], tmp_path / "out")
    assert "07-broken" in text and "FAILED" in text and str(run.executed) in text


@pytest.mark.notebook  # starts a Jupyter kernel
def test_papermill_is_handed_paths_and_a_stale_injected_cell_is_dropped(tmp_path: Path) -> None:
    notebook = _notebook(tmp_path / "09-stale.ipynb", SAVE_ANSWER.format(name="09-stale"))
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
    assert recorded["output_path"] == str(run.executed)


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
    notebook = _notebook(tmp_path / "notebooks" / "10-paths.ipynb", SAVE_ANSWER.format(name="10-paths"))
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
        _notebook(
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


def test_a_records_name_is_its_machine_and_date_numbered_within_the_day(tmp_path: Path) -> None:
    """``<machine>-<date>[-N].json``: the first of a day unnumbered, the next one past the highest
    of that machine and day, even where an older one of the day was deleted; other machines',
    other days' and other names' files do not count."""

    def name() -> str:
        return run_record.record_path(tmp_path, "h200", "2026-12-04").name

    assert name() == "h200-2026-12-04.json"
    for other in (
        "h200-x2-2026-12-04.json",
        "h200-2026-12-03-7.json",
        "cpu-2026-12-04-5.json",
        "h200-2026-12-04-old.json",
    ):
        (tmp_path / other).write_text("{}")
    assert name() == "h200-2026-12-04.json"
    (tmp_path / "h200-2026-12-04.json").write_text("{}")
    assert name() == "h200-2026-12-04-2.json"
    (tmp_path / "h200-2026-12-04-3.json").write_text("{}")  # the -2 of the day was pruned
    assert name() == "h200-2026-12-04-4.json"
    assert run_record.record_path(tmp_path, "h200-x2", "2026-12-04").name == "h200-x2-2026-12-04-2.json"


def test_a_record_needs_the_runs_facts(tmp_path: Path) -> None:
    (tmp_path / "results").mkdir()
    with pytest.raises(SystemExit, match="no results JSON"):
        run_record.write_record(tmp_path, tmp_path / "r.json")
    (tmp_path / "results" / "01-x.json").write_text('{"notebook": "01-x", "machine": {}}')
    with pytest.raises(SystemExit, match="01-x.json lacks created, parameters, headline, results"):
        run_record.write_record(tmp_path, tmp_path / "r.json")
    NotebookResults.now("01-x", {}, {"device": "cpu"}, {}, {}).write(tmp_path / "results")
    with pytest.raises(SystemExit, match="run.json is missing: a record states how each notebook was run"):
        run_record.write_record(tmp_path, tmp_path / "r.json")
    RunLog("full", "auto").write(tmp_path)
    with pytest.raises(SystemExit, match="says nothing of 01-x"):
        run_record.write_record(tmp_path, tmp_path / "r.json")
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize(
    "gpu,label", [("NVIDIA H200", "h200"), (None, "cpu"), ("NVIDIA GeForce RTX 4090", "geforce-rtx-4090")]
)
def test_machine_label(gpu, label) -> None:
    assert run_record.machine_label({"gpu": gpu}) == label


def test_a_default_record_name_says_the_gpus_and_never_overwrites(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(run_record, "RESULTS", tmp_path / "results")
    run = tmp_path / "run"
    (run / "results").mkdir(parents=True)
    NotebookResults(
        "04-x", "2026-12-01T10:00:00+00:00", {"gpu": "NVIDIA H200", "gpu_count": 2}, {"device": "gpu"}, {}, {}
    ).write(run / "results")
    RunLog("full", "gpu", {"04-x": LoggedNotebook(1.0, True, None, {}, "x", "y")}).write(run)
    first = run_record.write_record(run)
    assert first == tmp_path / "results" / "h200-x2-2026-12-01.json"
    written = first.read_bytes()
    assert run_record.write_record(run) == tmp_path / "results" / "h200-x2-2026-12-01-2.json"
    assert first.read_bytes() == written  # the day's first record is left as it was


def test_the_commit_outside_git_is_unknown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(run_notebooks.COMMIT_VARIABLE, raising=False)
    assert run_notebooks.git_commit(tmp_path) == "unknown"


def test_a_copy_is_told_its_commit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A copy of the checkout with another checkout's .git (or none): the variable wins."""
    monkeypatch.setenv(run_notebooks.COMMIT_VARIABLE, "3ed0794-dirty")
    assert run_notebooks.git_commit(tmp_path) == run_notebooks.git_commit() == "3ed0794-dirty"


def test_the_command_line_holds_no_path_of_the_machine(tmp_path: Path) -> None:
    line = run_notebooks.command_line(
        ["run", "--out", str(REPO_ROOT / "build" / "x"), "--to", str(tmp_path / "r.json")]
    )
    assert line == "python -m tools.suite run --out build/x --to .../r.json"


@pytest.mark.parametrize(
    "parameters,message",
    [
        ({"answr": 1}, "unknown parameter answr; did you mean answer?"),
        ({"answer": "42"}, "parameter answer must be of type int"),
    ],
)
def test_bad_parameters_stop_the_run_before_execution(tmp_path: Path, parameters, message) -> None:
    notebook = _notebook(tmp_path / "08-params.ipynb", "open('ran', 'w').write('yes')")
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
    _notebook(
        tmp_path / "notebooks" / "12-scale.ipynb",
        "open('ran', 'w').write('yes')",
        entry={**ENTRY, "scales": {"ci": {"answr": 7}, "bench": {}}},
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
        run_parameters.parameters_for(_notebook(tmp_path / "11-bare.ipynb", entry=None), "ci", "auto")
    _notebook(tmp_path / "notebooks" / "13-untitled.ipynb", entry={**ENTRY, "title": ""})
    with pytest.raises(SystemExit, match=r"13-untitled.ipynb: metadata\['dali_tutorials'\] lacks title;"):
        run_parameters.notebooks(root=tmp_path)  # a run stops before any kernel


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


@pytest.mark.slow
def test_two_data_builds_at_once_share_one_result(tmp_path: Path) -> None:
    command = [
        sys.executable,
        "-m",
        "helpers.data.embedded_data",
        "--data-dir",
        str(tmp_path),
        "--records",
        "2000",
    ]
    processes = [
        subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    assert [p.wait(timeout=300) for p in processes] == [0, 0]
    dest = tmp_path / "dali_extra" / MNIST_TRAINING
    assert embedded_data.read_manifest(dest)["records"] == 2000
    assert not list(tmp_path.rglob(".build-*")) and not list(tmp_path.rglob(".old-*"))


@pytest.mark.slow
def test_a_relative_output_folder_still_receives_the_results(tmp_path: Path, monkeypatch) -> None:
    """The kernel runs in the notebook's folder, so the runner hands it absolute paths only
    (`make test-gpu OUT=build/gpu-run` gives a relative one)."""
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    notebook = _notebook(notebooks / "08-answer.ipynb", SAVE_ANSWER.format(name="08-answer"))
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
    notebook = _notebook(
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
