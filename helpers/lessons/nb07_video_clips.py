"""Notebook 07's bookkeeping, kept out of its lessons: the set-up (``set_up``: the parameters
checked, each None replaced by this machine's default, the videos found and checked, the reader
counts and the batch fitted to the clips a shard holds: ``fit_to_shards``; a frozen ``Setup`` read
by attribute), the clips' cost, NVDEC's limit
measured by a probe of spawned processes (``decode_limit``, GPU only), the tables and charts of
its harness runs, sections 5 and 6 (the same best ways over other builds of
the embedded set) run in one call each, the goals, the bad-folder demonstration, the sentences it
generates (each comparison worded by its 95% interval, :func:`helpers.toolkit.benchmarking.versus`) and
its record, built in one call (``record``: a :class:`helpers.toolkit.benchmarking.Record`).

The DALI calls (the readers, ``next_epoch``, the decode and resize, the pipeline-mode definition),
the loaders and the model stay in the notebook, where the reader sees them.
"""

from __future__ import annotations

import os
import shutil
import statistics
import time
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import NamedTuple

import numpy as np

from helpers.data.data_sources import DataSourceError
from helpers.data.embedded_video import first_packets
from helpers.data.embedded_video import keyframes
from helpers.data.paths import relative
from helpers.data.paths import work_folder
from helpers.data.registry import goal_targets
from helpers.data.video_sources import VideoFolder
from helpers.data.video_sources import check_video_folder
from helpers.data.video_sources import locate_videos
from helpers.data.video_sources import native_log
from helpers.data.video_sources import probe_video
from helpers.toolkit.benchmarking import Ratio
from helpers.toolkit.benchmarking import Record
from helpers.toolkit.benchmarking import versus
from helpers.toolkit.devices import resolve_device
from helpers.toolkit.devices import skip_message
from helpers.toolkit.devices import torch_device
from helpers.toolkit.devices import video_decoders
from helpers.toolkit.hardware import Sampler
from helpers.toolkit.harness import Harness
from helpers.toolkit.harness import Results
from helpers.toolkit.harness import Way
from helpers.toolkit.harness import folded
from helpers.toolkit.harness import steady_seconds
from helpers.toolkit.parameters import ParameterError
from helpers.toolkit.parameters import at_least
from helpers.toolkit.parameters import positive_int
from helpers.toolkit.parameters import positive_ints
from helpers.toolkit.parameters import reject_unknown_parameters

if TYPE_CHECKING:  # torch comes with it: imported where it is used, so that the probe's processes start
    from helpers.toolkit import video_clips  # without it

NOTEBOOK = "07-video-clips.ipynb"
GOAL_GOP = 64  # section 5: the same videos with keyframes this far apart
DEFAULTS = {  # each None parameter: its value on a GPU, on a CPU
    "codec": ("h264", "vp9"),
    "resolution": ("1280x720", "320x240"),
    "frames": (160, 64),
    "videos_per_class": (6, 2),
    "clip_frames": (16, 8),
    "clip_size": (112, 64),
    "batch_size": (8, 4),
    "trials": (3, 3),
    "sweep": (["1920x1080/16"], ["160x120/16"]),
    "sweep_trials": (3, 2),
}
POSITIVE = (
    "clip_frames",
    "stride",
    "gop",
    "step",
    "clip_size",
    "batch_size",
    "threads",
    "decoder_threads",
    "trials",
    "videos_per_class",
    "sweep_trials",
    "readers",
    "frames",
)
SLUG = "07-video-clips"  # its name in the registry and the records: its goals' targets are its metadata's


KINETICS_MEAN = (0.43216, 0.394666, 0.37645)  # torchvision's R2Plus1D_18_Weights.KINETICS400_V1
KINETICS_STD = (0.22803, 0.22145, 0.216989)  # normalizes 0-1 values by these (VideoClassification)
RECORDED = (
    "video_dir",
    "device",
    "codec",
    "resolution",
    "gop",
    "frames",
    "videos",
    "clip_frames",
    "stride",
    "step",
    "clip_size",
    "batch_size",
    "readers",
    "reader_counts",
    "threads",
    "dataloader_workers",
    "pyav_clips",
    "decoder_threads",
    "trials",
    "min_seconds",
    "sweep",
    "sweep_trials",
    "seed",
)


@dataclass(frozen=True)
class Setup:
    """The parameters resolved for this machine (``set_up``), read by attribute: what the
    notebook's cells, the folded sections, the record and the sentences use."""

    device: str
    on_gpu: bool
    device_id: int | None
    decode_on: str
    model_device: str
    sampler: Sampler
    folder: VideoFolder
    readers: int
    reader_counts: list[int]
    dataloader_workers: list[int]
    clip_frames: int
    step: int
    clip_size: int
    batch_size: int
    trials: int
    stride: int
    gop: int
    threads: int
    decoder_threads: int
    seed: int
    codec: str | None
    width: int | None
    height: int | None
    frames: int
    videos_per_class: int
    sweep: list[tuple[int, int, int]]
    sweep_trials: int
    video_dir: str | None  # relative to the checkout (helpers.data.paths.relative)
    resolution: str | None  # as given: None is the device's default
    pyav_clips: int  # clips a DataLoader trial decodes
    # straight-through decoding (a reference): runs of run_frames frames, run_readers readers,
    # run_batch runs a batch
    run_frames: int
    run_readers: int
    run_batch: int
    min_seconds: float  # a trial's least duration (helpers.toolkit.harness)

    @property
    def parameters(self) -> dict[str, Any]:
        """The parameters as the record keeps them, resolved (``sweep`` as its ``WIDTHxHEIGHT/GOP``
        entries, ``videos`` the folder's count); nothing of this machine."""
        given = {"videos": len(self.folder.videos), "sweep": [f"{w}x{h}/{g}" for w, h, g in self.sweep]}
        return {name: given[name] if name in given else getattr(self, name) for name in RECORDED}


def size_of(text: str, name: str) -> tuple[int, int]:
    """``"WIDTHxHEIGHT"`` as two positive ints, or a ParameterError naming ``name``."""
    width, _, height = str(text).partition("x")
    if not (width.isdigit() and height.isdigit() and int(width) > 0 and int(height) > 0):
        raise ParameterError(f"{name}: WIDTHxHEIGHT in pixels, such as '1280x720', not {text!r}")
    return int(width), int(height)


def sweep_settings(entries: Sequence[str]) -> list[tuple[int, int, int]]:
    """The ``sweep`` parameter's ``"WIDTHxHEIGHT/GOP"`` entries as ``(width, height, gop)``."""
    settings = []
    for entry in entries:
        size, _, gop = str(entry).partition("/")
        if not gop.isdigit() or int(gop) < 1:
            raise ParameterError(f"sweep: entries 'WIDTHxHEIGHT/GOP' such as '1280x720/16', not {entry!r}")
        try:
            settings.append((*size_of(size, "sweep"), int(gop)))
        except ParameterError:
            raise ParameterError(
                f"sweep: entries 'WIDTHxHEIGHT/GOP' such as '1280x720/16', not {entry!r}"
            ) from None
    return settings


def set_up(
    history: Sequence[str],
    *,
    video_dir: str | None,
    device: str,
    codec: str | None,
    resolution: str | None,
    gop: int,
    frames: int | None,
    videos_per_class: int | None,
    clip_frames: int | None,
    stride: int,
    step: int | None,
    clip_size: int | None,
    batch_size: int | None,
    readers: int | None,
    reader_counts: Sequence[int] | None,
    threads: int,
    dataloader_workers: Sequence[int] | None,
    pyav_clips: int | None,
    decoder_threads: int,
    trials: int | None,
    min_seconds: float | None,
    sweep: Sequence[str] | None,
    sweep_trials: int | None,
    seed: int,
) -> Setup:
    """The notebook's parameters (each by name) checked, each None replaced by this machine's
    default (the GPU's video decoders for ``readers``, a third of the clips for ``pyav_clips``),
    the embedded set found or built (or ``video_dir`` taken), and every file checked with PyAV
    before DALI reads one; prints what it found. ``history`` is IPython's ``In`` (an unknown
    injected parameter is refused by name)."""
    reject_unknown_parameters(history, NOTEBOOK)
    given = {
        "video_dir": video_dir,
        "device": device,
        "codec": codec,
        "resolution": resolution,
        "gop": gop,
        "frames": frames,
        "videos_per_class": videos_per_class,
        "clip_frames": clip_frames,
        "stride": stride,
        "step": step,
        "clip_size": clip_size,
        "batch_size": batch_size,
        "readers": readers,
        "reader_counts": reader_counts,
        "threads": threads,
        "dataloader_workers": dataloader_workers,
        "pyav_clips": pyav_clips,
        "decoder_threads": decoder_threads,
        "trials": trials,
        "min_seconds": min_seconds,
        "sweep": sweep,
        "sweep_trials": sweep_trials,
        "seed": seed,
    }
    device = resolve_device(given["device"])
    on_gpu, cores = device == "gpu", os.cpu_count() or 1
    p = {
        **given,
        **{k: given[k] if given[k] is not None else v[0 if on_gpu else 1] for k, v in DEFAULTS.items()},
    }
    sampler = Sampler()  # NVML: the GPU's engines during each trial (none on a CPU: it says so)
    default_readers = ""  # what a None ``readers`` stands for, said when it is lowered
    if p["readers"] is None:
        p["readers"] = video_decoders(sampler.name) if on_gpu else cores
        default_readers = f"{p['readers']} ({'one per video decoder' if on_gpu else 'one per core'})"
    p["step"] = p["step"] or p["gop"]
    at_least(p, dict.fromkeys(POSITIVE, 1))
    try:
        min_seconds = steady_seconds(given["min_seconds"], on_gpu)
    except ValueError as error:
        raise ParameterError(str(error)) from None
    if p["reader_counts"] is not None:
        positive_ints("reader_counts", p["reader_counts"])
    if p["pyav_clips"] is not None and positive_int("pyav_clips", p["pyav_clips"]) < p["batch_size"]:
        raise ParameterError(
            f"pyav_clips={p['pyav_clips']}: fewer clips than one batch (batch_size={p['batch_size']}), so "
            f"decoders.video would time no batch; pyav_clips at least {p['batch_size']}, or None"
        )
    workers = positive_ints(
        "dataloader_workers", p["dataloader_workers"] or sorted({max(1, cores // 2), cores})
    )
    sweep, (width, height) = sweep_settings(p["sweep"]), size_of(p["resolution"], "resolution")
    codec = p["codec"] if p["video_dir"] is None else None
    root = (
        p["video_dir"]
        or locate_videos(
            codec=codec,
            width=width,
            height=height,
            frames=p["frames"],
            gop=p["gop"],
            per_class=p["videos_per_class"],
            verbose=False,
        ).root
    )
    try:  # every file checked (headers and packet timestamps, no decoding) before DALI reads one
        folder = check_video_folder(
            root, device=device, clip_frames=p["clip_frames"], stride=p["stride"], legacy=on_gpu
        )
    except DataSourceError as error:
        raise DataSourceError(f"video_dir: {error}") from None
    print(folder.describe())
    frames_of = [v.frames for v in folder.videos]
    per_video = partial(clip_count, clip_frames=p["clip_frames"], stride=p["stride"], step=p["step"])
    sets = {"video_dir" if p["video_dir"] is not None else "the embedded set": per_video(frames_of)}
    if p["video_dir"] is None:  # section 6 reads smaller builds of the embedded set with the same readers
        for w, h, _ in sweep:
            videos = len(folder.classes) * max(1, p["videos_per_class"] // 2)
            sets[f"the sweep's {w}x{h} set"] = per_video([p["frames"]] * videos)
    fitted = fit_to_shards(
        sets,
        batch_size=p["batch_size"],
        readers=p["readers"],
        reader_counts=p["reader_counts"],
        given={k: given[k] is not None for k in ("batch_size", "readers")},
        default_readers=default_readers,
    )
    p["batch_size"], p["readers"] = fitted.batch_size, fitted.readers
    reader_counts = fitted.reader_counts or sorted(
        {n for n in (1, 2, 4) if n < p["readers"]} | {p["readers"]}
    )
    run = straight_through_plan(frames_of, gop=p["gop"], readers=p["readers"], batch_size=p["batch_size"])
    clips = next(iter(sets.values()))  # the folder's clips: a third of them a DataLoader trial by default
    pyav_clips = p["pyav_clips"] or max(p["batch_size"], clips // 3)
    print(
        f"{p['readers']} readers at most (reader counts compared: {reader_counts}); "
        f"GPU: {sampler.name or 'none'}"
    )
    return Setup(
        device=device,
        on_gpu=on_gpu,
        device_id=0 if on_gpu else None,
        decode_on="gpu" if on_gpu else "cpu",
        model_device=torch_device(device),
        sampler=sampler,
        folder=folder,
        readers=p["readers"],
        reader_counts=reader_counts,
        dataloader_workers=workers,
        clip_frames=p["clip_frames"],
        step=p["step"],
        clip_size=p["clip_size"],
        batch_size=p["batch_size"],
        trials=p["trials"],
        stride=p["stride"],
        gop=p["gop"],
        threads=p["threads"],
        decoder_threads=p["decoder_threads"],
        seed=p["seed"],
        codec=codec,
        width=width if codec else None,
        height=height if codec else None,
        frames=p["frames"],
        videos_per_class=p["videos_per_class"],
        sweep=sweep,
        sweep_trials=p["sweep_trials"],
        video_dir=None if p["video_dir"] is None else relative(p["video_dir"]),
        resolution=given["resolution"],
        pyav_clips=pyav_clips,
        run_frames=run[0],
        run_readers=run[1],
        run_batch=run[2],
        min_seconds=min_seconds,
    )


def clip_count(frames: Sequence[int], *, clip_frames: int, stride: int, step: int) -> int:
    """The clips DALI's experimental reader cuts from videos of ``frames`` frames (the legacy
    reader may cut one more a video: it needs one frame fewer)."""
    from helpers.toolkit import video_clips

    return sum(len(video_clips.clip_starts(n, clip_frames, stride, step)) for n in frames)


class Fitted(NamedTuple):
    batch_size: int
    readers: int
    reader_counts: list[int] | None  # None: the default, made from ``readers``


def fit_to_shards(
    sets: Mapping[str, int],
    *,
    batch_size: int,
    readers: int,
    reader_counts: Sequence[int] | None,
    given: Mapping[str, bool],
    default_readers: str = "",
    say: Callable[[str], None] = print,
) -> Fitted:
    """The batch size and reader counts that every set of ``sets`` (``{label: its clips}``) can
    shard: DALI 2.4 refuses more shards than samples (``Assert on "num_shards_ <= Size()"``, raised
    at the first batch), and a shard smaller than a batch makes each of its batches mostly padding
    (``pad_last_batch``: repeats of its last clip). ``N`` readers give the smallest shard
    ``clips // N`` clips, so each holds a batch while ``N <= clips // batch_size``. A value the
    user gave (``given[name]``) that cannot work is refused naming the parameter and the largest
    value that works; a default is lowered, with a printed line."""
    label, clips = min(sets.items(), key=lambda item: item[1])
    has = f"{label} has {clips} clip{'s' * (clips != 1)}"
    if batch_size > clips:
        if given["batch_size"]:
            raise ParameterError(
                f"batch_size={batch_size}: {has}, fewer than one batch; batch_size at most {clips}, or more "
                "or longer videos (or fewer clip frames: clip_frames, stride, step)"
            )
        say(f"batch_size lowered from its default {batch_size} to {clips}: {has}")
        batch_size = clips
    most = clips // batch_size
    if readers > most:
        shard = f"{readers} readers, one shard each, leave {clips // readers} clip(s) in the smallest shard"
        if given["readers"]:
            raise ParameterError(
                f"readers={readers}: {has}, and {shard}, fewer than a batch (batch_size={batch_size}); "
                f"readers at most {most}, or a smaller batch_size"
            )
        say(
            f"readers lowered from its default {default_readers or readers} to {most}: {has}, "
            f"and each reader's shard must hold a batch of {batch_size}"
        )
        readers = most
    if reader_counts is not None and max(reader_counts) > most:
        raise ParameterError(
            f"reader_counts={list(reader_counts)}: {has}, so a shard holds a batch of {batch_size} for "
            f"{most} readers at most; reader counts at most {most}"
        )
    return Fitted(batch_size, readers, None if reader_counts is None else list(reader_counts))


def straight_through_plan(
    frames: Sequence[int], *, gop: int, readers: int, batch_size: int
) -> tuple[int, int, int]:
    """Straight-through decoding's ``(run_frames, readers, batch)``: runs of two GOPs (at most the
    shortest video), ``readers`` readers (at most one a run) and half a batch (at most what
    the smallest shard holds), so that its shards are never smaller than a batch either."""
    run_frames = min(2 * gop, min(frames))
    runs = sum(n // run_frames for n in frames)
    run_readers = min(readers, runs)
    return run_frames, run_readers, max(1, min(batch_size // 2, runs // run_readers))


# --- what a clip costs a decoder ---------------------------------------------------------------


def clips_and_cost(
    files: Sequence[Path],
    labels: Sequence[int],
    frames: Sequence[int],
    *,
    clip_frames: int,
    stride: int,
    step: int,
) -> tuple[list[video_clips.Clip], float]:
    """Every clip the readers cut from ``files`` (:func:`helpers.toolkit.video_clips.clip_list`), and the
    mean of the frames each costs a decoder from its keyframe (PyAV reads the keyframes)."""
    from helpers.toolkit import video_clips

    clips = video_clips.clip_list(files, labels, frames, clip_frames=clip_frames, stride=stride, step=step)
    keys = {Path(f): keyframes(Path(f)) for f in files}
    cost = statistics.mean(
        video_clips.decoded_frames(c.start, clip_frames, stride, keys[c.path]) for c in clips
    )
    return clips, cost


@dataclass(frozen=True)
class VideoSet:
    """An embedded set built at another setting: its folder, clips and their mean cost."""

    label: str
    root: Path
    clips: list[video_clips.Clip]
    cost: float


def embedded_set(s: Setup, *, codec: str, width: int, height: int, gop: int, per_class: int) -> VideoSet:
    """The embedded set at these settings (built on first use), with its clips at the notebook's
    clip rule. Its label: ``"h264, gop 64"``, or ``"480x272, gop 16"`` at another frame size."""
    found = locate_videos(
        codec=codec, width=width, height=height, frames=s.frames, gop=gop, per_class=per_class, verbose=False
    )
    clips, cost = clips_and_cost(
        found.files,
        [found.classes.index(f.parent.name) for f in found.files],
        [probe_video(f).frames for f in found.files],
        clip_frames=s.clip_frames,
        stride=s.stride,
        step=s.step,
    )
    same_size = (width, height) == (s.width, s.height)
    return VideoSet(f"{codec if same_size else f'{width}x{height}'}, gop {gop}", found.root, clips, cost)


def frames_per_clip(
    cost: float, run_frames: int, part: Sequence[video_clips.Clip], clip_frames: int, stride: int
) -> dict[str, float]:
    """The frames a clip costs a decoder, by kind of way: the readers and PyAV from the keyframe
    before it, ``decoders.video`` from the file's first frame, straight-through decoding a run."""
    from helpers.toolkit import video_clips

    from_start = statistics.mean(c.start + video_clips.clip_span(clip_frames, stride) for c in part)
    return {"pyav": cost, "dali": cost, "pipeline": cost, "limit": run_frames, "decoders.video": from_start}


def scaled(r: Ratio, k: float) -> Ratio:
    """A ratio of clips/s as a ratio of decoded frames/s (``k``: the ratio of frames a clip)."""
    return Ratio(r.ratio * k, r.low * k, r.high * k, r.trials, r.paired)


def decoded_share(results: Results, name: str, limit: str, per_clip: Mapping[str, float]) -> Ratio:
    """A way's decoded frames/s over straight-through decoding's, paired by round."""
    kind = results.way(name).kind
    return scaled(results.ratio(name, limit), per_clip[kind] / per_clip[results.way(limit).kind])


def busy(results: Results, name: str, key: str = "nvdec_pct") -> float | None:
    """The mean of an engine's NVML readings over the way's trials; None where NVML read none."""
    values = results.values(name, key)
    return statistics.fmean(values) if values else None


def alone_table(
    alone: Results, limit: str, per_clip: Mapping[str, float], probe: DecodeLimit | None = None
) -> Any:
    """The harness's table of the ways alone, with the frames a clip costs by its rule and the
    decoded frames/s as a share of straight-through decoding (a reference) and, where the probe
    ran (``decode_limit``), of NVDEC's measured limit."""
    table = alone.table()
    table["frames / clip (rule)"] = [round(per_clip[w.kind], 1) for w in alone.ways]
    if probe is not None:
        table[share_column(probe)] = [str(probe.share(alone, w.name, per_clip)) for w in alone.ways]
    table["share of straight-through"] = [
        str(decoded_share(alone, w.name, limit, per_clip)) for w in alone.ways
    ]
    return table


def share_column(probe: DecodeLimit) -> str:
    """The table's column of each way's share of the probe's figure: NVDEC's limit where the
    probe reached ``busy_pct``, a lower bound of it otherwise."""
    return "share of NVDEC's limit" if probe.reached else "share of the probe's figure (a lower bound)"


def limit_sentence(
    alone: Results, limit: str, per_clip: Mapping[str, float], probe: DecodeLimit | None = None
) -> str:
    """Where the probe ran (``decode_limit``): the measured limit and the busiest way's share of
    it. Then whether straight-through decoding, a reference, bounded the other ways, decided by
    decoded frames/s and their intervals (NVDEC's readings are reported beside it, not used to
    decide)."""
    first = ""
    if probe is not None:
        shares = {w.name: probe.share(alone, w.name, per_clip) for w in alone.ways if w.name != limit}
        top = max(shares, key=lambda n: shares[n].ratio)
        of_it = (
            "of the limit"
            if probe.reached
            else f"of that figure, so at most {shares[top].high:.2f}x of the limit"
        )
        first = f"{probe.sentence()} The most of it: `{top}`, {shares[top]} {of_it}. "
    shares = {w.name: decoded_share(alone, w.name, limit, per_clip) for w in alone.ways if w.name != limit}
    above = {n: r for n, r in shares.items() if r.low > 1}
    most = max(shares, key=lambda n: shares[n].ratio)
    if above:
        name = max(above, key=lambda n: above[n].ratio)
        said = (
            f"`{name}` decoded more frames/s than straight-through decoding ({above[name]}): straight-"
            "through decoding is a reference here, not this machine's decode limit"
        )
    elif shares[most].high < 1:
        said = (
            "every way decoded fewer frames/s than straight-through decoding (the one decoding the most, "
            f"`{most}`, {shares[most]}): here it bounded them all"
        )
    else:
        said = (
            f"the way decoding the most, `{most}`, decoded frames/s not distinguishable from "
            f"straight-through decoding ({shares[most]}), and none decoded more by its interval"
        )
    nvdec = {n: v for n, v in ((w.name, busy(alone, w.name)) for w in alone.ways) if v is not None}
    if nvdec:
        busiest = max(nvdec, key=nvdec.get)
        said += (
            f" (NVDEC busy: straight-through {nvdec.get(limit, 0):.0f}%, the busiest way, `{busiest}`, "
            f"{nvdec[busiest]:.0f}%)"
        )
    return (
        f"{first}Decoded frames/s, by the rule's frames a clip, against straight-through decoding "
        f"(a reference): {said}."
    )


def show_alone(
    alone: Results,
    *,
    dali: Sequence[str],
    counts: Mapping[str, int],
    clip_frames: int,
    clip_size: int,
) -> None:
    """The chart of the DALI ways alone: clips/s and NVDEC busy against the readers."""
    import matplotlib.pyplot as plt

    from helpers.toolkit.plots import scaling_chart

    scaling_chart(
        {counts[n]: alone.rates(n) for n in dali},
        {counts[n]: busy(alone, n) for n in dali},
        xlabel="DALI readers (one shard, one thread each)",
        ylabel="clips/s (alone)",
        busy_label="NVDEC busy",
        title=f"One reader per decoder: {clip_frames}-frame clips at "
        f"{clip_size}px, {len(alone.rates(dali[0]))} rounds",
    )
    plt.show()


# --- NVDEC's limit, measured: the probe -----------------------------------------------------------

PROBE_BUSY_PCT = 97.0  # NVDEC at least this busy: the decoders, not the loader, are the bound
PROBE_BUDGET_S = 60.0
PROBE_PREFETCH = 2  # the probe's pipelines' prefetch queue: the batches made while a process waits


class ProbeError(RuntimeError):
    """The decode-limit probe could not measure; the message names the probe and says why."""


@dataclass(frozen=True)
class ProbeSpec:
    """What each process of the probe reads: 07's clip pattern over ``root`` (picklable: spawn)."""

    root: str
    clip_frames: int
    stride: int
    step: int
    batch_size: int
    clip_size: int
    threads: int
    seed: int
    device_id: int
    warmup: int  # batches before the process says it is ready
    batches: int  # batches timed, after the ``PROBE_PREFETCH`` made while it waited
    wait_s: float  # how long a ready process waits for the start


@dataclass(frozen=True)
class ProbeRun:
    """One run of the probe: ``processes`` processes decoded ``clips`` in ``seconds`` (from the
    first one's start to the last one's end), NVDEC ``nvdec_pct`` busy meanwhile."""

    processes: int
    clips: int
    seconds: float
    nvdec_pct: float | None
    wall_s: float  # the whole run: starting the processes to the last result

    @property
    def clips_per_s(self) -> float:
        return self.clips / self.seconds


def combine(timings: Sequence[Mapping[str, float]]) -> tuple[int, float]:
    """The processes' clips and the seconds from the first start to the last end (each timing
    ``{"clips", "start", "end"}`` on the machine's monotonic clock): a rate that counts the ends
    where fewer processes still decode, so it does not overstate the limit."""
    if not timings:
        raise ProbeError("decode-limit probe: no process reported a timing")
    seconds = max(t["end"] for t in timings) - min(t["start"] for t in timings)
    if seconds <= 0:
        raise ProbeError(f"decode-limit probe: the processes' timings span {seconds} s")
    return int(sum(t["clips"] for t in timings)), seconds


@dataclass
class DecodeLimit:
    """NVDEC's limit as the probe measured it: the run that decoded the most frames/s (clips/s
    times ``frames_per_clip``, the rule's mean cost of a clip), and whether NVDEC read at least
    ``PROBE_BUSY_PCT`` busy in it (if not, the figure is a lower bound of the limit)."""

    runs: list[ProbeRun]
    frames_per_clip: float
    busy_pct: float = PROBE_BUSY_PCT

    @property
    def best(self) -> ProbeRun:
        return max(self.runs, key=lambda r: r.clips_per_s)

    @property
    def frames_per_s(self) -> float:
        return self.best.clips_per_s * self.frames_per_clip

    @property
    def reached(self) -> bool:
        return self.best.nvdec_pct is not None and self.best.nvdec_pct >= self.busy_pct

    def share(self, results: Results, name: str, per_clip: Mapping[str, float]) -> Ratio:
        """A way's decoded frames/s (its clips/s times its kind's frames a clip) over the limit,
        with the interval of the way's rate (the limit is one measurement: no interval of its own)."""
        rate, low, high = results.estimate(name)
        k = per_clip[results.way(name).kind] / self.frames_per_s
        return Ratio(rate * k, low * k, high * k, len(results.rates(name)), False)

    def bounded_share(self, results: Results, name: str, per_clip: Mapping[str, float]) -> Ratio:
        """The way's share of NVDEC's limit as far as this probe tells it: ``share`` where the probe
        reached ``busy_pct``; otherwise its figure is a lower bound of the limit, so the way's
        share of the limit is at most ``share``'s: the same ratio, its interval from 0 to
        ``share``'s high end. A goal on it is then inconclusive, or not met when even that high
        end is below it, never met."""
        share = self.share(results, name, per_clip)
        return share if self.reached else Ratio(share.ratio, 0.0, share.high, share.trials, share.paired)

    def sentence(self) -> str:
        b = self.best
        found = (
            f"NVDEC's limit, measured: {b.processes} processes of the legacy reader, one shard each, decoded "
            f"{self.frames_per_s:,.0f} frames/s ({b.clips_per_s:,.1f} clips/s of {self.frames_per_clip:.1f} "
            "frames)"
        )
        if b.nvdec_pct is None:
            return found + "; NVML read no NVDEC figure, so it is a lower bound of the limit, not the limit."
        found += f" at NVDEC {b.nvdec_pct:.0f}% busy"
        if self.reached:
            return found + "."
        return found + f", below {self.busy_pct:.0f}%: a lower bound of the limit, not the limit."

    def as_record(self) -> dict[str, Any]:
        return {
            "frames_per_s": self.frames_per_s,
            "clips_per_s": self.best.clips_per_s,
            "frames_per_clip": self.frames_per_clip,
            "processes": self.best.processes,
            "nvdec_pct": self.best.nvdec_pct,
            "reached": self.reached,
            "busy_pct": self.busy_pct,
            "runs": [{**vars(r), "clips_per_s": r.clips_per_s} for r in self.runs],
        }


def _probe_child(
    worker: Callable[..., Any], spec: ProbeSpec, shard: int, shards: int, go: Any, out: Any
) -> None:
    """A probe process: ``worker(spec, shard, shards, ready)`` warms up, calls ``ready()`` (which
    waits for the parent's start), times its batches and returns ``{"clips", "start", "end"}``."""

    def ready() -> None:
        out.put(("ready", shard, None))
        if not go.wait(spec.wait_s):
            raise ProbeError(f"not started within {spec.wait_s:.0f} s of being ready")

    try:
        out.put(("done", shard, dict(worker(spec, shard, shards, ready))))
    except BaseException as error:  # noqa: BLE001  (reported to the parent, which raises it)
        out.put(("error", shard, f"{type(error).__name__}: {error}"))


def _gather(out: Any, procs: Sequence[Any], tag: str, deadline: float, what: str) -> dict[int, Any]:
    """One ``tag`` message from every process, before ``deadline``; a process's error, a process
    that exits without one, or the deadline raises ``ProbeError`` naming the probe."""
    import queue

    got: dict[int, Any] = {}
    while len(got) < len(procs):
        try:
            kind, shard, payload = out.get(timeout=0.2)
        except queue.Empty:
            gone = [i for i, p in enumerate(procs) if i not in got and p.exitcode is not None]
            if gone:  # its last message may still be in the pipe: one more look
                try:
                    kind, shard, payload = out.get(timeout=1.0)
                except queue.Empty:
                    i = gone[0]
                    raise ProbeError(
                        f"decode-limit probe, {len(procs)} processes: process {i} exited (status "
                        f"{procs[i].exitcode}) before it was {what}"
                    ) from None
            elif time.monotonic() > deadline:
                raise ProbeError(
                    f"decode-limit probe, {len(procs)} processes: {len(procs) - len(got)} not {what} "
                    "within its time limit"
                ) from None
            else:
                continue
        if kind == "error":
            raise ProbeError(f"decode-limit probe, {len(procs)} processes: process {shard} failed: {payload}")
        if kind == tag:
            got[shard] = payload
    return got


def probe_once(
    spec: ProbeSpec, processes: int, *, worker: Callable[..., Any], sampler: Any, timeout_s: float
) -> ProbeRun:
    """``processes`` spawned processes, process ``i`` running ``worker`` on shard ``i``; once every
    one is warmed up and ready they start together, and the parent samples the hardware
    (``sampler.sample()``) until each has reported its timing. Every process is ended on the way
    out; ``timeout_s`` bounds the whole run."""
    import multiprocessing

    begun = time.monotonic()
    deadline = begun + timeout_s
    context = multiprocessing.get_context("spawn")  # fresh processes: no copy of this one's CUDA state
    go, out = context.Event(), context.Queue()
    procs = [
        context.Process(
            target=_probe_child,
            args=(worker, spec, i, processes, go, out),
            daemon=True,
            name=f"decode-limit probe {i}",
        )
        for i in range(processes)
    ]
    try:
        for proc in procs:
            proc.start()
        _gather(out, procs, "ready", deadline, "ready")
        with sampler.sample() as busy:
            go.set()
            timings = _gather(out, procs, "done", deadline, "done")
        clips, seconds = combine(list(timings.values()))
        return ProbeRun(processes, clips, seconds, busy.mean("nvdec_pct"), time.monotonic() - begun)
    finally:
        for proc in procs:
            proc.join(timeout=max(0.0, min(5.0, deadline - time.monotonic())))
        for proc in procs:
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=5)
        out.close()


def measure_limit(
    spec: ProbeSpec,
    counts: Sequence[int],
    *,
    frames_per_clip: float,
    worker: Callable[..., Any],
    sampler: Any,
    budget_s: float = PROBE_BUDGET_S,
    busy_pct: float = PROBE_BUSY_PCT,
    say: Callable[[str], None] = print,
    run_once: Callable[..., ProbeRun] = probe_once,
) -> DecodeLimit:
    """The probe (``run_once``: :func:`probe_once`) at each process count of ``counts`` in turn
    until NVDEC reads ``busy_pct`` busy, within ``budget_s`` in all: the first count may use it
    all; a later one runs only when the budget left is at least 1.5 times the last run's whole
    time. The first run's ``ProbeError`` is raised; a later run's is printed, and the runs before
    it make the limit."""
    began, runs = time.monotonic(), []
    for processes in counts:
        left = budget_s - (time.monotonic() - began)
        if runs and left < 1.5 * runs[-1].wall_s:
            say(f"decode-limit probe: {processes} processes not tried: {left:.0f} s of {budget_s:.0f} s left")
            break
        try:
            run = run_once(spec, processes, worker=worker, sampler=sampler, timeout_s=left)
        except ProbeError as error:
            if not runs:  # nothing measured: the probe failed
                raise
            say(f"{error}; the limit is the run before's")  # a later count failing keeps what was measured
            break
        runs.append(run)
        nvdec = "not read" if run.nvdec_pct is None else f"{run.nvdec_pct:.0f}% busy"
        say(
            f"decode-limit probe: {processes} processes, {run.clips_per_s * frames_per_clip:,.0f} frames/s, "
            f"NVDEC {nvdec} ({run.wall_s:.0f} s)"
        )
        if run.nvdec_pct is not None and run.nvdec_pct >= busy_pct:
            break
    return DecodeLimit(runs, frames_per_clip, busy_pct)


def legacy_reader_worker(
    spec: ProbeSpec, shard: int, shards: int, ready: Callable[[], None]
) -> dict[str, float]:
    """One probe process on a GPU: pipeline mode's legacy ``fn.readers.video`` on shard ``shard`` of
    ``shards`` (07's clip pattern, shuffled, ``pad_last_batch=False``: every clip a real one) and
    ``fn.resize``, as 07's pipelines; ``spec.warmup`` batches, ``ready()``, the batches made while
    it waited handed over untimed, then ``spec.batches`` timed, the last copied to the host so that
    the timer stops after the GPU has finished it."""
    from nvidia.dali import fn
    from nvidia.dali import pipeline_def

    @pipeline_def
    def clips() -> Any:
        frames, labels = fn.readers.video(
            device="gpu",
            file_root=spec.root,
            sequence_length=spec.clip_frames,
            stride=spec.stride,
            step=spec.step,
            random_shuffle=True,
            seed=spec.seed + shard,
            num_shards=shards,
            shard_id=shard,
            stick_to_shard=True,
            pad_last_batch=False,
            file_list_include_preceding_frame=False,
            name="Reader",
        )
        return fn.resize(frames, resize_x=spec.clip_size, resize_y=spec.clip_size), labels

    pipe = clips(
        batch_size=spec.batch_size,
        num_threads=spec.threads,
        device_id=spec.device_id,
        seed=spec.seed + shard,
        prefetch_queue_depth=PROBE_PREFETCH,
    )
    pipe.build()
    for _ in range(spec.warmup):
        outputs = pipe.run()
    outputs[0].as_cpu()
    ready()
    for _ in range(PROBE_PREFETCH):  # made while this process waited: not timed
        pipe.run()
    start = time.monotonic()
    for _ in range(spec.batches):
        outputs = pipe.run()
    outputs[0].as_cpu()  # waits for the last batch's work on the GPU
    end = time.monotonic()
    return {"clips": spec.batches * spec.batch_size, "start": start, "end": end}


def decode_limit(
    s: Setup,
    clips: int,
    frames_per_clip: float,
    *,
    batches: int = 16,
    warmup: int = 3,
    budget_s: float = PROBE_BUDGET_S,
    worker: Callable[..., Any] = legacy_reader_worker,
) -> DecodeLimit | None:
    """NVDEC's limit for 07's clips, measured where NVDEC is the bound: the legacy reader in more
    processes than the GPU has video decoders (2x, then 3x while NVDEC reads under
    ``PROBE_BUSY_PCT``), one shard each (at most one process a clip of the ``clips``), each
    timing ``batches`` batches after a warm-up, all at once; about ``budget_s`` in all. None on
    a CPU (a printed line says it is skipped)."""
    if not s.on_gpu:
        print(skip_message("the decode-limit probe (NVDEC's limit, the legacy readers.Video)"))
        return None
    engines = video_decoders(s.sampler.name)
    counts = sorted({min(clips, k * engines) for k in (2, 3)})
    spec = ProbeSpec(
        str(s.folder.root),
        s.clip_frames,
        s.stride,
        s.step,
        s.batch_size,
        s.clip_size,
        s.threads,
        s.seed,
        s.device_id or 0,
        warmup,
        batches,
        budget_s,
    )
    return measure_limit(
        spec, counts, frames_per_clip=frames_per_clip, worker=worker, sampler=s.sampler, budget_s=budget_s
    )


# --- sections 5 and 6: the best ways over other builds of the embedded set ---------------------


@dataclass
class Variants:
    """Section 5: the best DALI way alone over the main set and its GOP and codec variants, and
    HEVC feeding the model against training alone (GPU only)."""

    alone: Results
    costs: dict[str, float]
    hevc_fed: Results | None = None
    hevc: str | None = None
    ceiling: str | None = None

    @property
    def hevc_ratio(self) -> Ratio | None:
        return None if self.hevc_fed is None else self.hevc_fed.ratio(self.hevc, self.ceiling)

    def table(self) -> Any:
        first = self.alone.ways[0].name
        table = self.alone.table().rename(index=lambda name: name.split(":")[0])
        table["frames / clip (rule)"] = [round(self.costs[w.name.split(":")[0]], 1) for w in self.alone.ways]
        table["against the first row"] = [str(self.alone.ratio(w.name, first)) for w in self.alone.ways]
        return folded(table, f"{self.alone.unit}/s", keep=["against the first row", "frames / clip (rule)"])

    def sentence(self) -> str:
        if self.hevc_fed is None:
            return ""
        return (
            f"HEVC feeding the model: {self.hevc_fed.estimate(self.hevc)[0]:,.1f} clips/s, "
            f"{self.hevc_ratio} of training alone in the same rounds, NVDEC "
            f"{busy(self.hevc_fed, self.hevc) or 0:.0f}% busy"
        )


def gop_and_codec(
    s: Setup,
    harness: Harness,
    best: Way,
    loader_at: Callable[[Path], Any],
    *,
    cost: float,
    ceiling: Way,
    step: Callable[..., Any],
) -> Variants:
    """The best DALI way (``loader_at(root)`` makes it over a folder) alone over the main set, the
    same videos at GOP ``GOAL_GOP`` and, on a GPU, in HEVC, in interleaved rounds; on a GPU the HEVC
    way then feeds the model (``step``) against ``ceiling``, in rounds of its own."""
    sets = {f"{s.folder.videos[0].codec}, gop {s.gop}": (s.folder.root, cost)}
    if s.video_dir is not None:
        print("The GOP and codec variants build the embedded set again: skipped for video_dir.")
    else:
        for codec, gop in [(s.codec, GOAL_GOP)] + ([("hevc", s.gop)] if s.on_gpu else []):
            found = embedded_set(
                s, codec=codec, width=s.width, height=s.height, gop=gop, per_class=s.videos_per_class
            )
            sets[found.label] = (found.root, found.cost)
    if not s.on_gpu:
        print(skip_message("HEVC (DALI decodes it on the GPU only)"))
    ways = [
        Way(f"{label}: {best.name}", lambda r=root: loader_at(r), kind="dali", knob=best.knob)
        for label, (root, _) in sets.items()
    ]
    found = Variants(harness.run(ways, s.trials, label="GOP and codec"), {k: c for k, (_, c) in sets.items()})
    hevc = next((w for w in ways if w.name.startswith("hevc")), None)
    if hevc is not None:
        found.hevc_fed = harness.run([ceiling, hevc], s.trials, label="HEVC feeding the model", step=step)
        found.hevc, found.ceiling = hevc.name, ceiling.name
        print(found.sentence())
    harness.close()
    return found


@dataclass
class Sweep:
    """Section 6: the best DALI way and the best DataLoader at other frame sizes, alone."""

    runs: dict[str, tuple[Results, str, str]]  # setting: (its results, the DALI way, the DataLoader)

    def ratios(self) -> dict[str, Ratio]:
        return {setting: r.ratio(dali, pyav) for setting, (r, dali, pyav) in self.runs.items()}

    def table(self) -> Any:
        """The harness's table of every setting's two ways (rates, intervals, CV, NVDEC...), with
        each setting's DALI / DataLoader ratio on its DALI row."""
        import pandas as pd

        if not self.runs:
            return pd.DataFrame()
        parts = []
        for results, dali, pyav in self.runs.values():
            part = results.table()
            part["DALI / DataLoader"] = [
                str(results.ratio(dali, pyav)) if n == dali else "" for n in part.index
            ]
            parts.append(part)
        return folded(pd.concat(parts), f"{results.unit}/s", keep=["DALI / DataLoader"])

    def as_record(self, settings: Sequence[tuple[int, int, int]]) -> dict[str, Any]:
        return {
            "settings": [f"{w}x{h}/{g}" for w, h, g in settings],
            "clips_per_s": {n: r.rates(n) for r, dali, pyav in self.runs.values() for n in (dali, pyav)},
            "dali_over_dataloader": {k: r.goal(1.0) for k, r in self.ratios().items()},
        }


def frame_sizes(
    s: Setup,
    harness: Harness,
    dali: Way,
    pyav: Way,
    dali_at: Callable[[Path], Any],
    pyav_of: Callable[[list[video_clips.Clip]], Any],
) -> Sweep:
    """Each setting of ``sweep``: the embedded set built there (half as many videos a class), read
    alone by the best DALI way (``dali_at(root)``) and the best DataLoader (``pyav_of(clips)``, a
    third of the clips), in ``sweep_trials`` interleaved rounds of their own."""
    runs: dict[str, tuple[Results, str, str]] = {}
    for width, height, gop in s.sweep if s.video_dir is None else []:
        found = embedded_set(
            s, codec=s.codec, width=width, height=height, gop=gop, per_class=max(1, s.videos_per_class // 2)
        )
        order = np.random.default_rng(s.seed).permutation(len(found.clips))[
            : max(s.batch_size, len(found.clips) // 3)
        ]
        part = [found.clips[i] for i in order]
        pair = [
            Way(f"{found.label}: {dali.name}", lambda r=found.root: dali_at(r), kind="dali", knob=dali.knob),
            Way(f"{found.label}: {pyav.name}", lambda c=part: pyav_of(c), kind="pyav", knob=pyav.knob),
        ]
        runs[found.label] = (harness.run(pair, s.sweep_trials, label=found.label), pair[0].name, pair[1].name)
        harness.close()
    if not runs:
        print("No sweep: video_dir is set, or sweep is empty.")
    return Sweep(runs)


# --- section 8: a folder with two bad files -----------------------------------------------------


def bad_folder(s: Setup, files: Sequence[Path]) -> tuple[str, str]:
    """A copy of two classes with a file that is not a video and the first video cut shorter than
    a clip; what DALI's experimental reader does with it over one epoch, what FFmpeg and DALI log,
    and what ``check_video_folder`` says (printed; returned for the record)."""
    import nvidia.dali.experimental.dynamic as ndd

    from helpers.toolkit import video_clips

    root, classes = s.folder.root, s.folder.classes
    broken = Path(os.path.relpath(work_folder("nb07-bad-videos")))  # build/nb07-bad-videos, removed below
    for cls in classes[:2]:
        shutil.copytree(root / cls, broken / cls)
    (broken / classes[0] / "notes.mp4").write_text("not a video")
    first_packets(
        files[0], broken / classes[1] / "short.mp4", video_clips.clip_span(s.clip_frames, s.stride) // 2
    )
    good = [f for f in sorted(broken.rglob("*.mp4")) if f.name not in ("notes.mp4", "short.mp4")]
    good_clips = sum(
        len(video_clips.clip_starts(probe_video(f).frames, s.clip_frames, s.stride, s.step)) for f in good
    )
    log: list[str] = []
    try:
        with ndd.EvalContext(num_threads=s.threads, device_id=s.device_id), native_log() as log:
            reader = ndd.experimental.readers.Video(
                device=s.decode_on,
                file_root=str(broken),
                sequence_length=s.clip_frames,
                stride=s.stride,
                step=s.step,
            )
            handed = sum(labels.batch_size for _, labels in reader.next_epoch(batch_size=1))
        dali_did = dali_on_bad_files(handed, good_clips, len(good))
    except Exception as error:  # noqa: BLE001  (what DALI does is the finding)
        dali_did = f"raised {type(error).__name__}: {str(error).replace(str(broken), '<copy>')[:300]}"
    print(f"DALI's experimental reader, one epoch over the copy: {dali_did}")
    print("what FFmpeg and DALI logged on the way:", *log, sep="\n  ")
    try:
        check_video_folder(
            broken, device=s.device, clip_frames=s.clip_frames, stride=s.stride, legacy=s.on_gpu
        )
        message = "no problem found"
    except DataSourceError as error:
        message = str(error).replace(str(broken), "<copy>")
    print(message)
    shutil.rmtree(broken)
    return dali_did, message


def dali_on_bad_files(handed: int, good_clips: int, good_videos: int) -> str:
    """What the reader's epoch over the copy says about the two bad files."""
    if handed == good_clips:
        return (
            f"handed over {handed} clips, the {good_clips} clips of the {good_videos} good videos: it "
            "skipped the two bad files (its log names the unreadable one) and the epoch got smaller"
        )
    return f"handed over {handed} clips, where the {good_videos} good videos give {good_clips}"


# --- the goals, the answer and the record --------------------------------------------------------


@dataclass(frozen=True)
class Roles:
    """The ways that the goals, the answer and the record name."""

    best_dali: str
    best_pyav: str
    one_reader: str
    threads: str  # dynamic mode, ``readers`` readers in capture mode
    pipeline: str
    file_bytes: str  # ``decoders.video`` over the files' bytes
    limit: str  # straight-through decoding
    ceiling: str = "training alone (ceiling)"


LIMIT_GOAL = "alone: best DALI's decoded frames/s / NVDEC's measured limit"


def goals(
    alone: Results,
    fed: Results,
    roles: Roles,
    per_clip: Mapping[str, float],
    hevc: Ratio | None,
    probe: DecodeLimit | None = None,
) -> dict[str, dict[str, Any]]:
    """The notebook's goals (set for an H200 at its defaults), each a ``Ratio.goal`` record; the
    share of NVDEC's limit only where the probe measured it (a GPU), judged on
    ``DecodeLimit.bounded_share``: where the probe's figure is a lower bound of the limit, the
    interval starts at 0 and the goal is never met."""
    targets = goal_targets(SLUG)  # stated for an H200 at the notebook's defaults
    fed_goal, alone_goal = "fed: best DALI / training alone", "alone: best DALI / best PyAV DataLoader"
    threads_goal = "alone: dynamic mode (threads) / pipeline mode (pipelines), same readers"
    found = {
        fed_goal: fed.ratio(roles.best_dali, roles.ceiling).goal(targets[fed_goal]),
        alone_goal: alone.ratio(roles.best_dali, roles.best_pyav).goal(targets[alone_goal]),
        threads_goal: alone.ratio(roles.threads, roles.pipeline).goal(targets[threads_goal]),
    }
    if probe is not None:  # against a lower bound of the limit, never met (DecodeLimit.bounded_share)
        found[LIMIT_GOAL] = probe.bounded_share(alone, roles.best_dali, per_clip).goal(targets[LIMIT_GOAL])
    if hevc is not None:
        hevc_goal = "fed, HEVC: best DALI / training alone"
        found[hevc_goal] = hevc.goal(targets[hevc_goal])
    return found


def limit_goal_notes(probe: DecodeLimit | None) -> list[str]:
    """What the limit goal's line means where the probe's figure is a lower bound of NVDEC's
    limit: one line, or none where the probe reached ``busy_pct`` or did not run."""
    if probe is None or probe.reached:
        return []
    busy_words = (
        "NVML read no NVDEC figure"
        if probe.best.nvdec_pct is None
        else (f"NVDEC read {probe.best.nvdec_pct:.0f}% busy, under {probe.busy_pct:.0f}%")
    )
    return [
        f"{LIMIT_GOAL}: judged against a lower bound of the limit ({busy_words}), so a share of the "
        "limit is at most the share of the probe's figure: its interval starts at 0, and the goal "
        "is inconclusive, or not met when even the high end is below it; never met on this run."
    ]


def _nvdec(results: Results, name: str) -> str:
    value = busy(results, name)
    return "" if value is None else f" at NVDEC {value:.0f}% busy"


def _busy_words(probe: DecodeLimit) -> str:
    if probe.best.nvdec_pct is None:
        return " (NVDEC not read)"
    bound = "" if probe.reached else f", under {probe.busy_pct:.0f}%: a lower bound"
    return f" at NVDEC {probe.best.nvdec_pct:.0f}% busy{bound}"


def _share_words(probe: DecodeLimit, share: Ratio) -> str:
    if probe.reached:
        return f"{share} of it"
    return (
        f"{share} of that figure, so at most {share.high:.2f}x of the limit: the limit goal cannot be "
        "met on this run"
    )


def _as_table(rate: float) -> str:
    """A rate as ``Results.table()`` shows it: one decimal under 100, none from 100 on."""
    return f"{rate:,.1f}" if rate < 100 else f"{rate:,.0f}"


def answer(
    alone: Results,
    fed: Results,
    roles: Roles,
    pick: Any,
    per_clip: Mapping[str, float],
    probe: DecodeLimit | None = None,
) -> str:
    """The conclusion's answer, from this run's intervals: the readers, their share of NVDEC's
    measured limit (where the probe ran), DALI's ways against PyAV, the model fed, and what to
    pick (the way that fed it the most, or a tie)."""
    r = roles
    one, best = alone.estimate(r.one_reader)[0], alone.estimate(r.best_dali)[0]
    lines = [
        f"- **One reader** alone gave {_as_table(one)} clips/s{_nvdec(alone, r.one_reader)}"
        + (
            ""
            if r.best_dali == r.one_reader
            else f"; `{r.best_dali}` gave {_as_table(best)}{_nvdec(alone, r.best_dali)}: "
            + versus(alone.ratio(r.best_dali, r.one_reader), "one reader")
        )
        + f". The pick of the dynamic-mode ways: {pick}.",
        *(
            []
            if probe is None
            else [
                f"- **NVDEC's limit**, measured by {probe.best.processes} processes of the legacy reader: "
                f"{probe.frames_per_s:,.0f} frames/s{_busy_words(probe)}; the best dynamic-mode way alone "
                f"decoded {_share_words(probe, probe.share(alone, r.best_dali, per_clip))}."
            ]
        ),
        f"- **Against PyAV** in a DataLoader (`{r.best_pyav}`), the best dynamic-mode way alone was "
        + versus(alone.ratio(r.best_dali, r.best_pyav), "it")
        + "; `decoders.video` over the files' bytes was "
        + versus(alone.ratio(r.file_bytes, r.best_pyav), "it")
        + f", decoding {per_clip['decoders.video']:.0f} "
        f"frames a clip by its rule against the readers' {per_clip['dali']:.1f}; pipeline mode was "
        + versus(alone.ratio(r.pipeline, r.best_pyav), "it")
        + ".",
        "- **Feeding the model**, the best dynamic-mode way "
        + ("(one reader) " if r.best_dali == r.one_reader else "")
        + f"trained at {fed.ratio(r.best_dali, r.ceiling)} of training alone, "
        + ("" if r.best_dali == r.one_reader else f"one reader at {fed.ratio(r.one_reader, r.ceiling)}, ")
        + "pipeline mode at "
        f"{fed.ratio(r.pipeline, r.ceiling)} and the DataLoader at {fed.ratio(r.best_pyav, r.ceiling)}.",
    ]
    leaders = sorted((w.name for w in fed.ways if w.name != r.ceiling), key=lambda n: -fed.estimate(n)[0])
    against = {n: fed.ratio(leaders[0], n) for n in leaders[1:]}
    tied = [n for n, q in against.items() if q.low <= 1 <= q.high]
    if not tied:
        pick_words = f"`{leaders[0]}`, which fed it the most clips/s: it was " + versus(
            against[leaders[1]], f"`{leaders[1]}`"
        )
    else:
        pick_words = (
            f"no single way: `{leaders[0]}` led, but it was "
            + " and ".join(versus(against[n], f"`{n}`") for n in tied)
            + ", a tie on this run"
        )
    return "\n".join([*lines, f"- **What to pick** for this model on this machine: {pick_words}."])


def record(
    s: Setup,
    *,
    alone: Results,
    fed: Results,
    roles: Roles,
    dynamic_pick: Any,
    pyav_pick: Any,
    per_clip: Mapping[str, float],
    variants: Variants,
    sweep: Sweep,
    found_goals: Mapping[str, Any],
    alignment: Mapping[str, Any],
    clips_checked: int,
    captured: str,
    folder_check: str,
    dali_on_bad_files: str,
    probe: DecodeLimit | None,
) -> Record:
    """The notebook's record: its parameters as the set-up resolved them (``Setup.parameters``),
    every trial of every harness run, the picks (``dynamic_pick`` and ``pyav_pick``, the harness's
    picks among the dynamic-mode ways and the DataLoaders), the goals, what the checks found
    (the ``alignment`` of each way, the clips the readers cut, what capture mode ``captured``,
    the ``folder_check`` and what DALI did with the bad files) and the headline."""
    r = roles
    headline = {
        "one_reader_alone_clips_s": alone.estimate(r.one_reader)[0],
        "best_dali_alone_clips_s": alone.estimate(r.best_dali)[0],
        "pyav_alone_clips_s": alone.estimate(r.best_pyav)[0],
        "ceiling_clips_s": fed.estimate(r.ceiling)[0],
        "best_dali_fed_clips_s": fed.estimate(r.best_dali)[0],
        "nvdec_limit_fps": None if probe is None else probe.frames_per_s,
        "nvdec_limit_pct": None if probe is None else probe.best.nvdec_pct,
        "straight_through_fps": alone.estimate(r.limit)[0] * per_clip["limit"],
        "best_dali_nvdec_pct": busy(alone, r.best_dali),
        "decoded_frames_per_clip": per_clip["dali"],
        "dali_over_pyav_alone": found_goals["alone: best DALI / best PyAV DataLoader"]["ratio"],
        "dali_over_ceiling_fed": found_goals["fed: best DALI / training alone"]["ratio"],
    }

    def rows(table: Any) -> list[dict[str, Any]]:
        return table.reset_index().to_dict(orient="records")

    results = {
        "gpu": s.sampler.name,
        "readers_of_way": {w.name: int(w.knob) for w in alone.ways},
        "alone": alone.as_record(),
        "fed": fed.as_record(),
        "picks": {
            "best DALI": r.best_dali,
            "best DataLoader": r.best_pyav,
            "best DALI tied with": list(dynamic_pick.ties),
            "best DataLoader tied with": list(pyav_pick.ties),
        },
        "frames_per_clip": dict(per_clip),
        "decode_limit": None if probe is None else probe.as_record(),
        "variants": {**variants.alone.as_record(), "frames_per_clip": variants.costs},
        "alignment": {way: vars(a) for way, a in alignment.items()},
        "clips_checked": clips_checked,
        "captured": captured,
        "folder_check": folder_check,
        "dali_on_bad_files": dali_on_bad_files,
        "goals": dict(found_goals),
        "sweep": sweep.as_record(s.sweep),
        "tables": {
            "alone": rows(alone_table(alone, r.limit, per_clip, probe)),
            "fed": rows(fed.table()),
            "variants": rows(variants.table()),
            "sweep": rows(sweep.table()),
        },
    }
    return Record(s.parameters, results, headline)


__all__ = [
    "DEFAULTS",
    "SLUG",
    "KINETICS_MEAN",
    "KINETICS_STD",
    "LIMIT_GOAL",
    "DecodeLimit",
    "ProbeError",
    "ProbeRun",
    "ProbeSpec",
    "combine",
    "decode_limit",
    "fit_to_shards",
    "measure_limit",
    "probe_once",
    "straight_through_plan",
    "clip_count",
    "GOAL_GOP",
    "Roles",
    "Setup",
    "Sweep",
    "VideoSet",
    "Variants",
    "alone_table",
    "answer",
    "bad_folder",
    "busy",
    "clips_and_cost",
    "dali_on_bad_files",
    "decoded_share",
    "embedded_set",
    "frame_sizes",
    "frames_per_clip",
    "goals",
    "gop_and_codec",
    "limit_goal_notes",
    "limit_sentence",
    "share_column",
    "record",
    "scaled",
    "set_up",
    "show_alone",
    "size_of",
    "sweep_settings",
]


# --- the loaders and the model that are not the lesson -------------------------------------------


def full_size_clips(s: Setup, way: str, path: Path, starts: Sequence[int], step: int) -> list[Any]:
    """The first video's clips at ``starts`` (its clips every ``step`` frames), unresized, as
    ``uint8`` arrays, by one of DALI's ways: ``"readers.Video"``, ``"experimental.readers.Video"``
    (over the folder: the first video's clips come first, unshuffled) or ``"decoders.video"`` (the
    file's bytes, a start per sample)."""
    import nvidia.dali.experimental.dynamic as ndd

    with ndd.EvalContext(num_threads=s.threads, device_id=s.device_id):
        if way == "decoders.video":
            encoded = ndd.as_batch([np.fromfile(path, np.uint8)] * len(starts))
            out = ndd.decoders.video(
                encoded,
                device=s.decode_on,
                sequence_length=s.clip_frames,
                stride=s.stride,
                start_frame=ndd.as_batch([np.int32(x) for x in starts]),
            )
        else:
            legacy = way == "readers.Video"
            reader = (ndd.readers.Video if legacy else ndd.experimental.readers.Video)(
                device=s.decode_on,
                file_root=str(s.folder.root),
                sequence_length=s.clip_frames,
                stride=s.stride,
                step=step,
                **({"file_list_include_preceding_frame": False} if legacy else {}),
            )
            out = next(iter(reader.next_epoch(batch_size=len(starts))))[0]
        return list(out.torch().cpu().numpy())


def pyav_loader(s: Setup, clips: Sequence[video_clips.Clip], workers: int) -> Any:
    """PyAV in ``workers`` DataLoader workers (notebook 05's DataLoader settings), decoding
    ``clips`` resized to ``clip_size``, each batch moved to the model's device."""
    from helpers.toolkit import video_clips
    from helpers.toolkit.loaders import DataLoaderFeed

    def on_device(frames: Any, labels: Any) -> tuple[Any, Any]:
        return frames.to(s.model_device, non_blocking=True), labels.to(s.model_device, non_blocking=True)

    dataset = video_clips.PyAVClips(
        clips,
        clip_frames=s.clip_frames,
        stride=s.stride,
        size=(s.clip_size, s.clip_size),
        threads=s.decoder_threads,
    )
    return DataLoaderFeed(
        dataset, batch_size=s.batch_size, workers=workers, prepare=on_device, pin_memory=s.on_gpu, seed=s.seed
    )


def straight_through(s: Setup) -> Any:
    """Straight-through decoding, a reference: ``s.run_readers`` eager readers, one shard each,
    decoding every video in runs of ``s.run_frames`` frames from a keyframe, ``s.run_batch`` runs a
    batch, nothing skipped, resized or copied (``straight_through_plan``)."""
    import nvidia.dali.experimental.dynamic as ndd

    from helpers.toolkit.loaders import DynamicFeed
    from helpers.toolkit.sharded import ShardedFeed

    reader_of = ndd.readers.Video if s.on_gpu else ndd.experimental.readers.Video
    quiet = {"file_list_include_preceding_frame": False} if s.on_gpu else {}

    class Runs(DynamicFeed):
        def __init__(self, shard: int) -> None:
            reader = reader_of(
                device=s.decode_on,
                file_root=str(s.folder.root),
                sequence_length=s.run_frames,
                step=s.run_frames,
                num_shards=s.run_readers,
                shard_id=shard,
                stick_to_shard=True,
                pad_last_batch=True,
                **quiet,
            )
            super().__init__(
                reader,
                ndd.EvalContext(num_threads=s.threads, device_id=s.device_id),
                batch_size=s.run_batch,
                capture=False,
                name=f"runs, shard {shard}",
            )

        def step(self, runs: Any, labels: Any) -> tuple[Any, Any]:  # decoded (evaluate waits), nothing copied
            runs.evaluate()
            labels = labels.torch().view(-1)
            return labels, labels

    return ShardedFeed([Runs(i) for i in range(s.run_readers)], name="straight through")


def roles_and_captured(
    harness: Harness, ways: Sequence[Way], picks: Mapping[str, Any], limit: Way, readers: int
) -> tuple[Roles, str]:
    """The ways the later sections name, from the picks (``{"dali": Pick, "pyav": Pick}``); prints
    what each capture loop captured (its guard) and returns the ``readers``-reader loop's."""
    dali = {(int(w.knob), "eager" in w.name): w.name for w in ways if w.kind == "dali"}
    kind = {w.kind: w.name for w in ways}
    roles = Roles(
        picks["dali"].best,
        picks["pyav"].best,
        one_reader=dali[1, False],
        threads=dali[readers, False],
        pipeline=kind["pipeline"],
        file_bytes=kind["decoders.video"],
        limit=limit.name,
    )
    for w in ways:
        loader = harness.loaders.get(w.name)
        feeds = getattr(loader, "feeds", None)
        if feeds and getattr(feeds[0], "capture", False):
            print(loader.guard)
    return roles, str(harness.loaders[roles.threads].guard)


class Trainer:
    """The model and its training step, one call a batch: torchvision's ``r2plus1d_18`` on a GPU
    (``weights=None``, ``channels_last_3d``, ``bfloat16`` autocast), two 3D convolutions on a CPU
    (torch given half of the cores); SGD. A loader's ``uint8`` clips ``(N, F, H, W, C)`` become
    ``float``s, channels first, normalized as torchvision's ``R2Plus1D_18_Weights.KINETICS400_V1``
    normalizes (``KINETICS_MEAN``, ``KINETICS_STD``): the same work for every loader."""

    def __init__(self, s: Setup, classes: int) -> None:
        import torch
        import torchvision

        self.on_gpu = s.on_gpu
        if not s.on_gpu:
            torch.set_num_threads(max(1, (os.cpu_count() or 1) // 2))
            print(skip_message("r2plus1d_18 (a small 3D network trains in its place)"))
        shape = (1, 3, 1, 1, 1)  # Kinetics-400's mean and standard deviation, in 0-255 levels
        self.mean = torch.tensor(KINETICS_MEAN, device=s.model_device).view(shape) * 255
        self.std = torch.tensor(KINETICS_STD, device=s.model_device).view(shape) * 255
        torch.manual_seed(s.seed)
        if s.on_gpu:
            model = torchvision.models.video.r2plus1d_18(weights=None, num_classes=classes)
            model = model.to(s.model_device, memory_format=torch.channels_last_3d)
        else:
            nn = torch.nn
            model = nn.Sequential(
                nn.Conv3d(3, 16, 3, stride=(1, 2, 2), padding=1),
                nn.ReLU(),
                nn.Conv3d(16, 32, 3, stride=2, padding=1),
                nn.ReLU(),
                nn.AdaptiveAvgPool3d(1),
                nn.Flatten(),
                nn.Linear(32, classes),
            )
        self.model = model.train()
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def __call__(self, frames: Any, labels: Any) -> None:
        import torch
        import torch.nn.functional as F

        x = frames.permute(0, 4, 1, 2, 3).float().sub_(self.mean).div_(self.std)  # N, C, F, H, W
        if self.on_gpu:
            x = x.contiguous(memory_format=torch.channels_last_3d)
        with torch.autocast("cuda" if self.on_gpu else "cpu", dtype=torch.bfloat16, enabled=self.on_gpu):
            loss = F.cross_entropy(self.model(x), labels)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
