"""Charts of notebook 03: throughput against batch size. Drawn
as ``helpers.plots`` draws its charts (``new_chart``: at ``CSS_DPI``, shown at twice the pixels in
a notebook, no text under ``SMALLEST_FONT_PT``, the legend under the axes)."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure

from helpers.plots import legend_below
from helpers.plots import new_chart


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
