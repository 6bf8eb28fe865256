"""The GPU tier: checks of the output folder of `tools.suite run --device gpu` (make test-gpu),
every notebook's through one loader, conftest's ``gpu_results`` (a notebook that the run left out
is skipped, one that failed fails with the cell that failed). Every notebook of the registry is
checked here for having run on the GPU; a notebook's own GPU checks may also sit in its test file
(tests/test_nbNN.py, with ``gpu_results``: marked ``gpu``), which `make test-gpu` runs too.
Notebook 04's multi-GPU checks run when the machine had at least 2 GPUs, and say so when it had
fewer. Checks shared with the CI tier (a notebook's goals, its trials) come from that notebook's
test file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import check_goal
from test_nb01 import check_ratios as check_nb01_ratios
from test_nb02 import check_capture_over_eager as check_nb02_ratio
from test_nb02 import check_equality as check_nb02_equality
from test_nb02 import check_placement as check_nb02_placement
from test_nb03 import check_goals as check_nb03_goals
from test_nb03 import check_picks as check_nb03_picks
from test_nb05 import check_fully_captured
from test_nb05 import check_goals as check_nb05_goals
from test_nb05 import check_trials

from helpers.data import registry
from helpers.data.data_sources import locate_data
from helpers.data.lmdb_subset import first_records
from helpers.data.paths import REPO_ROOT
from helpers.data.registry import goal_targets
from helpers.data.results_file import NotebookResults
from helpers.lessons.nb01_getting_started import ALL_TO_HARDWARE
from helpers.lessons.nb01_getting_started import DEFAULT
from helpers.toolkit.benchmarking import ratio
from helpers.toolkit.devices import gpu_count
from helpers.toolkit.torchrun import LaunchError
from helpers.toolkit.torchrun import run_torchrun

Results = Callable[[str], NotebookResults]
SCRIPT = REPO_ROOT / "notebooks" / "scripts" / "train_ddp.py"
NB03, NB05, NB06 = "03-feeding-pytorch-fast", "05-photos-at-scale", "06-checkpoint-resume"


def gpu_tier_notebooks(root: Path = REPO_ROOT) -> list[str]:
    """The notebooks that the GPU tier checks: every notebook of the registry (helpers.data.registry)."""
    return [entry.slug for entry in registry.notebooks(root)]


@pytest.mark.parametrize("notebook", gpu_tier_notebooks())
def test_notebook_ran_on_the_gpu(gpu_results: Results, notebook: str) -> None:
    results = gpu_results(notebook)
    assert results.machine["gpu"], "no GPU recorded in the results"
    parameters = results.parameters
    # notebook 04 runs its multi-process part on CPU processes when there are fewer GPUs than
    # processes (and says so); everything else runs on the GPU it was asked for
    too_few_gpus = results.machine["gpu_count"] < parameters.get("processes", 1)
    assert parameters["device"] == "gpu" or too_few_gpus, parameters


def test_getting_started_timed_every_decoder_and_hw_decoder_load(gpu_results: Results) -> None:
    document = gpu_results("01-getting-started")
    results, parameters, headline = document.results, document.parameters, document.headline
    ways = results["speed_test"]["ways"]
    assert [(w["kind"], w["knob"]) for w in ways.values()] == [
        ("cpu", ""),
        ("gpu", DEFAULT),
        ("gpu", ALL_TO_HARDWARE),
    ]
    assert results["speed_distinct_images"] == parameters["speed_images"] >= 64
    assert parameters["trials"] >= 5
    check_nb01_ratios(document)  # every ratio, headline figure and the goal, from the recorded trials
    # the hardware decoders read beside the GPU rates (NVML), busy while hw_decoder_load=1 ran
    assert headline["hw_gpu_nvjpg_pct"] > 0
    # a trial lasts a second or more at the fastest way: NVML averages over a fraction of one
    (hardware,) = [w for w in ways.values() if w["knob"] == ALL_TO_HARDWARE]
    assert min(t["seconds"] for t in hardware["trials"]) >= 0.5
    # same photos, other chroma upsampling: a few levels at most
    assert results["gaps_vs_cpu"]["decode"]["mean"] < 5
    assert "fancy_upsampling" in results["gaps_vs_cpu"]


def test_capture_mode_matches_eager_on_the_gpu(gpu_results: Results) -> None:
    document = gpu_results("02-capture-mode")
    results, headline = document.results, document.headline
    assert results["identical_batches"] is True
    assert headline["last_epoch_mean_loss_eager"] == pytest.approx(
        headline["last_epoch_mean_loss_capture"], rel=1e-4
    )
    assert results["captured_operators"][:2] == ["Image", "Uniform"]
    check_nb02_ratio(document)  # the goal and headline rates, from the recorded timed epochs
    goal = results["goals"]["capture / eager"]
    assert document.parameters["epochs"] - 1 >= 5
    check_goal("02-capture-mode", "capture / eager", goal, document.parameters["epochs"] - 1)
    check_nb02_equality(document)  # recomputed from the recorded losses and accuracies


def test_capture_mode_compared_cpu_and_gpu_decoding(gpu_results: Results) -> None:
    document = gpu_results("02-capture-mode")
    placement = document.results["decode_placement"]
    trials = document.parameters["placement_epochs"] - 1  # the first epoch is the harness's warm-up
    assert len(placement["cpu"]) == len(placement["gpu"]) == trials >= 5
    check_nb02_placement(document)  # the ratio and headline rates, from the recorded trials


@pytest.fixture(scope="module")
def scaling(gpu_results: Results) -> dict:
    """Notebook 04's record, when its multi-GPU part ran."""
    found = gpu_results("04-scaling-out")
    gpus = found.machine["gpu_count"]
    if gpus < 2:
        pytest.skip(
            f"multi-GPU step not run: the machine had {gpus} GPU(s), notebook 04 needs 2 "
            "(it ran its runs on CPU processes and said so)"
        )
    return found


def test_runs_used_one_gpu_per_process_with_nccl(scaling: dict) -> None:
    results, parameters = scaling.results, scaling.parameters
    processes = parameters["processes"]
    assert parameters["device"] == "gpu" and parameters["backend"] == "nccl"
    assert parameters["launches"] >= 3
    for run in results["runs"]["multi"]:
        assert run["world_size"] == processes and run["backend"] == "nccl"
        assert len(run["gpus"]) >= processes
    checked = results["coverage_check"]  # the debug launch that records which ranks read what
    assert checked["backend"] == "nccl" and checked["world_size"] == processes
    assert all(
        e["coverage"]["complete"] and e["coverage"]["shared_between_ranks"] == 0 for e in checked["epochs"]
    )


def test_two_gpus_learn_like_one_with_the_same_global_batch(scaling: dict) -> None:
    headline = scaling.headline
    assert abs(headline["accuracy_multi"] - headline["accuracy_single"]) * 100 <= 1.0
    assert headline["accuracy_multi"] > 0.9
    for launches in scaling.results["runs"].values():
        for run in launches:
            assert run["epochs"][-1]["loss"] < run["epochs"][0]["loss"]


def test_two_gpus_scale(scaling: dict) -> None:
    """The goal is 1.9x for 2 GPUs (the notebook reports whether it was reached); this floor
    catches a run where the processes did not work in parallel at all."""
    headline = scaling.headline
    assert headline["speedup_weak"] > 0.75 * headline["processes"]
    assert headline["speedup_strong"] > 1.0
    ((name, goal),) = scaling.results["goals"].items()
    rates = {name: [r["samples_per_s"] for r in runs] for name, runs in scaling.results["runs"].items()}
    weak = ratio(rates["multi"], rates["single"])  # recomputed from the launches, not read back
    assert scaling.parameters["launches"] >= 3
    assert goal["ratio"] == pytest.approx(weak.ratio)
    assert headline["speedup_weak"] == pytest.approx(weak.ratio)
    check_goal("04-scaling-out", name, goal, scaling.parameters["launches"], processes=headline["processes"])
    assert goal["verdict"] is not None  # judged on GPUs


def test_a_dying_rank_under_nccl_ends_the_launch(scaling: dict) -> None:
    failure = scaling.results["failing_rank"]
    assert failure["returncode"] != 0 and failure["results_written"] is False
    assert failure["seconds"] < 120


def test_more_processes_than_gpus_is_refused_by_the_script(scaling: dict, tmp_path: Path) -> None:
    """Launched by hand with one process more than GPUs: the script itself says what to do."""
    gpus = gpu_count()
    if gpus < 1:
        pytest.skip("this check launches on the GPU machine itself")
    data = first_records(locate_data(verbose=False).mnist_training, tmp_path / "data", 256)
    with pytest.raises(LaunchError) as failed:
        run_torchrun(
            SCRIPT, ["--data", data, "--device", "gpu", "--epochs", "2"], gpus + 1, timeout=180, echo=False
        )
    assert f"Use --nproc-per-node={gpus} or fewer" in str(failed.value)


# --- 03 ---


def test_gpu_run_measured_the_gpu_knobs_and_judged_the_goals(gpu_results: Results) -> None:
    document = gpu_results(NB03)
    results, parameters = document.results, document.parameters
    assert document.machine["gpu"] and parameters["device"] == "gpu"
    knobs = {w["knob"] for w in results["knobs"]["ways"].values()}
    assert {"hw_decoder_load", "decoding on the CPU", "threads", "batch size", "workers"} <= knobs
    assert parameters["trials"] >= 5
    assert all(c["labels equal"] and c["most grey levels apart"] <= 1.0 for c in results["same_data"])
    check_nb03_goals(document)
    check_nb03_picks(document)


# --- 05 ---


def test_the_h200_run_judged_every_goal_over_five_rounds_or_more(gpu_results: Results) -> None:
    document = gpu_results(NB05)
    parameters, results = document.parameters, document.results
    assert document.machine["gpu"] and parameters["device"] == "gpu"
    assert parameters["trials"] >= 5 and set(parameters["models"]) >= {"resnet50", "resnet18"}
    assert set(results["goals"]) == set(goal_targets("05-photos-at-scale"))  # every goal: both models ran
    check_nb05_goals(document)
    check_trials(document)
    check_fully_captured(document)


def test_the_gpu_knobs_were_measured_with_the_hardware_beside_them(gpu_results: Results) -> None:
    """hw_decoder_load tried beside DALI's default; every trial feeding a model read NVML (a kernel
    running) and torch's peak memory, the DALI ways the JPEG decoders too."""
    document = gpu_results(NB05)
    results = document.results
    tried = {results["knobs"][name].get("hw_decoder_load") for name in results["selection"]["ways"]}
    assert tried - {None} == {0.65, *document.parameters["hw_decoder_loads"]}
    for run in results["fed"].values():
        for way in run["ways"].values():
            assert all(t["peak_gib"] > 0 and t["gpu_pct"] is not None for t in way["trials"])
            if way["kind"] in ("pipeline", "capture"):
                assert all(t["nvjpg_pct"] is not None for t in way["trials"])


def test_the_loaders_agree_and_a_corrupt_file_is_named_on_the_gpu(gpu_results: Results) -> None:
    results = gpu_results(NB05).results
    agreement = results["agreement"]
    assert agreement["labels_agree"] and agreement["pixels_agree"] and agreement["channels_visible"]
    assert results["corrupt_file"]["named"] is True
    assert set(results["corrupt_file"]["dali_says"]) == {"cpu", "gpu"}


# --- 06 ---


def _identical(result: dict) -> bool:
    """What the suite states for the GPU (torch.use_deterministic_algorithms in the script): the
    resumed run bit-identical to the uninterrupted one; the record keeps the gaps if not."""
    return (
        result["bit_identical"] is True
        and result["largest_loss_gap"] == 0.0
        and result["largest_weight_gap"] == 0.0
    )


def test_resumes_on_the_gpu_are_bit_identical(gpu_results: Results) -> None:
    document = gpu_results(NB06)
    results = document.results
    assert document.parameters["device"] == "gpu"
    for name in ("resume", "capture_resume"):
        assert results[name]["signal"] == "SIGKILL" and _identical(results[name]), (name, results[name])
    assert _identical(results["resume"]["fallback"])
    assert results["resume"]["corrupt_checkpoint_rejected"] is True
    assert all(case["refused"] for name, case in results["bad_inputs"].items() if name != "truncated_newest")


def test_the_ranks_use_one_gpu_each_when_there_are_enough(gpu_results: Results) -> None:
    document = gpu_results(NB06)
    dist = document.results["distributed"]
    enough = document.machine["gpu_count"] >= document.parameters["processes"]
    assert dist["device"] == ("gpu" if enough else "cpu")
    assert _identical(dist)
    assert dist["distinct_reader_states"] == document.parameters["processes"]


# --- the tier's checks, on the committed H200 records (CI) ---


@pytest.mark.slow  # every notebook's GPU checks, on each committed H200 record
def test_the_committed_h200_records_pass_the_gpu_tier(tmp_path: Path) -> None:
    """The records of results/ that a GPU machine made, laid out as the run folder they came
    from, pass this module's checks: a check that no GPU run could pass would show here, in CI."""
    import subprocess
    import sys

    from tools.inventory import runtimes
    from tools.record_format import LoggedNotebook
    from tools.record_format import RunLog

    log = RunLog("full", "gpu")
    for name, record in runtimes()[True].items():
        entry = record.notebooks[name]
        NotebookResults(
            name, entry.created, record.machine, entry.parameters, entry.headline, entry.results
        ).write(tmp_path / "results")
        log.notebooks[name] = LoggedNotebook(
            entry.seconds or 0.0, True, None, entry.run.parameters, entry.run.command, entry.run.commit
        )
    log.write(tmp_path)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-m",
            "gpu",
            "--gpu-run",
            str(tmp_path),
            str(Path(__file__)),
        ],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert " passed" in done.stdout and "failed" not in done.stdout


NB07 = "07-video-clips"


def test_video_one_reader_keeps_one_hardware_decoder_busy_and_more_readers_more(gpu_results: Results) -> None:
    """DALI 2.4's video readers decode one clip at a time, one NVDEC session each (NVIDIA/DALI#6387;
    docs/pages/dali-behaviour.md): one reader keeps about one of the GPU's decoders busy. This
    flips, and the page must change, when a DALI release lets one reader use several engines."""
    from helpers.toolkit.devices import video_decoders

    document = gpu_results(NB07)
    results, parameters = document.results, document.parameters
    engines = video_decoders(results["gpu"], say=lambda _: None)
    counts, ways = results["readers_of_way"], results["alone"]["ways"]
    busy = {
        counts[name]: sum(t["nvdec_pct"] for t in way["trials"]) / len(way["trials"])
        for name, way in ways.items()
        if way["kind"] == "dali" and "eager" not in name
    }
    assert set(busy) == set(parameters["reader_counts"]), busy
    one_engine = 100 / engines
    assert busy[1] <= 1.5 * one_engine, f"one reader kept NVDEC {busy[1]:.0f}% busy: more than one engine"
    counts = sorted(busy)
    steps = zip(counts, counts[1:], strict=False)
    assert all(busy[a] < busy[b] for a, b in steps), busy  # each reader keeps another engine busy
    assert set(results["alignment"]) == {"readers.Video", "experimental.readers.Video", "decoders.video"}
    assert all(a["same"] * 2 <= a["neighbours"] for a in results["alignment"].values())  # every way checked
    assert "HEVC" in " ".join(results["goals"]).upper()  # the HEVC set fed the model too
