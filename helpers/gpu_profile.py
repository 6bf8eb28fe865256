"""Where a training epoch's GPU time goes: torch.profiler's trace of the GPU's work (CUPTI
records every kernel and copy of the process, DALI's included), split by who launched it.

The model's kernels are those on the CUDA stream that training alone keeps busiest (the
ceiling, with no loader working: ``busiest_stream``; torch trains on its current stream);
every other stream's kernels are the loader's (DALI runs its kernels on streams of its own);
copies and memsets are counted apart, wherever they run (pipeline mode's copy into torch's
tensors runs on torch's stream). The hardware JPEG decoder is not a kernel: time when only it
works counts as idle here.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

# the categories of Kineto's chrome trace (lower-cased: older Kineto writes "Kernel", "Memcpy")
GPU_CATEGORIES = {"kernel": "kernel", "gpu_memcpy": "copy", "gpu_memset": "copy", "memcpy": "copy",
                  "memset": "copy"}


def profiled(run: Callable[[], Any], trace: Path) -> Any:
    """``run()`` under torch.profiler, GPU activity only (recording the CPU's too would slow the
    launches down); its chrome trace is written to ``trace``. Returns what ``run`` returns."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        result = run()
    prof.export_chrome_trace(str(trace))
    return result


@dataclass(frozen=True)
class GpuWork:
    name: str
    kind: str  # "kernel" or "copy"
    stream: int | None
    start_us: float
    end_us: float


def gpu_work(trace: Path | dict) -> list[GpuWork]:
    """The kernels, copies and memsets of a chrome trace (a path or the loaded JSON)."""
    document = json.loads(Path(trace).read_text()) if not isinstance(trace, dict) else trace
    found = []
    for event in document.get("traceEvents", []):
        kind = GPU_CATEGORIES.get(str(event.get("cat", "")).lower())
        if kind is None or event.get("ph") != "X":
            continue
        stream = event.get("args", {}).get("stream", event.get("tid"))  # a GPU event's tid: its stream
        stream = stream if isinstance(stream, int) else None
        start = float(event["ts"])
        found.append(GpuWork(event.get("name", ""), kind, None if stream is None else int(stream),
                             start, start + float(event.get("dur", 0.0))))
    return found


def _union(spans: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[list[float]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(a, b) for a, b in merged]


def _length(spans: Iterable[tuple[float, float]]) -> float:
    return sum(b - a for a, b in spans)


def _intersection(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    total, i, j = 0.0, 0, 0
    while i < len(a) and j < len(b):
        low, high = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0.0, high - low)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


@dataclass(frozen=True)
class GpuTime:
    """An epoch's GPU work, in milliseconds: ``span_ms`` from its first start to its last end,
    ``busy_ms`` with anything running, the time each owner had work running (``model``,
    ``loader``, ``copies``; work of one owner on several streams at once counts once), and
    ``overlap_ms`` with the model's and the loader's kernels running at the same time."""

    span_ms: float
    busy_ms: float
    model_ms: float
    loader_ms: float
    copies_ms: float
    overlap_ms: float
    loader_kernels: dict[str, int] = field(default_factory=dict)

    @property
    def idle_ms(self) -> float:
        return self.span_ms - self.busy_ms

    def row(self, steps: int) -> dict[str, float]:
        """Per training step, for a table."""
        return {"GPU span ms/step": round(self.span_ms / steps, 2),
                "idle ms/step": round(self.idle_ms / steps, 2),
                "model kernels ms/step": round(self.model_ms / steps, 2),
                "loader kernels ms/step": round(self.loader_ms / steps, 2),
                "copies ms/step": round(self.copies_ms / steps, 2),
                "model and loader at once ms/step": round(self.overlap_ms / steps, 2)}


def gpu_time(work: list[GpuWork], model_streams: set[int]) -> GpuTime:
    """Split ``work`` (``gpu_work``) into the model's kernels (on ``model_streams``), the
    loader's kernels (on any other stream) and copies."""
    if not work:
        raise ValueError("the trace holds no GPU work: was the run on a GPU, with "
                         "ProfilerActivity.CUDA?")
    model = _union((w.start_us, w.end_us) for w in work
                   if w.kind == "kernel" and w.stream in model_streams)
    loader = _union((w.start_us, w.end_us) for w in work
                    if w.kind == "kernel" and w.stream not in model_streams)
    copies = _union((w.start_us, w.end_us) for w in work if w.kind == "copy")
    busy = _union((w.start_us, w.end_us) for w in work)
    span = max(w.end_us for w in work) - min(w.start_us for w in work)
    names = Counter(w.name for w in work if w.kind == "kernel" and w.stream not in model_streams)
    return GpuTime(span / 1e3, _length(busy) / 1e3, _length(model) / 1e3, _length(loader) / 1e3,
                   _length(copies) / 1e3, _intersection(model, loader) / 1e3, dict(names))


def kernel_time_by_stream(work: list[GpuWork]) -> dict[int, float]:
    """Milliseconds of kernels on each stream, busiest first."""
    totals: dict[int, float] = {}
    for w in work:
        if w.kind == "kernel" and w.stream is not None:
            totals[w.stream] = totals.get(w.stream, 0.0) + (w.end_us - w.start_us) / 1e3
    return dict(sorted(totals.items(), key=lambda kv: -kv[1]))


def busiest_stream(work: list[GpuWork]) -> int:
    """The stream with the most kernel time (of training alone: the model's). Raises
    ValueError when there is no kernel, or when a kernel on it is named like DALI's."""
    totals = kernel_time_by_stream(work)
    if not totals:
        raise ValueError("the trace holds no kernel: was the run on a GPU, with "
                         "ProfilerActivity.CUDA?")
    stream = next(iter(totals))
    dali = sorted({w.name for w in work if w.stream == stream and "dali" in w.name.lower()})
    if dali:
        raise ValueError(f"the busiest stream of training alone ran DALI's kernels ({dali[:3]}): "
                         "a loader was still working; let the loaders settle before profiling")
    return stream


def profile_epochs(epochs: Mapping[str, Callable[[], Any]], reference: str, *,
                   settle: Callable[[], None] = lambda: None,
                   settle_s: float = 1.0) -> tuple[dict[str, GpuTime], dict[int, float]]:
    """Each of ``epochs`` (a label and a function that runs one epoch) under the profiler in turn,
    after ``settle_s`` seconds' pause and ``settle()`` (a synchronize), so that work from before an
    epoch is not counted in it (a loader's prefetching for its next epoch, inside the window,
    is). The model's stream is ``reference``'s busiest (training alone); returns each epoch's
    ``GpuTime`` and the reference's kernel milliseconds by stream.
    Raises ValueError when the reference ran no kernel (CUPTI off limits, or no GPU)."""
    if reference not in epochs:
        raise ValueError(f"reference {reference!r} is none of the epochs {list(epochs)}")
    work = {}
    with tempfile.TemporaryDirectory(prefix="gpu-profile-") as folder:
        for i, (label, run) in enumerate(epochs.items()):
            time.sleep(settle_s)
            settle()
            trace = Path(folder) / f"{i}.json"
            profiled(run, trace)
            work[label] = gpu_work(trace)
    model_streams = {busiest_stream(work[reference])}
    return ({label: gpu_time(w, model_streams) for label, w in work.items()},
            kernel_time_by_stream(work[reference]))


def kernel_name(name: str, most: int = 120) -> str:
    """A kernel's name as a reader tells kernels apart: no return type, no argument list, its
    template arguments kept (two instances of one template differ only there), at most ``most``
    characters."""
    name = name.removeprefix("void ")
    depth = 0
    for i, ch in enumerate(name):
        depth += {"<": 1, ">": -1}.get(ch, 0)
        if ch == "(" and depth == 0:
            name = name[:i]
            break
    return name if len(name) <= most else name[:most - 1] + "…"


def split_sentence(alone: GpuTime, fed: GpuTime, steps: int, *, fed_by: str = "the loader",
                   top: int = 3) -> str:
    """One sentence, per training step: the model's kernels, idle time of training alone, and
    what the model, the loader and copies ran when a loader fed it, with its most launched kernels."""
    def per(ms: float) -> str:
        return f"{ms / steps:.2f} ms"

    launched = sorted(fed.loader_kernels.items(), key=lambda kv: -kv[1])[:top]
    names = ("" if not launched else " The loader's most often launched kernels: "
             + ", ".join(f"`{kernel_name(name)}` ({count}x)" for name, count in launched) + ".")
    return (f"training alone, the model's kernels ran {per(alone.model_ms)} a step and no kernel or "
            f"copy ran {per(alone.idle_ms)}; fed by {fed_by}, the model's kernels ran "
            f"{per(fed.model_ms)} a step, the loader's {per(fed.loader_ms)} "
            f"({per(fed.overlap_ms)} of it at the same time as the model's), copies "
            f"{per(fed.copies_ms)}, and no kernel or copy ran {per(fed.idle_ms)} (the hardware "
            "decoder may have been busy)." + names)
