"""Notebook 01 (getting started): its set-up (:func:`set_up`: the parameters checked and resolved,
a frozen :class:`Setup`), what a reader's epochs hold, the speed test's JPEG views (a stand-in for a
reader, so that a trial times the decoder alone), the sentences the notebook prints from its
measurements (generated here and tested, never typed in a cell), and its results record
(:func:`record`), built in one call from the set-up and the objects its lessons made.

The speed test's ways are told apart by ``Way.kind`` (``"cpu"``, ``"gpu"``) and ``Way.knob``
(``DEFAULT``: DALI's default ``hw_decoder_load``; ``ALL_TO_HARDWARE``: ``hw_decoder_load=1``).
"""

from __future__ import annotations

import hashlib
import itertools
from collections import Counter
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from helpers.data.data_sources import ImageFolder
from helpers.data.data_sources import check_image_folder
from helpers.data.data_sources import locate_data
from helpers.data.errors import ParameterError
from helpers.data.paths import relative
from helpers.data.registry import goal_targets
from helpers.toolkit.batches import as_arrays
from helpers.toolkit.batches import as_labels
from helpers.toolkit.benchmarking import Ratio
from helpers.toolkit.benchmarking import Record
from helpers.toolkit.benchmarking import versus
from helpers.toolkit.devices import resolve_device
from helpers.toolkit.harness import steady_seconds
from helpers.toolkit.parameters import at_least
from helpers.toolkit.parameters import positive_int
from helpers.toolkit.parameters import reject_unknown_parameters

NOTEBOOK = "01-getting-started.ipynb"
DEFAULT, ALL_TO_HARDWARE = "default hw_decoder_load", "hw_decoder_load=1"
NOTEBOOK = "01-getting-started"
GOAL_MACHINE = "H200"  # the goal's target (hardware decoding / CPU decoding) is its metadata's


def goal(threads: int) -> tuple[str, float]:
    """The notebook's goal at ``threads`` CPU threads: its name and target, as the notebook's
    metadata states them (``helpers.data.registry``)."""
    ((name, target),) = goal_targets(NOTEBOOK, threads=threads).items()
    return name, target


SPEED_BATCHES = {"gpu": 200, "cpu": 10}  # a trial's batches when not given: a second or more of
# hardware decoding on a GPU (NVML averages over a fraction of a second), seconds on 2 CPU cores


def epoch_counts(reader: Any, batch_size: int, epochs: int = 3) -> list[dict[str, int]]:
    """Per epoch of ``reader``: the samples read, the distinct photos among them (told apart by a
    hash of their JPEG bytes) and the photos read twice or more."""
    rows = []
    for _ in range(epochs):
        seen: Counter[str] = Counter()
        for jpegs, _labels in reader.next_epoch(batch_size=batch_size):
            seen.update(hashlib.sha1(np.asarray(jpeg).tobytes()).hexdigest() for jpeg in jpegs)
        rows.append(
            {
                "samples": sum(seen.values()),
                "distinct photos": len(seen),
                "photos read twice or more": sum(1 for n in seen.values() if n > 1),
            }
        )
    return rows


def epoch_table(counts: Mapping[str, list[dict[str, int]]]) -> Any:
    """A row per reader setting, a column per epoch and count (a pandas DataFrame)."""
    import pandas as pd

    return pd.DataFrame(
        {
            name: {
                (f"epoch {e + 1}", column): value
                for e, row in enumerate(rows)
                for column, value in row.items()
                if column != "samples"
            }
            for name, rows in counts.items()
        }
    ).T


def what_epochs_hold(counts: Mapping[str, list[dict[str, int]]], photos: int) -> str:
    """A Markdown line per reader setting that says what its epochs held, from the counts."""
    lines = []
    for name, rows in counts.items():
        samples = sorted({row["samples"] for row in rows})
        missing = [e + 1 for e, row in enumerate(rows) if row["distinct photos"] < photos]
        twice = sorted({row["photos read twice or more"] for row in rows})
        said = f"`{name}`: epochs of {' or '.join(map(str, samples))} samples; "
        if not missing:
            said += f"every epoch held all {photos} photos"
            said += f", {' or '.join(map(str, twice))} of them twice or more." if twice != [0] else "."
        else:
            which = ", ".join(map(str, missing))
            said += (
                f"epoch{'s' if len(missing) > 1 else ''} {which} of {len(rows)} missed some photos "
                "and read others twice or more."
            )
        lines.append(f"- {said}")
    return "\n".join(lines)


class JpegViews:
    """The speed test's stand-in for a reader: ``count`` batches an epoch, taken in turn from the
    batches that ``jpegs`` (distinct encoded JPEGs, in memory) make at ``batch_size``, as a
    reader's ``next_epoch`` yields them: ``(jpegs, labels)``, a label being the sample's index in
    its batch. No file is read: a trial times what is done to the batches, nothing else."""

    def __init__(self, jpegs: list[bytes], batch_size: int, count: int) -> None:
        import nvidia.dali.experimental.dynamic as ndd

        pool = itertools.cycle(jpegs)
        self.batches = [
            ndd.as_batch([np.frombuffer(next(pool), dtype=np.uint8) for _ in range(batch_size)])
            for _ in range(-(-len(jpegs) // batch_size))
        ]
        self.distinct = len({hashlib.sha1(j).hexdigest() for j in jpegs})
        self.batch_size, self.count = batch_size, count

    def next_epoch(
        self, batch_size: int | None = None, capture: bool = False
    ) -> Iterator[tuple[Any, list[int]]]:
        if capture or batch_size not in (None, self.batch_size):
            raise ValueError(
                f"JpegViews yields eager batches of {self.batch_size}, not "
                f"batch_size={batch_size}, capture={capture}"
            )
        for batch in itertools.islice(itertools.cycle(self.batches), self.count):
            yield batch, list(range(self.batch_size))


@dataclass(frozen=True)
class Setup:
    """The notebook's parameters as checked and resolved by :func:`set_up`, read by attribute."""

    folder: ImageFolder  # the folder the steps read, checked (``image_dir``, or the photographs)
    device: str  # "cpu" or "gpu": ``device`` resolved
    batch_size: int  # no larger than the folder
    num_threads: int
    speed_images: int
    speed_batch_size: int  # no larger than ``speed_images``
    speed_batches: int  # ``SPEED_BATCHES`` of the device when the parameter is None
    trials: int
    min_seconds: float  # the harness's default for the device when the parameter is None
    seed: int
    results_dir: str | None  # where the results JSON goes (None: build/results); not recorded

    @property
    def parameters(self) -> dict[str, Any]:
        """What the record keeps: the resolved values, the folder relative to the checkout."""
        return {
            "batch_size": self.batch_size,
            "device": self.device,
            "num_threads": self.num_threads,
            "speed_images": self.speed_images,
            "speed_batch_size": self.speed_batch_size,
            "speed_batches": self.speed_batches,
            "trials": self.trials,
            "min_seconds": self.min_seconds,
            "seed": self.seed,
            "image_dir": relative(Path(self.folder.root).absolute()),
        }


def set_up(
    history: Sequence[str],
    *,
    image_dir: str | None,
    batch_size: int,
    device: str,
    num_threads: int,
    speed_images: int,
    speed_batch_size: int,
    speed_batches: int | None,
    trials: int,
    min_seconds: float | None,
    seed: int,
    results_dir: str | None,
) -> Setup:
    """The notebook's parameters checked, each refused by name with what to do, and resolved: the
    folder found and checked, the device chosen, ``speed_batches`` and ``min_seconds`` given their
    device's defaults when None; prints the folder and the device. ``history`` is IPython's ``In``
    (an unknown parameter that papermill injected is refused by name)."""
    reject_unknown_parameters(history, NOTEBOOK)
    folder = check_image_folder(image_dir or locate_data(verbose=False).images)
    device = resolve_device(device)
    counts = dict(
        batch_size=batch_size,
        num_threads=num_threads,
        speed_images=speed_images,
        speed_batch_size=speed_batch_size,
        trials=trials,
    )
    at_least(counts, {**dict.fromkeys(counts, 1), "trials": (2, "a 95% interval needs two trials or more")})
    if speed_batch_size > speed_images:
        raise ParameterError(
            f"speed_batch_size={speed_batch_size} is larger than speed_images="
            f"{speed_images}: every batch would repeat images. Raise speed_images."
        )
    speed_batches = positive_int(
        "speed_batches", SPEED_BATCHES[device] if speed_batches is None else speed_batches
    )
    try:
        min_seconds = steady_seconds(min_seconds, device == "gpu")
    except ValueError as error:
        raise ParameterError(f"parameter {error}") from None
    setup = Setup(
        folder,
        device,
        folder.check_batch_size(batch_size),
        num_threads,
        speed_images,
        speed_batch_size,
        speed_batches,
        trials,
        min_seconds,
        seed,
        results_dir,
    )
    print(folder.describe(), f"| device: {device}")
    return setup


def gap(batch: Any, reference: Any) -> tuple[float, int]:
    """The mean and the largest absolute difference between two batches of images of the same
    shapes (on any device), in levels of 0-255."""
    gaps = [
        np.abs(a.astype(int) - b.astype(int))
        for a, b in zip(as_arrays(batch), as_arrays(reference), strict=True)
    ]
    return float(np.mean([g.mean() for g in gaps])), int(max(g.max() for g in gaps))


def decode_gap_sentence(plain: tuple[float, int], fancy: tuple[float, int]) -> str:
    """What the GPU decoder's pixels were, against the CPU decoder's, with and without
    ``jpeg_fancy_upsampling``, and what matching the chroma upsampling removed."""
    said = (
        f"Decoded on the GPU, the batch's photos differ from the CPU decoder's by {plain[0]:.3f} levels "
        f"(of 255) on average, {plain[1]} at most in any pixel; with `jpeg_fancy_upsampling=True`, "
        f"by {fancy[0]:.3f} on average, {fancy[1]} at most. "
    )
    if plain[0] == 0:
        return said + "The two decoders gave the same pixels."
    if fancy[0] <= 0.05 * plain[0]:
        return said + (
            "Matching the CPU's chroma upsampling removed almost all of the difference: chroma "
            "upsampling accounts for it."
        )
    if fancy[0] < plain[0]:
        return said + (
            f"Matching the CPU's chroma upsampling removed {1 - fancy[0] / plain[0]:.0%} of the "
            f"mean difference and took the largest from {plain[1]} to {fancy[1]}: chroma "
            "upsampling makes the large differences; these outputs do not show what the small "
            "rest is."
        )
    return said + "Matching the CPU's chroma upsampling did not make the difference smaller."


def _way(results: Any, kind: str, knob: str = "") -> str | None:
    for way in results.ways:
        if way.kind == kind and (not knob or way.knob == knob):
            return way.name
    return None


def comparisons(results: Any) -> dict[str, Ratio]:
    """The speed test's ratios, paired by round: each GPU way over the CPU, and the hardware
    decoder's way over DALI's default (none without GPU ways)."""
    cpu, default, hardware = (
        _way(results, "cpu"),
        _way(results, "gpu", DEFAULT),
        _way(results, "gpu", ALL_TO_HARDWARE),
    )
    if default is None or hardware is None:
        return {}
    return {
        "gpu_over_cpu": results.ratio(default, cpu),
        "hw_gpu_over_cpu": results.ratio(hardware, cpu),
        "hw_over_default": results.ratio(hardware, default),
    }


def goals(results: Any, threads: int) -> dict[str, dict[str, Any]]:
    """The suite's goal for this notebook, judged by its interval (none without a GPU)."""
    ratios = comparisons(results)
    if not ratios:
        return {}
    name, target = goal(threads)
    return {name: ratios["hw_gpu_over_cpu"].goal(target)}


def _busy(results: Any, name: str, key: str) -> float | None:
    values = results.values(name, key)
    return float(np.mean(values)) if values else None


def speed_answer(results: Any, threads: int, batch_size: int, gpu_name: str | None) -> str:
    """The speed test's answer in Markdown, every figure and word from ``results`` (a
    ``helpers.toolkit.harness.Results``): the CPU's rate, each GPU way against it with the NVJPG share,
    the pick between the GPU ways, and the goal with what its interval says and does not."""
    cpu = _way(results, "cpu")
    rate, low, high = results.estimate(cpu)
    lines = [
        f"- The CPU decoded **{rate:,.0f} images/s** [{low:,.0f}-{high:,.0f}] (JPEG views of the "
        f"photographs) with {threads} "
        f"threads, in batches of {batch_size}."
    ]
    ratios = comparisons(results)
    if not ratios:
        lines.append(
            "- No GPU in this run: the GPU ways were not timed, and the goal (a GPU against "
            "the CPU) is not judged."
        )
        return "\n".join(lines)
    default, hardware = _way(results, "gpu", DEFAULT), _way(results, "gpu", ALL_TO_HARDWARE)
    for name, key in ((default, "gpu_over_cpu"), (hardware, "hw_gpu_over_cpu")):
        nvjpg = _busy(results, name, "nvjpg_pct")
        engines = f" (NVJPG {nvjpg:.0f}% busy)" if nvjpg is not None else " (NVJPG not read)"
        lines.append(
            f"- The GPU with {results.way(name).knob}{engines} was **{versus(ratios[key], 'the CPU')}**."
        )
    lines.append(
        f"- `hw_decoder_load=1` was {versus(ratios['hw_over_default'], 'the default')}; the pick "
        f"of the two GPU ways: {results.pick([default, hardware])}."
    )
    hardware_over_cpu, (_, target) = ratios["hw_gpu_over_cpu"], goal(threads)
    where = (
        f"this run is on an {GOAL_MACHINE}, the machine the goal is stated for"
        if GOAL_MACHINE in (gpu_name or "")
        else f"the goal is stated for an {GOAL_MACHINE}, and this run is on {gpu_name}"
    )
    lines.append(
        f"- The goal, hardware decoding at least {target:g}x the CPU at {threads} threads: "
        f"{hardware_over_cpu}, **{hardware_over_cpu.verdict(target)}** ({where}). The interval is "
        "this run's: it says how much its rounds varied, not what another run would measure; runs "
        "differ, and another run at the same parameters can give another verdict."
    )
    return "\n".join(lines)


def record(
    setup: Setup,
    *,
    images: Any,
    corners: Any,
    selected: Mapping[str, Any],
    epochs: Mapping[str, list[dict[str, int]]],
    labels: Any,
    shuffled_labels: Any,
    single: Any,
    angles: Any,
    gaps: Mapping[str, tuple[float, int]],
    views: JpegViews,
    speed: Any,
) -> Record:
    """The notebook's record, in one call, from its set-up and the objects its lessons made."""
    ratios, threads = comparisons(speed), setup.num_threads
    results = {
        "device": setup.device,
        "classes": setup.folder.classes,
        "images": len(setup.folder.files),
        "first_image_shape": list(images.select(0).shape),
        "slice_shape": list(corners.select(0).shape),
        "select_range_batch_sizes": {call: batch.batch_size for call, batch in selected.items()},
        "shuffle_epochs": dict(epochs),
        "unshuffled_labels": as_labels(labels),
        "shuffled_labels": as_labels(shuffled_labels),
        "random_without_batch_size": type(single).__name__,
        "random_angles": [float(a) for a in as_arrays(angles)],
        "gaps_vs_cpu": {name: {"mean": mean, "max": largest} for name, (mean, largest) in gaps.items()},
        "speed_distinct_images": views.distinct,
        "reference_threads": threads,
        "speed_test": speed.as_record(),
        "ratios": {key: r.as_record() for key, r in ratios.items()},
        "goals": goals(speed, threads),
    }
    headline = {"cpu_decode_img_s": speed.estimate(_way(speed, "cpu"))[0]}
    if ratios:
        hardware = _way(speed, "gpu", ALL_TO_HARDWARE)
        headline.update(
            gpu_decode_img_s=speed.estimate(_way(speed, "gpu", DEFAULT))[0],
            gpu_over_cpu=ratios["gpu_over_cpu"].ratio,
            hw_gpu_decode_img_s=speed.estimate(hardware)[0],
            hw_gpu_over_cpu=ratios["hw_gpu_over_cpu"].ratio,
        )
        if (nvjpg := _busy(speed, hardware, "nvjpg_pct")) is not None:
            headline["hw_gpu_nvjpg_pct"] = nvjpg
    return Record(setup.parameters, results, headline)
