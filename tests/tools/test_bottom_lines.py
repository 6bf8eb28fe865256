"""Each notebook's bottom-line cell (tools.bottom_lines): the advice, the machine and the record, the
finding and the goals' verdicts, generated from the newest record and in step with it."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import nbformat
import pytest
from fakes import FIGURE
from fakes import H200
from fakes import edit_bottom_line
from fakes import edit_chosen_record
from fakes import fake_entries
from fakes import fake_entry
from fakes import fake_notebook
from fakes import fake_ratio
from fakes import fake_record
from fakes import fake_results_folder

from helpers.data import registry
from helpers.data.paths import REPO_ROOT
from helpers.toolkit.benchmarking import Ratio
from tools import bottom_lines
from tools import findings
from tools import records

# --- each notebook's bottom line (tools.bottom_lines) ----------------------------------------------


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
    edit_bottom_line(nb02, lambda c: c.update(source=["".join(c["source"]) + " A figure typed over."]))
    assert bottom_lines.update(notebooks, check=True, results_dir=results) == 1
    nb02.write_bytes(committed)
    # the record changed alone (a new run): stale, and the rewrite says what the record says now
    edit_chosen_record(
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
    edit_bottom_line(path, None)
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
        '(1.30x [1.20-1.50]); the capture loop decoded with `device="gpu"`.',
    ],
    findings.NB06: [
        "killed at step 30, training resumed from step 20 bit-identically.",
        "Over epochs of 64 steps, resumable capture mode (a new reader each epoch, "
        "checkpoints) was faster than capture mode with one reader and no checkpoints (1.30x [1.20-1.50]) "
        "and faster "
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
    results = fake_results_folder(tmp_path, fake_entries(fake_ratio(1.3, 1.2, 1.5)))
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
    entries = {findings.NB02: fake_entries(fake_ratio(ratio, *interval))[findings.NB02]}
    assert words in bottom_lines.bottom_line(findings.NB02, fake_results_folder(tmp_path, entries))


@pytest.mark.parametrize(
    "interval,verdict", [([1.3, 1.5], "met"), ([1.1, 1.2], "not met"), ([1.2, 1.5], "inconclusive")]
)
def test_a_bottom_line_states_the_recorded_verdict_of_a_goal(
    tmp_path: Path, interval: list[float], verdict: str
) -> None:
    ratio = fake_ratio(sum(interval) / 2, *interval)
    goal = {**ratio, "goal": 1.25, "verdict": verdict}
    entries = {
        findings.NB02: {
            "results": {"ratios": {"capture_over_eager": ratio}, "goals": {"capture / eager": goal}}
        }
    }
    text = bottom_lines.bottom_line(findings.NB02, fake_results_folder(tmp_path, entries))
    # the goal's figure is the finding's: shown once
    assert text.endswith(f"Its goal, capture / eager of 1.25x or more, is {verdict}.")
    assert text.count(str(Ratio(ratio["ratio"], *interval, 5, True))) == 1


def test_a_verdict_that_its_interval_does_not_give_is_refused(tmp_path: Path) -> None:
    ratio = fake_ratio(1.4, 1.3, 1.5)
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
        bottom_lines.bottom_line(findings.NB02, fake_results_folder(tmp_path, entries))


def test_several_goals_are_counted_by_verdict_and_a_cpu_run_judges_none(tmp_path: Path) -> None:
    ratio = fake_ratio(1.3, 1.2, 1.5)
    entries = fake_entries(ratio)
    entries[findings.NB03]["results"]["goals"] = {
        "best dynamic / best DataLoader": {**ratio, "goal": 1.1, "verdict": "met"},
        "best dynamic / pipeline mode, same knobs": {**ratio, "goal": 1.25, "verdict": "inconclusive"},
        "best dynamic / ceiling": {**ratio, "goal": 1.6, "verdict": "not met"},
    }
    entries[findings.NB04]["results"]["goals"] = {  # as nb04_scaling_out.record stores a CPU run
        "weak scaling (all processes / 1 process)": {**ratio, "goal": 1.9, "verdict": None}
    }
    cpu = {"gpu": None, "gpu_count": 0, "cpu_count": 2}
    results = fake_results_folder(tmp_path, entries, machine=cpu)
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
    gpu = fake_results_folder(tmp_path / "gpu", entries, machine=h200)
    assert bottom_lines.bottom_line(findings.NB03, gpu).endswith(
        "Its goals: 1 met, 1 not met, 1 inconclusive ([all 3](../docs/pages/results.md#the-suites-goals))."
    )
    # 04 on a one-GPU machine runs CPU processes: its record holds no verdict, and none is said
    assert bottom_lines.bottom_line(findings.NB04, gpu).endswith(
        "Its goal (weak scaling (all processes / 1 process)) is stated for GPUs and not judged on this run."
    )
    # another GPU than the goals' measures the ratios; its verdicts do not judge the goals
    h100 = fake_results_folder(tmp_path / "h100", entries, machine={**h200, "gpu": "NVIDIA H100 80GB HBM3"})
    text = bottom_lines.bottom_line(findings.NB03, h100)
    assert text.endswith(
        "Its goals are stated for an H200, not judged on this NVIDIA H100 80GB HBM3 "
        "([all 3](../docs/pages/results.md#the-suites-goals))."
    )
    assert " met" not in text and "inconclusive" not in text


def test_a_notebook_without_a_record_or_a_function_is_named(tmp_path: Path) -> None:
    results = fake_results_folder(
        tmp_path,
        {findings.NB02: fake_entries(fake_ratio(1.3, 1.2, 1.5))[findings.NB02], "08-new": {"results": {}}},
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
    fake_record(
        tmp_path / "results" / "gpu.json",
        "2026-03-02T09:00:00+00:00",
        {"02-capture-mode": {"results": {"ratios": {"capture_over_eager": fake_ratio(*interval)}}}},
        machine=H200,
    )
    notebook = tmp_path / "notebooks" / "02-capture-mode.ipynb"
    fake_notebook(notebook, fake_entry("Capture"))
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
    ratios = {"capture, epoch readers + checkpoints / eager + checkpoints": fake_ratio(0.9, 0.85, 0.95)}
    entry = {"results": {"resume": {"bit_identical": True}, "benchmark": {"ratios": ratios}}}
    fake_record(
        tmp_path / "gpu.json", "2026-03-02T09:00:00+00:00", {"06-checkpoint-resume": entry}, machine=H200
    )
    get = findings.Lookup(records.newest_gpu_first(tmp_path))
    assert (
        findings.ADVICE["06-checkpoint-resume"](get)
        == "Resume an eager loop from DALI's checkpoints inside one of your own"
    )
    ratios.update({"capture, epoch readers + checkpoints / eager + checkpoints": fake_ratio(1.1, 1.05, 1.15)})
    fake_record(
        tmp_path / "gpu.json", "2026-03-02T09:00:00+00:00", {"06-checkpoint-resume": entry}, machine=H200
    )
    get = findings.Lookup(records.newest_gpu_first(tmp_path))
    assert "a capture loop with a new reader each epoch" in findings.ADVICE["06-checkpoint-resume"](get)
    ratios.update(
        {"capture, epoch readers + checkpoints / eager + checkpoints": fake_ratio(0.95, 0.85, 1.05)}
    )
    fake_record(
        tmp_path / "gpu.json", "2026-03-02T09:00:00+00:00", {"06-checkpoint-resume": entry}, machine=H200
    )
    get = findings.Lookup(records.newest_gpu_first(tmp_path))
    assert "an eager loop" in findings.ADVICE["06-checkpoint-resume"](get)  # a tie: the simpler loop
    entry["results"]["resume"]["bit_identical"] = False
    fake_record(
        tmp_path / "gpu.json", "2026-03-02T09:00:00+00:00", {"06-checkpoint-resume": entry}, machine=H200
    )
    get = findings.Lookup(records.newest_gpu_first(tmp_path))
    assert "did not resume bit-identically" in findings.ADVICE["06-checkpoint-resume"](get)


def test_a_bottom_line_keeps_a_second_finding_within_its_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The finding's second sentence goes where the cell would pass SHOWN_CHARS as a reader sees it."""
    assert bottom_lines.shown_length("**Bottom line.** Do `x` ([the recipe](#recipe)).") == len(
        "Bottom line. Do x (the recipe)."
    )
    results = fake_results_folder(tmp_path, fake_entries(fake_ratio(1.3, 1.2, 1.5)))
    second = SAID[findings.NB06][1]
    assert second in bottom_lines.bottom_line(findings.NB06, results)
    monkeypatch.setattr(bottom_lines, "SHOWN_CHARS", 200)
    short = bottom_lines.bottom_line(findings.NB06, results)
    assert SAID[findings.NB06][0] in short and second not in short


@pytest.mark.parametrize("low,advised", [(1.1, True), (0.9, False)])
def test_hw_decoder_load_1_is_advised_by_its_paired_ratio_against_the_default(
    low: float, advised: bool, tmp_path: Path
) -> None:
    """Where the record holds hw_decoder_load 1 / the default, the advice names
    ``hw_decoder_load=1`` exactly when that interval lies above 1."""
    entries = fake_entries(fake_ratio(1.3, 1.2, 1.5))
    entries[findings.NB01]["results"]["ratios"] = {
        "hw_gpu_over_cpu": fake_ratio(8.0, 7.5, 8.9),
        "gpu_over_cpu": fake_ratio(3.3, 3.1, 3.5),
        "hw_over_default": fake_ratio(1.3, low, 1.5),
    }
    entries[findings.NB01]["parameters"] = {"speed_images": 64}
    results = fake_results_folder(tmp_path, entries)
    text = bottom_lines.bottom_line(findings.NB01, results)
    assert ("Decode JPEGs on the GPU with `hw_decoder_load=1` (" in text) is advised, text
    assert "hw_decoder_load 1 was" in text  # the ratio behind the advice, said beside it
