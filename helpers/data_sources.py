"""Where the notebooks' data comes from: DALI_extra when ``DALI_EXTRA_PATH`` is set, otherwise
the embedded default that ``make data`` builds in DALI_extra's own layout (one code path).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from helpers import embedded_data
from helpers.parameters import ParameterError
from helpers.paths import MNIST_TESTING, MNIST_TRAINING, REPO_ROOT, default_data_dir, relative

__all__ = ["REPO_ROOT", "DataSourceError", "DataSources", "ImageFolder", "check_image_folder",
           "dali_extra_from_env", "default_data_dir", "locate_data"]

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


# extensions that readers.File picks up by default (its `file_filters`)
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".pnm", ".ppm", ".pgm",
                    ".pbm", ".jp2", ".webp")


@dataclass(frozen=True)
class ImageFolder:
    """A folder of class subfolders of images, as ``ndd.readers.File(file_root=...)`` reads it."""

    root: Path
    classes: list[str]  # label i is classes[i] (alphabetical, as readers.File numbers them)
    files: list[Path]

    def describe(self) -> str:
        counts = {c: sum(1 for f in self.files if f.parent.name == c) for c in self.classes}
        return f"{len(self.files)} images in {relative(self.root)}: " + ", ".join(
            f"{label} = {name} ({counts[name]})" for label, name in enumerate(self.classes))

    def check_batch_size(self, batch_size: int) -> int:
        if batch_size > len(self.files):
            raise ParameterError(
                f"batch_size={batch_size} is larger than the {len(self.files)} images in "
                f"{self.root}: every batch would repeat images. Use batch_size <= {len(self.files)}.")
        return batch_size


def check_image_folder(path: str | Path) -> ImageFolder:
    """Check a folder before DALI reads it, so that a problem names the file at fault.

    DALI reports an empty folder as "No files found" and a corrupt JPEG as an
    ``nvImageCodec failure`` of the whole batch, without the file's name."""
    from PIL import Image, UnidentifiedImageError

    root = Path(path).expanduser()
    if not root.is_dir():
        raise DataSourceError(f"image folder {root} does not exist. Pass a folder that holds one "
                              "subfolder of images per class, or None for the embedded photos.")
    classes = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    files = sorted(f for c in classes for f in (root / c).iterdir()
                   if f.suffix.lower() in IMAGE_EXTENSIONS)
    if not files:
        raise DataSourceError(
            f"No images found in {root}: readers.File expects one subfolder per class holding "
            f"image files ({', '.join(IMAGE_EXTENSIONS[:3])}, ...). DALI would fail with "
            "\"No files found\".")
    for file in files:
        try:
            with Image.open(file) as image:
                image.load()  # a full decode: also catches truncated files
        except (UnidentifiedImageError, OSError, SyntaxError) as err:
            raise DataSourceError(
                f"{file} is not a readable image ({type(err).__name__}: {err}). DALI would fail "
                "the whole batch that holds it (\"nvImageCodec failure\"). Remove or replace "
                "that file.") from err
    return ImageFolder(root, classes, files)
