"""Charts for results that people compare."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence

import numpy as np
from matplotlib import pyplot as plt
from matplotlib.figure import Figure

from helpers.benchmarking import rate_interval
from helpers.benchmarking import summarize

VERDICT_COLORS = {"met": "tab:green", "not met": "tab:red", "inconclusive": "tab:gray"}


def interval_bars(rates: Mapping[str, Sequence[float]], *, xlabel: str, title: str,
                  reference: str | None = None, log: bool = False) -> Figure:
    """One horizontal bar per configuration, fastest first: the geometric mean over its trials
    with the 95% interval as an error bar, and each trial as a dot. Configurations whose trials
    vary by more than ``NOISY_CV`` get a "(noisy)" label. ``reference`` names the configuration
    drawn as a dashed line; ``log`` uses a log axis (when one bar dwarfs the rest)."""
    names = sorted(rates, key=lambda n: rate_interval(rates[n])[0], reverse=True)
    estimates = np.array([rate_interval(rates[n]) for n in names])
    fig, ax = plt.subplots(figsize=(8.0, 0.34 * len(names) + 1.4))
    y = np.arange(len(names))
    ax.barh(y, estimates[:, 0], color="tab:green", alpha=0.75,
            xerr=[estimates[:, 0] - estimates[:, 1], estimates[:, 2] - estimates[:, 0]],
            capsize=3, label="geometric mean, 95% interval")
    for i, name in enumerate(names):
        ax.plot(rates[name], [i] * len(rates[name]), "k.", markersize=4,
                label="one trial" if i == 0 else None)
    labels = [f"{n} (noisy)" if summarize(rates[n])["noisy"] else n for n in names]
    ax.set_yticks(y, labels, fontsize=9)
    ax.invert_yaxis()
    if reference is not None:
        ax.axvline(rate_interval(rates[reference])[0], color="black", linestyle="--",
                   label=reference)
    if log:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig


def goal_chart(goals: Mapping[str, Mapping[str, object]], *, title: str) -> Figure:
    """Each goal's ratio with its 95% interval, the goal as a vertical tick, coloured by the
    verdict (met: the whole interval clears the goal)."""
    names = list(goals)
    fig, ax = plt.subplots(figsize=(8.0, 0.55 * len(names) + 1.4))
    for i, name in enumerate(names):
        g = goals[name]
        low, high = g["ci95"]  # type: ignore[misc]
        value = float(g["ratio"])  # type: ignore[arg-type]
        color = VERDICT_COLORS.get(str(g["verdict"]), "tab:gray")
        ax.errorbar(value, i, xerr=[[value - low], [high - value]], fmt="o", color=color,
                    capsize=4)
        ax.plot([g["goal"]] * 2, [i - 0.3, i + 0.3], color="black", linewidth=2)
        ax.annotate(f"{value:.2f}x ({g['verdict']})", (high, i), xytext=(6, 0),
                    textcoords="offset points", va="center", fontsize=9)
    ax.set_yticks(np.arange(len(names)), names, fontsize=9)
    ax.invert_yaxis()
    ax.set_xlabel("ratio (dot: estimate, bar: 95% interval; black tick: the goal)")
    ax.set_title(title)
    ax.margins(x=0.25)
    fig.tight_layout()
    return fig


def scaling_chart(rates: Mapping[int, Sequence[float]], busy: Mapping[int, float | None], *,
                  xlabel: str, ylabel: str, busy_label: str, title: str) -> Figure:
    """A rate against a count (readers, workers): each trial a dot, the geometric mean with its
    95% interval as an error bar; beside it, on a second axis, how busy an engine was (its mean
    over the trials, a square; None: not measured, not drawn)."""
    counts = sorted(rates)
    estimates = np.array([rate_interval(rates[n]) for n in counts])
    fig, ax = plt.subplots(figsize=(8.0, 4.2))
    ax.errorbar(counts, estimates[:, 0], yerr=[estimates[:, 0] - estimates[:, 1],
                                               estimates[:, 2] - estimates[:, 0]],
                fmt="o-", color="tab:green", capsize=4, label="geometric mean, 95% interval")
    for i, n in enumerate(counts):
        ax.plot([n] * len(rates[n]), rates[n], "k.", markersize=4, label="one trial" if i == 0 else None)
    ax.set_xticks(counts)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    shown = [n for n in counts if busy.get(n) is not None]
    if shown:
        twin = ax.twinx()
        twin.plot(shown, [busy[n] for n in shown], "s--", color="tab:purple", label=busy_label)
        twin.set_ylim(0, 105)
        twin.set_ylabel(f"{busy_label} (%)")
        twin.legend(fontsize=8, loc="lower right")
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title(title)
    fig.tight_layout()
    return fig
