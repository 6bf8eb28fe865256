"""Where the data comes from, and the messages when it is not there."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import nvidia.dali.experimental.dynamic as ndd
import PIL.Image
import pytest

from helpers.data import embedded_data
from helpers.data.data_sources import DataSourceError
from helpers.data.data_sources import batch_files
from helpers.data.data_sources import check_decodable
from helpers.data.data_sources import check_image_folder
from helpers.data.data_sources import locate_data
from helpers.data.data_sources import locate_photos
from helpers.toolkit.parameters import ParameterError


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("data")
    embedded_data.build_mnist(data, records=100)
    embedded_data.build_photos(data)
    return data


def _tree(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_size for p in root.rglob("*") if p.is_file()}


def test_embedded_default_when_dali_extra_path_is_unset(built: Path, monkeypatch, capsys) -> None:
    for value in (None, "", "  "):
        if value is None:
            monkeypatch.delenv("DALI_EXTRA_PATH", raising=False)
        else:
            monkeypatch.setenv("DALI_EXTRA_PATH", value)
        sources = locate_data(data_dir=built)
        assert sources.origin.startswith("embedded")
        assert sources.mnist_training == built / "dali_extra" / "db" / "MNIST" / "training"
    assert "data source: embedded" in capsys.readouterr().out


def test_dali_extra_when_set(built: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("DALI_EXTRA_PATH", str(built / "dali_extra"))
    sources = locate_data(data_dir=built, verbose=False)
    assert sources.origin == "DALI_extra ($DALI_EXTRA_PATH)"
    assert sources.mnist_testing == built / "dali_extra" / "db" / "MNIST" / "testing"
    reader = ndd.readers.Caffe2(path=str(sources.mnist_training))
    assert sum(j.batch_size for j, _ in reader.next_epoch(batch_size=50)) == 100


@pytest.mark.parametrize("layout", ["missing", "empty", "lfs-pointer"])
def test_bad_dali_extra_path_names_the_path_and_the_layout(
    layout: str, tmp_path: Path, built: Path, monkeypatch
) -> None:
    root = tmp_path / "DALI_extra"
    if layout != "missing":
        root.mkdir()
    if layout == "lfs-pointer":
        mnist = root / "db" / "MNIST" / "training"
        mnist.mkdir(parents=True)
        (mnist / "data.mdb").write_text("version https://git-lfs.github.com/spec/v1\noid sha256:0\n")
    monkeypatch.setenv("DALI_EXTRA_PATH", str(root))
    with pytest.raises(DataSourceError) as error:
        locate_data(data_dir=built)
    message = str(error.value)
    assert str(root) in message and "db/MNIST/training" in message
    assert ("git lfs pull" in message) if layout == "lfs-pointer" else ("unset it" in message)


def test_missing_embedded_data_says_make_data(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("DALI_EXTRA_PATH", raising=False)
    with pytest.raises(DataSourceError, match="make data"):
        locate_data(data_dir=tmp_path, build_missing=False)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow  # builds the embedded MNIST LMDBs and photographs
def test_missing_embedded_data_is_built_on_first_use(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("DALI_EXTRA_PATH", raising=False)
    sources = locate_data(data_dir=tmp_path, verbose=False)
    assert embedded_data.is_complete(sources.mnist_training)
    assert embedded_data.is_complete(sources.images)


def test_image_folder_description(built: Path) -> None:
    folder = check_image_folder(built / "images")
    assert folder.classes == ["everyday", "space"] and len(folder.files) == 21
    assert "0 = everyday (11), 1 = space (10)" in folder.describe()


def test_image_folder_that_does_not_exist(tmp_path: Path) -> None:
    with pytest.raises(DataSourceError, match="does not exist"):
        check_image_folder(tmp_path / "nowhere")


def test_empty_image_folder(tmp_path: Path) -> None:
    (tmp_path / "cats").mkdir()
    (tmp_path / "cats" / "notes.txt").write_text("not an image, and ignored by readers.File")
    with pytest.raises(DataSourceError, match="No images found"):
        check_image_folder(tmp_path)


@pytest.mark.parametrize("damage", ["empty", "not-an-image", "truncated"])
@pytest.mark.parametrize("decode_up_to", [0, 1000])
def test_a_broken_file_is_named_and_left_alone(
    damage: str, decode_up_to: int, built: Path, tmp_path: Path
) -> None:
    """A header that is no image's is named in a folder of any size; a truncated JPEG (a right
    header) in a folder small enough to decode in full (notebook 01's photos)."""
    folder = tmp_path / "images"
    shutil.copytree(built / "images", folder)
    victim = folder / "space" / "rocket-1.jpg"
    data = victim.read_bytes()
    victim.write_bytes(
        {"empty": b"", "not-an-image": b"<html>oops</html>", "truncated": data[: len(data) // 3]}[damage]
    )
    before = _tree(folder)
    if damage == "truncated" and decode_up_to == 0:
        assert len(check_image_folder(folder, decode_up_to=0).files) == 21  # headers only
        return
    with pytest.raises(DataSourceError) as error:
        check_image_folder(folder, decode_up_to=decode_up_to)
    message = str(error.value)
    assert str(victim) in message and "Remove or replace that file" in message
    assert {
        "empty": "empty file",
        "not-an-image": "b'<html>oo'",
        "truncated": "OSError: image file is truncated",
    }[damage] in message
    assert _tree(folder) == before


def test_a_valid_folder_gives_every_image_in_order(built: Path) -> None:
    folder = check_image_folder(built / "images")
    assert folder.root == built / "images"
    assert folder.files == sorted((built / "images").glob("*/*.jpg"))
    assert all(isinstance(f, Path) for f in folder.files)


def test_the_folder_check_reads_only_file_headers(tmp_path: Path, monkeypatch) -> None:
    """A million files must take seconds: no decode, a few bytes of each file and nothing more."""
    files = 10_000
    for c in range(10):
        (tmp_path / f"class{c}").mkdir()
        for i in range(files // 10):
            (tmp_path / f"class{c}" / f"{i:05d}.jpg").write_bytes(b"\xff\xd8\xff\xe0" + bytes(4000))
    asked, opened = [], []
    real_read, real_open = os.read, os.open
    monkeypatch.setattr(os, "read", lambda fd, n: asked.append(n) or real_read(fd, n))
    monkeypatch.setattr(os, "open", lambda *a, **k: opened.append(a[0]) or real_open(*a, **k))
    monkeypatch.setattr(PIL.Image, "open", lambda *a, **k: pytest.fail("decoded a file"))
    folder = check_image_folder(tmp_path)
    assert len(folder.files) == files and len(folder.classes) == 10
    assert len(opened) == files and len(set(opened)) == files
    assert len(asked) == files and max(asked) <= 64  # bytes of each file, at most


@pytest.fixture()
def truncated(built: Path, tmp_path: Path) -> tuple[Path, Path]:
    folder = tmp_path / "images"
    shutil.copytree(built / "images", folder)
    victim = folder / "space" / "rocket-1.jpg"
    data = victim.read_bytes()
    victim.write_bytes(data[: len(data) // 3])
    return folder, victim


def test_a_truncated_file_in_a_failed_dali_batch_is_named(truncated: tuple[Path, Path]) -> None:
    """The header check lets a truncated JPEG pass; DALI fails its batch without naming it;
    check_decodable on that batch's files names it."""
    folder, victim = truncated
    check_image_folder(folder, decode_up_to=0)  # as a folder of more than 1,000 images would
    reader = ndd.readers.File(file_root=str(folder))
    jpegs = None
    with pytest.raises(Exception) as dali_error:
        for jpegs, _ in reader.next_epoch(batch_size=21):
            ndd.decoders.image(jpegs, device="cpu").evaluate()
    assert victim.name not in str(dali_error.value)
    files = batch_files(jpegs, folder)
    assert sorted(files) == sorted(folder.glob("*/*.jpg"))
    with pytest.raises(DataSourceError) as error:
        check_decodable(files)
    message = str(error.value)
    assert str(victim) in message and "Remove or replace that file" in message
    assert message.count(".jpg") == 1  # the valid ones are not named


def test_check_decodable_names_every_broken_file(truncated: tuple[Path, Path]) -> None:
    folder, victim = truncated
    files = sorted(folder.glob("*/*.jpg"))
    check_decodable([f for f in files if f != victim])  # all valid: returns quietly
    other = folder / "everyday" / "coffee-1.jpg"
    other.write_bytes(b"\xff\xd8\xff\xe0 a header and nothing else")
    with pytest.raises(DataSourceError) as error:
        check_decodable(map(str, files))
    message = str(error.value)
    assert message.startswith("2 files are not readable images")
    assert str(victim) in message and str(other) in message and message.count(".jpg") == 2
    assert message.endswith(
        "Decoding on the CPU, DALI fails the whole batch that holds one; decoding on the GPU, DALI 2.4 "
        "may return an image for each without an error. Remove or replace those files."
    )


@pytest.mark.parametrize("damage", ["not-an-image", "truncated"])
def test_a_broken_file_says_what_dali_does_with_it_on_each_device(
    damage: str, truncated: tuple[Path, Path]
) -> None:
    """A file that only a full decode finds broken (a truncated JPEG): DALI fails its batch on the
    CPU, and on the GPU may return an image without an error (notebook 05's H200 runs; DALI 2.4
    behaviour 8): its message says both, so that it reads true beside either decoder's outcome.
    A header that is no image's keeps the plain sentence."""
    folder, victim = truncated
    if damage == "not-an-image":
        victim.write_bytes(b"<html>oops</html>")
    with pytest.raises(DataSourceError) as error:
        check_image_folder(folder)
    message = str(error.value)
    decoded = (
        "Decoding on the CPU, DALI fails the whole batch that holds it; decoding on the GPU, DALI 2.4 "
        "may return an image for it without an error. Remove or replace that file."
    )
    plain = "DALI fails the whole batch that holds it. Remove or replace that file."
    assert message.endswith(decoded if damage == "truncated" else plain), message


def test_photo_set_is_built_on_first_use_one_folder_a_size(tmp_path: Path, capsys) -> None:
    with pytest.raises(ValueError, match="at least 7"):
        locate_photos(6, data_dir=tmp_path)
    with pytest.raises(DataSourceError, match="--photo-set 14"):
        locate_photos(14, data_dir=tmp_path, build_missing=False)
    assert list(tmp_path.iterdir()) == []
    photos = locate_photos(14, data_dir=tmp_path)
    small = locate_photos(7, data_dir=tmp_path, verbose=False)
    assert "Building the photo set (once)" in capsys.readouterr().out
    assert (photos.size, photos.val_size, small.size) == (14, 7, 7)
    for one in (photos, small):
        train = check_image_folder(one.train)
        assert train.classes == one.classes == check_image_folder(one.val).classes
        assert len(train.files) == one.size and len(train.classes) == 7
    assert "14 training and 7 validation JPEGs" in photos.describe()
    stamp = (photos.root / embedded_data.MANIFEST).stat().st_mtime_ns
    locate_photos(14, data_dir=tmp_path, build_missing=False)  # complete: reused
    assert (photos.root / embedded_data.MANIFEST).stat().st_mtime_ns == stamp


def test_dali_alone_fails_the_whole_batch_without_naming_the_file(built: Path, tmp_path: Path) -> None:
    """Why check_image_folder exists: DALI's own error does not say which file is broken."""
    folder = tmp_path / "images"
    shutil.copytree(built / "images", folder)
    (folder / "space" / "rocket-1.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    reader = ndd.readers.File(file_root=str(folder))
    with pytest.raises(Exception) as error:
        for jpegs, _ in reader.next_epoch(batch_size=21):
            ndd.decoders.image(jpegs, device="cpu").evaluate()
    assert "rocket-1.jpg" not in str(error.value)


def test_batch_size_larger_than_the_folder(built: Path) -> None:
    folder = check_image_folder(built / "images")
    assert folder.check_batch_size(21) == 21
    with pytest.raises(ParameterError, match="batch_size=22 is larger than the 21 images"):
        folder.check_batch_size(22)
