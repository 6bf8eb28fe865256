"""The results page's table per notebook (tools.notebook_tables): a column per record that holds the
notebook, in the order of the records' dates, rows labelled by the notebooks' metadata."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes import H200
from fakes import fake_entry
from fakes import fake_notebook
from fakes import fake_record

from helpers.data.paths import REPO_ROOT
from tools import inventory
from tools import notebook_tables
from tools import run_record
from tools.record_format import RecordError


def test_results_columns_follow_the_recorded_dates_not_the_names(tmp_path: Path) -> None:
    results = tmp_path / "results"
    fake_record(
        results / "a-late.json",
        "2026-03-02T09:00:00+00:00",
        {"01-getting-started": {"headline": {"cpu_decode_img_s_4_threads": 2000.0}}},
        machine=H200,
        run={
            "scale": "full",
            "device_asked": "gpu",
            "device": "gpu",
            "parameters": {},
            "command": "x",
            "commit": "y",
        },
    )
    fake_record(
        results / "z-early.json",
        "2026-03-01T09:00:00+00:00",
        {"01-getting-started": {"headline": {"cpu_decode_img_s_4_threads": 1000.0}}},
    )
    table = notebook_tables.render_notebook_table("01-getting-started", results)
    header, _, first_row = table.splitlines()[:3]
    assert header == (
        "| Figure | CPU only, 2 cores, full scale, device auto → cpu (2026-03-01) | "
        "2x NVIDIA H200, full scale, device gpu (2026-03-02) |"
    )
    # a key that no notebook's metadata labels is its own label (refused in committed records)
    assert first_row == "| cpu_decode_img_s_4_threads | 1,000 | 2,000 |"
    # only notebooks that some record holds get a table
    sections = notebook_tables.render_notebook_tables(results)
    assert "### 01 · 01-getting-started" in sections and "### 02" not in sections


def _bench_run_folder(folder: Path) -> Path:
    """What `make bench` (tools.suite bench --device auto) leaves on a machine without a GPU."""
    (folder / "results").mkdir(parents=True)
    document = {
        "notebook": "01-getting-started",
        "created": "2026-12-01T10:00:00+00:00",
        "machine": {"gpu": None, "gpu_count": 0, "cpu_count": 2, "cpu": "x"},
        "parameters": {"device": "cpu", "threads": 4, "trials": 5},
        "headline": {"cpu_decode_img_s": 1234.5},
        "results": {"reference_threads": 4},
    }
    (folder / "results" / "01-getting-started.json").write_text(json.dumps(document))
    (folder / "run.json").write_text(
        json.dumps(
            {
                "scale": "bench",
                "device_asked": "auto",
                "notebooks": {
                    "01-getting-started": {
                        "seconds": 80.0,
                        "ok": True,
                        "error": None,
                        "parameters": {"trials": 5},
                        "command": "python -m tools.suite bench --device auto",
                        "commit": "0123abc",
                    }
                },
            }
        )
    )
    return folder


def test_a_cpu_bench_record_is_labelled_as_a_cpu_bench_run(tmp_path: Path) -> None:
    root = tmp_path / "checkout"
    fake_notebook(
        root / "notebooks" / "01-getting-started.ipynb",
        {
            **fake_entry("First"),
            "headline": {
                "cpu_decode_img_s": {"label": "CPU decode, {threads} threads (img/s)", "format": "{:,.0f}"}
            },
        },
    )
    path = run_record.write_record(
        _bench_run_folder(tmp_path / "run"), root / "results" / "cpu-2026-12-01.json"
    )
    entry = json.loads(path.read_text())["notebooks"]["01-getting-started"]
    assert entry["run"] == {
        "scale": "bench",
        "device_asked": "auto",
        "device": "cpu",
        "parameters": {"trials": 5},
        "command": "python -m tools.suite bench --device auto",
        "commit": "0123abc",
    }
    assert entry["seconds"] == 80.0
    table = notebook_tables.render_notebook_table("01-getting-started", root / "results")
    assert "| CPU only, 2 cores, bench scale, device auto → cpu (2026-12-01) |" in table.splitlines()[0]
    assert "| CPU decode, 4 threads (img/s) | 1,234 |" in table
    # a bench run is not the notebooks' defaults: no runtime in the inventory
    assert "— / —" in inventory.render_inventory(root)


def test_labels_are_filled_from_each_records_parameters(tmp_path: Path) -> None:
    root = tmp_path / "checkout"
    fake_notebook(
        root / "notebooks" / "01-x.ipynb",
        {
            **fake_entry("X"),
            "headline": {
                "rate": {"label": "decode, {threads} threads, {reference} (img/s)"},
                "ratio": {"label": "GPU / CPU", "format": "{:.2f}x"},
            },
        },
    )
    for name, threads, day in (("a.json", 4, "01"), ("b.json", 8, "02"), ("c.json", 4, "03")):
        fake_record(
            root / "results" / name,
            f"2026-03-{day}T09:00:00+00:00",
            {
                "01-x": {
                    "headline": {"rate": 1000.0 * threads, "ratio": 2.0},
                    "results": {"reference": "r"},
                    "parameters": {"threads": threads},
                }
            },
        )
    table = notebook_tables.render_notebook_table("01-x", root / "results")
    assert "| decode, 4 threads, r (img/s) | 4,000 | — | 4,000 |" in table
    assert "| decode, 8 threads, r (img/s) | — | 8,000 | — |" in table
    assert "| GPU / CPU | 2.00x | 2.00x | 2.00x |" in table
    fake_record(
        root / "results" / "d.json", "2026-03-04T09:00:00+00:00", {"01-x": {"headline": {"rate": 1.0}}}
    )
    with pytest.raises(ValueError, match=r"d.json, 01-x.rate: the label .* needs threads, reference"):
        notebook_tables.render_notebook_tables(root / "results")


def test_an_older_key_and_a_newer_one_with_the_same_label_share_a_row(tmp_path: Path) -> None:
    """An older record's key with the parameter value in its name (``..._4_threads``) and a newer
    record's parameter-free key whose filled label reads the same land in the same row."""
    root = tmp_path / "checkout"
    label = {"label": "CPU decode, {reference_threads} threads (img/s)", "format": "{:,.0f}"}
    old = {"label": "CPU decode, 4 threads (img/s)", "format": "{:,.0f}"}
    fake_notebook(
        root / "notebooks" / "01-getting-started.ipynb",
        {**fake_entry("First"), "headline": {"cpu_decode_img_s": label, "cpu_decode_img_s_4_threads": old}},
    )
    fake_record(
        root / "results" / "old.json",
        "2026-03-01T09:00:00+00:00",
        {"01-getting-started": {"headline": {"cpu_decode_img_s_4_threads": 1000.0}}},
    )
    fake_record(
        root / "results" / "new.json",
        "2026-03-02T09:00:00+00:00",
        {
            "01-getting-started": {
                "headline": {"cpu_decode_img_s": 1500.0},
                "results": {"reference_threads": 4},
            }
        },
    )
    rows = notebook_tables.render_notebook_table("01-getting-started", root / "results").splitlines()[2:]
    assert rows == ["| CPU decode, 4 threads (img/s) | 1,000 | 1,500 |"]
    fake_record(
        root / "results" / "both.json",
        "2026-03-03T09:00:00+00:00",
        {
            "01-getting-started": {
                "headline": {"cpu_decode_img_s": 1.0, "cpu_decode_img_s_4_threads": 2.0},
                "results": {"reference_threads": 4},
            }
        },
    )
    with pytest.raises(ValueError, match="another headline key of this record has the label"):
        notebook_tables.render_notebook_table("01-getting-started", root / "results")


def test_a_record_without_run_facts_is_refused_naming_what_it_lacks(tmp_path: Path) -> None:
    (tmp_path / "old.json").write_text(
        json.dumps(
            {
                "machine": {"gpu": None, "cpu_count": 2},
                "date": "2026-01-01",
                "notebooks": {
                    "01-getting-started": {
                        "created": "2026-01-01T00:00:00",
                        "parameters": {},
                        "headline": {"cpu_decode_img_s": 5.0},
                    }
                },
            }
        )
    )
    with pytest.raises(RecordError, match="notebooks.01-getting-started lacks results, seconds, run"):
        notebook_tables.render_notebook_table("01-getting-started", tmp_path)


def test_a_record_without_a_date_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text(json.dumps({"notebooks": {"01-getting-started": {}}}))
    with pytest.raises(RecordError, match="x.json lacks machine, date"):
        notebook_tables.render_notebook_tables(tmp_path)


def test_every_committed_headline_key_has_a_label() -> None:
    """A headline key reaches the README with a label from its notebook's metadata
    (metadata.dali_tutorials.headline); the seed's figures, from the seed's own labels."""
    labels = notebook_tables.headline_labels(REPO_ROOT / "notebooks")
    missing = sorted(
        {
            (name, key)
            for path in (REPO_ROOT / "results").glob("*.json")
            for name, nb in json.loads(path.read_text())["notebooks"].items()
            for key in nb.get("headline", {})
            if path.name != "seed.json" and key not in labels.get(name, {})
        }
    )
    assert not missing, f"label these headline keys in their notebook's metadata: {missing}"
    seed = json.loads((REPO_ROOT / "results" / "seed.json").read_text())["notebooks"]
    assert all(set(nb["labels"]) == set(nb["headline"]) for nb in seed.values())


def test_records_of_alike_machines_on_one_day_are_told_apart_by_their_files(tmp_path: Path) -> None:
    fake_record(
        tmp_path / "h200-day.json",
        "2026-03-02T09:00:00+00:00",
        {"01-y": {"headline": {"a": 1.0}}},
        machine={**H200, "gpu_count": 1},
    )
    fake_record(
        tmp_path / "h200-day-photos.json",
        "2026-03-02T10:00:00+00:00",
        {"05-z": {"headline": {"b": 2.0}}},
        machine={**H200, "gpu_count": 1},
    )
    fake_record(tmp_path / "cpu.json", "2026-03-03T09:00:00+00:00", {"01-y": {"headline": {"a": 3.0}}})
    headings = [c.heading for c in notebook_tables.columns_of(tmp_path)]
    assert headings == [
        "NVIDIA H200, full scale, device auto → cpu (2026-03-02, h200-day.json)",
        "NVIDIA H200, full scale, device auto → cpu (2026-03-02, h200-day-photos.json)",
        "CPU only, 2 cores, full scale, device auto → cpu (2026-03-03)",
    ]


def test_a_notebook_table_has_a_column_only_for_the_records_that_hold_it(tmp_path: Path) -> None:
    fake_record(
        tmp_path / "both.json",
        "2026-03-01T09:00:00+00:00",
        {"01-y": {"headline": {"a": 1.0}}, "02-z": {"headline": {"b": 2.0}}},
    )
    fake_record(
        tmp_path / "gpu.json", "2026-03-02T09:00:00+00:00", {"02-z": {"headline": {"b": 3.0}}}, machine=H200
    )
    fake_record(tmp_path / "empty.json", "2026-03-03T09:00:00+00:00", {"01-y": {"headline": {}}})
    first = notebook_tables.render_notebook_table("01-y", tmp_path).splitlines()
    assert first[0] == "| Figure | CPU only, 2 cores, full scale, device auto → cpu (2026-03-01) |"
    assert first[2] == "| a | 1 |"
    second = notebook_tables.render_notebook_table("02-z", tmp_path).splitlines()
    assert second[0].count(" | ") == 2 and second[2] == "| b | 2 | 3 |"
    sections = notebook_tables.render_notebook_tables(tmp_path, prefix="../../")
    assert "[both.json](../../results/both.json) and [gpu.json](../../results/gpu.json)." in sections
    assert "empty.json" not in sections
