"""Run the notebooks headless with papermill and summarize what they found.

    python -m helpers.suite run   [--device auto|cpu|gpu] [--scale full|ci|bench] [--out DIR]
    python -m helpers.suite bench [--device ...]   (trials for the record: results/<machine>-<date>.json)
    python -m helpers.suite record --run DIR [--to FILE]   (gather a run's results into one record)

Each run gets its own output folder (executed notebooks, results JSON, nothing else), so two runs
never clobber each other, and the committed notebooks and data are only read.
"""

from __future__ import annotations

import argparse
import ast
import datetime as _dt
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from helpers.data_sources import REPO_ROOT
from helpers.parameters import ParameterError, check_known

NOTEBOOK_DIR = REPO_ROOT / "notebooks"
SCALES: dict[str, dict[str, dict[str, Any]]] = {
    # the notebooks' own defaults (what the committed notebooks ran with)
    "full": {},
    # quick runs for CI on two CPU cores
    "ci": {
        "01-getting-started": {"thread_counts": [1, 2], "speed_batches": 8, "trials": 2},
        "02-capture-mode": {"epochs": 3, "trials": 2},
    },
    # more trials, for the numbers that results/ keeps
    "bench": {
        "01-getting-started": {"thread_counts": [1, 2, 4, 8, 16], "speed_batches": 100, "trials": 5},
        "02-capture-mode": {"trials": 5, "epochs": 6},
    },
}


@dataclass
class NotebookRun:
    name: str
    executed: Path
    results_file: Path
    seconds: float = 0.0
    error: str | None = None
    results: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None


def notebooks(only: list[str] | None = None) -> list[Path]:
    found = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]-*.ipynb"))
    if only:
        chosen = [p for p in found if any(p.stem.startswith(o) for o in only)]
        if not chosen:
            raise SystemExit(f"no notebook matches {only}; there are: {[p.stem for p in found]}")
        return chosen
    return found


def parameters_for(notebook: Path, scale: str, device: str) -> dict[str, Any]:
    if scale not in SCALES:
        raise SystemExit(f"unknown scale {scale!r}; choose one of {sorted(SCALES)}")
    parameters = dict(SCALES[scale].get(notebook.stem, {}))
    if device != "auto":
        parameters["device"] = device
    return parameters


def declared_parameters(notebook: Path) -> dict[str, Any]:
    """The notebook's parameters (its cell tagged ``parameters``) with their defaults."""
    import papermill

    declared = papermill.inspect_notebook(str(notebook))
    out = {}
    for name, spec in declared.items():
        try:
            out[name] = ast.literal_eval(spec["default"])  # the parameters cell's literals
        except (ValueError, SyntaxError):
            out[name] = None
    return out


def without_injected_parameters(notebook: Path):
    """The notebook without a cell that an earlier papermill run injected (papermill keeps such
    a cell when it is given no parameters): every run starts from the notebook's own defaults."""
    import nbformat

    node = nbformat.read(notebook, as_version=4)
    node.cells = [c for c in node.cells if "injected-parameters" not in c.metadata.get("tags", [])]
    return node


def _describe_failure(error: Exception) -> str:
    from papermill.exceptions import PapermillExecutionError

    if isinstance(error, PapermillExecutionError):
        source = error.source.strip().splitlines()
        return (f"cell {error.cell_index} (In [{error.exec_count}]: "
                f"{source[0] if source else ''!s}...) raised {error.ename}: {error.evalue}")
    return f"{type(error).__name__}: {error}"


def run_notebook(notebook: Path, out_dir: Path, parameters: dict[str, Any]) -> NotebookRun:
    """Execute one notebook into ``out_dir``; an error is recorded, not raised."""
    import papermill

    run = NotebookRun(notebook.stem, out_dir / "notebooks" / notebook.name,
                      out_dir / "results" / f"{notebook.stem}.json")
    run.executed.parent.mkdir(parents=True, exist_ok=True)
    run.results_file.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    previous = os.environ.get("DALI_TUTORIALS_RESULTS")
    os.environ["DALI_TUTORIALS_RESULTS"] = str(run.results_file.parent)
    try:
        check_known(declared_parameters(notebook), parameters, notebook.name)
        papermill.execute_notebook(without_injected_parameters(notebook), str(run.executed),
                                   parameters=parameters,
                                   cwd=str(notebook.parent), kernel_name="python3",
                                   progress_bar=False)
        run.results = json.loads(run.results_file.read_text())
    except ParameterError as error:
        run.error = str(error)
    except Exception as error:  # a failing cell, or a kernel that died
        run.error = _describe_failure(error)
    finally:
        if previous is None:
            os.environ.pop("DALI_TUTORIALS_RESULTS", None)
        else:
            os.environ["DALI_TUTORIALS_RESULTS"] = previous
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
                             run.results.get("headline", {}).items())
        lines.append(f"{run.name:<22} {status:<7} {run.seconds:>6.0f}s  {headline}")
        if not run.ok:
            lines.append(f"    {run.error}")
            lines.append(f"    executed copy kept for inspection: {run.executed}")
    machine = next((r.results["machine"] for r in runs if r.results), None)
    if machine:
        lines.append(f"\nmachine: {machine.get('gpu') or 'no GPU'}; CPU {machine['cpu']} "
                     f"x{machine['cpu_count']}; DALI {machine['dali']}, torch {machine['torch']}")
    lines.append(f"executed notebooks: {out_dir / 'notebooks'}")
    lines.append(f"results JSON:       {out_dir / 'results'}")
    return "\n".join(lines)


def default_out_dir(kind: str) -> Path:
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return REPO_ROOT / "build" / f"{kind}-{stamp}-{os.getpid()}"


def run_suite(device: str, scale: str, out_dir: Path, only: list[str] | None = None) -> list[NotebookRun]:
    runs = []
    for notebook in notebooks(only):
        print(f"running {notebook.name} (scale {scale}, device {device}) ...", flush=True)
        run = run_notebook(notebook, out_dir, parameters_for(notebook, scale, device))
        print(f"  {'ok' if run.ok else 'FAILED'} in {run.seconds:.0f}s", flush=True)
        runs.append(run)
    return runs


def write_record(run_results: Path, path: Path | None = None) -> Path:
    """Gather the results JSON of one run (``<run>/results``) into one record, by default
    ``results/<machine>-<date>.json``: what `make bench` keeps and the README table reads."""
    from helpers.benchmarking import machine_label

    documents = {p.stem: json.loads(p.read_text()) for p in sorted(run_results.glob("*.json"))}
    if not documents:
        raise SystemExit(f"no results JSON in {run_results}")
    machine = next(iter(documents.values()))["machine"]
    date = min(d["created"] for d in documents.values())[:10]
    path = path or REPO_ROOT / "results" / f"{machine_label(machine)}-{date}.json"
    record = {"machine": machine, "date": date,
              "notebooks": {name: {k: d[k] for k in ("created", "parameters", "headline", "results")}
                            for name, d in documents.items()}}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2, default=str) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=("run", "bench", "record"))
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "gpu"))
    parser.add_argument("--scale", default=None, choices=sorted(SCALES),
                        help="parameter set (default: full for run, bench for bench)")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: new)")
    parser.add_argument("--only", nargs="*", help="notebook name prefixes, e.g. 01")
    parser.add_argument("--run", type=Path, help="record: the run folder to gather")
    parser.add_argument("--to", type=Path, help="record: the file to write")
    args = parser.parse_args(argv)
    if args.command == "record":
        if args.run is None:
            parser.error("record needs --run RUN_FOLDER")
        print(f"record: {write_record(args.run / 'results', args.to)}")
        return 0
    scale = args.scale or ("bench" if args.command == "bench" else "full")
    if args.device == "gpu":
        from helpers.devices import GPUUnavailableError, resolve_device

        try:
            resolve_device("gpu")
        except GPUUnavailableError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
    out_dir = args.out or default_out_dir(args.command)
    runs = run_suite(args.device, scale, out_dir, args.only)
    print(summary(runs, out_dir))
    if args.command == "bench" and all(r.ok for r in runs):
        print(f"bench record: {write_record(out_dir / 'results')}")
    return 0 if all(r.ok for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
