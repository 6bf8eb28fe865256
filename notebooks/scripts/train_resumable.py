"""A training loop that can be killed at any step and resumed exactly: notebook 06's script.

It trains notebook 02's MNIST classifier on batches that DALI's dynamic mode prepares, and every
--every steps commits a checkpoint with helpers.toolkit.checkpointing (durable: fsync, rename, manifest
with checksums, the last --keep kept): the model, the optimizer (SGD with momentum), the
learning-rate schedule, torch's and numpy's random states, the step counters, the loss history,
and DALI's state. Run it again with --resume and it continues from the newest whole checkpoint.

Its modes:

* ``--mode eager``: one reader for the whole run, with ``enable_checkpointing=True``; DALI's
  ``ndd.checkpoint.Checkpoint`` holds the reader's and the random generator's state.
* ``--mode capture``: ``next_epoch(capture=True)``, which DALI 2.4 cannot checkpoint. Instead
  every epoch gets a fresh reader and random generator, seeded by the epoch (and the rank), and
  a fresh EvalContext, so that the epoch number alone fixes DALI's state at the epoch's start. A
  checkpoint records the epoch and the steps done in it; a resume in the middle of an epoch
  rebuilds that epoch's reader, skips the batches already trained on (reading them, not
  decoding them, and drawing their random numbers), trains the rest of the epoch eagerly, and
  returns to capture mode at the next epoch.
* ``--mode capture-plain`` (for comparison): capture mode with one reader for all epochs and
  no checkpoints (``--every 0``).

One process, or several under torchrun (gloo on CPUs, NCCL with one GPU per process):

    python notebooks/scripts/train_resumable.py --data LMDB --checkpoints DIR --out run.json
    python -m torch.distributed.run --standalone --nproc-per-node=2 \\
        notebooks/scripts/train_resumable.py --data LMDB --checkpoints DIR --out run.json

Each rank reads its own shard and keeps its own reader state; rank 0 writes the model part and
commits the checkpoint after a barrier. A checkpoint is refused, with a message naming what
differs, by a run with another data set, batch size, DALI version, world size, mode or seed.
Each step prints ``rank R pid P step S`` (so that the notebook can kill the process at a chosen
step). A problem that you can fix ends the process with ``error (rank R): ...`` and status 2.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import math
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

# deterministic cuBLAS on a GPU (with torch.use_deterministic_algorithms): set before CUDA starts
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import numpy as np  # noqa: E402
import nvidia.dali
import nvidia.dali.experimental.dynamic as ndd  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

from helpers.data.paths import relative  # noqa: E402
from helpers.data.results_file import write_json  # noqa: E402
from helpers.toolkit import checkpointing  # noqa: E402
from helpers.toolkit import distributed  # noqa: E402
from helpers.toolkit.capture_guard import CaptureGuard  # noqa: E402
from helpers.toolkit.distributed import UsageError  # noqa: E402
from helpers.toolkit.distributed import preprocess  # noqa: E402
from helpers.toolkit.loaders import captured_ahead  # noqa: E402
from helpers.toolkit.mnist_model import MNISTClassifier  # noqa: E402

MODES = ("eager", "capture", "capture-plain")
NOISE = 0.05  # std of the Gaussian noise that torch adds to the images: a use of torch's RNG


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="the training LMDB (Caffe2 format)")
    parser.add_argument("--checkpoints", help="checkpoint folder (needed unless --every 0)")
    parser.add_argument("--out", help="results JSON that rank 0 writes (and <out>.weights.pt)")
    parser.add_argument("--resume", action="store_true",
                        help="continue from the newest whole checkpoint in --checkpoints")
    parser.add_argument("--mode", choices=MODES, default="eager")
    parser.add_argument("--device", choices=("gpu", "cpu"), default="cpu")
    parser.add_argument("--batch-size", type=int, default=64, help="samples per process per step")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--every", type=int, default=20, help="steps between checkpoints; 0: none")
    parser.add_argument("--keep", type=int, default=2, help="checkpoints kept")
    parser.add_argument("--lr", type=float, default=0.05, help="SGD learning rate at the start")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--num-threads", type=int, default=2, help="DALI CPU threads per process")
    parser.add_argument("--torch-threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--timeout", type=float, default=120,
                        help="seconds a collective may wait for the other ranks before failing")
    parser.add_argument("--quiet", action="store_true", help="no line per step")
    args = parser.parse_args(argv)
    distributed.at_least_one(args, ("batch_size", "epochs", "keep", "num_threads", "torch_threads"))
    if args.every < 0:
        raise UsageError(f"--every must be 0 (no checkpoints) or more, not {args.every}")
    if args.every and not args.checkpoints:
        raise UsageError("--every N needs --checkpoints DIR, the folder to write them to")
    if args.mode == "capture-plain" and (args.every or args.resume):
        raise UsageError("--mode capture-plain cannot checkpoint (DALI 2.4 cannot checkpoint a "
                         "capture loop): use --every 0 without --resume, or --mode capture")
    if args.resume and not args.checkpoints:
        raise UsageError("--resume needs --checkpoints DIR, the folder of the interrupted run")
    distributed.lmdb_folder("--data", args.data)
    return args


def barrier(world: int) -> None:
    if world > 1:
        dist.barrier()


def to_bytes(obj: object) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def from_bytes(data: bytes) -> dict:
    return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)


def numpy_state() -> dict:
    name, keys, pos, has_gauss, cached = np.random.get_state()
    return {"name": name, "keys": torch.from_numpy(keys.astype(np.int64)), "pos": pos,
            "has_gauss": has_gauss, "cached": cached}


def set_numpy_state(state: dict) -> None:
    np.random.set_state((state["name"], state["keys"].numpy().astype(np.uint32), state["pos"],
                         state["has_gauss"], state["cached"]))


def weights_digest(model: torch.nn.Module) -> str:
    digest = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """F.cross_entropy up to rounding, written with one_hot: on a GPU, PyTorch's nll_loss kernel
    has no deterministic version (torch.use_deterministic_algorithms refuses it)."""
    picked = F.log_softmax(logits, dim=1) * F.one_hot(targets, logits.shape[1])
    return -picked.sum(dim=1).mean()


class Trainer:
    """The model, the optimizer, the schedule and DALI's objects of one process."""

    def __init__(self, args: argparse.Namespace, rank: int, local_rank: int, world: int,
                 ctx: ndd.EvalContext | None = None) -> None:
        """``ctx``: the EvalContext of eager mode and capture-plain (None: a new one). Trainers that
        take turns in one thread (notebook 06's benchmark) share one: DALI's eager reader keeps
        its context entered between batches, and DALI's stack of contexts must stay in order."""
        self.args, self.rank, self.world = args, rank, world
        self.on_gpu = args.device == "gpu"
        self.device = torch.device("cuda", local_rank) if self.on_gpu else torch.device("cpu")
        self.local_rank = local_rank
        torch.set_num_threads(args.torch_threads)
        if self.on_gpu:  # warn, not fail, should an operation have no deterministic version
            torch.use_deterministic_algorithms(True, warn_only=True)
        self.records = ndd.readers.Caffe2(path=args.data).get_metadata()["epoch_size"]
        if self.records < world * args.batch_size:
            raise UsageError(f"the data set has {self.records} records, fewer than one step of "
                             f"{world} process(es) x batch {args.batch_size} needs")
        # every rank the same number of steps: the shards are equal, the last batch padded
        self.steps_per_epoch = math.ceil(math.ceil(self.records / world) / args.batch_size)
        self.total_steps = args.epochs * self.steps_per_epoch
        torch.manual_seed(args.seed)  # the same initial weights on every rank
        np.random.seed(args.seed + rank)
        self.model = MNISTClassifier().to(self.device)
        self.net = DistributedDataParallel(self.model, device_ids=[local_rank] if self.on_gpu
                                           else None) if world > 1 else self.model
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=args.lr, momentum=0.9)
        # the learning rate halves every epoch, stepped per step
        self.schedule = torch.optim.lr_scheduler.StepLR(self.optimizer,
                                                        step_size=self.steps_per_epoch, gamma=0.5)
        torch.manual_seed(args.seed + 1000 + rank)  # each rank its own noise
        self.step = 0  # steps done
        self.losses: list[float] = []  # this rank's loss of every step done
        self.pending: list[torch.Tensor] = []  # losses not yet fetched from the device
        self.save_seconds: list[float] = []
        self.fast_forward = 0  # batches skipped after a resume in the middle of an epoch (capture)
        self.captured: list[str] | None = None  # what the capture loops' guards saw captured
        self.resumed_at: float | None = None  # when restore() began (a resumed run)
        self.first_step_after_resume: float | None = None  # from then to its first step done
        self.dali = ndd.checkpoint.Checkpoint()  # eager mode: the reader's and the RNG's state
        self.reader: ndd.readers.Caffe2 | None = None  # eager and capture-plain: one for the run
        self.rng: ndd.random.RNG | None = None
        self.ctx = ctx
        self.batches: Iterator[tuple[ndd.Batch, ndd.Batch]] | None = None  # eager mode's stream
        self.guard: CaptureGuard | None = None  # capture-plain's

    # --- DALI -------------------------------------------------------------------------------

    def context(self) -> ndd.EvalContext:
        if self.on_gpu:
            return ndd.EvalContext(device_id=self.local_rank, num_threads=self.args.num_threads)
        return ndd.EvalContext(num_threads=self.args.num_threads)

    def eager_reader(self) -> None:
        """One reader for the run, sharded: each rank reads 1/world of the records and moves to
        the next contiguous shard every epoch (DALI's default, ``stick_to_shard=False``), shuffling
        within its buffer (where ``DistributedSampler.set_epoch`` reshuffles the whole set)."""
        checkpoints = bool(self.args.every or self.args.resume)
        self.reader = ndd.readers.Caffe2(
            path=self.args.data, shard_id=self.rank, num_shards=self.world, pad_last_batch=True,
            random_shuffle=True, seed=self.args.seed + self.rank, enable_checkpointing=checkpoints)
        self.rng = ndd.random.RNG(seed=self.args.seed + self.rank)
        if checkpoints:
            self.dali.register(self.reader, "reader")  # a loaded checkpoint's state applies here
            self.dali.register(self.rng, "rng")

    def epoch_reader(self, epoch: int) -> tuple[ndd.readers.Caffe2, ndd.random.RNG]:
        """Capture mode: the reader and the RNG of ``epoch``, fixed by the epoch number alone.
        The shard rotates with the epoch as in eager mode, made explicit (stick_to_shard)."""
        seed = self.args.seed + 7919 * (epoch + 1) + self.rank
        reader = ndd.readers.Caffe2(
            path=self.args.data, shard_id=(self.rank + epoch) % self.world, num_shards=self.world,
            stick_to_shard=True, pad_last_batch=True, random_shuffle=True, seed=seed)
        return reader, ndd.random.RNG(seed=seed)

    def skip(self, rng: ndd.random.RNG) -> None:
        """Draw what preprocess draws for one batch, and drop it: the RNG moves on as if the
        batch had been preprocessed."""
        ndd.random.uniform(batch_size=self.args.batch_size, range=[-7.5, 7.5], rng=rng)

    # --- the step ---------------------------------------------------------------------------

    def train_step(self, jpegs: ndd.Batch, labels: ndd.Batch,
                   rng: ndd.random.RNG) -> tuple[torch.Tensor, torch.Tensor]:
        images, targets = preprocess(jpegs, labels, rng, self.args.device, self.args.batch_size)
        return self.fit(images, targets)

    def fit(self, images: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The step on a prepared batch: torch's noise, the forward and backward passes, SGD, the
        schedule; a checkpoint every ``--every`` steps."""
        images = images + NOISE * torch.randn(images.shape, device=images.device)
        self.optimizer.zero_grad(set_to_none=True)
        loss = cross_entropy(self.net(images), targets)
        loss.backward()
        self.optimizer.step()
        self.schedule.step()
        self.pending.append(loss.detach())
        self.step += 1
        if self.resumed_at is not None and self.first_step_after_resume is None:
            self.fetch_losses()  # waits for the step: DALI applied the reader's state at its batch
            self.first_step_after_resume = time.perf_counter() - self.resumed_at
        if not self.args.quiet:
            print(f"rank {self.rank} pid {os.getpid()} step {self.step}", flush=True)
        if self.args.every and self.step % self.args.every == 0 and self.step < self.total_steps:
            self.save()
        return images, targets

    def fetch_losses(self) -> None:
        if self.pending:
            self.losses += torch.stack(self.pending).cpu().tolist()
            self.pending = []

    def eager_batches(self) -> Iterator[tuple[ndd.Batch, ndd.Batch]]:
        """The reader's batches as one stream: after a resume, DALI's next_epoch() runs a whole
        epoch's length from the restored position, across the epoch boundary, so the loop
        counts its own steps."""
        while True:
            yield from self.reader.next_epoch(batch_size=self.args.batch_size)

    def epoch(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """Train from the current step to the end of its epoch; yields each step's batch, once
        trained on. Eager mode and ``capture-plain`` keep one reader, RNG and EvalContext for
        the run; ``capture`` makes them anew for the epoch. The loop is also the benchmark's
        loader (``epoch()`` and ``close()``, what ``helpers.toolkit.harness`` times)."""
        epoch, done = divmod(self.step, self.steps_per_epoch)
        end = (epoch + 1) * self.steps_per_epoch
        if self.args.mode == "eager":
            if self.ctx is None:
                self.ctx = self.context()
            with self.ctx:
                if self.reader is None:
                    self.eager_reader()
                if self.batches is None:
                    self.batches = self.eager_batches()
                while self.step < end:
                    yield self.train_step(*next(self.batches), self.rng)
                if self.step >= self.total_steps:
                    self.batches.close()  # the reader's iterator leaves its context now
            self.fetch_losses()
            return
        if self.args.mode == "capture-plain":  # one reader, RNG and EvalContext for the run
            if self.ctx is None:
                self.ctx = self.context()
            with self.ctx:
                if self.reader is None:
                    self.reader, self.rng = self.epoch_reader(0)
                    self.guard = CaptureGuard("capture-plain")  # raises if anything runs eagerly
            ctx, reader, rng, guard = self.ctx, self.reader, self.rng, self.guard
        else:  # a fresh EvalContext, reader and RNG, fixed by the epoch number
            ctx, (reader, rng) = self.context(), self.epoch_reader(epoch)
            guard = CaptureGuard(f"capture, epoch {epoch}")  # one guard per reader
        capture = done == 0  # a resume in the middle of an epoch: its rest eagerly, after the skip
        with ctx:
            batches = reader.next_epoch(batch_size=self.args.batch_size, ctx=ctx, capture=capture)
            for i, (jpegs, labels) in enumerate(guard(batches) if capture else batches):
                if i < done:
                    self.skip(rng)
                    self.fast_forward += 1
                    continue
                yield self.train_step(jpegs, labels, rng)
        if capture:
            self.captured = guard.captured
        self.fetch_losses()

    @property
    def ahead(self) -> int:
        """Batches of the next epoch that DALI already has under way (a capture loop over one
        reader runs on across an epoch's end): ``helpers.toolkit.harness`` hands them over untimed."""
        return captured_ahead(self.reader) if self.args.mode == "capture-plain" else 0

    def close(self) -> None:
        """Eager mode's stream, when it stopped inside DALI's epoch (a benchmark stops a trainer
        between epochs of its own), is closed here, under its context: DALI 2.4.0's reader keeps
        its EvalContext entered until its epoch ends, and the garbage collector closing it later,
        in another thread or under another context, fails EvalContext.__exit__'s assertion
        ("Exception ignored in: <generator object Reader._batches ...>"). DALI's threads end with
        the reader."""
        if self.batches is not None:
            with self.ctx:
                self.batches.close()
            self.batches = None

    def run(self) -> list[dict]:
        """Train to the last step; returns each epoch's wall time (epochs done in this run)."""
        epochs = []
        while self.step < self.total_steps:
            start, first = time.perf_counter(), self.step
            for _ in self.epoch():
                pass
            epochs.append(self.epoch_record(first, start))
        return epochs

    def epoch_record(self, first: int, start: float) -> dict:
        """The epoch just done (``epoch()`` ended by fetching its losses: its work is done)."""
        return {"epoch": (self.step - 1) // self.steps_per_epoch, "steps": self.step - first,
                "seconds": time.perf_counter() - start}

    # --- checkpoints ------------------------------------------------------------------------

    def compat(self) -> dict:
        """What a checkpoint is only valid for."""
        return {"data": relative(Path(self.args.data).resolve()), "records": self.records,
                "batch_size": self.args.batch_size, "world_size": self.world,
                "dali": nvidia.dali.__version__, "mode": self.args.mode, "seed": self.args.seed}

    def rank_state(self) -> dict:
        state = {"torch_rng": torch.get_rng_state(), "numpy_rng": numpy_state(),
                 "losses": torch.tensor(self.losses, dtype=torch.float64)}
        if self.on_gpu:
            state["cuda_rng"] = torch.cuda.get_rng_state(self.device)
        if self.args.mode == "eager":
            self.dali.collect()
            state["dali"] = self.dali.serialize()
        return state

    def save(self) -> None:
        start = time.perf_counter()
        self.fetch_losses()
        root, step = self.args.checkpoints, self.step
        if self.rank == 0:
            checkpointing.prepare(root, step)
        barrier(self.world)
        checkpointing.write_part(root, step, f"rank-{self.rank}.pt", to_bytes(self.rank_state()))
        if self.rank == 0:
            checkpointing.write_part(root, step, "model.pt", to_bytes({
                "model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                "schedule": self.schedule.state_dict(), "step": self.step}))
        barrier(self.world)  # every part is on the disk
        if self.rank == 0:
            parts = ["model.pt"] + [f"rank-{r}.pt" for r in range(self.world)]
            checkpointing.commit(root, step, self.compat(), parts, keep=self.args.keep,
                                 extra={"epoch": step // self.steps_per_epoch})
        barrier(self.world)
        self.save_seconds.append(time.perf_counter() - start)

    def restore(self) -> dict:
        """Load the newest whole checkpoint; returns what the notebook reports about it. A fresh
        reader registered in DALI's checkpoint only keeps the state: DALI applies it when the
        reader makes its first batch, so ``first_step_after_resume`` times that too."""
        start = self.resumed_at = time.perf_counter()
        say = print if self.rank == 0 else (lambda message: None)
        try:
            loaded = checkpointing.load_latest(self.args.checkpoints, self.compat(), say=say,
                                               shown=relative)
        except checkpointing.CheckpointError as error:
            raise UsageError(str(error)) from error
        common = from_bytes(loaded.read("model.pt"))
        mine = from_bytes(loaded.read(f"rank-{self.rank}.pt"))
        self.model.load_state_dict(common["model"])
        self.optimizer.load_state_dict(common["optimizer"])
        self.schedule.load_state_dict(common["schedule"])
        self.step = common["step"]
        self.losses = mine["losses"].tolist()
        torch.set_rng_state(mine["torch_rng"])
        if self.on_gpu:
            torch.cuda.set_rng_state(mine["cuda_rng"], self.device)
        set_numpy_state(mine["numpy_rng"])
        if self.args.mode == "eager":
            self.dali.deserialize(mine["dali"])
            self.eager_reader()  # a fresh reader and RNG take the saved state when registered
        seconds = time.perf_counter() - start
        if self.rank == 0:
            print(f"resumed from {loaded.path.name} (step {self.step}) in {seconds * 1000:.1f} ms",
                  flush=True)
        return {"step": loaded.step, "checkpoint": loaded.path.name, "skipped": loaded.skipped,
                "seconds": seconds}


def train(args: argparse.Namespace, rank: int, local_rank: int, world: int) -> dict:
    trainer = Trainer(args, rank, local_rank, world)
    if args.checkpoints and not args.resume and checkpointing.checkpoints(args.checkpoints):
        raise UsageError(f"{relative(args.checkpoints)} already holds checkpoints: pass --resume "
                         "to continue from them, or give an empty folder to start anew")
    resumed = trainer.restore() if args.resume else None
    if rank == 0:
        print(f"{args.mode}: {world} process(es) on {args.device}, {trainer.records:,} records, "
              f"{trainer.steps_per_epoch} steps per epoch, {trainer.total_steps} steps, "
              + (f"a checkpoint every {args.every} steps" if args.every else "no checkpoints"),
              flush=True)
    epochs = trainer.run()
    if resumed is not None:
        resumed["to_first_step_seconds"] = trainer.first_step_after_resume
    losses = trainer.losses
    every_rank = [losses]
    if world > 1:
        every_rank = [None] * world
        dist.all_gather_object(every_rank, losses)
    return {
        "mode": args.mode, "world_size": world, "device": args.device, "records": trainer.records,
        "batch_size": args.batch_size, "steps_per_epoch": trainer.steps_per_epoch,
        "steps": trainer.total_steps, "every": args.every, "resumed": resumed,
        "losses": every_rank, "weights_sha256": weights_digest(trainer.model),
        "epochs": epochs, "save_seconds": trainer.save_seconds,
        "fast_forward_batches": trainer.fast_forward, "captured_operators": trainer.captured,
        "model": trainer.model,
    }


def run(argv: list[str] | None = None) -> dict:
    """Train; returns rank 0's results and writes them to --out (rank 0). Raises UsageError."""
    args = parse_args(argv)
    rank, local_rank, world = distributed.start_process_group(args.device, args.timeout,
                                                  script=Path(__file__).name, alone=True)
    results = train(args, rank, local_rank, world)
    model = results.pop("model")
    if rank == 0 and args.out:
        torch.save(model.state_dict(), Path(args.out).with_suffix(".weights.pt"))
        write_json(Path(args.out), results)
    barrier(world)
    if world > 1:
        dist.destroy_process_group()
    return results


if __name__ == "__main__":
    sys.exit(distributed.script_main(run))
