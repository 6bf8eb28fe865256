"""What the training scripts of notebooks 04 and 06 share (``notebooks/scripts``): joining the
other processes that torchrun started, notebook 02's preprocessing of an MNIST batch, writing
a results file whole or not at all, and ending with ``error (rank R): ...`` and status 2 on a
mistake the person who launched the script can fix.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
from collections.abc import Callable
from collections.abc import Sequence
from pathlib import Path

import nvidia.dali.experimental.dynamic as ndd
import torch
import torch.distributed as dist
from nvidia.dali import types


class UsageError(Exception):
    """Something the person who launched the script can fix; the message says what."""


def at_least_one(args: argparse.Namespace, names: Sequence[str]) -> None:
    """Refuse a count argument below 1, by its flag."""
    for name in names:
        if getattr(args, name) < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be at least 1, not {getattr(args, name)}")


def lmdb_folder(flag: str, path: str | None) -> None:
    """Refuse a data argument that is not the folder of an LMDB."""
    if path is not None and not (Path(path) / "data.mdb").is_file():
        raise UsageError(
            f"{flag} {path} is not an LMDB folder (it has no data.mdb). Give the folder "
            "of a Caffe2 LMDB, such as db/MNIST/training."
        )


def start_process_group(
    device: str, timeout: float, backend: str | None = None, *, script: str, alone: bool = False
) -> tuple[int, int, int]:
    """Join the other processes of the launch: returns (rank, local_rank, world_size). torchrun
    tells each process RANK (over all machines), LOCAL_RANK (its GPU on this machine) and
    WORLD_SIZE. Without torchrun, one process on its own (``alone``), else a UsageError that says
    how to launch ``script``. NCCL (GPUs, one per process) by default on ``device`` gpu, gloo
    on the CPU."""
    if "RANK" not in os.environ:
        if alone:
            return 0, 0, 1
        raise UsageError(
            "RANK is not set: launch this script with torchrun, e.g. "
            f"`python -m torch.distributed.run --standalone --nproc-per-node=2 {script} ...`"
        )
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank, local_world = int(os.environ["LOCAL_RANK"]), int(os.environ["LOCAL_WORLD_SIZE"])
    backend = backend or ("nccl" if device == "gpu" else "gloo")
    if backend == "nccl" and device != "gpu":
        raise UsageError(
            "--backend nccl needs --device gpu: NCCL only connects GPUs. "
            "Use --backend gloo (the default with --device cpu)."
        )
    if device == "gpu":
        gpus = torch.cuda.device_count()
        if gpus == 0:
            raise UsageError(
                "--device gpu (NCCL) needs GPUs, and torch sees none on this machine. "
                "Use --device cpu, which trains on the CPU with the gloo backend."
            )
        if local_world > gpus:
            raise UsageError(
                f"{local_world} processes on this machine, but it has {gpus} GPU(s): "
                f"one process per GPU. Use --nproc-per-node={gpus} or fewer."
            )
        torch.cuda.set_device(local_rank)  # before any CUDA work: this process's GPU
    device_id = torch.device("cuda", local_rank) if device == "gpu" else None
    dist.init_process_group(backend, timeout=datetime.timedelta(seconds=timeout), device_id=device_id)
    return rank, local_rank, world


def preprocess(
    jpegs: ndd.Batch, labels: ndd.Batch, rng: ndd.random.RNG | None, device: str, batch_size: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Notebook 02's preprocessing; without ``rng`` (held-out data) it does not rotate. The
    arguments are literals: capture mode captures a call only when it can prove that its
    arguments are the same on every step (a module-level constant would not do)."""
    images = ndd.decoders.image(jpegs, device=device, output_type=types.GRAY)
    if rng is not None:
        angles = ndd.random.uniform(batch_size=batch_size, range=[-7.5, 7.5], rng=rng)
        images = ndd.rotate(images, angle=angles, keep_size=True, fill_value=0)
    images = ndd.crop_mirror_normalize(
        images, dtype=ndd.float32, output_layout="CHW", mean=[0.1307 * 255], std=[0.3081 * 255]
    )
    if device == "gpu":
        labels = labels.gpu()
    labels = ndd.cast(ndd.squeeze(labels, axes=0), dtype=ndd.int64)
    return images.torch(), labels.torch()


def script_main(run: Callable[[list[str] | None], object], argv: list[str] | None = None) -> int:
    """Run a script's ``run(argv)``: status 0, or 2 with ``error (rank R): ...`` on standard error
    for a UsageError."""
    try:
        run(argv)
    except UsageError as error:
        # one write: the ranks share the output, and lines written in pieces would interleave
        sys.stderr.write(f"error (rank {os.environ.get('RANK', '0')}): {error}\n")
        sys.stderr.flush()
        return 2
    return 0
