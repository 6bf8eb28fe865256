"""helpers.toolkit.video_clips: clips cut as DALI's video readers cut them, and PyAV decoding the frames
of the clip it is asked for, on the small embedded VP9 set."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from helpers.toolkit.video_clips import PyAVClips
from helpers.toolkit.video_clips import clip_list
from helpers.toolkit.video_clips import clip_span
from helpers.toolkit.video_clips import clip_starts
from helpers.toolkit.video_clips import decoded_frames
from helpers.toolkit.video_clips import read_clip


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
        ("a.mp4", 0, 0),
        ("a.mp4", 0, 16),
        ("a.mp4", 0, 32),
        ("a.mp4", 0, 48),
        ("b.mp4", 1, 0),
        ("b.mp4", 1, 16),
    ]


@pytest.mark.slow
def test_pyav_decodes_the_frames_of_the_clip_it_is_asked_for(tmp_path: Path) -> None:
    from helpers.data.embedded_video import build_video_set
    from helpers.data.embedded_video import load_video_set

    videos = load_video_set(
        build_video_set(tmp_path, codec="vp9", width=96, height=64, frames=16, gop=8, per_class=1)
    )
    path = videos.files[0]
    whole = read_clip(path, 0, 16, 1)
    assert whole.shape == (16, 64, 96, 3) and whole.dtype == np.uint8
    clip = read_clip(path, 3, 4, 2)  # frames 3, 5, 7, 9: seeking back to keyframe 0, then 8
    assert np.array_equal(clip, whole[3:10:2])
    small = read_clip(path, 0, 2, 1, size=(32, 24))
    assert small.shape == (2, 24, 32, 3)
    with pytest.raises(ValueError, match="shorter than the clip"):
        read_clip(path, 10, 4, 2)  # frames 10-16: past the end
    dataset = PyAVClips(
        clip_list([path], [3], [16], clip_frames=4, stride=2, step=8), clip_frames=4, stride=2, size=(32, 24)
    )
    assert len(dataset) == 2
    frames, label = dataset[1]
    assert tuple(frames.shape) == (4, 24, 32, 3) and label == 3


def detailed_frames(frames: int, width: int, height: int):
    """Detailed texture (seeded noise, smoothed a little) panning 3 pixels a frame: colour
    conversions differ most on such content."""
    rng = np.random.default_rng(7)
    texture = rng.integers(0, 256, size=(height, width + 3 * frames, 3)).astype(np.float32)
    texture = (texture + np.roll(texture, 1, axis=1) + np.roll(texture, 1, axis=0)) / 3
    for i in range(frames):
        yield texture[:, 3 * i : 3 * i + width].astype(np.uint8)


def test_a_loader_with_the_right_frames_of_detailed_videos_passes_and_one_frame_off_stops(
    tmp_path: Path,
) -> None:
    """The false alarm a user met (a folder of detailed VP9 videos, one keyframe each): DALI's
    CPU reader's frames are the right ones; a loader one frame off is stopped."""
    ndd = pytest.importorskip("nvidia.dali.experimental.dynamic")
    from helpers.data.embedded_video import encode_video
    from helpers.toolkit.video_clips import ClipMismatchError
    from helpers.toolkit.video_clips import check_alignment

    (tmp_path / "texture").mkdir()
    path = tmp_path / "texture" / "a.mp4"
    encode_video(path, detailed_frames(48, 320, 240), "vp9", 320, 240, fps=25, gop=48)
    clip_frames, stride, step = 8, 2, 5
    with ndd.EvalContext(num_threads=1):
        reader = ndd.experimental.readers.Video(
            device="cpu", file_root=str(tmp_path), sequence_length=clip_frames, stride=stride, step=step
        )
        clips = [c for batch, _ in reader.next_epoch(batch_size=3) for c in batch.torch().numpy()]
    starts = clip_starts(48, clip_frames, stride, step)
    assert len(clips) >= len(starts)
    result = check_alignment(clips[:4], path, starts[:4], clip_frames, stride, 48)
    assert result.verdict == "aligned" and result.same > 2, result  # colour differs, frames agree
    off = [read_clip(path, s + 1, clip_frames, stride) for s in starts[1:4]]  # one frame late
    with pytest.raises(ClipMismatchError, match="one position away"):
        check_alignment(off, path, starts[1:4], clip_frames, stride, 48)
