"""A run's record: one run folder (what its notebooks saved, and ``run.json``) gathered into one
file of ``results/`` (``python -m tools.suite record --run DIR``, or ``make bench``), named after
the machine it ran on. Its format is :class:`tools.record_format.Record`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from helpers.data.paths import REPO_ROOT
from tools.record_format import Record
from tools.record_format import RecordError

RESULTS = REPO_ROOT / "results"


def machine_label(info: dict[str, Any]) -> str:
    """A short file-name-safe name for the machine: its GPU, else ``cpu``."""
    name = info.get("gpu") or "cpu"
    return "".join(c if c.isalnum() else "-" for c in name.replace("NVIDIA ", "")).strip("-").lower()


def record_path(results_dir: Path, label: str, date: str) -> Path:
    """``<label>-<date>.json`` in ``results_dir``, or, where the day has records of that machine
    already, ``<label>-<date>-N.json`` with N one past the highest (the first counts as 1): the
    names sort in the order the records were made, even after older ones were deleted."""
    stem = f"{label}-{date}"
    taken = [1] if (results_dir / f"{stem}.json").exists() else []
    for path in results_dir.glob(f"{stem}-*.json"):
        rest, n = path.stem.rsplit("-", 1)
        if rest == stem and n.isdigit():
            taken.append(int(n))
    return results_dir / (f"{stem}-{max(taken) + 1}.json" if taken else f"{stem}.json")


def write_record(run_dir: Path, path: Path | None = None) -> Path:
    """Gather one run folder (what its notebooks saved, and ``run.json``) into one record
    (:meth:`tools.record_format.Record.gather`), by default
    ``results/<machine>[-x<GPUs>]-<date>[-N].json`` (:func:`record_path`: never over an existing
    one): what `make bench` keeps and the README's tables read."""
    try:
        record = Record.gather(run_dir)
    except RecordError as error:
        raise SystemExit(str(error)) from None
    if path is None:
        gpus = record.machine.get("gpu_count") or 0
        label = machine_label(record.machine) + (f"-x{gpus}" if gpus > 1 else "")
        path = record_path(RESULTS, label, record.date)
    return record.write(path)
