"""helpers.lessons.nb02_capture_mode: notebook 02's set-up, the sentences it generates from its results (each
worded by its interval), and its record, on small fake results."""

from __future__ import annotations

import pytest

from helpers.lessons import nb02_capture_mode as capture_mode
from helpers.toolkit.benchmarking import Ratio
from helpers.toolkit.benchmarking import ratio
from helpers.toolkit.harness import Results
from helpers.toolkit.harness import Trial
from helpers.toolkit.harness import Way
from helpers.toolkit.parameters import ParameterError


def fake(rates: dict[str, list[float]], samples: int = 1000) -> Results:
    ways = [Way(name, lambda: None, kind="dynamic") for name in rates]
    trials = {name: [Trial(samples, samples / r, 0.1, 0.5) for r in values] for name, values in rates.items()}
    return Results("fake", "samples", ways, trials, fed=True)


FASTER = fake({"eager": [100, 110, 105, 98], "capture": [170, 180, 178, 168]})
TIE = fake({"eager": [100, 110, 105, 98], "capture": [120, 90, 130, 85]})
SLOWER = fake({"eager": [100, 110, 105, 98], "capture": [50, 56, 52, 50]})
SAME = {"name": "equal loss and held-out accuracy", "largest_epoch_loss_gap": 0.0,
        "test_accuracy": {"eager": 0.9, "capture": 0.9}, "verdict": "met"}


def test_the_per_round_spread_is_the_lowest_and_highest_ratio_of_the_rounds() -> None:
    rates = FASTER.rates("capture"), FASTER.rates("eager")
    assert capture_mode.per_round(*rates) == pytest.approx([1.7, 180 / 110, 178 / 105, 168 / 98])
    sentence = capture_mode.spread(*rates, "capture mode", "eager mode")
    assert f"from {180 / 110:.2f}x to {168 / 98:.2f}x" in sentence and "these 4 per-round ratios" in sentence
    with pytest.raises(ValueError):
        capture_mode.per_round([1.0, 2.0], [1.0])


@pytest.mark.parametrize("results, words", [(FASTER, "faster than eager mode"),
                                            (TIE, "not distinguishable from eager mode"),
                                            (SLOWER, "slower than eager mode")])
def test_the_comparison_and_the_advice_follow_the_interval(results: Results, words: str) -> None:
    r = results.ratio("capture", "eager")
    side = {"faster": r.low > 1, "not": r.low <= 1 <= r.high, "slower": r.high < 1}[words.split()[0]]
    assert side, f"the fixture's interval {r} is not the case '{words}' is about"
    assert f"**{words} ({r})**" in capture_mode.compared(r, results.rates("capture"), results.rates("eager"))
    answer = capture_mode.conclusion(results, machine="cpu, test", equality=SAME, placement=None)
    assert f"**{words} ({r})**" in answer and "over 4 paired trials of 1,000 samples each" in answer
    advice = {"faster": "train with `next_epoch(..., capture=True)`",
              "not": "cannot tell the two modes apart", "slower": "keep the eager loop"}[words.split()[0]]
    assert advice in answer
    assert "Both modes trained alike" in answer and "90.0% (eager) and 90.0% (capture)" in answer
    apart = {**SAME, "verdict": "not met", "largest_epoch_loss_gap": 0.5}
    assert "did not train alike" in capture_mode.conclusion(results, machine="cpu", equality=apart,
                                                            placement=None)


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


def test_the_goal_note_judges_only_on_an_h200() -> None:
    assert "judge the goals" in capture_mode.goal_note("NVIDIA H200", "gpu")
    assert "not whether the goals hold" in capture_mode.goal_note("NVIDIA H200", "cpu")
    assert "not whether the goals hold" in capture_mode.goal_note(None, "cpu")


def test_the_plan_counts_the_samples_before_the_run() -> None:
    assert capture_mode.plan(2, 6, 47, 64).startswith("Planned: 2 ways x 5 rounds, after an untimed warm-up")


def test_the_record_holds_every_trial_and_figures_recomputed_from_them() -> None:
    placement = fake({"decode on the CPU": [200, 210, 190], "decode on the GPU": [220, 200, 230]})
    losses = {"eager": [1.0, 0.5], "capture": [1.0, 0.5]}
    headline, results = capture_mode.record(
        fed=FASTER, placement=placement, losses=losses,
        goals={"capture / eager": FASTER.ratio("capture", "eager").goal(1.6)}, equality=SAME,
        identical=True, test_digits=1000, data_path="/nowhere", captured=["Image"], rules={},
        batch_size_error="x")
    r = FASTER.ratio("capture", "eager")
    assert results["ratios"]["capture_over_eager"] == {"ratio": r.ratio, "ci95": [r.low, r.high], "trials": 4}
    assert headline["capture_over_eager"] == r.ratio
    trials = results["harness"]["training"]["ways"]["capture"]["trials"]
    assert [t["samples"] / t["seconds"] for t in trials] == pytest.approx(results["training"]["capture"]
                                                                           ["trial_samples_per_s"])
    assert results["decode_placement"]["gpu"] == pytest.approx([220, 200, 230])
    gpu_over_cpu = ratio([220, 200, 230], [200, 210, 190])
    assert results["ratios"]["gpu_decode_over_cpu_decode"]["ratio"] == pytest.approx(gpu_over_cpu.ratio)
    assert results["embedded_data"] is False and results["samples_per_epoch"] == 1000


def test_the_set_up_refuses_a_bad_value_by_name() -> None:
    namespace = {"data_path": None, "test_path": None, "device": "cpu", "batch_size": 64, "epochs": 2,
                 "placement_epochs": 11, "num_shards": None}
    with pytest.raises(ParameterError, match="parameter epochs must be at least 3, not 2: the first epoch"):
        capture_mode.set_up([""], namespace)


def test_the_answer_says_when_capture_mode_timed_fewer_samples_than_eager_mode() -> None:
    from helpers.toolkit.harness import Trial
    from helpers.toolkit.harness import Way

    ways = [Way("eager", lambda: None), Way("capture", lambda: None)]
    trials = {"eager": [Trial(1000, 1.0, 0.1, 1.0), Trial(1000, 1.1, 0.1, 1.0)],
              "capture": [Trial(936, 0.5, 0.1, 1.0, skipped=1), Trial(936, 0.52, 0.1, 1.0, skipped=1)]}
    answer = capture_mode.conclusion(Results("t", "samples", ways, trials, fed=True), machine="cpu, test",
                                     equality=SAME, placement=None)
    assert "over 2 paired trials of 1,000 samples each (936 timed in capture mode: its batch ready before " \
        "the timer is not timed)." in answer
