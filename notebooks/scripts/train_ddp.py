"""Data-parallel training of the MNIST classifier: DALI's dynamic mode feeds each process its own
shard of the LMDB, and PyTorch's DistributedDataParallel (DDP) keeps the model replicas in step.

Launch it with torchrun, one process per GPU (on CPUs, with --device cpu, any number):

    python -m torch.distributed.run --standalone --nproc-per-node=2 notebooks/scripts/train_ddp.py \\
        --data data/dali_extra/db/MNIST/training --test-data data/dali_extra/db/MNIST/testing \\
        --out build/ddp.json

torchrun starts the processes and tells each one RANK (0 .. WORLD_SIZE-1 over all machines),
LOCAL_RANK (its index on this machine: which GPU it uses) and WORLD_SIZE. On several machines,
run the command on each without --standalone, with --nnodes=N --rdzv-backend=c10d
--rdzv-endpoint=HOST:PORT (notebook 04 shows it). The repository must be on PYTHONPATH: this
script imports helpers.

Each rank reads its own shard of the records. By default (DALI's default) every rank moves to the
next shard after each epoch, so over several epochs each rank sees the whole data set, as
`DistributedSampler.set_epoch` gives a PyTorch DataLoader; --stick-to-shard keeps each rank on
one shard. --check-coverage is a debug option: it records which records each rank read and checks
that together they read every record each epoch, none read by two ranks (padding aside: each
rank repeats its own last record); that costs time: leave it off when timing.

Rank 0 writes the results JSON (atomically: the file is complete or absent). A problem that you
can fix ends the process with "error (rank R): ..." naming what to change, and exit status 2.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import nvidia.dali.experimental.dynamic as ndd
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

from helpers.data.results_file import write_json
from helpers.toolkit import distributed
from helpers.toolkit import simulated_crash
from helpers.toolkit.capture_guard import CaptureGuard
from helpers.toolkit.distributed import UsageError
from helpers.toolkit.distributed import preprocess
from helpers.toolkit.loaders import captured_ahead
from helpers.toolkit.mnist_model import MNISTClassifier
from helpers.toolkit.mnist_model import accuracy
from helpers.toolkit.simulated_crash import StepHook


def start_clock(on_gpu: bool) -> float:
    """Every rank starts the clock together, its device idle."""
    if on_gpu:
        torch.cuda.synchronize()
    dist.barrier()
    return time.perf_counter()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="the training LMDB (Caffe2 format)")
    parser.add_argument("--test-data", help="held-out LMDB: rank 0 measures accuracy on it")
    parser.add_argument("--out", help="results JSON that rank 0 writes")
    parser.add_argument("--device", choices=("gpu", "cpu"), default="gpu",
                        help="gpu: one GPU per process (NCCL); cpu: processes on the CPU (gloo)")
    parser.add_argument("--backend", choices=("nccl", "gloo"),
                        help="torch.distributed backend (default: nccl on GPUs, gloo on CPUs)")
    parser.add_argument("--batch-size", type=int, default=64, help="samples per process per step")
    parser.add_argument("--epochs", type=int, default=4,
                        help="epochs; the first is an untimed warm-up, the others are timed "
                             "(but for the batch DALI made ahead of each)")
    parser.add_argument("--lr", type=float, default=0.05, help="SGD learning rate")
    parser.add_argument("--seed", type=int, default=0, help="rank r draws from seed + r")
    parser.add_argument("--num-threads", type=int, default=4, help="DALI CPU threads per process")
    parser.add_argument("--stick-to-shard", action="store_true",
                        help="read the same shard every epoch (DALI's default: the next shard)")
    parser.add_argument("--check-coverage", action="store_true",
                        help="debug: record the records each rank reads and check that the ranks "
                             "together read every one each epoch, none read by two ranks (slower: "
                             "not for timing)")
    parser.add_argument("--timeout", type=float, default=120,
                        help="seconds a collective may wait for the other ranks before failing")
    simulated_crash.add_options(parser)  # notebook 04's rank that dies on purpose: not for training
    args = parser.parse_args(argv)
    distributed.at_least_one(args, ("batch_size", "epochs", "num_threads"))
    if args.epochs < 2:
        raise UsageError("--epochs must be at least 2: the first epoch is an untimed warm-up")
    args.backend = args.backend or ("nccl" if args.device == "gpu" else "gloo")
    return args


def sample_ids(jpegs: ndd.Batch) -> list[str] | torch.Tensor:
    """Which records a batch holds: the reader's source info of each sample, "<path> at key
    <LMDB key>" (keys are unique in an LMDB). Kept as one byte tensor when all have one length."""
    info = ndd.get_property(jpegs, key="source_info")
    try:
        return info.torch().clone()  # one call per batch: cheap enough to run on every step
    except (RuntimeError, TypeError, ValueError):  # source infos of different lengths: one string per sample
        return [bytes(np.asarray(info.select(i))).decode() for i in range(info.batch_size)]


def decode_ids(parts: list[list[str] | torch.Tensor]) -> list[str]:
    ids: list[str] = []
    for part in parts:
        if isinstance(part, torch.Tensor):
            ids.extend(bytes(row).decode() for row in part.numpy())
        else:
            ids.extend(part)
    return [i.rsplit(" at key ", 1)[-1] for i in ids]  # the path is the same for every record


def coverage(per_rank: list[list[str]], data_set_size: int,
             first_epoch: list[set[str]] | None = None) -> dict:
    """The evidence that sharding works: the ranks together saw every record of the data set;
    records seen twice are padding (each rank repeats its own last record), never another
    rank's records. ``shard_of_rank``: which shard each rank read, named by the rank that read
    it in the first epoch (``first_epoch``, each rank's records then)."""
    seen = [set(ids) for ids in per_rank]
    union = set().union(*seen)
    shared = sum(len(a & b) for i, a in enumerate(seen) for b in seen[i + 1:])
    samples = sum(len(ids) for ids in per_rank)
    first = first_epoch or seen
    return {"samples": samples, "distinct": len(union), "data_set": data_set_size,
            "duplicates": samples - len(union), "shared_between_ranks": shared,
            "per_rank": [len(ids) for ids in per_rank],
            "shard_of_rank": [max(range(len(first)), key=lambda s: len(mine & first[s]))
                              for mine in seen],
            "complete": len(union) == data_set_size}


def held_out_accuracy(model: torch.nn.Module, path: str, device: str, batch_size: int = 250) -> float:
    reader = ndd.readers.Caffe2(path=path, pad_last_batch=True, max_batch_size=batch_size)
    size = reader.get_metadata(batch_size)["epoch_size"]

    def batches():
        seen = 0
        for jpegs, labels in reader.next_epoch(batch_size=batch_size):
            images, targets = preprocess(jpegs, labels, None, device, batch_size)
            keep = min(batch_size, size - seen)  # the last batch is padded: drop the repeats
            seen += keep
            yield images[:keep], targets[:keep]

    return accuracy(model, batches())


def train(args: argparse.Namespace, rank: int, local_rank: int, world: int,
          on_step: StepHook | None = None) -> dict:
    """This rank's share of the training; ``on_step(epoch, step)``, if given, runs before each step."""
    on_gpu = args.device == "gpu"
    torch_device = torch.device("cuda", local_rank) if on_gpu else torch.device("cpu")
    # ONE EvalContext for all epochs of the capture loop (DALI refuses to change it)
    ctx = ndd.EvalContext(device_id=local_rank, num_threads=args.num_threads) if on_gpu \
        else ndd.EvalContext(num_threads=args.num_threads)
    with ctx:  # DALI work of this process: on its GPU, with its threads
        distributed.lmdb_folder("--data", args.data)
        distributed.lmdb_folder("--test-data", args.test_data)
        # the records in the data set: every shard needs one (DALI asserts it less helpfully)
        data_set_size = ndd.readers.Caffe2(path=args.data).get_metadata()["epoch_size"]
        if data_set_size < world:
            raise UsageError(f"the data set has {data_set_size} record(s), fewer than the {world} "
                             "processes: some shards would be empty. Use at most "
                             f"{data_set_size} processes (--nproc-per-node, --nnodes), or more data.")
        # this rank's shard: records [s * N / world, (s + 1) * N / world), starting with s = rank;
        # after each epoch the next shard (DALI's default), or the same one with stick_to_shard.
        # random_shuffle picks each batch at random from a buffer of the next initial_fill
        # (default 1,024) records of the shard: a local shuffle, not a permutation of the shard
        reader = ndd.readers.Caffe2(path=args.data, shard_id=rank, num_shards=world,
                                    stick_to_shard=args.stick_to_shard, pad_last_batch=True,
                                    random_shuffle=True, seed=args.seed + rank,
                                    max_batch_size=args.batch_size)
        meta = reader.get_metadata(args.batch_size)
        shard_size = math.ceil(meta["epoch_size_padded"] / world)  # padded: equal on every rank
        steps = math.ceil(shard_size / args.batch_size)
        rng = ndd.random.RNG(seed=args.seed + rank)  # each rank its own random rotations

        torch.manual_seed(args.seed)  # the same initial weights on every rank (DDP also broadcasts)
        model = MNISTClassifier().to(torch_device)
        ddp_model = DistributedDataParallel(model, device_ids=[local_rank] if on_gpu else None)
        optimizer = torch.optim.SGD(ddp_model.parameters(), lr=args.lr)
        if rank == 0:
            print(f"{world} process(es), {args.backend} on {args.device}; {data_set_size:,} records, "
                  f"{steps} steps of {args.batch_size} per process and epoch "
                  f"(global batch {args.batch_size * world})", flush=True)

        epochs, first_epoch = [], None
        guard = CaptureGuard(f"rank {rank}")  # stops the run if capture mode runs an operator eagerly
        for epoch in range(args.epochs):
            # the batches of this epoch that the capture loop made during the last one (DALI 2.4:
            # one) are trained on before the clock starts, and not counted
            ready = captured_ahead(reader)
            if ready >= steps:
                raise UsageError(f"an epoch has {steps} step(s), no more than the {ready} batch(es) "
                                 "DALI makes ahead: use more records or a smaller --batch-size")
            loss_sum, ids = torch.zeros((), device=torch_device), []
            start = start_clock(on_gpu) if ready == 0 else 0.0
            for step, (jpegs, labels) in enumerate(
                    guard(reader.next_epoch(batch_size=args.batch_size, ctx=ctx, capture=True))):
                images, targets = preprocess(jpegs, labels, rng, args.device, args.batch_size)
                if args.check_coverage:  # debug bookkeeping: off in the timed launches
                    ids.append(sample_ids(jpegs))
                if on_step is not None:
                    on_step(epoch, step)
                optimizer.zero_grad(set_to_none=True)
                loss = F.cross_entropy(ddp_model(images), targets)
                loss.backward()  # DDP averages the gradients over the ranks here
                optimizer.step()
                loss_sum += loss.detach()
                if step + 1 == ready:  # the batches made before the clock are trained on: it starts
                    start = start_clock(on_gpu)
            if on_gpu:
                torch.cuda.synchronize()
            seconds = time.perf_counter() - start  # the clock stops here: what follows is untimed
            mine = {"seconds": seconds, "steps": step + 1, "loss_sum": loss_sum.item(),
                    "ids": decode_ids(ids)}
            ranks: list[dict] = [{}] * world
            dist.all_gather_object(ranks, mine)  # rank 0 needs everyone's record
            if any(r["steps"] != steps for r in ranks):
                raise RuntimeError(f"ranks ran {[r['steps'] for r in ranks]} steps, not {steps}")
            epoch_seconds = max(r["seconds"] for r in ranks)
            samples = world * (steps - ready) * args.batch_size
            checked = None
            if args.check_coverage:
                first_epoch = first_epoch or [set(r["ids"]) for r in ranks]
                checked = coverage([r["ids"] for r in ranks], data_set_size, first_epoch)
            epochs.append({
                "epoch": epoch, "seconds": epoch_seconds, "untimed_steps": ready,
                "rank_seconds": [r["seconds"] for r in ranks],
                "samples": samples, "samples_per_s": samples / epoch_seconds,
                "loss": sum(r["loss_sum"] for r in ranks) / (world * steps),
                "coverage": checked})
            if rank == 0:
                e, c = epochs[-1], epochs[-1]["coverage"]
                print(f"epoch {epoch}{' (warm-up)' if epoch == 0 else ''}: {e['seconds']:.2f} s, "
                      f"{e['samples_per_s']:,.0f} samples/s, loss {e['loss']:.4f}"
                      + (f"; saw {c['distinct']:,} of {c['data_set']:,} records "
                         f"(+{c['duplicates']} padding), shard of each rank {c['shard_of_rank']}"
                         if c else ""), flush=True)

        held_out = None
        if rank == 0 and args.test_data:
            held_out = held_out_accuracy(model, args.test_data, args.device)
            print(f"held-out accuracy: {held_out:.2%}", flush=True)
    dist.barrier()  # the others wait while rank 0 measures
    timed = epochs[1:]  # a fixed number of steps: (epochs - 1) x (steps per epoch - untimed steps)
    return {
        "world_size": world, "backend": args.backend, "device": args.device,
        "batch_size_per_process": args.batch_size, "global_batch_size": args.batch_size * world,
        "data_set": data_set_size, "steps_per_epoch": steps,
        "timed_steps": sum(steps - e["untimed_steps"] for e in timed),
        "stick_to_shard": args.stick_to_shard, "coverage_checked": args.check_coverage,
        "gpus": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        if on_gpu else [],
        "captured_operators": guard.captured, "epochs": epochs,
        "samples_per_s": sum(e["samples"] for e in timed) / sum(e["seconds"] for e in timed),
        "held_out_accuracy": held_out,
    }


def run(argv: list[str] | None = None) -> dict:
    """Train; rank 0 writes the results to --out. Raises UsageError."""
    args = parse_args(argv)
    rank, local_rank, world = distributed.start_process_group(args.device, args.timeout, args.backend,
                                                  script=Path(__file__).name)
    results = train(args, rank, local_rank, world, simulated_crash.step_hook(args, rank))
    if rank == 0 and args.out:
        results["arguments"] = {k: v for k, v in vars(args).items() if v is not None}
        write_json(Path(args.out), results)
    dist.destroy_process_group()
    return results


if __name__ == "__main__":
    sys.exit(distributed.script_main(run))
