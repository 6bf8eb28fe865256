"""Where notebook 07's videos come from: the embedded video set, built on first use, or your own
folder of class subfolders of videos, checked before DALI reads it.

DALI's video readers find a file they cannot use only while they read: DALI 2.4's experimental
reader skips an unreadable or too short file (its log names the unreadable one) and the epoch gets
smaller, and a codec the device cannot decode is refused at run time. ``check_video_folder`` reads
each file's header and packet timestamps with PyAV (no decoding: milliseconds a file) and names
every file that DALI would skip or fail on, with what to do: a codec the device does not decode
(DALI 2.4's CPU decoder takes VP8, VP9 and MJPEG; the GPU also H.264, HEVC, AV1 and MPEG-4), a
video shorter than the experimental reader needs for one clip (``frames_needed``), a variable
frame rate where the legacy ``readers.Video`` needs a constant one, or a file that is not a
readable video.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from helpers.data import embedded_video
from helpers.data.data_sources import DataSourceError
from helpers.data.paths import default_data_dir
from helpers.data.paths import relative

VIDEO_EXTENSIONS = (".mp4", ".mkv", ".webm", ".avi", ".mov", ".m4v")
DALI_CODECS = {"cpu": {"vp8", "vp9", "mjpeg"},
               "gpu": {"vp8", "vp9", "mjpeg", "h264", "hevc", "av1", "mpeg4"}}
SHOWN = 5  # files named per problem


def frames_needed(clip_frames: int, stride: int) -> int:
    """The frames a video needs for one clip: DALI 2.4's experimental video reader cuts a clip
    at ``start`` when ``start + stride x clip_frames`` frames fit (by its source,
    ``video_reader_decoder_op.cc``: ``stride - 1`` more than the clip spans)."""
    return stride * clip_frames


@dataclass(frozen=True)
class VideoFile:
    path: Path
    codec: str  # FFmpeg's name: "h264", "vp9", ...
    frames: int
    fps: float
    constant_rate: bool


@dataclass(frozen=True)
class VideoFolder:
    root: Path
    classes: list[str]  # label i is classes[i] (alphabetical, as DALI's readers number them)
    videos: list[VideoFile]

    def describe(self) -> str:
        codecs = Counter(v.codec for v in self.videos)
        return (f"{len(self.videos)} videos in {len(self.classes)} classes ({', '.join(self.classes)}); "
                f"codecs: {', '.join(f'{c} ({n})' for c, n in codecs.most_common())}; "
                f"{min(v.frames for v in self.videos)}-{max(v.frames for v in self.videos)} frames")


def probe_video(path: Path) -> VideoFile:
    """A video's codec, frame count, frame rate and whether that rate is constant (the packets'
    timestamps are evenly spaced), from its header and packets, decoding nothing. Raises
    ``DataSourceError`` naming a file that is not a readable video."""
    import av

    try:
        with av.open(str(path)) as container:
            if not container.streams.video:
                raise DataSourceError(f"{path} holds no video stream. Remove or replace that file.")
            stream = container.streams.video[0]
            codec = stream.codec_context.name
            times = sorted(p.pts for p in container.demux(stream) if p.pts is not None and p.size)
            rate = float(stream.average_rate or 0)
    except av.FFmpegError as err:
        raise DataSourceError(f"{path} is not a readable video ({type(err).__name__}: {err}). "
                              "Remove or replace that file.") from None
    steps = {b - a for a, b in zip(times, times[1:], strict=False)}
    return VideoFile(path, codec, len(times), rate, len(steps) <= 1)


def _listing(files: list[Path], root: Path) -> str:
    shown = ", ".join(str(f.relative_to(root)) for f in files[:SHOWN])
    return shown + (f" and {len(files) - SHOWN} more" if len(files) > SHOWN else "")


def check_video_folder(path: str | Path, *, device: str, clip_frames: int, stride: int = 1,
                       legacy: bool = False) -> VideoFolder:
    """Check a folder of class subfolders of videos for clips of ``clip_frames`` frames taken
    every ``stride`` frames, decoded on ``device`` ("cpu" or "gpu"), by the legacy
    ``readers.Video`` when ``legacy``. Raises one ``DataSourceError`` that names the files at
    fault for every problem found, each with what to do."""
    if device not in DALI_CODECS:
        raise ValueError(f"device must be 'cpu' or 'gpu', not {device!r}")
    root = Path(path).expanduser()
    if not root.is_dir():
        raise DataSourceError(f"video folder {root} does not exist. Pass a folder that holds one "
                              "subfolder of videos per class, or None for the embedded videos.")
    classes = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    hidden = sorted(p.name for p in root.iterdir() if p.is_dir() and p.name.startswith("."))
    files = sorted(root / c / entry.name for c in classes for entry in os.scandir(root / c)
                   if os.path.splitext(entry.name)[1].lower() in VIDEO_EXTENSIONS)
    others = sorted(root / c / entry.name for c in classes for entry in os.scandir(root / c)
                    if entry.is_file() and os.path.splitext(entry.name)[1].lower() not in VIDEO_EXTENSIONS)
    if not files:
        raise DataSourceError(f"No videos found in {root}: one subfolder per class holding video "
                              f"files ({', '.join(VIDEO_EXTENSIONS)}).")
    videos, unreadable = [], []
    for file in files:
        try:
            videos.append(probe_video(file))
        except DataSourceError as err:
            unreadable.append((file, str(err)))
    needed = frames_needed(clip_frames, stride)
    problems = []
    if hidden:  # DALI 2.4 takes every subfolder as a class: a hidden one shifts the labels
        problems.append(f"{len(hidden)} hidden subfolder(s) ({', '.join(hidden[:SHOWN])}) that DALI counts "
                        "as classes, so its labels would not be the subfolders you see: remove them")
    if others:  # DALI 2.4 reads every file of a class folder, and skips one it cannot open
        problems.append(f"{len(others)} file(s) without a video extension, which DALI would try to read "
                        f"and skip: {_listing(others, root)}. Move them out of the class folders")
    if unreadable:
        problems.append(f"{len(unreadable)} not readable as video: "
                        + "; ".join(reason.rstrip(".") for _, reason in unreadable[:SHOWN]))
    undecodable = [v for v in videos if v.codec not in DALI_CODECS[device]]
    wrong_codec = [v.path for v in undecodable]
    if wrong_codec:
        codecs = sorted({v.codec for v in undecodable})
        problems.append(
            f"{len(wrong_codec)} in a codec ({', '.join(codecs)}) that DALI does not decode on the "
            f"{device} (it takes {', '.join(sorted(DALI_CODECS[device]))}): {_listing(wrong_codec, root)}. "
            + ("Decode on the GPU (device=\"gpu\"), or re-encode them, e.g. `ffmpeg -i in.mp4 -c:v "
               "libvpx-vp9 out.mp4`" if device == "cpu" else "Re-encode them, e.g. `ffmpeg -i in.mkv "
               "-c:v libx264 -bf 0 out.mp4`"))
    short = [v.path for v in videos if v.frames < needed]
    if short:
        problems.append(f"{len(short)} shorter than one clip ({clip_frames} frames, every {stride}: "
                        f"{needed} frames): {_listing(short, root)}. Remove them, or take shorter "
                        "clips (clip_frames, stride)")
    variable = [v.path for v in videos if legacy and not v.constant_rate]
    if variable:
        problems.append(f"{len(variable)} with a variable frame rate, which the legacy readers.Video "
                        f"needs constant: {_listing(variable, root)}. Use ndd.experimental.readers."
                        "Video, or re-encode at a fixed rate (`ffmpeg -i in.mp4 -r 25 out.mp4`)")
    if problems:
        raise DataSourceError(f"{len(problems)} problem(s) in {root} ({len(files)} videos): "
                              + "; ".join(problems) + ".")
    return VideoFolder(root, classes, videos)


def locate_videos(*, codec: str = "vp9", width: int = 320, height: int = 240, frames: int = 64,
                  gop: int = 16, per_class: int = 2, verbose: bool = True,
                  data_dir: Path | None = None) -> embedded_video.VideoSet:
    """The embedded video set of these parameters, built on first use (seconds for a small
    VP9 set, about two seconds a 720p H.264 video on one core); prints where it is."""
    data_dir = data_dir or default_data_dir()
    path = embedded_video.video_set_dir(data_dir, codec, width, height, frames, gop, per_class)
    if verbose and not path.is_dir():
        print(f"Building the video set (once): {relative(path)}")
    path = embedded_video.build_video_set(data_dir, codec=codec, width=width, height=height,
                                          frames=frames, gop=gop, per_class=per_class)
    videos = embedded_video.load_video_set(path)
    if verbose:
        print(f"{videos.describe()}\n  {relative(path)}")
    return videos


_SOURCE_PREFIX = re.compile(r"^\[[^\]\s]*\.(?:cc|cpp|cu|h):\d+\] ")  # DALI's C++ log: its build path
_ADDRESS = re.compile(r" @ 0x[0-9a-f]+\]")  # FFmpeg's log: the address of its context


@contextmanager
def native_log() -> Iterator[list[str]]:
    """What native code (FFmpeg, DALI's C++ log) writes to the process's standard error while the
    block runs, collected instead of shown raw in a notebook: the list it yields fills with its
    lines when the block ends, without the build paths of DALI's sources and FFmpeg's addresses."""
    lines: list[str] = []
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield lines
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            text = captured.read().decode(errors="replace")
            lines.extend(_ADDRESS.sub("]", _SOURCE_PREFIX.sub("", line))
                         for line in text.splitlines() if line.strip())
