"""What the hardware is doing while a loader runs: a sampler of NVIDIA's management library (NVML,
through ``nvidia-ml-py``'s ``pynvml``) and of the CPU, to read beside every GPU rate.

    sampler = Sampler()                 # GPU 0; says once when NVML is missing
    with sampler.sample() as busy:      # a thread reads NVML every 50 ms meanwhile
        run_one_epoch()
    busy.as_dict()   # {"gpu_pct": ..., "nvdec_pct": ..., "nvjpg_pct": ..., "cpu_pct": ..., ...}

What each figure is, as NVML defines it: ``gpu_pct`` the share of time in which one or more
kernels ran on the GPU (not how many of its multiprocessors they kept busy); ``nvdec_pct`` and
``nvjpg_pct`` the share of time the video decoders and the JPEG decoders were busy, averaged over
all the engines of each kind (an H200 has seven of each: one engine busy all the time reads about
14%). NVML averages each reading over its own sampling period (a fraction of a second, which it
reports), so a reading taken early in a trial still holds the work before it: the sampler keeps
only the readings taken one period or more after a trial began. A trial shorter than that has
none (None), and a trial should last a second or more. ``cpu_pct``: the machine's CPU time over
the trial, as a share of all its cores (psutil), measured with or without NVML.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from dataclasses import field
from typing import Any

import psutil

INTERVAL_S = 0.05
IDLE_DECODERS_PCT = 1.0  # the decoders read idle at or below this
IDLE_CPU_CORES = 0.5  # this process reads quiet at or below this many cores busy
BUSY_FIELDS = ("user", "system", "nice", "irq", "softirq")  # psutil.cpu_times(): time not idle
ENGINES = {
    "gpu_pct": "GPU (a kernel running)",
    "nvdec_pct": "NVDEC (video decoders)",
    "nvjpg_pct": "NVJPG (JPEG decoders)",
}


@dataclass
class Busy:
    """One trial's readings: each engine's mean (and the highest reading) over the trial, in
    percent; None where NVML could not read it (no GPU, no NVML, an engine the GPU lacks)."""

    readings: dict[str, list[float]] = field(default_factory=dict)
    cpu_pct: float | None = None

    def mean(self, key: str) -> float | None:
        values = self.readings.get(key)
        return statistics.fmean(values) if values else None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {key: self.mean(key) for key in ENGINES}
        out.update(
            {
                key.replace("_pct", "_max_pct"): max(v) if (v := self.readings.get(key)) else None
                for key in ENGINES
            }
        )
        out["cpu_pct"] = self.cpu_pct
        out["nvml_samples"] = max((len(v) for v in self.readings.values()), default=0)
        return out


def _load_nvml() -> Any | None:
    try:
        import pynvml
    except ImportError:
        return None
    return pynvml


class Sampler:
    """Reads NVML's utilization counters of GPU ``index`` on a background thread while a trial
    runs (``sample()``), and the CPU time of the whole machine. Without NVML (no NVIDIA driver,
    no ``nvidia-ml-py``) it says so once, and its trials carry the CPU figure alone."""

    def __init__(
        self, index: int = 0, *, interval: float = INTERVAL_S, say: Callable[[str], None] = print
    ) -> None:
        self.interval = interval
        self.nvml = _load_nvml()
        self.handle: Any = None
        self.name: str | None = None
        self.why_not = ""
        if self.nvml is None:
            self.why_not = "nvidia-ml-py (pynvml) is not installed"
        else:
            try:
                self.nvml.nvmlInit()
                self.handle = self.nvml.nvmlDeviceGetHandleByIndex(index)
                self.name = str(self.nvml.nvmlDeviceGetName(self.handle))
            except Exception as error:  # noqa: BLE001  (NVMLError_LibraryNotFound, no GPU, ...)
                self.handle = None
                self.why_not = f"NVML cannot be read here ({type(error).__name__})"
        self.readers = self._readers()
        self._process: psutil.Process | None = None
        self.settle_s = self._period_s() if self.readers else 0.0
        if not self.available:
            say(f"Hardware sampler: {self.why_not}; no GPU engine utilization is recorded (the CPU's is).")

    @property
    def available(self) -> bool:
        return bool(self.readers)

    def _readers(self) -> dict[str, Callable[[], float]]:
        if self.handle is None:
            return {}
        nvml, handle = self.nvml, self.handle
        candidates = {
            "gpu_pct": lambda: float(nvml.nvmlDeviceGetUtilizationRates(handle).gpu),
            "nvdec_pct": lambda: float(nvml.nvmlDeviceGetDecoderUtilization(handle)[0]),
            "nvjpg_pct": lambda: float(nvml.nvmlDeviceGetJpgUtilization(handle)[0]),
        }
        readers = {}
        for key, read in candidates.items():
            try:
                read()
            except Exception:  # noqa: BLE001  (an engine or a call this GPU or driver lacks)
                continue
            readers[key] = read
        return readers

    def _period_s(self) -> float:
        """The longest sampling period NVML reports for the engines' readings (in seconds): a
        reading averages the work of that long before it. 1 s where NVML reports none."""
        periods = []
        for call in ("nvmlDeviceGetDecoderUtilization", "nvmlDeviceGetJpgUtilization"):
            try:
                periods.append(getattr(self.nvml, call)(self.handle)[1] / 1e6)
            except Exception:  # noqa: BLE001  (an engine or a call this GPU or driver lacks)
                continue
        return max(periods, default=1.0)

    def idle(self, decoders_pct: float = IDLE_DECODERS_PCT, cpu_cores: float = IDLE_CPU_CORES) -> bool:
        """Whether the work before has finished: NVML reads every video and JPEG decoder at most
        ``decoders_pct`` busy, and this process (DALI's threads run in it) used at most
        ``cpu_cores`` cores over the last ``INTERVAL_S``. The harness's settle step waits for it."""
        engines = self.read()
        if any(engines.get(key, 0.0) > decoders_pct for key in ("nvdec_pct", "nvjpg_pct")):
            return False
        if self._process is None:
            self._process = psutil.Process()
            self._process.cpu_percent(None)
        time.sleep(self.interval)
        return self._process.cpu_percent(None) <= 100 * cpu_cores

    def read(self) -> dict[str, float]:
        """One reading of every engine NVML reports on this GPU."""
        return {key: read() for key, read in self.readers.items()}

    @contextmanager
    def sample(self) -> Iterator[Busy]:
        busy = Busy({key: [] for key in self.readers})
        stop = threading.Event()

        def poll() -> None:
            while not stop.wait(self.interval):
                if time.perf_counter() - start < self.settle_s:  # it would still hold the work before
                    continue
                for key, value in self.read().items():
                    busy.readings[key].append(value)

        thread = threading.Thread(target=poll, daemon=True, name="hardware sampler")
        before, start = psutil.cpu_times(), time.perf_counter()
        if self.readers:
            thread.start()
        try:
            yield busy
        finally:
            stop.set()
            if self.readers:
                thread.join()
            after, seconds = psutil.cpu_times(), time.perf_counter() - start
            used = sum(getattr(after, f, 0.0) - getattr(before, f, 0.0) for f in BUSY_FIELDS)
            share = used / (seconds * (psutil.cpu_count() or 1)) if seconds > 0 else None
            busy.cpu_pct = None if share is None else min(100.0, 100 * share)  # the kernel counts in ticks

    def close(self) -> None:
        if self.handle is not None:
            self.nvml.nvmlShutdown()
            self.handle, self.readers = None, {}
