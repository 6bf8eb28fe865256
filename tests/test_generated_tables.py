"""The generated blocks: the README's notebook inventory (tools.inventory, from the notebooks'
metadata and measured runtimes) and its findings (tools.findings, sentences from results/), the
results page's goals, per-notebook tables and published comparison (tools.results_table), and each
notebook's bottom-line cell (tools.bottom_lines)."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
import pytest

from helpers.data import registry
from helpers.data.paths import REPO_ROOT
from helpers.toolkit.benchmarking import Ratio
from tools import bottom_lines
from tools import findings
from tools import goal_check
from tools import goals_table
from tools import inventory
from tools import notebook_tables
from tools import published_comparison
from tools import records
from tools import results_table
from tools import run_record
from tools.record_format import RecordError

RESULTS_PAGE = REPO_ROOT / "docs" / "pages" / "results.md"


def module_blocks(module: Any) -> dict[str, list[str]]:
    """``{command-line option of the page: its block names}`` that a module's command writes."""
    if module is results_table:
        return {
            "readme": list(results_table.README_BLOCKS),
            "results-page": list(results_table.PAGE_BLOCKS),
            "bottleneck-page": list(results_table.BOTTLENECK_BLOCKS),
        }
    return {"readme": [module.BLOCK]}


def _notebook(path: Path, meta: dict[str, Any] | None, duration: float | None = None) -> None:
    metadata: dict[str, Any] = {}
    if meta is not None:
        metadata["dali_tutorials"] = meta
    if duration is not None:
        metadata["papermill"] = {"duration": duration}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"cells": [], "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}))


def _record(
    path: Path,
    created: str,
    notebooks: dict[str, dict[str, Any]],
    machine: dict[str, Any] | None = None,
    run: dict[str, Any] | None = None,
) -> None:
    """A record as tools.run_record.write_record writes it (``run``: how every notebook ran)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    run = run or {
        "scale": "full",
        "device_asked": "auto",
        "device": "cpu",
        "parameters": {},
        "command": "python -m tools.suite run",
        "commit": "abc",
    }
    path.write_text(
        json.dumps(
            {
                "machine": machine or {"gpu": None, "gpu_count": 0, "cpu_count": 2},
                "date": created[:10],
                "notebooks": {
                    name: {
                        "created": created,
                        "parameters": {"trials": 2},
                        "results": {},
                        "run": run,
                        "headline": {},
                        "seconds": None,
                        **fields,
                    }
                    for name, fields in notebooks.items()
                },
            }
        )
    )


def _meta(title: str) -> dict[str, Any]:
    return {
        "title": title,
        "learn": f"what {title} teaches",
        "needs_gpu": "No: runs on a CPU",
        "scales": {"ci": {}, "bench": {}},
    }


def test_readme_inventory_matches_the_notebooks() -> None:
    assert inventory.main(["--check"]) == 0
    assert inventory.render_inventory() in (REPO_ROOT / "README.md").read_text()


def test_readme_findings_and_the_results_page_match_the_json() -> None:
    assert results_table.main(["--check"]) == 0
    assert findings.render_findings() in (REPO_ROOT / "README.md").read_text()
    page = RESULTS_PAGE.read_text()
    prefix = results_table.PAGE_PREFIX
    for render in (
        goals_table.render_goals_table,
        notebook_tables.render_notebook_tables,
        published_comparison.render_published_comparison,
    ):
        assert render(prefix=prefix) in page


def test_the_readme_holds_no_table_of_figures(report_figure) -> None:
    """The README is for the learner: the inventory is its only table (every table of figures is
    on the results page). Its length (`wc -w README.md`) is reported, not judged."""
    readme = (REPO_ROOT / "README.md").read_text()
    report_figure("README.md words", len(readme.split()))
    headers = [line for line in readme.splitlines() if re.match(r"\|\s*[-:]+\s*\|", line)]
    assert len(headers) == 1, "a table besides the inventory: move it to docs/pages/results.md"
    assert "<!-- results-table:start -->" not in readme and "<!-- goals:start -->" not in readme


def test_the_results_page_has_the_goals_then_the_tables_then_the_published_figures() -> None:
    page = RESULTS_PAGE.read_text()
    starts = [
        page.index(f"<!-- {name}:start -->") for name in ("goals", "notebook-tables", "published-comparison")
    ]
    assert starts == sorted(starts)


H200 = {"gpu": "NVIDIA H200", "gpu_count": 2, "cpu_count": 32}


def test_inventory_is_read_from_metadata_and_measured_runs(tmp_path: Path) -> None:
    _notebook(tmp_path / "notebooks" / "01-first.ipynb", _meta("First | one"))
    _notebook(tmp_path / "notebooks" / "02-second.ipynb", _meta("Second"))
    # named in the opposite order of their dates: the newer record by date is the one shown
    _record(
        tmp_path / "results" / "b.json",
        "2026-01-01T10:00:00+00:00",
        {"01-first": {"seconds": 99.0, "headline": {}}},
    )
    _record(
        tmp_path / "results" / "a.json",
        "2026-02-01T10:00:00+00:00",
        {"01-first": {"seconds": 31.2, "headline": {}}},
    )
    _record(
        tmp_path / "results" / "gpu.json",
        "2026-01-15T10:00:00+00:00",
        {"01-first": {"seconds": 58.3, "headline": {}}},
        machine=H200,
    )
    # newer, of one GPU, without notebook 01: notebook 02's runtime comes from there
    _record(
        tmp_path / "results" / "gpu-02.json",
        "2026-01-16T10:00:00+00:00",
        {"02-second": {"seconds": 100.0, "headline": {}}},
        machine={**H200, "gpu_count": 1},
    )
    # newer, but at bench scale: not the notebooks' defaults, so not a runtime of the table
    _record(
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
    _record(
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
    _record(
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
    _notebook(
        root / "notebooks" / "01-getting-started.ipynb",
        {
            **_meta("First"),
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
    _notebook(
        root / "notebooks" / "01-x.ipynb",
        {
            **_meta("X"),
            "headline": {
                "rate": {"label": "decode, {threads} threads, {reference} (img/s)"},
                "ratio": {"label": "GPU / CPU", "format": "{:.2f}x"},
            },
        },
    )
    for name, threads, day in (("a.json", 4, "01"), ("b.json", 8, "02"), ("c.json", 4, "03")):
        _record(
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
    _record(root / "results" / "d.json", "2026-03-04T09:00:00+00:00", {"01-x": {"headline": {"rate": 1.0}}})
    with pytest.raises(ValueError, match=r"d.json, 01-x.rate: the label .* needs threads, reference"):
        notebook_tables.render_notebook_tables(root / "results")


def test_an_older_key_and_a_newer_one_with_the_same_label_share_a_row(tmp_path: Path) -> None:
    """An older record's key with the parameter value in its name (``..._4_threads``) and a newer
    record's parameter-free key whose filled label reads the same land in the same row."""
    root = tmp_path / "checkout"
    label = {"label": "CPU decode, {reference_threads} threads (img/s)", "format": "{:,.0f}"}
    old = {"label": "CPU decode, 4 threads (img/s)", "format": "{:,.0f}"}
    _notebook(
        root / "notebooks" / "01-getting-started.ipynb",
        {**_meta("First"), "headline": {"cpu_decode_img_s": label, "cpu_decode_img_s_4_threads": old}},
    )
    _record(
        root / "results" / "old.json",
        "2026-03-01T09:00:00+00:00",
        {"01-getting-started": {"headline": {"cpu_decode_img_s_4_threads": 1000.0}}},
    )
    _record(
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
    _record(
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


def _goal(ratio: float, low: float, high: float, verdict: str | None, **count: int) -> dict[str, Any]:
    return {"ratio": ratio, "ci95": [low, high], "goal": 1.5, "verdict": verdict, **(count or {"trials": 5})}


def test_goals_come_from_the_newest_gpu_record(tmp_path: Path) -> None:
    goals = {
        "a / b": _goal(1.7, 1.6, 1.8, "met"),
        "c / d": _goal(1.4, 1.2, 1.45, "not met"),
        "e / f": _goal(1.5, 1.4, 1.6, "inconclusive", launches=3),
    }
    # notebook 04 ran on another GPU machine, earlier: its goals come from there
    _record(
        tmp_path / "old-gpu.json",
        "2026-03-01T09:00:00+00:00",
        {
            "03-x": {"headline": {}, "results": {"goals": {"old": _goal(9, 8, 10, "met")}}},
            "04-z": {
                "headline": {},
                "results": {"goals": {"w": _goal(1.9, 1.4, 2.0, "inconclusive", launches=3)}},
            },
        },
        machine={**H200, "gpu_count": 1},
    )
    _record(
        tmp_path / "gpu.json",
        "2026-03-02T09:00:00+00:00",
        {"01-y": {"headline": {}}, "03-x": {"headline": {}, "results": {"goals": goals}}},
        machine=H200,
    )
    _record(
        tmp_path / "cpu.json",
        "2026-03-03T09:00:00+00:00",
        {"03-x": {"headline": {}, "results": {"goals": {"cpu": _goal(9, 8, 10, "met")}}}},
    )
    table = goals_table.render_goals_table(tmp_path)
    assert table.splitlines()[2:8] == [
        "| 01 · no goals recorded | — | — | — | — | — |",
        "| 03 · a / b | >= 1.5x | 1.70x | 1.60x–1.80x | met | 5 trials |",
        "| 03 · c / d | >= 1.5x | 1.40x | 1.20x–1.45x | not met | 5 trials |",
        "| 03 · e / f | >= 1.5x | 1.50x | 1.40x–1.60x | inconclusive | 3 launches |",
        "| 04 · w | >= 1.5x | 1.90x | 1.40x–2.00x | inconclusive | 3 launches |",
        "",
    ]
    assert (
        "[gpu.json](results/gpu.json) (2x NVIDIA H200, full scale, device auto → cpu, 2026-03-02); "
        "[old-gpu.json](results/old-gpu.json) (NVIDIA H200, full scale"
    ) in table


def test_a_goal_without_its_interval_is_refused(tmp_path: Path) -> None:
    _record(
        tmp_path / "gpu.json",
        "2026-03-02T09:00:00+00:00",
        {
            "03-x": {
                "headline": {},
                "results": {"goals": {"a / b": {"ratio": 0.84, "goal": 0.95, "met": False}}},
            }
        },
        machine=H200,
    )
    with pytest.raises(ValueError, match="gpu.json, 03-x, goal 'a / b': lacks ci95, verdict, trials"):
        goals_table.render_goals_table(tmp_path)


def test_without_a_gpu_record_the_goals_table_says_so(tmp_path: Path) -> None:
    _record(tmp_path / "cpu.json", "2026-03-03T09:00:00+00:00", {"03-x": {"headline": {}}})
    assert "no record of a GPU machine" in goals_table.render_goals_table(tmp_path)


@pytest.mark.parametrize(
    "goal,problem",
    [
        (_goal(1.7, 1.6, 1.8, "inconclusive"), "verdict 'inconclusive', but .* says 'met'"),
        (_goal(1.5, 1.4, 1.6, "met"), "says 'inconclusive'"),
        (_goal(1.4, 1.2, 1.49, "inconclusive"), "says 'not met'"),
        (_goal(2.0, 1.6, 1.8, "met"), "ratio 2 lies outside its interval"),
        ({"ratio": 1.7, "ci95": [1.6, 1.8], "goal": 1.5}, "lacks verdict, trials"),
    ],
)
def test_a_verdict_must_follow_its_interval(tmp_path: Path, goal: dict[str, Any], problem: str) -> None:
    assert any(re.search(problem, p) for p in goal_check.goal_problems(goal)), goal_check.goal_problems(goal)
    _record(
        tmp_path / "gpu.json",
        "2026-03-02T09:00:00+00:00",
        {"03-x": {"headline": {}, "results": {"goals": {"g": goal}}}},
        machine=H200,
    )
    with pytest.raises(ValueError, match=r"gpu.json, 03-x, goal 'g'"):
        goals_table.render_goals_table(tmp_path)


@pytest.mark.parametrize("module", [inventory, results_table], ids=["inventory", "results"])
def test_check_fails_on_a_stale_block_and_the_rewrite_fixes_it(module: Any, tmp_path: Path) -> None:
    pages = {option: tmp_path / f"{option}.md" for option in module_blocks(module)}
    options = [part for option, path in pages.items() for part in (f"--{option}", str(path))]
    for option, names in module_blocks(module).items():
        blocks = "".join(f"<!-- {name}:start -->\nstale\n<!-- {name}:end -->\n" for name in names)
        pages[option].write_text(f"# x\n\n{blocks}\ntail\n")
    if module is results_table:  # and the notebooks' bottom lines: one stale, one missing
        notebooks = tmp_path / "notebooks"
        notebooks.mkdir()
        for name in ("02-capture-mode", "04-scaling-out"):
            shutil.copy(REPO_ROOT / "notebooks" / f"{name}.ipynb", notebooks)
        _edit_bottom_line(notebooks / "02-capture-mode.ipynb", lambda cell: cell.update(source=["stale"]))
        _edit_bottom_line(notebooks / "04-scaling-out.ipynb", None)
        options += ["--notebooks", str(notebooks)]
    assert module.main(["--check", *options]) == 1
    assert all("stale" in page.read_text() for page in pages.values())  # --check writes nothing
    assert module.main(options) == 0
    assert module.main(["--check", *options]) == 0
    for page in pages.values():
        assert page.read_text().endswith("\n\ntail\n") and "stale" not in page.read_text()
    if module is results_table:
        for path in notebooks.iterdir():
            assert path.read_bytes() == (REPO_ROOT / "notebooks" / path.name).read_bytes()
    for page in pages.values():  # a page without its blocks, the others fine
        kept = page.read_text()
        page.write_text("# no block\n")
        assert module.main(["--check", *options]) == 1
        page.write_text(kept)


def test_goals_that_only_a_cpu_record_holds_are_stated_not_judged(tmp_path: Path) -> None:
    _record(
        tmp_path / "gpu.json",
        "2026-03-02T09:00:00+00:00",
        {"01-y": {"headline": {}, "results": {"goals": {"a / b": _goal(1.7, 1.6, 1.8, "met")}}}},
        machine=H200,
    )
    _record(
        tmp_path / "cpu.json",
        "2026-03-03T09:00:00+00:00",
        {
            "01-y": {"headline": {}, "results": {"goals": {"cpu only": _goal(9, 8, 10, "met")}}},
            "04-z": {
                "headline": {},
                "results": {"goals": {"w / v": _goal(1.0, 0.4, 2.6, "inconclusive", launches=3)}},
            },
        },
    )
    rows = [r for r in goals_table.render_goals_table(tmp_path).splitlines() if r.startswith("| 0")]
    assert rows == [
        "| 01 · a / b | >= 1.5x | 1.70x | 1.60x–1.80x | met | 5 trials |",
        "| 04 · w / v | >= 1.5x | — | — | not judged: no GPU run of this notebook's current version | — |",
    ]
    # a GPU machine's record of CPU processes (04 with fewer GPUs than processes) holds no verdict
    _record(
        tmp_path / "gpu-cpu-processes.json",
        "2026-03-04T09:00:00+00:00",
        {"04-z": {"headline": {}, "results": {"goals": {"w / v": _goal(1.0, 0.4, 2.6, None, launches=3)}}}},
        machine=H200,
    )
    rows = [r for r in goals_table.render_goals_table(tmp_path).splitlines() if r.startswith("| 04")]
    assert rows == [
        "| 04 · w / v | >= 1.5x | 1.00x | 0.40x–2.60x | not judged: the run's processes were "
        "on the CPU | 3 launches |"
    ]


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
        _notebook(
            tmp_path / "notebooks" / f"{name}.ipynb",
            {**_meta(name), "headline": {key: spec}, "published": published},
        )
    _record(
        results / "gpu.json",
        "2026-03-02T09:00:00+00:00",
        {
            "01-getting-started": {
                "headline": {
                    "cpu_decode_img_s": 2000.0,
                    "gpu_decode_img_s": 8000.0,
                    "gpu_over_cpu": gpu_over_cpu,
                },
                "results": {"goals": {"g": _goal(gpu_over_cpu, 3.5, 4.5, "met")}},
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


def test_the_published_comparison_says_closer_only_when_it_is(tmp_path: Path) -> None:
    text = published_comparison.render_published_comparison(_published_records(tmp_path, 12.0, 1.6))
    assert "The ratios: the GPU decodes 12.00 times" in text and "closer" not in text


def test_the_published_comparison_without_a_gpu_record_says_so(tmp_path: Path) -> None:
    assert "nothing to set beside" in published_comparison.render_published_comparison(tmp_path)


def test_records_of_alike_machines_on_one_day_are_told_apart_by_their_files(tmp_path: Path) -> None:
    _record(
        tmp_path / "h200-day.json",
        "2026-03-02T09:00:00+00:00",
        {"01-y": {"headline": {"a": 1.0}}},
        machine={**H200, "gpu_count": 1},
    )
    _record(
        tmp_path / "h200-day-photos.json",
        "2026-03-02T10:00:00+00:00",
        {"05-z": {"headline": {"b": 2.0}}},
        machine={**H200, "gpu_count": 1},
    )
    _record(tmp_path / "cpu.json", "2026-03-03T09:00:00+00:00", {"01-y": {"headline": {"a": 3.0}}})
    headings = [c.heading for c in notebook_tables.columns_of(tmp_path)]
    assert headings == [
        "NVIDIA H200, full scale, device auto → cpu (2026-03-02, h200-day.json)",
        "NVIDIA H200, full scale, device auto → cpu (2026-03-02, h200-day-photos.json)",
        "CPU only, 2 cores, full scale, device auto → cpu (2026-03-03)",
    ]


def test_a_notebook_table_has_a_column_only_for_the_records_that_hold_it(tmp_path: Path) -> None:
    _record(
        tmp_path / "both.json",
        "2026-03-01T09:00:00+00:00",
        {"01-y": {"headline": {"a": 1.0}}, "02-z": {"headline": {"b": 2.0}}},
    )
    _record(
        tmp_path / "gpu.json", "2026-03-02T09:00:00+00:00", {"02-z": {"headline": {"b": 3.0}}}, machine=H200
    )
    _record(tmp_path / "empty.json", "2026-03-03T09:00:00+00:00", {"01-y": {"headline": {}}})
    first = notebook_tables.render_notebook_table("01-y", tmp_path).splitlines()
    assert first[0] == "| Figure | CPU only, 2 cores, full scale, device auto → cpu (2026-03-01) |"
    assert first[2] == "| a | 1 |"
    second = notebook_tables.render_notebook_table("02-z", tmp_path).splitlines()
    assert second[0].count(" | ") == 2 and second[2] == "| b | 2 | 3 |"
    sections = notebook_tables.render_notebook_tables(tmp_path, prefix="../../")
    assert "[both.json](../../results/both.json) and [gpu.json](../../results/gpu.json)." in sections
    assert "empty.json" not in sections


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


# --- the README's findings (tools.findings) ---------------------------------------------------------

FIGURE = re.compile(r"(\d+\.\d{2})x \[(\d+\.\d{2})-(\d+\.\d{2})\]")
LINK = re.compile(r"\]\((?:\.\./\.\./)?(notebooks|results)/([^)]+)\)")


def _ratios_of(value: Any) -> list[str]:
    """Every ``{"ratio", "ci95"}`` under ``value``, shown as the README shows a figure."""
    if isinstance(value, dict):
        if {"ratio", "ci95"} <= set(value) and isinstance(value["ci95"], list):
            return [f"{value['ratio']:.2f}x [{value['ci95'][0]:.2f}-{value['ci95'][1]:.2f}]"]
        return [shown for item in value.values() for shown in _ratios_of(item)]
    if isinstance(value, list):
        return [shown for item in value for shown in _ratios_of(item)]
    return []


def figures_not_in_their_records(block: str, results_dir: Path) -> list[str]:
    """The figures of each finding (a bullet of the block) that no ratio of the notebooks and
    records it names holds, and those of the other lines (the answer) that no ratio of the records
    the block links holds: read from the JSON itself, not through tools.findings."""
    problems = []
    every = {name for kind, name in LINK.findall(block) if kind == "results"}
    for line in [line for line in block.splitlines() if FIGURE.search(line) or line.startswith("- ")]:
        links = LINK.findall(line)
        notebooks = [Path(name).stem for kind, name in links if kind == "notebooks"]
        files = [name for kind, name in links if kind == "results"]
        if not line.startswith("- "):  # the answer: any notebook of the records the block links
            notebooks, files = [], sorted(every)
        elif not notebooks or not files:
            problems.append(f"names no notebook or no record: {line[:80]}")
            continue
        held = {
            shown
            for name in files
            for notebook, entry in json.loads((results_dir / name).read_text())["notebooks"].items()
            if notebook in notebooks or not line.startswith("- ")
            for shown in _ratios_of(entry.get("results", {}))
        }
        figures = [f"{r}x [{low}-{high}]" for r, low, high in FIGURE.findall(line)]
        if not figures:
            problems.append(f"shows no figure with its interval: {line[:80]}")
        problems += [
            f"{figure} is not a ratio of {', '.join(notebooks)} in {', '.join(files)}: {line[:60]}"
            for figure in figures
            if figure not in held
        ]
    return problems


def _readme_block(name: str) -> str:
    readme = (REPO_ROOT / "README.md").read_text()
    return readme.split(f"<!-- {name}:start -->", 1)[1].split(f"<!-- {name}:end -->", 1)[0]


def test_every_figure_of_the_readme_findings_is_its_records(report_figure) -> None:
    block = _readme_block(findings.BLOCK)
    found = findings.findings()
    bullets = [line for line in block.splitlines() if line.startswith("- ")]
    report_figure("README findings", len(found))
    assert found and len(bullets) == len(found)
    assert not figures_not_in_their_records(block, REPO_ROOT / "results")
    for finding in [*found, findings.answer()]:  # each figure is the one at the path it reads
        for figure in finding.figures:
            value: Any = json.loads((REPO_ROOT / "results" / figure.path.name).read_text())
            for key in ("notebooks", figure.notebook, "results", *figure.keys):
                value = value[key]
            expected = Ratio(value["ratio"], *value["ci95"], 0, paired=True)
            assert f"{expected}" == figure.shown and figure.shown in finding.text, (finding.topic, figure)
            assert figure.path.name in finding.records and figure.notebook in finding.notebooks


def test_a_figure_typed_into_the_findings_is_caught() -> None:
    block = _readme_block(findings.BLOCK)
    shown = FIGURE.search(block)
    assert shown
    tampered = block.replace(
        shown.group(0), f"{float(shown.group(1)) + 0.01:.2f}x [{shown.group(2)}-{shown.group(3)}]", 1
    )
    assert figures_not_in_their_records(tampered, REPO_ROOT / "results")


def _misnamed_copies(tmp_path: Path) -> Path:
    """The committed records under misleading names: the newest GPU record that holds notebook 05
    as ``cpu-old.json`` (other GPU records as ``cpu-old-<n>.json``), the records of machines
    without a GPU as ``h200-new-<n>.json``."""
    results = tmp_path / "results"
    results.mkdir()
    shutil.copytree(REPO_ROOT / "notebooks", tmp_path / "notebooks", ignore=shutil.ignore_patterns("scripts"))
    committed = list(records.records(REPO_ROOT / "results"))
    newest_05 = findings.newest_gpu_first(REPO_ROOT / "results")["05-photos-at-scale"].path
    for index, record in enumerate(committed):
        if record.has_gpu:
            name = "cpu-old.json" if record.path == newest_05 else f"cpu-old-{index}.json"
        else:
            name = f"h200-new-{index}.json"
        shutil.copy(record.path, results / name)
    return results


def test_findings_pick_records_by_what_they_hold_gpu_first(tmp_path: Path) -> None:
    results = _misnamed_copies(tmp_path)
    # a newer record of a machine without a GPU that holds notebook 05 does not replace the GPU's
    gpu = json.loads((results / "cpu-old.json").read_text())
    newer = {
        "machine": {"gpu": None, "gpu_count": 0, "cpu_count": 2},
        "date": "2027-01-01",
        "notebooks": {
            "05-photos-at-scale": {
                **gpu["notebooks"]["05-photos-at-scale"],
                "created": "2027-01-01T00:00:00+00:00",
            }
        },
    }
    (results / "zz-newest.json").write_text(json.dumps(newer))
    by_topic = {f.topic: f for f in findings.findings(results)}
    assert by_topic["ResNet-50 from JPEGs"].records == ("cpu-old.json",)
    assert by_topic["Several processes"].records[0].startswith("h200-new-")  # 04: only a CPU record holds it
    assert "on 2 CPU cores, not GPU scaling" in by_topic["Several processes"].text
    block = findings.render_findings(results)
    assert "[cpu-old.json](results/cpu-old.json)" in block and "(NVIDIA H200)" in block
    assert not figures_not_in_their_records(block, results)


def _edit_chosen(results: Path, notebook: str, change: Callable[[dict[str, Any]], Any]) -> str:
    """Change the ``results`` of ``notebook`` in the record that the findings read for it (the
    newest GPU record holding it); returns that record's file name."""
    path = findings.newest_gpu_first(results)[notebook].path
    record = json.loads(path.read_text())
    change(record["notebooks"][notebook]["results"])
    path.write_text(json.dumps(record))
    return path.name


@pytest.mark.parametrize(
    "interval,words",
    [
        ([1.2, 1.5], "capture mode was faster than eager mode (1.30x [1.20-1.50])"),
        ([0.9, 1.5], "capture mode was not distinguishable from eager mode (1.30x [0.90-1.50])"),
    ],
)
def test_the_words_of_a_finding_follow_its_interval(
    tmp_path: Path, interval: list[float], words: str
) -> None:
    results = _misnamed_copies(tmp_path)
    _edit_chosen(
        results,
        "02-capture-mode",
        lambda r: r["ratios"]["capture_over_eager"].update(ratio=1.3, ci95=interval),
    )
    _edit_chosen(
        results,
        "03-feeding-pytorch-fast",
        lambda r: r["goals"]["best dynamic / pipeline mode, same knobs"].update(ratio=1.0, ci95=[0.9, 1.1]),
    )
    _edit_chosen(
        results,
        "05-photos-at-scale",
        lambda r: r["goals"][findings.R50 + "pipeline mode, same knobs"].update(
            ratio=0.98, ci95=[0.97, 0.99]
        ),
    )
    by_topic = {f.topic: f for f in findings.findings(results)}
    assert words in by_topic["Capture mode"].text
    # dynamic mode not distinguishable from pipeline mode on MNIST, slower on ResNet-50: the answer
    # words each on its own
    short = findings.answer(results).text
    assert (
        "does not pay off in place of DALI's pipeline mode at the same knobs (0.98x [0.97-0.99]) on "
        "ResNet-50 and is not distinguishable from DALI's pipeline mode at the same knobs "
        "(1.00x [0.90-1.10]) on MNIST."
    ) in short
    assert by_topic["A light model"].sentences[1] == (
        "It was not distinguishable from pipeline mode at the same knobs (1.00x [0.90-1.10])."
    )


def test_a_finding_whose_ratio_the_record_lacks_names_it(tmp_path: Path) -> None:
    results = _misnamed_copies(tmp_path)
    name = _edit_chosen(results, "02-capture-mode", lambda r: r["ratios"].pop("capture_over_eager"))
    with pytest.raises(
        ValueError,
        match=rf"{name}: 02-capture-mode records no "
        r"results.ratios.capture_over_eager",
    ):
        findings.render_findings(results)


def test_the_readme_findings_open_with_the_answer_one_finding_a_line() -> None:
    """The block opens with the one line a learner needs (the answer, with its figures), then where
    the figures come from, then a bullet per notebook; no paragraph over 100 words."""
    block = _readme_block(findings.BLOCK).strip()
    paragraphs = block.split("\n\n")
    assert paragraphs[0] == f"**In short:** {findings.answer().text}"
    assert "results/" not in paragraphs[0] and "results/" in paragraphs[1]  # the records after it
    bullets = paragraphs[2].splitlines()
    assert len(bullets) == len(registry.notebooks()) and all(b.startswith("- **") for b in bullets)
    lines = [*paragraphs[:2], *bullets, *paragraphs[3:]]  # a bullet is a paragraph of its own
    long = [p[:60] for p in lines if len(re.sub(r"\]\([^)]*\)", "]", p).split()) > 100]
    assert not long, f"paragraphs over 100 words: {long}"


# --- each notebook's bottom line (tools.bottom_lines) ----------------------------------------------


def _edit_bottom_line(path: Path, change: Callable[[dict[str, Any]], Any] | None) -> None:
    """Change a notebook's bottom-line cell (``None``: remove it), saved in nbformat's layout."""
    notebook = json.loads(path.read_text())
    cell = next(c for c in notebook["cells"] if bottom_lines.TAG in c["metadata"].get("tags", []))
    if change is None:
        notebook["cells"].remove(cell)
    else:
        change(cell)
    path.write_text(json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n")


def _cells(path: Path) -> list[dict[str, Any]]:
    return json.loads(path.read_text())["cells"]


@pytest.mark.parametrize(
    "notebook", sorted((REPO_ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb")), ids=lambda p: p.stem
)
def test_each_notebook_opens_with_its_bottom_line(notebook: Path) -> None:
    """Right under the title, the cell tagged bottom-line holds what tools.bottom_lines writes from
    the committed records: what to do (one sentence), then 2 or 3 sentences, at most 100 words in
    all, naming the machine and the record."""
    cells = _cells(notebook)
    title = next(i for i, c in enumerate(cells) if c["cell_type"] == "markdown")
    assert "".join(cells[title]["source"]).startswith("# ")
    cell = cells[title + 1]
    assert cell["cell_type"] == "markdown" and bottom_lines.TAG in cell["metadata"]["tags"]
    expected = bottom_lines.bottom_line(notebook.stem)
    assert "".join(cell["source"]) == expected, "run `python -m tools.results_table`"
    record = findings.newest_gpu_first()[notebook.stem]
    assert f"([record](../results/{record.name})):" in expected
    assert (REPO_ROOT / "notebooks" / "../results" / record.name).is_file()
    text = re.sub(r"\]\([^)]*\)", "]", expected.removeprefix("**Bottom line.** "))
    sentences = re.findall(r"[.!?](?=\s+[A-Z]|$)", text)
    assert 3 <= len(sentences) <= 4 and len(text.split()) <= 100, (len(sentences), len(text.split()))


def test_the_committed_bottom_lines_are_in_step() -> None:
    assert bottom_lines.update(check=True) == 0


def _bottom_line_copies(tmp_path: Path) -> tuple[Path, Path]:
    notebooks, results = tmp_path / "notebooks", tmp_path / "results"
    shutil.copytree(REPO_ROOT / "notebooks", notebooks, ignore=shutil.ignore_patterns("scripts"))
    shutil.copytree(REPO_ROOT / "results", results)
    return notebooks, results


def test_a_bottom_line_is_stale_when_its_record_or_its_cell_changes_alone(tmp_path: Path) -> None:
    notebooks, results = _bottom_line_copies(tmp_path)
    assert bottom_lines.update(notebooks, check=True, results_dir=results) == 0
    nb02 = notebooks / "02-capture-mode.ipynb"
    committed = nb02.read_bytes()
    # the cell changed alone (a figure typed over): stale
    _edit_bottom_line(nb02, lambda c: c.update(source=["".join(c["source"]) + " A figure typed over."]))
    assert bottom_lines.update(notebooks, check=True, results_dir=results) == 1
    nb02.write_bytes(committed)
    # the record changed alone (a new run): stale, and the rewrite says what the record says now
    _edit_chosen(
        results,
        "02-capture-mode",
        lambda r: r["ratios"]["capture_over_eager"].update(ratio=0.8, ci95=[0.7, 0.9]),
    )
    assert bottom_lines.update(notebooks, check=True, results_dir=results) == 1
    assert nb02.read_bytes() == committed  # --check writes nothing
    assert bottom_lines.update(notebooks, check=False, results_dir=results) == 0
    (cell,) = bottom_lines.tagged_cells(json.loads(nb02.read_text()))  # still one tagged cell, rewritten
    assert "capture mode was slower than eager mode (0.80x [0.70-0.90])" in "".join(cell["source"])
    assert bottom_lines.update(notebooks, check=True, results_dir=results) == 0


def test_writing_the_bottom_line_touches_no_other_cell(tmp_path: Path) -> None:
    """Inserted after the title where it is missing, replaced where it is stale: every other cell,
    output and execution count, and the metadata, stay byte for byte."""
    notebooks, _ = _bottom_line_copies(tmp_path)
    path = notebooks / "05-photos-at-scale.ipynb"
    committed = path.read_text()
    _edit_bottom_line(path, None)
    without = path.read_text()
    assert bottom_lines.tagged_cells(json.loads(without)) == []
    written = bottom_lines.with_bottom_line(without, "**Bottom line.** new", path.name)
    cells, before = json.loads(written)["cells"], json.loads(without)["cells"]
    assert cells[1] == {
        "cell_type": "markdown",
        "id": bottom_lines.CELL_ID,
        "metadata": {"tags": [bottom_lines.TAG]},
        "source": ["**Bottom line.** new"],
    }
    assert [cells[0], *cells[2:]] == before
    assert {k: v for k, v in json.loads(written).items() if k != "cells"} == {
        k: v for k, v in json.loads(without).items() if k != "cells"
    }
    # the only lines that differ are the cell's: put back, the committed bytes again
    (cell,) = bottom_lines.tagged_cells(json.loads(committed))
    rewritten = bottom_lines.with_bottom_line(written, "".join(cell["source"]), path.name)
    assert rewritten == committed
    # a notebook not in nbformat's layout is refused, not reformatted
    with pytest.raises(ValueError, match="not in nbformat's layout"):
        bottom_lines.with_bottom_line(json.dumps(json.loads(committed)), "x", path.name)
    two = json.loads(committed)
    two["cells"].insert(3, {**two["cells"][1], "id": "another"})
    with pytest.raises(ValueError, match="2 cells tagged bottom-line"):
        bottom_lines.with_bottom_line(
            json.dumps(two, indent=1, sort_keys=True, ensure_ascii=False) + "\n", "x", path.name
        )


# Small fake records, one per notebook family, with the keys each function reads.


def _ratio(ratio: float, low: float, high: float, **goal: Any) -> dict[str, Any]:
    return {"ratio": ratio, "ci95": [low, high], "trials": 5, **goal}


def _fake_entries(ratio: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``{notebook: entry}``: every notebook's entry, each ratio the given one (goals: of 1x)."""
    goal = {
        **ratio,
        "goal": 1.0,
        "verdict": Ratio(ratio["ratio"], *ratio["ci95"], ratio["trials"], True).verdict(1.0),
    }
    nb05 = {findings.R50 + k: goal for k in ("best DataLoader", "pipeline mode, same knobs", "ceiling")}
    nb05["cpu: DataLoader / dynamic mode, CPU time per image"] = goal
    resumable = "capture, epoch readers + checkpoints / "
    return {
        findings.NB01: {
            "headline": {"best_hw_decoder_load": 0.65},
            "results": {
                "reference_threads": 4,
                "ratios": {"best_gpu_over_cpu": ratio, "best_gpu_over_best_cpu": ratio},
            },
        },
        findings.NB02: {"results": {"ratios": {"capture_over_eager": ratio}}},
        findings.NB03: {
            "results": {
                "goals": {
                    "best dynamic / best DataLoader": goal,
                    "best dynamic / pipeline mode, same knobs": goal,
                },
                "picks": {"dynamic": {"best": "capture b64", "ties": {}}},
            }
        },
        findings.NB04: {
            "headline": {"processes": 2},
            "results": {"goals": {"weak scaling (all processes / 1 process)": goal}},
        },
        findings.NB05: {
            "parameters": {"image_size": 96},
            "results": {"goals": nb05, "picks": {"capture": {"best": "capture, threads 4", "ties": {}}}},
        },
        findings.NB06: {
            "results": {
                "steps_per_epoch": 64,
                "resume": {"kill_step": 30, "resumed_from": 20, "bit_identical": True},
                "benchmark": {
                    "ratios": {resumable + "capture": ratio, resumable + "eager + checkpoints": ratio}
                },
            }
        },
        findings.NB07: {
            "headline": {"best_dali_nvdec_pct": None},
            "parameters": {"codec": "vp9", "clip_frames": 8, "gop": 16, "device": "cpu", "resolution": None},
            "results": {
                "goals": {
                    "alone: best DALI / best PyAV DataLoader": goal,
                    "fed: best DALI / training alone": goal,
                },
                "picks": {"best DALI": "DALI, 2 readers"},
                "alone": {"configs": {"DALI, 2 readers": {"count": 2}}},
                "sweep": {"dali_over_dataloader": {"160x120, gop 16": ratio}},
            },
        },
    }


def _fake_results(
    tmp_path: Path, entries: dict[str, dict[str, Any]], machine: dict[str, Any] | None = None
) -> Path:
    results = tmp_path / "results"
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "notebooks").symlink_to(REPO_ROOT / "notebooks")  # the registry: topics, order
    _record(
        results / "gpu-fake.json",
        "2026-03-02T09:00:00+00:00",
        {name: {"headline": {}, "parameters": {}, **entry} for name, entry in entries.items()},
        machine=machine or {**H200, "gpu_count": 1},
    )
    return results


# what each notebook's bottom line says of a ratio of 1.30x [1.20-1.50] (the same for all its figures)
SAID = {
    findings.NB01: [
        "at hw_decoder_load 0.65 (its highest sweep median), GPU decoding of the photographs "
        "was faster than CPU decoding at 4 threads (1.30x [1.20-1.50]).",
        "Each at its best sweep setting, it was faster than CPU decoding (1.30x [1.20-1.50]).",
    ],
    findings.NB02: [
        "training on MNIST, capture mode was faster than eager mode (1.30x [1.20-1.50]), on the same batches."
    ],
    findings.NB03: [
        "on MNIST, dynamic mode at its best was faster than the best torch DataLoader (1.30x [1.20-1.50]).",
        "It was faster than pipeline mode at the same knobs (1.30x [1.20-1.50]).",
    ],
    findings.NB04: [
        "in samples/s, 2 processes under torchrun were faster than one (1.30x [1.20-1.50]), on 1 GPUs."
    ],
    findings.NB05: [
        "feeding ResNet-50 (96px crops), dynamic mode at its best was faster than the best torch "
        "DataLoader (1.30x [1.20-1.50]) and faster than pipeline mode at the same knobs "
        "(1.30x [1.20-1.50]), reaching 1.30x [1.20-1.50] of training alone.",
        "Alone, PIL in the DataLoader used more CPU time per image than the best capture loop "
        "(1.30x [1.20-1.50]).",
    ],
    findings.NB06: [
        "killed at step 30, training resumed from step 20 bit-identically.",
        "Over epochs of 64 steps, resumable capture mode (a new reader each epoch, "
        "checkpoints) was faster than capture mode without them (1.30x [1.20-1.50]) and faster "
        "than eager mode with checkpoints (1.30x [1.20-1.50]).",
    ],
    findings.NB07: [
        "on VP9 clips of 8 frames, loading alone, 2 DALI readers, one shard each, were faster "
        "than PyAV in the best torch DataLoader (1.30x [1.20-1.50] at 320x240, gop 16; "
        "1.30x [1.20-1.50] at 160x120, gop 16, the same DataLoader).",
        "Feeding the 3D model, they reached 1.30x [1.20-1.50] of training alone.",
    ],
}


# what each notebook's bottom line advises when every ratio of its record is 1.30x [1.20-1.50]
ADVISED = {
    findings.NB01: "Decode JPEGs on the GPU",  # not "with hw_decoder_load=1": its interval is the default's
    findings.NB02: "Train with `next_epoch(capture=True)`",
    findings.NB03: "Feed a light model with DALI, not a DataLoader",
    findings.NB04: "Give each rank a shard of the reader (`num_shards`, `shard_id`) and pad the shards alike "
    "(`pad_last_batch=True`)",
    findings.NB05: "Feed ResNet-50 from JPEGs with DALI, not a DataLoader",
    findings.NB06: "Resume a capture loop with a new reader each epoch from DALI's checkpoints inside one of "
    "your own",  # resumable capture 1.30x [1.20-1.50] eager with checkpoints
    findings.NB07: "Feed video clips with one DALI reader per hardware decoder, one shard each, not PyAV",
}


@pytest.mark.parametrize("notebook", sorted(SAID))
def test_each_notebooks_bottom_line_from_a_small_record(notebook: str, tmp_path: Path) -> None:
    """One function per notebook (tools.findings.WRITERS) writes what its record found; the
    bottom line puts the machine and the record first and the goals' verdicts last."""
    assert set(SAID) == set(findings.WRITERS)
    results = _fake_results(tmp_path, _fake_entries(_ratio(1.3, 1.2, 1.5)))
    text = bottom_lines.bottom_line(notebook, results)
    prefix = (  # every notebook has a recipe, linked from its advice
        f"**Bottom line.** {ADVISED[notebook]} ([the recipe](#recipe)). On one NVIDIA H200 "
        "([record](../results/gpu-fake.json)): "
    )
    assert text.startswith(prefix), text
    finding = text.removeprefix(prefix)
    # the bottom line holds the finding's first sentences (the README's bullet all of them)
    kept = SAID[notebook][: bottom_lines.FINDING_SENTENCES]
    assert finding.startswith(" ".join(kept)) or (  # a second sentence only within the budget
        finding.startswith(kept[0])
        and bottom_lines.shown_length(text.replace(kept[0], " ".join(kept))) > bottom_lines.SHOWN_CHARS
    )
    # each figure of the sentence is a figure of the record, and nothing else is shown
    assert set(FIGURE.findall(finding)) == {("1.30", "1.20", "1.50")}
    readme = {f.topic: f for f in findings.findings(results)}[registry.entry(notebook).finding["topic"]]
    assert readme.sentences == tuple(SAID[notebook]) and readme.records == ("gpu-fake.json",)


@pytest.mark.parametrize(
    "notebook,kind,said",
    [
        (
            findings.NB03,
            "dynamic",
            "on MNIST, dynamic mode at its picked knobs (a tie in the confirmation) was ",
        ),
        (
            findings.NB05,
            "capture",
            "feeding ResNet-50 (96px crops), dynamic mode at its picked knobs (a tie in selection) was ",
        ),
    ],
)
def test_a_pick_from_a_tie_is_not_called_the_best(
    notebook: str, kind: str, said: str, tmp_path: Path
) -> None:
    entries = _fake_entries(_ratio(1.3, 1.2, 1.5))
    entries[notebook]["results"]["picks"][kind]["ties"] = {"other": _ratio(0.9, 0.5, 1.6)}
    finding = {f.topic: f for f in findings.findings(_fake_results(tmp_path, entries))}[
        registry.entry(notebook).finding["topic"]
    ]
    assert finding.sentences[0].startswith(said) and "at its best" not in " ".join(finding.sentences)
    if notebook == findings.NB05:
        assert "than the picked capture loop" in finding.sentences[1]


@pytest.mark.parametrize(
    "interval,ratio,words",
    [
        ([1.2, 1.5], 1.3, "capture mode was faster than eager mode (1.30x [1.20-1.50])"),
        ([0.7, 0.9], 0.8, "capture mode was slower than eager mode (0.80x [0.70-0.90])"),
        ([0.9, 1.5], 1.3, "capture mode was not distinguishable from eager mode (1.30x [0.90-1.50])"),
        ([0.95, 0.999], 0.97, "capture mode was slower than eager mode (0.970x [0.950-0.999])"),
    ],
)
def test_a_bottom_line_is_worded_by_its_interval(
    tmp_path: Path, interval: list[float], ratio: float, words: str
) -> None:
    entries = {findings.NB02: _fake_entries(_ratio(ratio, *interval))[findings.NB02]}
    assert words in bottom_lines.bottom_line(findings.NB02, _fake_results(tmp_path, entries))


@pytest.mark.parametrize(
    "interval,verdict", [([1.3, 1.5], "met"), ([1.1, 1.2], "not met"), ([1.2, 1.5], "inconclusive")]
)
def test_a_bottom_line_states_the_recorded_verdict_of_a_goal(
    tmp_path: Path, interval: list[float], verdict: str
) -> None:
    ratio = _ratio(sum(interval) / 2, *interval)
    goal = {**ratio, "goal": 1.25, "verdict": verdict}
    entries = {
        findings.NB02: {
            "results": {"ratios": {"capture_over_eager": ratio}, "goals": {"capture / eager": goal}}
        }
    }
    text = bottom_lines.bottom_line(findings.NB02, _fake_results(tmp_path, entries))
    # the goal's figure is the finding's: shown once
    assert text.endswith(f"Its goal, capture / eager of 1.25x or more, is {verdict}.")
    assert text.count(str(Ratio(ratio["ratio"], *interval, 5, True))) == 1


def test_a_verdict_that_its_interval_does_not_give_is_refused(tmp_path: Path) -> None:
    ratio = _ratio(1.4, 1.3, 1.5)
    entries = {
        findings.NB02: {
            "results": {
                "ratios": {"capture_over_eager": ratio},
                "goals": {"capture / eager": {**ratio, "goal": 1.25, "verdict": "inconclusive"}},
            }
        }
    }
    with pytest.raises(
        ValueError,
        match=r"gpu-fake.json, 02-capture-mode, goal 'capture / eager': verdict "
        r"'inconclusive', but .* says 'met'",
    ):
        bottom_lines.bottom_line(findings.NB02, _fake_results(tmp_path, entries))


def test_several_goals_are_counted_by_verdict_and_a_cpu_run_judges_none(tmp_path: Path) -> None:
    ratio = _ratio(1.3, 1.2, 1.5)
    entries = _fake_entries(ratio)
    entries[findings.NB03]["results"]["goals"] = {
        "best dynamic / best DataLoader": {**ratio, "goal": 1.1, "verdict": "met"},
        "best dynamic / pipeline mode, same knobs": {**ratio, "goal": 1.25, "verdict": "inconclusive"},
        "best dynamic / ceiling": {**ratio, "goal": 1.6, "verdict": "not met"},
    }
    entries[findings.NB04]["results"]["goals"] = {  # as nb04_scaling_out.record stores a CPU run
        "weak scaling (all processes / 1 process)": {**ratio, "goal": 1.9, "verdict": None}
    }
    cpu = {"gpu": None, "gpu_count": 0, "cpu_count": 2}
    results = _fake_results(tmp_path, entries, machine=cpu)
    text = bottom_lines.bottom_line(findings.NB03, results)
    assert text.startswith(
        "**Bottom line.** Feed a light model with DALI, not a DataLoader ([the recipe](#recipe)). "
        "Without a GPU "
        "([record](../results/gpu-fake.json))"
    )
    assert text.endswith(
        "Its goals (best dynamic / best DataLoader, best dynamic / pipeline mode, same "
        "knobs, best dynamic / ceiling) are stated for GPUs and not judged on this run."
    )
    assert "met" not in text  # a CPU run gives no goal a verdict
    scaling = bottom_lines.bottom_line(findings.NB04, results)
    assert "slower" not in scaling and "on 2 CPU cores, not GPU scaling." in scaling
    assert scaling.endswith(
        "Its goal (weak scaling (all processes / 1 process)) is stated for GPUs and not judged on this run."
    )
    h200 = {"gpu": "NVIDIA H200", "gpu_count": 1, "cpu_count": 16}
    gpu = _fake_results(tmp_path / "gpu", entries, machine=h200)
    assert bottom_lines.bottom_line(findings.NB03, gpu).endswith(
        "Its goals: 1 met, 1 not met, 1 inconclusive ([all 3](../docs/pages/results.md#the-suites-goals))."
    )
    # 04 on a one-GPU machine runs CPU processes: its record holds no verdict, and none is said
    assert bottom_lines.bottom_line(findings.NB04, gpu).endswith(
        "Its goal (weak scaling (all processes / 1 process)) is stated for GPUs and not judged on this run."
    )


def test_a_notebook_without_a_record_or_a_function_is_named(tmp_path: Path) -> None:
    results = _fake_results(
        tmp_path,
        {findings.NB02: _fake_entries(_ratio(1.3, 1.2, 1.5))[findings.NB02], "08-new": {"results": {}}},
    )
    assert "No record in `results/` holds 09-newer yet" in bottom_lines.bottom_line("09-newer", results)
    with pytest.raises(
        ValueError,
        match="08-new has a record but is not a notebook of the registry .* notebooks/NN-slug.ipynb",
    ):
        bottom_lines.bottom_line("08-new", results)


@pytest.mark.parametrize(
    ("interval", "advice"),
    [
        ((1.6, 1.5, 1.7), "Train with `next_epoch(capture=True)`"),
        ((0.95, 0.9, 1.01), "Keep eager mode: capture mode did not pay off here"),
        ((0.8, 0.7, 0.9), "Keep eager mode: capture mode did not pay off here"),
    ],
)
def test_a_bottom_line_opens_with_the_advice_its_interval_gives(
    tmp_path: Path, interval: tuple[float, ...], advice: str
) -> None:
    """The advice follows the record's interval (capture mode only where it was faster), comes
    first, links the notebook's recipe where it has one, and the figures follow it."""
    _record(
        tmp_path / "results" / "gpu.json",
        "2026-03-02T09:00:00+00:00",
        {"02-capture-mode": {"results": {"ratios": {"capture_over_eager": _ratio(*interval)}}}},
        machine=H200,
    )
    notebook = tmp_path / "notebooks" / "02-capture-mode.ipynb"
    _notebook(notebook, _meta("Capture"))
    chosen = records.newest_gpu_first(tmp_path / "results")
    assert bottom_lines.advice("02-capture-mode", chosen, tmp_path / "results") == f"{advice}. "
    with_recipe = nbformat.read(notebook, as_version=4)
    with_recipe.cells = [
        nbformat.v4.new_markdown_cell("## Recipe"),
        nbformat.v4.new_code_cell("X = 1\n", metadata={"tags": ["recipe"]}),
    ]
    nbformat.write(with_recipe, notebook)
    line = bottom_lines.bottom_line("02-capture-mode", tmp_path / "results")
    opening = f"**Bottom line.** {advice} ([the recipe](#recipe)). On 2 NVIDIA H200 GPUs ([record]("
    assert line.startswith(opening), line
    assert str(Ratio(*interval, 5, paired=True)) in line


def test_resuming_advice_names_the_faster_resumable_loop(tmp_path: Path) -> None:
    ratios = {"capture, epoch readers + checkpoints / eager + checkpoints": _ratio(0.9, 0.85, 0.95)}
    entry = {"results": {"resume": {"bit_identical": True}, "benchmark": {"ratios": ratios}}}
    _record(tmp_path / "gpu.json", "2026-03-02T09:00:00+00:00", {"06-checkpoint-resume": entry}, machine=H200)
    get = findings.Lookup(records.newest_gpu_first(tmp_path))
    assert (
        findings.ADVICE["06-checkpoint-resume"](get)
        == "Resume an eager loop from DALI's checkpoints inside one of your own"
    )
    ratios.update({"capture, epoch readers + checkpoints / eager + checkpoints": _ratio(1.1, 1.05, 1.15)})
    _record(tmp_path / "gpu.json", "2026-03-02T09:00:00+00:00", {"06-checkpoint-resume": entry}, machine=H200)
    get = findings.Lookup(records.newest_gpu_first(tmp_path))
    assert "a capture loop with a new reader each epoch" in findings.ADVICE["06-checkpoint-resume"](get)
    ratios.update({"capture, epoch readers + checkpoints / eager + checkpoints": _ratio(0.95, 0.85, 1.05)})
    _record(tmp_path / "gpu.json", "2026-03-02T09:00:00+00:00", {"06-checkpoint-resume": entry}, machine=H200)
    get = findings.Lookup(records.newest_gpu_first(tmp_path))
    assert "an eager loop" in findings.ADVICE["06-checkpoint-resume"](get)  # a tie: the simpler loop
    entry["results"]["resume"]["bit_identical"] = False
    _record(tmp_path / "gpu.json", "2026-03-02T09:00:00+00:00", {"06-checkpoint-resume": entry}, machine=H200)
    get = findings.Lookup(records.newest_gpu_first(tmp_path))
    assert "did not resume bit-identically" in findings.ADVICE["06-checkpoint-resume"](get)


def test_a_bottom_line_keeps_a_second_finding_within_its_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The finding's second sentence goes where the cell would pass SHOWN_CHARS as a reader sees it."""
    assert bottom_lines.shown_length("**Bottom line.** Do `x` ([the recipe](#recipe)).") == len(
        "Bottom line. Do x (the recipe)."
    )
    results = _fake_results(tmp_path, _fake_entries(_ratio(1.3, 1.2, 1.5)))
    second = SAID[findings.NB06][1]
    assert second in bottom_lines.bottom_line(findings.NB06, results)
    monkeypatch.setattr(bottom_lines, "SHOWN_CHARS", 200)
    short = bottom_lines.bottom_line(findings.NB06, results)
    assert SAID[findings.NB06][0] in short and second not in short
