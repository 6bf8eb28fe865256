from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable
from collections.abc import Iterator
from concurrent.futures import Future
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from helpers.data.data_sources import locate_data
from helpers.data.paths import REPO_ROOT
from helpers.data.paths import default_data_dir
from helpers.data.results_file import NotebookResults
from tools import run_notebooks
from tools import suite
from tools.record_format import RunLog

# Debian's chromium, which `make setup` installs when it can (.ci/install-browser.sh); another
# Chromium-based browser may be named with DALI_TUTORIALS_CHROMIUM.
CHROMIUM = os.environ.get("DALI_TUTORIALS_CHROMIUM") or "/usr/bin/chromium"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--gpu-run", type=Path, default=None, help="output folder of `tools.suite run --device gpu` to check"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that needs the browser is marked ``browser`` (so ``-m "not browser"`` leaves it
    out), whichever fixture brought the browser in; one that checks a GPU run is marked ``gpu``
    (``make test-gpu`` runs ``-m gpu``). The tests that read the CI-scale run, or must not run
    beside it, go last, in their order, so that the others run while it runs."""
    for item in items:
        if "chromium_path" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)
        if "gpu_run" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.gpu)
    last = {"ci_run", "scratch_folders_to_ourselves"}
    items.sort(key=lambda item: bool(last & set(getattr(item, "fixturenames", ()))))  # stable


def under_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def browser_or_skip(executable: str = CHROMIUM) -> Path:
    """The browser's path; without one (or without Playwright), the test is skipped with the
    reason in pytest's summary, except under ``CI=true``, where it fails."""
    found = shutil.which(executable)
    missing = None
    if not found:
        missing = (
            f"{executable} is missing: the browser tests need Debian's chromium. Install it "
            "with `.ci/install-browser.sh` (as root, or with passwordless sudo; `make setup` "
            "runs it when it can), or name another Chromium with DALI_TUTORIALS_CHROMIUM."
        )
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            missing = "Playwright for Python is missing: pip install -r requirements-docs.txt"
    if missing is None:
        return Path(found)
    if under_ci():
        pytest.fail(f"CI=true: {missing}", pytrace=False)
    pytest.skip(missing)


@pytest.fixture(scope="session")
def chromium_path() -> Path:
    """Path of the headless browser for the docs site's tests (see ``browser_or_skip``)."""
    return browser_or_skip()


@pytest.fixture(scope="session")
def gpu_run(request: pytest.FixtureRequest) -> Path:
    """The output folder of the GPU run under test (`make test-gpu` passes --gpu-run)."""
    path = request.config.getoption("--gpu-run")
    if path is None:
        pytest.skip("GPU tier only: pass --gpu-run DIR (make test-gpu does)")
    return path


@pytest.fixture(scope="session")
def gpu_results(gpu_run: Path) -> Callable[[str], NotebookResults]:
    """``gpu_results(notebook)``: what the notebook recorded in the GPU run. A notebook that the
    run left out (`make test-gpu ONLY=04`) skips its checks; one that failed fails them, with
    the runner's description of the failing cell."""
    log = RunLog.read(gpu_run)

    def load(notebook: str) -> NotebookResults:
        entry = log.notebooks.get(notebook)
        if entry is None:
            pytest.skip(f"{notebook} was not part of this GPU run")
        assert entry.ok, f"{notebook} failed on the GPU: {entry.error}"
        path = gpu_run / "results" / f"{notebook}.json"
        assert path.is_file(), f"{notebook} wrote no results: {path}"
        return NotebookResults.read(path)

    return load


def _fingerprint() -> dict[str, str]:
    """The committed notebooks and the data manifests: running a notebook must not change them."""

    files = sorted(REPO_ROOT.glob("notebooks/*.ipynb")) + sorted(default_data_dir().rglob("MANIFEST.json"))
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


# The CI-scale run of every notebook (``ci_run``) takes most of `make test`'s time and kept 1.5
# of 2 cores busy on its own: it starts in a thread of its own as soon as the tests are collected,
# the other tests run beside it, and the tests that read it run last
# (``pytest_collection_modifyitems``).
_ci_run: Future | None = None
_ci_run_folder: Path | None = None


def _run_every_notebook_at_ci_scale(out: Path) -> dict[str, run_notebooks.NotebookRun]:
    locate_data(verbose=False)  # build the data first: a first build is not a change
    before = _fingerprint()
    # two at a time: CI keeps no timings; its progress to a file of its own, never into the output
    # of a test running beside it (capsys captures every thread's prints)
    with open(out.with_name(out.name + "-progress.log"), "w") as progress:
        runs = suite.run_suite("auto", "ci", out, jobs=2, progress=progress)
    after = _fingerprint()
    # a data set that a notebook builds on first use (notebook 05's photo set) is new, not changed
    changed = sorted(k for k in before if after.get(k) != before[k])
    added = sorted(k for k in after if k not in before and not k.endswith("MANIFEST.json"))
    assert not changed and not added, (
        f"running the notebooks changed committed files or data: {changed + added}"
    )
    return {run.name: run for run in runs}


def pytest_collection_finish(session: pytest.Session) -> None:
    global _ci_run, _ci_run_folder
    if session.config.option.collectonly:  # --collect-only runs no test
        return
    if any("ci_run" in getattr(item, "fixturenames", ()) for item in session.items):
        _ci_run_folder = Path(tempfile.mkdtemp(prefix="ci-run-"))
        _ci_run = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ci-run").submit(
            _run_every_notebook_at_ci_scale, _ci_run_folder
        )


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The run's folder goes once the session ends (an interrupted session waits for the run's
    notebooks to end first: papermill cannot stop a cell)."""
    if _ci_run is not None:
        _ci_run.exception()  # waits
    if _ci_run_folder is not None:
        shutil.rmtree(_ci_run_folder, ignore_errors=True)
        _ci_run_folder.with_name(_ci_run_folder.name + "-progress.log").unlink(missing_ok=True)


_reported: dict[str, object] = {}  # figures the tests report rather than judge


@pytest.fixture
def report_figure(record_property) -> Callable[[str, object], None]:
    """Reports a figure that is worth watching but is no fault (the README's length, the number of
    findings): it is printed at the end of the session and kept in a JUnit report."""

    def report(name: str, value: object) -> None:
        _reported[name] = value
        record_property(name, value)

    return report


def pytest_terminal_summary(terminalreporter) -> None:
    if _reported:
        terminalreporter.write_sep("-", "reported figures")
        for name, value in _reported.items():
            terminalreporter.write_line(f"{name}: {value}")


@pytest.fixture
def scratch_folders_to_ourselves() -> Iterator[None]:
    """For a test that runs a notebook's set-up, which empties the notebook's scratch folder
    (``helpers.data.paths.work_folder``: build/nb04, build/nb06): it waits until the CI-scale run,
    which works in the same folders, is over (such tests go last), and the folders that the
    set-up made are removed after it."""
    if _ci_run is not None:
        _ci_run.exception()  # waits
    build = REPO_ROOT / "build"
    before = set(build.glob("nb[0-9][0-9]"))
    yield
    for folder in set(build.glob("nb[0-9][0-9]")) - before:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def ci_run() -> dict[str, run_notebooks.NotebookRun]:
    """Every notebook executed once at CI scale, two at a time (shared by the tests of all
    notebooks): the run that started when the tests were collected."""
    assert _ci_run is not None, "the CI-scale run starts only when a collected test asks for ci_run"
    return _ci_run.result()


def check_goal(notebook: str, name: str, goal: dict[str, Any], count: int, **values: Any) -> None:
    """A goal as ``notebook`` recorded it under ``name``: the target its metadata states for it
    (``helpers.data.registry.goal_targets``, with ``values`` such as ``processes=2``), its number
    of paired trials (or launches), and whatever the results page would refuse in it
    (``tools.goal_check.goal_problems``: a missing field, a verdict that does not follow the
    interval by helpers.toolkit.benchmarking's rule)."""
    from helpers.data.registry import goal_targets
    from tools.goal_check import goal_problems

    targets = goal_targets(notebook, **values)
    assert name in targets, (
        f"{notebook} recorded a goal {name!r} that its metadata does not state: {sorted(targets)}"
    )
    assert goal["goal"] == pytest.approx(targets[name]), goal
    assert goal.get("trials", goal.get("launches")) == count, goal
    assert not goal_problems(goal), goal_problems(goal)


def check_clean_run(run, workdir: str) -> None:
    """A notebook's CI-scale run (a ``run_notebooks.NotebookRun``) that works in ``build/<workdir>``: no
    error output, the headline it shows is the one it saved, no path of this machine and no
    temporary folder name in its outputs, and its work folder removed when it ends."""
    import json
    import re

    import nbformat

    executed = nbformat.read(run.executed, as_version=4)
    outputs = [o for c in executed.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    headline = run.results.headline
    assert headline_output(executed.cells) == {k: round(v, 4) for k, v in headline.items()}
    text = json.dumps([c.get("outputs", []) for c in executed.cells])
    assert str(REPO_ROOT) not in text, "a path of this machine in the outputs"
    assert f"build/{workdir}/" in text and not re.search(rf"build/{workdir}-\w+", text), (
        "no temporary folder names"
    )
    assert not (REPO_ROOT / "build" / workdir).exists(), "workdir left behind"


def headline_output(cells) -> dict:
    """The headline a notebook shows: the dict that its "Save the results" cell ends with (the
    last code cell whose result is a dict; a conclusion cell with the answer may follow it)."""
    import ast

    for cell in reversed([c for c in cells if c.get("cell_type") == "code"]):
        for output in reversed(cell.get("outputs", [])):
            text = output.get("data", {}).get("text/plain", "")
            if output.get("output_type") == "execute_result" and str(text).lstrip().startswith("{"):
                return ast.literal_eval(text if isinstance(text, str) else "".join(text))
    raise AssertionError("no cell of the notebook ends with its headline dict")


def check_steady(run: dict[str, Any], *, epoch_batches: dict[str, int] | None = None) -> None:
    """Every trial of a harness run's record is at steady state: it lasted the run's
    ``min_seconds`` (when the run was time-bound), timed a whole number of epochs' worth of
    batches (``epoch_batches``: each way's batches an epoch, where known), handed over at most 5%
    of them untimed, and the rounds ran every way once, in the recorded orders."""
    names = set(run["ways"])
    assert run["orders"] and all(sorted(order) == sorted(names) for order in run["orders"]), run["label"]
    for name, way in run["ways"].items():
        assert len(way["trials"]) == len(run["orders"]), name
        for t in way["trials"]:
            assert t["seconds"] >= run["min_seconds"], (name, t["seconds"])
            assert t["batches"] >= 1 and t["skipped"] <= 0.05 * t["batches"], (name, t)
            if epoch_batches is not None and name in epoch_batches:
                assert (t["batches"] + t["skipped"]) % epoch_batches[name] == 0, (name, t["batches"])
            assert 0 <= t["waited_s"] <= t["seconds"], name


@pytest.fixture
def run_recipe(tmp_path: Path) -> Callable[..., dict[str, Any]]:
    """``run_recipe(notebook, settings, report)``: the notebook's recipe run as a user runs it
    (tools.recipes.run: a fresh process, no suite to import, ``settings`` replaced), returning
    ``report``'s expressions evaluated after it ran."""
    from tools import recipes

    def run(notebook: Path, settings: dict[str, Any], report: dict[str, str]) -> dict[str, Any]:
        found = recipes.recipe(notebook)
        assert found is not None, f"{notebook.name} has no recipe"
        return recipes.run(found, settings, report, tmp_path)

    return run
