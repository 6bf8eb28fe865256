"""The tests' fakes: runs of the harness, records, notebooks and their registry entries, one
builder each in place of one per test file.

A fake run is what ``helpers.toolkit.harness.Harness.run`` returns (``Results``), with the rates
a test chooses: ``fake_results({"a": [100, 110], "b": [50, 55]})`` is two ways of two rounds,
each trial ``samples`` samples in ``samples / rate`` seconds. Everything else a trial records
(the share spent waiting, CPU time, the hardware's readings, the batches handed over untimed)
is given where a test needs it, per way or for all. A run saved in a record comes back with
``Results.from_record``, the harness's own inverse of ``Results.as_record``.

A fake record (:func:`fake_record`) is what ``tools.run_record`` writes, a fake notebook
(:func:`fake_notebook`) holds only its metadata, and :func:`fake_results_folder` is a results folder
beside the checkout's notebooks (their registry entries: topics, order, goals) holding one record
of :func:`fake_entries`, small entries of every notebook with the keys ``tools.findings`` reads.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import nbformat
from nbformat.v4 import new_code_cell
from nbformat.v4 import new_notebook

from helpers.data.paths import REPO_ROOT
from helpers.toolkit.benchmarking import Ratio
from helpers.toolkit.harness import Results
from helpers.toolkit.harness import Trial
from helpers.toolkit.harness import Way
from tools import bottom_lines
from tools import findings


def _never() -> Any:
    raise RuntimeError("a fake way has no loader to make")


def fake_way(name: str, kind: str = "fake", knob: str = "") -> Way:
    """A way that tables and compares, and cannot be run."""
    return Way(name, _never, kind=kind, knob=knob)


def fake_results(
    rates: Mapping[str, Sequence[float]],
    *,
    ways: Sequence[Way] | None = None,
    kinds: Mapping[str, str] | str = "fake",
    knobs: Mapping[str, str] | None = None,
    label: str = "fake",
    unit: str = "samples",
    fed: bool = True,
    samples: int = 100,
    waiting: float = 0.0,
    cpu_s: float | Callable[[str, int], float] = 0.5,
    busy: Mapping[str, Mapping[str, Any]] | Mapping[str, Any] | None = None,
    skipped: Mapping[str, int] | None = None,
) -> Results:
    """A run whose way ``name`` made ``rates[name][i]`` per second in round ``i``.

    ``ways``: the ways themselves (else one :func:`fake_way` per name, its kind from ``kinds``, a
    name's or one for all, and its knob from ``knobs``); ``waiting``: the share of each trial spent
    in the loader's ``next()``; ``cpu_s``: each trial's CPU time, or ``cpu_s(name, i)``;
    ``busy``: the hardware's readings, ``{name: readings}`` or one dict for every way;
    ``skipped``: the batches a way had ready before each timer."""
    knobs, skipped = knobs or {}, skipped or {}
    if ways is None:
        ways = [fake_way(n, kinds if isinstance(kinds, str) else kinds[n], knobs.get(n, "")) for n in rates]
    per_way = (
        busy is not None and set(busy) <= set(rates) and all(isinstance(v, Mapping) for v in busy.values())
    )

    def readings(name: str) -> dict[str, Any]:
        if busy is None:
            return {}
        return dict(busy.get(name, {})) if per_way else dict(busy)

    def trial(name: str, i: int, rate: float) -> Trial:
        seconds = samples / rate
        cpu = cpu_s(name, i) if callable(cpu_s) else cpu_s
        return Trial(samples, seconds, waiting * seconds, cpu, readings(name), skipped=skipped.get(name, 0))

    trials = {name: [trial(name, i, r) for i, r in enumerate(values)] for name, values in rates.items()}
    return Results(label, unit, list(ways), trials, fed=fed)


def fake_notebook(path: Path, meta: dict[str, Any] | None, duration: float | None = None) -> None:
    metadata: dict[str, Any] = {}
    if meta is not None:
        metadata["dali_tutorials"] = meta
    if duration is not None:
        metadata["papermill"] = {"duration": duration}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"cells": [], "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}))


def fake_record(
    path: Path,
    created: str,
    notebooks: dict[str, dict[str, Any]],
    machine: dict[str, Any] | None = None,
    run: dict[str, Any] | None = None,
) -> None:
    """A record as tools.run_record.write_record writes it (``run``: how every notebook ran)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    run = run or {
        "scale": "full",
        "device_asked": "auto",
        "device": "cpu",
        "parameters": {},
        "command": "python -m tools.suite run",
        "commit": "abc",
    }
    path.write_text(
        json.dumps(
            {
                "machine": machine or {"gpu": None, "gpu_count": 0, "cpu_count": 2},
                "date": created[:10],
                "notebooks": {
                    name: {
                        "created": created,
                        "parameters": {"trials": 2},
                        "results": {},
                        "run": run,
                        "headline": {},
                        "seconds": None,
                        **fields,
                    }
                    for name, fields in notebooks.items()
                },
            }
        )
    )


def fake_entry(title: str) -> dict[str, Any]:
    return {
        "title": title,
        "learn": f"what {title} teaches",
        "needs_gpu": "No: runs on a CPU",
        "scales": {"ci": {}, "bench": {}},
    }


H200 = {"gpu": "NVIDIA H200", "gpu_count": 2, "cpu_count": 32}


def fake_goal(ratio: float, low: float, high: float, verdict: str | None, **count: int) -> dict[str, Any]:
    return {"ratio": ratio, "ci95": [low, high], "goal": 1.5, "verdict": verdict, **(count or {"trials": 5})}


# Small fake records, one per notebook family, with the keys each function reads.


def fake_ratio(ratio: float, low: float, high: float, **goal: Any) -> dict[str, Any]:
    return {"ratio": ratio, "ci95": [low, high], "trials": 5, **goal}


def fake_entries(ratio: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``{notebook: entry}``: every notebook's entry, each ratio the given one (goals: of 1x)."""
    goal = {
        **ratio,
        "goal": 1.0,
        "verdict": Ratio(ratio["ratio"], *ratio["ci95"], ratio["trials"], True).verdict(1.0),
    }
    nb05 = {findings.R50 + k: goal for k in ("best DataLoader", "pipeline mode, same knobs", "ceiling")}
    nb05["cpu: DataLoader / dynamic mode, CPU time per image"] = goal
    resumable = "capture, epoch readers + checkpoints / "
    return {
        findings.NB01: {
            "headline": {"best_hw_decoder_load": 0.65},
            "results": {
                "reference_threads": 4,
                "ratios": {"best_gpu_over_cpu": ratio, "best_gpu_over_best_cpu": ratio},
            },
        },
        findings.NB02: {"results": {"ratios": {"capture_over_eager": ratio}}},
        findings.NB03: {
            "results": {
                "goals": {
                    "best dynamic / best DataLoader": goal,
                    "best dynamic / pipeline mode, same knobs": goal,
                },
                "picks": {"dynamic": {"best": "capture b64", "ties": {}}},
            }
        },
        findings.NB04: {
            "headline": {"processes": 2},
            "results": {"goals": {"weak scaling (all processes / 1 process)": goal}},
        },
        findings.NB05: {
            "parameters": {"image_size": 96},
            "results": {"goals": nb05, "picks": {"capture": {"best": "capture, threads 4", "ties": {}}}},
        },
        findings.NB06: {
            "results": {
                "steps_per_epoch": 64,
                "resume": {"kill_step": 30, "resumed_from": 20, "bit_identical": True},
                "benchmark": {
                    "ratios": {resumable + "capture": ratio, resumable + "eager + checkpoints": ratio}
                },
            }
        },
        findings.NB07: {
            "headline": {"best_dali_nvdec_pct": None},
            "parameters": {"codec": "vp9", "clip_frames": 8, "gop": 16, "device": "cpu", "resolution": None},
            "results": {
                "goals": {
                    "alone: best DALI / best PyAV DataLoader": goal,
                    "fed: best DALI / training alone": goal,
                },
                "picks": {"best DALI": "DALI, 2 readers"},
                "alone": {"configs": {"DALI, 2 readers": {"count": 2}}},
                "sweep": {"dali_over_dataloader": {"160x120, gop 16": ratio}},
            },
        },
    }


def fake_results_folder(
    tmp_path: Path, entries: dict[str, dict[str, Any]], machine: dict[str, Any] | None = None
) -> Path:
    results = tmp_path / "results"
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "notebooks").symlink_to(REPO_ROOT / "notebooks")  # the registry: topics, order
    fake_record(
        results / "gpu-fake.json",
        "2026-03-02T09:00:00+00:00",
        {name: {"headline": {}, "parameters": {}, **entry} for name, entry in entries.items()},
        machine=machine or {**H200, "gpu_count": 1},
    )
    return results


FIGURE = re.compile(r"(\d+\.\d{2})x \[(\d+\.\d{2})-(\d+\.\d{2})\]")


def edit_chosen_record(results: Path, notebook: str, change: Callable[[dict[str, Any]], Any]) -> str:
    """Change the ``results`` of ``notebook`` in the record that the findings read for it (the
    newest GPU record holding it); returns that record's file name."""
    path = findings.newest_gpu_first(results)[notebook].path
    record = json.loads(path.read_text())
    change(record["notebooks"][notebook]["results"])
    path.write_text(json.dumps(record))
    return path.name


def edit_bottom_line(path: Path, change: Callable[[dict[str, Any]], Any] | None) -> None:
    """Change a notebook's bottom-line cell (``None``: remove it), saved in nbformat's layout."""
    notebook = json.loads(path.read_text())
    cell = next(c for c in notebook["cells"] if bottom_lines.TAG in c["metadata"].get("tags", []))
    if change is None:
        notebook["cells"].remove(cell)
    else:
        change(cell)
    path.write_text(json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n")


# a notebook the runner can execute (tools.run_notebooks, tools.suite): its registry entry, a
# parameters cell and the cells given
SAVE_ANSWER = (
    "import os, pathlib\nfrom helpers.data.results_file import NotebookResults\n"
    "NotebookResults.now('{name}', {{}}, {{'answer': answer}}, {{}}, {{'answer': answer}})"
    ".write(pathlib.Path(os.environ['DALI_TUTORIALS_RESULTS']))"
)


# a registry entry (helpers.data.registry): what the runner needs of a notebook's metadata
RUNNER_ENTRY = {"title": "A test", "learn": "nothing", "needs_gpu": "No", "scales": {"ci": {}, "bench": {}}}


def runnable_notebook(path: Path, *cells: str, entry: dict | None = RUNNER_ENTRY) -> Path:
    nb = new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    if entry is not None:
        nb.metadata["dali_tutorials"] = entry
    path.parent.mkdir(parents=True, exist_ok=True)
    nb.cells = [new_code_cell("answer = 42\nlabel = 'x'"), *[new_code_cell(c) for c in cells]]
    nb.cells[0].metadata["tags"] = ["parameters"]
    nbformat.write(nb, path)
    return path
