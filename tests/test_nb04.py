"""Notebook 04 (scaling out), CPU tier: the notebook at CI scale (2 gloo processes, a two-"node"
launch, a rank that dies), the training script's refusals, and the launcher's guarantees."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
import time
from pathlib import Path

import nbformat
import pytest
from conftest import headline_output

from helpers.benchmarking import interleaved_order, rate_interval, ratio
from helpers.data_sources import locate_data
from helpers.devices import gpu_available
from helpers.distributed import script_main
from helpers.lmdb_subset import first_records, record_count
from helpers.parameters import ParameterError
from helpers.paths import REPO_ROOT
from helpers.torchrun import (
    MULTICAST_OFF,
    Launch,
    LaunchError,
    check_gpus_for,
    display_command,
    free_port,
    launch_environment,
    local_rendezvous,
    run_launches,
    run_torchrun,
    shown_line,
    torchrun_command,
)
from tools import suite

NOTEBOOK = REPO_ROOT / "notebooks" / "04-scaling-out.ipynb"
SCRIPT = REPO_ROOT / "notebooks" / "scripts" / "train_ddp.py"


def _ci_parameters() -> dict:
    return suite.parameters_for(NOTEBOOK, "ci", "auto")  # the notebook's metadata


@pytest.fixture(scope="module")
def run04(ci_run: dict[str, suite.NotebookRun]) -> suite.NotebookRun:
    """Notebook 04 in the shared CI-scale run (conftest's ``ci_run``)."""
    run = ci_run[NOTEBOOK.stem]
    assert run.ok, run.error
    return run


@pytest.mark.notebook
def test_ci_run_has_no_errors_and_ends_with_the_headline(run04) -> None:
    executed = nbformat.read(run04.executed, as_version=4)
    outputs = [o for c in executed.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    headline = run04.results["headline"]
    assert headline_output(executed.cells) == {k: round(v, 4) for k, v in headline.items()}
    text = json.dumps([c.get("outputs", []) for c in executed.cells])
    assert str(REPO_ROOT) not in text, "a path of this machine in the outputs"
    assert "build/nb04/" in text and not re.search(r"build/nb04-\w+", text), "no temporary folder names"
    assert not (REPO_ROOT / "build" / "nb04").exists(), "workdir left behind"


def _check_coverage(run: dict) -> None:
    for epoch in run["epochs"]:
        c = epoch["coverage"]
        assert c["complete"] and c["distinct"] == c["data_set"] == run["data_set"]
        assert c["shared_between_ranks"] == 0
        assert c["samples"] == run["steps_per_epoch"] * run["global_batch_size"]
        assert c["duplicates"] == c["samples"] - c["data_set"]
        assert len(c["per_rank"]) == run["world_size"]
        assert len(set(c["per_rank"])) == 1  # padding gives every rank the same steps


@pytest.mark.notebook
def test_the_debug_check_saw_every_record_once_and_shards_rotate(run04) -> None:
    document = run04.results
    checked, parameters = document["results"]["coverage_check"], document["parameters"]
    assert document["parameters"]["device"] == "cpu" or gpu_available()
    assert checked["coverage_checked"] and not checked["stick_to_shard"]
    assert checked["world_size"] == parameters["processes"]
    assert checked["data_set"] == min(parameters["demo_records"], parameters["records"])
    _check_coverage(checked)
    world = checked["world_size"]
    # DALI's default: every rank moves on to the next shard after each epoch
    assert [e["coverage"]["shard_of_rank"] for e in checked["epochs"]] == [
        [(rank + epoch) % world for rank in range(world)] for epoch in range(len(checked["epochs"]))]


@pytest.mark.notebook
def test_timed_launches_alternate_and_skip_the_bookkeeping(run04) -> None:
    document = run04.results
    runs, parameters = document["results"]["runs"], document["parameters"]
    names = ["single", "multi", "single_global"]
    assert list(runs) == names
    assert document["results"]["launch_order"] == [
        [k, name] for k in range(parameters["launches"]) for name in interleaved_order(names, k)]
    for name, world in zip(names, (1, parameters["processes"], 1), strict=True):
        assert len(runs[name]) == parameters["launches"]
        for run in runs[name]:
            assert run["world_size"] == world and run["data_set"] == parameters["records"]
            assert len(run["epochs"]) == parameters["epochs"]
            assert not run["coverage_checked"]
            assert all(e["coverage"] is None for e in run["epochs"])
            assert run["timed_steps"] == (parameters["epochs"] - 1) * run["steps_per_epoch"]
            timed = run["epochs"][1:]  # the warm-up epoch is left out
            assert run["samples_per_s"] == pytest.approx(
                sum(e["samples"] for e in timed) / sum(e["seconds"] for e in timed))
    assert runs["single"][0]["global_batch_size"] == parameters["batch_size"]
    assert runs["multi"][0]["global_batch_size"] == runs["single_global"][0]["global_batch_size"]


@pytest.mark.notebook
def test_processes_learn_like_one(run04) -> None:
    document = run04.results
    runs, headline, parameters = document["results"]["runs"], document["headline"], document["parameters"]
    for launches in runs.values():
        for run in launches:
            assert run["epochs"][-1]["loss"] < run["epochs"][0]["loss"]
            assert run["captured_operators"][:4] == ["Image", "Uniform", "Rotate",
                                                     "CropMirrorNormalize"]
    accuracy = document["results"]["accuracy"]
    for key, name in (("accuracy_single", "single_global"), ("accuracy_multi", "multi")):
        per_launch = [run["held_out_accuracy"] for run in runs[name]]
        assert accuracy["per_launch"][name] == per_launch
        assert headline[key] == pytest.approx(sum(per_launch) / len(per_launch))
    gap = abs(headline["accuracy_multi"] - headline["accuracy_single"]) * 100
    assert accuracy["gap_points"] == pytest.approx(gap)
    assert accuracy["within"] and gap <= parameters["accuracy_tolerance"]
    assert headline["accuracy_multi"] > 0.5  # far above chance (10 classes)


@pytest.mark.notebook
def test_scaling_ratios_come_with_intervals_and_verdicts(run04) -> None:
    document = run04.results
    results, headline, parameters = document["results"], document["headline"], document["parameters"]
    rates = {name: [run["samples_per_s"] for run in launches]
             for name, launches in results["runs"].items()}
    (name, goal), = results["goals"].items()
    # no parameter value in the name: the batch size and process count are parameters
    assert str(parameters["batch_size"]) not in name and f"{parameters['processes']} " not in name
    assert set(goal) == {"ratio", "ci95", "goal", "verdict", "launches"}
    low, high = goal["ci95"]
    assert low <= goal["ratio"] <= high
    assert goal["launches"] >= parameters["launches"]
    assert goal["goal"] == pytest.approx(0.95 * parameters["processes"])
    weak = ratio(rates["multi"], rates["single"])  # paired by round
    assert goal == weak.goal(goal["goal"], count="launches")
    assert goal["verdict"] == ("met" if low >= goal["goal"] else
                               "not met" if high < goal["goal"] else "inconclusive")
    assert headline["speedup_weak"] == pytest.approx(goal["ratio"])
    strong = results["strong_scaling"]
    assert strong["ci95"][0] <= strong["ratio"] <= strong["ci95"][1]
    assert strong["launches"] >= parameters["launches"]
    assert strong["ratio"] == pytest.approx(ratio(rates["multi"], rates["single_global"]).ratio)
    assert headline["speedup_strong"] == pytest.approx(strong["ratio"])
    for key, name in (("samples_per_s_single", "single"), ("samples_per_s_multi", "multi")):
        assert headline[key] == pytest.approx(rate_interval(rates[name])[0])
        assert results["throughput"][name]["n"] == parameters["launches"]


@pytest.mark.notebook
def test_a_dying_rank_fails_the_launch_and_writes_nothing(run04) -> None:
    failure = run04.results["results"]["failing_rank"]
    rank = run04.results["parameters"]["processes"] - 1
    assert failure["returncode"] != 0 and failure["results_written"] is False
    assert f"rank {rank} exited with status 3 first" in failure["message"]
    assert failure["crash_line"].startswith(f"rank {rank}: simulated crash at step 3")
    assert failure["seconds"] < 120  # torchrun stopped the survivors: no collective timeout


@pytest.mark.notebook
def test_two_nodes_met_at_one_rendezvous_and_stuck_to_their_shards(run04) -> None:
    two, parameters = run04.results["results"]["two_nodes"], run04.results["parameters"]
    assert two["world_size"] == 2 and two["backend"] == "gloo" and two["stick_to_shard"]
    assert two["data_set"] == min(parameters["demo_records"], parameters["records"])
    _check_coverage(two)
    assert all(e["coverage"]["per_rank"] == [two["data_set"] // 2] * 2 for e in two["epochs"])
    assert [e["coverage"]["shard_of_rank"] for e in two["epochs"]] == [[0, 1]] * len(two["epochs"])


@pytest.mark.notebook
def test_too_few_processes_are_refused_by_name_in_a_run(tmp_path: Path) -> None:
    """The integration run of 04's refusals (the others: tests/test_notebook_refusals.py)."""
    run = suite.run_notebook(NOTEBOOK, tmp_path, {**_ci_parameters(), "processes": 1})
    assert not run.ok and "parameter processes must be at least 2" in run.error


# --- the script's refusals ------------------------------------------------------------------


@pytest.fixture(scope="module")
def train_ddp():
    spec = importlib.util.spec_from_file_location("train_ddp", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def one_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment torchrun gives a single process."""
    for name, value in {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0",
                        "LOCAL_WORLD_SIZE": "1"}.items():
        monkeypatch.setenv(name, value)


def test_script_outside_torchrun_says_how_to_launch(train_ddp, monkeypatch, capsys) -> None:
    monkeypatch.delenv("RANK", raising=False)
    assert script_main(train_ddp.run, ["--data", "x", "--device", "cpu"]) == 2
    assert "launch this script with torchrun" in capsys.readouterr().err


@pytest.mark.skipif(gpu_available(), reason="needs a machine without a GPU")
def test_nccl_without_gpus_says_use_cpu(train_ddp, one_rank, capsys) -> None:
    assert script_main(train_ddp.run, ["--data", "x", "--device", "gpu"]) == 2
    assert "Use --device cpu" in capsys.readouterr().err


def test_nccl_with_cpu_device_says_use_gloo(train_ddp, one_rank, capsys) -> None:
    assert script_main(train_ddp.run, ["--data", "x", "--device", "cpu", "--backend", "nccl"]) == 2
    assert "Use --backend gloo" in capsys.readouterr().err


@pytest.mark.parametrize("argv,message", [
    (["--epochs", "1"], "--epochs must be at least 2"),
    (["--batch-size", "0"], "--batch-size must be at least 1"),
])
def test_script_rejects_bad_numbers(train_ddp, one_rank, capsys, argv, message) -> None:
    assert script_main(train_ddp.run, ["--data", "x", "--device", "cpu", *argv]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.notebook  # a real launch: slow like a notebook run
def test_more_processes_than_records_fails_with_what_to_change(tmp_path: Path) -> None:
    tiny = first_records(locate_data(verbose=False).mnist_training, tmp_path / "one", 1)
    out = tmp_path / "results.json"
    with pytest.raises(LaunchError) as failed:
        run_torchrun(SCRIPT, ["--data", tiny, "--device", "cpu", "--epochs", "2",
                              "--num-threads", "1", "--out", out], 2, timeout=180, echo=False)
    message = str(failed.value)
    assert "the data set has 1 record(s), fewer than the 2 processes" in message
    assert "Use at most 1 processes" in message and message.count("fewer than") == 1
    assert failed.value.launches[0].returncode != 0 and not out.exists()
    assert not list(tmp_path.glob(".results.json.tmp*"))


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
    launch = Launch(["torchrun"], lines=[
        "[1]:", "  rank      : 0 (local_rank: 0)", "  exitcode  : -15 (pid: 11)",
        "Root Cause (first observed failure):", "[0]:", "  rank      : 1 (local_rank: 1)",
        "  exitcode  : 3 (pid: 12)", "error (rank 0): no data", "error (rank 1): no data"])
    assert launch.root_cause == "rank 1 exited with status 3 first"
    assert launch.errors == ["error: no data"]


@pytest.mark.slow
def test_a_launch_that_runs_too_long_is_stopped_with_its_children(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    code = ("import subprocess, sys, time; child = subprocess.Popen(['sleep', '120']); "
            f"open({str(pid_file)!r}, 'w').write(str(child.pid)); print('started', flush=True); "
            "time.sleep(120)")
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
