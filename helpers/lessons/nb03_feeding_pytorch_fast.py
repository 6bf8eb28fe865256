"""Notebook 03's comparison of loaders that feed one training loop, on the suite's harness
(``helpers.toolkit.harness``): its set-up (:func:`set_up`: the parameters checked and resolved, a
frozen :class:`Setup`), ways named by the knob they turn (:func:`way`, :func:`same_knobs`,
:func:`knob_ways`), the knobs' table, the candidates the confirmation measures again
(:func:`finalists`), the picks and goals (:func:`picks_and_goals`), the check that every loader
delivers the same data (:func:`data_checks`), the profile excerpt, the answer in words
(:func:`answer`), generated from
the confirmation's rounds, and the record (:func:`record`). The loaders themselves and the
training loop stay in the notebook, where the reader sees them.
"""

from __future__ import annotations

import cProfile
import os
import pstats
import tempfile
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from functools import partial
from pathlib import Path
from typing import Any

from helpers.data.data_sources import locate_data
from helpers.data.lmdb_subset import first_records
from helpers.data.lmdb_subset import record_count
from helpers.data.paths import relative
from helpers.toolkit.benchmarking import Ratio
from helpers.toolkit.benchmarking import Record
from helpers.toolkit.benchmarking import rate_interval
from helpers.toolkit.benchmarking import versus
from helpers.toolkit.devices import resolve_device
from helpers.toolkit.harness import Pick
from helpers.toolkit.harness import Results
from helpers.toolkit.harness import Way
from helpers.toolkit.harness import steady_seconds
from helpers.toolkit.parameters import ParameterError
from helpers.toolkit.parameters import at_least
from helpers.toolkit.parameters import positive_ints
from helpers.toolkit.parameters import reject_unknown_parameters

PIPELINE_KNOBS = ("decode", "threads", "hw_decoder_load")  # what pipeline mode shares with dynamic mode
GREY_LEVEL = 1 / (0.3081 * 255)  # one grey level, after MNIST's normalization
NOTEBOOK = "03-feeding-pytorch-fast.ipynb"


@dataclass(frozen=True)
class Setup:
    """Notebook 03's parameters, checked and resolved (read by attribute), and the data it reads:
    the first ``epoch_records`` records of the LMDB ``source`` copied to a folder of their own
    (``subset``), a whole number of the largest loader batch, so that every epoch of every loader
    reads each of them once. :attr:`parameters` is what the record keeps."""

    device: str
    source: str  # the LMDB the records come from, relative to the checkout
    source_records: int
    records: int  # the records asked for an epoch (resolved)
    epoch_records: int  # the records an epoch reads: ``records`` cut to a whole number of the largest batch
    subset: str  # the copy of an epoch's records, in ``folder``
    batch_sizes: tuple[int, ...]
    min_seconds: float
    selection_trials: int
    trials: int
    threads: int
    thread_counts: tuple[int, ...]
    hw_decoder_loads: tuple[float, ...]
    workers: tuple[int, ...]  # the DataLoader worker counts tried
    equal_data_batches: int
    learning_rate: float
    seed: int
    folder: Any = field(default=None, repr=False, compare=False)  # the TemporaryDirectory of ``subset``

    @property
    def on_gpu(self) -> bool:
        return self.device == "gpu"

    @property
    def step_batch(self) -> int:
        """The optimizer's batch: the first loader batch size."""
        return self.batch_sizes[0]

    @property
    def big(self) -> int:
        return max(self.batch_sizes)

    @property
    def parameters(self) -> dict[str, Any]:
        """What the record keeps: every parameter as resolved, the LMDB relative to the checkout
        (``data_path``), the records an epoch read (``epoch_records``), nothing of this machine."""
        return {
            "data_path": self.source,
            "device": self.device,
            "records": self.records,
            "epoch_records": self.epoch_records,
            "batch_sizes": list(self.batch_sizes),
            "thread_counts": list(self.thread_counts),
            "dataloader_workers": list(self.workers),
            "min_seconds": self.min_seconds,
            "selection_trials": self.selection_trials,
            "trials": self.trials,
            "threads": self.threads,
            "hw_decoder_loads": list(self.hw_decoder_loads),
            "equal_data_batches": self.equal_data_batches,
            "learning_rate": self.learning_rate,
            "seed": self.seed,
        }

    def __str__(self) -> str:
        return (
            f"{self.epoch_records:,} records per epoch (the first of {self.source_records:,} in "
            f"{self.source}); device {self.device}; loader batches {list(self.batch_sizes)}, "
            f"optimizer steps of {self.step_batch}; DataLoader workers tried: {list(self.workers)}"
        )


def _hw_decoder_loads(values: Any) -> tuple[float, ...]:
    if (
        isinstance(values, (str, bytes))
        or not isinstance(values, Sequence)
        or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1 for v in values)
    ):
        raise ParameterError(
            f"parameter hw_decoder_loads must be a list of shares from 0 to 1 (the "
            f"share of the JPEGs for the hardware decoder), not {values!r}"
        )
    return tuple(float(v) for v in values)


def set_up(
    history: Sequence[str],
    *,
    data_path: str | None,
    device: str,
    records: int | None,
    batch_sizes: Any,
    min_seconds: float | None,
    selection_trials: int,
    trials: int,
    threads: int,
    thread_counts: Any,
    hw_decoder_loads: Any,
    dataloader_workers: Any,
    equal_data_batches: int,
    learning_rate: float,
    seed: int,
) -> Setup:
    """Notebook 03's set-up: unknown parameters refused (``history``: IPython's ``In``), each
    value checked (a ``ParameterError`` names a bad one and what to do), resolved for this machine
    (device, records, worker counts, a trial's least duration), and an epoch's records copied."""
    reject_unknown_parameters(history, NOTEBOOK)
    source = str(data_path or locate_data(verbose=False).mnist_training)
    device = resolve_device(device)
    records = records if records is not None else (15360 if device == "gpu" else 4096)
    counts = dict(
        selection_trials=selection_trials,
        trials=trials,
        threads=threads,
        equal_data_batches=equal_data_batches,
        records=records,
    )
    at_least(counts, dict.fromkeys(counts, 1))
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ParameterError(f"parameter seed must be a whole number >= 0, not {seed!r}")
    if isinstance(learning_rate, bool) or not isinstance(learning_rate, (int, float)) or learning_rate <= 0:
        raise ParameterError(f"parameter learning_rate must be a number above 0, not {learning_rate!r}")
    try:
        min_seconds = steady_seconds(min_seconds, device == "gpu")
    except ValueError as error:
        raise ParameterError(f"parameter {error}") from None
    batch_sizes = positive_ints("batch_sizes", batch_sizes)
    cores = os.cpu_count() or 1
    workers = positive_ints(
        "dataloader_workers", dataloader_workers or sorted({max(1, cores // 4), max(1, cores // 2), cores})
    )
    if any(b % batch_sizes[0] for b in batch_sizes):
        raise ParameterError(
            f"batch_sizes {batch_sizes}: every loader batch size must be a multiple "
            f"of the first ({batch_sizes[0]}), the optimizer's batch"
        )
    loads = _hw_decoder_loads(hw_decoder_loads)
    thread_counts = positive_ints("thread_counts", thread_counts)
    available = record_count(source)
    epoch = min(records, available) // max(batch_sizes) * max(batch_sizes)
    if epoch == 0:
        raise ParameterError(
            f"the largest loader batch ({max(batch_sizes)}) is larger than the "
            f"{min(records, available)} records an epoch can read ({available} in "
            f"{relative(source)}): lower batch_sizes"
        )
    folder = tempfile.TemporaryDirectory(prefix="nb03-")
    subset = str(first_records(source, Path(folder.name) / "training", epoch))
    return Setup(
        device=device,
        source=relative(source),
        source_records=available,
        records=records,
        epoch_records=epoch,
        subset=subset,
        batch_sizes=tuple(batch_sizes),
        min_seconds=min_seconds,
        selection_trials=selection_trials,
        trials=trials,
        threads=threads,
        thread_counts=tuple(thread_counts),
        hw_decoder_loads=loads,
        workers=tuple(workers),
        equal_data_batches=equal_data_batches,
        learning_rate=float(learning_rate),
        seed=seed,
        folder=folder,
    )


@dataclass(frozen=True)
class LoaderWay(Way):
    """A way that builds its loader as ``make(batch, **options)``; ``against`` names the way it
    differs from by its knob alone (None: none does)."""

    batch: int = 0
    options: Mapping[str, Any] = field(default_factory=dict)
    against: str | None = None


def _in_background(make: Callable[[], Any]) -> Any:
    from helpers.toolkit.loaders import InBackground

    return InBackground(make())


def way(
    kind: str,
    batch: int,
    make: Callable[..., Any],
    knob: str,
    *,
    against: Way | None = None,
    background: bool = False,
    **options: Any,
) -> LoaderWay:
    """The way ``"<kind> b<batch> <option>=<value> ..."``, whose loader is ``make(batch,
    **options)``, on one background thread (``helpers.toolkit.loaders.InBackground``) when
    ``background``."""
    shown = [f"{k}={v}" for k, v in options.items()] + (["background thread"] if background else [])
    build = partial(make, batch, **options)
    return LoaderWay(
        " ".join([kind, f"b{batch}", *shown]),
        partial(_in_background, build) if background else build,
        kind,
        knob,
        batch,
        dict(options, **({"background": True} if background else {})),
        against.name if against is not None else None,
    )


def same_knobs(of: LoaderWay, make: Callable[..., Any]) -> LoaderWay:
    """Pipeline mode (``make``, as ``way`` calls it) at a dynamic-mode way's batch size and the
    knobs the two modes share (``PIPELINE_KNOBS``): like for like."""
    shared = {k: v for k, v in of.options.items() if k in PIPELINE_KNOBS}
    return way("pipeline", of.batch, make, f"the knobs of {of.name}", **shared)


def best(results: Results, names: Sequence[str], count: int) -> list[str]:
    """The ``count`` of ``names`` with the highest rates (geometric means) in ``results``."""
    return sorted(names, key=lambda n: results.estimate(n)[0], reverse=True)[:count]


def knob_table(results: Results) -> Any:
    """A row per way that turns a knob: its rate over the way without it (``against``), paired by
    round, with the 95% interval (a pandas DataFrame)."""
    import pandas as pd

    rows = [
        {
            "knob": w.knob,
            "way": w.name,
            "against": w.against,
            "ratio [95% interval]": str(results.ratio(w.name, w.against)),
        }
        for w in results.ways
        if getattr(w, "against", None)
    ]
    return pd.DataFrame(rows).set_index("way")


def first_batches(loader: Any, count: int) -> list[tuple[Any, Any]]:
    """The first ``count`` batches of one whole epoch of ``loader`` (a capture loop is never
    left early), copied to the CPU; the loader is closed."""
    kept = []
    for images, labels in loader.epoch():
        if len(kept) < count:
            kept.append((images.cpu().clone(), labels.cpu().clone()))
    loader.close()
    return kept


def same_data(loaders: Mapping[str, Any], count: int) -> Any:
    """Each loader's first ``count`` batches against the first loader's: whether the labels are
    equal, the pixels bit for bit, and the largest pixel difference in grey levels (a pandas
    DataFrame, a row per loader after the first)."""
    import pandas as pd
    import torch

    batches = {name: first_batches(loader, count) for name, loader in loaders.items()}
    reference, *others = batches
    rows = {}
    for name in others:
        pairs = list(zip(batches[name], batches[reference], strict=True))
        labels = all(torch.equal(a[1], b[1]) for a, b in pairs)
        difference = max(float((a[0] - b[0]).abs().max()) for a, b in pairs)
        rows[f"{name} / {reference}"] = {
            "labels equal": labels,
            "bit equal": labels and difference == 0.0,
            "most grey levels apart": round(difference / GREY_LEVEL, 4),
            "batches": len(pairs),
        }
    return pd.DataFrame(rows).T


def data_checks(unrotated: Mapping[str, Any], rotated: Mapping[str, Any], count: int) -> Any:
    """Section 3's check, before any timing: in each group the loaders' first ``count`` batches
    against the first loader's (:func:`same_data`). Every label must be equal and every pixel within
    one grey level; DALI's loaders (every row but the DataLoader's) bit for bit. Raises
    ``AssertionError`` with the table when not; returns the table of both groups."""
    import pandas as pd

    plain, turned = same_data(unrotated, count), same_data(rotated, count)
    checks = pd.concat({"no rotation": plain, "rotated": turned})
    if not (checks["labels equal"].all() and (checks["most grey levels apart"] <= 1).all()):
        raise AssertionError(f"a loader gave other labels, or pixels more than a grey level apart:\n{checks}")
    dali = ~checks.index.get_level_values(1).str.startswith("DataLoader")
    if not checks["bit equal"][dali].all():
        raise AssertionError(f"DALI's loaders gave other pixels for the same seed:\n{checks}")
    return checks


def knob_ways(
    setup: Setup,
    step_batch: int,
    *,
    capture: Callable[..., Any],
    eager: Callable[..., Any],
    pipeline: Callable[..., Any],
    dataloader: Callable[..., Any],
) -> list[LoaderWay]:
    """Section 4's ways, each turning one knob against the way without it (``against``), most at
    the largest loader batch (``setup.big``): for capture and pipeline mode every batch size, on a
    GPU decoding on the CPU and each ``hw_decoder_load``, each thread count (decoding on the CPU,
    where the threads decode); for capture mode at ``step_batch`` and the largest batch, labels cast
    in torch, a background thread and eager mode; for the DataLoader each worker count, every batch
    size the DALI loaders try (at the most workers) and ``prefetch_factor`` 4 (its default: 2)."""
    big, on_gpu = setup.big, setup.on_gpu
    on_cpu = {"decode": "cpu"} if on_gpu else {}
    ways: list[LoaderWay] = []
    for kind, make in (("capture", capture), ("pipeline", pipeline)):
        sizes = [way(kind, b, make, "batch size") for b in setup.batch_sizes]
        ways += [*sizes[:1], *(way(kind, w.batch, make, "batch size", against=sizes[0]) for w in sizes[1:])]
        base = (
            way(kind, big, make, "decoding on the CPU", against=sizes[-1], **on_cpu) if on_gpu else sizes[-1]
        )
        ways += [base] if on_gpu else []
        ways += [
            way(kind, big, make, "hw_decoder_load", against=sizes[-1], hw_decoder_load=h)
            for h in (setup.hw_decoder_loads if on_gpu else [])
        ]
        ways += [
            way(kind, big, make, "threads", against=base, **on_cpu, threads=t) for t in setup.thread_counts
        ]
    for b in sorted({step_batch, big}):
        plain = way("capture", b, capture, "batch size")
        ways += [
            way("capture", b, capture, "labels cast in torch", against=plain, labels_in_torch=True),
            way("capture", b, capture, "background thread", against=plain, background=True),
            way("eager", b, eager, "eager mode", against=plain),
        ]
    fewest = way("dataloader", big, dataloader, "workers", workers=setup.workers[0])
    most = way("dataloader", big, dataloader, "workers", against=fewest, workers=setup.workers[-1])
    ways += [
        fewest,
        *(
            way("dataloader", big, dataloader, "workers", against=fewest, workers=w)
            for w in setup.workers[1:]
        ),
    ]
    ways += [
        way("dataloader", b, dataloader, "batch size", against=most, workers=setup.workers[-1])
        for b in setup.batch_sizes
        if b != big
    ]
    ways += [
        way(
            "dataloader",
            big,
            dataloader,
            "prefetch_factor",
            against=most,
            workers=setup.workers[-1],
            prefetch_factor=4,
        )
    ]
    return ways


KINDS = {"dynamic": ("capture", "eager"), "pipeline": ("pipeline",), "dataloader": ("dataloader",)}


def finalists(
    knobs: Results,
    step_batch: int,
    *,
    pipeline: Callable[..., Any],
    ceiling: Callable[..., Any],
) -> tuple[list[str], list[LoaderWay]]:
    """Section 5's ways: the baselines at the optimizer's batch (``step_batch``: eager, capture and
    pipeline mode at their defaults), the two best of each kind (:data:`KINDS`) in the knobs' rounds,
    pipeline mode at the same knobs as each dynamic-mode way (:func:`same_knobs`), and training
    alone at each of their batch sizes; each name once. The baselines' names, and the ways."""
    chosen = [n for v in KINDS.values() for n in best(knobs, [w.name for w in knobs.ways if w.kind in v], 2)]
    baselines = [f"{kind} b{step_batch}" for kind in ("eager", "capture", "pipeline")]
    ways = [knobs.way(n) for n in dict.fromkeys(baselines + chosen)]
    ways += [same_knobs(w, pipeline) for w in ways if w.kind in KINDS["dynamic"]]
    ways += [way("ceiling", b, ceiling, "training alone") for b in sorted({w.batch for w in ways})]
    return baselines, list({w.name: w for w in ways}.values())


def picks_and_goals(
    confirmation: Results,
    baselines: Sequence[str],
    pipeline: Callable[..., Any],
    targets: Mapping[str, float],
) -> tuple[dict[str, Pick], dict[str, str], dict[str, dict[str, Any]]]:
    """The best of each kind in the confirmation's rounds, or a tie (``Results.pick``); the ways the
    answer compares the best dynamic-mode way with (``references``: the baselines, pipeline mode at
    its knobs, training alone at its batch); and the goals (``targets``, the notebook's metadata's),
    each that way's ratio over one of them."""
    picks = {
        kind: confirmation.pick([w.name for w in confirmation.ways if w.kind in v])
        for kind, v in KINDS.items()
    }
    top = confirmation.way(picks["dynamic"].best)
    references = {
        "eager": baselines[0],
        "capture": baselines[1],
        "pipeline default": baselines[2],
        "same knobs": same_knobs(top, pipeline).name,
        "ceiling": f"ceiling b{top.batch}",
    }
    against = {
        "best dynamic / pipeline mode default": references["pipeline default"],
        "best dynamic / best DataLoader": picks["dataloader"].best,
        "best dynamic / pipeline mode, same knobs": references["same knobs"],
        "best dynamic / ceiling": references["ceiling"],
    }
    goals = {name: confirmation.ratio(top.name, other).goal(targets[name]) for name, other in against.items()}
    return picks, references, goals


def _rate(results: Results, name: str) -> str:
    estimate, low, high = rate_interval(results.rates(name))
    return f"{estimate:,.0f} {results.unit}/s [{low:,.0f}-{high:,.0f}]"


def _pick_words(results: Results, pick: Pick) -> str:
    best = f"`{pick.best}`, {_rate(results, pick.best)}"
    if pick.clear:
        return f"{best}, ahead of the other candidates by its interval"
    tied = ", ".join(f"`{name}` ({r} of it)" for name, r in pick.ties.items())
    return f"{best}, the highest rate but tied by the interval with {tied}"


def which_mode(dynamic_over_pipeline: Ratio) -> str:
    """What the interval of dynamic mode over pipeline mode at the same knobs says to pick."""
    if dynamic_over_pipeline.high < 1:
        return "pipeline mode, unless you need dynamic mode's Python loop"
    if dynamic_over_pipeline.low > 1:
        return "dynamic mode"
    return "either, by the code you prefer: these rounds cannot tell the two modes apart"


def knob_findings(
    results: Results,
    confirmation: Results | None = None,
    pick: str | None = None,
    baseline: str | None = None,
) -> str:
    """What the knobs' selection rounds showed, each knob's way paired with the same way without
    it: the knobs that made a loader faster and those that made it slower, by their 95% intervals,
    how many the rounds could not tell apart from the way without them, and what their intervals
    cannot show: that a knob does not help. With ``confirmation``, the picked way (``pick``) over
    ``baseline`` in those rounds, where the knobs are measured again."""
    faster, slower, ties = [], [], []
    for w in results.ways:
        if not getattr(w, "against", None):
            continue
        r = results.ratio(w.name, w.against)
        setting = next((f"{k}={v}" for k, v in getattr(w, "options", {}).items() if k == w.knob), w.knob)
        said = f"{setting} (`{w.name}`: {r})"  # the knob's value where it has one: hw_decoder_load=0.0
        if r.low > 1:
            faster.append(said)
        elif r.high < 1:
            slower.append(said)
        else:
            ties.append(r)
    rounds = min((len(results.rates(w.name)) for w in results.ways), default=0)
    parts = [
        f"faster with {'; '.join(faster)}" if faster else "no knob shown faster by its interval",
        *([f"slower with {'; '.join(slower)}"] if slower else []),
        f"{len(ties)} other knob setting(s) not told apart from the way without them",
    ]
    text = (
        f"- **The knobs**, in {rounds} selection round(s) (each against the same way without it): "
        + "; ".join(parts)
        + "."
    )
    if ties:
        widest = max(ties, key=lambda r: r.high / max(r.low, 1e-300))
        text += (
            f" Intervals from {rounds} round(s) are as wide as {widest}: these rounds can show a "
            "large difference, not that a knob does not help."
        )
    if confirmation is not None and pick and baseline and pick != baseline:
        together = confirmation.ratio(pick, baseline)
        text += (
            f" The confirmation's {together.trials} rounds measure the picked knobs together: `{pick}` "
            f"was {versus(together, f'`{baseline}`')}."
        )
    return text


def answer(
    results: Results, picks: Mapping[str, Pick], references: Mapping[str, str], knobs: Results | None = None
) -> str:
    """The conclusion in Markdown, from the confirmation's rounds: the best of each kind (or the
    tie), dynamic mode against pipeline mode at the same knobs, against the best DataLoader and
    against training alone at its batch size (``references``: ``"same knobs"``, ``"ceiling"``
    and ``"pipeline default"`` name the ways), which mode to pick, and with ``knobs`` (the knobs'
    rounds) what each knob did, with the best dynamic-mode way over ``references["capture"]`` (when
    given) in the confirmation's rounds."""
    dynamic, loader = picks["dynamic"].best, picks["dataloader"].best
    same = results.ratio(dynamic, references["same knobs"])
    return "\n".join(
        [
            f"- **Dynamic mode** at its best: {_pick_words(results, picks['dynamic'])}. It was "
            f"{versus(same, 'pipeline mode at the same knobs')}, "
            f"{versus(results.ratio(dynamic, loader), 'the best DataLoader')}, and reached "
            f"{results.ratio(dynamic, references['ceiling'])} of training alone at its batch size.",
            f"- **Pipeline mode** at its best: {_pick_words(results, picks['pipeline'])}; at its defaults "
            f"(`{references['pipeline default']}`) {_rate(results, references['pipeline default'])}.",
            f"- **The DataLoader** at its best: {_pick_words(results, picks['dataloader'])}.",
            *(
                [knob_findings(knobs, results, dynamic, references.get("capture"))]
                if knobs is not None
                else []
            ),
            f"- **Pick** for this light model: {which_mode(same)}.",
        ]
    )


def batch_series(results: Results, kinds: Sequence[str]) -> dict[str, list[tuple[int, float, float, float]]]:
    """Each kind's ways of the knob ``"batch size"``: ``(batch, rate, low, high)``, the rate with its
    95% interval, for ``helpers.lessons.nb03_feeding_pytorch_fast.crossover``."""
    return {
        kind: [
            (w.batch, *rate_interval(results.rates(w.name)))
            for w in results.ways
            if w.kind == kind and w.knob == "batch size"
        ]
        for kind in kinds
    }


def guards(loaders: Mapping[str, Any]) -> dict[str, Any]:
    """The ``CaptureGuard`` of every capture loop among ``loaders`` (a harness's, by way name),
    on a background thread too (``InBackground`` runs another loader)."""
    inner = {name: getattr(loader, "loader", loader) for name, loader in loaders.items()}
    return {name: loader.guard for name, loader in inner.items() if getattr(loader, "capture", False) is True}


HEADLINE_GOALS = {
    "best_over_pipeline": "best dynamic / pipeline mode default",
    "best_over_dataloader": "best dynamic / best DataLoader",
    "best_over_same_knobs_pipeline": "best dynamic / pipeline mode, same knobs",
    "best_over_ceiling": "best dynamic / ceiling",
}


def record(
    setup: Setup,
    *,
    knobs: Results,
    confirmation: Results,
    picks: Mapping[str, Pick],
    references: Mapping[str, str],
    goals: Mapping[str, dict[str, Any]],
    same_data: Any,
    captured_operators: Sequence[str],
    profile: Mapping[str, Any],
) -> Record:
    """What notebook 03 saves: the set-up's parameters; every trial of both runs (the knobs'
    and the confirmation's), the picks with their ties, the reference ways, the goals, the
    same-data checks (``same_data``: :func:`same_data`'s tables, concatenated with the check as the
    outer index), the operators the lesson's capture loop captured and the profile; and the
    headline: the confirmation's rates (geometric means) and the goals' ratios."""

    def rate(name: str) -> float:
        return confirmation.estimate(name)[0]

    headline = {
        "eager_samples_per_s": rate(references["eager"]),
        "capture_samples_per_s": rate(references["capture"]),
        "pipeline_default_samples_per_s": rate(references["pipeline default"]),
        "dataloader_samples_per_s": rate(picks["dataloader"].best),
        "ceiling_samples_per_s": rate(references["ceiling"]),
        "best_dynamic_samples_per_s": rate(picks["dynamic"].best),
        "best_pipeline_samples_per_s": rate(picks["pipeline"].best),
        **{key: goals[goal]["ratio"] for key, goal in HEADLINE_GOALS.items()},
    }
    checks = same_data.reset_index(names=["check", "loaders"]).to_dict(orient="records")
    results = {
        "knobs": knobs.as_record(),
        "confirmation": confirmation.as_record(),
        "picks": {
            kind: {"best": p.best, "ties": {n: r.as_record() for n, r in p.ties.items()}}
            for kind, p in picks.items()
        },
        "references": dict(references),
        "goals": dict(goals),
        "same_data": checks,
        "captured_operators": list(captured_operators),
        "profile": dict(profile),
    }
    return Record(setup.parameters, results, headline)


def _short(function: tuple[str, int, str]) -> str:
    filename, line, name = function
    if filename == "~":  # a C function
        return name.strip("<>")
    parts = filename.replace("\\", "/").split("/")
    dali = [i for i in range(len(parts) - 1) if parts[i : i + 2] == ["nvidia", "dali"]]
    if dali:  # DALI's modules, wherever it is installed (a venv, pip --target)
        return f"{'/'.join(parts[dali[-1] :][-3:])}:{line}({name})"
    for anchor in ("site-packages", "dist-packages", "helpers"):
        if anchor in parts:  # a package's path from its top-level folder, never the machine's
            return f"{'/'.join(parts[parts.index(anchor) + 1 :][-3:])}:{line}({name})"
    return f"{parts[-1]}:{line}({name})"


def _package(function: tuple[str, int, str]) -> str:
    filename, _, name = function
    path = filename.replace("\\", "/")
    if "nvidia/dali" in path or "nvidia.dali" in name:
        return "DALI (Python side)"
    if "/torch/" in path or "torch." in name or "_C." in name:
        return "torch"
    if filename == "~":
        return "other C functions"
    return "other Python"


def profile_top(run: Callable[[], Any], steps: int, top: int = 8) -> dict[str, Any]:
    """cProfile ``run`` and return its ``top`` functions by own time (in microseconds per step
    of ``steps``) and the own time grouped by package: a compact, printable excerpt. cProfile
    sees the calls of the thread that runs ``run`` only, never another thread's."""
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        run()
    finally:
        profiler.disable()
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    total = sum(own for _, _, own, _, _ in stats.values())
    rows = sorted(
        ((own, calls, function) for function, (_, calls, own, _, _) in stats.items()), reverse=True
    )[:top]
    by_package: dict[str, float] = {}
    for function, (_, _, own, _, _) in stats.items():
        by_package[_package(function)] = by_package.get(_package(function), 0.0) + own
    return {
        "steps": steps,
        "total_us_per_step": total / steps * 1e6,
        "top": [
            {
                "function": _short(f),
                "package": _package(f),
                "calls_per_step": calls / steps,
                "own_us_per_step": own / steps * 1e6,
                "share": own / total,
            }
            for own, calls, f in rows
        ],
        "share_by_package": {k: v / total for k, v in sorted(by_package.items(), key=lambda kv: -kv[1])},
    }


def crossover(
    series: Mapping[str, Sequence[tuple[int, float, float, float]]],
    *,
    ceiling: tuple[float, float, float] | None,
    title: str,
) -> Any:
    """Samples/s against loader batch size, one line per loader; each point is
    (batch, rate, low, high) and the bars are the interval from low to high. ``ceiling`` (rate,
    low, high) is drawn as a horizontal band. Drawn as ``helpers.toolkit.plots`` draws its charts: at
    ``CSS_DPI``, no text under ``SMALLEST_FONT_PT``, the legend under the axes; its alt text gives
    every point's rate with its interval."""
    import numpy as np

    from helpers.toolkit.plots import legend_below
    from helpers.toolkit.plots import new_chart

    fig, ax = new_chart(6.8, 4.6)
    for name, points in series.items():
        batches, medians, lows, highs = (np.array(v, dtype=float) for v in zip(*points, strict=True))
        ax.errorbar(
            batches, medians, yerr=[medians - lows, highs - medians], marker="o", capsize=3, label=name
        )
    if ceiling is not None:
        median, low, high = ceiling
        ax.axhline(median, color="black", linestyle="--", label="ceiling (data on the device)")
        ax.axhspan(low, high, color="black", alpha=0.08)
    ax.set_xscale("log", base=2)
    all_batches = sorted({b for points in series.values() for b, *_ in points})
    ax.set_xticks(all_batches, [str(b) for b in all_batches])
    ax.set_xlabel("loader batch size (optimizer steps stay at 64 samples)")
    ax.set_ylabel("training samples / s")
    ax.set_ylim(bottom=0)
    ax.set_title(title)
    legend_below(fig, *ax.get_legend_handles_labels(), columns=2)
    lines = [
        f"{name}: "
        + ", ".join(
            f"{rate:,.0f} [{low:,.0f}-{high:,.0f}] at batch {batch}" for batch, rate, low, high in points
        )
        for name, points in series.items()
        if points
    ]
    if ceiling is not None:
        lines.append(f"ceiling {ceiling[0]:,.0f} [{ceiling[1]:,.0f}-{ceiling[2]:,.0f}]")
    fig.alt = f"Chart: {title}. Training samples/s: " + "; ".join(lines) + "."
    return fig
