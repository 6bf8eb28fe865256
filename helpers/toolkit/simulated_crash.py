"""A rank that dies in the middle of training, on purpose: notebook 04's demonstration (and its
tests) of what torchrun does when one process of a launch crashes.

Kept out of the training loop that learners read: the script registers the two hidden options
(:func:`add_options`) and calls the per-step hook that :func:`step_hook` gives, which is ``None``
unless ``--fail-rank`` names this rank.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

__all__ = ["EXIT_STATUS", "StepHook", "add_options", "step_hook"]

EXIT_STATUS = 3  # what the crashing rank exits with (torchrun names it)
StepHook = Callable[[int, int], None]  # called with (epoch, step) before each training step


def add_options(parser: argparse.ArgumentParser) -> None:
    """``--fail-rank R`` and ``--fail-at-step S``, hidden from ``--help``: not for training."""
    parser.add_argument("--fail-rank", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--fail-at-step", type=int, default=5, help=argparse.SUPPRESS)


def step_hook(args: argparse.Namespace, rank: int) -> StepHook | None:
    """None, unless ``args.fail_rank`` is ``rank``: then a hook that ends this process abruptly
    at step ``args.fail_at_step`` of the first epoch, as a killed process would end."""
    if args.fail_rank != rank:
        return None
    fail_at_step = args.fail_at_step

    def crash(epoch: int, step: int) -> None:
        if epoch == 0 and step == fail_at_step:
            print(f"rank {rank}: simulated crash at step {step} (--fail-rank)", flush=True)
            os._exit(EXIT_STATUS)  # no cleanup, no goodbye

    return crash
