"""A run's record: one run folder (what its notebooks saved, and ``run.json``) gathered into one
file of ``results/`` (``python -m tools.suite record --run DIR``, or ``make bench``), named after
the machine it ran on. Its format is :class:`tools.record_format.Record`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from helpers.data.paths import REPO_ROOT
from helpers.data.paths import relative
from tools.record_format import Record
from tools.record_format import RecordError


def machine_label(info: dict[str, Any]) -> str:
    """A short file-name-safe name for the machine: its GPU, else ``cpu``."""
    name = info.get("gpu") or "cpu"
    return "".join(c if c.isalnum() else "-" for c in name.replace("NVIDIA ", "")).strip("-").lower()


def write_record(run_dir: Path, path: Path | None = None) -> Path:
    """Gather one run folder (what its notebooks saved, and ``run.json``) into one record
    (:meth:`tools.record_format.Record.gather`), by default ``results/<machine>[-x<GPUs>]-<date>.json``
    (never over an existing one): what `make bench` keeps and the README's tables read."""
    try:
        record = Record.gather(run_dir)
    except RecordError as error:
        raise SystemExit(str(error)) from None
    if path is None:
        gpus = record.machine.get("gpu_count") or 0
        label = machine_label(record.machine) + (f"-x{gpus}" if gpus > 1 else "")
        path = REPO_ROOT / "results" / f"{label}-{record.date}.json"
        if path.exists():
            raise SystemExit(f"{relative(path)} exists: name another file with `python -m tools.suite record "
                             f"--run {relative(run_dir)} --to FILE` (the run folder is kept)")
    return record.write(path)
