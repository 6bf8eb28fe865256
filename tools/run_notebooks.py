"""Running the notebooks headless with papermill, and what a run says of itself.

Each run gets its own output folder (:func:`default_out_dir`: executed notebooks, results JSON,
and ``run.json``: how the run was made and each notebook's wall time,
:class:`tools.record_format.RunLog`), so two runs never clobber each other, and the committed
notebooks and data are only read. Each kernel is told the folder its notebook saves its results
to (:func:`kernel_with_results_folder`); a failing cell is recorded, naming the notebook and the
cell, and the executed copy kept. Which notebooks run, and with which parameters, is
``tools.run_parameters``'.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from typing import TextIO

import nbformat
import papermill
from jupyter_client.manager import AsyncKernelManager
from papermill.exceptions import PapermillExecutionError

from helpers.data.paths import REPO_ROOT
from helpers.data.paths import relative
from helpers.data.results_file import RESULTS_FOLDER_VARIABLE
from helpers.data.results_file import NotebookResults
from helpers.toolkit.devices import resolve_device
from helpers.toolkit.parameters import INJECTED_TAG
from helpers.toolkit.parameters import ParameterError
from helpers.toolkit.parameters import check_known
from tools.record_format import LoggedNotebook
from tools.record_format import RunLog
from tools.run_parameters import declared_parameters
from tools.run_parameters import notebooks
from tools.run_parameters import parameters_for
from tools.run_parameters import without_injected_parameters

KERNEL = "python3"


@dataclass
class NotebookRun:
    name: str
    executed: Path
    results_file: Path
    seconds: float = 0.0
    error: str | None = None
    results: NotebookResults | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def _describe_failure(error: Exception) -> str:
    if isinstance(error, PapermillExecutionError):
        source = error.source.strip().splitlines()
        return (
            f"cell {error.cell_index} (In [{error.exec_count}]: "
            f"{source[0] if source else ''!s}...) raised {error.ename}: {error.evalue}"
        )
    return f"{type(error).__name__}: {error}"


def _source_for_papermill(notebook: Path, out_dir: Path) -> Path:
    """The path papermill reads: the notebook itself, or, when it carries a stale injected
    cell, a cleaned copy in the run folder."""
    node = nbformat.read(notebook, as_version=4)
    if not any(INJECTED_TAG in c.metadata.get("tags", []) for c in node.cells) and not node.metadata.get(
        "papermill", {}
    ).get("parameters"):
        return notebook
    clean = out_dir / "sources" / notebook.name
    clean.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(without_injected_parameters(notebook), clean)
    return clean


# an installed package's file, as a warning or a traceback names it:
# /opt/venv/lib/python3.12/site-packages/torch/profiler/profiler.py -> <site-packages>/torch/...
INSTALLED_FILE = re.compile(r"(?<![\w/.~$-])/[^\s\"'`)\\]*/(?:site|dist)-packages/")


def portable_text(text: str, folders: dict[str, str] | None = None) -> str:
    """``text`` with the folder of every installed package's file written ``<site-packages>/``:
    where Python was installed on the machine that ran the notebook is nothing a reader needs.
    ``folders`` (:func:`machine_folders`): other folders of the machine and how to write them."""
    for folder, shown in sorted((folders or {}).items(), key=lambda item: -len(item[0])):
        text = re.sub(r"(?<![\w/.~$-])" + re.escape(folder.rstrip("/")) + "/", shown, text)
    return INSTALLED_FILE.sub("<site-packages>/", text)


def machine_folders(out_dir: Path, python_path: str | None = None) -> dict[str, str]:
    """The folders of the machine that a run's outputs may name, and how to write them: the run's
    output folder outside the checkout and the home (``<run>/``), and each folder of packages on
    ``PYTHONPATH`` other than the checkout (``<site-packages>/``: an offline runner unpacks its
    packages to one)."""
    folders = {}
    if relative(out_dir).startswith("/"):
        folders[str(out_dir)] = "<run>/"
    entries = os.environ.get("PYTHONPATH", "") if python_path is None else python_path
    for entry in filter(None, entries.split(os.pathsep)):
        if os.path.isabs(entry) and relative(entry).startswith("/"):
            folders[os.path.normpath(entry)] = "<site-packages>/"
    return folders


def record_paths(executed: Path, notebook: Path, folders: dict[str, str]) -> None:
    """papermill records the paths it was given, and warnings name the files of installed
    packages; keep both free of this machine's folders (``folders``: :func:`machine_folders`)."""
    node = nbformat.read(executed, as_version=4)
    node.metadata.setdefault("papermill", {}).update(
        input_path=relative(notebook), output_path=portable_text(relative(executed), folders)
    )
    for cell in node.cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                output["text"] = portable_text(output["text"], folders)
            elif output.get("output_type") == "error":
                output["traceback"] = [portable_text(line, folders) for line in output["traceback"]]
    nbformat.write(node, executed)


def kernel_with_results_folder(folder: Path, cwd: Path | None = None) -> type[AsyncKernelManager]:
    """The kernel manager class that papermill (nbclient) starts the kernel with: the kernel's
    environment names ``folder`` as the one its notebook saves its results to
    (``helpers.data.results_file.RESULTS_FOLDER_VARIABLE``), so that the runner's own environment is never
    changed and notebooks run side by side each write to their own folder. ``cwd``: the kernel's
    folder, whatever the process's is when it starts (papermill's ``cwd`` changes the folder of the
    whole process, which another thread may change back)."""

    class WithResultsFolder(AsyncKernelManager):
        async def start_kernel(self, **kw: Any) -> None:
            kw["env"] = {**kw.get("env", os.environ), RESULTS_FOLDER_VARIABLE: str(folder)}
            if cwd is not None:
                kw["cwd"] = str(cwd)
            await super().start_kernel(**kw)

    return WithResultsFolder


def run_notebook(notebook: Path, out_dir: Path, parameters: dict[str, Any]) -> NotebookRun:
    """Execute one notebook into ``out_dir``; an error is recorded, not raised."""
    out_dir = out_dir.resolve()  # the kernel runs in the notebook's folder: hand it no relative path
    run = NotebookRun(
        notebook.stem, out_dir / "notebooks" / notebook.name, out_dir / "results" / f"{notebook.stem}.json"
    )
    run.executed.parent.mkdir(parents=True, exist_ok=True)
    run.results_file.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    try:
        check_known(declared_parameters(notebook), parameters, notebook.name)
        papermill.execute_notebook(
            _source_for_papermill(notebook, out_dir),
            run.executed,
            parameters=parameters,
            cwd=notebook.parent,
            kernel_name=KERNEL,
            progress_bar=False,
            extra_arguments=KERNEL_ARGUMENTS,
            kernel_manager_class=kernel_with_results_folder(
                run.results_file.parent, notebook.parent.resolve()
            ),
        )
        run.results = NotebookResults.read(run.results_file)
    except ParameterError as error:
        run.error = str(error)
    except Exception as error:  # a failing cell, or a kernel that died
        run.error = _describe_failure(error)
    finally:
        if run.executed.is_file():
            record_paths(run.executed, notebook, machine_folders(out_dir))
        run.seconds = time.perf_counter() - start
    return run


def _format_value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
    return str(value)


def summary(runs: list[NotebookRun], out_dir: Path) -> str:
    lines = [f"\n{'notebook':<22} {'status':<7} {'time':>7}  headline"]
    for run in runs:
        status = "ok" if run.ok else "FAILED"
        headline = ", ".join(
            f"{k} {_format_value(v)}" for k, v in (run.results.headline if run.results else {}).items()
        )
        lines.append(f"{run.name:<22} {status:<7} {run.seconds:>6.0f}s  {headline}")
        if not run.ok:
            lines.append(f"    {run.error}")
            lines.append(f"    executed copy kept for inspection: {relative(run.executed)}")
    machine = next((r.results.machine for r in runs if r.results), None)
    if machine:
        lines.append(
            f"\nmachine: {machine.get('gpu') or 'no GPU'}; CPU {machine['cpu']} "
            f"x{machine['cpu_count']}; DALI {machine['dali']}, torch {machine['torch']}"
        )
    lines.append(f"executed notebooks: {relative(out_dir / 'notebooks')}")
    lines.append(f"results JSON:       {relative(out_dir / 'results')}")
    return "\n".join(lines)


def default_out_dir(kind: str, parent: Path = REPO_ROOT / "build") -> Path:
    """A new folder ``<parent>/<kind>-<date>-<time>[-n]``, created here: the exclusive mkdir
    keeps two runs that start in the same second apart."""
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    parent.mkdir(parents=True, exist_ok=True)
    for n in itertools.count(1):
        path = parent / (f"{kind}-{stamp}" if n == 1 else f"{kind}-{stamp}-{n}")
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path
    raise AssertionError("unreachable")


COMMIT_VARIABLE = "DALI_TUTORIALS_COMMIT"


def git_commit(root: Path = REPO_ROOT) -> str:
    """The checkout's commit, with ``-dirty`` when it has uncommitted changes; ``"unknown"``
    outside a git checkout (or without git). ``DALI_TUTORIALS_COMMIT``, when set, names it
    instead: a copy of the checkout whose ``.git`` is missing or not its own (an offline GPU
    runner's copy, see CONTRIBUTING.md) is told which commit it is."""
    if named := os.environ.get(COMMIT_VARIABLE, "").strip():
        return named
    try:
        return subprocess.run(
            ["git", "-C", str(root), "describe", "--always", "--dirty", "--abbrev=40"],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _portable(arg: str) -> str:
    """A command-line argument with nothing of the machine: a path inside the checkout relative,
    another absolute path reduced to its name."""
    if not os.path.isabs(arg):
        return arg
    shown = relative(arg)
    return shown if not shown.startswith("/") else f".../{Path(arg).name}"


def command_line(argv: list[str] | None = None) -> str:
    """The runner's command line as typed in the checkout, as a record states it."""
    args = sys.argv[1:] if argv is None else argv
    return " ".join(["python -m tools.suite", *map(_portable, args)])


# the kernel's own log at errors only: every kernel would warn that it "is running over TCP without
# encryption", which is harmless here (papermill's kernels listen on 127.0.0.1 only)
KERNEL_ARGUMENTS = ["--IPKernelApp.log_level=ERROR"]


def expected_time(chosen: list[Path], device: str, scale: str) -> str | None:
    """How long these notebooks took at full scale in the newest records of a machine like this
    one (with a GPU or without), for the line printed before the first one starts; it names the
    machine those records ran on (the reference machine, for a CPU-only run)."""
    if scale != "full":
        return None
    from tools.inventory import duration  # tools.inventory reads the records
    from tools.inventory import runtimes  # tools.inventory reads the records
    from tools.records import machine_heading

    if device == "auto":
        device = resolve_device("auto")
    column = runtimes()[device == "gpu"]
    timed = {
        n.stem: column[n.stem]
        for n in chosen
        if n.stem in column and column[n.stem].notebooks[n.stem].seconds
    }
    if not timed:
        return None
    known = [record.notebooks[name].seconds for name, record in timed.items()]
    machines = " and ".join(sorted({machine_heading(record.machine) for record in timed.values()}))
    missing = len(chosen) - len(known)
    return (
        f"expected: about {duration(sum(known))} for {len(known)} notebook(s), as the newest "
        f"full-scale records took on {machines}"
        + (f" ({missing} never recorded there)" if missing else "")
        + "; a machine with fewer or slower cores takes longer"
    )


def run_suite(
    device: str,
    scale: str,
    out_dir: Path,
    only: list[str] | None = None,
    command: str | None = None,
    jobs: int = 1,
    progress: TextIO | None = None,
) -> list[NotebookRun]:
    """Run the notebooks into ``out_dir``, ``jobs`` at a time (1 for any run whose figures are
    kept: notebooks side by side share the machine); ``run.json`` there records how (scale,
    device, command, commit) and, as each one finishes, its parameters, wall time and status.
    Every notebook's parameters are checked before the first one starts. A run of some
    notebooks (``only``) into the folder of an earlier run with the same scale and device adds
    to its ``run.json``. Progress lines go to ``progress`` (None: standard output)."""
    chosen = notebooks(only)
    parameters = {p: parameters_for(p, scale, device) for p in chosen}
    for notebook, given in parameters.items():  # before any kernel starts
        try:
            check_known(declared_parameters(notebook), given, notebook.name)
        except ParameterError as error:
            raise SystemExit(f"error: {error}") from None
    log = RunLog(scale, device)
    if (out_dir / RunLog.FILE).is_file():
        earlier = RunLog.read(out_dir)
        if (earlier.scale, earlier.device_asked) == (scale, device):
            log = earlier
    facts = {"command": command or command_line(), "commit": git_commit()}
    expected = expected_time(chosen, device, scale)
    if expected:
        print(expected, flush=True, file=progress)

    def run_one(notebook: Path) -> NotebookRun:
        print(f"running {notebook.name} (scale {scale}, device {device}) ...", flush=True, file=progress)
        run = run_notebook(notebook, out_dir, parameters[notebook])
        print(
            f"  {run.name}: {'ok' if run.ok else 'FAILED'} in {run.seconds:.0f}s", flush=True, file=progress
        )
        return run

    runs: dict[Path, NotebookRun] = {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:  # papermill waits on its kernel: threads do
        started = {pool.submit(run_one, notebook): notebook for notebook in chosen}
        for done in as_completed(started):
            notebook, run = started[done], done.result()
            runs[notebook] = run
            log.notebooks[run.name] = LoggedNotebook(
                round(run.seconds, 1), run.ok, run.error, parameters[notebook], **facts
            )
            log.write(out_dir)
    return [runs[notebook] for notebook in chosen]
