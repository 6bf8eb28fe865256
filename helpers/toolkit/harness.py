"""The suite's one benchmark harness: ways of feeding a loop, timed in interleaved rounds, every
way from the same state, with the hardware's readings beside every rate.

    harness = Harness(unit="images", synchronize=torch.cuda.synchronize)
    alone = harness.run(ways, rounds=5, label="alone")                # loaders alone
    fed = harness.run(ways, rounds=5, label="fed", step=train_step)   # feeding a model
    fed.table()                  # rate, 95% interval, CV, CPU, waiting, GPU engines, per way
    fed.ratio("capture", "ceiling")   # paired by round, with its 95% interval
    fed.pick(["a", "b"])         # the best by its interval, or a tie

The method is explained once, on the docs page "How the suite measures"
(``docs/pages/measuring.md``); in short:

- **A way** (:class:`Way`) is a name and a function that makes its loader: an object with
  ``epoch()`` (an iterable of ``(inputs, labels)`` on the model's device) and ``close()``.
- **The same state for every way**: a way's loader is made and run for one whole epoch (the
  warm-up: threads, workers, capture; a notebook warms its model up itself) before its first
  timed trial, never inside one. The device is synchronized before the timer starts and before
  it stops. A DALI loader runs ahead across the end of an epoch (DALI 2.4: pipeline mode two
  batches, its prefetch queue; a capture loop over a reader one), so it begins a trial with
  batches made before the timer. A trial hands those over first, untimed and uncounted
  (``skipped``, read off the loader's ``ahead``; trained on only with ``step_ready``), then starts
  the timer: DALI starts their replacements as they are handed over, so no trial is credited with
  batches finished before its timer.
- **A trial is at steady state**: it runs ``k`` whole epochs, the batches handed over first and
  the rest timed, ``k`` the fewest for which the trial lasts ``min_seconds`` (2 s on a GPU by
  default, 1 s on a CPU), times ``min_batches`` and hands over untimed at most 5%
  (``MAX_UNTIMED``) of the batches it times; a small folder simply runs more epochs a trial.
  With ``epochs`` given, every trial of the run is that many epochs instead; ``same_work=True``
  picks the one ``k`` for every way from a second warm-up epoch, so that every way trains the
  same samples. Its CPU time is this process and every process it started (DataLoader
  workers), over the trial only.
- **Start-up is measured apart**: the time from making a loader to its first batch
  (``startup_s``), and in every trial the wait for the first batch of each new epoch
  (``epoch_start_s``): real costs, but not throughput.
- **Rounds** run every way once, each round in a seeded random order recorded in the run
  (``Results.orders``), and before every trial a **settle** step: the device synchronized, then
  a bounded wait until NVML reads NVDEC and NVJPG idle and this process's CPU is quiet, so that
  no way's timer runs while the way before it still works on its run-ahead.
- **Hardware readings** (NVML) are kept only from trials of ``MIN_READING_S`` (1 s) or more.
"""

from __future__ import annotations

import math
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import MISSING
from dataclasses import dataclass
from dataclasses import field
from dataclasses import fields
from typing import Any
from typing import Protocol

from helpers.data.results_file import RESULTS_FOLDER_VARIABLE
from helpers.toolkit.benchmarking import Ratio
from helpers.toolkit.benchmarking import interleaved_trials
from helpers.toolkit.benchmarking import rate_interval
from helpers.toolkit.benchmarking import ratio
from helpers.toolkit.benchmarking import summarize
from helpers.toolkit.cpu_time import cpu_seconds_since
from helpers.toolkit.cpu_time import process_tree_cpu
from helpers.toolkit.hardware import ENGINES

DEFAULT_MIN_SECONDS = 2.0  # a trial's least duration on a GPU
DEFAULT_MIN_SECONDS_CPU = 1.0  # and on a CPU
MIN_BATCHES = 10  # a trial's least count of timed batches
MAX_UNTIMED = 0.05  # the batches handed over untimed: at most this share of those timed
# same_work estimates an epoch from one warm-up epoch: on one H200 (01, 2026-12-04) the timed
# epochs ran up to 11% faster than it, and a trial of the fastest way lasted 1.78 s of 2 s
SAME_WORK_MARGIN = 1.25
MIN_READING_S = 1.0  # NVML's readings are kept only from trials this long or longer
SETTLE_MOST_S = 10.0  # the longest wait for the way before to finish
SETTLE_POLL_S = 0.05

Step = Callable[[Any, Any], Any]  # one batch of the training loop: step(inputs, labels)


class Loader(Protocol):
    def epoch(self) -> Iterable[tuple[Any, Any]]: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Way:
    """One way of feeding the loop: its ``name`` (unique in a run), the ``make`` function that
    builds its loader, and for the tables its ``kind`` (``"dynamic"``, ``"pipeline"``,
    ``"dataloader"``, ``"ceiling"``...) and the ``knob`` it turns."""

    name: str
    make: Callable[[], Loader]
    kind: str = ""
    knob: str = ""


@dataclass(frozen=True)
class Trial:
    """One timed trial of one way: ``samples`` in ``seconds``; ``waited_s`` of them in the
    loader's ``next()``; ``cpu_s`` of CPU time (this process and its children); the hardware's
    readings (``busy``: ``gpu_pct``, ``nvdec_pct``, ``nvjpg_pct``, ``cpu_pct``, None where not
    read, and NVML's always None in a trial shorter than ``MIN_READING_S``); the peak of torch's
    GPU memory in GiB (None without a GPU); ``batches`` timed of the ``epochs`` whole epochs it ran;
    ``skipped`` batches handed over untimed before the timer; ``epoch_start_s``, the mean wait
    for the first batch of a new epoch inside the timer (None when none began there);
    ``settle_s``, the wait before the trial for the way before it to finish."""

    samples: int
    seconds: float
    waited_s: float
    cpu_s: float
    busy: dict[str, Any] = field(default_factory=dict)
    peak_gib: float | None = None
    skipped: int = 0  # batches its loader had ready before the timer: handed over untimed, not counted
    batches: int = 0
    epochs: int = 0
    epoch_start_s: float | None = None
    settle_s: float = 0.0

    @property
    def rate(self) -> float:
        return self.samples / self.seconds

    @property
    def waiting(self) -> float:
        """The share of the trial spent waiting for the loader."""
        return self.waited_s / self.seconds

    def as_dict(self) -> dict[str, Any]:
        return {
            "samples": self.samples,
            "seconds": self.seconds,
            "rate": self.rate,
            "waited_s": self.waited_s,
            "cpu_s": self.cpu_s,
            "peak_gib": self.peak_gib,
            "skipped": self.skipped,
            "batches": self.batches,
            "epochs": self.epochs,
            "epoch_start_s": self.epoch_start_s,
            "settle_s": self.settle_s,
            **self.busy,
        }

    @classmethod
    def from_dict(cls, found: Mapping[str, Any]) -> Trial:
        """The trial that :meth:`as_dict` wrote (``rate`` is recomputed; every key that is no
        field is a hardware reading, into ``busy``); a trial lacking a field is an error naming it."""
        names = [f.name for f in fields(cls) if f.name != "busy"]
        required = [f.name for f in fields(cls) if f.name != "busy" and f.default is MISSING]
        missing = [k for k in required if k not in found]
        if missing:
            raise KeyError(f"a recorded trial lacks {', '.join(missing)}: not what Trial.as_dict writes")
        return cls(
            **{k: found[k] for k in names if k in found},
            busy={k: v for k, v in found.items() if k not in names and k != "rate"},
        )


@dataclass(frozen=True)
class Pick:
    """The best of some ways by their rates in the same rounds: ``best`` has the highest
    geometric mean; ``ties`` are the others whose interval against it includes 1 (the rounds
    cannot tell them apart), each with that ratio."""

    best: str
    ties: dict[str, Ratio]

    @property
    def clear(self) -> bool:
        return not self.ties

    def __str__(self) -> str:
        if self.clear:
            return f"{self.best} (ahead of every other by its interval)"
        others = "; ".join(f"{name}: {r} of it" for name, r in self.ties.items())
        return f"a tie: {self.best}, and {others}"

    def described(self) -> str:
        """The pick in words that keep each way's name whole (a name may hold commas: in
        backticks), the best named as such and each rival with its ratio to the best:
        ``a tie: `b` (the highest mean) and `a` at 0.97x [0.85-1.10] of it``. (``str(pick)`` keeps
        the older wording, without backticks, that notebooks 01, 03 and 07 print.)"""
        if self.clear:
            return f"`{self.best}` (ahead of every other by its interval)"
        named = [f"`{self.best}` (the highest mean)", *(f"`{n}` at {r} of it" for n, r in self.ties.items())]
        return f"a tie: {', '.join(named[:-1])} and {named[-1]}"


@dataclass
class Results:
    """The trials of one run of the harness (``label``): each way's trials in round order."""

    label: str
    unit: str
    ways: list[Way]
    trials: dict[str, list[Trial]]
    seconds: float = 0.0
    fed: bool = False  # whether a step (a model) consumed the batches
    orders: list[list[str]] = field(default_factory=list)  # each round's order of the ways
    order_seed: str = ""  # what seeded the orders
    startup_s: dict[str, float] = field(default_factory=dict)  # a fresh loader to its first batch
    min_seconds: float = 0.0  # a trial's least duration in this run

    def way(self, name: str) -> Way:
        for way in self.ways:
            if way.name == name:
                return way
        raise KeyError(
            f"{self.label}: no way named {name!r}; the ways: {', '.join(w.name for w in self.ways)}"
        )

    def rates(self, name: str) -> list[float]:
        """The way's rate (``unit`` per second) in each round."""
        self.way(name)
        return [t.rate for t in self.trials[name]]

    def values(self, name: str, key: str) -> list[float]:
        """One figure of each of the way's trials that has it (``"cpu_s"``, ``"nvdec_pct"``...)."""
        self.way(name)
        return [v for t in self.trials[name] if (v := t.as_dict().get(key)) is not None]

    def cpu_per_1000(self, name: str) -> float:
        """The way's CPU seconds per 1,000 ``unit`` over all its trials (their CPU time over their
        samples, pooled): the table's ``CPU s / 1,000`` column, unrounded."""
        self.way(name)
        trials = self.trials[name]
        return 1000 * sum(t.cpu_s for t in trials) / sum(t.samples for t in trials)

    def estimate(self, name: str) -> tuple[float, float, float]:
        """The way's rate: geometric mean over its trials, with its 95% interval."""
        return rate_interval(self.rates(name))

    def ratio(self, a: str, b: str) -> Ratio:
        """Way ``a``'s rate over way ``b``'s, paired by round, with its 95% interval."""
        return ratio(self.rates(a), self.rates(b))

    def pick(self, names: Sequence[str] | None = None) -> Pick:
        """The best of ``names`` (every way when None), and those it cannot be told apart from."""
        names = list(names) if names is not None else [w.name for w in self.ways]
        if not names:
            raise ValueError(f"{self.label}: no ways to pick from")
        best = max(names, key=lambda n: self.estimate(n)[0])
        ties = {n: r for n in names if n != best and (r := self.ratio(n, best)).high >= 1}
        return Pick(best, ties)

    def table(self) -> Any:
        """A row per way (a pandas DataFrame): the rate and its 95% interval, the CV and whether it
        is noisy, the CPU time per 1,000 samples, the share of time waiting for the loader (when
        a step ran), each engine's mean busy share where NVML read it, torch's peak GPU memory.
        A notebook shows at most :data:`SHOWN_COLUMNS` of them (:func:`folded`), the rest folded."""
        import pandas as pd

        rows = []
        for way in self.ways:
            rates = self.rates(way.name)
            estimate, low, high = rate_interval(rates)
            spread = summarize(rates)
            decimals = 1 if estimate < 100 else 0
            row: dict[str, Any] = {
                "way": way.name,
                f"{self.unit}/s": round(estimate, decimals),
                "95% interval": f"{low:,.{decimals}f}-{high:,.{decimals}f}",
                "CV %": round(100 * spread["cv"], 1),
                "noisy": "yes" if spread["noisy"] else "",
                f"CPU s / 1,000 {self.unit}": round(self.cpu_per_1000(way.name), 2),
            }
            if any(t.waited_s for t in self.trials[way.name]) and self.fed:
                row["waiting %"] = round(100 * statistics.fmean(t.waiting for t in self.trials[way.name]), 1)
            for key, label in ENGINES.items():
                if values := self.values(way.name, key):
                    row[f"{label.split(' ')[0]} %"] = round(statistics.fmean(values))
            if values := self.values(way.name, "cpu_pct"):
                row["CPU %"] = round(statistics.fmean(values))
            if values := self.values(way.name, "peak_gib"):
                row["peak GiB"] = round(max(values), 2)
            if any(t.skipped for w in self.ways for t in self.trials[w.name]):
                row["ready, untimed"] = max(t.skipped for t in self.trials[way.name])
            if way.name in self.startup_s:
                row["start-up s"] = round(self.startup_s[way.name], 2)
            if starts := [t.epoch_start_s for t in self.trials[way.name] if t.epoch_start_s is not None]:
                row["new epoch ms"] = round(1000 * statistics.fmean(starts), 1)
            row["s a trial"] = round(min(t.seconds for t in self.trials[way.name]), 1)
            row["trials"] = len(rates)
            rows.append(row)
        return folded(pd.DataFrame(rows).set_index("way"), f"{self.unit}/s")

    def as_record(self) -> dict[str, Any]:
        """What a notebook's results JSON stores of this run: every trial of every way."""
        return {
            "label": self.label,
            "unit": self.unit,
            "seconds": self.seconds,
            "fed": self.fed,
            "min_seconds": self.min_seconds,
            "order_seed": self.order_seed,
            "orders": self.orders,
            "startup_s": self.startup_s,
            "ways": {
                w.name: {"kind": w.kind, "knob": w.knob, "trials": [t.as_dict() for t in self.trials[w.name]]}
                for w in self.ways
            },
        }

    @classmethod
    def from_record(cls, run: Mapping[str, Any]) -> Results:
        """The run that :meth:`as_record` saved, to table and compare again (its ways' ``make``
        cannot be saved: a rebuilt way cannot be run)."""

        def unsaved() -> Loader:
            raise RuntimeError(f"{run['label']}: a way rebuilt from a record cannot make its loader")

        ways = [Way(name, unsaved, kind=w["kind"], knob=w["knob"]) for name, w in run["ways"].items()]
        return cls(
            run["label"],
            run["unit"],
            ways,
            {name: [Trial.from_dict(t) for t in w["trials"]] for name, w in run["ways"].items()},
            seconds=run.get("seconds", 0.0),
            fed=run.get("fed", False),
            orders=[list(order) for order in run.get("orders", [])],
            order_seed=run.get("order_seed", ""),
            startup_s=dict(run.get("startup_s", {})),
            min_seconds=run.get("min_seconds", 0.0),
        )

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()


SHOWN_COLUMNS = 6  # beside the ways' names: 7 columns on the page
ENGINE_WORKS_PCT = 1.0  # an engine column is shown where some way kept the engine busier than this


def folded(table: Any, rate: str, keep: Sequence[str] = ()) -> Any:
    """``table`` as a notebook shows it: a DataFrame (every column, for code) whose HTML is the
    rate, its interval, the columns in ``keep`` and those that say most beside them (waiting, the
    engines that worked, CPU time, trials: :data:`SHOWN_COLUMNS` at most), then every column in a
    folded ``<details>`` block."""

    engines = [f"{label.split(' ')[0]} %" for label in ENGINES.values()]
    working = [c for c in engines if c in table and (table[c] > ENGINE_WORKS_PCT).any()]
    wanted = [
        rate,
        "95% interval",
        *keep,
        "waiting %",
        *working,
        f"CPU s / 1,000 {rate.removesuffix('/s')}",
        "new epoch ms",
        "trials",
    ]
    return fold(table, [c for c in wanted if c in table][:SHOWN_COLUMNS])


def fold(table: Any, shown: Sequence[str]) -> Any:
    """``table`` (a DataFrame) whose HTML shows the columns ``shown`` (at most
    :data:`SHOWN_COLUMNS`), then every column in a folded ``<details>`` block; in code it is the
    whole table."""
    import pandas as pd

    if len(shown) > SHOWN_COLUMNS or not set(shown) <= set(table.columns):
        raise ValueError(f"fold: show at most {SHOWN_COLUMNS} of the table's columns, not {list(shown)}")

    class Folded(pd.DataFrame):
        @property
        def _constructor(self) -> type:
            return pd.DataFrame  # what is computed from it is a plain DataFrame

        def _repr_html_(self) -> str:
            whole = pd.DataFrame(self)
            if list(whole.columns) == list(shown):
                return whole._repr_html_()
            return (
                whole[list(shown)]._repr_html_()
                + f"<details><summary>All {len(whole.columns)} columns</summary>"
                + whole._repr_html_()
                + "</details>"
            )

    return Folded(table)


def headless() -> bool:
    """Whether the suite's runner executes this notebook (no one watches a progress bar): the
    runner starts every kernel with ``helpers.data.results_file.RESULTS_FOLDER_VARIABLE`` set."""
    return bool(os.environ.get(RESULTS_FOLDER_VARIABLE))


class Harness:
    """Makes each way's loader once (and warms it up with one untimed epoch), then times trials
    of the ways in rounds of a seeded random order, each trial after a settle step (:meth:`run`).
    Loaders are kept for later runs until :meth:`close`. ``synchronize`` waits for the device
    (``torch.cuda.synchronize``); ``sampler`` (a ``helpers.toolkit.hardware.Sampler``) reads NVML and the
    CPU during each trial and tells when the engines are idle; ``peak_memory``
    (``(reset, read_gib)``) reads torch's peak GPU memory. ``min_seconds``: a trial's least
    duration (None: ``DEFAULT_MIN_SECONDS`` on a GPU (``gpu``), on a CPU
    ``DEFAULT_MIN_SECONDS_CPU``); ``min_batches``: its least count of timed batches; ``seed``:
    the seed of the rounds' orders."""

    def __init__(
        self,
        *,
        unit: str = "samples",
        synchronize: Callable[[], None] | None = None,
        sampler: Any = None,
        peak_memory: tuple[Callable[[], None], Callable[[], float]] | None = None,
        min_seconds: float | None = None,
        gpu: bool = False,
        min_batches: int = MIN_BATCHES,
        settle_most_s: float = SETTLE_MOST_S,
        seed: int = 0,
        say: Callable[[str], None] = print,
    ) -> None:
        self.unit = unit
        self.synchronize = synchronize or (lambda: None)
        self.sampler, self.peak_memory, self.say = sampler, peak_memory, say
        self.min_seconds = steady_seconds(min_seconds, gpu)
        if min_batches < 1:
            raise ValueError(f"min_batches must be at least 1, not {min_batches}")
        self.min_batches, self.settle_most_s, self.seed = min_batches, settle_most_s, seed
        self.loaders: dict[str, Loader] = {}
        self.startup_s: dict[str, float] = {}  # a fresh loader to its first batch
        self.epoch_batches: dict[str, int] = {}  # batches of the warm-up epoch

    def loader(self, way: Way) -> Loader:
        """The way's loader, made and warmed up (one whole epoch, untimed) at its first use; the
        time from making it to its first batch is kept (``startup_s``)."""
        if way.name not in self.loaders:
            start = time.perf_counter()
            loader = way.make()
            count = 0
            for _ in loader.epoch():
                if not count:
                    self.synchronize()
                    self.startup_s[way.name] = time.perf_counter() - start
                count += 1
            self.synchronize()
            self.loaders[way.name] = loader
            self.epoch_batches[way.name] = count
        return self.loaders[way.name]

    def settle(self) -> float:
        """Wait until the work before has finished: the device synchronized, then (at most
        ``settle_most_s``) until the sampler reads the decoders idle and this process's CPU is
        quiet (``helpers.toolkit.hardware.Sampler.idle``). Returns the seconds waited."""
        start = time.perf_counter()
        self.synchronize()
        idle = getattr(self.sampler, "idle", None)
        while idle is not None and not idle() and time.perf_counter() - start < self.settle_most_s:
            time.sleep(SETTLE_POLL_S)
        return time.perf_counter() - start

    def trial(
        self, way: Way, *, step: Step | None = None, epochs: int | None = None, step_ready: bool = False
    ) -> Trial:
        """One trial of the way's loader at steady state. The batches its loader had ready when
        the trial began (``ahead``: made before the timer) are handed over first, untimed and not
        counted (``step_ready``: given to ``step`` too, for a loop that must train on every batch,
        such as notebook 02's comparison of eager and capture mode). Then the timer runs, from a
        synchronized device to a synchronized device, over the rest of ``k`` whole epochs, each
        batch given to ``step`` (when not None): ``k = epochs`` when given, else the fewest whole
        epochs for which the trial lasts ``min_seconds``, times ``min_batches`` and hands over at
        most ``MAX_UNTIMED`` of what it times."""
        settled = self.settle()
        loader = self.loader(way)
        ready = ahead_batches(loader)
        per_epoch = self.epoch_batches[way.name]
        if per_epoch == 0:
            raise RuntimeError(
                f"{way.name}: an epoch of its loader gave no batches; check the data "
                "folder and the loader's batch size"
            )
        if epochs is not None and ready > MAX_UNTIMED * (epochs * per_epoch - ready):
            raise RuntimeError(
                f"{way.name}: its loader had {ready} batch(es) ready before the timer, more than "
                f"{MAX_UNTIMED:.0%} of the {epochs * per_epoch - ready} a trial of {epochs} epoch(s) "
                f"times; time at least {_epochs_for(ready, per_epoch)} epochs a trial, or give it more "
                "data or a smaller batch"
            )
        stream = _Stream(loader)
        for _ in range(ready):
            batch = stream.next()
            if step_ready and step is not None:
                step(*batch)
        self.synchronize()
        if self.peak_memory is not None:
            self.peak_memory[0]()
        before = process_tree_cpu()
        with self._sampling() as busy:
            samples = count = 0
            waited = 0.0
            starts: list[float] = []
            start = time.perf_counter()
            while True:
                asked = time.perf_counter()
                epochs_before = stream.epochs
                inputs, labels = stream.next()
                wait = time.perf_counter() - asked
                waited += wait
                if stream.epochs != epochs_before and count:  # the first batch of a new epoch
                    starts.append(wait)
                if step is not None:
                    step(inputs, labels)
                samples += len(labels)
                count += 1
                if (ready + count) % per_epoch:  # not at the end of an epoch
                    continue
                if epochs is not None:
                    if ready + count >= epochs * per_epoch:
                        break
                elif (
                    time.perf_counter() - start >= self.min_seconds
                    and count >= self.min_batches
                    and ready <= MAX_UNTIMED * count
                ):
                    break
            self.synchronize()
            seconds = time.perf_counter() - start
        cpu = cpu_seconds_since(before)
        for _ in stream.rest():  # the epoch's generator run to its end (a capture loop completes)
            raise RuntimeError(
                f"{way.name}: an epoch gave more batches than its first ({per_epoch}); "
                "the harness times whole epochs of one length: give the loader epochs of "
                "a fixed size (pad the last batch, or drop it)"
            )
        peak = self.peak_memory[1]() if self.peak_memory is not None else None
        readings = busy.as_dict() if busy is not None else {}
        if seconds < MIN_READING_S:  # NVML averages over its own period: too short to read
            readings = {k: (None if k != "cpu_pct" else v) for k, v in readings.items()}
        return Trial(
            samples,
            seconds,
            waited,
            cpu,
            readings,
            peak,
            ready,
            count,
            (ready + count) // per_epoch,
            statistics.fmean(starts) if starts else None,
            settled,
        )

    def _sampling(self) -> Any:
        return self.sampler.sample() if self.sampler is not None else nullcontext(None)

    def same_work(self, ways: Sequence[Way]) -> int:
        """The epochs a trial for every way of ``ways`` to time the same samples at steady state:
        each way's second epoch timed (after its warm-up), then the fewest epochs for which the
        fastest way's trial lasts ``min_seconds`` (by its warm-up epoch, with a margin of
        ``SAME_WORK_MARGIN``) and every way counts ``min_batches`` and hands
        over at most ``MAX_UNTIMED`` untimed."""
        fastest, needed = math.inf, 1
        for way in ways:
            loader = self.loader(way)
            self.settle()
            start = time.perf_counter()
            count = sum(1 for _ in loader.epoch())
            self.synchronize()
            fastest = min(fastest, time.perf_counter() - start)
            ready = ahead_batches(loader)
            needed = max(needed, math.ceil((self.min_batches + ready) / count), _epochs_for(ready, count))
        target = self.min_seconds * SAME_WORK_MARGIN
        return max(needed, math.ceil(target / fastest) if fastest > 0 else 1)

    def run(
        self,
        ways: Sequence[Way],
        rounds: int,
        *,
        label: str,
        step: Step | None = None,
        epochs: int | None = None,
        same_work: bool = False,
        until: Callable[[Results], bool] | None = None,
        most: int | None = None,
        step_ready: bool = False,
    ) -> Results:
        """``rounds`` rounds of a trial of every way, each round in a random order (seeded by the
        harness's ``seed`` and the ``label``; recorded); with ``until``, more rounds one at a
        time until ``until(results so far)`` holds or ``most`` rounds have run. Every loader is
        made and warmed up before the first timed trial. ``epochs``: every trial times that many
        whole epochs; ``same_work``: the harness picks that number (:meth:`same_work`); else each
        trial runs until it is at steady state (:meth:`trial`). Shows a progress bar when someone
        watches, and one line at the end."""
        names = [w.name for w in ways]
        if len(set(names)) != len(names):
            raise ValueError(f"{label}: two ways share a name: {names}; give each a name of its own")
        by_name = {w.name: w for w in ways}
        for way in ways:
            self.loader(way)
        duration_bound = epochs is None  # with same_work too: the fastest way's trials last min_seconds
        if same_work and epochs is None:
            epochs = self.same_work(ways)
        bar = _bar(rounds * len(ways), label)
        start = time.perf_counter()
        order_seed = f"{self.seed}:{label}"
        results = Results(
            label,
            self.unit,
            list(ways),
            {n: [] for n in names},
            fed=step is not None,
            order_seed=order_seed,
            min_seconds=self.min_seconds if duration_bound else 0.0,
            startup_s={n: self.startup_s[n] for n in names if n in self.startup_s},
        )
        shuffle = random.Random(order_seed)

        def order(names_: Sequence[str], _round: int) -> list[str]:
            results.orders.append(shuffle.sample(list(names_), len(names_)))
            return results.orders[-1]

        def measure(name: str, _round: int) -> Trial:
            trial = self.trial(by_name[name], step=step, epochs=epochs, step_ready=step_ready)
            results.trials[name].append(trial)
            if bar is not None:
                bar.total = max(bar.total, bar.n + 1)
                bar.update()
            return trial

        check = None if until is None else (lambda _records: until(results))
        interleaved_trials(names, measure, rounds, until=check, most=most, order=order)
        if bar is not None:
            bar.close()
        results.seconds = time.perf_counter() - start
        done = len(results.trials[names[0]])
        counts = sorted({t.epochs for ts in results.trials.values() for t in ts})
        span = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
        self.say(
            f"{label}: {done} round{'s' * (done != 1)} of {len(ways)} way{'s' * (len(ways) != 1)}, "
            f"{span} epoch{'s' * (counts != [1])} a trial"
            + (f" (at least {self.min_seconds:g} s)" if duration_bound else "")
            + f", in {_duration(results.seconds)}"
        )
        return results

    def close(self, keep: Iterable[str] = ()) -> None:
        """Close every loader (its workers and threads end) but those named in ``keep``."""
        keep = set(keep)
        for name in [n for n in self.loaders if n not in keep]:
            self.loaders.pop(name).close()


class _Stream:
    """A loader's batches across its epochs, one epoch drained before the next begins (a capture
    loop is never left early); ``epochs``: the epochs begun."""

    def __init__(self, loader: Loader) -> None:
        self.loader, self.epochs = loader, 0
        self.batches: Iterator[Any] | None = None

    def next(self) -> Any:
        for _ in range(2):
            if self.batches is not None:
                batch = next(self.batches, None)
                if batch is not None:
                    return batch
            self.batches = iter(self.loader.epoch())
            self.epochs += 1
        raise RuntimeError(
            "an epoch of the loader gave no batches; check the data folder and the loader's batch size"
        )

    def rest(self) -> Iterator[Any]:
        """The rest of the current epoch."""
        if self.batches is not None:
            yield from self.batches
            self.batches = None


def _epochs_for(ready: int, per_epoch: int) -> int:
    """The fewest whole epochs a trial for ``ready`` batches handed over untimed to be at most
    ``MAX_UNTIMED`` of the rest."""
    return max(1, math.ceil(ready * (1 + MAX_UNTIMED) / (MAX_UNTIMED * per_epoch) - 1e-9))


def steady_seconds(min_seconds: float | None, gpu: bool) -> float:
    """A trial's least duration: ``min_seconds``, or by default ``DEFAULT_MIN_SECONDS`` on a GPU
    and ``DEFAULT_MIN_SECONDS_CPU`` on a CPU."""
    if min_seconds is None:
        return DEFAULT_MIN_SECONDS if gpu else DEFAULT_MIN_SECONDS_CPU
    if not isinstance(min_seconds, (int, float)) or isinstance(min_seconds, bool) or min_seconds < 0:
        raise ValueError(f"min_seconds must be a number of seconds >= 0 (or None), not {min_seconds!r}")
    return float(min_seconds)


def ahead_batches(loader: Any) -> int:
    """The batches a loader has scheduled and not yet handed over (made, or in the making, before
    a trial's timer): its ``ahead`` (``helpers.toolkit.loaders``' DALI feeds); the sum over the feeds of a
    ``ShardedFeed`` or a ``RoundRobin``; the loader that an ``InBackground`` runs; 0 for any other."""
    if hasattr(loader, "ahead"):
        return int(loader.ahead)
    if isinstance(getattr(loader, "feeds", None), (list, tuple)):
        return sum(ahead_batches(feed) for feed in loader.feeds)
    inner = getattr(loader, "loader", None)
    return ahead_batches(inner) if inner is not None and inner is not loader else 0


def narrow(pairs: Sequence[tuple[str, str]], precision: float) -> Callable[[Results], bool]:
    """An ``until`` for :meth:`Harness.run`: every ratio of ``pairs`` within ``precision`` (0.02:
    +-2%) of its estimate."""
    return lambda results: all(results.ratio(a, b).within(precision) for a, b in pairs)


def _bar(total: int, label: str) -> Any:
    if headless():
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=label, unit="trial", file=sys.stdout)


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


__all__ = ["Harness", "Loader", "Pick", "Results", "Trial", "Way", "headless", "narrow", "steady_seconds"]
