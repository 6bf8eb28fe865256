"""helpers.toolkit.torchrun, the launcher of notebooks 04 and 06: the environment it gives torchrun,
its commands, its refusals before a launch, the root cause of a failed one, time limits that stop
every child, lines handed over as they come, rendezvous on one machine; helpers.data.lmdb_subset."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from helpers.data.data_sources import locate_data
from helpers.data.lmdb_subset import first_records
from helpers.data.lmdb_subset import record_count
from helpers.data.paths import REPO_ROOT
from helpers.toolkit.parameters import ParameterError
from helpers.toolkit.torchrun import MULTICAST_OFF
from helpers.toolkit.torchrun import Launch
from helpers.toolkit.torchrun import LaunchError
from helpers.toolkit.torchrun import check_gpus_for
from helpers.toolkit.torchrun import display_command
from helpers.toolkit.torchrun import free_port
from helpers.toolkit.torchrun import launch_environment
from helpers.toolkit.torchrun import local_rendezvous
from helpers.toolkit.torchrun import run_launches
from helpers.toolkit.torchrun import shown_line
from helpers.toolkit.torchrun import torchrun_command

SCRIPT = REPO_ROOT / "notebooks" / "scripts" / "train_ddp.py"

# --- the launcher ----------------------------------------------------------------------------


def test_launch_environment_keeps_multicast_off_and_finds_helpers(monkeypatch) -> None:
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "1")  # the user's own value wins (setdefault)
    monkeypatch.delenv("TORCH_SYMM_MEM_DISABLE_MULTICAST", raising=False)
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    env = launch_environment()
    assert env["NCCL_NVLS_ENABLE"] == "1"
    assert env["TORCH_SYMM_MEM_DISABLE_MULTICAST"] == MULTICAST_OFF["TORCH_SYMM_MEM_DISABLE_MULTICAST"]
    assert env["PYTHONPATH"].split(os.pathsep) == [str(REPO_ROOT), "/elsewhere"]


def test_torchrun_commands_for_one_and_several_machines() -> None:
    one = torchrun_command(SCRIPT, ["--epochs", 2], 2)
    assert one[:3] == [sys.executable, "-m", "torch.distributed.run"]
    assert "--standalone" in one and one[-2:] == ["--epochs", "2"]
    two = torchrun_command(SCRIPT, [], 1, nnodes=2, rdzv_endpoint="node1:29400")
    assert {"--nnodes=2", "--rdzv-backend=c10d", "--rdzv-endpoint=node1:29400"} <= set(two)
    assert display_command(two).startswith("python -m torch.distributed.run ")
    assert " notebooks/scripts/train_ddp.py" in display_command(two)
    with pytest.raises(ParameterError, match="rdzv_endpoint"):
        torchrun_command(SCRIPT, [], 1, nnodes=2)


def test_more_processes_than_gpus_is_refused_before_launch() -> None:
    check_gpus_for(2, 2)
    with pytest.raises(ParameterError, match="3 processes on one machine need 3 GPUs"):
        check_gpus_for(3, 2)
    with pytest.raises(ParameterError, match='Use device="cpu"'):
        check_gpus_for(1, 0)


def test_root_cause_names_the_first_failed_rank() -> None:
    launch = Launch(
        ["torchrun"],
        lines=[
            "[1]:",
            "  rank      : 0 (local_rank: 0)",
            "  exitcode  : -15 (pid: 11)",
            "Root Cause (first observed failure):",
            "[0]:",
            "  rank      : 1 (local_rank: 1)",
            "  exitcode  : 3 (pid: 12)",
            "error (rank 0): no data",
            "error (rank 1): no data",
        ],
    )
    assert launch.root_cause == "rank 1 exited with status 3 first"
    assert launch.errors == ["error: no data"]


@pytest.mark.slow
def test_a_launch_that_runs_too_long_is_stopped_with_its_children(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    code = (
        "import subprocess, sys, time; child = subprocess.Popen(['sleep', '120']); "
        f"open({str(pid_file)!r}, 'w').write(str(child.pid)); print('started', flush=True); "
        "time.sleep(120)"
    )
    start = time.monotonic()
    with pytest.raises(LaunchError, match="stopped after 3 s"):
        run_launches([[sys.executable, "-c", code]], timeout=3, echo=False)
    assert time.monotonic() - start < 30
    assert not _alive(int(pid_file.read_text()))  # the grandchild is gone too


def _alive(pid: int, wait: float = 5.0) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its parent to reap it does not count)."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return False
        if state == "Z":
            return False
        time.sleep(0.1)
    return True


def test_first_records_copies_a_prefix(tmp_path: Path) -> None:
    source = locate_data(verbose=False).mnist_training
    small = first_records(source, tmp_path / "small", 10)
    import lmdb

    with lmdb.open(str(small), readonly=True, lock=False) as env:
        assert env.stat()["entries"] == 10
    assert record_count(small) == 10 and record_count(source) > 10
    with pytest.raises(ValueError, match="fewer than"):
        first_records(small, tmp_path / "more", 11)
    assert not (tmp_path / "more").exists()


def test_local_rendezvous_is_found_only_for_launches_that_share_one_on_this_machine() -> None:
    def node(endpoint: str) -> list[str]:
        return torchrun_command("train.py", [], 1, nnodes=2, rdzv_endpoint=endpoint)

    assert local_rendezvous([node("localhost:29400")] * 2) == ("localhost", 29400)
    assert local_rendezvous([node("127.0.0.1:5")] * 2) == ("127.0.0.1", 5)
    assert local_rendezvous([node("node1.example.com:29400")] * 2) is None  # another machine's
    assert local_rendezvous([node("localhost:29400")]) is None  # one launch hosts its own
    assert local_rendezvous([node("localhost:1"), node("localhost:2")]) is None
    assert local_rendezvous([torchrun_command("train.py", [], 2)] * 2) is None  # --standalone


def test_shown_lines_name_paths_inside_the_repository_relative_to_it() -> None:
    line = f"frame #0: f + 0x1 (0x7f in {REPO_ROOT / '.venv' / 'lib' / 'libc10.so'})"
    assert shown_line(line) == "frame #0: f + 0x1 (0x7f in .venv/lib/libc10.so)"
    assert shown_line("/usr/lib/libc.so") == "/usr/lib/libc.so"


STORE_CLIENT = """
import sys
from datetime import timedelta
import torch.distributed as dist
host, port = sys.argv[1].split("=", 1)[1].rsplit(":", 1)
store = dist.TCPStore(host, int(port), is_master=False, timeout=timedelta(seconds=10))
store.add("joined", 1)
print("joined", flush=True)
"""


@pytest.mark.slow
def test_launches_that_meet_on_this_machine_find_the_rendezvous_store_held_for_them() -> None:
    """Two "nodes" that only join the store (neither hosts it) reach it, and it outlives the
    first to exit: torchrun's own host would take it down with it, and the other node's
    torchrun would then warn, with a C++ stack trace, that it cannot close the rendezvous."""
    endpoint = f"--rdzv-endpoint=localhost:{free_port()}"
    commands = [[sys.executable, "-c", STORE_CLIENT, endpoint]] * 2
    launches = run_launches(commands, timeout=60, labels=["node A", "node B"], echo=False)
    assert [launch.lines for launch in launches] == [["joined"], ["joined"]]


def test_a_launch_hands_every_line_to_on_line_as_it_comes(tmp_path: Path) -> None:
    """What the notebook's killer relies on: each line reaches ``on_line`` while the process
    runs, so a SIGKILL sent from there stops it mid-way (status -9, a LaunchError)."""
    code = (
        "import os, time\nfor i in range(1, 50):\n    print(f'pid {os.getpid()} step {i}', "
        "flush=True)\n    time.sleep(0.1)"
    )
    seen: list[str] = []

    def on_line(line: str) -> None:
        seen.append(line)
        pid, step = int(line.split()[1]), int(line.split()[3])
        if step == 3:
            os.kill(pid, signal.SIGKILL)

    with pytest.raises(LaunchError) as failed:
        run_launches([[sys.executable, "-c", code]], timeout=60, echo=False, on_line=on_line)
    assert failed.value.launches[0].returncode == -signal.SIGKILL
    assert [line.split()[-1] for line in seen][:3] == ["1", "2", "3"] and len(seen) < 10
