"""Notebook 07's clips for a torch DataLoader: the clips DALI's video readers cut from a folder of
videos (``sequence_length`` frames, ``stride`` apart, a new clip every ``step`` frames), decoded
with PyAV, as a PyTorch user decodes video today. A ``Dataset`` that ``forkserver`` workers
import by name, so it lives here; the notebook shows its source.

``clip_starts`` and ``decoded_frames`` count what a clip costs a decoder: a decoder starts at a
keyframe, so a clip whose first frame is past one decodes every frame from that keyframe on.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Dataset

from helpers.data.video_sources import frames_needed


def clip_span(clip_frames: int, stride: int) -> int:
    """Frames from a clip's first to its last, both included."""
    return (clip_frames - 1) * stride + 1


def clip_starts(frames: int, clip_frames: int, stride: int, step: int) -> list[int]:
    """The first frame of each clip of a video of ``frames`` frames, as DALI 2.4's video readers
    cut them: a start every ``step`` frames while the clip's ``frames_needed`` fit."""
    return list(range(0, frames - frames_needed(clip_frames, stride) + 1, step))


def decoded_frames(start: int, clip_frames: int, stride: int, keyframes: Sequence[int]) -> int:
    """Frames a decoder decodes for one clip when it starts at the keyframe at or before the
    clip's first frame and stops at its last (``keyframes``: sorted frame indices)."""
    keyframe = keyframes[max(0, bisect_right(list(keyframes), start) - 1)]
    return start + clip_span(clip_frames, stride) - keyframe


@dataclass(frozen=True)
class Clip:
    path: Path
    label: int
    start: int


def clip_list(
    files: Sequence[Path],
    labels: Sequence[int],
    frames: Sequence[int],
    *,
    clip_frames: int,
    stride: int,
    step: int,
) -> list[Clip]:
    """Every clip of every file, file by file in the given order, starts ascending."""
    return [
        Clip(Path(f), label, s)
        for f, label, n in zip(files, labels, frames, strict=True)
        for s in clip_starts(n, clip_frames, stride, step)
    ]


def read_clip(
    path: Path,
    start: int,
    clip_frames: int,
    stride: int,
    *,
    size: tuple[int, int] | None = None,
    threads: int = 1,
) -> np.ndarray:
    """Frames ``start, start + stride, ...`` of a video as ``uint8`` of shape (F, H, W, 3), RGB,
    resized by FFmpeg's scaler to ``size`` (width, height) when given. PyAV seeks to the keyframe
    at or before ``start`` and decodes from there; ``threads`` is FFmpeg's thread count for the
    decoder."""
    import av

    wanted = set(range(start, start + clip_span(clip_frames, stride), stride))
    last = max(wanted)
    out: dict[int, np.ndarray] = {}
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        stream.codec_context.thread_count = threads
        rate = stream.average_rate
        base = stream.time_base
        first_pts = stream.start_time or 0
        target = first_pts + int(round(start / rate / base))
        container.seek(target, stream=stream, backward=True, any_frame=False)
        for frame in container.decode(stream):
            index = int(round((frame.pts - first_pts) * base * rate))
            if index in wanted:
                kwargs = {} if size is None else {"width": size[0], "height": size[1]}
                out[index] = frame.to_ndarray(format="rgb24", **kwargs)
            if index >= last:
                break
    missing = sorted(wanted - set(out))
    if missing:
        raise ValueError(
            f"{path}: frames {missing[:4]} of the clip starting at {start} were not "
            "decoded: the video is shorter than the clip, or its timestamps are not "
            "evenly spaced (check it with helpers.data.video_sources.check_video_folder)"
        )
    return np.stack([out[i] for i in sorted(wanted)])


class PyAVClips(Dataset):
    """One item per clip: ``(frames, label)``, frames ``uint8`` (F, H, W, 3) at ``size``
    (width, height), decoded by PyAV with ``threads`` FFmpeg threads."""

    def __init__(
        self, clips: Sequence[Clip], *, clip_frames: int, stride: int, size: tuple[int, int], threads: int = 1
    ) -> None:
        self.clips = list(clips)
        self.clip_frames, self.stride, self.size, self.threads = clip_frames, stride, size, threads

    def __len__(self) -> int:
        return len(self.clips)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        c = self.clips[index]
        frames = read_clip(
            c.path, c.start, self.clip_frames, self.stride, size=self.size, threads=self.threads
        )
        return torch.from_numpy(frames), c.label


CLEARLY = 0.5  # a match is clear when its difference is at most half of the other's


class ClipMismatchError(AssertionError):
    """A DALI loader's frames match PyAV's frames of another start better than the clip's own."""


@dataclass(frozen=True)
class Alignment:
    """Mean absolute differences (0-255 levels) between a loader's clips and PyAV's frames of the
    same starts (``same``) and of the starts one frame earlier and later (``neighbours``, the
    closer of the two). The colour conversions differ (YUV to RGB, each library its own way), and
    more so on detailed content, so no fixed limit tells the right frames: the same frames must be
    the clearly closer match."""

    same: float
    neighbours: float
    clips: int

    @property
    def verdict(self) -> str:
        if self.same <= CLEARLY * self.neighbours:
            return "aligned"
        if self.neighbours <= CLEARLY * self.same:
            return "misaligned"
        return "undecided"  # neighbouring frames barely differ: alignment cannot be judged

    def __str__(self) -> str:
        return (
            f"{self.clips} clips: {self.same:.2f} levels from PyAV's frames of the same starts, "
            f"{self.neighbours:.2f} from the frames one earlier or later: {self.verdict}"
        )


def _mad(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a.astype(np.int16) - b.astype(np.int16)).mean())


def check_alignment(
    clips: Sequence[np.ndarray], path: Path, starts: Sequence[int], clip_frames: int, stride: int, frames: int
) -> Alignment:
    """Compare a loader's full-size clips of video ``path`` (``frames`` frames long), which start
    at ``starts``, with PyAV's decoding of the same starts and of the starts one frame earlier and
    later. Raises :class:`ClipMismatchError` when a neighbouring start is the clearly closer
    match (the loader cuts other frames than it says); "undecided" (frames that barely change)
    does not stop."""
    same, neighbours = [], []
    last_start = frames - clip_span(clip_frames, stride)
    for clip, start in zip(clips, starts, strict=True):
        same.append(_mad(clip, read_clip(path, start, clip_frames, stride)))
        near = [
            _mad(clip, read_clip(path, s, clip_frames, stride))
            for s in (start - 1, start + 1)
            if 0 <= s <= last_start
        ]
        neighbours.append(min(near))
    result = Alignment(float(np.mean(same)), float(np.mean(neighbours)), len(same))
    if result.verdict == "misaligned":
        raise ClipMismatchError(
            f"{path.name}: the loader's clips match PyAV's frames one position away better than the "
            f"frames of their own starts ({result}). The loader cuts other frames than its starts "
            "say: check the clip rule (step, stride, sequence_length) and the video's timestamps "
            "(helpers.data.video_sources.check_video_folder)."
        )
    return result
