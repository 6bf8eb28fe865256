"""The README's generated tables: the notebook inventory (tools.inventory, from the notebooks'
metadata and measured runtimes) and the results table (tools.results_table, from results/)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from helpers.paths import REPO_ROOT
from tools import inventory, results_table


def _notebook(path: Path, meta: dict[str, Any] | None, duration: float | None = None) -> None:
    metadata: dict[str, Any] = {}
    if meta is not None:
        metadata["dali_tutorials"] = meta
    if duration is not None:
        metadata["papermill"] = {"duration": duration}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"cells": [], "metadata": metadata, "nbformat": 4,
                                "nbformat_minor": 5}))


def _record(path: Path, created: str, notebooks: dict[str, dict[str, Any]],
            machine: dict[str, Any] | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({
        "machine": machine or {"gpu": None, "cpu_count": 2}, "date": created[:10],
        "notebooks": {name: {"created": created, "parameters": {"trials": 2}, **fields}
                      for name, fields in notebooks.items()}}))


def _meta(title: str) -> dict[str, Any]:
    return {"title": title, "learn": f"what {title} teaches", "needs_gpu": "No: runs on a CPU",
            "scales": {"ci": {}, "bench": {}}}


def test_readme_inventory_matches_the_notebooks() -> None:
    assert inventory.main(["--check"]) == 0
    assert inventory.render_inventory() in (REPO_ROOT / "README.md").read_text()


def test_readme_results_table_matches_the_json() -> None:
    assert results_table.main(["--check"]) == 0
    assert results_table.render_results_table() in (REPO_ROOT / "README.md").read_text()


def test_inventory_is_read_from_metadata_and_measured_runs(tmp_path: Path) -> None:
    _notebook(tmp_path / "notebooks" / "01-first.ipynb", _meta("First | one"), duration=58.3)
    _notebook(tmp_path / "notebooks" / "02-second.ipynb", _meta("Second"))  # not executed
    # named in the opposite order of their dates: the newer record by date is the one shown
    _record(tmp_path / "results" / "cpu-b.json", "2026-01-01T10:00:00+00:00",
            {"01-first": {"seconds": 99.0, "headline": {}}})
    _record(tmp_path / "results" / "cpu-a.json", "2026-02-01T10:00:00+00:00",
            {"01-first": {"seconds": 31.2, "headline": {}}})
    table = inventory.render_inventory(tmp_path)
    rows = [line for line in table.splitlines() if line.startswith("| 0")]
    assert rows == [
        ("| 01 | [First \\| one](notebooks/01-first.ipynb) | what First \\| one teaches | "
         "No: runs on a CPU | 31 s / 58 s |"),
        ("| 02 | [Second](notebooks/02-second.ipynb) | what Second teaches | No: runs on a CPU | "
         "— / — |")]
    assert "[cpu-a.json](results/cpu-a.json)" in table


def test_inventory_names_a_notebook_without_its_metadata(tmp_path: Path) -> None:
    _notebook(tmp_path / "notebooks" / "01-first.ipynb", {"title": "First", "scales": {}})
    with pytest.raises(ValueError, match=r"01-first.ipynb: .*lacks learn, needs_gpu"):
        inventory.render_inventory(tmp_path)


def test_results_columns_follow_the_recorded_dates_not_the_names(tmp_path: Path) -> None:
    _record(tmp_path / "a-late.json", "2026-03-02T09:00:00+00:00",
            {"01-getting-started": {"headline": {"cpu_decode_img_s_4_threads": 2000.0}}},
            machine={"gpu": "NVIDIA H200"})
    _record(tmp_path / "z-early.json", "2026-03-01T09:00:00+00:00",
            {"01-getting-started": {"headline": {"cpu_decode_img_s_4_threads": 1000.0}}})
    table = results_table.render_results_table(tmp_path)
    header, _, first_row = table.splitlines()[:3]
    assert header.index("CPU only, 2 cores") < header.index("NVIDIA H200")
    assert first_row.startswith("| 01 · CPU decode") and first_row.endswith("| 1,000 | 2,000 |")
    # rows that no record fills (notebook 02 here) show a dash, not an error
    assert "| 02 · capture / eager | — | — |" in table


def test_a_record_without_a_date_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text(json.dumps({"notebooks": {"01-getting-started": {}}}))
    with pytest.raises(ValueError, match="x.json records no date"):
        results_table.render_results_table(tmp_path)


def test_every_committed_headline_key_has_a_row() -> None:
    """A new notebook's headline keys reach the README once they are rows of ROWS."""
    rows = {(row.notebook, row.key) for row in results_table.ROWS}
    missing = sorted({(name, key) for path in (REPO_ROOT / "results").glob("*.json")
                      for name, nb in json.loads(path.read_text())["notebooks"].items()
                      for key in nb.get("headline", {})} - rows)
    assert not missing, f"add rows to tools.results_table.ROWS for {missing}"


@pytest.mark.parametrize("module", [inventory, results_table], ids=["inventory", "results"])
def test_check_fails_on_a_stale_block_and_the_rewrite_fixes_it(module: Any, tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n<!-- {module.BLOCK}:start -->\nstale\n<!-- {module.BLOCK}:end -->\n\ntail\n")
    assert module.main(["--check", "--readme", str(readme)]) == 1
    assert "stale" in readme.read_text()  # --check writes nothing
    assert module.main(["--readme", str(readme)]) == 0
    assert module.main(["--check", "--readme", str(readme)]) == 0
    assert readme.read_text().endswith("\n\ntail\n") and "stale" not in readme.read_text()
    readme.write_text("# no block\n")
    assert module.main(["--check", "--readme", str(readme)]) == 1
