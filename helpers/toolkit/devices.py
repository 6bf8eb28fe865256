"""Choosing where DALI runs: ``"auto" | "cpu" | "gpu"``, with a clear error when no GPU is usable."""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

Device = Literal["cpu", "gpu"]
DEVICE_CHOICES = ("auto", "cpu", "gpu")


class GPUUnavailableError(RuntimeError):
    """A GPU step was asked for on a machine where DALI cannot use a GPU."""


@lru_cache(maxsize=1)
def gpu_count() -> int:
    """GPUs that DALI can use (0 without a GPU or a recent enough NVIDIA driver)."""
    try:
        from nvidia.dali import backend

        return int(backend.GetCUDADeviceCount())
    except Exception:  # no driver library at all: treated as no GPU
        return 0


def gpu_available() -> bool:
    return gpu_count() > 0


def no_gpu_message(what: str = "This step") -> str:
    return (
        f"{what} needs an NVIDIA GPU, and DALI finds none on this machine (without a GPU or a "
        "recent enough driver DALI reports `cudaErrorInsufficientDriver`). "
        'Use device="cpu" (or "auto", which picks the CPU here).'
    )


def resolve_device(device: str = "auto") -> Device:
    """``"auto"`` becomes ``"gpu"`` when DALI can use a GPU, else ``"cpu"``; ``"gpu"`` without a
    usable GPU raises :class:`GPUUnavailableError` with what to do instead."""
    if device not in DEVICE_CHOICES:
        raise ValueError(f"device must be one of {DEVICE_CHOICES}, not {device!r}")
    if device == "auto":
        return "gpu" if gpu_available() else "cpu"
    if device == "gpu" and not gpu_available():
        raise GPUUnavailableError(no_gpu_message('device="gpu"'))
    return device  # type: ignore[return-value]


def torch_device(device: Device) -> str:
    """The torch device that matches a DALI device ("cuda" for "gpu")."""
    return "cuda" if device == "gpu" else "cpu"


def skip_message(step: str) -> str:
    """What a notebook prints in place of a GPU step on a machine (or a run) without a GPU."""
    reason = (
        "DALI finds no usable GPU on this machine" if not gpu_available() else 'this run uses device="cpu"'
    )
    return (
        f"Skipped: {step} runs on a GPU, and {reason}. The CPU steps above are complete. "
        "What it shows on a GPU: this notebook as committed in notebooks/ and its page of the "
        "docs site (`make docs`), where their run had a GPU (the README's inventory says where "
        "each notebook ran)."
    )


# Video decoders (NVDEC engines) of a whole GPU, by a word of its name; NVIDIA's MIG user guide
# lists them with each GPU's full-size profile (7g for the H100 and H200, 7g for the A100, 4g for
# the A30). A GPU not listed here counts as one.
VIDEO_DECODERS = {"H200": 7, "H100": 7, "GH200": 7, "A100": 5, "A30": 4}


def video_decoders(gpu_name: str | None, *, say=print) -> int:
    """How many hardware video decoders a GPU of this name has (``VIDEO_DECODERS``), so that a
    loader can run one video reader per decoder; 1, with a printed line, for a GPU not in the
    table (pass your count as the notebook's ``readers`` parameter) or no GPU."""
    for word in (gpu_name or "").replace("-", " ").split():
        if word in VIDEO_DECODERS:
            return VIDEO_DECODERS[word]
    say(
        f"Video decoders: {gpu_name or 'no GPU'} is not in helpers.toolkit.devices.VIDEO_DECODERS, so one "
        "reader is the default; set `readers` to your GPU's count of NVDEC engines (NVIDIA's "
        "MIG user guide and product briefs list them)."
    )
    return 1
