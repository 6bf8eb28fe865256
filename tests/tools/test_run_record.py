"""A run's record (tools.run_record): named after its machine and date, numbered within the day,
never overwritten; refused without the run's facts."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.data.results_file import NotebookResults
from tools import run_record
from tools.record_format import LoggedNotebook
from tools.record_format import RunLog


def test_a_records_name_is_its_machine_and_date_numbered_within_the_day(tmp_path: Path) -> None:
    """``<machine>-<date>[-N].json``: the first of a day unnumbered, the next one past the highest
    of that machine and day, even where an older one of the day was deleted; other machines',
    other days' and other names' files do not count."""

    def name() -> str:
        return run_record.record_path(tmp_path, "h200", "2026-12-04").name

    assert name() == "h200-2026-12-04.json"
    for other in (
        "h200-x2-2026-12-04.json",
        "h200-2026-12-03-7.json",
        "cpu-2026-12-04-5.json",
        "h200-2026-12-04-old.json",
    ):
        (tmp_path / other).write_text("{}")
    assert name() == "h200-2026-12-04.json"
    (tmp_path / "h200-2026-12-04.json").write_text("{}")
    assert name() == "h200-2026-12-04-2.json"
    (tmp_path / "h200-2026-12-04-3.json").write_text("{}")  # the -2 of the day was pruned
    assert name() == "h200-2026-12-04-4.json"
    assert run_record.record_path(tmp_path, "h200-x2", "2026-12-04").name == "h200-x2-2026-12-04-2.json"


def test_a_record_needs_the_runs_facts(tmp_path: Path) -> None:
    (tmp_path / "results").mkdir()
    with pytest.raises(SystemExit, match="no results JSON"):
        run_record.write_record(tmp_path, tmp_path / "r.json")
    (tmp_path / "results" / "01-x.json").write_text('{"notebook": "01-x", "machine": {}}')
    with pytest.raises(SystemExit, match="01-x.json lacks created, parameters, headline, results"):
        run_record.write_record(tmp_path, tmp_path / "r.json")
    NotebookResults.now("01-x", {}, {"device": "cpu"}, {}, {}).write(tmp_path / "results")
    with pytest.raises(SystemExit, match="run.json is missing: a record states how each notebook was run"):
        run_record.write_record(tmp_path, tmp_path / "r.json")
    RunLog("full", "auto").write(tmp_path)
    with pytest.raises(SystemExit, match="says nothing of 01-x"):
        run_record.write_record(tmp_path, tmp_path / "r.json")
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize(
    "gpu,label", [("NVIDIA H200", "h200"), (None, "cpu"), ("NVIDIA GeForce RTX 4090", "geforce-rtx-4090")]
)
def test_machine_label(gpu, label) -> None:
    assert run_record.machine_label({"gpu": gpu}) == label


def test_a_default_record_name_says_the_gpus_and_never_overwrites(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(run_record, "RESULTS", tmp_path / "results")
    run = tmp_path / "run"
    (run / "results").mkdir(parents=True)
    NotebookResults(
        "04-x", "2026-12-01T10:00:00+00:00", {"gpu": "NVIDIA H200", "gpu_count": 2}, {"device": "gpu"}, {}, {}
    ).write(run / "results")
    RunLog("full", "gpu", {"04-x": LoggedNotebook(1.0, True, None, {}, "x", "y")}).write(run)
    first = run_record.write_record(run)
    assert first == tmp_path / "results" / "h200-x2-2026-12-01.json"
    written = first.read_bytes()
    assert run_record.write_record(run) == tmp_path / "results" / "h200-x2-2026-12-01-2.json"
    assert first.read_bytes() == written  # the day's first record is left as it was
