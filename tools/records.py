"""The committed run records (``results/*.json``, :class:`tools.record_format.Record`) as the
generated blocks read them.

Every fact comes from the records themselves, never from a file name: when a record was made
(``Record.recorded_at``), whether its machine has a GPU (``Record.has_gpu``), what its heading says
(:func:`column_heading`), and for each notebook the newest record that holds it
(:func:`newest_per_notebook`). ``seed.json`` (what DALI's own tutorials printed) is not a run
record: :func:`records` leaves it out. ``tools.inventory``, the results page's tables
(``tools.notebook_tables``, ``tools.goals_table``, ``tools.published_comparison``) and
``tools.findings`` all read the records through this module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from helpers.data.paths import REPO_ROOT
from tools.record_format import Record

RESULTS = REPO_ROOT / "results"
SEED = "seed.json"  # what DALI's own notebooks printed


def records(results_dir: Path = RESULTS) -> list[Record]:
    """The run records of ``results_dir`` (not the seed), oldest first by their recorded date."""
    found = [Record.read(p) for p in results_dir.glob("*.json") if p.name != SEED]
    return sorted(found, key=lambda r: (r.recorded_at(), r.name))


def machine_heading(machine: dict[str, Any]) -> str:
    """``2x NVIDIA H200``, or ``CPU only, 2 cores``."""
    if machine.get("gpu"):
        gpus = machine.get("gpu_count") or 1
        return f"{gpus}x {machine['gpu']}" if gpus > 1 else machine["gpu"]
    return f"CPU only, {machine.get('cpu_count', '?')} cores"


def _one_or_all(values: list[str]) -> str:
    return "/".join(dict.fromkeys(values))


def run_heading(record: Record) -> str:
    """The scale and the device of a record's runs: ``full scale, device gpu``, or for ``auto``
    what it resolved to: ``bench scale, device auto → cpu``."""
    runs = [e.run for e in record.notebooks.values()]
    device = _one_or_all([r.device_asked for r in runs])
    if device == "auto":
        device = f"auto → {_one_or_all([r.device for r in runs])}"
    return f"{_one_or_all([r.scale for r in runs])} scale, device {device}"


def column_heading(record: Record, date_format: str = " ({})") -> str:
    """``2x NVIDIA H200, full scale, device gpu (2026-11-30)``: what a record says of itself."""
    return f"{machine_heading(record.machine)}, {run_heading(record)}{date_format.format(record.date)}"


def newest_per_notebook(found: list[Record]) -> dict[str, Record]:
    """``{notebook: record}``: for each notebook, the newest of ``found`` (oldest first) that holds
    it. Notebooks run on different machines (notebooks 01-03 on one GPU, 04 on two) each come
    from their own record."""
    return {name: record for record in found for name in record.notebooks}


def newest_gpu_first(results_dir: Path = RESULTS) -> dict[str, Record]:
    """``{notebook: record}``: the newest record of a machine with a GPU that holds the notebook,
    else (a notebook that no GPU record holds) the newest record of one without."""
    found = records(results_dir)
    without = newest_per_notebook([r for r in found if not r.has_gpu])
    return {**without, **newest_per_notebook([r for r in found if r.has_gpu])}
