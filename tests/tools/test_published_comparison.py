"""The results page's comparison with the figures DALI's own tutorials printed
(tools.published_comparison), which each notebook's metadata names (`published`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes import H200
from fakes import fake_entry
from fakes import fake_goal
from fakes import fake_notebook
from fakes import fake_record

from helpers.data import registry
from helpers.data.paths import REPO_ROOT
from tools import published_comparison


def _published_records(tmp_path: Path, gpu_over_cpu: float, capture_over_eager: float) -> Path:
    results = tmp_path / "results"
    results.mkdir()
    (results / "seed.json").write_text(
        json.dumps(
            {
                "notebooks": {
                    "01-getting-started": {
                        "headline": {
                            "cpu_decode_img_s_4_threads": 4000.0,
                            "gpu_decode_img_s_4_threads": 16000.0,
                            "gpu_over_cpu_4_threads": 4.0,
                        }
                    },
                    "02-capture-mode": {
                        "headline": {
                            "eager_samples_per_s": 30000,
                            "capture_samples_per_s": 45000,
                            "capture_over_eager": 1.5,
                        }
                    },
                }
            }
        )
    )
    seed = json.loads((results / "seed.json").read_text())
    committed = json.loads((REPO_ROOT / "results" / "seed.json").read_text())["notebooks"]
    for name, entry in seed["notebooks"].items():  # the seed labels its own figures
        entry["labels"] = committed[name]["labels"]
    (results / "seed.json").write_text(json.dumps(seed))
    for name, interval in (("01-getting-started", ["goals", "g"]), ("02-capture-mode", None)):
        spec = {"label": "x", **({"interval": interval} if interval else {})}
        key = "gpu_over_cpu" if name.startswith("01") else "capture_over_eager"
        # the figures compared are the committed notebooks' `published` (helpers.data.registry)
        published = [dict(p) for p in registry.entry(name).published]
        fake_notebook(
            tmp_path / "notebooks" / f"{name}.ipynb",
            {**fake_entry(name), "headline": {key: spec}, "published": published},
        )
    fake_record(
        results / "gpu.json",
        "2026-03-02T09:00:00+00:00",
        {
            "01-getting-started": {
                "headline": {
                    "cpu_decode_img_s": 2000.0,
                    "gpu_decode_img_s": 8000.0,
                    "gpu_over_cpu": gpu_over_cpu,
                },
                "results": {"goals": {"g": fake_goal(gpu_over_cpu, 3.5, 4.5, "met")}},
            },
            "02-capture-mode": {
                "headline": {
                    "eager_samples_per_s": 10000.0,
                    "capture_samples_per_s": 15000.0,
                    "capture_over_eager": capture_over_eager,
                }
            },
        },
        machine=H200,
    )
    return results


def test_the_published_comparison_is_computed_from_the_records(tmp_path: Path) -> None:
    text = published_comparison.render_published_comparison(_published_records(tmp_path, 4.1, 1.6))
    assert "reads 2.0 to 3.0 times below" in text  # 4000/2000 .. 30000/10000
    assert "2,000 against 4,000 images/s for CPU decoding in 01" in text
    assert "10,000 against 30,000 samples/s for eager training in 02" in text
    assert (
        "The ratios are closer: the GPU decodes 4.10 times (95% interval 3.50-4.50) as fast as the "
        "CPU at 4 threads here, against 4.00 in the tutorial"
    ) in text
    assert "capture mode trains 1.60 times as fast as eager mode here, against 1.50" in text


def test_figures_of_two_gpus_side_by_side_each_name_theirs(tmp_path: Path) -> None:
    results = _published_records(tmp_path, 4.1, 1.6)
    record = json.loads((results / "gpu.json").read_text())
    record["notebooks"] = {"02-capture-mode": record["notebooks"]["02-capture-mode"]}
    record["machine"] = {**record["machine"], "gpu": "NVIDIA H100", "gpu_count": 1}
    record["created"] = "2026-03-03T09:00:00+00:00"
    (results / "h100.json").write_text(json.dumps(record))  # 02 newer, on an H100
    rows = published_comparison.render_published_table(results).splitlines()
    assert "| 01 · CPU decode, 4 threads (img/s) | 4,000 | 2,000 (NVIDIA H200) |" in rows
    assert "| 02 · capture / eager | 1.50x | 1.60x (NVIDIA H100) |" in rows
    text = published_comparison.render_published_comparison(results)
    assert "10,000 (NVIDIA H100) against 30,000 samples/s for eager training in 02" in text
    assert "capture mode trains 1.60 times as fast as eager mode here (NVIDIA H100), against 1.50" in text
    (results / "h100.json").unlink()  # one GPU: no names
    assert "(NVIDIA H" not in published_comparison.render_published_comparison(results)


def test_the_published_comparison_says_closer_only_when_it_is(tmp_path: Path) -> None:
    text = published_comparison.render_published_comparison(_published_records(tmp_path, 12.0, 1.6))
    assert "The ratios: the GPU decodes 12.00 times" in text and "closer" not in text


def test_the_published_comparison_without_a_gpu_record_says_so(tmp_path: Path) -> None:
    assert "nothing to set beside" in published_comparison.render_published_comparison(tmp_path)


def test_the_published_table_sets_every_seed_figure_beside_the_newest_gpu_record(tmp_path: Path) -> None:
    results = _published_records(tmp_path, 4.1, 1.6)
    rows = published_comparison.render_published_table(results).splitlines()
    assert rows[0] == (
        "| Figure | DALI's tutorials, as published | 2x NVIDIA H200, full scale, "
        "device auto → cpu (2026-03-02) |"
    )
    assert "| 01 · CPU decode, 4 threads (img/s) | 4,000 | 2,000 |" in rows
    assert (
        "| 01 · GPU / CPU decode, default hw_decoder_load, 4 threads | 4.00x | 4.10x [3.50x–4.50x] |" in rows
    )
    assert len([r for r in rows if r.startswith("| 0")]) == 6  # every figure of the seed
    assert published_comparison.render_published_table(
        results
    ) in published_comparison.render_published_comparison(results)


def test_a_published_figure_missing_from_the_seed_is_named(tmp_path: Path) -> None:
    """A notebook's metadata that sets a figure beside one the seed lacks gets an error that says
    what to add to results/seed.json, not a KeyError."""
    results = _published_records(tmp_path, 4.1, 1.6)
    path = tmp_path / "notebooks" / "02-capture-mode.ipynb"
    node = json.loads(path.read_text())
    node["metadata"]["dali_tutorials"]["published"].append(
        {"seed": "steps_per_s", "key": "capture_samples_per_s", "kind": "rate", "what": "steps/s"}
    )
    path.write_text(json.dumps(node))
    with pytest.raises(
        ValueError, match=r"seed.json holds no published figure for 02-capture-mode: steps_per_s"
    ):
        published_comparison.render_published_comparison(results)
