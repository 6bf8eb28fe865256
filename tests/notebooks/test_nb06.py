"""Notebook 06: what its CI-scale run recorded (a real SIGKILL, bit-identical resumes, damaged and
incompatible checkpoints refused, the costs), and the training script's own checks."""

from __future__ import annotations

import ast
import math
import re
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import check_clean_run

from helpers.data import embedded_data
from helpers.data.data_sources import locate_data
from helpers.data.lmdb_subset import first_records
from helpers.data.paths import MNIST_TESTING
from helpers.data.paths import REPO_ROOT
from helpers.toolkit.benchmarking import Ratio
from helpers.toolkit.benchmarking import versus
from helpers.toolkit.parameters import ParameterError
from tools import recipes
from tools import run_notebooks
from tools import run_parameters

NOTEBOOK = REPO_ROOT / "notebooks" / "06-checkpoint-resume.ipynb"
# its refusals of bad parameters, run in its set-up by tests/notebooks/test_notebook_refusals.py
REFUSALS = [
    ({"processes": 1}, ParameterError, "parameter processes must be at least 2"),
    (
        {"epochs": 1},
        ParameterError,
        "parameter epochs must be at least 2, not 1: the first epoch of each benchmark trial",
    ),
    ({"every": 40, "records": 1024}, ParameterError, "parameter every=40 is too large for 24 steps"),
]
SCRIPT = REPO_ROOT / "notebooks" / "scripts" / "train_resumable.py"
# each checkpoint the notebook damages or misuses, and what its refusal says (the folder named
# relative to the checkout, as every path the notebook prints)
REFUSED_CHECKPOINTS = [
    (
        "all_corrupt",
        r"^cannot resume: no checkpoint in build/nb06/corrupt is whole \(skipped step-\d+: part "
        r"model\.pt does not match its SHA-256 checksum \(corrupt\)",
    ),
    ("missing", r"^cannot resume: build/nb06/no-such-folder does not exist\. Start without resuming"),
    (
        "other_batch_size",
        r"^cannot resume from build/nb06/eager-copy/step-\d+: .*\(batch_size: "
        r"checkpoint 64, this run 32\)",
    ),
    (
        "other_data",
        r"^cannot resume from build/nb06/eager-copy/step-\d+: .*\(data: checkpoint "
        r"'build/nb06/training', this run 'build/nb06/other-data'; records: checkpoint 1024, "
        r"this run 512\)",
    ),
    (
        "other_dali_version",
        r"^cannot resume from build/nb06/other-dali/step-\d+: .*\(dali: checkpoint "
        r"'2\.3\.0', this run '\d",
    ),
    (
        "other_world_size",
        r"^cannot resume from build/nb06/dist-copy/step-\d+: .*\(world_size: checkpoint 2, "
        r"this run 1\)",
    ),
]


@pytest.fixture(scope="module")
def run06(ci_run: dict[str, run_notebooks.NotebookRun]) -> run_notebooks.NotebookRun:
    """Notebook 06 in the shared CI-scale run (conftest's ``ci_run``)."""
    run = ci_run[NOTEBOOK.stem]
    assert run.ok, run.error
    return run


def _matches(result: dict, device: str, steps: int) -> None:
    """A resumed run compared with the uninterrupted one at every step (``steps``: of all ranks);
    on the CPU, where the notebook requires it, with no difference at all. On a GPU the record
    keeps the largest differences (tests/notebooks/test_gpu_tier.py checks what the H200 run gave)."""
    assert result["steps_compared"] == steps, result
    if device == "cpu":
        assert result["bit_identical"] is True and result["losses_identical"] is True, result
        assert result["largest_loss_gap"] == 0.0 and result["largest_weight_gap"] == 0.0, result


@pytest.mark.notebook
def test_ci_run_is_clean_and_its_headline_and_parameters_are_read_off_the_run(run06) -> None:
    """No error, no machine path, build/nb06 removed (conftest's check_clean_run); each headline
    figure is the record's own result of that name, and the parameters are those the ci scale
    gave, resolved (the device, the records) and with the data path relative to the checkout."""
    check_clean_run(run06, "nb06")
    document = run06.results
    headline, results = document.headline, document.results
    resume, cost, ratios = results["resume"], results["checkpoint_cost"], results["benchmark"]["ratios"]
    assert (headline["kill_step"], headline["resumed_from"]) == (resume["kill_step"], resume["resumed_from"])
    assert headline["bit_identical"] == int(resume["bit_identical"]) == 1  # the CPU: bit-identical
    assert headline["checkpoint_write_ms"] == cost["write_ms"]["median"]
    assert headline["checkpoint_restore_ms"] == cost["restore_ms"]["median"]
    assert headline["checkpoint_share_of_steps"] == cost["share_of_steps"]
    assert headline["resume_first_step_ms"] == statistics.median(
        r["to_first_step_ms"] for r in cost["resumes"].values()
    )
    for key, label in [
        ("epoch_readers_over_capture", "capture, epoch readers / capture"),
        ("resumable_capture_over_capture", "capture, epoch readers + checkpoints / capture"),
        (
            "resumable_capture_over_eager_checkpoints",
            "capture, epoch readers + checkpoints / eager + checkpoints",
        ),
        ("eager_checkpoints_over_eager", "eager + checkpoints / eager"),
    ]:
        assert headline[key] == ratios[label]["ratio"], key
    given = run_parameters.parameters_for(NOTEBOOK, "ci", "cpu")
    parameters = document.parameters
    assert {k: parameters[k] for k in given if k in parameters} == {
        k: v for k, v in given.items() if k in parameters
    }
    assert parameters["device"] == "cpu" and parameters["records"] == given["records"]
    assert parameters["data_path"].endswith("MNIST/training") and not parameters["data_path"].startswith("/")
    assert results["steps_per_epoch"] == math.ceil(parameters["records"] / parameters["batch_size"])


@pytest.mark.notebook
def test_a_sigkilled_process_resumes_to_the_same_losses_and_weights(run06) -> None:
    document = run06.results
    resume, p = document.results["resume"], document.parameters
    assert resume["signal"] == "SIGKILL" and resume["returncode"] == -signal.SIGKILL
    assert resume["kill_step"] >= resume["chosen_step"] > 2 * p["every"]
    # the newest checkpoint before the kill: a multiple of every, at most `every` steps back
    assert resume["resumed_from"] % p["every"] == 0
    assert 0 <= resume["kill_step"] - resume["resumed_from"] <= p["every"] + 1
    assert resume["steps_redone"] == resume["kill_step"] - resume["resumed_from"]
    _matches(resume, p["device"], document.results["total_steps"])


@pytest.mark.notebook
def test_a_damaged_newest_checkpoint_is_skipped_and_the_run_still_matches(run06) -> None:
    document = run06.results
    resume, bad = document.results["resume"], document.results["bad_inputs"]
    assert resume["corrupt_checkpoint_rejected"] is True
    fallback = resume["fallback"]
    assert len(fallback["skipped"]) == 1 and "(truncated)" in fallback["skipped"][0]
    assert fallback["resumed_from"] < int(re.search(r"step-(\d+)", fallback["skipped"][0])[1])
    _matches(fallback, document.parameters["device"], document.results["total_steps"])
    assert bad["truncated_newest"]["refused"] is False
    rejected = re.search(r"step-\d+", fallback["skipped"][0])[0]
    assert f"rejected-{rejected}-0" in bad["truncated_newest"]["left"]  # kept, moved aside


@pytest.mark.notebook
@pytest.mark.parametrize("case,expected", REFUSED_CHECKPOINTS)
def test_each_bad_checkpoint_is_refused_with_a_message_and_nothing_changes(run06, case, expected) -> None:
    outcome = run06.results.results["bad_inputs"][case]
    assert outcome["refused"] is True and re.search(expected, outcome["message"]), outcome["message"]
    assert outcome["files_unchanged"] is True
    assert outcome["result"] is None  # refused before it trained


@pytest.mark.notebook
def test_the_refused_cases_are_all_those_the_notebook_made(run06) -> None:
    """Every case it recorded is checked above (a new one needs its words there), and the
    truncated newest checkpoint is the one case not refused."""
    bad = run06.results.results["bad_inputs"]
    assert set(bad) == {case for case, _ in REFUSED_CHECKPOINTS} | {"truncated_newest"}
    assert sum(case["refused"] for case in bad.values()) == len(REFUSED_CHECKPOINTS)


@pytest.mark.notebook
def test_capture_mode_resumes_inside_an_epoch_exactly(run06) -> None:
    document = run06.results
    capture = document.results["capture_resume"]
    assert capture["signal"] == "SIGKILL" and capture["kill_step"] > capture["resumed_from"]
    assert capture["resumed_from"] % document.results["steps_per_epoch"] != 0
    assert capture["fast_forward_batches"] == capture["resumed_from"] % document.results["steps_per_epoch"]
    # the newest checkpoint before the kill: a multiple of every, at most every steps back
    every = document.parameters["every"]
    assert capture["resumed_from"] % every == 0
    assert 0 < capture["kill_step"] - capture["resumed_from"] <= every + 1
    _matches(capture, document.parameters["device"], document.results["total_steps"])


@pytest.mark.notebook
def test_one_rank_killed_and_all_resumed_match_the_uninterrupted_ranks(run06) -> None:
    document = run06.results
    dist, processes = document.results["distributed"], document.parameters["processes"]
    assert dist["signal"] == "SIGKILL" and dist["killed_rank"] == processes - 1
    assert dist["root_cause"] == f"rank {processes - 1} was killed by signal 9 first"
    # the committed folder: the manifest, the model, one part per rank
    assert dist["parts"] == ["MANIFEST.json", "model.pt"] + [f"rank-{r}.pt" for r in range(processes)]
    assert dist["distinct_reader_states"] == processes  # each rank its own reader state
    assert dist["epoch_boundaries_after_resume"] >= 1  # the shard rotation resumed too
    assert 0 < dist["resumed_from"] <= dist["kill_step"]
    p = document.parameters
    rank_steps = p["epochs"] * math.ceil(math.ceil(p["records"] / processes) / p["batch_size"])
    _matches(dist, dist["device"], processes * rank_steps)


@pytest.mark.notebook
def test_dalis_checkpoint_api_and_its_limits_are_recorded(run06) -> None:
    api = run06.results.results["dali_api"]
    assert api["restore_identical"] is True
    assert api["save_without_seq"].startswith("ValueError") and "{seq}" in api["save_without_seq"]
    assert api["capture_with_checkpointing"].startswith("NotImplementedError")


@pytest.mark.notebook
def test_costs_come_from_interleaved_trials_with_intervals(run06) -> None:
    document = run06.results
    bench, trials = document.results["benchmark"], document.parameters["trials"]
    assert trials >= 3 and len(bench["configurations"]) == 5
    assert all(len(t) == trials for t in bench["configurations"].values())
    for name, recorded in bench["ratios"].items():
        low, high = recorded["ci95"]
        assert recorded["trials"] == trials, name
        # the words of helpers.toolkit.benchmarking.versus for this interval
        shown = Ratio(recorded["ratio"], low, high, trials, True)
        assert f"{recorded['verdict']} ({shown})" == versus(shown, "the second")  # its words
    cost = document.results["checkpoint_cost"]
    assert cost["write_ms"]["median"] > 0 and cost["restore_ms"]["median"] > 0 and cost["bytes"] > 0
    # each resume: the time to its first step includes its restore (DALI applies the state later)
    assert len(cost["resumes"]) == cost["restore_ms"]["n"] == 4
    assert all(r["to_first_step_ms"] > r["restore_ms"] > 0 for r in cost["resumes"].values())
    # the harness's trials behind the rates: one timed epoch of every way a round
    harness = bench["harness"]["ways"]
    assert set(harness) == set(bench["configurations"])
    assert all(len(way["trials"]) == trials for way in harness.values())
    assert cost["share_of_steps"] == pytest.approx(
        cost["write_ms"]["median"] / (cost["every"] * cost["step_ms"])
    )


@pytest.mark.notebook
@pytest.mark.usefixtures("scratch_folders_to_ourselves")  # not beside the CI-scale run: it works there
def test_too_few_processes_are_refused_by_name_in_a_run(tmp_path: Path) -> None:
    """The integration run of 06's refusals (the others: tests/notebooks/test_notebook_refusals.py)."""
    parameters = {**run_parameters.parameters_for(NOTEBOOK, "ci", "cpu"), "processes": 1}
    scratch = REPO_ROOT / "build" / "nb06"
    before = scratch.stat().st_ino if scratch.is_dir() else None  # emptying it makes it anew
    run = run_notebooks.run_notebook(NOTEBOOK, tmp_path, parameters)
    assert not run.ok and "parameter processes must be at least 2" in run.error
    after = scratch.stat().st_ino if scratch.is_dir() else None
    assert after == before, "a refused run made or emptied the notebook's scratch folder"


# --- the recipe, run as a user runs it (tools.recipes) -----------------------------------------------

RECIPE_REPORT = {
    "start": "start",
    "step": "step",
    "loss": "loss.item()",
    "weights": "[p.tolist() for p in model.parameters()]",
    "images": "[list(images.shape), str(images.dtype)]",
    "began": "step - i",
}  # the step at which the last next_epoch() began


def test_the_recipe_reads_the_suites_data_and_its_demo_resumes_inside_an_epoch() -> None:
    """Its settings as a user finds them: DATA a folder that `make data` builds, relative to the
    notebook's folder; the demo's stop (its newest checkpoint before STOP_AT) inside an epoch of
    DATA, with the epoch's end between it and STEPS."""
    settings = recipes.recipe(NOTEBOOK).settings
    data = NOTEBOOK.parent / ast.literal_eval(settings["DATA"].split("#")[0].strip())
    assert data.resolve() == (REPO_ROOT / "data" / "dali_extra" / MNIST_TESTING).resolve()  # `make data`'s
    steps, every, stop = (int(settings[k].split("#")[0]) for k in ("STEPS", "EVERY", "STOP_AT"))
    per_epoch = math.ceil(embedded_data.MNIST_TEST_DIGITS / 64)  # its records, in steps of 64
    resumed = stop // every * every
    assert resumed % per_epoch != 0, "the demo's resume is inside an epoch"
    assert resumed // per_epoch < (steps - 1) // per_epoch, "the resumed start crosses an epoch's end"


def check_recipe(run_recipe, tmp_path: Path, device: str) -> None:
    """The recipe on 200 digits (4 steps of 64 an epoch), 14 steps, a checkpoint every 3: run to the
    end; stopped after step 11 and started again in its process; and killed with SIGKILL in a
    process of its own, then started again in a new one. Each second start resumes from the newest
    checkpoint (9 is inside the third epoch, steps 9 to 12, and the run crosses that epoch's end
    after it) and ends with the uninterrupted run's weights and loss, bit for bit. After a restore
    inside an epoch, DALI's first next_epoch() runs a whole epoch's length: the resumed run's
    next_epoch() calls begin at other steps than the uninterrupted run's, and the steps, which
    the recipe counts itself, stay the same."""
    import torch

    data = first_records(locate_data(verbose=False).mnist_training, tmp_path / "digits", 200)
    settings = {"DATA": str(data), "DEVICE": device, "STEPS": 14, "EVERY": 3}

    def checkpoint(name: str) -> Path:
        (tmp_path / name).mkdir()
        return tmp_path / name / "checkpoint.pt"

    whole = run_recipe(
        NOTEBOOK, {**settings, "CHECKPOINT": str(checkpoint("whole")), "STOP_AT": None}, RECIPE_REPORT
    )
    assert (whole["start"], whole["step"]) == (0, 14)
    assert whole["images"] == [[64, 28, 28, 1], "torch.uint8"]  # rotated with keep_size: one shape
    assert [len(w) for w in whole["weights"]] == [128, 128, 10, 10]
    assert math.isfinite(whole["loss"]) and whole["loss"] < 0.8 * math.log(10)  # below chance: it learns
    assert whole["began"] == 13  # next_epoch() calls at steps 1, 5, 9, 13: epochs of 4 steps

    stopped = run_recipe(
        NOTEBOOK, {**settings, "CHECKPOINT": str(checkpoint("stopped")), "STOP_AT": 11}, RECIPE_REPORT
    )
    assert (stopped["start"], stopped["step"]) == (9, 14)  # the checkpoint of step 9, not step 11
    assert stopped["weights"] == whole["weights"] and stopped["loss"] == whole["loss"]
    # across the third epoch's end: its first next_epoch() ran 4 batches from step 10, to step 13
    assert stopped["began"] == 14

    # killed: the recipe's own file in a process of its own, SIGKILL once its first checkpoint exists
    path = checkpoint("killed")
    script = tmp_path / "killed.py"
    script.write_text(
        recipes.script(recipes.recipe(NOTEBOOK), {**settings, "CHECKPOINT": str(path), "STOP_AT": None}, {})
    )
    process = subprocess.Popen(
        [sys.executable, script.name],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 300
    while not path.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    process.kill()  # SIGKILL: the process ends wherever it is (nothing, if it has ended)
    _, stderr = process.communicate()
    assert process.returncode == -signal.SIGKILL and path.exists(), (
        f"no checkpoint, or the run ended before the kill (exit {process.returncode}):\n{stderr[-3000:]}"
    )
    killed_at = torch.load(path, weights_only=True)[2]  # the step that the newest whole checkpoint holds
    assert killed_at in (3, 6, 9, 12), killed_at
    resumed = run_recipe(NOTEBOOK, {**settings, "CHECKPOINT": str(path), "STOP_AT": None}, RECIPE_REPORT)
    assert (resumed["start"], resumed["step"]) == (killed_at, 14)
    assert resumed["weights"] == whole["weights"] and resumed["loss"] == whole["loss"]
    # its next_epoch() calls: whole epochs of 4 steps from the step after its checkpoint
    assert (resumed["began"] - killed_at - 1) % 4 == 0 and 14 - resumed["began"] < 4


@pytest.mark.slow
def test_the_recipe_runs_without_the_suite(run_recipe, tmp_path: Path) -> None:
    check_recipe(run_recipe, tmp_path, "cpu")


def test_the_recipe_on_the_gpu(gpu_run, run_recipe, tmp_path: Path) -> None:
    check_recipe(run_recipe, tmp_path, "gpu")


def test_a_trainer_closed_inside_dalis_epoch_closes_its_stream_under_its_context(tmp_path: Path) -> None:
    """The benchmark stops an eager Trainer between its epochs, with DALI's epoch under way (its
    stream runs on across epochs): close() ends that epoch under the trainer's context, so the
    garbage collector never closes it later in another thread or context (DALI 2.4.0 then prints
    an ignored AssertionError from EvalContext.__exit__, as 06's GPU run of 2026-12-05 did)."""
    import inspect

    from helpers.lessons.nb06_checkpoint_resume import load_script

    trainer = load_script()
    data = first_records(locate_data(verbose=False).mnist_training, tmp_path / "training", 256)
    args = ["--data", str(data), "--device", "cpu", "--batch-size", "32", "--epochs", "2", "--every", "0",
            "--seed", "3", "--num-threads", "1", "--quiet"]  # fmt: skip
    script = trainer.Trainer(trainer.parse_args(args), rank=0, local_rank=0, world=1)
    for _ in script.epoch():  # the first of 2 epochs: the stream stays open for the second
        pass
    stream = script.batches
    assert inspect.getgeneratorstate(stream) == inspect.GEN_SUSPENDED
    script.close()
    assert inspect.getgeneratorstate(stream) == inspect.GEN_CLOSED and script.batches is None
    script.close()  # a second close: nothing left to close


def test_the_loop_written_out_in_the_notebook_is_the_scripts_eager_loop(tmp_path: Path) -> None:
    """06's cell that writes out the script's eager loop (its reader, register, next_epoch, DALI's
    preprocessing, the Trainer's fit) trains one epoch to the losses and weights of the script's
    own loop (Trainer.epoch) from the same settings, bit for bit: the page shows what the script does."""
    from types import SimpleNamespace

    import nbformat
    import nvidia.dali.experimental.dynamic as ndd

    from helpers.lessons.nb06_checkpoint_resume import load_script

    trainer = load_script()
    data = first_records(locate_data(verbose=False).mnist_training, tmp_path / "training", 256)
    cells = nbformat.read(NOTEBOOK, as_version=4).cells
    cell = next(c.source for c in cells if c.cell_type == "code" and "eager loop written out" in c.source)

    def args(name: str) -> list[str]:  # the notebook's runs.args: a command line, checkpoints in tmp_path
        return ["--data", str(data), "--device", "cpu", "--batch-size", "32", "--epochs", "2", "--every", "3",
                "--keep", "2", "--lr", "0.05", "--seed", "3", "--num-threads", "1",
                "--checkpoints", str(tmp_path / name)]  # fmt: skip

    script = trainer.Trainer(trainer.parse_args([*args("script"), "--quiet"]), rank=0, local_rank=0, world=1)
    for _ in script.epoch():
        pass
    namespace = {
        "trainer": trainer, "runs": SimpleNamespace(args=args), "setup": SimpleNamespace(train_path=data),
        "seed": 3, "batch_size": 32, "epochs": 2, "device": "cpu", "workdir": tmp_path, "ndd": ndd,
    }  # fmt: skip
    source = tmp_path / "loop_cell.py"  # DALI 2.4.0's dynamic mode reads its callers' source lines
    source.write_text(cell)
    exec(compile(cell, str(source), "exec"), namespace)
    loop = namespace["loop"]
    assert len(script.losses) == script.steps_per_epoch == 8 and loop.losses == script.losses
    assert trainer.weights_digest(loop.model) == trainer.weights_digest(script.model)
    assert sorted(p.name for p in (tmp_path / "loop").iterdir()) == ["step-00000003", "step-00000006"]
