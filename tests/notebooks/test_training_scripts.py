"""The training scripts of notebooks 04 and 06 (notebooks/scripts) and what they share
(helpers.toolkit.distributed), in this process: their refusals of what cannot work, with what to do; a
folder of checkpoints never overwritten; a resume at an epoch boundary."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch.distributed as dist

from helpers.data.data_sources import locate_data
from helpers.data.lmdb_subset import first_records
from helpers.data.paths import REPO_ROOT
from helpers.toolkit import checkpointing
from helpers.toolkit import simulated_crash
from helpers.toolkit.devices import gpu_available
from helpers.toolkit.distributed import script_main
from helpers.toolkit.torchrun import LaunchError
from helpers.toolkit.torchrun import free_port
from helpers.toolkit.torchrun import run_torchrun

TRAIN_DDP = REPO_ROOT / "notebooks" / "scripts" / "train_ddp.py"
TRAIN_RESUMABLE = REPO_ROOT / "notebooks" / "scripts" / "train_resumable.py"


# --- the script's refusals ------------------------------------------------------------------


def _load(path: Path):
    """A script of notebooks/scripts as a module, as torchrun would run it (without its __main__)."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def train_ddp():
    return _load(TRAIN_DDP)


@pytest.fixture
def one_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment torchrun gives a single process."""
    for name, value in {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1"}.items():
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


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--epochs", "1"], "--epochs must be at least 2"),
        (["--batch-size", "0"], "--batch-size must be at least 1"),
    ],
)
def test_script_rejects_bad_numbers(train_ddp, one_rank, capsys, argv, message) -> None:
    assert script_main(train_ddp.run, ["--data", "x", "--device", "cpu", *argv]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.notebook  # a real launch: slow like a notebook run
def test_more_processes_than_records_fails_with_what_to_change(tmp_path: Path) -> None:
    tiny = first_records(locate_data(verbose=False).mnist_training, tmp_path / "one", 1)
    out = tmp_path / "results.json"
    with pytest.raises(LaunchError) as failed:
        run_torchrun(
            TRAIN_DDP,
            ["--data", tiny, "--device", "cpu", "--epochs", "2", "--num-threads", "1", "--out", out],
            2,
            timeout=180,
            echo=False,
        )
    message = str(failed.value)
    assert "the data set has 1 record(s), fewer than the 2 processes" in message
    assert "Use at most 1 processes" in message and message.count("fewer than") == 1
    assert failed.value.launches[0].returncode != 0 and not out.exists()
    assert not list(tmp_path.glob(".results.json.tmp*"))


def test_an_epoch_no_longer_than_what_dali_makes_ahead_fails_with_what_to_change(
    train_ddp, one_rank, monkeypatch, tmp_path: Path, capsys
) -> None:
    # DALI 2.4 makes one batch ahead, and none for an epoch of one step: a later DALI that makes
    # more would leave no step to time
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(free_port()))
    monkeypatch.setattr(train_ddp, "captured_ahead", lambda reader: 4)
    data = first_records(locate_data(verbose=False).mnist_training, tmp_path / "data", 256)
    out = tmp_path / "results.json"
    argv = ["--data", str(data), "--device", "cpu", "--epochs", "2", "--num-threads", "1", "--out", str(out)]
    try:
        assert script_main(train_ddp.run, argv) == 2
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
    err = capsys.readouterr().err
    assert "an epoch has 4 step(s), no more than the 4 batch(es) DALI makes ahead" in err
    assert "use more records or a smaller --batch-size" in err and not out.exists()


# --- notebook 04's rank that dies on purpose (helpers.toolkit.simulated_crash), outside the loop ------


def test_no_crash_hook_unless_the_rank_is_named(train_ddp, one_rank) -> None:
    args = train_ddp.parse_args(["--data", "x", "--device", "cpu"])
    assert simulated_crash.step_hook(args, 0) is None  # the default: plain training
    args = train_ddp.parse_args(["--data", "x", "--device", "cpu", "--fail-rank", "1"])
    assert simulated_crash.step_hook(args, 0) is None and simulated_crash.step_hook(args, 1)


def test_the_crash_hook_exits_at_its_step_of_the_first_epoch_only(train_ddp, monkeypatch, capsys) -> None:
    args = train_ddp.parse_args(["--data", "x", "--fail-rank", "1", "--fail-at-step", "3"])
    exits: list[int] = []
    monkeypatch.setattr(simulated_crash.os, "_exit", exits.append)
    hook = simulated_crash.step_hook(args, 1)
    for epoch, step in [(0, 0), (0, 2), (1, 3), (0, 4)]:
        hook(epoch, step)
    assert exits == [] and capsys.readouterr().out == ""
    hook(0, 3)
    assert exits == [3]
    assert capsys.readouterr().out == "rank 1: simulated crash at step 3 (--fail-rank)\n"


def test_the_help_does_not_show_the_crash_options(train_ddp, capsys) -> None:
    with pytest.raises(SystemExit):
        train_ddp.parse_args(["--help"])
    assert "--fail" not in capsys.readouterr().out


@pytest.mark.notebook  # a real launch: slow like a notebook run
def test_a_rank_named_by_fail_rank_dies_and_the_launch_writes_nothing(tmp_path: Path) -> None:
    data = first_records(locate_data(verbose=False).mnist_training, tmp_path / "data", 256)
    out = tmp_path / "results.json"
    with pytest.raises(LaunchError) as failed:
        run_torchrun(
            TRAIN_DDP,
            [
                "--data",
                data,
                "--device",
                "cpu",
                "--epochs",
                "2",
                "--batch-size",
                "32",
                "--num-threads",
                "1",
                "--out",
                out,
                "--timeout",
                "60",
                "--fail-rank",
                "1",
                "--fail-at-step",
                "2",
            ],
            2,
            timeout=180,
            echo=False,
        )
    launch = failed.value.launches[0]
    assert "rank 1 exited with status 3 first" in str(failed.value)
    assert "rank 1: simulated crash at step 2 (--fail-rank)" in launch.lines
    assert launch.returncode != 0 and not out.exists()


# --- the script, in this process -------------------------------------------------------------


@pytest.fixture(scope="module")
def script():
    return _load(TRAIN_RESUMABLE)


@pytest.fixture(scope="module")
def small_data(tmp_path_factory) -> Path:
    """256 records: 4 steps of 64 per epoch."""
    return first_records(
        locate_data(verbose=False).mnist_training, tmp_path_factory.mktemp("data") / "training", 256
    )


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--every", "3"], "--every N needs --checkpoints DIR"),
        (["--resume", "--every", "0"], "--resume needs --checkpoints DIR"),
        (["--mode", "capture-plain", "--every", "3", "--checkpoints", "x"], "cannot checkpoint"),
        (["--every", "-1"], "--every must be 0"),
        (["--batch-size", "0"], "--batch-size must be at least 1"),
    ],
)
def test_the_script_refuses_bad_arguments_with_what_to_do(script, small_data, capsys, extra, message) -> None:
    assert script_main(script.run, ["--data", str(small_data), *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error (rank 0): ") and message in err


def test_the_script_refuses_a_folder_that_is_not_an_lmdb(script, tmp_path, capsys) -> None:
    assert script_main(script.run, ["--data", str(tmp_path), "--every", "0"]) == 2
    assert "is not an LMDB folder" in capsys.readouterr().err


@pytest.mark.slow
def test_a_folder_with_checkpoints_is_not_overwritten_without_resume(script, small_data, tmp_path) -> None:
    folder = tmp_path / "checkpoints"
    checkpointing.save(folder, 5, {"model.pt": b"mine"}, {"data": "elsewhere"})
    with pytest.raises(script.UsageError, match="already holds checkpoints: pass --resume"):
        script.run(["--data", str(small_data), "--checkpoints", str(folder), "--every", "2", "--quiet"])
    assert (folder / "step-00000005" / "model.pt").read_bytes() == b"mine"


@pytest.mark.slow
def test_capture_mode_resumes_exactly_at_an_epoch_boundary(script, small_data, tmp_path) -> None:
    common = ["--data", str(small_data), "--mode", "capture", "--num-threads", "1", "--quiet"]
    reference = script.run([*common, "--epochs", "3", "--every", "0"])
    folder = tmp_path / "checkpoints"
    first = script.run([*common, "--epochs", "2", "--every", "4", "--checkpoints", str(folder)])
    assert [s for s, _ in checkpointing.checkpoints(folder)] == [4]  # the end of epoch 0
    resumed = script.run([*common, "--epochs", "3", "--every", "4", "--checkpoints", str(folder), "--resume"])
    assert resumed["resumed"]["step"] == 4 and resumed["fast_forward_batches"] == 0
    assert resumed["losses"] == reference["losses"]
    assert resumed["weights_sha256"] == reference["weights_sha256"]
    assert first["losses"][0] == reference["losses"][0][:8]
