"""helpers.lessons.nb06_checkpoint_resume, notebook 06's machinery: its set-up and record, the killer,
the kill steps, the costs and the sentences of the conclusion, each worded by its interval."""

from __future__ import annotations

import dataclasses
import math
import random
import signal
from pathlib import Path
from types import SimpleNamespace

import pytest

from helpers.data.paths import REPO_ROOT
from helpers.lessons.nb06_checkpoint_resume import COMPARISONS
from helpers.lessons.nb06_checkpoint_resume import Killer
from helpers.lessons.nb06_checkpoint_resume import Runs
from helpers.lessons.nb06_checkpoint_resume import Setup
from helpers.lessons.nb06_checkpoint_resume import boundaries_crossed
from helpers.lessons.nb06_checkpoint_resume import conclusion
from helpers.lessons.nb06_checkpoint_resume import cost_harness
from helpers.lessons.nb06_checkpoint_resume import cost_lines
from helpers.lessons.nb06_checkpoint_resume import costs
from helpers.lessons.nb06_checkpoint_resume import error_of
from helpers.lessons.nb06_checkpoint_resume import kill_step_before_the_last_epoch
from helpers.lessons.nb06_checkpoint_resume import kill_step_inside_an_epoch
from helpers.lessons.nb06_checkpoint_resume import loss_chart
from helpers.lessons.nb06_checkpoint_resume import quote
from helpers.lessons.nb06_checkpoint_resume import record
from helpers.lessons.nb06_checkpoint_resume import resume_line
from helpers.toolkit.benchmarking import Ratio
from helpers.toolkit.benchmarking import Record


def test_the_killer_signals_the_watched_rank_once_at_or_after_its_step() -> None:
    sent: list[tuple[int, int]] = []
    killer = Killer(step=5, rank=1, kill=lambda pid, sig: sent.append((pid, sig)))
    for line in [
        "rank 0 pid 10 step 6",
        "rank 1 pid 11 step 4",
        "eager: 2 process(es)",
        "rank 1 pid 11 step 5",
        "rank 1 pid 11 step 6",
    ]:
        killer(line)
    assert sent == [(11, signal.SIGKILL)]
    assert killer.killed == 5 and killer.last_seen == 6


def test_quote_keeps_the_scripts_own_lines_only() -> None:
    lines = [
        "rank 0 pid 1 step 3",
        "resumed from step-00000020 (step 20) in 9.1 ms",
        "eager: 1 process(es) on cpu",
        "torch.distributed.elastic... failed",
        "error (rank 0): x",
    ]
    assert quote(lines) == [
        "   | resumed from step-00000020 (step 20) in 9.1 ms",
        "   | eager: 1 process(es) on cpu",
        "   | error (rank 0): x",
    ]


def test_error_of_names_what_an_action_raises() -> None:
    assert error_of(lambda: int("x")).startswith("ValueError: invalid literal")
    assert error_of(lambda: None) == "no error"


def _setup(**changes) -> Setup:
    """1,024 records in steps of 64: 16 steps an epoch, 3 epochs; 2 ranks of 8 steps an epoch."""
    setup = Setup(
        data_path=REPO_ROOT / "data" / "mnist",
        train_path=Path("t"),
        workdir=Path("w"),
        device="cpu",
        processes=2,
        records=1024,
        batch_size=64,
        epochs=3,
        every=5,
        keep=2,
        learning_rate=0.05,
        trials=3,
        min_seconds=None,
        num_threads=1,
        seed=0,
        launch_timeout=300,
        results_dir=None,
        gpus=0,
        dist_device="cpu",
        pick=random.Random(0),
    )
    return dataclasses.replace(setup, **changes)


def test_the_setup_is_read_by_attribute_and_records_its_resolved_parameters() -> None:
    setup = _setup(records=1000, processes=3)
    assert (setup.steps_per_epoch, setup.total_steps) == (16, 48)  # 1,000 records: 16 steps, the last partly
    assert setup.rank_steps == 3 * 6  # a rank's shard: 334 records, 6 steps of 64
    with pytest.raises(dataclasses.FrozenInstanceError):
        setup.every = 1  # type: ignore[misc]
    assert setup.parameters == {
        "data_path": "data/mnist",
        "device": "cpu",
        "processes": 3,
        "records": 1000,
        "batch_size": 64,
        "epochs": 3,
        "every": 5,
        "keep": 2,
        "learning_rate": 0.05,
        "trials": 3,
        "num_threads": 1,
        "seed": 0,
    }


@pytest.mark.parametrize("seed", range(20))
def test_a_capture_kill_step_has_its_newest_checkpoint_inside_an_epoch(seed: int) -> None:
    setup = _setup(pick=random.Random(seed))
    step = kill_step_inside_an_epoch(setup)
    assert 11 <= step < setup.total_steps - 1
    assert (step // 5 * 5) % setup.steps_per_epoch != 0


@pytest.mark.parametrize("seed", range(20))
def test_a_torchrun_kill_step_leaves_an_epoch_boundary_to_cross(seed: int) -> None:
    setup = _setup(pick=random.Random(seed))
    assert setup.rank_steps == 24
    step = kill_step_before_the_last_epoch(setup)
    assert 11 <= step < setup.rank_steps - 1
    assert step // 5 * 5 < 2 * (setup.rank_steps // 3)


def test_torchrun_ranks_on_cpus_share_the_threads_and_ranks_on_gpus_have_them_each() -> None:
    assert _setup(num_threads=4, processes=2).rank_threads == 2
    assert _setup(num_threads=5, processes=2).rank_threads == 2
    assert _setup(num_threads=1, processes=3).rank_threads == 1  # at least one each
    assert _setup(num_threads=4, processes=2, device="gpu", dist_device="gpu").rank_threads == 4


@pytest.mark.parametrize(
    "start,crossed",
    [(0, 2), (40, 2), (127, 2), (128, 1), (255, 1), (256, 0), (300, 0)],
)
def test_the_epoch_boundaries_a_resumed_run_crosses(start: int, crossed: int) -> None:
    """3 epochs of 128 steps: a resume after step 128 (the first epoch done) runs steps 129 to 384,
    across the boundary between the second epoch and the third only."""
    assert boundaries_crossed(start, 384, 128) == crossed


class _Bench:
    """The part of helpers.toolkit.harness.Results that costs() and conclusion() read: ``rates`` and
    ``trials`` for the ways whose epochs are read (none: the trials say nothing of epochs)."""

    def __init__(
        self,
        eager_rate: float,
        ratios: dict[str, Ratio],
        rates: dict[str, float] | None = None,
        trials: dict[str, list] | None = None,
    ) -> None:
        self.eager_rate, self.ratios = eager_rate, ratios
        self.rates, self.trials = {"eager": eager_rate, **(rates or {})}, trials or {}

    def estimate(self, name: str) -> tuple[float, float, float]:
        return self.rates[name], self.rates[name], self.rates[name]

    def ratio(self, a: str, b: str) -> Ratio:
        return self.ratios[f"{a} / {b}"] if f"{a} / {b}" in self.ratios else Ratio(1.0, 0.9, 1.1, 5, True)


def test_costs_share_is_the_median_write_over_every_steps_of_the_eager_step() -> None:
    resumes = {
        "eager": {"step": 20, "seconds": 0.010, "to_first_step_seconds": 0.2},
        "capture": {"step": 30, "seconds": 0.006, "to_first_step_seconds": 0.5},
    }
    cost = costs(
        _Bench(6400.0, {}),
        [0.010, 0.030, 0.020],
        resumes,
        every=20,
        batch_size=64,
        checkpoint_bytes=1_000_000,
    )
    assert cost["step_ms"] == pytest.approx(10.0)  # 64 samples at 6,400 samples/s
    assert cost["share_of_steps"] == pytest.approx(20.0 / (20 * 10.0))
    assert cost["restore_ms"]["median"] == pytest.approx(8.0)
    assert cost["resumes"]["capture"] == pytest.approx(
        {"from_step": 30, "restore_ms": 6.0, "to_first_step_ms": 500.0}
    )
    lines = cost_lines(cost, Ratio(0.9, 0.8, 1.0, 5, True), processes=2)
    assert "adds 10.0% to their time" in lines[-2] and lines[-2].endswith(
        "(that is 0.0% to 25.0% more time: the writes' estimate lies within it)"
    )
    slower = cost_lines(cost, Ratio(0.80, 0.75, 0.85, 5, True), processes=2)[-2]
    assert slower.endswith(
        "(that is 17.6% to 33.3% more time: the writes' estimate lies below it; something besides the "
        "writes may add the rest)"
    )
    faster = cost_lines(cost, Ratio(0.97, 0.95, 0.99, 5, True), processes=2)[-2]
    assert faster.endswith(
        "(that is 1.0% to 5.3% more time: the writes' estimate lies above it; the steps may have lost "
        "less time than the writes took)"
    )
    assert "median 20.0 ms (min 10.0, max 30.0, 3 writes)" in lines[0]
    assert any("capture" in line and "first step done after   500.0 ms" in line for line in lines)
    assert lines[-1] == "size of a 2-rank checkpoint: 1.00 MB"


def _cost_line(share: float, direct: Ratio) -> str:
    """The cost report's line of the writes' estimate (``share`` of the steps' time) beside ``direct``."""
    cost = {
        "write_ms": {"median": 11.5, "min": 8.0, "max": 18.7, "n": 166},
        "restore_ms": {"median": 7.7, "n": 1},
        "resumes": {"eager": {"from_step": 420, "restore_ms": 6.5, "to_first_step_ms": 2895.8}},
        "step_ms": 6.1,
        "share_of_steps": share,
        "every": 20,
        "bytes": 843_682,
    }
    return cost_lines(cost, direct, processes=2)[-2]


def test_the_cost_line_prints_the_interval_as_time_added_to_the_estimates_precision() -> None:
    """The record of 2026-12-05-4: an estimate of 9.44% against an interval of 9.49% to 17.54% was
    printed "9.4%" beside "9% to 18%", below the interval in words, inside it to the eye. The
    bounds to one decimal, as the estimate; the estimate named for what it comes from (the median
    write, eager's mean step), not "medians"; below it, worded as what the run shows."""
    line = _cost_line(0.09444309589764263, Ratio(0.8815, 0.8507590955662474, 0.9133631367536669, 6, True))
    assert line == (
        "a step: 6.1 ms (eager, from its mean rate); estimated from the median write and eager's mean "
        "step, one checkpoint every 20 steps adds 9.4% to their time; measured directly, eager + "
        "checkpoints / eager: 0.88x [0.85-0.91] (that is 9.5% to 17.5% more time: the writes' estimate "
        "lies below it; something besides the writes may add the rest)"
    )
    assert "medians" not in line


def test_where_the_estimate_lies_is_judged_as_printed() -> None:
    """An estimate and a bound that print alike are not said apart: 9.46% and 9.49% both print
    9.5%, within the interval."""
    direct = Ratio(0.88, 1 / 1.1754, 1 / 1.0949, 6, True)  # 9.49% to 17.54% more time
    assert _cost_line(0.0946, direct).endswith(
        "adds 9.5% to their time; measured directly, eager + checkpoints / eager: 0.88x [0.85-0.91] "
        "(that is 9.5% to 17.5% more time: the writes' estimate lies within it)"
    )
    assert _cost_line(0.0944, direct).endswith(
        "lies below it; something besides the writes may add the rest)"
    )
    assert _cost_line(0.1756, direct).endswith(
        "lies above it; the steps may have lost less time than the writes took)"
    )


@pytest.mark.parametrize(
    "direct,said",
    [
        (
            Ratio(1.0, 0.95, 1.05, 6, True),
            "(that is 4.8% less to 5.3% more time: the writes' estimate lies within",
        ),
        (
            Ratio(1.1, 1.05, 1.15, 6, True),
            "(that is 4.8% to 13.0% less time: the writes' estimate lies above",
        ),
        (
            Ratio(0.96, 0.9, 0.99995, 6, True),
            "(that is 0.0% to 11.1% more time: the writes' estimate lies within",
        ),
    ],
)
def test_an_interval_that_reaches_less_time_is_said_as_less_time(direct: Ratio, said: str) -> None:
    assert said in _cost_line(0.05, direct)


def test_the_cost_harness_times_the_scripts_trainer_five_ways_in_one_context(tmp_path: Path) -> None:
    """Each way a loader of the script's Trainer (rank 0 of 1, quiet, more epochs than the trials
    run) under its own run name and mode, writing checkpoints every ``every`` steps or none; all
    the trainers in one EvalContext (DALI's eager reader keeps its context entered between batches)."""
    made: list[tuple[list[str], dict]] = []

    def trainer(args: list[str], **kwargs: object) -> int:
        made.append((args, kwargs))
        return len(made)

    setup = _setup(workdir=tmp_path, min_seconds=0.5, every=7)
    harness, ways = cost_harness(Runs(SimpleNamespace(parse_args=list, Trainer=trainer), setup))
    assert not made  # a trainer is made when the harness first uses its way
    assert [way.make() for way in ways] == [1, 2, 3, 4, 5]

    def flag(args: list[str], name: str) -> str | None:
        return args[args.index(name) + 1] if name in args else None

    assert [(w.name, flag(a, "--out"), flag(a, "--mode"), flag(a, "--every"), flag(a, "--checkpoints"))
            for w, (a, _) in zip(ways, made, strict=True)] == [
        ("eager", str(tmp_path / "bench-eager.json"), "eager", "0", None),
        ("eager + checkpoints", str(tmp_path / "bench-eager-ckpt.json"), "eager", "7",
         str(tmp_path / "bench-eager-ckpt")),
        ("capture, epoch readers", str(tmp_path / "bench-epochs.json"), "capture", "0", None),
        ("capture, epoch readers + checkpoints", str(tmp_path / "bench-epochs-ckpt.json"), "capture", "7",
         str(tmp_path / "bench-epochs-ckpt")),
        ("capture", str(tmp_path / "bench-capture.json"), "capture-plain", "0", None),
    ]  # fmt: skip
    assert all(flag(a, "--epochs") == "1000" and a[-1] == "--quiet" for a, _ in made)
    assert all((k["rank"], k["local_rank"], k["world"]) == (0, 0, 1) for _, k in made)
    contexts = {id(k["ctx"]) for _, k in made}
    assert len(contexts) == 1 and made[0][1]["ctx"] is not None
    assert (harness.unit, harness.min_seconds) == ("samples", 0.5)


BRANCHES = {
    "pays for a new reader",
    "was faster than one reader",
    "cannot tell what making a capture loop resumable costs",
}


@pytest.mark.parametrize(
    "resumable,words",
    [
        (Ratio(0.45, 0.35, 0.57, 5, True), "pays for a new reader"),
        (Ratio(1.30, 1.10, 1.50, 5, True), "was faster than one reader"),
        (Ratio(0.90, 0.70, 1.10, 5, True), "cannot tell what making a capture loop resumable costs"),
    ],
)
def test_the_conclusion_follows_the_interval_of_resumable_capture(resumable: Ratio, words: str) -> None:
    """One advice by the interval of resumable capture / capture, and not the others; each check
    said for its own mode; the costs' figures are this run's."""
    label = "capture, epoch readers + checkpoints / capture"
    overhead = Ratio(0.80, 0.75, 0.85, 5, True)  # eager + checkpoints / eager: slower
    bench = _Bench(
        6400.0, {" / ".join(COMPARISONS[label]): resumable, "eager + checkpoints / eager": overhead}
    )
    same, differs = {"bit_identical": True}, {"bit_identical": False, "largest_loss_gap": 3e-6}
    cost = {
        "write_ms": {"median": 11.7},
        "restore_ms": {"median": 8.1},
        "every": 20,
        "resumes": {"eager": {"to_first_step_ms": 3161.5}, "in kernel": {"to_first_step_ms": 628.7}},
    }
    text = conclusion(
        machine="gpu, H200",
        checks={"eager": same, "capture": differs, "distributed": same},
        dist_device="cpu",
        processes=2,
        refused=6,
        cost=cost,
        bench=bench,
    )
    assert [w for w in BRANCHES if w in text] == [words]
    assert (
        "bit-identical in eager mode and not bit-identical (largest loss difference 3.0e-06) in capture mode"
    ) in text
    assert "with 2 ranks under torchrun on cpu, bit-identical." in text
    assert "6 damaged, missing or incompatible checkpoints were refused" in text
    assert "A checkpoint took 11.7 ms to write, and `restore()` alone 8.1 ms (medians)." in text
    assert "first step was done 0.6 to 3.2 s after its restore began" in text
    assert (
        "With a checkpoint every 20 steps, eager mode was **slower than eager mode without them "
        "(0.80x [0.75-0.85])**" in text
    )
    # the trials say no epoch length
    assert (
        f"and no checkpoints ({resumable})** over this run's epochs. With a reader per epoch and no "
        "checkpoints, the loop was not distinguishable from capture mode with one reader (1.00x "
        "[0.90-1.10]); with checkpoints added, the loop was not distinguishable from the same loop without "
        "them (1.00x [0.90-1.10])."
    ) in text
    assert (
        "This run's trials do not say one epoch length, nor whether the cost paid once an epoch (a new "
        "reader, trace and pipeline) grows with the epoch; if it does not, it is a smaller share of a "
        "longer one."
    ) in text


def _conclusion_of(bench: _Bench) -> str:
    """The conclusion of a run whose three resumes were bit-identical, for ``bench``'s ratios."""
    same = {"bit_identical": True}
    cost = {
        "write_ms": {"median": 11.7},
        "restore_ms": {"median": 8.1},
        "every": 20,
        "resumes": {"eager": {"to_first_step_ms": 3161.5}},
    }
    return conclusion(
        machine="gpu, H200",
        checks={"eager": same, "capture": same, "distributed": same},
        dist_device="cpu",
        processes=2,
        refused=6,
        cost=cost,
        bench=bench,
    )


ADVICE = {
    "faster than a resumable capture loop",
    "not distinguishable from them here",
    "make a capture loop resumable",
}


@pytest.mark.parametrize(
    "versus_eager,words",
    [
        (Ratio(0.80, 0.70, 0.90, 5, True), "faster than a resumable capture loop"),
        (Ratio(0.93, 0.83, 1.04, 5, True), "not distinguishable from them here"),
        (Ratio(1.40, 1.29, 1.53, 5, True), "make a capture loop resumable"),
    ],
)
def test_what_to_do_follows_resumable_capture_against_eager_with_checkpoints(
    versus_eager: Ratio, words: str
) -> None:
    """The advice names the way the interval of resumable capture / eager + checkpoints favours,
    and says why the recipe is the eager loop when they tie."""
    label = "capture, epoch readers + checkpoints / eager + checkpoints"
    bench = _Bench(6400.0, {" / ".join(COMPARISONS[label]): versus_eager})
    text = _conclusion_of(bench)
    advice = text.split("\n\n")[-1]
    assert advice.startswith("What to do: ") and [w for w in ADVICE if w in advice] == [words], advice
    assert "(the recipe)" in advice


def test_resumable_capture_is_said_per_epoch_of_the_runs_length() -> None:
    """0.5x of capture mode is what a new reader, trace and pipeline an epoch cost over epochs of
    this length: the words give the epoch's steps and the time it added, not a ratio of the mode."""
    from helpers.lessons.nb06_checkpoint_resume import epoch_cost
    from helpers.toolkit.harness import Trial

    resumable = "capture, epoch readers + checkpoints"
    # 3 epochs of 256 steps of 64 a trial, one batch handed over: 767 timed
    trials = {resumable: [Trial(767 * 64, 10.0, 0.0, 1.0, skipped=1, batches=767, epochs=3)] * 2}
    bench = _Bench(
        6400.0,
        {f"{resumable} / capture": Ratio(0.5, 0.45, 0.55, 5, True)},
        rates={resumable: 3200.0, "capture": 6400.0},
        trials=trials,
    )
    steps, seconds = epoch_cost(bench, resumable, "capture")
    assert steps == 256 and seconds == pytest.approx(256 * 64 * (1 / 3200 - 1 / 6400))  # 2.56 s
    text = _conclusion_of(bench)
    assert (
        "slower than capture mode with one reader and no checkpoints (0.50x [0.45-0.55])** over epochs "
        "of 256 steps, about 2.56 s more an epoch"
    ) in text
    # its parts, each worded by its interval: the readers alone against one reader, the checkpoints
    # added against the same loop without them
    assert (
        "With a reader per epoch and no checkpoints, the loop was not distinguishable from capture mode "
        "with one reader (1.00x [0.90-1.10]); with checkpoints added, the loop was not distinguishable "
        "from the same loop without them (1.00x [0.90-1.10])."
    ) in text
    halves = {
        **bench.ratios,
        "capture, epoch readers / capture": Ratio(0.45, 0.4, 0.5, 5, True),
        f"{resumable} / capture, epoch readers": Ratio(1.1, 1.05, 1.15, 5, True),
    }
    text = _conclusion_of(_Bench(6400.0, halves, rates=bench.rates, trials=trials))
    # slower, as the whole loop was: "already"
    assert (
        "With a reader per epoch and no checkpoints, the loop was already slower than capture mode with one "
        "reader (0.45x" in text
    )
    assert "with checkpoints added, the loop was faster than the same loop without them (1.10x" in text
    faster = {**halves, "capture, epoch readers / capture": Ratio(1.2, 1.1, 1.3, 5, True)}
    text = _conclusion_of(_Bench(6400.0, faster, rates=bench.rates, trials=trials))
    assert (
        "With a reader per epoch and no checkpoints, the loop was faster than capture mode with one reader "
        "(1.20x" in text
    )
    mixed = {
        resumable: [
            Trial(767 * 64, 10.0, 0.0, 1.0, skipped=1, batches=767, epochs=3),
            Trial(511 * 64, 10.0, 0.0, 1.0, skipped=1, batches=511, epochs=3),
        ]
    }
    assert epoch_cost(_Bench(6400.0, {}, trials=mixed), resumable, "capture") is None


def test_resumable_capture_is_said_in_sentences_of_their_own() -> None:
    """The record of 2026-12-05-4, said again: the two parts in a sentence of their own (what adding
    the checkpoints did, not what they "made it"; the loop with a reader per epoch, not the reader,
    compared), the once-an-epoch cost a smaller share of a longer epoch only if it does not grow
    with the epoch (one epoch length cannot tell), and the comparison with eager mode with its
    subject named."""
    from helpers.toolkit.harness import Trial

    resumable = "capture, epoch readers + checkpoints"
    trials = {resumable: [Trial(767 * 64, 10.0, 0.0, 1.0, skipped=1, batches=767, epochs=3)] * 2}
    ratios = {  # as recorded
        f"{resumable} / capture": Ratio(0.4549, 0.3985, 0.5195, 6, True),
        "capture, epoch readers / capture": Ratio(0.4644, 0.4057, 0.5316, 6, True),
        f"{resumable} / capture, epoch readers": Ratio(0.98, 0.83, 1.15, 6, True),
        f"{resumable} / eager + checkpoints": Ratio(0.8258, 0.7512, 0.9078, 6, True),
    }
    # 1.17 s more an epoch of 256 steps of 64
    rates = {resumable: 1 / (1 / 6400 + 1.17 / (256 * 64)), "capture": 6400.0}
    paragraph = _conclusion_of(_Bench(6400.0, ratios, rates=rates, trials=trials)).split("\n\n")[2]
    assert paragraph == (
        "Made resumable (a reader, a random generator and an `EvalContext` per epoch), capture mode was "
        "**slower than capture mode with one reader and no checkpoints (0.45x [0.40-0.52])** over epochs "
        "of 256 steps, about 1.17 s more an epoch (from the mean rates). With a reader per epoch and no "
        "checkpoints, the loop was already slower than capture mode with one reader (0.46x [0.41-0.53]); "
        "with checkpoints added, the loop was not distinguishable from the same loop without them (0.98x "
        "[0.83-1.15]). This run times epochs of one length, so it cannot tell whether the cost paid once "
        "an epoch (a new reader, trace and pipeline) grows with the epoch; if it does not, it is a smaller "
        "share of a longer one. The resumable capture loop was "
        "**slower than eager mode with checkpoints (0.83x [0.75-0.91])**."
    )


def test_every_comparison_is_printed_and_recorded_the_checkpoints_within_epoch_readers_too() -> None:
    """The conclusion's ratio of the checkpoints within the epoch readers' loop is one of the cost
    report's comparisons (printed, and kept in the record's ratios); the headline keeps its four."""
    from helpers.lessons.nb06_checkpoint_resume import HEADLINE_RATIOS

    label = "capture, epoch readers + checkpoints / capture, epoch readers"
    assert COMPARISONS[label] == ("capture, epoch readers + checkpoints", "capture, epoch readers")
    assert all(label == " / ".join(pair) for label, pair in COMPARISONS.items())
    assert set(HEADLINE_RATIOS.values()) == set(COMPARISONS) - {label}


def test_a_resume_that_differs_is_said_with_its_gaps() -> None:
    differs = {"bit_identical": False, "largest_loss_gap": 2.5e-6, "largest_weight_gap": 1e-7}
    assert resume_line(differs, "eager", "gpu") == (
        "eager (gpu): NOT bit-identical: largest loss difference 2.50e-06, largest weight difference 1.00e-07"
    )
    same = resume_line({"bit_identical": True}, "eager", "cpu")
    assert same.endswith("bit-identical to the uninterrupted run")


class _Harness(_Bench):
    """What record() reads of the harness's results besides ratios: the ways, their rates, the record."""

    def __init__(self, ratios: dict[str, Ratio]) -> None:
        super().__init__(6400.0, ratios)
        self.ways = [SimpleNamespace(name=name) for name in ("eager", "capture")]
        self.rates = {"eager": [100.0, 120.0], "capture": [300.0, 330.0]}.__getitem__  # type: ignore[assignment]

    def as_record(self) -> dict:
        return {"ways": {}}


def test_the_record_takes_each_value_from_its_own_lesson() -> None:
    """Every ratio its own figure, every check its own mode: a value read from the wrong lesson,
    or a headline key on the wrong ratio, fails."""
    setup = _setup()
    ratios = {
        " / ".join(pair): Ratio(0.5 + i / 20, 0.4 + i / 20, 0.6 + i / 20, 3, True)
        for i, pair in enumerate(COMPARISONS.values())
    }
    eager_check = {"bit_identical": True, "losses_identical": True, "steps_compared": 48}
    capture_check = {"bit_identical": False, "losses_identical": False, "steps_compared": 47}
    dist_check = {"bit_identical": True, "losses_identical": True, "steps_compared": 24}
    cost = {
        "write_ms": {"median": 12.0},
        "restore_ms": {"median": 8.0},
        "share_of_steps": 0.05,
        "resumes": {
            "eager": {"to_first_step_ms": 300.0},
            "capture": {"to_first_step_ms": 500.0},
            "after damage": {"to_first_step_ms": 100.0},
        },
    }
    bad = {"all_corrupt": {"refused": True}, "missing": {"refused": True}}
    rec = record(
        setup,
        restore_identical=True,
        save_without_seq="ValueError: {seq}",
        capture_with_checkpointing="NotImplementedError: no",
        chosen_step=17,
        killer=SimpleNamespace(killed=18),
        killed_launch=SimpleNamespace(returncode=-9),
        resumed={"resumed": {"step": 15}},
        eager_check=eager_check,
        fallback={"skipped": ["step-00000015 (truncated)"], "resumed": {"step": 10}, "resumed_from": 10},
        bad=bad,
        capture_killer=SimpleNamespace(killed=29),
        capture_res={"resumed": {"step": 25}, "fast_forward_batches": 9},
        capture_check=capture_check,
        dist_killer=SimpleNamespace(killed=14),
        dist_launch=SimpleNamespace(root_cause="rank 1 was killed by signal 9 first"),
        dist_res={"resumed": {"step": 10}},
        dist_check=dist_check,
        parts=["rank-1.pt", "model.pt", "MANIFEST.json", "rank-0.pt"],
        states=["a", "b"],
        crossed=2,
        bench=_Harness(ratios),
        cost=cost,
    )
    assert isinstance(rec, Record) and rec.parameters == setup.parameters
    by_label = {label: ratios[" / ".join(pair)].ratio for label, pair in COMPARISONS.items()}
    assert rec.headline == {
        "kill_step": 18,
        "resumed_from": 15,
        "bit_identical": 1,
        "checkpoint_write_ms": 12.0,
        "checkpoint_restore_ms": 8.0,
        "resume_first_step_ms": 300.0,
        "checkpoint_share_of_steps": 0.05,
        "epoch_readers_over_capture": by_label["capture, epoch readers / capture"],
        "resumable_capture_over_capture": by_label["capture, epoch readers + checkpoints / capture"],
        "resumable_capture_over_eager_checkpoints": by_label[
            "capture, epoch readers + checkpoints / eager + checkpoints"
        ],
        "eager_checkpoints_over_eager": by_label["eager + checkpoints / eager"],
    }
    results = rec.results
    assert results["resume"]["steps_redone"] == 3 and results["resume"]["chosen_step"] == 17
    assert results["resume"]["steps_compared"] == 48 and results["resume"]["returncode"] == -9
    assert results["resume"]["corrupt_checkpoint_rejected"] is True
    assert "resumed" not in results["resume"]["fallback"]
    assert results["capture_resume"] == {
        "signal": "SIGKILL",
        "kill_step": 29,
        "resumed_from": 25,
        "fast_forward_batches": 9,
        **capture_check,
    }
    dist = results["distributed"]
    assert dist["parts"] == ["MANIFEST.json", "model.pt", "rank-0.pt", "rank-1.pt"]
    assert (dist["killed_rank"], dist["kill_step"], dist["resumed_from"]) == (1, 14, 10)
    assert (dist["distinct_reader_states"], dist["epoch_boundaries_after_resume"]) == (2, 2)
    assert dist["steps_compared"] == 24
    assert results["dali_api"] == {
        "restore_identical": True,
        "save_without_seq": "ValueError: {seq}",
        "capture_with_checkpointing": "NotImplementedError: no",
    }
    assert (results["steps_per_epoch"], results["total_steps"]) == (16, 48)
    recorded = results["benchmark"]["ratios"]["eager + checkpoints / eager"]
    assert recorded["ratio"] == by_label["eager + checkpoints / eager"]
    assert recorded["verdict"] == "slower than the second"  # 0.70x [0.60-0.80]: its own interval
    assert set(results["benchmark"]["ratios"]) == set(COMPARISONS)  # each comparison kept, headline or not
    within = results["benchmark"]["ratios"]["capture, epoch readers + checkpoints / capture, epoch readers"]
    assert within["ratio"] == by_label["capture, epoch readers + checkpoints / capture, epoch readers"]


@pytest.mark.parametrize("same", [True, False])
def test_the_loss_chart_says_whether_the_resumed_losses_are_the_uninterrupted_runs(same: bool) -> None:
    import matplotlib.pyplot as plt

    reference = {"losses": [[2.0, 1.5, 1.2, 1.0, 0.9, 0.8]]}
    resumed = {"resumed": {"step": 3}, "losses": [[2.0, 1.5, 1.2, 1.0, 0.9, 0.8 if same else 0.7]]}
    chart = loss_chart(reference, resumed, killed=5)
    plt.close(chart)
    assert chart.alt.startswith("Line chart of the training loss at each of 6 steps")
    assert "from the checkpoint of step 3 on, after a SIGKILL at step 5" in chart.alt
    assert chart.alt.endswith(
        "are the same as the uninterrupted run's." if same else "differ from the uninterrupted run's."
    )


def test_a_single_trial_gives_the_cost_line_without_an_interval_to_place_the_estimate_in() -> None:
    """trials=1 passes 06's parameter check; its ratio has no interval (0 to infinity): the line
    says the ratio and the estimate, and nothing about where the estimate lies (no division by 0)."""
    line = _cost_line(0.094, Ratio(0.88, 0.0, math.inf, 1, True))
    assert "adds 9.4% to their time; measured directly, eager + checkpoints / eager: " in line
    assert "that is" not in line and "estimate lies" not in line
