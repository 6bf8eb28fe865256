"""Notebook 07 (video clips): executed at CI scale on the CPU tier through the shared ``ci_run``
fixture, with assertions on what it records; a bad ``video_dir`` refused with the files named (the
clip arithmetic and PyAV's clips: tests/test_video_clips.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import check_goal

from helpers.paths import REPO_ROOT
from helpers.video_clips import clip_span
from tools import suite

NOTEBOOK = REPO_ROOT / "notebooks" / "07-video-clips.ipynb"
NAME = NOTEBOOK.stem
GOALS = {"alone: best dynamic / best DataLoader": 2.5, "alone: capture / pipeline mode, same reader": 0.95,
         "fed: best dynamic / ceiling": 0.5,
         "alone: best dynamic's decoded frames/s / straight-through decoding": 0.8}


@pytest.fixture(scope="module")
def document(ci_run: dict[str, suite.NotebookRun]) -> dict:
    run = ci_run[NAME]
    assert run.ok, run.error
    return run.results


@pytest.mark.notebook
def test_the_ci_run_records_every_loader_its_goals_and_the_same_clips(document: dict) -> None:
    results, parameters = document.results, document.parameters
    assert parameters["device"] == "cpu" and parameters["codec"] == "vp9"
    names = set(results["alone"]["configs"])
    assert {"eager b4", "capture b4", "pipeline b4", "straight b4"} <= names
    assert {f"dataloader b4 workers={w}" for w in parameters["dataloader_workers"]} <= names
    assert not any(c["loader"] == "legacy" for c in results["alone"]["configs"].values())  # GPU only
    for name, trials in results["alone"]["trials"].items():
        assert len(trials) == parameters["trials"] and all(t["clips_per_s"] > 0 for t in trials), name
    assert "ceiling b4" in results["fed"]["configs"]
    assert set(results["goals"]) == set(GOALS)
    for name, g in results["goals"].items():
        check_goal(g, GOALS[name], parameters["trials"])
    agreement = results["agreement"]  # DALI's clip is PyAV's, not the frames one later
    assert agreement["same_frames_mad"] < 4 < agreement["frames_one_later_mad"]
    assert results["captured"].startswith("experimental.readers.Video") and "Resize" in results["captured"]
    # DALI 2.4's experimental reader skips the unreadable and the short video: fewer clips, no error
    assert results["dali_on_bad_files"].startswith("handed over"), results["dali_on_bad_files"]
    check = results["folder_check"]
    assert "not a readable video" in check and "shorter than one clip" in check
    sweep = results["sweep"]  # the same clips at other frame sizes and GOPs, DALI against the DataLoader
    assert sweep["settings"] == parameters["sweep"]
    main = f"{parameters['resolution'] or '320x240'}, gop {parameters['gop']} (section 6)"
    assert list(sweep["over_dataloader"]) == [main] + [s.replace("/", ", gop ") for s in parameters["sweep"]]
    for setting, by_reader in sweep["over_dataloader"].items():
        assert set(by_reader) == {"capture"}, setting  # the legacy reader needs a GPU
        rounds = parameters["trials"] if setting == main else parameters["sweep_trials"]
        assert all(len(sweep["clips_per_s"][f"{setting}: {k}"]) == rounds for k in ("dataloader", "capture"))
    # the main setting's row is section 6's rounds, not a second measurement
    section6 = [t["clips_per_s"] for t in results["alone"]["trials"]["capture b4"]]
    assert sweep["clips_per_s"][f"{main}: capture"] == section6
    # each clip costs the frames from its keyframe to its last frame: at least the clip's span
    span = clip_span(parameters["clip_frames"], parameters["stride"])
    assert all(span <= d < span + parameters["gop"] for d in results["decoded_frames_per_clip"])


@pytest.mark.notebook
def test_a_video_dir_that_is_not_a_folder_of_videos_is_refused_naming_it(tmp_path: Path) -> None:
    """The integration run of 07's refusal (in this process too: tests/test_notebook_refusals.py)."""
    (tmp_path / "cats").mkdir()
    (tmp_path / "cats" / "a.mp4").write_text("not a video")
    run = suite.run_notebook(NOTEBOOK, tmp_path / "out", {"video_dir": str(tmp_path), "trials": 1})
    assert not run.ok
    assert "DataSourceError" in run.error and "video_dir" in run.error and "a.mp4" in run.error
