"""CPU time of this process and of every process it started (notebook 05's loaders).

A DataLoader's workers are other processes (with ``forkserver``, children of the forkserver,
itself a child of this process): ``resource.getrusage(RUSAGE_CHILDREN)`` counts only children
that have ended, and persistent workers have not. psutil reads the CPU time of each live process
of the tree, so a loader's cost is this process (its DALI threads included) plus its workers.
"""

from __future__ import annotations

import psutil


def process_tree_cpu() -> dict[int, float]:
    """User + system CPU seconds of this process and each of its live descendants, by pid."""
    me = psutil.Process()
    seconds: dict[int, float] = {}
    for process in [me, *me.children(recursive=True)]:
        try:
            times = process.cpu_times()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue  # ended (or out of reach) since it was listed
        seconds[process.pid] = times.user + times.system
    return seconds


def cpu_seconds_since(before: dict[int, float]) -> float:
    """CPU seconds that the process tree used since ``before`` (``process_tree_cpu()``): a process
    started since then counts in full; one that ended since then is missing (keep loaders'
    workers alive across a measurement: persistent workers)."""
    return sum(max(0.0, now - before.get(pid, 0.0)) for pid, now in process_tree_cpu().items())
