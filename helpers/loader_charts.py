"""Charts of notebook 03: where the time of a step goes, and throughput against batch size. Drawn
as ``helpers.plots`` draws its charts (``new_chart``: at ``CSS_DPI``, shown at twice the pixels in
a notebook, no text under ``SMALLEST_FONT_PT``, the legend under the axes)."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure

from helpers.plots import SMALLEST_FONT_PT
from helpers.plots import TICK_FONT_PT
from helpers.plots import legend_below
from helpers.plots import new_chart


def time_split_bars(labels: Sequence[str], data_ms: Sequence[float], train_ms: Sequence[float],
                    *, title: str) -> Figure:
    """Horizontal stacked bars: milliseconds per optimizer step on the data side and on the
    training side, one bar per loader."""
    fig, ax = new_chart(7.2, 0.45 * len(labels) + 1.8)
    y = np.arange(len(labels))
    ax.barh(y, data_ms, label="data side (loader delivers the batch)", color="tab:orange")
    ax.barh(y, train_ms, left=data_ms, label="training side (forward, backward, step)",
            color="tab:blue")
    for i, (d, t) in enumerate(zip(data_ms, train_ms, strict=True)):
        ax.text(d + t, i, f" {d + t:.2f} ms", va="center", fontsize=SMALLEST_FONT_PT)
    ax.set_yticks(y, labels, fontsize=TICK_FONT_PT)
    ax.invert_yaxis()
    ax.set_xlabel("milliseconds per optimizer step (synchronized)")
    ax.set_title(title)
    ax.margins(x=0.15)
    legend_below(fig, *ax.get_legend_handles_labels(), columns=1)
    return fig


def crossover(series: Mapping[str, Sequence[tuple[int, float, float, float]]], *,
              ceiling: tuple[float, float, float] | None, title: str) -> Figure:
    """Samples/s against loader batch size, one line per loader; each point is
    (batch, median, min, max) and the bars are the min-max range. ``ceiling`` (median, min, max)
    is drawn as a horizontal band."""
    fig, ax = new_chart(6.8, 4.6)
    for name, points in series.items():
        batches, medians, lows, highs = (np.array(v, dtype=float) for v in zip(*points, strict=True))
        ax.errorbar(batches, medians, yerr=[medians - lows, highs - medians], marker="o",
                    capsize=3, label=name)
    if ceiling is not None:
        median, low, high = ceiling
        ax.axhline(median, color="black", linestyle="--", label="ceiling (data on the device)")
        ax.axhspan(low, high, color="black", alpha=0.08)
    ax.set_xscale("log", base=2)
    all_batches = sorted({b for points in series.values() for b, *_ in points})
    ax.set_xticks(all_batches, [str(b) for b in all_batches])
    ax.set_xlabel("loader batch size (optimizer steps stay at 64 samples)")
    ax.set_ylabel("training samples / s")
    ax.set_ylim(bottom=0)
    ax.set_title(title)
    legend_below(fig, *ax.get_legend_handles_labels(), columns=2)
    return fig


def ranked_bars(names: Sequence[str], medians: Sequence[float], lows: Sequence[float],
                highs: Sequence[float], *, reference: float | None, title: str) -> Figure:
    """Every configuration, fastest first, with its min-max range; ``reference`` (e.g. pipeline
    mode's default) as a vertical line."""
    order = np.argsort(medians)[::-1]
    med = np.asarray(medians, dtype=float)[order]
    err = [med - np.asarray(lows, dtype=float)[order], np.asarray(highs, dtype=float)[order] - med]
    fig, ax = new_chart(7.6, 0.28 * len(names) + 1.6)
    ax.barh(np.arange(len(names)), med, xerr=err, capsize=2, color="tab:green")
    ax.set_yticks(np.arange(len(names)), [names[i] for i in order], fontsize=SMALLEST_FONT_PT)
    ax.invert_yaxis()
    if reference is not None:
        ax.axvline(reference, color="black", linestyle="--", label="pipeline mode, default")
        legend_below(fig, *ax.get_legend_handles_labels())
    ax.set_xlabel("training samples / s (median, bars: slowest to fastest trial)")
    ax.set_title(title)
    return fig
