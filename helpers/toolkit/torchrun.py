"""Launching a training script with torchrun from a notebook or a test: the right interpreter, the
environment it needs, its output streamed as it comes, a time limit, and no process left behind.

``torchrun`` is ``python -m torch.distributed.run``; running it as a module of ``sys.executable``
works where the ``torchrun`` console script is not on the PATH (or belongs to another Python).
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Sequence
from contextlib import ExitStack
from contextlib import contextmanager
from dataclasses import dataclass
from dataclasses import field
from datetime import timedelta
from pathlib import Path

from helpers.data.errors import ParameterError
from helpers.data.paths import REPO_ROOT
from helpers.data.paths import relative

# NVLink multicast stays off in every process we start (NCCL's NVLS algorithms, PyTorch's
# symmetric memory, NVSHMEM): a workaround for GPU hosts without NVLink multicast, the suite's
# two-GPU runner among them, where NCCL would fail or hang trying it. A value set in the
# environment wins (launch_environment), so a host with multicast can turn it back on
MULTICAST_OFF = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}


class LaunchError(RuntimeError):
    """A launch failed or ran out of time; the message says which and what the processes said.
    ``launches`` holds each launch's output."""

    def __init__(self, message: str, launches: Sequence[Launch] = ()) -> None:
        super().__init__(message)
        self.launches = list(launches)


@dataclass
class Launch:
    command: list[str]
    returncode: int | None = None
    seconds: float = 0.0
    lines: list[str] = field(default_factory=list)

    @property
    def errors(self) -> list[str]:
        """Why the processes stopped, as the script says it (``error (rank R): ...``), each
        message once."""
        found = (re.match(r"(?:\[[\w ]+\] )?error(?: \(rank [^)]*\))?: (.*)", line) for line in self.lines)
        return list(dict.fromkeys(f"error: {m[1]}" for m in found if m))  # once, not per rank

    @property
    def root_cause(self) -> str | None:
        """torchrun's "Root Cause (first observed failure)": which rank failed first, and how."""
        text = "\n".join(self.lines)
        found = re.search(r"Root Cause.*?rank\s*:\s*(\d+).*?exitcode\s*:\s*(-?\d+)", text, re.DOTALL)
        if not found:
            return None
        rank, code = int(found[1]), int(found[2])
        how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
        return f"rank {rank} {how} first"


def launch_environment(threads_per_process: int = 1) -> dict[str, str]:
    """This process's environment, plus what the launched processes need: the repository on
    ``PYTHONPATH`` (the script imports ``helpers``), unbuffered output, multicast off, and
    ``OMP_NUM_THREADS`` (torchrun would set 1 itself, with a warning)."""
    env = dict(os.environ)
    for name, value in MULTICAST_OFF.items():
        env.setdefault(name, value)
    paths = [str(REPO_ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("OMP_NUM_THREADS", str(threads_per_process))
    return env


def free_port() -> int:
    """A TCP port on this machine that nothing listens on now (for a rendezvous)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun_command(
    script: str | Path,
    script_args: Sequence[str],
    nproc_per_node: int,
    *,
    nnodes: int = 1,
    rdzv_endpoint: str | None = None,
    rdzv_id: str = "dali-tutorial",
) -> list[str]:
    """The torchrun command line. One machine: ``--standalone`` (a rendezvous on a free local
    port). Several (``nnodes > 1``): the c10d rendezvous at ``rdzv_endpoint`` (host:port of the
    first node), which numbers the nodes as they join."""
    command = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={nproc_per_node}"]
    if nnodes == 1:
        command.append("--standalone")
    else:
        if not rdzv_endpoint:
            raise ParameterError("nnodes > 1 needs rdzv_endpoint: host:port of the first node")
        command += [
            f"--nnodes={nnodes}",
            "--rdzv-backend=c10d",
            f"--rdzv-endpoint={rdzv_endpoint}",
            f"--rdzv-id={rdzv_id}",
        ]
    return command + [str(script), *map(str, script_args)]


def display_command(command: Sequence[str]) -> str:
    """The command as you would type it: ``python`` for this interpreter, paths inside the
    repository relative to it (the launches run in the repository's root)."""

    def shown(arg: str) -> str:
        if arg == sys.executable:
            return "python"
        return relative(arg) if os.path.isabs(arg) else arg

    return shlex.join(shown(str(a)) for a in command)


def check_gpus_for(nproc_per_node: int, gpus: int) -> None:
    """One process per GPU: fail before launching when there are fewer GPUs than processes."""
    if gpus == 0:
        raise ParameterError(
            'device="gpu" runs one process per GPU, and this machine has no GPU that DALI can '
            'use. Use device="cpu": the processes then train on the CPU with gloo.'
        )
    if nproc_per_node > gpus:
        raise ParameterError(
            f"{nproc_per_node} processes on one machine need {nproc_per_node} GPUs (one each), "
            f"and this machine has {gpus}. Use at most {gpus} processes per machine, or "
            'device="cpu" (gloo, any number of processes).'
        )


LOCAL_HOSTS = ("localhost", "127.0.0.1")


def local_rendezvous(commands: Sequence[Sequence[str]]) -> tuple[str, int] | None:
    """The rendezvous that several launches share on this machine (one ``--rdzv-endpoint`` on
    ``localhost`` for all of them), as ``(host, port)``; None for anything else."""
    endpoints = {
        arg.split("=", 1)[1]
        for command in commands
        for arg in command
        if str(arg).startswith("--rdzv-endpoint=")
    }
    if len(commands) < 2 or len(endpoints) != 1:
        return None
    host, _, port = endpoints.pop().rpartition(":")
    return (host, int(port)) if host in LOCAL_HOSTS and port.isdigit() else None


@contextmanager
def rendezvous_store(host: str, port: int, timeout: float = 60.0) -> Iterator[None]:
    """Host the c10d rendezvous store at ``host:port`` in this process while the block runs.

    Each ``torchrun`` of a c10d rendezvous on its own host tries to host the store itself and
    falls back to joining it when the port is taken. When two "nodes" share one machine and the
    one that hosts the store exits first, the other can no longer close the rendezvous: torchrun
    then prints a ``RendezvousConnectionError`` warning with a C++ stack trace, although every
    process exited with 0. Held here, the store outlives both launches."""
    import torch.distributed as dist  # only the launches that need a store pay for the import

    store = dist.TCPStore(
        host,
        port,
        is_master=True,
        multi_tenant=True,
        wait_for_workers=False,
        timeout=timedelta(seconds=timeout),
    )
    try:
        yield
    finally:
        del store


def shown_line(line: str) -> str:
    """A line of a launch's output as the notebook shows it: paths inside the repository
    relative to it (torch's C++ stack traces name the libraries of the virtual environment)."""
    return line.replace(f"{REPO_ROOT}{os.sep}", "")


def _stream(
    process: subprocess.Popen, launch: Launch, prefix: str, echo: bool, on_line: Callable[[str], None] | None
) -> None:
    assert process.stdout is not None
    for line in process.stdout:
        line = line.rstrip("\n")
        launch.lines.append(line)
        if echo:
            print(f"{prefix}{shown_line(line)}", flush=True)
        if on_line is not None:
            on_line(line)


def _stop_group(process: subprocess.Popen, grace: float = 10.0) -> None:
    """Stop the launch's process group (torchrun and the workers it started): SIGTERM, then
    SIGKILL for whatever is left after ``grace`` seconds."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                os.killpg(process.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)


def run_launches(
    commands: Sequence[Sequence[str]],
    *,
    timeout: float,
    labels: Sequence[str] = (),
    env: dict[str, str] | None = None,
    echo: bool = True,
    on_line: Callable[[str], None] | None = None,
) -> list[Launch]:
    """Run the commands at the same time (e.g. one torchrun per "node"), each in its own process
    group, echoing their output line by line (prefixed by the label when there are several).
    After ``timeout`` seconds whatever still runs is stopped. When all have ended, every process
    they started is gone. Raises :class:`LaunchError` unless all exit with 0. ``on_line`` is
    called with every line of output as it comes (from a reader thread). Launches that meet at
    a rendezvous on this machine find its store held by this process (:func:`rendezvous_store`)."""
    env = env or launch_environment()
    labels = list(labels) or [f"launch {i}" for i in range(len(commands))]
    if len(labels) != len(commands):
        raise ValueError(f"{len(commands)} commands but {len(labels)} labels")
    with ExitStack() as stack:
        if (shared := local_rendezvous(commands)) is not None:
            stack.enter_context(rendezvous_store(*shared))
        return _run(commands, timeout, labels, env, echo, on_line)


def _run(
    commands: Sequence[Sequence[str]],
    timeout: float,
    labels: list[str],
    env: dict[str, str],
    echo: bool,
    on_line: Callable[[str], None] | None,
) -> list[Launch]:
    launches, processes, threads = [], [], []
    start = time.monotonic()
    for command, label in zip(commands, labels, strict=True):
        launch = Launch(list(command))
        process = subprocess.Popen(
            list(command),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            cwd=REPO_ROOT,
            start_new_session=True,
        )
        prefix = f"[{label}] " if len(commands) > 1 else ""
        thread = threading.Thread(target=_stream, args=(process, launch, prefix, echo, on_line), daemon=True)
        thread.start()
        launches.append(launch)
        processes.append(process)
        threads.append(thread)
    timed_out = False
    try:
        for process in processes:
            remaining = max(0.1, timeout - (time.monotonic() - start))
            try:
                process.wait(remaining)
            except subprocess.TimeoutExpired:
                timed_out = True
                break
    finally:
        for process in processes:  # also on a timeout or a KeyboardInterrupt
            _stop_group(process, grace=0.0 if timed_out else 10.0)
            process.wait()
        for thread in threads:
            thread.join(5)
    for launch, process in zip(launches, processes, strict=True):
        launch.returncode = process.returncode
        launch.seconds = time.monotonic() - start
    if timed_out:
        raise LaunchError(
            f"stopped after {timeout:.0f} s (the time limit): "
            f"{', '.join(labels)} had not finished. Every process was stopped; a "
            "process that waits for a rank that never comes fails after the "
            "collective timeout (--timeout); raise the limit for larger runs.",
            launches,
        )
    failed = [(label, launch) for label, launch in zip(labels, launches, strict=True) if launch.returncode]
    if failed:
        reasons = []
        for label, launch in failed:
            why = [launch.root_cause] if launch.root_cause else []
            why += launch.errors
            reasons.append(
                f"{label} exited with status {launch.returncode}" + (f" ({'; '.join(why)})" if why else "")
            )
        raise LaunchError(
            "; ".join(reasons) + ". torchrun stopped the other processes. Fix "
            "what the failing process reports in its output, then launch again.",
            launches,
        )
    return launches


def run_torchrun(
    script: str | Path,
    script_args: Sequence[str],
    nproc_per_node: int,
    *,
    timeout: float,
    label: str = "torchrun",
    echo: bool = True,
    on_line: Callable[[str], None] | None = None,
) -> Launch:
    """One torchrun launch on this machine (``--standalone``)."""
    command = torchrun_command(script, script_args, nproc_per_node)
    return run_launches([command], timeout=timeout, labels=[label], echo=echo, on_line=on_line)[0]
