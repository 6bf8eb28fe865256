"""Where the data comes from, and the messages when it is not there."""

from __future__ import annotations

import shutil
from pathlib import Path

import nvidia.dali.experimental.dynamic as ndd
import pytest

from helpers import embedded_data
from helpers.data_sources import DataSourceError, check_image_folder, locate_data
from helpers.parameters import ParameterError


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
def test_bad_dali_extra_path_names_the_path_and_the_layout(layout: str, tmp_path: Path,
                                                            built: Path, monkeypatch) -> None:
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


@pytest.mark.parametrize("damage", ["truncated", "not-an-image"])
def test_a_broken_file_is_named_and_left_alone(damage: str, built: Path, tmp_path: Path) -> None:
    folder = tmp_path / "images"
    shutil.copytree(built / "images", folder)
    victim = folder / "space" / "rocket-1.jpg"
    data = victim.read_bytes()
    victim.write_bytes(data[: len(data) // 3] if damage == "truncated" else b"<html>oops</html>")
    before = _tree(folder)
    with pytest.raises(DataSourceError) as error:
        check_image_folder(folder)
    assert str(victim) in str(error.value) and "Remove or replace" in str(error.value)
    assert _tree(folder) == before


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
