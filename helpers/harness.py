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
- **A trial** times ``epochs`` whole epochs of one way: samples over seconds. Its CPU time is
  this process and every process it started (DataLoader workers), over the trial only.
- **Rounds** run every way once, in an order rotated by the round (``interleaved_order``).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import Protocol

from helpers.benchmarking import Ratio
from helpers.benchmarking import interleaved_trials
from helpers.benchmarking import rate_interval
from helpers.benchmarking import ratio
from helpers.benchmarking import summarize
from helpers.cpu_time import cpu_seconds_since
from helpers.cpu_time import process_tree_cpu
from helpers.hardware import ENGINES
from helpers.results_file import RESULTS_FOLDER_VARIABLE

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
    read); the peak of torch's GPU memory in GiB (None without a GPU)."""

    samples: int
    seconds: float
    waited_s: float
    cpu_s: float
    busy: dict[str, Any] = field(default_factory=dict)
    peak_gib: float | None = None
    skipped: int = 0  # batches its loader had ready before the timer: handed over untimed, not counted

    @property
    def rate(self) -> float:
        return self.samples / self.seconds

    @property
    def waiting(self) -> float:
        """The share of the trial spent waiting for the loader."""
        return self.waited_s / self.seconds

    def as_dict(self) -> dict[str, Any]:
        return {"samples": self.samples, "seconds": self.seconds, "rate": self.rate,
                "waited_s": self.waited_s, "cpu_s": self.cpu_s, "peak_gib": self.peak_gib,
                "skipped": self.skipped, **self.busy}


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


@dataclass
class Results:
    """The trials of one run of the harness (``label``): each way's trials in round order."""

    label: str
    unit: str
    ways: list[Way]
    trials: dict[str, list[Trial]]
    seconds: float = 0.0
    fed: bool = False  # whether a step (a model) consumed the batches

    def way(self, name: str) -> Way:
        for way in self.ways:
            if way.name == name:
                return way
        raise KeyError(f"{self.label}: no way named {name!r}; the ways: "
                       f"{', '.join(w.name for w in self.ways)}")

    def rates(self, name: str) -> list[float]:
        """The way's rate (``unit`` per second) in each round."""
        self.way(name)
        return [t.rate for t in self.trials[name]]

    def values(self, name: str, key: str) -> list[float]:
        """One figure of each of the way's trials that has it (``"cpu_s"``, ``"nvdec_pct"``...)."""
        self.way(name)
        return [v for t in self.trials[name] if (v := t.as_dict().get(key)) is not None]

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
        a step ran), each engine's mean busy share where NVML read it, torch's peak GPU memory."""
        import pandas as pd

        rows = []
        for way in self.ways:
            rates = self.rates(way.name)
            estimate, low, high = rate_interval(rates)
            spread = summarize(rates)
            decimals = 1 if estimate < 100 else 0
            row: dict[str, Any] = {
                "way": way.name, f"{self.unit}/s": round(estimate, decimals),
                "95% interval": f"{low:,.{decimals}f}-{high:,.{decimals}f}",
                "CV %": round(100 * spread["cv"], 1), "noisy": "yes" if spread["noisy"] else "",
                f"CPU s / 1,000 {self.unit}": round(1000 * sum(t.cpu_s for t in self.trials[way.name])
                                                    / sum(t.samples for t in self.trials[way.name]), 2),
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
            row["trials"] = len(rates)
            rows.append(row)
        return pd.DataFrame(rows).set_index("way")

    def as_record(self) -> dict[str, Any]:
        """What a notebook's results JSON stores of this run: every trial of every way."""
        return {"label": self.label, "unit": self.unit, "seconds": self.seconds,
                "fed": self.fed,
                "ways": {w.name: {"kind": w.kind, "knob": w.knob,
                                  "trials": [t.as_dict() for t in self.trials[w.name]]}
                         for w in self.ways}}

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()


def headless() -> bool:
    """Whether the suite's runner executes this notebook (no one watches a progress bar): the
    runner starts every kernel with ``helpers.results_file.RESULTS_FOLDER_VARIABLE`` set."""
    return bool(os.environ.get(RESULTS_FOLDER_VARIABLE))


class Harness:
    """Makes each way's loader once (and warms it up with one untimed epoch), then times trials
    of the ways in interleaved rounds (:meth:`run`). Loaders are kept for later runs until
    :meth:`close`. ``synchronize`` waits for the device (``torch.cuda.synchronize``);
    ``sampler`` (a ``helpers.hardware.Sampler``) reads NVML and the CPU during each trial;
    ``peak_memory`` (``(reset, read_gib)``) reads torch's peak GPU memory."""

    def __init__(self, *, unit: str = "samples", synchronize: Callable[[], None] | None = None,
                 sampler: Any = None,
                 peak_memory: tuple[Callable[[], None], Callable[[], float]] | None = None,
                 say: Callable[[str], None] = print) -> None:
        self.unit = unit
        self.synchronize = synchronize or (lambda: None)
        self.sampler, self.peak_memory, self.say = sampler, peak_memory, say
        self.loaders: dict[str, Loader] = {}

    def loader(self, way: Way) -> Loader:
        """The way's loader, made and warmed up (one whole epoch, untimed) at its first use."""
        if way.name not in self.loaders:
            loader = way.make()
            for _ in loader.epoch():
                pass
            self.synchronize()
            self.loaders[way.name] = loader
        return self.loaders[way.name]

    def trial(self, way: Way, *, step: Step | None = None, epochs: int = 1,
              step_ready: bool = False) -> Trial:
        """``epochs`` whole epochs of the way's loader, each batch given to ``step`` (when not
        None), timed from a synchronized device to a synchronized device. The batches its loader
        had ready when the trial began (``ahead``: made before the timer) are handed over first,
        untimed and not counted; ``step_ready``: given to ``step`` too, before the timer (for a
        loop that must train on every batch, such as notebook 02's comparison of eager and capture
        mode; the loader can then prepare a little during those steps)."""
        loader = self.loader(way)
        ready = ahead_batches(loader)
        batches = iter(loader.epoch())
        too_short = (f"{way.name}: an epoch is no longer than the {ready} batch(es) its loader had "
                     "ready before the timer; give it more data or a smaller batch")
        for _ in range(ready):
            batch = next(batches, None)
            if batch is None:
                raise RuntimeError(too_short)
            if step_ready and step is not None:
                step(*batch)
        self.synchronize()
        if self.peak_memory is not None:
            self.peak_memory[0]()
        before = process_tree_cpu()
        with self._sampling() as busy:
            samples, waited = 0, 0.0
            start = time.perf_counter()
            for epoch in range(epochs):
                if epoch:
                    batches = iter(loader.epoch())
                while True:
                    asked = time.perf_counter()
                    try:
                        inputs, labels = next(batches)
                    except StopIteration:
                        break
                    waited += time.perf_counter() - asked
                    if step is not None:
                        step(inputs, labels)
                    samples += len(labels)
            self.synchronize()
            seconds = time.perf_counter() - start
        cpu = cpu_seconds_since(before)
        if samples == 0:
            raise RuntimeError(too_short if ready else f"{way.name}: an epoch of its loader gave no "
                               "batches; check the data folder and the loader's batch size")
        peak = self.peak_memory[1]() if self.peak_memory is not None else None
        return Trial(samples, seconds, waited, cpu, busy.as_dict() if busy is not None else {}, peak, ready)

    def _sampling(self) -> Any:
        return self.sampler.sample() if self.sampler is not None else nullcontext(None)

    def run(self, ways: Sequence[Way], rounds: int, *, label: str, step: Step | None = None,
            epochs: int = 1, until: Callable[[Results], bool] | None = None,
            most: int | None = None, step_ready: bool = False) -> Results:
        """``rounds`` interleaved rounds of a trial of every way; with ``until``, more rounds one
        at a time until ``until(results so far)`` holds or ``most`` rounds have run. Every
        loader is made and warmed up before the first timed trial. Shows a progress bar when
        someone watches, and one line at the end."""
        names = [w.name for w in ways]
        if len(set(names)) != len(names):
            raise ValueError(f"{label}: two ways share a name: {names}; give each a name of its own")
        by_name = {w.name: w for w in ways}
        for way in ways:
            self.loader(way)
        bar = _bar(rounds * len(ways), label)
        start = time.perf_counter()
        results = Results(label, self.unit, list(ways), {n: [] for n in names}, fed=step is not None)

        def measure(name: str, _round: int) -> Trial:
            trial = self.trial(by_name[name], step=step, epochs=epochs, step_ready=step_ready)
            results.trials[name].append(trial)
            if bar is not None:
                bar.total = max(bar.total, bar.n + 1)
                bar.update()
            return trial

        check = None if until is None else (lambda _records: until(results))
        interleaved_trials(names, measure, rounds, until=check, most=most)
        if bar is not None:
            bar.close()
        results.seconds = time.perf_counter() - start
        done = len(results.trials[names[0]])
        self.say(f"{label}: {done} round{'s' * (done != 1)} of {len(ways)} way{'s' * (len(ways) != 1)}, "
                 f"{epochs} epoch{'s' * (epochs != 1)} a trial, in {_duration(results.seconds)}")
        return results

    def close(self, keep: Iterable[str] = ()) -> None:
        """Close every loader (its workers and threads end) but those named in ``keep``."""
        keep = set(keep)
        for name in [n for n in self.loaders if n not in keep]:
            self.loaders.pop(name).close()


def ahead_batches(loader: Any) -> int:
    """The batches a loader has scheduled and not yet handed over (made, or in the making, before
    a trial's timer): its ``ahead`` (``helpers.loaders``' DALI feeds); the sum over the feeds of a
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


__all__ = ["Harness", "Loader", "Pick", "Results", "Trial", "Way", "headless", "narrow"]
