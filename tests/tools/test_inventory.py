"""The README's notebook inventory (tools.inventory): read from the notebooks' metadata and the
measured runtimes of the records."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes import H200
from fakes import fake_entry
from fakes import fake_notebook
from fakes import fake_record

from helpers.data.paths import REPO_ROOT
from tools import inventory


def test_readme_inventory_matches_the_notebooks() -> None:
    assert inventory.main(["--check"]) == 0
    assert inventory.render_inventory() in (REPO_ROOT / "README.md").read_text()


def test_inventory_is_read_from_metadata_and_measured_runs(tmp_path: Path) -> None:
    fake_notebook(tmp_path / "notebooks" / "01-first.ipynb", fake_entry("First | one"))
    fake_notebook(tmp_path / "notebooks" / "02-second.ipynb", fake_entry("Second"))
    # named in the opposite order of their dates: the newer record by date is the one shown
    fake_record(
        tmp_path / "results" / "b.json",
        "2026-01-01T10:00:00+00:00",
        {"01-first": {"seconds": 99.0, "headline": {}}},
    )
    fake_record(
        tmp_path / "results" / "a.json",
        "2026-02-01T10:00:00+00:00",
        {"01-first": {"seconds": 31.2, "headline": {}}},
    )
    fake_record(
        tmp_path / "results" / "gpu.json",
        "2026-01-15T10:00:00+00:00",
        {"01-first": {"seconds": 58.3, "headline": {}}},
        machine=H200,
    )
    # newer, of one GPU, without notebook 01: notebook 02's runtime comes from there
    fake_record(
        tmp_path / "results" / "gpu-02.json",
        "2026-01-16T10:00:00+00:00",
        {"02-second": {"seconds": 100.0, "headline": {}}},
        machine={**H200, "gpu_count": 1},
    )
    # newer, but at bench scale: not the notebooks' defaults, so not a runtime of the table
    fake_record(
        tmp_path / "results" / "cpu-bench.json",
        "2026-03-01T10:00:00+00:00",
        {"01-first": {"seconds": 500.0, "headline": {}}},
        run={
            "scale": "bench",
            "device_asked": "auto",
            "device": "cpu",
            "parameters": {},
            "command": "x",
            "commit": "y",
        },
    )
    table = inventory.render_inventory(tmp_path)
    header = table.splitlines()[0]
    assert header.endswith("| Runtime: CPU only, 2 cores / 2x NVIDIA H200 or NVIDIA H200 |")
    rows = [line for line in table.splitlines() if line.startswith("| 0")]
    assert rows == [
        (
            "| 01 | [First \\| one](notebooks/01-first.ipynb) | what First \\| one teaches | "
            "No: runs on a CPU | 31 s / 58 s |"
        ),
        (
            "| 02 | [Second](notebooks/02-second.ipynb) | what Second teaches | No: runs on a CPU | "
            "— / 1.7 min |"
        ),
    ]
    assert (
        "[a.json](results/a.json) and [gpu.json](results/gpu.json) and [gpu-02.json](results/gpu-02.json)"
    ) in table


def test_inventory_without_records_says_so(tmp_path: Path) -> None:
    fake_notebook(tmp_path / "notebooks" / "01-first.ipynb", fake_entry("First"))
    (tmp_path / "results").mkdir()
    table = inventory.render_inventory(tmp_path)
    assert "Runtime: — / — |" in table.splitlines()[0] and "— (none yet)" in table


def test_inventory_names_a_notebook_without_its_metadata(tmp_path: Path) -> None:
    fake_notebook(tmp_path / "notebooks" / "01-first.ipynb", {"title": "First", "scales": {}})
    with pytest.raises(ValueError, match=r"01-first.ipynb: .*lacks learn, needs_gpu"):
        inventory.render_inventory(tmp_path)
