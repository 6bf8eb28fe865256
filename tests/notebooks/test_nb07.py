"""Notebook 07 (video clips): executed at CI scale on the CPU tier through the shared ``ci_run``
fixture, with assertions on what it records; a bad ``video_dir`` refused with the files named (the
clip arithmetic and PyAV's clips: tests/toolkit/test_video_clips.py)."""

from __future__ import annotations

import math
import os
import shutil
from pathlib import Path

import pytest
from conftest import check_goal
from conftest import check_steady
from notebook_setup import run_setup

from helpers.data.paths import REPO_ROOT
from helpers.toolkit.benchmarking import rate_interval
from helpers.toolkit.benchmarking import ratio
from helpers.toolkit.parameters import ParameterError
from helpers.toolkit.video_clips import Alignment
from helpers.toolkit.video_clips import clip_span
from helpers.toolkit.video_clips import clip_starts
from tools import run_notebooks

NOTEBOOK = REPO_ROOT / "notebooks" / "07-video-clips.ipynb"
# its refusals of bad parameters, run in its set-up by tests/notebooks/test_notebook_refusals.py
REFUSALS = [
    ({"batchsize": 4}, ParameterError, "unknown parameter batchsize; did you mean batch_size?"),
    # CI scale: the sweep's 160x120 set, one video a class, has 21 clips: 5 shards of a batch of 4
    ({"readers": 6}, ParameterError, "readers=6: the sweep's 160x120 set has 21 clips, and 6 readers"),
    ({"reader_counts": [1, 6]}, ParameterError, "reader_counts=[1, 6]: the sweep's 160x120 set has 21 clips"),
    ({"pyav_clips": 2}, ParameterError, "pyav_clips=2: fewer clips than one batch (batch_size=4)"),
]
NAME = NOTEBOOK.stem
# the goals a CPU run judges (their targets are 07's metadata's)
GOALS = {
    "fed: best DALI / training alone",
    "alone: best DALI / best PyAV DataLoader",
    "alone: dynamic mode (threads) / pipeline mode (pipelines), same readers",
}
LIMIT_GOAL = "alone: best DALI's decoded frames/s / NVDEC's measured limit"  # a GPU's only


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
        ["pipeline", "decoders.video", "limit"] + ["pyav"] * len(parameters["dataloader_workers"])
    )
    for name, trials in alone.items():
        assert len(trials) == parameters["trials"] and all(t["rate"] > 0 for t in trials), name
        assert all(t["nvdec_pct"] is None and 0 < t["cpu_pct"] <= 100 for t in trials), name  # no NVML here
        assert all(t["rate"] == pytest.approx(t["samples"] / t["seconds"]) for t in trials), name
    # the DALI loaders' ready batches were handed over untimed: capture loops carry one per reader
    assert all(t["skipped"] == 0 for n, k in kinds.items() if k == "pyav" for t in alone[n])
    assert any(t["skipped"] > 0 for n, k in kinds.items() if k == "pipeline" for t in alone[n])
    for run in (results["alone"], results["fed"], results["variants"]):  # whole epochs, >= min_seconds
        assert run["min_seconds"] == parameters["min_seconds"]
        check_steady(run)
    # each goal is the ratio of the recorded trials of the ways the notebook picked, by its rule
    picks = results["picks"]
    assert picks["best DALI"] == max(
        (n for n, k in kinds.items() if k == "dali"), key=lambda n: rate_interval(clips_per_s(alone[n]))[0]
    )
    recomputed = ratio(clips_per_s(alone[picks["best DALI"]]), clips_per_s(alone[picks["best DataLoader"]]))
    goal = results["goals"]["alone: best DALI / best PyAV DataLoader"]
    assert goal["ratio"] == pytest.approx(recomputed.ratio) and goal["ci95"] == pytest.approx(
        [recomputed.low, recomputed.high]
    )
    for tied in picks["best DALI tied with"]:  # a tie is a rival whose interval against the pick holds 1
        assert ratio(clips_per_s(alone[tied]), clips_per_s(alone[picks["best DALI"]])).high >= 1
    fed = {name: w["trials"] for name, w in results["fed"]["ways"].items()}
    ceiling = next(n for n, w in results["fed"]["ways"].items() if w["kind"] == "ceiling")
    assert results["goals"]["fed: best DALI / training alone"]["ratio"] == pytest.approx(
        ratio(clips_per_s(fed[picks["best DALI"]]), clips_per_s(fed[ceiling])).ratio
    )
    # no HEVC goal (DALI's CPU decoder takes no HEVC), no NVDEC limit (the probe runs on a GPU only)
    assert set(results["goals"]) == set(GOALS) and results["decode_limit"] is None
    assert document.headline["nvdec_limit_fps"] is None and document.headline["straight_through_fps"] > 0
    for name, g in results["goals"].items():
        check_goal("07-video-clips", name, g, parameters["trials"])


@pytest.mark.notebook
def test_the_ci_run_checks_the_clips_and_frames_of_every_dali_way_first(document) -> None:
    results, parameters = document.results, document.parameters
    per_video = len(
        clip_starts(parameters["frames"], parameters["clip_frames"], parameters["stride"], parameters["step"])
    )
    assert results["clips_checked"] == parameters["videos"] * per_video  # every clip once, by every shard
    assert set(results["alignment"]) == {"experimental.readers.Video", "decoders.video"}
    # each way's check compared a batch of clips starting between keyframes (the notebook stops only on
    # "misaligned"): every one "aligned", the same frames clearly closer than the neighbouring ones
    between = clip_starts(
        parameters["frames"], parameters["clip_frames"], parameters["stride"], parameters["gop"] // 2 + 1
    )[: parameters["batch_size"]]
    assert any(start % parameters["gop"] for start in between)
    for way, found in results["alignment"].items():
        assert found["clips"] == len(between) and Alignment(**found).verdict == "aligned", (way, found)
    span = clip_span(parameters["clip_frames"], parameters["stride"])
    assert results["frames_per_clip"]["dali"] == span  # GOP 16, a clip every 16 frames: on a keyframe
    assert results["frames_per_clip"]["decoders.video"] > span  # from the start of the file
    assert (
        "captured Resize" in results["captured"]
        and f"each of {parameters['readers']} readers" in results["captured"]
    )
    costs = results["variants"]["frames_per_clip"]
    assert (
        list(costs) == [f"vp9, gop {parameters['gop']}", "vp9, gop 64"]
        and costs["vp9, gop 64"] > costs[f"vp9, gop {parameters['gop']}"]
    )
    # DALI 2.4's experimental reader skips the unreadable and the short video: fewer clips, no error
    assert results["dali_on_bad_files"].startswith("handed over"), results["dali_on_bad_files"]
    check = results["folder_check"]
    assert "not a readable video" in check and "shorter than one clip" in check and ".;" not in check
    sweep = results["sweep"]
    assert sweep["settings"] == parameters["sweep"]
    assert list(sweep["dali_over_dataloader"]) == [s.replace("/", ", gop ") for s in parameters["sweep"]]


@pytest.mark.notebook
def test_a_video_dir_that_is_not_a_folder_of_videos_is_refused_naming_it(tmp_path: Path) -> None:
    """The integration run of 07's refusal (in this process too: test_notebook_refusals.py)."""
    (tmp_path / "cats").mkdir()
    (tmp_path / "cats" / "a.mp4").write_text("not a video")
    run = run_notebooks.run_notebook(NOTEBOOK, tmp_path / "out", {"video_dir": str(tmp_path), "trials": 1})
    assert not run.ok
    assert "DataSourceError" in run.error and "video_dir" in run.error and "a.mp4" in run.error


# --- a folder too small for the reader count: refused or lowered in the set-up, before any timing ----


@pytest.fixture(scope="module")
def small_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four good VP9 videos of 48 frames in two classes (clips of 8 frames every 2, one every 16
    frames: 3 a video, 12 in all), as a new user's folder."""
    from helpers.data.embedded_video import build_video_set
    from helpers.data.paths import default_data_dir

    built = build_video_set(
        default_data_dir(), codec="vp9", width=96, height=64, frames=48, gop=16, per_class=2
    )
    root = tmp_path_factory.mktemp("small") / "videos"
    for cls in sorted(p.name for p in built.iterdir() if p.is_dir())[:2]:
        shutil.copytree(built / cls, root / cls)
    return root


@pytest.mark.parametrize(
    "given, words",
    [
        (
            {"readers": 4},
            "readers=4: video_dir has 12 clips, and 4 readers, one shard each, leave 3 clip(s) in "
            "the smallest shard, fewer than a batch (batch_size=4); readers at most 3",
        ),
        ({"readers": 13}, "leave 0 clip(s) in the smallest shard"),  # DALI's assert would come mid-run
        (
            {"batch_size": 13, "readers": 1},
            "batch_size=13: video_dir has 12 clips, fewer than one batch; batch_size at most 12",
        ),
        (
            {"reader_counts": [1, 4]},
            "reader_counts=[1, 4]: video_dir has 12 clips, so a shard holds a batch of 4 "
            "for 3 readers at most",
        ),
    ],
)
def test_a_small_folder_refuses_a_reader_count_it_cannot_shard_in_the_set_up(small_folder, given, words):
    """Refused by the set-up cells (no timing runs there), naming the parameter and what works."""
    with pytest.raises(ParameterError) as raised:
        run_setup(NOTEBOOK, {"video_dir": str(small_folder), "device": "cpu", **given})
    assert words in str(raised.value)


def test_a_small_folder_lowers_the_default_reader_count_with_a_printed_line(
    small_folder: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: 16)  # None: one reader per core
    setup = run_setup(NOTEBOOK, {"video_dir": str(small_folder), "device": "cpu"})["setup"]
    said = capsys.readouterr().out
    assert (
        "readers lowered from its default 16 (one per core) to 3: video_dir has 12 clips, and each "
        "reader's shard must hold a batch of 4"
    ) in said
    assert setup.readers == 3 and setup.reader_counts == [1, 2, 3] and setup.batch_size == 4
    # straight through: one 32-frame run a video, 4 runs: 3 readers of one run a batch
    assert (setup.run_frames, setup.run_readers, setup.run_batch) == (32, 3, 1)


def test_the_gpu_run_measured_nvdecs_limit_and_shares_each_way_of_it(gpu_results) -> None:
    """The probe ran where NVDEC is the bound: more legacy-reader processes than video decoders,
    until NVDEC read 97% busy (or the record says the figure is a lower bound); the goal is the
    best DALI way's decoded frames/s over that limit, with the interval of its rate, or, against a
    lower bound, from 0 to its high end: never met."""
    from helpers.toolkit.devices import video_decoders

    document = gpu_results(NAME)
    results = document.results
    probe = results["decode_limit"]
    engines = video_decoders(results["gpu"], say=lambda _: None)
    assert probe["processes"] > engines and probe["reached"] == (probe["nvdec_pct"] >= probe["busy_pct"])
    assert probe["frames_per_s"] == pytest.approx(probe["clips_per_s"] * probe["frames_per_clip"])
    assert document.headline["nvdec_limit_fps"] == pytest.approx(probe["frames_per_s"])
    best = results["picks"]["best DALI"]
    rates = clips_per_s(results["alone"]["ways"][best]["trials"])
    low, high = rate_interval(rates)[1:]
    k = results["frames_per_clip"]["dali"] / probe["frames_per_s"]
    goal = results["goals"][LIMIT_GOAL]
    assert goal["goal"] == 0.90 and goal["ratio"] == pytest.approx(rate_interval(rates)[0] * k)
    if probe["reached"]:
        assert goal["ci95"] == pytest.approx([low * k, high * k])
    else:
        assert goal["ci95"] == pytest.approx([0.0, high * k]) and goal["verdict"] != "met"


# --- the recipe: one reader per decoder, one shard and thread each, feeding a 3D model ------------------


def one_video_a_class(root: Path, codec: str, width: int, height: int) -> Path:
    """The embedded set's 14 videos of 48 frames, each in a class folder of its own: with clips of 8
    frames every 2 and a clip every 48 frames, each video gives one clip, so a label names a clip."""
    from helpers.data.embedded_video import build_video_set
    from helpers.data.paths import default_data_dir

    built = build_video_set(
        default_data_dir(), codec=codec, width=width, height=height, frames=48, gop=16, per_class=2
    )
    for i, video in enumerate(sorted(built.glob("*/*.mp4"))):
        (root / f"{i:02d}").mkdir(parents=True)
        shutil.copy(video, root / f"{i:02d}" / video.name)
    return root


def check_recipe(
    run_recipe, folder: Path, device: str, readers: int, batch: int, size: int, steps: int
) -> None:
    """Run the recipe on ``folder`` (one clip a class); check what it trained on, and that each reader
    reads its own shard every epoch: read again through the recipe's own ``batches``, two epochs of
    each reader hold the same clips twice, and the readers' clips are disjoint and cover the folder."""
    from torchvision.models.video import R2Plus1D_18_Weights

    clips = len(list(folder.iterdir()))
    sizes = [clips * (i + 1) // readers - clips * i // readers for i in range(readers)]  # DALI's shards
    # pad_last_batch: every reader's epoch has the batches of the largest shard, repeats filling the rest
    epoch = -(-max(sizes) // batch)
    settings = dict(
        FOLDER=str(folder),
        CLASSES=clips,
        GPU=device == "gpu",
        READERS=readers,
        CLIP_FRAMES=8,
        STEP=48,
        SIZE=size,
        BATCH=batch,
        STEPS=steps,
    )
    report = run_recipe(
        NOTEBOOK,
        settings,
        {
            "loss": "float(loss)",
            "clips": "[list(clips.shape), str(clips.dtype), clips.device.type]",
            "x": "[list(x.shape), str(x.dtype), x.device.type]",
            "pixel": "[clips[0, 0, 0, 0].tolist(), x[0, 0, :, 0, 0].tolist()]",  # a pixel's RGB, as fed
            "labels": "labels.tolist()",
            # the model's step ran: every parameter has a gradient and SGD's momentum buffer
            "trained": "[all(p.grad is not None for p in model.parameters()), len(opt.state), "
            "len(list(model.parameters()))]",
            "shards": f"[[v for _, (_, y) in zip(range({2 * epoch}), batches(i)) for v in y.tolist()] "
            "for i in range(READERS)]",
        },
    )
    on = "cuda" if device == "gpu" else "cpu"
    assert math.isfinite(report["loss"]), report
    has_grads, stepped, parameters = report["trained"]
    assert has_grads and stepped == parameters > 0, report["trained"]
    assert report["clips"] == [[batch, 8, size, size, 3], "torch.uint8", on]
    # normalized on the clips' device as the pretrained r2plus1d_18 expects (torchvision's own values)
    assert report["x"] == [[batch, 8, 3, size, size], "torch.float32", on]
    preset = R2Plus1D_18_Weights.KINETICS400_V1.transforms()
    rgb, fed = report["pixel"]
    expected = [(v / 255 - m) / s for v, m, s in zip(rgb, preset.mean, preset.std, strict=True)]
    assert fed == pytest.approx(expected, abs=1e-5), (rgb, fed)
    shards = []
    for i, seen in enumerate(report["shards"]):
        first, second = seen[: epoch * batch], seen[epoch * batch :]
        assert len(set(first)) == sizes[i] and set(second) == set(first), (i, seen)  # the same shard twice
        shards.append(set(first))
    assert sorted(set().union(*shards)) == list(range(clips)) and sum(map(len, shards)) == clips, shards
    # the last step took reader (steps - 1) % readers's batch (in turn): clips of that reader's shard
    assert len(report["labels"]) == batch and set(report["labels"]) <= shards[(steps - 1) % readers], report


@pytest.mark.slow
def test_the_recipe_runs_without_the_suite(run_recipe, tmp_path: Path) -> None:
    """The recipe in a fresh process without the suite, on the CPU: three readers on 14 one-clip
    classes (shards of 4, 5 and 5 clips), the small 3D network."""
    folder = one_video_a_class(tmp_path / "videos", "vp9", 96, 64)
    check_recipe(run_recipe, folder, device="cpu", readers=3, batch=2, size=32, steps=12)


def test_the_recipe_on_the_gpu(gpu_run, run_recipe, tmp_path: Path) -> None:
    """Seven readers (an H200's video decoders) on H.264, r2plus1d_18."""
    folder = one_video_a_class(tmp_path / "videos", "h264", 160, 120)
    check_recipe(run_recipe, folder, device="gpu", readers=7, batch=2, size=64, steps=14)
