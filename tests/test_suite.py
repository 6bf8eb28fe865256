"""The headless runner: failures name the notebook and the cell, parameters are checked first."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from helpers.paths import MNIST_TRAINING
from helpers import suite


def _notebook(path: Path, *cells: str) -> Path:
    nb = new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [new_code_cell("answer = 42\nlabel = 'x'"), *[new_code_cell(c) for c in cells]]
    nb.cells[0].metadata["tags"] = ["parameters"]
    nbformat.write(nb, path)
    return path


def test_a_failing_cell_is_named_and_its_notebook_kept(tmp_path: Path) -> None:
    notebook = _notebook(tmp_path / "07-broken.ipynb", "print('fine')", "1 / 0")
    run = suite.run_notebook(notebook, tmp_path / "out", {})
    assert not run.ok
    assert "cell 2" in run.error and "ZeroDivisionError" in run.error
    assert run.executed.is_file()  # kept for inspection
    text = suite.summary([run], tmp_path / "out")
    assert "07-broken" in text and "FAILED" in text and str(run.executed) in text


@pytest.mark.parametrize("parameters,message", [
    ({"answr": 1}, "has no parameter answr"),
    ({"answer": "42"}, "parameter answer must be of type int"),
])
def test_bad_parameters_stop_the_run_before_execution(tmp_path: Path, parameters, message) -> None:
    notebook = _notebook(tmp_path / "08-params.ipynb", "open('ran', 'w').write('yes')")
    run = suite.run_notebook(notebook, tmp_path / "out", parameters)
    assert not run.ok and message in run.error
    assert not (tmp_path / "ran").exists() and not run.executed.exists()


def test_each_run_gets_its_own_folder() -> None:
    assert suite.default_out_dir("run") != suite.default_out_dir("bench")
    assert str(suite.default_out_dir("run")).endswith(f"-{__import__('os').getpid()}")


def test_scales_name_only_declared_parameters() -> None:
    for notebook in suite.notebooks():
        declared = suite.declared_parameters(notebook)
        for scale in suite.SCALES:
            suite.check_known(declared, suite.parameters_for(notebook, scale, "cpu"), notebook.name)


def test_unknown_scale_or_notebook() -> None:
    with pytest.raises(SystemExit, match="unknown scale"):
        suite.parameters_for(suite.notebooks()[0], "huge", "auto")
    with pytest.raises(SystemExit, match="no notebook matches"):
        suite.notebooks(["99"])


def test_two_runs_at_once_do_not_clobber_each_other(tmp_path: Path) -> None:
    """Two headless runs side by side: each has its own folder and both succeed."""
    import json
    import subprocess
    import sys

    command = [sys.executable, "-m", "helpers.suite", "run", "--only", "01", "--scale", "ci"]
    processes = [subprocess.Popen([*command, "--out", str(tmp_path / name)], text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                 for name in ("first", "second")]
    outputs = [p.communicate(timeout=600)[0] for p in processes]
    assert [p.returncode for p in processes] == [0, 0], outputs
    created = [json.loads((tmp_path / n / "results" / "01-getting-started.json").read_text())["created"]
               for n in ("first", "second")]
    assert all(created)
    for name, output in zip(("first", "second"), outputs):
        assert str(tmp_path / name / "notebooks") in output


def test_two_data_builds_at_once_share_one_result(tmp_path: Path) -> None:
    import subprocess
    import sys

    from helpers import embedded_data

    command = [sys.executable, "-m", "helpers.embedded_data", "--data-dir", str(tmp_path),
               "--records", "2000"]
    processes = [subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  text=True) for _ in range(2)]
    assert [p.wait(timeout=300) for p in processes] == [0, 0]
    dest = tmp_path / "dali_extra" / MNIST_TRAINING
    assert embedded_data.read_manifest(dest)["records"] == 2000
    assert not list(tmp_path.rglob(".build-*")) and not list(tmp_path.rglob(".old-*"))
