"""The embedded video set (helpers.data.embedded_video): the same bytes on every build, a keyframe
every ``gop`` frames, the panning shot that was rendered, decoded by DALI's CPU video reader
(VP9) and by PyAV (H.264, which DALI decodes on the GPU only)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from helpers.data import embedded_video
from helpers.data.embedded_data import photo_set_sources
from helpers.data.embedded_data import read_manifest
from helpers.data.embedded_video import build_video_set
from helpers.data.embedded_video import keyframes
from helpers.data.embedded_video import load_video_set
from helpers.data.embedded_video import render_frames
from helpers.data.embedded_video import video_set_dir
from helpers.data.embedded_video import video_spec

SMALL = dict(width=96, height=64, frames=16, gop=8, per_class=1)
pytestmark = pytest.mark.slow  # each module builds the photographs and two video sets


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("video-data")


@pytest.fixture(scope="module")
def vp9(data_dir: Path):
    return load_video_set(build_video_set(data_dir, codec="vp9", **SMALL))


def test_a_build_is_the_same_bytes_every_time_with_a_keyframe_every_gop_frames(
    data_dir, vp9, monkeypatch
) -> None:
    first = read_manifest(vp9.root)["files"]
    assert len(first) == len(vp9.classes) == 7 and all(f.is_file() for f in vp9.files)
    monkeypatch.setattr(embedded_video.os, "cpu_count", lambda: 1)  # one video after the other
    rebuilt = build_video_set(data_dir, codec="vp9", force=True, **SMALL)
    assert read_manifest(rebuilt)["files"] == first  # deterministic encoding, in parallel or not
    assert keyframes(vp9.files[0]) == [0, 8]
    assert build_video_set(data_dir, codec="vp9", **SMALL) == rebuilt  # reused, not rebuilt


def test_dali_decodes_the_vp9_set_on_the_cpu_as_it_was_rendered(vp9) -> None:
    import nvidia.dali.experimental.dynamic as ndd

    reader = ndd.experimental.readers.Video(
        file_root=str(vp9.root), sequence_length=8, stride=1, random_shuffle=False, device="cpu"
    )
    with ndd.EvalContext(num_threads=2):
        video, labels = next(iter(reader.next_epoch(batch_size=2)))
        clips = [np.asarray(t) for t in video.tensors]
        labels = [int(np.asarray(t).reshape(-1)[0]) for t in labels.tensors]
    assert [c.shape for c in clips] == [(8, 64, 96, 3)] * 2 and labels == [0, 0]
    spec = video_spec(vp9.classes[0], 0, _sources(vp9), 0)
    rendered = np.stack(list(render_frames(spec, 96, 64, 16)))
    decoded = np.concatenate(clips)  # the first video's 16 frames, in order
    error = np.abs(decoded.astype(float) - rendered.astype(float)).mean(axis=(1, 2, 3))
    assert error.max() < 12, error  # lossy, but the shot that was rendered
    shifted = np.abs(decoded[1:].astype(float) - rendered[:-1].astype(float)).mean()
    assert error.mean() < shifted  # and in its order: the camera moves


def _sources(video_set) -> dict:
    from helpers.data.embedded_data import build_photos

    return photo_set_sources(build_photos(video_set.root.parent))


def test_h264_videos_decode_with_pyav(data_dir: Path) -> None:
    import av

    h264 = load_video_set(build_video_set(data_dir, codec="h264", **SMALL))
    with av.open(str(h264.files[0])) as container:
        frames = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
        assert container.streams.video[0].codec_context.name == "h264"
    assert len(frames) == 16 and frames[0].shape == (64, 96, 3)
    assert keyframes(h264.files[0]) == [0, 8]


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(codec="av1"), "codec must be one of"),
        (dict(width=95), "even whole number of pixels"),
        (dict(gop=0), "gop must be a whole number of at least 1"),
    ],
)
def test_parameters_that_cannot_make_a_set_say_why(tmp_path: Path, change: dict, message: str) -> None:
    arguments = {"codec": "vp9", **SMALL, **change}
    with pytest.raises(ValueError, match=message):
        video_set_dir(tmp_path, **arguments)


def test_first_packets_cuts_a_video_short_without_reencoding(tmp_path: Path) -> None:
    from helpers.data.embedded_video import build_video_set
    from helpers.data.embedded_video import first_packets
    from helpers.data.embedded_video import load_video_set
    from helpers.data.video_sources import probe_video

    videos = load_video_set(
        build_video_set(tmp_path, codec="vp9", width=96, height=64, frames=16, gop=8, per_class=1)
    )
    short = first_packets(videos.files[0], tmp_path / "short.mp4", 5)
    assert probe_video(short).frames == 5 and probe_video(short).codec == "vp9"
