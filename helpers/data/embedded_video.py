"""The embedded video set: short videos in class folders, a camera panning and zooming over the
embedded photographs (one class a subject, as in the photo set), built on first use and checked
by a manifest, like the rest of the embedded data (``helpers.data.embedded_data``).

Each video is an MP4 file of ``frames`` frames: VP9 (``"vp9"``), which DALI decodes on the CPU
and the GPU, or H.264 (``"h264"``) or HEVC (``"hevc"``), which DALI decodes on the GPU only; every
``gop``-th frame a keyframe, no B-frames, a constant frame rate. PyAV (FFmpeg's libraries, with
libvpx, libx264 and libx265 in its wheel) encodes them, on one thread each, so that a build is
the same bytes every time.

    python -m helpers.data.embedded_video --codec h264 --size 1280x720   # prebuild a set
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing
import os
from collections.abc import Iterator
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from helpers.data.embedded_data import _rebuilding
from helpers.data.embedded_data import build_photos
from helpers.data.embedded_data import is_complete
from helpers.data.embedded_data import photo_set_sources
from helpers.data.embedded_data import read_manifest
from helpers.data.paths import default_data_dir
from helpers.data.paths import relative

VIDEO_LAYOUT = 1  # bumped when the videos change: older builds are rebuilt
CODECS = {"vp9": "libvpx-vp9", "h264": "libx264", "hevc": "libx265"}  # ours -> FFmpeg's encoder
# one thread, a fixed speed: the same bytes on every machine that has the same PyAV
ENCODER_OPTIONS = {"vp9": {"threads": "1", "row-mt": "0", "deadline": "good", "cpu-used": "5",
                           "crf": "32", "b": "0"},
                   "h264": {"threads": "1", "preset": "veryfast", "crf": "23", "bf": "0"},
                   "hevc": {"preset": "veryfast", "crf": "26",
                            "x265-params": "pools=1:frame-threads=1:bframes=0:log-level=error"}}
ZOOM = (0.45, 0.9)  # the window's share of the largest one of the video's shape in the photo


@dataclass(frozen=True)
class VideoSet:
    root: Path
    codec: str
    width: int
    height: int
    frames: int
    gop: int
    fps: int
    classes: list[str]  # label i is classes[i] (alphabetical, as DALI's readers number them)
    files: list[Path]

    def describe(self) -> str:
        return (f"video set: {len(self.files)} {self.codec.upper()} videos of {self.frames} frames at "
                f"{self.width}x{self.height}, {self.fps} frames/s, a keyframe every {self.gop} "
                f"frames, in {len(self.classes)} classes ({', '.join(self.classes)})")


@dataclass(frozen=True)
class VideoSpec:
    """One video: a window of ``zoom`` (of the largest window of the video's shape) moving in a
    straight line from ``start`` to ``end`` (its centre, as fractions of the photo's size)."""

    source: Path
    zoom: tuple[float, float]  # at the first frame, at the last
    start: tuple[float, float]
    end: tuple[float, float]


def check_parameters(codec: str, width: int, height: int, frames: int, gop: int, per_class: int) -> None:
    if codec not in CODECS:
        raise ValueError(f"codec must be one of {sorted(CODECS)}, not {codec!r}")
    for name, value in (("width", width), ("height", height)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 16 or value % 2:
            raise ValueError(f"{name} must be an even whole number of pixels, 16 or more (the "
                             f"encoders store colour at half resolution), not {value!r}")
    for name, value in (("frames", frames), ("gop", gop), ("per_class", per_class)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a whole number of at least 1, not {value!r}")


def video_set_dir(data_dir: Path, codec: str, width: int, height: int, frames: int, gop: int,
                  per_class: int) -> Path:
    """One folder per codec, size, length, keyframe interval and count."""
    check_parameters(codec, width, height, frames, gop, per_class)
    return data_dir / f"videos-{codec}-{width}x{height}-{frames}f-gop{gop}-{per_class}"


def video_spec(label: str, index: int, sources: dict[str, list[Path]], seed: int = 0) -> VideoSpec:
    """Video ``index`` of class ``label``: its own random stream, so that it does not depend on
    how many videos the set has."""
    digest = hashlib.sha256(f"{seed}/{label}/{index}".encode()).digest()
    rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
    files = sources[label]
    zoom = tuple(float(z) for z in rng.uniform(*ZOOM, size=2))
    start, end = (tuple(float(v) for v in rng.uniform(0.3, 0.7, size=2)) for _ in range(2))
    return VideoSpec(files[index % len(files)], zoom, start, end)  # type: ignore[arg-type]


def render_frames(spec: VideoSpec, width: int, height: int, frames: int) -> Iterator[np.ndarray]:
    """The frames of ``spec`` as ``height x width x 3`` uint8 RGB arrays."""
    with Image.open(spec.source) as opened:
        photo = opened.convert("RGB")
    aspect = width / height
    fit_w = min(photo.width, photo.height * aspect)  # the largest window of the video's shape
    for i in range(frames):
        t = i / max(1, frames - 1)
        zoom = spec.zoom[0] + t * (spec.zoom[1] - spec.zoom[0])
        w, h = fit_w * zoom, fit_w * zoom / aspect
        cx = spec.start[0] + t * (spec.end[0] - spec.start[0])
        cy = spec.start[1] + t * (spec.end[1] - spec.start[1])
        left = min(max(cx * photo.width - w / 2, 0.0), photo.width - w)
        top = min(max(cy * photo.height - h / 2, 0.0), photo.height - h)
        window = photo.resize((width, height), Image.Resampling.BILINEAR,
                              box=(left, top, left + w, top + h))
        yield np.asarray(window)


def encode_video(path: Path, frames: Iterator[np.ndarray], codec: str, width: int, height: int,
                 fps: int, gop: int) -> None:
    import av  # PyAV: only the video set needs it

    with av.open(str(path), "w", format="mp4") as container:
        stream = container.add_stream(CODECS[codec], rate=fps)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.gop_size = gop
        stream.options = {**ENCODER_OPTIONS[codec], "g": str(gop), "keyint_min": str(gop)}
        for pixels in frames:
            for packet in stream.encode(av.VideoFrame.from_ndarray(pixels, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():  # flush
            container.mux(packet)


def _encode_job(job: tuple) -> None:
    path, spec, codec, width, height, frames, fps, gop = job
    encode_video(path, render_frames(spec, width, height, frames), codec, width, height, fps, gop)


def video_set_current(path: Path, parameters: dict) -> bool:
    if not is_complete(path):
        return False
    manifest = read_manifest(path)
    return manifest.get("layout") == VIDEO_LAYOUT and manifest.get("parameters") == parameters


def build_video_set(data_dir: Path, *, codec: str = "vp9", width: int = 320, height: int = 240,
                    frames: int = 64, gop: int = 16, per_class: int = 2, fps: int = 25, seed: int = 0,
                    force: bool = False) -> Path:
    """Build the set unless an equal build is there: ``<class>/<class>_<i>.mp4`` for each class
    of the photo set, ``per_class`` videos each, made from the embedded photographs."""
    dest = video_set_dir(data_dir, codec, width, height, frames, gop, per_class)
    if isinstance(fps, bool) or not isinstance(fps, int) or fps < 1:
        raise ValueError(f"fps must be a whole number of at least 1, not {fps!r}")
    parameters = dict(codec=codec, width=width, height=height, frames=frames, gop=gop,
                      per_class=per_class, fps=fps, seed=seed)
    images = build_photos(data_dir)
    with _rebuilding(data_dir, dest, lambda: not force and video_set_current(dest, parameters)) as build:
        if build is None:
            return dest
        tmp = build.tmp
        sources = photo_set_sources(images)
        jobs = []
        for label in sources:
            (tmp / label).mkdir()
            jobs += [(tmp / label / f"{label}_{index:03d}.mp4", video_spec(label, index, sources, seed),
                      codec, width, height, frames, fps, gop) for index in range(per_class)]
        # one process a video, each encoding on one thread: the same bytes as one after the other
        workers = min(len(jobs), os.cpu_count() or 1)
        if workers > 1:
            with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
                list(pool.map(_encode_job, jobs))
        else:
            for job in jobs:
                _encode_job(job)
        files = {path.relative_to(tmp).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
                 for path, *_ in jobs}
        build.manifest = {"layout": VIDEO_LAYOUT, "parameters": parameters,
                          "classes": list(sources), "files": files}
    return dest


def load_video_set(path: Path) -> VideoSet:
    manifest = read_manifest(path)
    p = manifest["parameters"]
    return VideoSet(path, p["codec"], p["width"], p["height"], p["frames"], p["gop"], p["fps"],
                    manifest["classes"], [path / name for name in manifest["files"]])


def keyframes(path: Path) -> list[int]:
    """The indices of the keyframes of a video (PyAV reads the packets, decoding nothing)."""
    import av

    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        return [i for i, packet in enumerate(p for p in container.demux(stream) if p.size)
                if packet.is_keyframe]


def first_packets(source: Path, dest: Path, packets: int) -> Path:
    """A copy of ``source``'s video stream cut after its first ``packets`` packets (frames, with
    no B-frames), remuxed, nothing re-encoded: a video too short for a clip, for checks."""
    import av

    with av.open(str(source)) as container, av.open(str(dest), "w") as out:
        stream = out.add_stream_from_template(container.streams.video[0])
        for i, packet in enumerate(p for p in container.demux(container.streams.video[0]) if p.size):
            if i >= packets:
                break
            packet.stream = stream
            out.mux(packet)
    return dest


def _size(text: str) -> tuple[int, int]:
    width, _, height = text.partition("x")
    return int(width), int(height)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--codec", choices=sorted(CODECS), default="vp9")
    parser.add_argument("--size", type=_size, default=(320, 240), help="WIDTHxHEIGHT, e.g. 1280x720")
    parser.add_argument("--frames", type=int, default=64)
    parser.add_argument("--gop", type=int, default=16, help="frames from one keyframe to the next")
    parser.add_argument("--per-class", type=int, default=2)
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args(argv)
    path = build_video_set(default_data_dir(), codec=args.codec, width=args.size[0],
                           height=args.size[1], frames=args.frames, gop=args.gop,
                           per_class=args.per_class, force=args.force)
    print(f"{load_video_set(path).describe()}: {relative(path)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

