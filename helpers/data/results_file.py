"""A notebook's results file, typed: what a notebook (or a training script) writes.

* :class:`NotebookResults`: what a notebook saves when it ends
  (``helpers.toolkit.benchmarking.save_results``), ``<results folder>/<notebook>.json``: the machine,
  every parameter it ran with (``device`` as it resolved it), its headline figures and its
  results;
* :func:`write_json`: any JSON document written whole or not at all (the training scripts'
  results files too);
* :data:`RESULTS_FOLDER_VARIABLE`: where the runner tells a kernel to save its results.

Reading checks the shape: a missing field is an error that names the file and the field, never a
guess (:func:`checked_fields`, which the runner's records in ``tools.record_format`` read with
too).
"""

from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import MISSING
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import fields
from pathlib import Path
from typing import Any

# the environment variable of a notebook's kernel that names the folder its results go to: the
# runner (tools.run_notebooks) starts each kernel with it, helpers.toolkit.benchmarking.save_results reads it
RESULTS_FOLDER_VARIABLE = "DALI_TUTORIALS_RESULTS"


class ResultsFileError(ValueError):
    """A file that is not of the format it is read as; the message names the file and what is wrong."""


SAVER = "helpers.toolkit.benchmarking.save_results (a notebook's last cell)"


def checked_fields(cls: type, data: Any, where: str, writer: str,
                   error: type[ResultsFileError] = ResultsFileError) -> dict[str, Any]:
    """The dataclass's fields out of ``data``, every one present (those with defaults optional);
    ``writer``: what writes such a file, for the message; ``error``: what is raised."""
    if not isinstance(data, dict):
        raise error(f"{where}: expected an object, found {type(data).__name__}")
    needed = [f.name for f in fields(cls) if f.init and f.default is MISSING and f.default_factory is MISSING]
    missing = [name for name in needed if name not in data]
    if missing:
        raise error(f"{where} lacks {', '.join(missing)}: write it with {writer}")
    return {f.name: data[f.name] for f in fields(cls) if f.init and f.name in data}


def write_json(path: Path, document: Any) -> Path:
    """``document`` as JSON at ``path``, atomically: a reader finds the whole file or none."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(document, indent=2, default=str) + "\n")
    tmp.replace(path)
    return path


def read_json(path: Path, error: type[ResultsFileError] = ResultsFileError) -> Any:
    """The JSON document at ``path``; ``error`` (naming the file) when it is not JSON."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as problem:
        raise error(f"{path.name} is not JSON ({problem})") from None


@dataclass
class NotebookResults:
    """What a notebook saved: ``<results folder>/<notebook>.json``."""

    notebook: str
    created: str
    machine: dict[str, Any]
    parameters: dict[str, Any]
    headline: dict[str, Any]
    results: dict[str, Any]

    @classmethod
    def now(cls, notebook: str, machine: dict[str, Any], parameters: dict[str, Any],
            headline: dict[str, Any], results: dict[str, Any]) -> NotebookResults:
        created = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        return cls(notebook, created, machine, parameters, headline, results)

    @classmethod
    def read(cls, path: Path) -> NotebookResults:
        return cls(**checked_fields(cls, read_json(path), path.name, SAVER))

    def write(self, folder: Path) -> Path:
        return write_json(Path(folder) / f"{self.notebook}.json", asdict(self))
