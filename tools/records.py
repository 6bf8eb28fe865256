"""Records: one JSON file per run in ``results/`` (``<machine>-<date>.json``, or
``notebooks-<machine>-<date>.json`` for the run that produced the committed notebooks).

A record holds the machine, the date and, for each notebook, its results JSON (created,
parameters, headline, results) and its wall time in seconds. Records are ordered by the date
they recorded, never by file name.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers.benchmarking import machine_label
from helpers.paths import REPO_ROOT

RESULTS = REPO_ROOT / "results"


def write_record(run_dir: Path, path: Path | None = None) -> Path:
    """Gather one run folder (``<run>/results/*.json`` and the wall times in ``<run>/run.json``)
    into one record, by default ``results/<machine>-<date>.json``: what `make bench` keeps and
    the README table reads."""
    results = run_dir / "results"
    documents = {p.stem: json.loads(p.read_text()) for p in sorted(results.glob("*.json"))}
    if not documents:
        raise SystemExit(f"no results JSON in {results}")
    log = run_dir / "run.json"
    seconds = {name: entry["seconds"] for name, entry in
               json.loads(log.read_text())["notebooks"].items()} if log.is_file() else {}
    machine = next(iter(documents.values()))["machine"]
    date = min(d["created"] for d in documents.values())[:10]
    path = path or RESULTS / f"{machine_label(machine)}-{date}.json"
    record = {"machine": machine, "date": date,
              "notebooks": {name: {**{k: d[k] for k in ("created", "parameters", "headline", "results")},
                                   "seconds": seconds.get(name)}
                            for name, d in documents.items()}}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2, default=str) + "\n")
    return path


def recorded_at(record: dict[str, Any]) -> str:
    """When a record's run happened: the latest ``created`` of its notebooks, else its date."""
    created = [n.get("created") for n in record.get("notebooks", {}).values() if n.get("created")]
    return max(created, default=record.get("date") or "")


def by_date(paths: list[Path]) -> list[Path]:
    """Record files, oldest first by the date they record (file names may say otherwise)."""
    return sorted(paths, key=lambda p: (recorded_at(json.loads(p.read_text())), p.name))


def latest(pattern: str = "*.json", folder: Path = RESULTS) -> Path | None:
    """The most recently recorded record among ``folder/pattern``, or None."""
    found = by_date([p for p in folder.glob(pattern) if p.name != "seed.json"])
    return found[-1] if found else None
