"""Run the notebooks headless with papermill and summarize what they found.

    python -m tools.suite run    [--device auto|cpu|gpu] [--scale full|ci|bench] [--out DIR]
    python -m tools.suite bench  [--device ...]   (trials for results/<machine>[-x<GPUs>]-<date>.json)
    python -m tools.suite record --run DIR [--to FILE]   (gather a run's results into one record)
    python -m tools.suite copy   --to DIR [--fresh]   (copies of the notebooks to work in or to test)

Each run gets its own output folder (executed notebooks, results JSON, and ``run.json``: how
the run was made and each notebook's wall time), so two runs never clobber each other, and the
committed notebooks and data are only read. The notebooks are the registry's (``tools.registry``:
every ``notebooks/NN-*.ipynb``), and the parameters of each scale come from the notebook's own
metadata, ``metadata["dali_tutorials"]["scales"][scale]``; ``full`` is the notebook's own
defaults. Papermill is handed only the parameters that change something: none that equals the
notebook's default, and no ``device`` that its default ``"auto"`` resolves to on this machine,
so `make test-gpu` on a GPU machine injects nothing (papermill then adds no injected cell) and the
executed notebooks run exactly as a reader's copy does.

A record (``results/*.json``, written by :func:`write_record`: `make bench`, or
``record --run DIR`` for any run folder) gathers what the notebooks saved and ``run.json`` into
the facts that the README's tables read, so that nothing is guessed from a file name: its format,
and the classes that write and read all three files, are in ``tools.record_format``.
"""

from __future__ import annotations

import argparse
import ast
import datetime as _dt
import itertools
import os
import platform
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import papermill
from jupyter_client.manager import AsyncKernelManager
from papermill.exceptions import PapermillExecutionError
from papermill.parameterize import parameterize_notebook

from helpers.devices import GPUUnavailableError
from helpers.devices import resolve_device
from helpers.parameters import INJECTED_TAG
from helpers.parameters import ParameterError
from helpers.parameters import check_known
from helpers.paths import REPO_ROOT
from helpers.paths import relative
from helpers.results_file import RESULTS_FOLDER_VARIABLE
from helpers.results_file import NotebookResults
from tools import registry
from tools.record_format import SCALES
from tools.record_format import LoggedNotebook
from tools.record_format import RunLog
from tools.registry import RegistryError
from tools.run_record import write_record

# the checkout whose notebooks run; which they are, and the parameters of each scale, come from
# the registry (tools.registry: each notebook's own metadata)
ROOT = REPO_ROOT
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


def notebooks(only: list[str] | None = None, root: Path | None = None) -> list[Path]:
    """The registry's notebooks (of ``root``, by default the checkout), or those whose names start
    with one of ``only``; a notebook whose metadata lacks its entry stops the run before any kernel."""
    try:
        found = [entry.path for entry in registry.notebooks(root or ROOT)]
    except RegistryError as error:
        raise SystemExit(f"error: {error}") from None
    if only:
        chosen = [p for p in found if any(p.stem.startswith(o) for o in only)]
        if not chosen:
            raise SystemExit(f"no notebook matches {only}; there are: {[p.stem for p in found]}")
        return chosen
    return found


def scales_of(notebook: Path) -> dict[str, dict[str, Any]]:
    """The runner's parameters of each scale, from the notebook's registry entry (its metadata)."""
    try:
        return registry.read(notebook).scales
    except RegistryError as error:
        raise SystemExit(f"error: {error}") from None


def parameters_for(notebook: Path, scale: str, device: str) -> dict[str, Any]:
    """What papermill is handed for ``scale`` and ``device``: the scale's parameters from the
    notebook's metadata and ``device``, less those that would change nothing (a value equal to
    the notebook's default, or a device that its default ``"auto"`` resolves to here)."""
    if scale not in SCALES:
        raise SystemExit(f"unknown scale {scale!r}; choose one of {', '.join(SCALES)}")
    parameters: dict[str, Any] = {}
    if scale != "full":
        scales = scales_of(notebook)
        if scale not in scales:
            raise SystemExit(
                f"{notebook.name} has no parameters for scale {scale!r}: add them to its metadata "
                f'as "dali_tutorials": {{"scales": {{"{scale}": {{...}}}}}} (scales it has: '
                f"{', '.join(sorted(scales)) or 'none'})")
        parameters = dict(scales[scale])
    if device != "auto":
        parameters["device"] = device
    defaults = declared_parameters(notebook)
    if defaults.get("device") == "auto":
        defaults["device"] = resolve_device("auto")
    return {name: value for name, value in parameters.items()
            if name not in defaults or defaults[name] != value or type(defaults[name]) is not type(value)}


def declared_parameters(notebook: Path) -> dict[str, Any]:
    """The notebook's parameters (its cell tagged ``parameters``) with their defaults."""
    declared = papermill.inspect_notebook(str(notebook))
    out = {}
    for name, spec in declared.items():
        try:
            out[name] = ast.literal_eval(spec["default"])  # the parameters cell's literals
        except (ValueError, SyntaxError):
            out[name] = None
    return out


def without_injected_parameters(notebook: Path) -> nbformat.NotebookNode:
    """The notebook without a cell that an earlier papermill run injected (papermill keeps such
    a cell when it is given no parameters): every run starts from the notebook's own defaults."""
    node = nbformat.read(notebook, as_version=4)
    node.cells = [c for c in node.cells if INJECTED_TAG not in c.metadata.get("tags", [])]
    # papermill keeps the parameters it recorded last time when it is given none: drop them too
    node.metadata.get("papermill", {}).pop("parameters", None)
    return node


PROVENANCE = "lab-provenance"  # the tag of the note at the top of a lab copy


def provenance_cell(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A note that says where the stored outputs of a working copy came from."""
    run = notebook.metadata.get("papermill") or {}
    date = (run.get("end_time") or "")[:10] or "an unrecorded date"
    took = f"{run['duration'] / 60:.1f} min" if run.get("duration") else "runtime unrecorded"
    cell = nbformat.v4.new_markdown_cell(
        f"> **Stored outputs.** Until you run a cell, the output under it is the one stored with "
        f"the committed notebook: the run of {date} that made it ({took}; the machine it ran on "
        "is in `results/` and on the docs' Results page). Running a cell replaces its output "
        "with your machine's; to get the stored outputs back, delete this copy and run "
        "`make lab` again.")
    cell.metadata["tags"] = [PROVENANCE]
    return cell


CHECKED = "nbval-check-output"  # the tag of a cell whose outputs nbval compares


def has_checked_cells(notebook: Path) -> bool:
    return any(CHECKED in c.metadata.get("tags", []) for c in nbformat.read(notebook, as_version=4).cells)


def copy_notebooks(dest: Path, fresh: bool = False, provenance: bool = False,
                   checked_only: bool = False, scale: str | None = None) -> list[Path]:
    """Copies of the notebooks without papermill's injected parameters, in ``dest``: working
    copies for `make lab` (an existing copy is kept: it may hold your work; ``provenance``: a
    note first that says where its stored outputs came from) or for nbval (``fresh``:
    replaced; ``checked_only``: only the notebooks with cells whose outputs nbval compares, as
    the others are executed once already by the CI-scale run of the tests; ``scale``: that
    scale's parameters injected as papermill injects them, in a cell after the parameters)."""
    dest.mkdir(parents=True, exist_ok=True)
    copies = []
    for notebook in notebooks():
        if checked_only and not has_checked_cells(notebook):
            continue
        copy = dest / notebook.name
        if fresh or not copy.exists():
            node = without_injected_parameters(notebook)
            # the kernel's Python, as JupyterLab would write it on opening the copy: a copy made
            # from a run on another Python (the GPU runner's) would otherwise open as modified
            node.metadata.setdefault("language_info", {})["version"] = platform.python_version()
            if provenance:
                node.cells.insert(0, provenance_cell(nbformat.read(notebook, as_version=4)))
            if scale not in (None, "full"):
                node = parameterize_notebook(node, parameters_for(notebook, scale, "auto"))
            nbformat.write(node, copy)
        copies.append(copy)
    return copies


def _describe_failure(error: Exception) -> str:
    if isinstance(error, PapermillExecutionError):
        source = error.source.strip().splitlines()
        return (f"cell {error.cell_index} (In [{error.exec_count}]: "
                f"{source[0] if source else ''!s}...) raised {error.ename}: {error.evalue}")
    return f"{type(error).__name__}: {error}"


def _source_for_papermill(notebook: Path, out_dir: Path) -> Path:
    """The path papermill reads: the notebook itself, or, when it carries a stale injected
    cell, a cleaned copy in the run folder."""
    node = nbformat.read(notebook, as_version=4)
    if not any(INJECTED_TAG in c.metadata.get("tags", []) for c in node.cells) and \
            not node.metadata.get("papermill", {}).get("parameters"):
        return notebook
    clean = out_dir / "sources" / notebook.name
    clean.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(without_injected_parameters(notebook), clean)
    return clean


# an installed package's file, as a warning or a traceback names it:
# /opt/venv/lib/python3.12/site-packages/torch/profiler/profiler.py -> <site-packages>/torch/...
INSTALLED_FILE = re.compile(r"(?<![\w/.~$-])/[^\s\"'`)\\]*/(?:site|dist)-packages/")


def portable_text(text: str) -> str:
    """``text`` with the folder of every installed package's file written ``<site-packages>/``:
    where Python was installed on the machine that ran the notebook is nothing a reader needs."""
    return INSTALLED_FILE.sub("<site-packages>/", text)


def _record_paths(executed: Path, notebook: Path) -> None:
    """papermill records the paths it was given, and warnings name the files of installed
    packages; keep both free of this machine's folders."""
    node = nbformat.read(executed, as_version=4)
    node.metadata.setdefault("papermill", {}).update(input_path=relative(notebook),
                                                     output_path=relative(executed))
    for cell in node.cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                output["text"] = portable_text(output["text"])
            elif output.get("output_type") == "error":
                output["traceback"] = [portable_text(line) for line in output["traceback"]]
    nbformat.write(node, executed)


def kernel_with_results_folder(folder: Path) -> type[AsyncKernelManager]:
    """The kernel manager class that papermill (nbclient) starts the kernel with: the kernel's
    environment names ``folder`` as the one its notebook saves its results to
    (``helpers.results_file.RESULTS_FOLDER_VARIABLE``), so that the runner's own environment is never
    changed and notebooks run side by side each write to their own folder."""

    class WithResultsFolder(AsyncKernelManager):
        async def start_kernel(self, **kw: Any) -> None:
            kw["env"] = {**kw.get("env", os.environ), RESULTS_FOLDER_VARIABLE: str(folder)}
            await super().start_kernel(**kw)

    return WithResultsFolder


def run_notebook(notebook: Path, out_dir: Path, parameters: dict[str, Any]) -> NotebookRun:
    """Execute one notebook into ``out_dir``; an error is recorded, not raised."""
    out_dir = out_dir.resolve()  # the kernel runs in the notebook's folder: hand it no relative path
    run = NotebookRun(notebook.stem, out_dir / "notebooks" / notebook.name,
                      out_dir / "results" / f"{notebook.stem}.json")
    run.executed.parent.mkdir(parents=True, exist_ok=True)
    run.results_file.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    try:
        check_known(declared_parameters(notebook), parameters, notebook.name)
        papermill.execute_notebook(_source_for_papermill(notebook, out_dir), run.executed,
                                   parameters=parameters, cwd=notebook.parent,
                                   kernel_name=KERNEL, progress_bar=False,
                                   extra_arguments=KERNEL_ARGUMENTS,
                                   kernel_manager_class=kernel_with_results_folder(run.results_file.parent))
        run.results = NotebookResults.read(run.results_file)
    except ParameterError as error:
        run.error = str(error)
    except Exception as error:  # a failing cell, or a kernel that died
        run.error = _describe_failure(error)
    finally:
        if run.executed.is_file():
            _record_paths(run.executed, notebook)
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
        headline = ", ".join(f"{k} {_format_value(v)}" for k, v in
                             (run.results.headline if run.results else {}).items())
        lines.append(f"{run.name:<22} {status:<7} {run.seconds:>6.0f}s  {headline}")
        if not run.ok:
            lines.append(f"    {run.error}")
            lines.append(f"    executed copy kept for inspection: {relative(run.executed)}")
    machine = next((r.results.machine for r in runs if r.results), None)
    if machine:
        lines.append(f"\nmachine: {machine.get('gpu') or 'no GPU'}; CPU {machine['cpu']} "
                     f"x{machine['cpu_count']}; DALI {machine['dali']}, torch {machine['torch']}")
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


def git_commit(root: Path = REPO_ROOT) -> str:
    """The checkout's commit, with ``-dirty`` when it has uncommitted changes; ``"unknown"``
    outside a git checkout (or without git)."""
    try:
        return subprocess.run(["git", "-C", str(root), "describe", "--always", "--dirty", "--abbrev=40"],
                              capture_output=True, text=True, check=True, timeout=30).stdout.strip()
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
    one (with a GPU or without), for the line printed before the first one starts."""
    if scale != "full":
        return None
    from tools.inventory import duration  # tools.inventory reads the records
    from tools.inventory import runtimes  # tools.inventory reads the records

    if device == "auto":
        device = resolve_device("auto")
    column = runtimes()[device == "gpu"]
    seconds = [column[n.stem].notebooks[n.stem].seconds for n in chosen if n.stem in column]
    known = [s for s in seconds if s]
    if not known:
        return None
    where = "an NVIDIA GPU" if device == "gpu" else "a CPU only"
    missing = len(chosen) - len(known)
    return (f"expected: about {duration(sum(known))} for {len(known)} notebook(s), as the newest "
            f"full-scale records on {where} took" + (f" ({missing} never recorded there)" if missing else "")
            + "; a machine with fewer or slower cores takes longer")


def run_suite(device: str, scale: str, out_dir: Path, only: list[str] | None = None,
              command: str | None = None, jobs: int = 1) -> list[NotebookRun]:
    """Run the notebooks into ``out_dir``, ``jobs`` at a time (1 for any run whose figures are
    kept: notebooks side by side share the machine); ``run.json`` there records how (scale,
    device, command, commit) and, as each one finishes, its parameters, wall time and status.
    Every notebook's parameters are checked before the first one starts. A run of some
    notebooks (``only``) into the folder of an earlier run with the same scale and device adds
    to its ``run.json``."""
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
        print(expected, flush=True)

    def run_one(notebook: Path) -> NotebookRun:
        print(f"running {notebook.name} (scale {scale}, device {device}) ...", flush=True)
        run = run_notebook(notebook, out_dir, parameters[notebook])
        print(f"  {run.name}: {'ok' if run.ok else 'FAILED'} in {run.seconds:.0f}s", flush=True)
        return run

    runs: dict[Path, NotebookRun] = {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:  # papermill waits on its kernel: threads do
        started = {pool.submit(run_one, notebook): notebook for notebook in chosen}
        for done in as_completed(started):
            notebook, run = started[done], done.result()
            runs[notebook] = run
            log.notebooks[run.name] = LoggedNotebook(round(run.seconds, 1), run.ok, run.error,
                                                     parameters[notebook], **facts)
            log.write(out_dir)
    return [runs[notebook] for notebook in chosen]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=("run", "bench", "record", "copy"))
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "gpu"))
    parser.add_argument("--scale", default=None, choices=SCALES,
                        help="parameter set (default: full for run, bench for bench; copy: none injected)")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: new)")
    parser.add_argument("--only", nargs="*", help="notebook name prefixes, e.g. 01")
    parser.add_argument("--jobs", type=int, default=1,
                        help="run: notebooks at a time (default 1; more only at scale ci: notebooks side "
                             "by side share the machine, so their timings are not kept)")
    parser.add_argument("--run", type=Path, help="record: the run folder to gather")
    parser.add_argument("--to", type=Path, help="record: the file to write; copy: the folder")
    parser.add_argument("--fresh", action="store_true", help="copy: replace existing copies")
    parser.add_argument("--checked-only", action="store_true",
                        help="copy: only the notebooks that have nbval-check-output cells")
    parser.add_argument("--provenance", action="store_true",
                        help="copy: a note first in each copy, where its stored outputs came from")
    args = parser.parse_args(argv)
    if args.command == "record":
        if args.run is None:
            parser.error("record needs --run RUN_FOLDER")
        print(f"record: {relative(write_record(args.run, args.to))}")
        return 0
    if args.command == "copy":
        if args.to is None:
            parser.error("copy needs --to FOLDER")
        copies = copy_notebooks(args.to, args.fresh, args.provenance, args.checked_only, args.scale)
        print(f"{len(copies)} notebooks in {relative(args.to)}")
        return 0
    scale = args.scale or ("bench" if args.command == "bench" else "full")
    if args.device == "gpu":
        try:
            resolve_device("gpu")
        except GPUUnavailableError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
    out_dir = args.out or default_out_dir(args.command)
    if args.jobs < 1 or (args.jobs > 1 and (args.command == "bench" or scale != "ci")):
        parser.error("--jobs N: N >= 1, and more than 1 only with `run --scale ci` (notebooks side by "
                     "side share the machine: their timings would not be worth keeping)")
    runs = run_suite(args.device, scale, out_dir, args.only, command_line(argv), args.jobs)
    print(summary(runs, out_dir))
    if args.command == "bench" and all(r.ok for r in runs):
        print(f"bench record: {relative(write_record(out_dir))}")
    return 0 if all(r.ok for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
