"""Timing, statistics over trials, and results JSON that say where the numbers came from."""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import statistics
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from helpers.devices import gpu_count
from helpers.paths import REPO_ROOT

RESULTS_SCHEMA = 1


def summarize(values: Sequence[float]) -> dict[str, float]:
    """Median and spread of repeated measurements (``spread`` = (max - min) / median)."""
    if not values:
        raise ValueError("no measurements to summarize")
    median = statistics.median(values)
    return {
        "n": len(values),
        "median": median,
        "min": min(values),
        "max": max(values),
        "mean": statistics.fmean(values),
        "stdev": statistics.stdev(values) if len(values) > 1 else 0.0,
        "spread": (max(values) - min(values)) / median if median else 0.0,
    }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _nvidia_smi(query: str) -> str | None:
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20, check=True).stdout
        return out.strip().splitlines()[0] or None
    except (OSError, subprocess.SubprocessError, IndexError):
        return None


def machine_info() -> dict[str, Any]:
    """GPU name, driver, CUDA, DALI and torch versions, CPU model: what a number depends on."""
    import nvidia.dali
    import torch

    info: dict[str, Any] = {
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "dali": nvidia.dali.__version__,
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "gpu_count": gpu_count(),
        "gpu": None,
        "gpu_driver": None,
    }
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    if info["gpu_count"]:
        info["gpu_driver"] = _nvidia_smi("driver_version")
        info["gpu"] = info["gpu"] or _nvidia_smi("name")
    return info


def machine_label(info: dict[str, Any]) -> str:
    """A short file-name-safe name for the machine: its GPU, else ``cpu``."""
    name = info.get("gpu") or "cpu"
    return "".join(c if c.isalnum() else "-" for c in name.replace("NVIDIA ", "")).strip("-").lower()


def default_results_dir() -> Path:
    """``$DALI_TUTORIALS_RESULTS`` (set by the suite runner for each run), else build/results."""
    return Path(os.environ.get("DALI_TUTORIALS_RESULTS") or REPO_ROOT / "build" / "results")


def save_results(name: str, parameters: dict[str, Any], results: dict[str, Any],
                 headline: dict[str, Any], results_dir: str | Path | None = None) -> Path:
    """Write ``<results_dir>/<name>.json`` atomically: machine, parameters, results, and the
    ``headline`` figures that summaries print. Returns the path."""
    folder = Path(results_dir) if results_dir else default_results_dir()
    folder.mkdir(parents=True, exist_ok=True)
    document = {
        "schema": RESULTS_SCHEMA,
        "notebook": name,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine_info(),
        "parameters": parameters,
        "headline": headline,
        "results": results,
    }
    path = folder / f"{name}.json"
    tmp = path.with_suffix(f".json.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(document, indent=2, default=str) + "\n")
    tmp.replace(path)
    return path
