"""The committed notebooks: outputs that come from one real run (nbval, `make nbval`, checks
that they still reproduce)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import nbformat
import pytest
from conftest import headline_output

from helpers.data.paths import REPO_ROOT
from helpers.toolkit.parameters import INJECTED_TAG
from tools.docs_checks import AWAITING_RERUN
from tools.docs_checks import notebook_problems
from tools.docs_notes import NEEDS_THE_REPOSITORY
from tools.inventory import runtimes
from tools.run_parameters import notebooks

# each committed notebook comes from the newest full-scale run on a GPU machine that holds it,
# as the records state it (whatever their file names say)
RECORDS = runtimes()[True]
# Notebook 04 measures two processes, one per GPU on a GPU machine. Its current version has run on
# no machine with two GPUs (none was lent to the sessions that wrote it): its committed outputs are
# the newest full-scale CPU run's, where it says that the GPU part was skipped. Re-run it on two
# GPUs (`make test-gpu ONLY=04`), and this test says to drop the name here. (Notebook 06 runs on one
# GPU, its two-process part as CPU processes there.)
CPU_RUN_UNTIL_TWO_GPUS = {"04-scaling-out"}
CPU_RECORDS = runtimes()[False]


def _code_cells(notebook: Path) -> list:
    return [c for c in nbformat.read(notebook, as_version=4).cells if c.cell_type == "code"]


@pytest.mark.parametrize("notebook", notebooks(), ids=lambda p: p.stem)
def test_outputs_come_from_one_execution_in_order(notebook: Path) -> None:
    """Executed in order by papermill, without an error; a notebook awaiting a re-run
    (AWAITING_RERUN) may hold cells added since its run, without outputs."""
    document = json.loads(notebook.read_text())
    assert not notebook_problems(document, awaiting_rerun=notebook.stem in AWAITING_RERUN)
    if notebook.stem not in AWAITING_RERUN:
        cells = _code_cells(notebook)
        assert [c.execution_count for c in cells] == list(range(1, len(cells) + 1))


def _code_of(text: str) -> list[str]:
    """A notebook's code cells as its author wrote them (papermill's injected cell left out)."""
    return [
        c.source
        for c in nbformat.reads(text, as_version=4).cells
        if c.cell_type == "code" and INJECTED_TAG not in c.metadata.get("tags", [])
    ]


@pytest.mark.parametrize("notebook", notebooks(), ids=lambda p: p.stem)
def test_a_notebook_awaits_a_rerun_exactly_when_its_code_changed_since_its_run(notebook: Path) -> None:
    """Its code cells and its lesson module (helpers/lessons/nbNN_*.py) against those of the
    commit that its record says ran it: the same, and it is not in AWAITING_RERUN; changed since,
    and it is, so that its page says so."""
    records = CPU_RECORDS if notebook.stem in CPU_RUN_UNTIL_TWO_GPUS else RECORDS
    commit = records[notebook.stem].notebooks[notebook.stem].run.commit
    shown = subprocess.run(
        ["git", "show", f"{commit.removesuffix('-dirty')}:notebooks/{notebook.name}"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
    )
    if shown.returncode:
        pytest.skip(f"commit {commit} is not in this clone's history: {shown.stderr.strip()}")
    changed = _code_of(shown.stdout) != _code_of(notebook.read_text())
    # its lesson module writes its generated outputs (answers, charts' alt texts): a change there counts
    lesson = next((REPO_ROOT / "helpers" / "lessons").glob(f"nb{notebook.stem[:2]}_*.py"), None)
    if lesson is not None and not changed:
        then = subprocess.run(
            ["git", "show", f"{commit.removesuffix('-dirty')}:{lesson.relative_to(REPO_ROOT).as_posix()}"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
        )
        changed = then.returncode != 0 or then.stdout != lesson.read_text()
    if changed:
        assert notebook.stem in AWAITING_RERUN, (
            f"{notebook.name}: its code changed since the run of {commit[:12]} that its outputs come "
            "from: re-run it, or name it in tools.docs_checks.AWAITING_RERUN with what changed"
        )
    else:
        assert notebook.stem not in AWAITING_RERUN, (
            f"{notebook.name}: its outputs come from its code as it stands: drop it from AWAITING_RERUN"
        )


@pytest.mark.parametrize("notebook", notebooks(), ids=lambda p: p.stem)
def test_outputs_match_the_committed_results(notebook: Path) -> None:
    """The notebook's last output (its headline) is the headline of the committed record, which
    names the GPU it ran on."""
    if notebook.stem in CPU_RUN_UNTIL_TWO_GPUS:
        assert notebook.stem not in RECORDS, (
            f"{notebook.stem} has a GPU record now: commit that run's notebook and drop the name "
            "from CPU_RUN_UNTIL_TWO_GPUS (named for 04; 07 waits for its first GPU run)"
        )
        record = CPU_RECORDS[notebook.stem]
        device = "cpu"
    else:
        assert notebook.stem in RECORDS, f"no full-scale record of a GPU machine holds {notebook.stem}"
        record = RECORDS[notebook.stem]
        assert record.machine["gpu"], "the committed notebooks must come from a GPU run"
        device = "gpu"
    entry = record.notebooks[notebook.stem]
    assert entry.run.device == device
    shown = headline_output(nbformat.read(notebook, as_version=4).cells)
    # as shown: a rate the notebook rounds to a whole number equals the record's, rounded
    assert shown == {
        k: round(v) if isinstance(shown.get(k), int) else pytest.approx(v, rel=1e-4, abs=0.006)
        for k, v in entry.headline.items()
    }


# A GPU run with this runner injects nothing (tools.run_parameters.parameters_for), and the runner drops an
# older run's metadata.papermill.parameters from the source it hands papermill.
@pytest.mark.parametrize("notebook", notebooks(), ids=lambda p: p.stem)
def test_committed_notebooks_have_no_injected_parameters(notebook: Path) -> None:
    """Run with their own defaults: what a reader's copy runs, and what nbval re-runs."""
    node = nbformat.read(notebook, as_version=4)
    assert not [c for c in node.cells if INJECTED_TAG in c.metadata.get("tags", [])]
    assert not node.metadata.get("papermill", {}).get("parameters")


@pytest.mark.parametrize("notebook", notebooks(), ids=lambda p: p.stem)
def test_a_notebook_opened_outside_its_repository_says_what_it_needs(notebook: Path, tmp_path: Path) -> None:
    """Its first code cell, run by a Python that cannot import the checkout, stops with the
    words of the docs' download note (tools.docs_notes.NEEDS_THE_REPOSITORY)."""
    import re
    import subprocess
    import sys

    first = _code_cells(notebook)[0].source
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}  # no PYTHONPATH: the checkout is away
    done = subprocess.run(
        [sys.executable, "-S", "-c", first], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0
    expected = re.sub(r"</?code>", "`", NEEDS_THE_REPOSITORY)
    assert expected in done.stderr.splitlines()[-1], done.stderr


@pytest.mark.parametrize("notebook", notebooks(), ids=lambda p: p.stem)
def test_no_output_is_an_empty_error_stream(notebook: Path) -> None:
    """A stderr output of nothing but whitespace (a progress bar's closing newline) renders as an
    empty error-coloured bar in JupyterLab, on GitHub and on the docs site: progress goes to
    stdout (helpers.toolkit.loaders.rounds, the data builders)."""
    empty = [
        i
        for i, c in enumerate(nbformat.read(notebook, as_version=4).cells)
        for o in c.get("outputs", [])
        if o.get("output_type") == "stream" and o.get("name") == "stderr" and not o.get("text", "").strip()
    ]
    assert not empty, f"{notebook.name}: empty stderr outputs in cells {empty}"
