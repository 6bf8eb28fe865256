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

from helpers.video_sources import frames_needed


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


def clip_list(files: Sequence[Path], labels: Sequence[int], frames: Sequence[int], *,
              clip_frames: int, stride: int, step: int) -> list[Clip]:
    """Every clip of every file, file by file in the given order, starts ascending."""
    return [Clip(Path(f), label, s) for f, label, n in zip(files, labels, frames, strict=True)
            for s in clip_starts(n, clip_frames, stride, step)]


def read_clip(path: Path, start: int, clip_frames: int, stride: int, *, size: tuple[int, int] | None = None,
              threads: int = 1) -> np.ndarray:
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
        raise ValueError(f"{path}: frames {missing[:4]} of the clip starting at {start} were not "
                         "decoded: the video is shorter than the clip, or its timestamps are not "
                         "evenly spaced (check it with helpers.video_sources.check_video_folder)")
    return np.stack([out[i] for i in sorted(wanted)])


class PyAVClips(Dataset):
    """One item per clip: ``(frames, label)``, frames ``uint8`` (F, H, W, 3) at ``size``
    (width, height), decoded by PyAV with ``threads`` FFmpeg threads."""

    def __init__(self, clips: Sequence[Clip], *, clip_frames: int, stride: int,
                 size: tuple[int, int], threads: int = 1) -> None:
        self.clips = list(clips)
        self.clip_frames, self.stride, self.size, self.threads = clip_frames, stride, size, threads

    def __len__(self) -> int:
        return len(self.clips)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        c = self.clips[index]
        frames = read_clip(c.path, c.start, self.clip_frames, self.stride, size=self.size,
                           threads=self.threads)
        return torch.from_numpy(frames), c.label
