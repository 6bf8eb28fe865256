"""The README's generated tables: the notebook inventory (tools.inventory, from the notebooks'
metadata and measured runtimes) and the results table (tools.results_table, from results/)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from helpers.paths import REPO_ROOT
from tools import inventory, results_table, suite


def module_blocks(module: Any) -> list[str]:
    return list(getattr(module, "BLOCKS", [module.BLOCK]))


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
            machine: dict[str, Any] | None = None, run: dict[str, Any] | None = None) -> None:
    """A record as tools.suite.write_record writes it (``run``: how every notebook ran)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    run = run or {"scale": "full", "device": "auto", "parameters": {}, "command": "python -m tools.suite run",
                  "commit": "abc"}
    path.write_text(json.dumps({
        "machine": machine or {"gpu": None, "gpu_count": 0, "cpu_count": 2}, "date": created[:10],
        "notebooks": {name: {"created": created, "parameters": {"trials": 2}, "results": {}, "run": run,
                             **fields}
                      for name, fields in notebooks.items()}}))


def _meta(title: str) -> dict[str, Any]:
    return {"title": title, "learn": f"what {title} teaches", "needs_gpu": "No: runs on a CPU",
            "scales": {"ci": {}, "bench": {}}}


def test_readme_inventory_matches_the_notebooks() -> None:
    assert inventory.main(["--check"]) == 0
    assert inventory.render_inventory() in (REPO_ROOT / "README.md").read_text()


def test_readme_results_and_goals_tables_match_the_json() -> None:
    assert results_table.main(["--check"]) == 0
    readme = (REPO_ROOT / "README.md").read_text()
    assert results_table.render_results_table() in readme and results_table.render_goals_table() in readme


H200 = {"gpu": "NVIDIA H200", "gpu_count": 2, "cpu_count": 32}


def test_inventory_is_read_from_metadata_and_measured_runs(tmp_path: Path) -> None:
    _notebook(tmp_path / "notebooks" / "01-first.ipynb", _meta("First | one"))
    _notebook(tmp_path / "notebooks" / "02-second.ipynb", _meta("Second"))
    # named in the opposite order of their dates: the newer record by date is the one shown
    _record(tmp_path / "results" / "b.json", "2026-01-01T10:00:00+00:00",
            {"01-first": {"seconds": 99.0, "headline": {}}})
    _record(tmp_path / "results" / "a.json", "2026-02-01T10:00:00+00:00",
            {"01-first": {"seconds": 31.2, "headline": {}}})
    _record(tmp_path / "results" / "gpu.json", "2026-01-15T10:00:00+00:00",
            {"01-first": {"seconds": 58.3, "headline": {}}}, machine=H200)
    # newer, of one GPU, without notebook 01: notebook 02's runtime comes from there
    _record(tmp_path / "results" / "gpu-02.json", "2026-01-16T10:00:00+00:00",
            {"02-second": {"seconds": 100.0, "headline": {}}}, machine={**H200, "gpu_count": 1})
    # newer, but at bench scale: not the notebooks' defaults, so not a runtime of the table
    _record(tmp_path / "results" / "cpu-bench.json", "2026-03-01T10:00:00+00:00",
            {"01-first": {"seconds": 500.0, "headline": {}}},
            run={"scale": "bench", "device": "auto", "parameters": {}, "command": "x", "commit": "y"})
    table = inventory.render_inventory(tmp_path)
    header = table.splitlines()[0]
    assert header.endswith("| Runtime: CPU only, 2 cores / 2x NVIDIA H200 or NVIDIA H200 |")
    rows = [line for line in table.splitlines() if line.startswith("| 0")]
    assert rows == [
        ("| 01 | [First \\| one](notebooks/01-first.ipynb) | what First \\| one teaches | "
         "No: runs on a CPU | 31 s / 58 s |"),
        ("| 02 | [Second](notebooks/02-second.ipynb) | what Second teaches | No: runs on a CPU | "
         "— / 1.7 min |")]
    assert ("[a.json](results/a.json) and [gpu.json](results/gpu.json) and "
            "[gpu-02.json](results/gpu-02.json)") in table


def test_inventory_without_records_says_so(tmp_path: Path) -> None:
    _notebook(tmp_path / "notebooks" / "01-first.ipynb", _meta("First"))
    (tmp_path / "results").mkdir()
    table = inventory.render_inventory(tmp_path)
    assert "Runtime: — / — |" in table.splitlines()[0] and "— (none yet)" in table


def test_inventory_names_a_notebook_without_its_metadata(tmp_path: Path) -> None:
    _notebook(tmp_path / "notebooks" / "01-first.ipynb", {"title": "First", "scales": {}})
    with pytest.raises(ValueError, match=r"01-first.ipynb: .*lacks learn, needs_gpu"):
        inventory.render_inventory(tmp_path)


def test_results_columns_follow_the_recorded_dates_not_the_names(tmp_path: Path) -> None:
    results = tmp_path / "results"
    _record(results / "a-late.json", "2026-03-02T09:00:00+00:00",
            {"01-getting-started": {"headline": {"cpu_decode_img_s_4_threads": 2000.0}}}, machine=H200,
            run={"scale": "full", "device": "gpu", "parameters": {}, "command": "x", "commit": "y"})
    _record(results / "z-early.json", "2026-03-01T09:00:00+00:00",
            {"01-getting-started": {"headline": {"cpu_decode_img_s_4_threads": 1000.0}}})
    table = results_table.render_results_table(results)
    header, _, first_row = table.splitlines()[:3]
    assert header == ("| Figure | CPU only, 2 cores, full scale, device auto → unknown (2026-03-01) | "
                      "2x NVIDIA H200, full scale, device gpu (2026-03-02) |")
    # a legacy key (its label carries the parameter value of the old runs)
    assert first_row == "| 01 · CPU decode, 4 threads (img/s) | 1,000 | 2,000 |"
    # only keys that some record holds are rows
    assert "02 ·" not in table


def _bench_run_folder(folder: Path) -> Path:
    """What `make bench` (tools.suite bench --device auto) leaves on a machine without a GPU."""
    (folder / "results").mkdir(parents=True)
    document = {"created": "2026-12-01T10:00:00+00:00",
                "machine": {"gpu": None, "gpu_count": 0, "cpu_count": 2, "cpu": "x"},
                "parameters": {"device": "cpu", "threads": 4, "trials": 5},
                "headline": {"cpu_decode_img_s": 1234.5}, "results": {"reference_threads": 4}}
    (folder / "results" / "01-getting-started.json").write_text(json.dumps(document))
    (folder / "run.json").write_text(json.dumps({
        "scale": "bench", "device": "auto",
        "notebooks": {"01-getting-started": {"seconds": 80.0, "ok": True, "error": None,
                                             "parameters": {"trials": 5},
                                             "command": "python -m tools.suite bench --device auto",
                                             "commit": "0123abc"}}}))
    return folder


def test_a_cpu_bench_record_is_labelled_as_a_cpu_bench_run(tmp_path: Path) -> None:
    root = tmp_path / "checkout"
    _notebook(root / "notebooks" / "01-getting-started.ipynb", {
        **_meta("First"),
        "headline": {"cpu_decode_img_s": {"label": "CPU decode, {threads} threads (img/s)",
                                          "format": "{:,.0f}"}}})
    path = suite.write_record(_bench_run_folder(tmp_path / "run"), root / "results" / "cpu-2026-12-01.json")
    entry = json.loads(path.read_text())["notebooks"]["01-getting-started"]
    assert entry["run"] == {"scale": "bench", "device": "auto", "parameters": {"trials": 5},
                            "command": "python -m tools.suite bench --device auto", "commit": "0123abc"}
    assert entry["seconds"] == 80.0
    table = results_table.render_results_table(root / "results")
    assert "| CPU only, 2 cores, bench scale, device auto → cpu (2026-12-01) |" in table.splitlines()[0]
    assert "| 01 · CPU decode, 4 threads (img/s) | 1,234 |" in table
    # a bench run is not the notebooks' defaults: no runtime in the inventory
    assert "— / —" in inventory.render_inventory(root)


def test_labels_are_filled_from_each_records_parameters(tmp_path: Path) -> None:
    root = tmp_path / "checkout"
    _notebook(root / "notebooks" / "01-x.ipynb", {
        **_meta("X"), "headline": {"rate": {"label": "decode, {threads} threads, {reference} (img/s)"},
                                   "ratio": {"label": "GPU / CPU", "format": "{:.2f}x"}}})
    for name, threads, day in (("a.json", 4, "01"), ("b.json", 8, "02"), ("c.json", 4, "03")):
        _record(root / "results" / name, f"2026-03-{day}T09:00:00+00:00",
                {"01-x": {"headline": {"rate": 1000.0 * threads, "ratio": 2.0}, "results": {"reference": "r"},
                          "parameters": {"threads": threads}}})
    table = results_table.render_results_table(root / "results")
    assert "| 01 · decode, 4 threads, r (img/s) | 4,000 | — | 4,000 |" in table
    assert "| 01 · decode, 8 threads, r (img/s) | — | 8,000 | — |" in table
    assert "| 01 · GPU / CPU | 2.00x | 2.00x | 2.00x |" in table
    _record(root / "results" / "d.json", "2026-03-04T09:00:00+00:00", {"01-x": {"headline": {"rate": 1.0}}})
    with pytest.raises(ValueError, match=r"d.json, 01-x.rate: the label .* needs threads, reference"):
        results_table.render_results_table(root / "results")


def test_an_older_key_and_a_newer_one_with_the_same_label_share_a_row(tmp_path: Path) -> None:
    """The seed and older records keep their keys (``..._4_threads``); a newer record's
    parameter-free key whose filled label reads the same lands in the same row."""
    root = tmp_path / "checkout"
    label = {"label": "CPU decode, {reference_threads} threads (img/s)", "format": "{:,.0f}"}
    _notebook(root / "notebooks" / "01-getting-started.ipynb",
              {**_meta("First"), "headline": {"cpu_decode_img_s": label}})
    _record(root / "results" / "old.json", "2026-03-01T09:00:00+00:00",
            {"01-getting-started": {"headline": {"cpu_decode_img_s_4_threads": 1000.0}}})
    _record(root / "results" / "new.json", "2026-03-02T09:00:00+00:00",
            {"01-getting-started": {"headline": {"cpu_decode_img_s": 1500.0},
                                    "results": {"reference_threads": 4}}})
    rows = results_table.render_results_table(root / "results").splitlines()[2:-2]
    assert rows == ["| 01 · CPU decode, 4 threads (img/s) | 1,000 | 1,500 |"]
    _record(root / "results" / "both.json", "2026-03-03T09:00:00+00:00",
            {"01-getting-started": {"headline": {"cpu_decode_img_s": 1.0, "cpu_decode_img_s_4_threads": 2.0},
                                    "results": {"reference_threads": 4}}})
    with pytest.raises(ValueError, match="another headline key of this record has the label"):
        results_table.render_results_table(root / "results")


def test_a_record_without_run_facts_reads_as_unknown(tmp_path: Path) -> None:
    (tmp_path / "old.json").write_text(json.dumps({
        "machine": {"gpu": None, "cpu_count": 2}, "date": "2026-01-01",
        "notebooks": {"01-getting-started": {"created": "2026-01-01T00:00:00", "parameters": {},
                                             "headline": {"cpu_decode_img_s_4_threads": 5.0}}}}))
    header = results_table.render_results_table(tmp_path).splitlines()[0]
    assert "CPU only, 2 cores, unknown scale, device unknown (2026-01-01)" in header


def test_a_record_without_a_date_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text(json.dumps({"notebooks": {"01-getting-started": {}}}))
    with pytest.raises(ValueError, match="x.json records no date"):
        results_table.render_results_table(tmp_path)


def test_every_committed_headline_key_has_a_label() -> None:
    """A headline key reaches the README with a label from its notebook's metadata
    (metadata.dali_tutorials.headline) or, for older records, from LEGACY_LABELS."""
    labels = results_table.headline_labels(REPO_ROOT / "notebooks")
    missing = sorted({(name, key) for path in (REPO_ROOT / "results").glob("*.json")
                      for name, nb in json.loads(path.read_text())["notebooks"].items()
                      for key in nb.get("headline", {})
                      if key not in labels.get(name, {}) and (name, key) not in results_table.LEGACY_LABELS})
    assert not missing, f"label these headline keys in their notebook's metadata: {missing}"


def _goal(ratio: float, low: float, high: float, verdict: str, **count: int) -> dict[str, Any]:
    return {"ratio": ratio, "ci95": [low, high], "goal": 1.5, "verdict": verdict, **(count or {"trials": 5})}


def test_goals_come_from_the_newest_gpu_record(tmp_path: Path) -> None:
    goals = {"a / b": _goal(1.7, 1.6, 1.8, "met"), "c / d": _goal(1.4, 1.2, 1.45, "not met"),
             "e / f": _goal(1.5, 1.4, 1.6, "inconclusive", launches=3)}
    # notebook 04 ran on another GPU machine, earlier: its goals come from there
    _record(tmp_path / "old-gpu.json", "2026-03-01T09:00:00+00:00",
            {"03-x": {"headline": {}, "results": {"goals": {"old": _goal(9, 8, 10, "met")}}},
             "04-z": {"headline": {}, "results": {"goals": {"w": _goal(1.9, 1.4, 2.0, "inconclusive",
                                                                     launches=3)}}}},
            machine={**H200, "gpu_count": 1})
    _record(tmp_path / "gpu.json", "2026-03-02T09:00:00+00:00",
            {"01-y": {"headline": {}}, "03-x": {"headline": {}, "results": {"goals": goals}}}, machine=H200)
    _record(tmp_path / "cpu.json", "2026-03-03T09:00:00+00:00",
            {"03-x": {"headline": {}, "results": {"goals": {"cpu": _goal(9, 8, 10, "met")}}}})
    table = results_table.render_goals_table(tmp_path)
    assert table.splitlines()[2:8] == [
        "| 01 · no goals recorded | — | — | — | — | — |",
        "| 03 · a / b | >= 1.5x | 1.70x | 1.60x–1.80x | met | 5 trials |",
        "| 03 · c / d | >= 1.5x | 1.40x | 1.20x–1.45x | not met | 5 trials |",
        "| 03 · e / f | >= 1.5x | 1.50x | 1.40x–1.60x | inconclusive | 3 launches |",
        "| 04 · w | >= 1.5x | 1.90x | 1.40x–2.00x | inconclusive | 3 launches |",
        ""]
    assert ("[gpu.json](results/gpu.json) (2x NVIDIA H200, full scale, device auto → unknown, 2026-03-02); "
            "[old-gpu.json](results/old-gpu.json) (NVIDIA H200, full scale") in table


def test_goals_in_the_older_form_show_no_interval(tmp_path: Path) -> None:
    _record(tmp_path / "gpu.json", "2026-03-02T09:00:00+00:00",
            {"03-x": {"headline": {}, "results": {"goals": {"a / b": {"ratio": 0.84, "goal": 0.95,
                                                                        "met": False}}}}}, machine=H200)
    assert "| 03 · a / b | >= 0.95x | 0.84x | — | no interval recorded | — |" in \
        results_table.render_goals_table(tmp_path)


def test_without_a_gpu_record_the_goals_table_says_so(tmp_path: Path) -> None:
    _record(tmp_path / "cpu.json", "2026-03-03T09:00:00+00:00", {"03-x": {"headline": {}}})
    assert "no record of a GPU machine" in results_table.render_goals_table(tmp_path)


@pytest.mark.parametrize("goal,problem", [
    (_goal(1.7, 1.6, 1.8, "inconclusive"), "verdict 'inconclusive', but .* says 'met'"),
    (_goal(1.5, 1.4, 1.6, "met"), "says 'inconclusive'"),
    (_goal(1.4, 1.2, 1.49, "inconclusive"), "says 'not met'"),
    (_goal(2.0, 1.6, 1.8, "met"), "ratio 2 lies outside its interval"),
    ({"ratio": 1.7, "ci95": [1.6, 1.8], "goal": 1.5}, "lacks verdict, trials"),
])
def test_a_verdict_must_follow_its_interval(tmp_path: Path, goal: dict[str, Any], problem: str) -> None:
    assert any(re.search(problem, p) for p in results_table.goal_problems(goal)), \
        results_table.goal_problems(goal)
    _record(tmp_path / "gpu.json", "2026-03-02T09:00:00+00:00",
            {"03-x": {"headline": {}, "results": {"goals": {"g": goal}}}}, machine=H200)
    with pytest.raises(ValueError, match=r"gpu.json, 03-x, goal 'g'"):
        results_table.render_goals_table(tmp_path)


@pytest.mark.parametrize("module", [inventory, results_table], ids=["inventory", "results"])
def test_check_fails_on_a_stale_block_and_the_rewrite_fixes_it(module: Any, tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    blocks = "".join(f"<!-- {name}:start -->\nstale\n<!-- {name}:end -->\n" for name in module_blocks(module))
    readme.write_text(f"# x\n\n{blocks}\ntail\n")
    assert module.main(["--check", "--readme", str(readme)]) == 1
    assert "stale" in readme.read_text()  # --check writes nothing
    assert module.main(["--readme", str(readme)]) == 0
    assert module.main(["--check", "--readme", str(readme)]) == 0
    assert readme.read_text().endswith("\n\ntail\n") and "stale" not in readme.read_text()
    readme.write_text("# no block\n")
    assert module.main(["--check", "--readme", str(readme)]) == 1


def test_goals_that_only_a_cpu_record_holds_are_stated_not_judged(tmp_path: Path) -> None:
    _record(tmp_path / "gpu.json", "2026-03-02T09:00:00+00:00",
            {"01-y": {"headline": {}, "results": {"goals": {"a / b": _goal(1.7, 1.6, 1.8, "met")}}}},
            machine=H200)
    _record(tmp_path / "cpu.json", "2026-03-03T09:00:00+00:00",
            {"01-y": {"headline": {}, "results": {"goals": {"cpu only": _goal(9, 8, 10, "met")}}},
             "04-z": {"headline": {}, "results": {"goals": {"w / v": _goal(1.0, 0.4, 2.6, "inconclusive",
                                                                         launches=3)}}}})
    rows = [r for r in results_table.render_goals_table(tmp_path).splitlines() if r.startswith("| 0")]
    assert rows == ["| 01 · a / b | >= 1.5x | 1.70x | 1.60x–1.80x | met | 5 trials |",
                    "| 04 · w / v | >= 1.5x | — | — | not judged: no GPU run of this notebook's current "
                    "version | — |"]


def _published_records(tmp_path: Path, gpu_over_cpu: float, capture_over_eager: float) -> Path:
    results = tmp_path / "results"
    results.mkdir()
    (results / "seed.json").write_text(json.dumps({"notebooks": {
        "01-getting-started": {"headline": {"cpu_decode_img_s_4_threads": 4000.0,
                                            "gpu_decode_img_s_4_threads": 16000.0,
                                            "gpu_over_cpu_4_threads": 4.0}},
        "02-capture-mode": {"headline": {"eager_samples_per_s": 30000, "capture_samples_per_s": 45000,
                                         "capture_over_eager": 1.5}}}}))
    for name, interval in (("01-getting-started", ["goals", "g"]), ("02-capture-mode", None)):
        spec = {"label": "x", **({"interval": interval} if interval else {})}
        key = "gpu_over_cpu" if name.startswith("01") else "capture_over_eager"
        _notebook(tmp_path / "notebooks" / f"{name}.ipynb", {"headline": {key: spec}})
    _record(results / "gpu.json", "2026-03-02T09:00:00+00:00", {
        "01-getting-started": {"headline": {"cpu_decode_img_s": 2000.0, "gpu_decode_img_s": 8000.0,
                                            "gpu_over_cpu": gpu_over_cpu},
                               "results": {"goals": {"g": _goal(gpu_over_cpu, 3.5, 4.5, "met")}}},
        "02-capture-mode": {"headline": {"eager_samples_per_s": 10000.0, "capture_samples_per_s": 15000.0,
                                         "capture_over_eager": capture_over_eager}}}, machine=H200)
    return results


def test_the_published_comparison_is_computed_from_the_records(tmp_path: Path) -> None:
    text = results_table.render_published_comparison(_published_records(tmp_path, 4.1, 1.6))
    assert "reads 2.0 to 3.0 times below" in text  # 4000/2000 .. 30000/10000
    assert "2,000 against 4,000 images/s for CPU decoding in 01" in text
    assert "10,000 against 30,000 samples/s for eager training in 02" in text
    assert ("The ratios are closer: the GPU decodes 4.10 times (95% interval 3.50-4.50) as fast as the "
            "CPU at 4 threads here, against 4.00 in the tutorial") in text
    assert "capture mode trains 1.60 times as fast as eager mode here, against 1.50" in text


def test_the_published_comparison_says_closer_only_when_it_is(tmp_path: Path) -> None:
    text = results_table.render_published_comparison(_published_records(tmp_path, 12.0, 1.6))
    assert "The ratios: the GPU decodes 12.00 times" in text and "closer" not in text


def test_the_published_comparison_without_a_gpu_record_says_so(tmp_path: Path) -> None:
    assert "nothing to set beside" in results_table.render_published_comparison(tmp_path)


def test_records_of_alike_machines_on_one_day_are_told_apart_by_their_files(tmp_path: Path) -> None:
    _record(tmp_path / "h200-day.json", "2026-03-02T09:00:00+00:00",
            {"01-y": {"headline": {"a": 1.0}}}, machine={**H200, "gpu_count": 1})
    _record(tmp_path / "h200-day-photos.json", "2026-03-02T10:00:00+00:00",
            {"05-z": {"headline": {"b": 2.0}}}, machine={**H200, "gpu_count": 1})
    _record(tmp_path / "cpu.json", "2026-03-03T09:00:00+00:00", {"01-y": {"headline": {"a": 3.0}}})
    headings = [c.heading for c in results_table.columns_of(tmp_path)]
    assert headings == ["NVIDIA H200, full scale, device auto → unknown (2026-03-02, h200-day.json)",
                        "NVIDIA H200, full scale, device auto → unknown (2026-03-02, h200-day-photos.json)",
                        "CPU only, 2 cores, full scale, device auto → unknown (2026-03-03)"]
