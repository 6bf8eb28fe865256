"""Comparing data loaders that feed one training loop: configurations, alternating trials, the
time split between the data side and the training side, a background-thread wrapper and a
compact profile. Notebook 03 defines the loaders and the training loop; this module only
schedules, times and summarizes them.
"""

from __future__ import annotations

import cProfile
import pstats
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from helpers.benchmarking import summarize

Batches = Iterable[tuple[Any, Any]]  # (images, targets) torch tensors, one loader batch each
EpochFn = Callable[[], Batches]  # a fresh iterable over one epoch


@dataclass(frozen=True)
class Config:
    """One way of feeding the training loop. ``batch`` is what the loader delivers per call,
    ``step`` what one optimizer step trains on (``batch`` is split into ``batch // step``
    micro-batches)."""

    loader: str  # "eager", "capture", "pipeline", "dataloader", "ceiling", "nodes"
    batch: int = 64
    step: int = 64
    decode: str | None = None  # "cpu" or "gpu"; None: the notebook's default
    threads: int | None = None  # DALI threads; None: the notebook's default
    hw_decoder_load: float | None = None  # None: DALI's default
    labels_in_torch: bool = False  # squeeze and cast the labels in torch instead of DALI
    overlap: str = "none"  # "none" | "thread" (a background Python thread) | "prefetcher"
    knob: str = "comparison"  # the question this configuration answers

    @property
    def name(self) -> str:
        parts = [self.loader, f"b{self.batch}"]
        if self.step != 64:
            parts.append(f"steps-of-{self.step}")
        for label, value in (("decode", self.decode), ("threads", self.threads),
                             ("hw", self.hw_decoder_load)):
            if value is not None:
                parts.append(f"{label}={value}")
        if self.labels_in_torch:
            parts.append("labels-in-torch")
        if self.overlap != "none":
            parts.append(f"overlap={self.overlap}")
        return " ".join(parts)

    def with_(self, **changes: Any) -> Config:
        return replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "name": self.name}


def alternating(configs: Sequence[Config], trial: int) -> list[Config]:
    """Trial 0 runs the configurations in order, trial 1 in reverse, and so on: no
    configuration always runs first (on a colder machine) or last."""
    return list(configs) if trial % 2 == 0 else list(reversed(configs))


def time_epochs(epoch: EpochFn, train: Callable[[Batches], tuple[int, float]], *,
                warmup: int, timed: int) -> dict[str, Any]:
    """Run ``warmup + timed`` epochs through ``train`` (which returns samples and the last
    loss, and synchronizes the device before returning); time the last ``timed``."""
    rates: list[float] = []
    loss = float("nan")
    for index in range(warmup + timed):
        start = time.perf_counter()
        samples, loss = train(epoch())
        if index >= warmup:
            rates.append(samples / (time.perf_counter() - start))
    return {"epoch_samples_per_s": rates, "final_loss": loss}


def time_split(batches: Batches, train_batch: Callable[[Any, Any], Any],
               synchronize: Callable[[], None], step: int) -> dict[str, float]:
    """One epoch with the data side and the training side timed apart: the clock stops after
    the loader has delivered a batch (device synchronized) and after the batch is trained on
    (synchronized again). The synchronizations remove the overlap that the plain loop has, so
    this epoch is for the split, not for the throughput. Times are per ``step`` samples."""
    data_s = train_s = 0.0
    samples = 0
    iterator = iter(batches)
    while True:
        start = time.perf_counter()
        try:
            images, targets = next(iterator)
        except StopIteration:
            break
        synchronize()
        fetched = time.perf_counter()
        train_batch(images, targets)
        synchronize()
        data_s += fetched - start
        train_s += time.perf_counter() - fetched
        samples += int(targets.shape[0])
    per_step = step / samples * 1e3
    return {"data_ms_per_step": data_s * per_step, "train_ms_per_step": train_s * per_step,
            "samples": samples}


class BackgroundEpochs:
    """Runs a loader's epochs on ONE background Python thread and hands the batches over
    through a bounded queue: ``epochs()`` is a drop-in epoch function. The same thread serves
    every epoch (a capture loop must keep its EvalContext), and each epoch runs to its end on
    that thread, so a capture loop is never left early."""

    _END = object()

    def __init__(self, epoch: EpochFn, depth: int = 2) -> None:
        self._epoch = epoch
        self._requests: queue.Queue[bool] = queue.Queue()
        self._batches: queue.Queue[Any] = queue.Queue(maxsize=depth)
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while self._requests.get():
            try:
                for batch in self._epoch():
                    self._batches.put(batch)
                self._batches.put(self._END)
            except BaseException as error:  # noqa: BLE001 - handed to the consumer, raised there
                self._batches.put(error)

    def epochs(self) -> Iterator[tuple[Any, Any]]:
        self._requests.put(True)
        while (item := self._batches.get()) is not self._END:
            if isinstance(item, BaseException):
                raise item
            yield item

    def close(self) -> None:
        self._requests.put(False)
        self._thread.join(timeout=30)


def results_table(runs: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per configuration: median samples/s and its min-max range over all timed epochs
    of all trials."""
    rows = []
    for name, run in runs.items():
        rates = [r for trial in run["trials"] for r in trial["epoch_samples_per_s"]]
        stats = summarize(rates)
        rows.append({"config": name, "knob": run["config"]["knob"],
                     "samples_per_s": stats["median"], "min": stats["min"], "max": stats["max"],
                     "timed_epochs": stats["n"]})
    return rows


def _short(function: tuple[str, int, str]) -> str:
    filename, line, name = function
    if filename == "~":  # a C function
        return name.strip("<>")
    parts = filename.replace("\\", "/").split("/")
    for anchor in ("site-packages", "helpers"):
        if anchor in parts:  # a package's path from its top-level folder, never the machine's
            return f"{'/'.join(parts[parts.index(anchor) + 1:][-3:])}:{line}({name})"
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
    of ``steps``) and the own time grouped by package: a compact, printable excerpt."""
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        run()
    finally:
        profiler.disable()
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    total = sum(own for _, _, own, _, _ in stats.values())
    rows = sorted(((own, calls, function) for function, (_, calls, own, _, _) in stats.items()),
                  reverse=True)[:top]
    by_package: dict[str, float] = {}
    for function, (_, _, own, _, _) in stats.items():
        by_package[_package(function)] = by_package.get(_package(function), 0.0) + own
    return {
        "steps": steps,
        "total_us_per_step": total / steps * 1e6,
        "top": [{"function": _short(f), "calls_per_step": calls / steps,
                 "own_us_per_step": own / steps * 1e6, "share": own / total}
                for own, calls, f in rows],
        "share_by_package": {k: v / total for k, v in
                             sorted(by_package.items(), key=lambda kv: -kv[1])},
    }
