"""helpers.lessons.nb02_capture_mode: notebook 02's set-up, the sentences it generates from its results (each
worded by its interval), and its record, on small fake results."""

from __future__ import annotations

import dataclasses
import math
import re
import statistics
from pathlib import Path

import pytest
from fakes import fake_results

from helpers.data.data_sources import locate_data
from helpers.data.paths import REPO_ROOT
from helpers.data.registry import GOALS_GPU
from helpers.data.results_file import NotebookResults
from helpers.lessons import nb02_capture_mode as capture_mode
from helpers.toolkit.benchmarking import Ratio
from helpers.toolkit.benchmarking import Record
from helpers.toolkit.benchmarking import goal_lines
from helpers.toolkit.benchmarking import save_results
from helpers.toolkit.harness import Results
from helpers.toolkit.harness import Trial
from helpers.toolkit.harness import Way
from helpers.toolkit.parameters import ParameterError


def fake(rates: dict[str, list[float]]) -> Results:
    """Dynamic-mode ways, trials of 1,000 samples (tests/fakes.py)."""
    return fake_results(rates, kinds="dynamic", samples=1000)


FASTER = fake({"eager": [100, 110, 105, 98], "capture": [170, 180, 178, 168]})
TIE = fake({"eager": [100, 110, 105, 98], "capture": [120, 90, 130, 85]})
SLOWER = fake({"eager": [100, 110, 105, 98], "capture": [50, 56, 52, 50]})
SAME = {
    "name": "equal loss and held-out accuracy",
    "largest_epoch_loss_gap": 0.0,
    "test_accuracy": {"eager": 0.9, "capture": 0.9},
    "verdict": "met",
}


def test_the_per_round_spread_is_the_lowest_and_highest_ratio_of_the_rounds() -> None:
    rates = FASTER.rates("capture"), FASTER.rates("eager")
    assert capture_mode.per_round(*rates) == pytest.approx([1.7, 180 / 110, 178 / 105, 168 / 98])
    sentence = capture_mode.spread(*rates, "capture mode", "eager mode")
    assert f"from {180 / 110:.2f}x to {168 / 98:.2f}x" in sentence and "these 4 per-round ratios" in sentence
    with pytest.raises(ValueError):
        capture_mode.per_round([1.0, 2.0], [1.0])


@pytest.mark.parametrize(
    "results, words",
    [
        (FASTER, "faster than eager mode"),
        (TIE, "not distinguishable from eager mode"),
        (SLOWER, "slower than eager mode"),
    ],
)
def test_the_comparison_and_the_advice_follow_the_interval(results: Results, words: str) -> None:
    """The words follow the interval that the sentence itself prints: "faster" only above 1,
    "slower" only below, a tie when it holds 1; the advice follows the words."""
    sentence = capture_mode.compared(
        results.ratio("capture", "eager"), results.rates("capture"), results.rates("eager")
    )
    answer = capture_mode.conclusion(results, machine="cpu, test", equality=SAME, placement=None)
    for text in (sentence, answer):
        said = re.search(
            r"\*\*(faster than|slower than|not distinguishable from) eager mode "
            r"\(([\d.]+)x \[([\d.]+)-([\d.]+)\]\)\*\*",
            text,
        )
        assert said is not None, text
        verdict, (shown, low, high) = said.group(1), map(float, said.groups()[1:])
        assert words.startswith(verdict) and low <= shown <= high
        assert {
            "faster than": low > 1,
            "slower than": high < 1,
            "not distinguishable from": low <= 1 <= high,
        }[verdict], text
    assert "over 4 paired trials of 1,000 samples each" in answer
    advice = {
        "faster": "train with `next_epoch(..., capture=True)`",
        "not": "cannot tell the two modes apart",
        "slower": "keep the eager loop",
    }[words.split()[0]]
    every = ("train with `next_epoch", "cannot tell the two modes", "keep the eager loop")
    assert advice in answer and sum(a in answer for a in every) == 1
    # the advice to adopt capture mode is DALI's own check (the recipe's), not this suite's guard
    assert ("DALI's two capture warnings made errors" in answer) == words.startswith("faster")
    assert "Both modes trained alike" in answer and "90.0% (eager) and 90.0% (capture)" in answer
    apart = {**SAME, "verdict": "not met", "largest_epoch_loss_gap": 0.5}
    assert "did not train alike" in capture_mode.conclusion(
        results, machine="cpu", equality=apart, placement=None
    )


def test_a_placement_tie_gives_no_advice_and_says_what_would() -> None:
    tie = Ratio(0.85, 0.64, 1.14, 5, True)
    said = capture_mode.placement_sentence(tie)
    assert "not distinguishable from decoding on the CPU (0.85x [0.64-1.14])" in said
    assert "cannot tell the two placements apart" in said and "placement_epochs" in said
    assert "For this workload" not in said  # an interval that includes 1 supports no advice
    assert "decode on the GPU" in capture_mode.placement_sentence(Ratio(1.3, 1.1, 1.5, 5, True))
    assert "decode on the CPU" in capture_mode.placement_sentence(Ratio(0.7, 0.6, 0.8, 5, True))
    assert capture_mode.placement_sentence(None).startswith("Skipped:")


def test_the_equality_goal_is_met_only_with_the_same_losses_and_accuracy() -> None:
    losses = {"eager": [1.0, 0.5], "capture": [1.0, 0.5]}
    assert capture_mode.equality_goal(losses, {"eager": 0.9, "capture": 0.9})["verdict"] == "met"
    assert capture_mode.equality_goal(losses, {"eager": 0.9, "capture": 0.8})["verdict"] == "not met"
    apart = {"eager": [1.0, 0.5], "capture": [1.0, 0.51]}
    goal = capture_mode.equality_goal(apart, {"eager": 0.9, "capture": 0.9})
    assert goal["verdict"] == "not met" and goal["largest_epoch_loss_gap"] == pytest.approx(0.01)
    assert capture_mode.equality_line(goal).endswith(": not met")


def test_the_equality_line_is_judged_as_the_goal_lines_are() -> None:
    """On a machine that does not judge the goals (``judged`` False), the equality goal's line
    says so, in ``goal_lines``' words; judged (the default), its verdict alone."""
    losses = {"eager": [1.0, 0.5], "capture": [1.0, 0.5]}
    goal = capture_mode.equality_goal(losses, {"eager": 0.9, "capture": 0.9})
    assert capture_mode.equality_line(goal).endswith("(capture): met")
    assert capture_mode.equality_line(goal, judged=True) == capture_mode.equality_line(goal)
    said = f": met on this machine, not judged (the goals are stated for an {GOALS_GPU})"
    assert capture_mode.equality_line(goal, judged=False).endswith(f"(capture){said}")
    assert next(goal_lines({"g": Ratio(1.8, 1.7, 1.9, 5, True).goal(1.6)}, judged=False)).endswith(said)


def test_the_goal_note_judges_only_on_an_h200() -> None:
    assert "judge the goals" in capture_mode.goal_note("NVIDIA H200", "gpu")
    assert "not whether the goals hold" in capture_mode.goal_note("NVIDIA H200", "cpu")
    assert "not whether the goals hold" in capture_mode.goal_note(None, "cpu")


def test_the_plan_counts_the_samples_before_the_run() -> None:
    assert capture_mode.plan(2, 6, 47, 64).startswith("Planned: 2 ways x 5 rounds, after an untimed warm-up")


CPU = {
    "data_path": None,
    "test_path": None,
    "device": "cpu",
    "batch_size": 64,
    "epochs": None,
    "placement_epochs": 6,
    "min_seconds": None,
    "num_shards": None,
    "learning_rate": 0.01,
    "seed": 0,
    "results_dir": None,
}


def set_up(**changes) -> capture_mode.Setup:
    return capture_mode.set_up([""], **{**CPU, **changes})


def test_the_set_up_fills_in_the_devices_defaults_and_records_no_path_of_this_machine(tmp_path: Path) -> None:
    """On the CPU, None becomes 6 epochs, 20 shards and 1 s a trial; the data is the embedded copy's,
    recorded relative to the checkout; ``results_dir`` (where the record goes) is not recorded;
    a value given is kept; the set-up is read by attribute and cannot be changed."""
    setup = set_up(results_dir=str(tmp_path))
    data = locate_data(verbose=False)
    assert (setup.epochs, setup.num_shards, setup.min_seconds) == (6, 20, 1.0)
    assert (setup.device, setup.on_gpu, setup.model_device) == ("cpu", False, "cpu")
    assert (setup.data_path, setup.test_path) == (str(data.mnist_training), str(data.mnist_testing))
    recorded = setup.parameters
    assert set(recorded) == {
        "data_path",
        "test_path",
        "device",
        "batch_size",
        "epochs",
        "placement_epochs",
        "min_seconds",
        "num_shards",
        "learning_rate",
        "seed",
    }
    if Path(data.mnist_training).is_relative_to(REPO_ROOT):
        assert recorded["data_path"] == Path(data.mnist_training).relative_to(REPO_ROOT).as_posix()
    assert not any(str(REPO_ROOT) in str(v) or str(tmp_path) in str(v) for v in recorded.values()), recorded
    given = set_up(epochs=4, num_shards=3, min_seconds=0.5, data_path=str(REPO_ROOT / "x" / "train"))
    assert (given.epochs, given.num_shards, given.min_seconds) == (4, 3, 0.5)
    assert given.parameters["data_path"] == "x/train"
    with pytest.raises(dataclasses.FrozenInstanceError):
        setup.epochs = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        capture_mode.set_up([""], *CPU.values())  # keyword arguments only: none taken by position


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"epochs": 2}, "parameter epochs must be at least 3, not 2: the first epoch"),
        ({"placement_epochs": 1}, "parameter placement_epochs must be at least 3, not 1"),
        ({"batch_size": 0}, "parameter batch_size must be a positive integer, not 0"),
        ({"num_shards": "4"}, "parameter num_shards must be a positive integer, not '4'"),
        ({"learning_rate": 0}, "parameter learning_rate must be a number above 0, not 0"),
        ({"min_seconds": -1.0}, "parameter min_seconds must be a number of seconds, 0 or more, not -1.0"),
        ({"seed": -1}, "parameter seed must be an integer of 0 or more, not -1"),
    ],
)
def test_the_set_up_refuses_a_bad_value_by_name(changes: dict, message: str) -> None:
    with pytest.raises(ParameterError, match=re.escape(message)):
        set_up(**changes)


def test_the_record_holds_every_trial_and_figures_recomputed_from_them(tmp_path: Path) -> None:
    """The record is a Record that save_results writes: the set-up's parameters, each trial's rate,
    and each ratio worked out again here from the rates (the geometric mean of the per-round
    ratios, its interval around it), not read back from the code that made it."""
    setup = set_up(results_dir=str(tmp_path))
    placement = fake({"decode on the CPU": [200, 210, 190], "decode on the GPU": [220, 200, 230]})
    losses = {"eager": [1.0, 0.5], "capture": [1.0, 0.5]}
    rec = capture_mode.record(
        setup,
        fed=FASTER,
        placement=placement,
        losses=losses,
        goals={"capture / eager": FASTER.ratio("capture", "eager").goal(1.6)},
        equality=SAME,
        identical=True,
        test_digits=1000,
        captured=["Image"],
        rules={},
        batch_size_error="x",
    )
    assert isinstance(rec, Record) and rec.parameters == setup.parameters
    results, headline = rec.results, rec.headline

    def geometric_mean(a: list[float], b: list[float]) -> float:
        return math.exp(statistics.fmean(math.log(x / y) for x, y in zip(a, b, strict=True)))

    recorded = results["ratios"]["capture_over_eager"]
    expected = geometric_mean([170, 180, 178, 168], [100, 110, 105, 98])
    assert recorded["ratio"] == pytest.approx(expected) == headline["capture_over_eager"]
    low, high = recorded["ci95"]
    assert 1 < low < expected < high and recorded["trials"] == 4
    assert results["goals"]["capture / eager"]["verdict"] == "met"  # 1.6 is below the interval's low end
    trials = results["harness"]["training"]["ways"]["capture"]["trials"]
    assert [t["samples"] / t["seconds"] for t in trials] == pytest.approx([170, 180, 178, 168])
    assert results["training"]["capture"]["trial_samples_per_s"] == pytest.approx([170, 180, 178, 168])
    assert results["decode_placement"]["gpu"] == pytest.approx([220, 200, 230])
    gpu_over_cpu = results["ratios"]["gpu_decode_over_cpu_decode"]
    assert gpu_over_cpu["ratio"] == pytest.approx(geometric_mean([220, 200, 230], [200, 210, 190]))
    assert gpu_over_cpu["ci95"][0] < 1 < gpu_over_cpu["ci95"][1]  # three noisy rounds: a tie
    assert results["embedded_data"] is capture_mode.is_embedded(setup.data_path)
    assert results["samples_per_epoch"] == 1000 and results["identical_batches"] is True
    saved = NotebookResults.read(save_results("02-capture-mode", rec, setup.results_dir))
    assert (saved.parameters, saved.headline) == (setup.parameters, headline)
    assert saved.results["ratios"] == results["ratios"]
    with pytest.raises(TypeError, match="takes the Record"):
        save_results("02-capture-mode", (headline, results), setup.results_dir)  # type: ignore[arg-type]


def test_the_answer_says_when_capture_mode_timed_fewer_samples_than_eager_mode() -> None:

    ways = [Way("eager", lambda: None), Way("capture", lambda: None)]
    trials = {
        "eager": [Trial(1000, 1.0, 0.1, 1.0), Trial(1000, 1.1, 0.1, 1.0)],
        "capture": [Trial(936, 0.5, 0.1, 1.0, skipped=1), Trial(936, 0.52, 0.1, 1.0, skipped=1)],
    }
    answer = capture_mode.conclusion(
        Results("t", "samples", ways, trials, fed=True), machine="cpu, test", equality=SAME, placement=None
    )
    assert (
        "over 2 paired trials of 1,000 samples each (936 timed in capture mode: its batch ready before "
        "the timer is not timed)." in answer
    )
