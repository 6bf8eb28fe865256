"""Where the notebooks' data comes from: DALI_extra when ``DALI_EXTRA_PATH`` is set, otherwise
the embedded default that ``make data`` builds in DALI_extra's own layout (one code path).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helpers.data import embedded_data
from helpers.data.errors import ParameterError
from helpers.data.paths import MNIST_TESTING
from helpers.data.paths import MNIST_TRAINING
from helpers.data.paths import default_data_dir
from helpers.data.paths import relative

__all__ = ["DataSourceError", "DataSources", "ImageFolder", "PhotoSet",
           "batch_files", "check_decodable", "check_image_folder", "dali_extra_from_env",
           "default_data_dir", "locate_data", "locate_photos"]

DALI_EXTRA_URL = "https://github.com/NVIDIA/DALI_extra"


class DataSourceError(RuntimeError):
    """The data the notebooks need is not where it should be; the message says what to do."""


@dataclass(frozen=True)
class DataSources:
    origin: str  # "DALI_extra" or "embedded"
    dali_extra: Path  # a folder in DALI_extra's layout
    images: Path  # a folder of class subfolders of JPEGs

    @property
    def mnist_training(self) -> Path:
        return self.dali_extra / MNIST_TRAINING

    @property
    def mnist_testing(self) -> Path:
        """Held-out digits, never in ``mnist_training`` (DALI_extra: MNIST's test set)."""
        path = self.dali_extra / MNIST_TESTING
        if not (path / "data.mdb").is_file():
            raise DataSourceError(
                f"{relative(path)} holds no LMDB (data.mdb): the held-out digits are missing. "
                "Unset DALI_EXTRA_PATH to use the embedded split, or fetch DALI_extra's "
                "db/MNIST/testing with `git lfs pull`.")
        return path

    def describe(self) -> str:
        return (
            f"data source: {self.origin}\n"
            f"  MNIST LMDB, training: {relative(self.mnist_training)}\n"
            f"  MNIST LMDB, testing:  {relative(self.mnist_testing)}\n"
            f"  photographs:          {relative(self.images)}"
        )


def dali_extra_from_env(environ: dict[str, str] | os._Environ[str] = os.environ) -> Path | None:
    """The DALI_extra checkout that ``DALI_EXTRA_PATH`` names, checked; None when unset."""
    value = environ.get("DALI_EXTRA_PATH", "").strip()
    if not value:
        return None
    root = Path(value).expanduser()
    expected = (
        f"Expected a DALI_extra checkout ({DALI_EXTRA_URL}, fetched with `git lfs pull`) that "
        f"holds {MNIST_TRAINING}/data.mdb. Fix the variable, or unset it to use the "
        "embedded data that `make data` builds."
    )
    if not root.is_dir():
        raise DataSourceError(f"DALI_EXTRA_PATH={value} is not a folder. {expected}")
    mnist = root / MNIST_TRAINING / "data.mdb"
    if not mnist.is_file():
        raise DataSourceError(f"DALI_EXTRA_PATH={value} has no {mnist.relative_to(root)}. {expected}")
    if mnist.stat().st_size < 1024:
        raise DataSourceError(
            f"{mnist} is {mnist.stat().st_size} bytes: a Git LFS pointer, not the database. "
            f"Run `git lfs pull` in {root}. {expected}"
        )
    return root


def _ensure_built(data_dir: Path, with_mnist: bool, build_missing: bool) -> None:
    builders = {data_dir / "images": embedded_data.build_photos}
    if with_mnist:
        builders[data_dir / "dali_extra" / MNIST_TRAINING] = embedded_data.build_mnist
        builders[data_dir / "dali_extra" / MNIST_TESTING] = embedded_data.build_mnist
    current = {data_dir / "images": embedded_data.photos_current}
    missing = [path for path in builders
               if not current.get(path, embedded_data.is_complete)(path)]
    if missing and not build_missing:
        raise DataSourceError(
            "The embedded data is missing or incomplete ("
            + ", ".join(str(p) for p in missing)
            + "). Run `make data` in the repository, or set DALI_EXTRA_PATH to a DALI_extra checkout."
        )
    for path in missing:
        print(f"Building the embedded data (once, a few seconds): {path}")
        builders[path](data_dir)


def locate_data(*, build_missing: bool = True, verbose: bool = True,
                data_dir: Path | None = None) -> DataSources:
    """The data every notebook uses; prints which source it is.

    DALI_extra (``DALI_EXTRA_PATH``) serves the MNIST LMDB; the two-class photographs are the
    embedded ones either way (DALI_extra has no two-class folder of photos).
    """
    data_dir = data_dir or default_data_dir()
    dali_extra = dali_extra_from_env()
    _ensure_built(data_dir, with_mnist=dali_extra is None, build_missing=build_missing)
    if dali_extra is None:
        sources = DataSources("embedded (make data)", data_dir / "dali_extra", data_dir / "images")
    else:
        sources = DataSources("DALI_extra ($DALI_EXTRA_PATH)", dali_extra, data_dir / "images")
    if verbose:
        print(sources.describe())
    return sources


@dataclass(frozen=True)
class PhotoSet:
    """The ImageNet-style photo set: ``train/<class>/*.jpg`` and ``val/<class>/*.jpg``, each a
    ``file_root`` for ``ndd.readers.File``."""

    root: Path
    size: int  # training photos
    val_size: int
    classes: list[str]  # label i is classes[i]

    @property
    def train(self) -> Path:
        return self.root / "train"

    @property
    def val(self) -> Path:
        return self.root / "val"

    def describe(self) -> str:
        return (f"photo set: {self.size:,} training and {self.val_size:,} validation JPEGs of "
                f"about 500x375 in {len(self.classes)} classes ({', '.join(self.classes)})\n"
                f"  train: {relative(self.train)}\n  val:   {relative(self.val)}")


def locate_photos(size: int = embedded_data.PHOTO_SET_SIZE, *, build_missing: bool = True,
                  verbose: bool = True, data_dir: Path | None = None) -> PhotoSet:
    """The ImageNet-style photo set of ``size`` distinct training photos (4,096 for a GPU, a few
    hundred for 2 CPU cores), built on first use from the embedded photographs (seconds to a
    minute, with a progress bar); prints where it is. Each size is a folder of its own."""
    data_dir = data_dir or default_data_dir()
    path = embedded_data.photo_set_dir(data_dir, size)
    if not embedded_data.photo_set_current(path, size):
        if not build_missing:
            raise DataSourceError(
                f"The photo set of {size} photos is missing or incomplete ({relative(path)}). "
                f"Run `python -m helpers.data.embedded_data --photo-set {size}` in the repository.")
        print(f"Building the photo set (once): {relative(path)}")
        embedded_data.build_photo_set(data_dir, size)
    manifest = embedded_data.read_manifest(path)
    photos = PhotoSet(path, manifest["size"], manifest["val_size"], manifest["classes"])
    if verbose:
        print(photos.describe())
    return photos


# extensions that readers.File picks up by default (its `file_filters`)
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".pnm", ".ppm", ".pgm",
                    ".pbm", ".jp2", ".webp")
# how each of those formats starts (JPEG's SOI marker, PNG's signature, ...)
IMAGE_SIGNATURES = (b"\xff\xd8\xff", b"\x89PNG\r\n\x1a\n", b"BM", b"II*\x00", b"MM\x00*",
                    b"P1", b"P2", b"P3", b"P4", b"P5", b"P6", b"\x00\x00\x00\x0cjP  \r\n\x87\n",
                    b"\xff\x4f\xff\x51")
HEADER_BYTES = 16  # all that check_image_folder reads of a file


@dataclass(frozen=True)
class ImageFolder:
    """A folder of class subfolders of images, as ``ndd.readers.File(file_root=...)`` reads it."""

    root: Path
    classes: list[str]  # label i is classes[i] (alphabetical, as readers.File numbers them)
    files: list[Path]

    def describe(self) -> str:
        counts = Counter(f.parent.name for f in self.files)
        return f"{len(self.files)} images in {relative(self.root)}: " + ", ".join(
            f"{label} = {name} ({counts[name]})" for label, name in enumerate(self.classes))

    def check_batch_size(self, batch_size: int) -> int:
        if batch_size > len(self.files):
            raise ParameterError(
                f"batch_size={batch_size} is larger than the {len(self.files)} images in "
                f"{self.root}: every batch would repeat images. Use batch_size <= {len(self.files)}.")
        return batch_size


# What DALI 2.4 does with a file that only a full decode finds broken (a truncated JPEG): on the CPU
# it fails the batch, on the GPU it may return an image (docs/pages/dali-behaviour.md, section 8)
DECODED_BROKEN = ("Decoding on the CPU, DALI fails the whole batch that holds {one}; decoding on the GPU, "
                  "DALI 2.4 may return an image for {it} without an error.")


def _unreadable(file: Path, reason: str, *, decoded: bool = False) -> DataSourceError:
    """A file's error; ``decoded``: found by a full decode (its header was an image's)."""
    what = DECODED_BROKEN.format(one="it", it="it") if decoded else "DALI fails the whole batch that holds it."
    return DataSourceError(f"{file} is not a readable image ({reason}). {what} Remove or replace that file.")


def _header_problem(path: str) -> str | None:
    """Why the file at ``path`` cannot be an image, judged by its first bytes; None if it can."""
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            head = os.read(fd, HEADER_BYTES)
        finally:
            os.close(fd)
    except OSError as err:
        return f"{type(err).__name__}: {err.strerror}"
    if not head:
        return "an empty file"
    if head.startswith(IMAGE_SIGNATURES) or (head[:4] == b"RIFF" and head[8:12] == b"WEBP"):
        return None
    return f"it starts with {head[:8]!r}, the start of no image format that DALI reads"


def check_image_folder(path: str | Path, *, decode_up_to: int = 1000) -> ImageFolder:
    """Check a folder before DALI reads it, so that a problem names the file at fault.

    DALI reports an empty folder as "No files found", and a corrupt JPEG fails its whole batch
    (DALI 2.4's decoder names the sample, relative to the reader's root, without the reason)
    once training has started. This check reads the
    first 16 bytes of each file, in threads (under 10 µs of CPU a file from the page cache:
    seconds for a million): an empty file, or one that starts like no image format (an HTML
    error page saved as ``.jpg``), is named at once. A folder of up to ``decode_up_to`` images
    is also decoded in full (about a millisecond a photo), which names a truncated file too; in
    a larger one such a file passes, and when DALI then fails a batch, ``check_decodable`` on
    that batch's files (``batch_files``) names it."""
    root = Path(path).expanduser()
    if not root.is_dir():
        raise DataSourceError(f"image folder {root} does not exist. Pass a folder that holds one "
                              "subfolder of images per class, or None for the embedded photos.")
    classes = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    names = sorted((c, entry.name) for c in classes for entry in os.scandir(root / c)
                   if os.path.splitext(entry.name)[1].lower() in IMAGE_EXTENSIONS)
    if not names:
        raise DataSourceError(
            f"No images found in {root}: readers.File expects one subfolder per class holding "
            f"image files ({', '.join(IMAGE_EXTENSIONS[:3])}, ...). DALI would fail with "
            "\"No files found\".")
    paths = [f"{root}{os.sep}{c}{os.sep}{name}" for c, name in names]  # os.path.join, faster
    chunks = [paths[i:i + 4096] for i in range(0, len(paths), 4096)]
    with ThreadPoolExecutor(16) as pool:  # the reads wait on the disk, not on Python
        for chunk, problems in zip(chunks, pool.map(lambda c: list(map(_header_problem, c)), chunks),
                                   strict=True):
            for file, problem in zip(chunk, problems, strict=True):
                if problem is not None:
                    raise _unreadable(Path(file), problem)
    if len(paths) <= decode_up_to:
        check_decodable(paths)
    return ImageFolder(root, classes, [Path(p) for p in paths])


def batch_files(encoded: Any, root: str | Path) -> list[Path]:
    """The files of a batch that ``ndd.readers.File(file_root=root)`` read (their
    ``source_info``), to hand to ``check_decodable`` when decoding that batch failed."""
    import numpy as np
    import nvidia.dali.experimental.dynamic as ndd

    info = ndd.get_property(encoded, key="source_info")
    return [Path(root) / bytes(np.asarray(sample)).decode() for sample in info]


def check_decodable(files: Iterable[str | Path]) -> None:
    """Decode each file in full (PIL) and raise a ``DataSourceError`` that names every one that
    fails, with the reason: call it with the files of a batch DALI failed to decode
    (``batch_files``). Returns quietly when all decode, for the caller to re-raise DALI's
    error (the fault is then elsewhere). About a millisecond a photo: for a batch, not a folder."""
    from PIL import Image
    from PIL import UnidentifiedImageError

    broken = []
    for file in map(Path, files):
        try:
            with Image.open(file) as image:
                image.load()  # a full decode: also catches truncated files
        except (UnidentifiedImageError, OSError, SyntaxError) as err:
            broken.append((file, f"{type(err).__name__}: {err}"))
    if len(broken) == 1:
        raise _unreadable(*broken[0], decoded=True)
    if broken:
        raise DataSourceError(
            f"{len(broken)} files are not readable images: "
            + "; ".join(f"{file} ({reason})" for file, reason in broken)
            + f". {DECODED_BROKEN.format(one='one', it='each')} Remove or replace those files.")
