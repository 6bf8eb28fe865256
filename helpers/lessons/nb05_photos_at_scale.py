"""Notebook 05's own helpers: its set-up (the parameters resolved for this machine, a frozen
:class:`Setup`), the check that three
loaders deliver the same labels, channels and normalization, a copy of the photos with one JPEG
cut short, the ways it compares (:class:`Ways`) and the runs that feed the models (:func:`feed`),
the planned work, the goals and the record, and the sentences of its answer, each
generated from the harness's results (``helpers.toolkit.harness.Results``) and worded by its interval
(``helpers.toolkit.benchmarking.versus``).

The DALI calls, the loaders and the training step stay in the notebook, where the reader sees
them; nothing here imports DALI."""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from functools import partial
from pathlib import Path
from typing import Any

from helpers.data.data_sources import DataSourceError
from helpers.data.data_sources import check_decodable
from helpers.data.data_sources import check_image_folder
from helpers.data.data_sources import locate_photos
from helpers.data.paths import relative
from helpers.data.registry import goal_targets
from helpers.toolkit.benchmarking import Ratio
from helpers.toolkit.benchmarking import Record
from helpers.toolkit.benchmarking import ratio
from helpers.toolkit.benchmarking import versus
from helpers.toolkit.capture_guard import CaptureGuard
from helpers.toolkit.devices import resolve_device
from helpers.toolkit.devices import torch_device
from helpers.toolkit.harness import Pick
from helpers.toolkit.harness import Results
from helpers.toolkit.harness import Way
from helpers.toolkit.harness import steady_seconds
from helpers.toolkit.parameters import ParameterError
from helpers.toolkit.parameters import at_least
from helpers.toolkit.parameters import positive_ints
from helpers.toolkit.parameters import reject_unknown_parameters

SLUG = "05-photos-at-scale"  # its name in the registry and the records
# What each goal compares: (model or None for loading alone, numerator role, denominator role).
# Their targets, stated for an NVIDIA H200, are the notebook's metadata's (helpers.data.registry,
# ``goal_targets``); tools/findings.py reads the ResNet-50 ones and the CPU-time one by these names.
# The DataLoader goal for ResNet-50 was restated at steady state (h200-2026-12-04.json: the
# DataLoader alone made 4,789 img/s, training alone 4,725, fed it reached 2,480): dynamic mode must
# feed 1.5x as much.
BEST, SAME = "best dynamic mode", "pipeline mode, same knobs"
GOALS = {
    "ResNet-50: best dynamic / ceiling": ("resnet50", BEST, "ceiling"),
    "ResNet-50: best dynamic / pipeline mode, same knobs": ("resnet50", BEST, SAME),
    "ResNet-50: best dynamic / best DataLoader": ("resnet50", BEST, "best DataLoader"),
    "ResNet-18: best dynamic / pipeline mode, same knobs": ("resnet18", BEST, SAME),
    "ResNet-18: best dynamic / best DataLoader": ("resnet18", BEST, "best DataLoader"),
    "alone: best capture / pipeline mode, same knobs": (None, BEST, SAME),
}
CPU_GOAL = "cpu: DataLoader / dynamic mode, CPU time per image"
SHORT = {"resnet50": "ResNet-50", "resnet18": "ResNet-18"}


NOTEBOOK = "05-photos-at-scale.ipynb"


@dataclass(frozen=True)
class Setup:
    """The notebook's parameters as :func:`set_up` resolved them for this machine (every ``None``
    replaced, each checked), and the photos found; read by attribute (``setup.batch_size``)."""

    image_dir: str | None  # as given: your folder, or None for the embedded set
    device: str  # "gpu" or "cpu": where DALI decodes and the model trains
    photos: int
    image_size: int
    batch_size: int
    models: tuple[str, ...]
    threads: int
    thread_counts: tuple[int, ...]
    hw_decoder_loads: tuple[float, ...]
    dataloader_workers: tuple[int, ...]
    selection_trials: int
    trials: int
    most_trials: int
    precision: float
    min_seconds: float  # a trial's least duration (helpers.toolkit.harness)
    seed: int
    train_dir: Path
    val_dir: Path
    classes: tuple[str, ...]
    cores: int

    @property
    def on_gpu(self) -> bool:
        return self.device == "gpu"

    @property
    def model_device(self) -> str:  # torch's name: "cuda" or "cpu"
        return torch_device(self.device)

    @property
    def parameters(self) -> dict[str, Any]:
        """What the record keeps: the parameters as resolved, ``image_dir`` relative to the
        checkout or the home folder (``helpers.data.paths.relative``), nothing of this machine."""
        return {
            "device": self.device,
            "photos": self.photos,
            "image_size": self.image_size,
            "batch_size": self.batch_size,
            "models": list(self.models),
            "min_seconds": self.min_seconds,
            "threads": self.threads,
            "thread_counts": list(self.thread_counts),
            "hw_decoder_loads": list(self.hw_decoder_loads),
            "dataloader_workers": list(self.dataloader_workers),
            "selection_trials": self.selection_trials,
            "trials": self.trials,
            "most_trials": self.most_trials,
            "precision": self.precision,
            "seed": self.seed,
            "image_dir": self.image_dir and relative(str(self.image_dir)),
        }


def set_up(
    history: Sequence[str],
    *,
    image_dir: Any,
    device: str,
    photos: int | None,
    image_size: int | None,
    batch_size: int | None,
    models: Sequence[str] | None,
    threads: int,
    thread_counts: Sequence[int],
    hw_decoder_loads: Sequence[float],
    dataloader_workers: Sequence[int] | None,
    selection_trials: int,
    trials: int,
    most_trials: int | None,
    precision: float,
    min_seconds: float | None,
    seed: int,
) -> Setup:
    """The notebook's set-up: no unknown parameter under papermill (``history``: IPython's ``In``),
    every ``None`` replaced by this machine's default (the first value of the parameters cell's
    comments on a GPU, the second on a CPU), each value checked (a ParameterError names the first
    bad one), and the photos found: the embedded set, built on first use, or ``image_dir`` (its
    files' headers checked, the rate printed)."""
    reject_unknown_parameters(history, NOTEBOOK)
    device = resolve_device(device)
    on_gpu = device == "gpu"
    cores = os.cpu_count() or 1
    p = {
        "photos": photos or (4096 if on_gpu else 128),
        "image_size": image_size or (224 if on_gpu else 64),
        "batch_size": batch_size or (256 if on_gpu else 32),
        "threads": threads,
        "selection_trials": selection_trials,
        "trials": trials,
        "most_trials": most_trials or (7 if on_gpu else trials),
    }
    try:
        min_seconds = steady_seconds(min_seconds, on_gpu)
    except ValueError as error:
        raise ParameterError(str(error)) from None
    at_least(p, dict.fromkeys(p, 1) | {"trials": (2, "a 95% interval needs two rounds")})
    models = list(models or (["resnet50", "resnet18"] if on_gpu else ["resnet18"]))
    for name in models:
        if name not in SHORT:
            raise ParameterError(
                f"models: {name!r} is not one this notebook trains; try resnet18 or resnet50"
            )
    if not 0 < precision < 1:
        raise ParameterError(f"precision: a fraction between 0 and 1 (0.02 for +-2%), not {precision!r}")
    for load in hw_decoder_loads:
        if isinstance(load, bool) or not isinstance(load, (int, float)) or not 0 <= load <= 1:
            raise ParameterError(f"hw_decoder_loads: each a share of the JPEGs from 0 to 1, not {load!r}")
    workers = positive_ints(
        "dataloader_workers", dataloader_workers or sorted({max(1, cores // 4), max(1, cores // 2), cores})
    )
    counts = positive_ints("thread_counts", thread_counts)
    train, val, classes = _folders(image_dir, p["photos"], p["batch_size"], p["image_size"], on_gpu)
    print(
        f"device {device}: {len(classes)} classes, crops of {p['image_size']}x{p['image_size']}, "
        f"batches of {p['batch_size']}; models {', '.join(SHORT[m] for m in models)}"
    )
    return Setup(
        image_dir=image_dir,
        device=device,
        photos=p["photos"],
        image_size=p["image_size"],
        batch_size=p["batch_size"],
        models=tuple(models),
        threads=threads,
        thread_counts=tuple(counts),
        hw_decoder_loads=tuple(hw_decoder_loads),
        dataloader_workers=tuple(workers),
        selection_trials=selection_trials,
        trials=trials,
        most_trials=max(trials, p["most_trials"]),
        precision=precision,
        min_seconds=min_seconds,
        seed=seed,
        train_dir=train,
        val_dir=val,
        classes=tuple(classes),
        cores=cores,
    )


def _folders(
    image_dir: Any, photos: int, batch_size: int, image_size: int, on_gpu: bool
) -> tuple[Path, Path, list[str]]:
    if image_dir is None:
        found = locate_photos(photos, verbose=False)
        print(f"photos: {found.size:,} training and {found.val_size:,} validation JPEGs of the embedded set")
        return found.train, found.val, list(found.classes)
    root = Path(image_dir).expanduser()
    train = root / "train" if (root / "train").is_dir() else root
    val = root / "val" if (root / "val").is_dir() else train
    started = time.perf_counter()
    folder = check_image_folder(train, decode_up_to=0)  # headers only: a decode of every file takes long
    took = time.perf_counter() - started
    print(
        f"checked the headers of {len(folder.files):,} files in {took:.1f} s "
        f"({1e6 * took / len(folder.files):.0f} µs a file)"
    )
    folder.check_batch_size(batch_size)
    staged_gib = len(folder.files) * 3 * image_size**2 * 4 / 2**30  # the ceiling keeps an epoch in memory
    if staged_gib > (limit := 16.0 if on_gpu else 4.0):
        raise ParameterError(
            f"image_dir: the ceiling keeps one epoch of its {len(folder.files):,} training images in memory "
            f"({staged_gib:,.0f} GiB at {image_size}px), more than the {limit:.0f} GiB this notebook allows: "
            "pass a subset of your train/, or a smaller image_size"
        )
    if val != train:
        check_image_folder(val, decode_up_to=0)
    return train, val, folder.classes


def planned(
    ways: int,
    selection_trials: int,
    trials: int,
    most_trials: int,
    alone_ways: int,
    fed_ways: int,
    models: Sequence[str],
    min_seconds: float,
) -> str:
    """The trials the measurements will time at most, each whole epochs until it lasts
    ``min_seconds``, before any timing."""
    selection, alone = ways * selection_trials, alone_ways * trials
    fed = len(models) * fed_ways * most_trials
    total = selection + alone + fed
    return (
        f"planned, at most: {selection} trials choosing knobs ({ways} ways), {alone} alone ({alone_ways} "
        f"ways), {fed} feeding {len(models)} model(s) ({fed_ways} ways): {total} trials of at least "
        f"{min_seconds:g} s each (whole epochs), after a warm-up epoch of each way"
    )


class Ways:
    """The ways the measurements compare: a loader ``kind`` of ``make`` (pipeline, capture, eager,
    DataLoader) with its knobs, named by them; ``knobs[name]`` keeps them for the record. DALI's
    default ``hw_decoder_load`` (0.65) is left out of a name."""

    def __init__(self, make: Mapping[str, Callable[..., Any]]) -> None:
        self.make = dict(make)
        self.knobs: dict[str, dict[str, Any]] = {}

    def __call__(self, kind: str, **values: Any) -> Way:
        if kind not in self.make:
            raise ValueError(f"no loader of kind {kind!r}: the kinds are {', '.join(self.make)}")
        shown = {k: v for k, v in values.items() if (k, v) != ("hw_decoder_load", 0.65)}
        name = ", ".join([kind, *(f"{k} {v:g}" for k, v in shown.items())])
        self.knobs[name] = values
        return Way(name, partial(self.make[kind], **values), kind=kind, knob=", ".join(values))

    def candidates(self, setup: Setup) -> list[Way]:
        """The knobs to choose from: the DataLoader at each worker count, then both DALI modes at
        each thread count and (on a GPU) each ``hw_decoder_load``, each name once."""
        dali = [
            self(kind, threads=t, hw_decoder_load=0.65)
            for kind in ("pipeline", "capture")
            for t in [setup.threads, *setup.thread_counts]
        ]
        dali += [
            self(kind, threads=setup.threads, hw_decoder_load=h)
            for kind in ("pipeline", "capture")
            for h in (setup.hw_decoder_loads if setup.on_gpu else [])
        ]
        loaders = [self("DataLoader", workers=w) for w in setup.dataloader_workers]
        return loaders + list({w.name: w for w in dali}.values())


def feed(
    harness: Any,
    trainer: Callable[[str], Callable[[Any, Any], Any]],
    staged: Any,
    ways: Sequence[Way],
    setup: Setup,
    until: Callable[[Results], bool],
) -> dict[str, Results]:
    """Each of ``setup.models`` fed by each of ``ways`` (each name once) in interleaved rounds of
    ``harness``, until ``until`` holds or ``setup.most_trials`` rounds; a new model per name from
    ``trainer``, trained once on ``staged``'s epoch first (untimed: its warm-up)."""
    unique = list({w.name: w for w in ways}.values())
    fed = {}
    for name in setup.models:
        step = trainer(name)
        for images, labels in staged.epoch():
            step(images, labels)
        fed[name] = harness.run(
            unique, setup.trials, label=f"{name}, fed", step=step, until=until, most=setup.most_trials
        )
    return fed


def first_batch(loader: Any) -> tuple[Any, Any]:
    """The first ``(images, labels)`` of one whole epoch of ``loader`` (a capture loop is never
    left early), copied to the host; the loader is closed."""
    kept = None
    for images, labels in loader.epoch():
        if kept is None:
            kept = images.detach().float().cpu().clone(), labels.cpu().clone()
    loader.close()
    if kept is None:
        raise RuntimeError("the loader gave no batch")
    return kept


@dataclass
class Agreement:
    """Loaders' first validation batches against a reference's: labels, and pixel differences in
    0-255 levels (mean, largest, largest difference of a channel's mean), with the DataLoader's
    channels reversed as a yardstick of what a channel swap does."""

    rows: dict[str, dict[str, Any]]
    count: int

    @property
    def labels_agree(self) -> bool:
        return all(r["labels_equal"] for r in self.rows.values())

    @property
    def pixels_agree(self) -> bool:  # the same operators: within a level; torchvision's: 2 levels a channel
        return (
            self.rows["pipeline mode"]["mean_levels"] <= 1.0
            and self.rows["DataLoader"]["channel_mean_levels"] <= 2.0
        )

    @property
    def channels_visible(self) -> bool:
        return (
            self.rows["DataLoader, channels reversed (BGR)"]["mean_levels"]
            > 3 * self.rows["DataLoader"]["mean_levels"]
        )

    def __str__(self) -> str:
        return (
            f"the first {self.count} validation images against dynamic mode's: labels agree: "
            f"{self.labels_agree}; pixels within the bounds: {self.pixels_agree}; a channel swap "
            f"stands out: {self.channels_visible}"
        )

    def table(self) -> Any:
        import pandas as pd

        return pd.DataFrame(self.rows).T

    def as_record(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "count": self.count,
            "labels_agree": self.labels_agree,
            "pixels_agree": self.pixels_agree,
            "channels_visible": self.channels_visible,
        }


def agreement(
    reference: tuple[Any, Any], pipeline: tuple[Any, Any], dataloader: tuple[Any, Any], std: Sequence[float]
) -> Agreement:
    """Dynamic mode's batch (``reference``) against pipeline mode's and the DataLoader's (NCHW
    float tensors normalized by ``std``, labels), over the images all three hold."""
    import torch

    count = min(len(b[1]) for b in (reference, pipeline, dataloader))
    scale = torch.tensor(list(std)).view(1, 3, 1, 1)
    ref_images, ref_labels = reference[0][:count], reference[1][:count]
    others = {
        "pipeline mode": pipeline,
        "DataLoader": dataloader,
        "DataLoader, channels reversed (BGR)": (dataloader[0].flip(1), dataloader[1]),
    }
    rows = {}
    for name, (images, labels) in others.items():
        difference = (images[:count] - ref_images) * scale
        rows[name] = {
            "labels_equal": bool(torch.equal(labels[:count], ref_labels)),
            "mean_levels": round(float(difference.abs().mean()), 3),
            "max_levels": round(float(difference.abs().max()), 1),
            "channel_mean_levels": round(float(difference.mean(dim=(0, 2, 3)).abs().max()), 3),
        }
    return Agreement(rows, count)


@dataclass
class TruncatedCopy:
    """A copy of some class folders of photos with the first JPEG of the first class cut in half,
    in a temporary folder (``remove()`` deletes it). ``failed`` keeps what DALI said when a batch
    failed and what ``check_decodable`` says of that batch's files."""

    root: Path
    victim: Path
    dali_says: dict[str, str] = field(default_factory=dict)
    message: str | None = None

    @classmethod
    def of(cls, folder: Path, classes: Sequence[str]) -> TruncatedCopy:
        root = Path(tempfile.mkdtemp(prefix="nb05-"))
        for name in classes:
            shutil.copytree(Path(folder) / name, root / name)
        victim = sorted((root / classes[0]).iterdir())[0]
        victim.write_bytes(victim.read_bytes()[: victim.stat().st_size // 2])
        return cls(root, victim)

    def _portable(self, text: str) -> str:
        return text.replace(str(self.root), "<copy>")

    def failed(self, decode: str, error: BaseException, files: Sequence[Path]) -> None:
        """A batch failed decoding on ``decode``: DALI's innermost error, then the file check."""
        while error.__cause__ or error.__context__:
            error = error.__cause__ or error.__context__
        self.dali_says[decode] = self._portable(f"{type(error).__name__}: {error}")
        try:
            check_decodable(files)
        except DataSourceError as found:
            self.message = self._portable(str(found))

    @property
    def named(self) -> bool:
        victim = f"<copy>/{self.victim.parent.name}/{self.victim.name}"
        return self.message is not None and victim in self.message

    def report(self, decoders: Sequence[str]) -> str:
        """What each decoder said (a decoder that failed no batch: "no error"), and the file check."""
        for d in decoders:
            self.dali_says.setdefault(d, "no error: the decoder returned an image for every file")
        said = [f"DALI, decoding on the {d}: {self.dali_says[d]}" for d in decoders]
        return "\n".join([*said, f"check_decodable on the failed batch: {self.message or 'no batch failed'}"])

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def as_record(self) -> dict[str, Any]:
        return {"named": self.named, "message": self.message, "dali_says": self.dali_says}


def cpu_per_1000_by_trial(results: Results, name: str) -> list[float]:
    """CPU seconds per 1,000 images of each of the way's trials (this process and its workers):
    the paired CPU-time goal's; the table's column and the answer pool them
    (``Results.cpu_per_1000``)."""
    return [1000 * t["cpu_s"] / t["samples"] for t in (t.as_dict() for t in results.trials[name])]


def goals(alone: Results, fed: Mapping[str, Results], roles: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """Every goal whose model ran: its ratio over the rounds after the knobs were chosen
    (``Results.ratio``), its interval and verdict; the CPU-time goal from the trials' CPU time."""
    targets, found = goal_targets(SLUG), {}
    for name, (model, a, b) in GOALS.items():
        results = alone if model is None else fed.get(model)
        if results is not None:
            found[name] = results.ratio(roles[a], roles[b]).goal(targets[name])
    found[CPU_GOAL] = ratio(
        cpu_per_1000_by_trial(alone, roles["best DataLoader"]),
        cpu_per_1000_by_trial(alone, roles["best dynamic mode"]),
    ).goal(targets[CPU_GOAL])
    return found


def headline(
    alone: Results,
    fed: Mapping[str, Results],
    roles: Mapping[str, str],
    found: Mapping[str, Mapping[str, Any]],
) -> dict[str, float]:
    """The figures a reader compares (the metadata's ``dali_tutorials.headline`` labels them)."""
    figures = {
        "dataloader_alone_img_s": alone.estimate(roles["best DataLoader"])[0],
        "same_knobs_alone_img_s": alone.estimate(roles["pipeline mode, same knobs"])[0],
        "pipeline_alone_img_s": alone.estimate(roles["best pipeline mode"])[0],
        "capture_alone_img_s": alone.estimate(roles["best dynamic mode"])[0],
    }
    for model, results in fed.items():
        for key, role in (
            ("ceiling", "ceiling"),
            ("best_dynamic", "best dynamic mode"),
            ("best_pipeline", "best pipeline mode"),
            ("dataloader", "best DataLoader"),
        ):
            figures[f"{model}_{key}_img_s"] = results.estimate(roles[role])[0]
    same = "best dynamic / pipeline mode, same knobs"
    for key, goal in (
        ("resnet50_dynamic_over_ceiling", "ResNet-50: best dynamic / ceiling"),
        ("resnet50_dynamic_over_same_knobs", f"ResNet-50: {same}"),
        ("resnet50_dynamic_over_dataloader", "ResNet-50: best dynamic / best DataLoader"),
        ("resnet18_dynamic_over_same_knobs", f"ResNet-18: {same}"),
        ("capture_over_same_knobs_alone", "alone: best capture / pipeline mode, same knobs"),
        ("resnet18_dynamic_over_dataloader", "ResNet-18: best dynamic / best DataLoader"),
        ("cpu_dataloader_over_dynamic", CPU_GOAL),
    ):
        if goal in found:
            figures[key] = found[goal]["ratio"]
    return figures


def reported(alone: Results, fed: Mapping[str, Results], roles: Mapping[str, str]) -> dict[str, Ratio]:
    """The other ratios the answer states, by name."""
    dynamic = roles["best dynamic mode"]
    found = {
        "alone: capture / eager": alone.ratio(dynamic, roles["eager"]),
        "alone: capture / best DataLoader": alone.ratio(dynamic, roles["best DataLoader"]),
    }
    for model, results in fed.items():
        for role in ("best pipeline mode", "best DataLoader"):
            found[f"{model}: {role} / ceiling"] = results.ratio(roles[role], roles["ceiling"])
    return found


def record(
    setup: Setup,
    *,
    selection: Results,
    alone: Results,
    fed: Mapping[str, Results],
    roles: Mapping[str, str],
    picks: Mapping[str, Pick],
    knobs: Mapping[str, Mapping[str, Any]],
    epoch_images: int,
    agreement: Agreement,
    corrupt_file: TruncatedCopy,
    captured: Mapping[str, CaptureGuard],
) -> Record:
    """The notebook's record: the set-up's parameters and ``epoch_images`` (the images of the
    ceiling's epoch); every trial of every run, the picks, the goals, the other ratios, the
    operators each capture loop's guard saw captured (``captured``: name -> ``CaptureGuard``),
    the loaders' agreement and the corrupt file's check; and its headline."""
    found = goals(alone, fed, roles)
    results = {
        "selection": selection.as_record(),
        "alone": alone.as_record(),
        "fed": {m: r.as_record() for m, r in fed.items()},
        "roles": dict(roles),
        "knobs": {name: dict(values) for name, values in knobs.items()},
        "picks": {
            k: {"best": p.best, "ties": {n: r.as_record() for n, r in p.ties.items()}}
            for k, p in picks.items()
        },
        "goals": found,
        "reported": {k: r.as_record() for k, r in reported(alone, fed, roles).items()},
        "captured": {name: guard.captured for name, guard in captured.items()},
        "agreement": agreement.as_record(),
        "corrupt_file": corrupt_file.as_record(),
    }
    return Record(
        setup.parameters | {"epoch_images": epoch_images}, results, headline(alone, fed, roles, found)
    )


def _pick_words(results: Results, names: Sequence[str]) -> str:
    pick = results.pick(names)
    if pick.clear:
        return f"`{pick.best}`, ahead of every other by its interval"
    others = "; ".join(f"`{n}` at {r} of it" for n, r in pick.ties.items())
    return f"a tie between `{pick.best}` (the highest mean) and {others}"


def _busy(results: Results, name: str) -> str:
    """What NVML read while ``name`` fed the model (nothing where it read nothing: no GPU)."""
    labels = {
        "gpu_pct": "a kernel running",
        "nvjpg_pct": "the JPEG decoders (averaged over their engines) busy",
    }
    read = {label: statistics.fmean(v) for key, label in labels.items() if (v := results.values(name, key))}
    if not read:
        return ""
    return (
        " Meanwhile NVML read "
        + " and ".join(f"{label} {v:.0f}% of the time" for label, v in read.items())
        + "."
    )


def _goal(model: str | None, a: str, b: str) -> tuple[float, ...]:
    """The target of the goal on ``a`` over ``b`` (roles; ``model`` None: the loaders alone), or
    nothing: the figure beside which a ratio's bounds are printed (``Ratio.shown_against``)."""
    targets = goal_targets(SLUG)
    return tuple(targets[name] for name, compared in GOALS.items() if compared == (model, a, b))


def _dynamic_versus(
    results: Results, roles: Mapping[str, str], model: str | None, b: str, reference: str
) -> str:
    """The best dynamic mode against role ``b``, worded by its interval, its bounds beside the goal
    on the two where there is one."""
    return versus(results.ratio(roles[BEST], roles[b]), reference, against=_goal(model, BEST, b))


def answer(
    alone: Results, fed: Mapping[str, Results], roles: Mapping[str, str], corrupt: TruncatedCopy | None = None
) -> str:
    """The conclusion's answer, a Markdown list, every figure and comparison from the results; a
    ratio that has a goal is printed with the decimals that keep its bounds on their side of the
    goal (0.973x [0.968-0.978] for a goal of 0.97, not 0.97x [0.97-0.98]), and the CPU time per
    image is the table's (``Results.cpu_per_1000``: the trials' CPU time over their images)."""
    dyn, loader = roles[BEST], roles["best DataLoader"]
    lines = []
    for model, results in fed.items():
        feeders = [w.name for w in results.ways if w.kind != "ceiling"]
        ceiling = results.ratio(dyn, roles["ceiling"]).shown_against(*_goal(model, BEST, "ceiling"))
        best_loader = f"the best DataLoader (`{loader}`)"
        lines.append(
            f"- **{SHORT.get(model, model)}**: fed by dynamic mode (`{dyn}`), training ran at {ceiling} "
            f"of training alone; dynamic mode was "
            f"{_dynamic_versus(results, roles, model, SAME, 'pipeline mode at the same knobs')} and "
            f"{_dynamic_versus(results, roles, model, 'best DataLoader', best_loader)}. The fastest "
            f"feeder: {_pick_words(results, feeders)}.{_busy(results, dyn)}"
        )
    lines.append(
        f"- **Alone**, the capture loop was "
        f"{_dynamic_versus(alone, roles, None, SAME, 'pipeline mode at the same knobs')}, "
        f"{_dynamic_versus(alone, roles, None, 'eager', 'eager mode')} and "
        f"{_dynamic_versus(alone, roles, None, 'best DataLoader', 'the best DataLoader')}."
    )
    cpu = ratio(cpu_per_1000_by_trial(alone, loader), cpu_per_1000_by_trial(alone, dyn))
    more = versus(
        cpu,
        "the capture loop",
        faster="more CPU time than",
        slower="less CPU time than",
        same="CPU time not distinguishable from that of",
        against=(goal_targets(SLUG)[CPU_GOAL],),
    )
    pooled = {w.name: alone.cpu_per_1000(w.name) for w in alone.ways}  # the table's figures, unrounded
    least = min(pooled, key=pooled.__getitem__)
    near = [  # no interval: within 5%, each with the table's figure
        f"`{n}`, {pooled[n]:.2f}" for n in pooled if n != least and pooled[n] <= 1.05 * pooled[least]
    ]
    lines.append(
        f"- **CPU time per image**, alone: the best DataLoader took {more}; "
        f"the least of every row: `{least}`, {pooled[least]:.2f} s per 1,000 images"
        + (f" ({'; '.join(near)}: within 5% of it, with no interval to tell them apart)" if near else "")
        + "."
    )
    ready = {
        label: n
        for label, results in {
            "alone": alone,
            **{f"feeding {SHORT.get(m, m)}": r for m, r in fed.items()},
        }.items()
        if (n := max(t.skipped for w in results.ways for t in results.trials[w.name]))
    }
    if ready:
        lines.append(
            "- **Batches ready before the timer** (DALI's run-ahead into the next epoch), handed "
            "over untimed and uncounted: at most "
            + ", ".join(f"{n} a trial {label}" for label, n in ready.items())
            + "."
        )
    if corrupt is not None and corrupt.named:
        gpu = corrupt.dali_says.get("gpu")
        on_gpu = (
            ""
            if gpu is None
            else " Decoding on the GPU, DALI raised no error: it returned an image for every file, the "
            "truncated one included."
            if gpu.startswith("no error")
            else f" Decoding on the GPU, it failed too ({gpu})."
        )
        lines.append(
            f"- **A corrupt file**: DALI, decoding on the CPU, failed its whole batch "
            f"({corrupt.dali_says.get('cpu', 'no error')}); `check_decodable` named the file.{on_gpu}"
        )
    return "\n".join(lines)


__all__ = [
    "Agreement",
    "Setup",
    "TruncatedCopy",
    "agreement",
    "answer",
    "first_batch",
    "goals",
    "headline",
    "planned",
    "record",
    "reported",
    "set_up",
]
