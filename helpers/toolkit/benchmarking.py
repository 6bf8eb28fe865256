"""How the suite measures: interleaved trials, ratios with 95% intervals, verdicts that follow
the interval, and results JSON that say where the numbers came from.

The method, used by every notebook that compares speeds:

1. Each configuration is measured in several **trials** (5 or more on the GPU tier), each after
   a warm-up and at steady state (``helpers.toolkit.harness``). The trials are **interleaved**: round
   ``k`` runs every configuration once, in an order of its own (rotated by ``k`` in
   ``interleaved_order``; seeded and random in the harness), so no configuration always runs
   first, last or after the same one, and a slow phase of the machine hits every configuration
   alike.
2. A **ratio** between two configurations (``ratio``) is the geometric mean of the per-round
   ratios (trial ``k`` of A over trial ``k`` of B, measured minutes apart), with a 95% interval
   from Student's t on their logarithms. With unequal numbers of trials the rounds cannot be
   paired, and the interval compares the two sets of log rates (Welch).
3. A **goal** such as "A is at least 1.5x B" is *met* when the interval's low end clears it,
   *not met* when its high end is below it, and *inconclusive* otherwise (``verdict``).
4. A "best" configuration is **selected** on some trials and **reported** from confirmation
   trials measured afterwards, beside its reference in the same rounds: the maximum of many
   noisy numbers is biased upwards (the winner's curse), a re-measurement is not.
5. Every configuration shows its **coefficient of variation** (stdev / mean over trials);
   above 10% (``NOISY_CV``) it is flagged: its numbers move more than most differences.
"""

from __future__ import annotations

import math
import os
import platform
import statistics
import subprocess
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from typing import NamedTuple

from helpers.data.paths import REPO_ROOT
from helpers.data.registry import GOALS_GPU
from helpers.data.results_file import RESULTS_FOLDER_VARIABLE
from helpers.data.results_file import NotebookResults
from helpers.toolkit.devices import gpu_count

NOISY_CV = 0.10  # a configuration whose trials vary more than this is flagged
CONFIDENCE = 0.95


def summarize(values: Sequence[float]) -> dict[str, float]:
    """Median, range and coefficient of variation of repeated measurements (``spread`` =
    (max - min) / median; ``cv`` = stdev / mean, 0 for a single value)."""
    if not values:
        raise ValueError("no measurements to summarize")
    median = statistics.median(values)
    mean = statistics.fmean(values)
    stdev = statistics.stdev(values) if len(values) > 1 else 0.0
    return {
        "n": len(values),
        "median": median,
        "min": min(values),
        "max": max(values),
        "mean": mean,
        "stdev": stdev,
        "cv": stdev / mean if mean else 0.0,
        "noisy": bool(mean and stdev / mean > NOISY_CV),
        "spread": (max(values) - min(values)) / median if median else 0.0,
    }


def interleaved_order(names: Sequence[str], trial: int) -> list[str]:
    """The order of round ``trial``: the configurations rotated by ``trial`` places. Over
    ``len(names)`` rounds each configuration takes each position once."""
    if not names:
        return []
    shift = trial % len(names)
    return list(names[shift:]) + list(names[:shift])


def interleaved_trials(
    names: Sequence[str],
    measure: Callable[[str, int], Any],
    trials: int,
    *,
    on_done: Callable[[str, int], None] | None = None,
    until: Callable[[dict[str, list[Any]]], bool] | None = None,
    most: int | None = None,
    order: Callable[[Sequence[str], int], list[str]] = interleaved_order,
) -> dict[str, list[Any]]:
    """Run ``measure(name, trial)`` for every configuration in ``trials`` interleaved rounds
    (``order(names, round)``: by default ``interleaved_order``; ``helpers.toolkit.harness`` passes a seeded
    random order); returns each configuration's records in trial order. ``on_done``
    is called after each measurement (a progress bar's update). With ``until``, more rounds
    follow, one at a time, until ``until(records)`` is true or ``most`` rounds have run in all
    (for instance until the intervals a verdict rests on are narrow enough)."""
    if trials < 1:
        raise ValueError(f"trials must be at least 1, not {trials}")
    if len(set(names)) != len(names):
        raise ValueError(f"configuration names must be unique: {list(names)}")
    most = trials if until is None else max(trials, most or trials)
    records: dict[str, list[Any]] = {name: [] for name in names}
    for trial in range(most):
        if trial >= trials and until is not None and until(records):
            break
        for name in order(names, trial):
            records[name].append(measure(name, trial))
            if on_done is not None:
                on_done(name, trial)
    return records


def _t_quantile(df: float) -> float:
    from scipy.stats import t

    return float(t.ppf(0.5 + CONFIDENCE / 2, df))


def _check_rates(label: str, values: Sequence[float]) -> list[float]:
    values = [float(v) for v in values]
    if not values or any(not math.isfinite(v) or v <= 0 for v in values):
        raise ValueError(f"{label}: rates must be positive finite numbers, got {values}")
    return values


def decimals(*bounds: float, against: Sequence[float] = (1.0,)) -> int:
    """How many decimals an interval's bounds are printed with: two, more where a bound would
    round to a value it is compared with (1, a goal) from one side of it (an interval that
    excludes 1 must not read as touching it), as many as that takes (twelve at most)."""
    digits = 2
    while digits < 12 and any(
        b != v and round(b, digits) == round(v, digits) for b in bounds for v in against
    ):
        digits += 1
    return digits


@dataclass(frozen=True)
class Ratio:
    """A ratio of two configurations' rates with its 95% interval. ``trials`` is the number of
    paired rounds (or the smaller number of trials when unpaired)."""

    ratio: float
    low: float
    high: float
    trials: int
    paired: bool

    def verdict(self, goal: float) -> str:
        """``met`` when the interval's low end clears ``goal``, ``not met`` when its high end is
        below it, ``inconclusive`` otherwise."""
        if self.low >= goal:
            return "met"
        if self.high < goal:
            return "not met"
        return "inconclusive"

    def within(self, precision: float) -> bool:
        """Whether the whole interval lies within ``precision`` (0.02: +-2%) of the ratio."""
        return self.ratio * (1 - precision) <= self.low and self.high <= self.ratio * (1 + precision)

    def as_record(self, count: str = "trials") -> dict[str, Any]:
        """The ratio as a record keeps it: ``{"ratio", "ci95": [low, high], count}``, the number
        of trials under ``count`` (``"launches"`` where each trial is a launch)."""
        return {"ratio": self.ratio, "ci95": [self.low, self.high], count: self.trials}

    def goal(self, goal: float, count: str = "trials") -> dict[str, Any]:
        """The record of a goal: ``{"ratio", "ci95", "goal", "verdict", count}``."""
        return {
            "ratio": self.ratio,
            "ci95": [self.low, self.high],
            "goal": goal,
            "verdict": self.verdict(goal),
            count: self.trials,
        }

    def __str__(self) -> str:
        return self.shown_against()

    @property
    def side(self) -> str | None:
        """The side of 1 that the whole interval lies on: "faster" above, "slower" below, None when
        it holds 1 (not distinguishable)."""
        return "faster" if self.low > 1 else "slower" if self.high < 1 else None

    def shown_against(self, *values: float) -> str:
        """The ratio and its interval, with the decimals that keep each bound on its side of 1
        and of ``values`` (a goal: [1.598-1.871] for a goal of 1.6, not [1.60-1.87])."""
        d = decimals(self.low, self.high, against=(1.0, *values))
        return f"{self.ratio:.{d}f}x [{self.low:.{d}f}-{self.high:.{d}f}]"


def ratio(numerator: Sequence[float], denominator: Sequence[float]) -> Ratio:
    """Rates of A over rates of B (e.g. samples/s per trial). Equal lengths: paired by round,
    the geometric mean of per-round ratios with a t interval on their logarithms. Unequal
    lengths: the ratio of geometric means with a Welch interval. One value on a side leaves no
    spread to estimate: the interval is then unbounded ``[0, inf]`` (``inconclusive``)."""
    a = [math.log(v) for v in _check_rates("numerator", numerator)]
    b = [math.log(v) for v in _check_rates("denominator", denominator)]
    if len(a) == len(b):
        differences = [x - y for x, y in zip(a, b, strict=True)]
        centre = statistics.fmean(differences)
        if len(differences) < 2:
            return Ratio(math.exp(centre), 0.0, math.inf, len(differences), True)
        error = statistics.stdev(differences) / math.sqrt(len(differences))
        half = _t_quantile(len(differences) - 1) * error
        return Ratio(
            math.exp(centre), math.exp(centre - half), math.exp(centre + half), len(differences), True
        )
    centre = statistics.fmean(a) - statistics.fmean(b)
    if min(len(a), len(b)) < 2:
        return Ratio(math.exp(centre), 0.0, math.inf, min(len(a), len(b)), False)
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    error = math.sqrt(va + vb)
    if error == 0.0:
        return Ratio(math.exp(centre), math.exp(centre), math.exp(centre), min(len(a), len(b)), False)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = _t_quantile(df) * error
    return Ratio(
        math.exp(centre), math.exp(centre - half), math.exp(centre + half), min(len(a), len(b)), False
    )


def versus(
    r: Ratio,
    reference: str,
    *,
    faster: str = "faster than",
    slower: str = "slower than",
    same: str = "not distinguishable from",
    against: Sequence[float] = (),
) -> str:
    """The one wording of a comparison that follows its interval: ``faster`` when the whole
    interval is above 1, ``slower`` when it is below, otherwise ``same`` (not distinguishable;
    the ratio and its interval follow in each case, with the decimals that keep each bound on its
    side of 1 and of ``against``, a goal: :meth:`Ratio.shown_against`; an empty ``reference``:
    the words alone)."""
    words = {"faster": faster, "slower": slower, None: same}[r.side]
    return " ".join(filter(None, (words, reference, f"({r.shown_against(*against)})")))


def rate_interval(values: Sequence[float]) -> tuple[float, float, float]:
    """A configuration's typical rate over its trials, the geometric mean, with its 95% t
    interval (on the logarithms): ``(estimate, low, high)``; one trial gives ``(v, v, v)``."""
    logs = [math.log(v) for v in _check_rates("rates", values)]
    centre = statistics.fmean(logs)
    if len(logs) < 2:
        return (math.exp(centre),) * 3
    half = _t_quantile(len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(centre), math.exp(centre - half), math.exp(centre + half)


def unjudged(verdict: str) -> str:
    """A verdict of a run on a machine the goals are not stated for: what it measured there."""
    return f"{verdict} on this machine, not judged (the goals are stated for an {GOALS_GPU})"


def goal_lines(goals: Mapping[str, Mapping[str, Any]], *, judged: bool = True) -> Iterator[str]:
    """One printable line per goal record (``Ratio.goal``): ratio, interval, goal, verdict; a run
    that does not judge the goals (``judged`` False: not an H200, ``registry.judges_goals``) says so
    in each line."""
    for name, g in goals.items():
        low, high = g["ci95"]
        count = g.get("trials", g.get("launches"))
        unit = "trials" if "trials" in g else "launches"
        d = decimals(low, high, against=(1.0, g["goal"]))
        yield (
            f"{name}: {g['ratio']:.{d}f}x, 95% interval [{low:.{d}f}, {high:.{d}f}] over {count} "
            f"{unit} (goal >= {g['goal']}x): {g['verdict'] if judged else unjudged(g['verdict'])}"
        )


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _nvidia_smi(query: str) -> str | None:
    try:
        out = subprocess.run(
            ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout
        return out.strip().splitlines()[0] or None
    except (OSError, subprocess.SubprocessError, IndexError):
        return None


def machine_info() -> dict[str, Any]:
    """GPU name, driver, CUDA, DALI and torch versions, CPU model: what a number depends on."""
    import nvidia.dali
    import torch

    info: dict[str, Any] = {
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "dali": nvidia.dali.__version__,
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "gpu_count": gpu_count(),
        "gpu": None,
        "gpu_driver": None,
    }
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    if info["gpu_count"]:
        info["gpu_driver"] = _nvidia_smi("driver_version")
        info["gpu"] = info["gpu"] or _nvidia_smi("name")
    return info


def default_results_dir() -> Path:
    """The folder that the suite's runner gave this kernel
    (``helpers.data.results_file.RESULTS_FOLDER_VARIABLE`` in its environment),
    else build/results (a notebook run by hand)."""
    return Path(os.environ.get(RESULTS_FOLDER_VARIABLE) or REPO_ROOT / "build" / "results")


class Record(NamedTuple):
    """What every notebook's ``record(...)`` (``helpers.lessons.nbNN_*``) returns, and
    :func:`save_results` writes: the parameters as the run resolved them (paths relative to the
    checkout), the results, and the ``headline`` figures that summaries print."""

    parameters: dict[str, Any]
    results: dict[str, Any]
    headline: dict[str, Any]


def save_results(name: str, record: Record, results_dir: str | Path | None = None) -> Path:
    """Write ``<results_dir>/<name>.json`` atomically (:class:`helpers.data.results_file.NotebookResults`):
    machine, and the record's parameters, results and headline. Returns the path."""
    if not isinstance(record, Record):
        raise TypeError(
            f"save_results({name!r}, ...) takes the Record that the notebook's record(...) "
            f"returns, not {type(record).__name__}"
        )
    saved = NotebookResults.now(name, machine_info(), record.parameters, record.headline, record.results)
    return saved.write(Path(results_dir) if results_dir else default_results_dir())
