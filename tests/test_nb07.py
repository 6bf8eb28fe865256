"""Notebook 07 (video clips): executed at CI scale on the CPU tier through the shared ``ci_run``
fixture, with assertions on what it records; the clip arithmetic and PyAV's clips against DALI's on
the small embedded VP9 set; a bad ``video_dir`` refused with the files named."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from helpers.paths import REPO_ROOT
from helpers.video_clips import PyAVClips, clip_list, clip_span, clip_starts, decoded_frames, read_clip
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
    results, parameters = document["results"], document["parameters"]
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
        low, high = g["ci95"]
        assert g["goal"] == GOALS[name] and 0 < low <= g["ratio"] <= high
        expected = "met" if low >= g["goal"] else "not met" if high < g["goal"] else "inconclusive"
        assert g["verdict"] == expected
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


def test_clips_are_cut_as_dalis_readers_cut_them() -> None:
    assert clip_span(8, 2) == 15
    assert clip_starts(64, 8, 2, 16) == [0, 16, 32, 48]
    assert clip_starts(64, 16, 2, 16) == [0, 16, 32]  # a clip of 31 frames from 48 would not fit
    assert clip_starts(10, 8, 2, 16) == []
    assert len(clip_starts(64, 8, 2, 1)) == 49  # DALI 2.4: start + stride x frames <= 64, not the span
    assert clip_starts(64, 16, 1, 16) == [0, 16, 32, 48]
    assert decoded_frames(16, 8, 2, [0, 16, 32]) == 15  # starts on a keyframe
    assert decoded_frames(20, 8, 2, [0, 16, 32]) == 19  # 4 frames before the clip, from keyframe 16
    clips = clip_list([Path("a.mp4"), Path("b.mp4")], [0, 1], [64, 32], clip_frames=8, stride=2, step=16)
    assert [(c.path.name, c.label, c.start) for c in clips] == [
        ("a.mp4", 0, 0), ("a.mp4", 0, 16), ("a.mp4", 0, 32), ("a.mp4", 0, 48),
        ("b.mp4", 1, 0), ("b.mp4", 1, 16)]


@pytest.mark.slow
def test_pyav_decodes_the_frames_of_the_clip_it_is_asked_for(tmp_path: Path) -> None:
    from helpers.embedded_video import build_video_set, load_video_set

    videos = load_video_set(build_video_set(tmp_path, codec="vp9", width=96, height=64, frames=16, gop=8,
                                            per_class=1))
    path = videos.files[0]
    whole = read_clip(path, 0, 16, 1)
    assert whole.shape == (16, 64, 96, 3) and whole.dtype == np.uint8
    clip = read_clip(path, 3, 4, 2)  # frames 3, 5, 7, 9: seeking back to keyframe 0, then 8
    assert np.array_equal(clip, whole[3:10:2])
    small = read_clip(path, 0, 2, 1, size=(32, 24))
    assert small.shape == (2, 24, 32, 3)
    with pytest.raises(ValueError, match="shorter than the clip"):
        read_clip(path, 10, 4, 2)  # frames 10-16: past the end
    dataset = PyAVClips(clip_list([path], [3], [16], clip_frames=4, stride=2, step=8), clip_frames=4,
                        stride=2, size=(32, 24))
    assert len(dataset) == 2
    frames, label = dataset[1]
    assert tuple(frames.shape) == (4, 24, 32, 3) and label == 3


@pytest.mark.notebook
def test_a_video_dir_that_is_not_a_folder_of_videos_is_refused_naming_it(tmp_path: Path) -> None:
    """The integration run of 07's refusal (in this process too: tests/test_notebook_refusals.py)."""
    (tmp_path / "cats").mkdir()
    (tmp_path / "cats" / "a.mp4").write_text("not a video")
    run = suite.run_notebook(NOTEBOOK, tmp_path / "out", {"video_dir": str(tmp_path), "trials": 1})
    assert not run.ok
    assert "DataSourceError" in run.error and "video_dir" in run.error and "a.mp4" in run.error
