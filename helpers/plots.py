"""Charts for results that people compare."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib import pyplot as plt
from matplotlib.figure import Figure


def grouped_bars(groups: Sequence[str], series: Mapping[str, Sequence[float]], *,
                 errors: Mapping[str, Sequence[tuple[float, float]]] | None = None,
                 ylabel: str, title: str, xlabel: str | None = None) -> Figure:
    """One bar per (group, series), e.g. groups = thread counts, series = devices. ``errors``
    holds (low, high) per bar, drawn as the min-max range of the trials."""
    width = 1.6 + 1.4 * len(groups) * max(1, len(series)) / 2
    fig, ax = plt.subplots(figsize=(min(max(width, 5.0), 11.0), 3.8))
    width = 0.8 / max(1, len(series))
    x = np.arange(len(groups))
    for i, (name, values) in enumerate(series.items()):
        offset = x - 0.4 + width * (i + 0.5)
        yerr = None
        if errors and name in errors:
            low_high = np.array(errors[name], dtype=float)
            yerr = np.abs(low_high.T - np.asarray(values, dtype=float))
        bars = ax.bar(offset, values, width, label=name, yerr=yerr, capsize=3)
        ax.bar_label(bars, labels=[f"{v:,.0f}" for v in values], fontsize=7, padding=2)
    ax.set_xticks(x, groups)
    if xlabel:
        ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)  # beside the bars
    ax.margins(y=0.15)
    fig.tight_layout()
    return fig


def per_epoch_lines(series: Mapping[str, Sequence[Sequence[float]]], *, ylabel: str,
                    title: str) -> Figure:
    """One line per trial, coloured by series (e.g. eager / capture), over epochs."""
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for color, (name, trials) in zip(colors, series.items(), strict=False):
        for index, values in enumerate(trials):
            ax.plot(range(1, len(values) + 1), values, marker="o", color=color, alpha=0.8,
                    label=name if index == 0 else None)
    ax.set_xlabel("timed epoch")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.set_ylim(bottom=0)
    ax.legend()
    fig.tight_layout()
    return fig
