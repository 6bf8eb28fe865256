"""Comparing data loaders that feed one training loop: configurations, the timing of one trial,
the time split between the data side and the training side, and a compact profile. Notebook
03 defines the loaders and the training loop; ``helpers.benchmarking`` holds the method
(interleaved trials, ratios with intervals); this module only names and times configurations.
"""

from __future__ import annotations

import cProfile
import pstats
import time
from collections.abc import Callable
from collections.abc import Iterable
from dataclasses import asdict
from dataclasses import dataclass
from typing import Any

Batches = Iterable[tuple[Any, Any]]  # (images, targets) torch tensors, one loader batch each
EpochFn = Callable[[], Batches]  # a fresh iterable over one epoch


@dataclass(frozen=True)
class Config:
    """One way of feeding the training loop. ``batch`` is what the loader delivers per call;
    every optimizer step trains on 64 samples (a larger batch is split into micro-batches)."""

    loader: str  # "eager", "capture", "pipeline", "dataloader", "ceiling", "nodes"
    batch: int = 64
    decode: str | None = None  # "cpu" or "gpu"; None: the notebook's default
    threads: int | None = None  # DALI threads; None: the notebook's default
    hw_decoder_load: float | None = None  # None: DALI's default
    labels_in_torch: bool = False  # squeeze and cast the labels in torch instead of DALI
    overlap: str = "none"  # "none" | "thread" (a background Python thread) | "prefetcher"
    workers: int | None = None  # DataLoader worker processes
    knob: str = "comparison"  # the question this configuration answers

    @property
    def name(self) -> str:
        parts = [self.loader, f"b{self.batch}"]
        for label, value in (("decode", self.decode), ("threads", self.threads),
                             ("hw", self.hw_decoder_load), ("workers", self.workers)):
            if value is not None:
                parts.append(f"{label}={value}")
        if self.labels_in_torch:
            parts.append("labels-in-torch")
        if self.overlap != "none":
            parts.append(f"overlap={self.overlap}")
        return " ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "name": self.name}


def time_epochs(epoch: EpochFn, train: Callable[[Batches], tuple[int, float]], *,
                warmup: int, timed: int) -> dict[str, Any]:
    """One trial: ``warmup`` untimed epochs, then ``timed`` epochs through ``train`` (which
    returns samples and the last loss, and synchronizes the device before returning). The
    trial's rate is the timed samples over the timed seconds: a fixed amount of work."""
    rates: list[float] = []
    samples_total, seconds_total = 0, 0.0
    loss = float("nan")
    for index in range(warmup + timed):
        start = time.perf_counter()
        samples, loss = train(epoch())
        seconds = time.perf_counter() - start
        if index >= warmup:
            rates.append(samples / seconds)
            samples_total += samples
            seconds_total += seconds
    return {"samples_per_s": samples_total / seconds_total, "epoch_samples_per_s": rates,
            "timed_samples": samples_total, "final_loss": loss}


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


def _short(function: tuple[str, int, str]) -> str:
    filename, line, name = function
    if filename == "~":  # a C function
        return name.strip("<>")
    parts = filename.replace("\\", "/").split("/")
    dali = [i for i in range(len(parts) - 1) if parts[i:i + 2] == ["nvidia", "dali"]]
    if dali:  # DALI's modules, wherever it is installed (a venv, pip --target)
        return f"{'/'.join(parts[dali[-1]:][-3:])}:{line}({name})"
    for anchor in ("site-packages", "dist-packages", "helpers"):
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
        "top": [{"function": _short(f), "package": _package(f), "calls_per_step": calls / steps,
                 "own_us_per_step": own / steps * 1e6, "share": own / total}
                for own, calls, f in rows],
        "share_by_package": {k: v / total for k, v in
                             sorted(by_package.items(), key=lambda kv: -kv[1])},
    }
