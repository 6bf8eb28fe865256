"""The committed run records (``results/*.json``) as the generated blocks read them.

Every fact comes from the records themselves (written by ``tools.suite.write_record``; format in
``tools.suite``'s docstring), never from a file name: when a record was made (:func:`recorded_at`),
how its notebooks ran (:func:`run_facts`), whether its machine has a GPU (:func:`has_gpu`), what
its heading says (:func:`column_heading`), and for each notebook the newest record that holds it
(:func:`newest_per_notebook`). ``seed.json`` (what DALI's own tutorials printed) is not a run
record: :func:`records` leaves it out.

``tools.inventory``, ``tools.results_table`` and ``tools.findings`` all read the records through
this module.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from helpers.paths import REPO_ROOT

RESULTS = REPO_ROOT / "results"
SEED = "seed.json"  # what DALI's own notebooks printed
UNKNOWN = "unknown"

Found = tuple[Path, dict[str, Any]]


def recorded_at(record: dict[str, Any], path: Path) -> dt.datetime:
    """When a record was made: the latest ``created`` of its notebooks, else its ``date`` or
    ``created``. A record that says nothing of when is an error, not a guess from its name."""
    stamps = [nb.get("created") for nb in record.get("notebooks", {}).values()]
    stamps = [s for s in stamps if s] or [s for s in (record.get("created"), record.get("date")) if s]
    if not stamps:
        raise ValueError(f"{path.name} records no date (`date`, or `created` per notebook): "
                         "write it with `python -m tools.suite record`")
    times = [dt.datetime.fromisoformat(str(s)) for s in stamps]
    return max(t if t.tzinfo else t.replace(tzinfo=dt.timezone.utc) for t in times)


def records(results_dir: Path = RESULTS) -> list[Found]:
    """The run records of ``results_dir`` (not the seed), oldest first by their recorded date."""
    found = [(p, json.loads(p.read_text(encoding="utf-8")))
             for p in results_dir.glob("*.json") if p.name != SEED]
    return sorted(found, key=lambda item: (recorded_at(item[1], item[0]), item[0].name))


def run_facts(entry: dict[str, Any]) -> dict[str, Any]:
    """How a notebook of a record was run (``notebooks.<notebook>.run``): scale, the device
    asked for, the parameters handed to papermill, command, commit; "unknown" where the record
    does not say."""
    facts = entry.get("run") or {}
    return {"scale": facts.get("scale", UNKNOWN), "device": facts.get("device", UNKNOWN),
            "parameters": facts.get("parameters", {}), "command": facts.get("command", UNKNOWN),
            "commit": facts.get("commit", UNKNOWN)}


def has_gpu(record: dict[str, Any]) -> bool:
    machine = record.get("machine", {})
    return bool(machine.get("gpu_count") or machine.get("gpu"))


def machine_heading(machine: dict[str, Any]) -> str:
    """``2x NVIDIA H200``, or ``CPU only, 2 cores``."""
    if machine.get("gpu"):
        gpus = machine.get("gpu_count") or 1
        return f"{gpus}x {machine['gpu']}" if gpus > 1 else machine["gpu"]
    return f"CPU only, {machine.get('cpu_count', '?')} cores"


def _one_or_all(values: list[str]) -> str:
    unique = list(dict.fromkeys(values))
    return "/".join(unique) if unique else UNKNOWN


def run_heading(record: dict[str, Any]) -> str:
    """The scale and the device of a record's runs: ``full scale, device gpu``, or for
    ``auto`` what it resolved to: ``bench scale, device auto → cpu``."""
    entries = list(record.get("notebooks", {}).values())
    facts = [run_facts(e) for e in entries]
    scale = _one_or_all([f["scale"] for f in facts])
    device = _one_or_all([f["device"] for f in facts])
    if device == "auto":
        resolved = _one_or_all([str(e.get("parameters", {}).get("device", UNKNOWN)) for e in entries])
        device = f"auto → {resolved}"
    return f"{scale} scale, device {device}"


def column_heading(path: Path, record: dict[str, Any], date_format: str = " ({})") -> str:
    """``2x NVIDIA H200, full scale, device gpu (2026-11-30)``: what a record says of itself."""
    date = record.get("date") or recorded_at(record, path).date().isoformat()
    return f"{machine_heading(record.get('machine', {}))}, {run_heading(record)}{date_format.format(date)}"


def newest_per_notebook(found: list[Found]) -> dict[str, Found]:
    """``{notebook: (path, record)}``: for each notebook, the newest of ``found`` (oldest first)
    that holds it. Notebooks run on different machines (notebooks 01-03 on one GPU, 04 on two)
    each come from their own record."""
    return {name: (path, record) for path, record in found for name in record.get("notebooks", {})}


def newest_gpu_first(results_dir: Path = RESULTS) -> dict[str, Found]:
    """``{notebook: (path, record)}``: the newest record of a machine with a GPU that holds the
    notebook, else (a notebook that no GPU record holds) the newest record of one without."""
    found = records(results_dir)
    without = newest_per_notebook([(p, r) for p, r in found if not has_gpu(r)])
    return {**without, **newest_per_notebook([(p, r) for p, r in found if has_gpu(r)])}
