"""helpers.data.video_sources: a folder of videos checked before DALI reads it, every file at fault
named with what to do; the embedded set found or built."""

from __future__ import annotations

import os
import shutil
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from helpers.data.data_sources import DataSourceError
from helpers.data.embedded_video import build_video_set
from helpers.data.embedded_video import load_video_set
from helpers.data.video_sources import check_video_folder
from helpers.data.video_sources import locate_videos
from helpers.data.video_sources import probe_video

SMALL = dict(width=96, height=64, frames=16, gop=8, per_class=1)
pytestmark = pytest.mark.slow  # each module builds the photographs and two video sets


@pytest.fixture(scope="module")
def sets(tmp_path_factory: pytest.TempPathFactory) -> dict:
    data = tmp_path_factory.mktemp("video-data")
    return {codec: load_video_set(build_video_set(data, codec=codec, **SMALL)) for codec in ("vp9", "h264")}


def _folder(tmp_path: Path, files: dict[str, Path | bytes]) -> Path:
    root = tmp_path / "videos"
    for name, source in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        if isinstance(source, bytes):
            (root / name).write_bytes(source)
        else:
            shutil.copy(source, root / name)
    return root


def _variable_rate(path: Path, frames: int = 16) -> Path:
    """A VP9 video whose frames are 40 ms apart, then 80 ms: a variable frame rate."""
    import av

    with av.open(str(path), "w", format="mp4") as container:
        stream = container.add_stream("libvpx-vp9", rate=25)
        stream.width, stream.height, stream.pix_fmt = 96, 64, "yuv420p"
        stream.codec_context.time_base = Fraction(1, 1000)
        for i in range(frames):
            frame = av.VideoFrame.from_ndarray(np.full((64, 96, 3), 10 * i, np.uint8), format="rgb24")
            half = frames // 2
            frame.pts = i * 40 if i < half else half * 40 + (i - half) * 80  # in ms
            frame.time_base = Fraction(1, 1000)
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path


def test_a_good_folder_is_described(sets, tmp_path: Path) -> None:
    vp9 = sets["vp9"]
    root = _folder(tmp_path, {f"{f.parent.name}/{f.name}": f for f in vp9.files[:2]})
    folder = check_video_folder(root, device="cpu", clip_frames=8, stride=2, legacy=True)
    assert folder.classes == vp9.classes[:2] and len(folder.videos) == 2
    assert all(v.codec == "vp9" and v.frames == 16 and v.constant_rate for v in folder.videos)
    assert "2 videos in 2 classes" in folder.describe() and "vp9 (2)" in folder.describe()


def test_each_problem_names_its_files_and_what_to_do(sets, tmp_path: Path) -> None:
    root = _folder(
        tmp_path,
        {
            "a/good.mp4": sets["vp9"].files[0],
            "a/h264.mp4": sets["h264"].files[0],
            "b/broken.mp4": b"<html>not found</html>",
        },
    )
    _variable_rate(root / "b" / "variable.mp4")
    with pytest.raises(DataSourceError) as raised:
        check_video_folder(root, device="cpu", clip_frames=9, stride=2, legacy=True)
    message = str(raised.value)
    assert message.startswith("4 problem(s) in") and "(4 videos)" in message
    assert "broken.mp4 is not a readable video" in message
    assert "codec (h264) that DALI does not decode on the cpu" in message and "a/h264.mp4" in message
    assert 'device="gpu"' in message
    assert "shorter than one clip (9 frames, every 2: 18 frames)" in message
    assert "variable frame rate" in message and "b/variable.mp4" in message
    assert "ndd.experimental.readers.Video" in message
    # on the GPU, H.264 is fine; without the legacy reader, so is the variable rate
    with pytest.raises(DataSourceError) as raised:
        check_video_folder(root, device="gpu", clip_frames=8, stride=2)
    assert str(raised.value).startswith("1 problem(s)") and "broken.mp4" in str(raised.value)


def test_probe_tells_a_constant_rate_from_a_variable_one(sets, tmp_path: Path) -> None:
    assert probe_video(sets["vp9"].files[0]).constant_rate
    assert not probe_video(_variable_rate(tmp_path / "v.mp4")).constant_rate


@pytest.mark.parametrize(
    "setup, message",
    [
        ("missing", "does not exist. Pass a folder that holds one subfolder of videos per class"),
        ("empty", "No videos found in"),
    ],
)
def test_a_folder_without_videos_says_so(tmp_path: Path, setup: str, message: str) -> None:
    root = tmp_path / "videos"
    if setup == "empty":
        (root / "a").mkdir(parents=True)
        (root / "a" / "notes.txt").write_text("no video here")
    with pytest.raises(DataSourceError, match=message):
        check_video_folder(root, device="cpu", clip_frames=8)


def test_locate_videos_builds_once_then_finds_the_set(tmp_path: Path, capsys) -> None:
    first = locate_videos(data_dir=tmp_path, codec="vp9", **SMALL)
    assert "Building the video set (once)" in capsys.readouterr().out
    again = locate_videos(data_dir=tmp_path, codec="vp9", **SMALL)
    assert again == first and "Building" not in capsys.readouterr().out


def test_native_log_collects_what_native_code_writes_to_stderr_without_build_paths(capfd) -> None:
    from helpers.data.video_sources import native_log

    with native_log() as lines:
        os.write(2, b"[mov,mp4 @ 0x7fcafd3ca7c0] moov atom not found\n")
        os.write(2, b'[/opt/dali/dali/operators/video/frames_decoder_base.cc:223] Failed to open "a.mp4"\n')
    assert lines == ["[mov,mp4] moov atom not found", 'Failed to open "a.mp4"']
    assert capfd.readouterr().err == ""


def test_a_hidden_subfolder_and_a_file_that_is_no_video_are_named(sets, tmp_path: Path) -> None:
    """DALI 2.4's readers take every subfolder of ``file_root`` as a class (a hidden one such as
    ``.ipynb_checkpoints`` too, which shifts every label) and try every file of a class folder: the
    check names both before DALI reads the folder."""
    vp9 = sets["vp9"].files[0]
    root = _folder(
        tmp_path,
        {"a/good.mp4": vp9, "b/good.mp4": vp9, ".ipynb_checkpoints/x.mp4": vp9, "a/notes.txt": b"notes"},
    )
    with pytest.raises(DataSourceError) as raised:
        check_video_folder(root, device="cpu", clip_frames=8, stride=2)
    message = str(raised.value)
    assert message.startswith("2 problem(s) in") and "(2 videos)" in message
    assert "1 hidden subfolder(s) (.ipynb_checkpoints) that DALI counts as classes" in message
    assert "1 file(s) without a video extension" in message and "a/notes.txt" in message
