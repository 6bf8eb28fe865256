"""Notebook 07 (video clips): executed at CI scale on the CPU tier through the shared ``ci_run``
fixture, with assertions on what it records; a bad ``video_dir`` refused with the files named (the
clip arithmetic and PyAV's clips: tests/test_video_clips.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import check_goal

from helpers.benchmarking import rate_interval
from helpers.benchmarking import ratio
from helpers.parameters import ParameterError
from helpers.paths import REPO_ROOT
from helpers.video_clips import clip_span
from helpers.video_clips import clip_starts
from tools import run_notebooks

NOTEBOOK = REPO_ROOT / "notebooks" / "07-video-clips.ipynb"
# its refusals of bad parameters, run in its set-up by tests/test_notebook_refusals.py
REFUSALS = [
    ({"batchsize": 4}, ParameterError, "unknown parameter batchsize; did you mean batch_size?"),
]
NAME = NOTEBOOK.stem
GOALS = {"fed: best DALI / training alone": 0.85, "alone: best DALI / best PyAV DataLoader": 5,
         "alone: best DALI's decoded frames/s / straight-through decoding": 0.85,
         "alone: dynamic mode (threads) / pipeline mode (pipelines), same readers": 0.95}


@pytest.fixture(scope="module")
def document(ci_run: dict[str, run_notebooks.NotebookRun]) -> dict:
    run = ci_run[NAME]
    assert run.ok, run.error
    return run.results


def clips_per_s(trials: list[dict]) -> list[float]:
    return [t["rate"] for t in trials]


@pytest.mark.notebook
def test_the_ci_run_times_every_way_and_its_goals_follow_from_the_trials(document) -> None:
    results, parameters = document.results, document.parameters
    assert parameters["device"] == "cpu" and parameters["codec"] == "vp9" and results["gpu"] is None
    alone = {name: w["trials"] for name, w in results["alone"]["ways"].items()}
    kinds = {name: w["kind"] for name, w in results["alone"]["ways"].items()}
    counts = results["readers_of_way"]
    dali = sorted(counts[n] for n, k in kinds.items() if k == "dali")
    assert dali == sorted(parameters["reader_counts"] + [parameters["readers"]])  # each count, and eager
    assert sorted(k for k in kinds.values() if k != "dali") == sorted(
        ["pipeline", "decoders.video", "limit"] + ["pyav"] * len(parameters["dataloader_workers"]))
    for name, trials in alone.items():
        assert len(trials) == parameters["trials"] and all(t["rate"] > 0 for t in trials), name
        assert all(t["nvdec_pct"] is None and 0 < t["cpu_pct"] <= 100 for t in trials), name  # no NVML here
        assert all(t["rate"] == pytest.approx(t["samples"] / t["seconds"]) for t in trials), name
    # the DALI loaders' ready batches were handed over untimed: capture loops carry one per reader
    assert all(t["skipped"] == 0 for n, k in kinds.items() if k == "pyav" for t in alone[n])
    assert any(t["skipped"] > 0 for n, k in kinds.items() if k == "pipeline" for t in alone[n])
    # each goal is the ratio of the recorded trials of the ways the notebook picked, by its rule
    picks = results["picks"]
    assert picks["best DALI"] == max((n for n, k in kinds.items() if k == "dali"),
                                     key=lambda n: rate_interval(clips_per_s(alone[n]))[0])
    recomputed = ratio(clips_per_s(alone[picks["best DALI"]]), clips_per_s(alone[picks["best DataLoader"]]))
    goal = results["goals"]["alone: best DALI / best PyAV DataLoader"]
    assert goal["ratio"] == pytest.approx(recomputed.ratio) and goal["ci95"] == pytest.approx([recomputed.low,
                                                                                               recomputed.high])
    for tied in picks["best DALI tied with"]:  # a tie is a rival whose interval against the pick holds 1
        assert ratio(clips_per_s(alone[tied]), clips_per_s(alone[picks["best DALI"]])).high >= 1
    fed = {name: w["trials"] for name, w in results["fed"]["ways"].items()}
    ceiling = next(n for n, w in results["fed"]["ways"].items() if w["kind"] == "ceiling")
    assert results["goals"]["fed: best DALI / training alone"]["ratio"] == pytest.approx(
        ratio(clips_per_s(fed[picks["best DALI"]]), clips_per_s(fed[ceiling])).ratio)
    assert set(results["goals"]) == set(GOALS)  # no HEVC goal: DALI's CPU decoder takes no HEVC
    for name, g in results["goals"].items():
        check_goal(g, GOALS[name], parameters["trials"])


@pytest.mark.notebook
def test_the_ci_run_checks_the_clips_and_frames_of_every_dali_way_first(document) -> None:
    results, parameters = document.results, document.parameters
    per_video = len(clip_starts(parameters["frames"], parameters["clip_frames"], parameters["stride"],
                                parameters["step"]))
    assert results["clips_checked"] == parameters["videos"] * per_video  # every clip once, by every shard
    assert set(results["alignment"]) == {"experimental.readers.Video", "decoders.video"}
    for way, found in results["alignment"].items():  # the same frames, clearly closer than the neighbours
        assert found["same"] * 2 <= found["neighbours"], way
    span = clip_span(parameters["clip_frames"], parameters["stride"])
    assert results["frames_per_clip"]["dali"] == span  # GOP 16, a clip every 16 frames: on a keyframe
    assert results["frames_per_clip"]["decoders.video"] > span  # from the start of the file
    assert "captured Resize" in results["captured"] and f"each of {parameters['readers']} readers" in \
        results["captured"]
    costs = results["variants"]["frames_per_clip"]
    assert list(costs) == [f"vp9, gop {parameters['gop']}", "vp9, gop 64"] and costs["vp9, gop 64"] > costs[
        f"vp9, gop {parameters['gop']}"]
    # DALI 2.4's experimental reader skips the unreadable and the short video: fewer clips, no error
    assert results["dali_on_bad_files"].startswith("handed over"), results["dali_on_bad_files"]
    check = results["folder_check"]
    assert "not a readable video" in check and "shorter than one clip" in check and ".;" not in check
    sweep = results["sweep"]
    assert sweep["settings"] == parameters["sweep"]
    assert list(sweep["dali_over_dataloader"]) == [s.replace("/", ", gop ") for s in parameters["sweep"]]


@pytest.mark.notebook
def test_a_video_dir_that_is_not_a_folder_of_videos_is_refused_naming_it(tmp_path: Path) -> None:
    """The integration run of 07's refusal (in this process too: tests/test_notebook_refusals.py)."""
    (tmp_path / "cats").mkdir()
    (tmp_path / "cats" / "a.mp4").write_text("not a video")
    run = run_notebooks.run_notebook(NOTEBOOK, tmp_path / "out", {"video_dir": str(tmp_path), "trials": 1})
    assert not run.ok
    assert "DataSourceError" in run.error and "video_dir" in run.error and "a.mp4" in run.error
