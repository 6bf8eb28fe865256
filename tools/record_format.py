"""The runner's records, typed: the one definition of their format.

A run folder holds what its notebooks saved (``results/<notebook>.json``,
:class:`helpers.data.results_file.NotebookResults`) and the log between them and a record:

* :class:`RunLog`: ``run.json`` of a run folder, which the runner (``tools.run_notebooks``)
  writes as each notebook ends: the scale, the device asked for, and per notebook its wall time,
  status, the parameters handed to papermill, the command and the commit;
* :class:`Record`: a file of ``results/``, one run's notebooks gathered from both
  (``python -m tools.suite record``, or ``make bench``: ``tools.run_record``), which the README's
  tables, the inventory, the findings and the tests read::

      {"machine": {...}, "date": "YYYY-MM-DD",
       "notebooks": {"<notebook stem>": {
           "created", "parameters", "headline", "results", "seconds",
           "run": {"scale": "full" | "ci" | "bench", "device_asked": "auto" | "cpu" | "gpu",
                   "device": "cpu" | "gpu" (as the notebook resolved it),
                   "parameters": {...} (handed to papermill), "command", "commit"}}}}

Reading checks the shape: a missing field is an error that names the file and the field, never a
guess. ``results/seed.json`` (what DALI's own tutorials printed) is not a record.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from helpers.data.results_file import NotebookResults
from helpers.data.results_file import ResultsFileError
from helpers.data.results_file import checked_fields
from helpers.data.results_file import read_json
from helpers.data.results_file import write_json

# full: the notebook's own defaults (what the committed notebooks ran with); ci: quick runs on
# two CPU cores; bench: more trials, for the numbers that results/ keeps
SCALES = ("full", "ci", "bench")
DEVICES_ASKED = ("auto", "cpu", "gpu")


class RecordError(ResultsFileError):
    """A file that is not a record of this format; the message names the file and what is wrong."""


RECORDER = "`python -m tools.suite record --run DIR`"


def _fields(cls: type, data: Any, where: str, writer: str = RECORDER) -> dict[str, Any]:
    """The dataclass's fields out of ``data``, every one present (those with defaults optional);
    ``writer``: what writes such a file, for the message."""
    return checked_fields(cls, data, where, writer, RecordError)


def _read_json(path: Path) -> Any:
    return read_json(path, RecordError)


@dataclass
class LoggedNotebook:
    """One notebook's line in ``run.json``."""

    seconds: float
    ok: bool
    error: str | None
    parameters: dict[str, Any]
    command: str
    commit: str


@dataclass
class RunLog:
    """``run.json`` of a run folder: how the runner was asked to run, and each notebook's end."""

    scale: str
    device_asked: str
    notebooks: dict[str, LoggedNotebook] = field(default_factory=dict)

    FILE = "run.json"

    @classmethod
    def read(cls, run_dir: Path) -> RunLog:
        path = run_dir / cls.FILE
        if not path.is_file():
            raise RecordError(
                f"{path} is missing: a record states how each notebook was run, which "
                "`python -m tools.suite run` writes there"
            )
        runner = "`python -m tools.suite run`"
        data = _fields(cls, _read_json(path), str(path), runner)
        data["notebooks"] = {
            name: LoggedNotebook(**_fields(LoggedNotebook, entry, f"{path}: {name}", runner))
            for name, entry in data.get("notebooks", {}).items()
        }
        return cls(**data)

    def write(self, run_dir: Path) -> Path:
        return write_json(run_dir / self.FILE, asdict(self))


@dataclass
class RunFacts:
    """How a notebook of a record was run."""

    scale: str
    device_asked: str
    device: str
    parameters: dict[str, Any]
    command: str
    commit: str

    def __post_init__(self) -> None:
        if (
            self.scale not in SCALES
            or self.device_asked not in DEVICES_ASKED
            or self.device not in ("cpu", "gpu")
        ):
            raise RecordError(
                f"run facts out of range: scale {self.scale!r} (one of {SCALES}), "
                f"device_asked {self.device_asked!r}, device {self.device!r} (cpu or gpu)"
            )


@dataclass
class NotebookEntry:
    """One notebook of a record."""

    created: str
    parameters: dict[str, Any]
    headline: dict[str, Any]
    results: dict[str, Any]
    seconds: float | None
    run: RunFacts


@dataclass
class Record:
    """A file of ``results/``: one run's notebooks on one machine."""

    machine: dict[str, Any]
    date: str
    notebooks: dict[str, NotebookEntry]
    path: Path | None = field(default=None, compare=False, repr=False)

    @classmethod
    def from_json(cls, data: Any, where: str, path: Path | None = None) -> Record:
        top = _fields(cls, data, where)
        notebooks = {}
        for name, entry in top["notebooks"].items():
            at = f"{where}: notebooks.{name}"
            values = _fields(NotebookEntry, entry, at)
            values["run"] = RunFacts(**_fields(RunFacts, values["run"], f"{at}.run"))
            notebooks[name] = NotebookEntry(**values)
        return cls(top["machine"], top["date"], notebooks, path)

    @classmethod
    def read(cls, path: Path) -> Record:
        try:
            return cls.from_json(_read_json(path), path.name, path)
        except TypeError as error:  # a field of the wrong kind
            raise RecordError(f"{path.name}: {error}") from None

    @classmethod
    def gather(cls, run_dir: Path) -> Record:
        """A run folder (``results/*.json`` that the notebooks saved, ``run.json``) as one record."""
        try:
            saved = [NotebookResults.read(p) for p in sorted((run_dir / "results").glob("*.json"))]
        except ResultsFileError as error:  # what a notebook saved, not of its format
            raise RecordError(str(error)) from None
        if not saved:
            raise RecordError(f"no results JSON in {run_dir / 'results'}")
        log = RunLog.read(run_dir)
        notebooks = {}
        for document in saved:
            logged = log.notebooks.get(document.notebook)
            if logged is None:
                raise RecordError(
                    f"{run_dir / RunLog.FILE} says nothing of {document.notebook}: "
                    "gather only the folders of `python -m tools.suite run`"
                )
            run = RunFacts(
                log.scale,
                log.device_asked,
                str(document.parameters.get("device")),
                logged.parameters,
                logged.command,
                logged.commit,
            )
            notebooks[document.notebook] = NotebookEntry(
                document.created,
                document.parameters,
                document.headline,
                document.results,
                logged.seconds,
                run,
            )
        return cls(saved[0].machine, min(d.created for d in saved)[:10], notebooks)

    def write(self, path: Path) -> Path:
        document = asdict(self)
        document.pop("path")
        self.path = path
        return write_json(path, document)

    @property
    def has_gpu(self) -> bool:
        return bool(self.machine.get("gpu_count") or self.machine.get("gpu"))

    @property
    def name(self) -> str:
        return self.path.name if self.path else "(not written)"

    def recorded_at(self) -> dt.datetime:
        """When the record was made: the latest ``created`` of its notebooks."""
        times = [dt.datetime.fromisoformat(e.created) for e in self.notebooks.values()] or [
            dt.datetime.fromisoformat(self.date)
        ]
        return max(t if t.tzinfo else t.replace(tzinfo=dt.timezone.utc) for t in times)
