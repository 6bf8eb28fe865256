"""Charts for results that people compare, legible where they are read: at their own size in
JupyterLab and on the docs' pages, and on a phone, where the page lets them scroll sideways
rather than shrink.

Every chart is drawn at ``CSS_DPI`` (its size on a page: 100 CSS px an inch) with no text
smaller than ``SMALLEST_FONT_PT`` (``SMALLEST_TEXT_PX`` at that size, an "x" of at least 9 px:
``SMALLEST_X_HEIGHT_PX``, on a phone too, where the chart keeps its size), its legend outside the
plotted area (below the axes) and its value labels clear of the data and of the goal ticks. In a
notebook (IPython) a chart is shown as a PNG of twice its pixels with its CSS size in the
output's metadata (``png_at_twice_the_pixels``): sharp on high-density screens, the same size on
the page. nbconvert, and so the docs' pages, writes that size as the ``<img>``'s ``width``.
"""

from __future__ import annotations

import base64
import io
import struct
import textwrap
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib import pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.text import Text

from helpers.toolkit.benchmarking import rate_interval
from helpers.toolkit.benchmarking import summarize
from helpers.toolkit.benchmarking import unjudged

VERDICT_COLORS = {"met": "tab:green", "not met": "tab:red", "inconclusive": "tab:gray"}
CSS_DPI = 100  # a chart's pixels an inch at its size on the page (its PNG holds twice as many)
X_HEIGHT_EM = 0.55  # DejaVu Sans, matplotlib's font: an "x" is 0.55 of the font's size
SMALLEST_FONT_PT = 12.0  # every text of a chart, at least: legends, value labels, ticks
SMALLEST_TEXT_PX = SMALLEST_FONT_PT * CSS_DPI / 72  # 16.7 CSS px
SMALLEST_X_HEIGHT_PX = SMALLEST_TEXT_PX * X_HEIGHT_EM  # 9.2 CSS px: at least 9 px on any page
TICK_FONT_PT = SMALLEST_FONT_PT
LABEL_CHARACTERS = 36  # a longer goal name is wrapped, so that the axes keep most of the width
TITLE_CHARACTERS = 72


class Chart(Figure):
    """A figure of these helpers: IPython shows it at twice its pixels (``png_at_twice_the_pixels``),
    with its ``alt`` text (what it shows, in words, from the numbers it draws) in the output's
    metadata, where the docs' pages read it (``tools.docs_alt``)."""

    alt: str = ""

    def draw(self, renderer: Any) -> None:
        """Drawn with no text under ``SMALLEST_FONT_PT``, whichever function made the chart:
        matplotlib's defaults (10 pt ticks and labels) are raised before the layout is made."""
        for ax in self.axes:
            ax.tick_params(which="both", labelsize=SMALLEST_FONT_PT)
        for text in self.findobj(Text):
            if text.get_fontsize() < SMALLEST_FONT_PT:
                text.set_fontsize(SMALLEST_FONT_PT)
        super().draw(renderer)


def png_at_twice_the_pixels(figure: Figure) -> tuple[str, dict[str, Any]]:
    """The figure as a PNG of twice its pixels (base64) and the metadata that shows it at its
    own size: ``{"width": w, "height": h}`` in CSS px, half the PNG's. What IPython's "retina"
    format does for every figure, here for the charts only (photo grids stay small on disk), and
    the figure's ``alt`` text when it has one."""
    buffer = io.BytesIO()
    figure.savefig(
        buffer,
        format="png",
        dpi=2 * figure.dpi,
        bbox_inches="tight",
        facecolor=figure.get_facecolor(),
        edgecolor=figure.get_edgecolor(),
    )
    data = buffer.getvalue()
    width, height = struct.unpack(">II", data[16:24])  # the PNG's IHDR chunk
    metadata: dict[str, Any] = {"width": width // 2, "height": height // 2}
    if getattr(figure, "alt", ""):
        metadata["alt"] = figure.alt
    return base64.b64encode(data).decode("ascii"), metadata


def _show_charts_at_twice_the_pixels() -> None:
    """In IPython, register ``png_at_twice_the_pixels`` as the PNG of a ``Chart`` (a figure of
    another kind keeps the inline backend's format)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None:
        shell.display_formatter.formatters["image/png"].for_type(Chart, png_at_twice_the_pixels)


_show_charts_at_twice_the_pixels()


def new_chart(width: float, height: float) -> tuple[Chart, Axes]:
    """A ``Chart`` of ``width`` x ``height`` inches at ``CSS_DPI``, its layout constrained (the
    legends and labels outside the axes get room of their own)."""
    fig, ax = plt.subplots(figsize=(width, height), dpi=CSS_DPI, FigureClass=Chart, layout="constrained")
    return fig, ax


def legend_below(fig: Figure, handles: Sequence[Any], labels: Sequence[str], columns: int = 3) -> None:
    """The chart's legend under the axes, in a margin of its own: never over the data."""
    fig.legend(
        handles,
        labels,
        loc="outside lower center",
        ncols=max(1, min(columns, len(labels))),
        fontsize=SMALLEST_FONT_PT,
        frameon=False,
    )


def interval_bars(
    rates: Mapping[str, Sequence[float]],
    *,
    xlabel: str,
    title: str,
    reference: str | None = None,
    log: bool = False,
) -> Figure:
    """One horizontal bar per configuration, fastest first: the geometric mean over its trials
    with the 95% interval as an error bar, and each trial as a dot. Configurations whose trials
    vary by more than ``NOISY_CV`` get a "(noisy)" label. ``reference`` names the configuration
    drawn as a dashed line; ``log`` uses a log axis (when one bar dwarfs the rest)."""
    names = sorted(rates, key=lambda n: rate_interval(rates[n])[0], reverse=True)
    estimates = np.array([rate_interval(rates[n]) for n in names])
    fig, ax = new_chart(8.0, 0.34 * len(names) + 1.8)
    y = np.arange(len(names))
    ax.barh(
        y,
        estimates[:, 0],
        color="tab:green",
        alpha=0.75,
        xerr=[estimates[:, 0] - estimates[:, 1], estimates[:, 2] - estimates[:, 0]],
        capsize=3,
        label="geometric mean, 95% interval",
    )
    for i, name in enumerate(names):
        ax.plot(
            rates[name], [i] * len(rates[name]), "k.", markersize=4, label="one trial" if i == 0 else None
        )
    labels = [f"{n} (noisy)" if summarize(rates[n])["noisy"] else n for n in names]
    ax.set_yticks(y, labels, fontsize=TICK_FONT_PT)
    ax.invert_yaxis()
    if reference is not None:
        ax.axvline(rate_interval(rates[reference])[0], color="black", linestyle="--", label=reference)
    if log:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    legend_below(fig, *ax.get_legend_handles_labels())
    fig.alt = (
        f"Bar chart, {title}: {xlabel}, each way's geometric mean and 95% interval, highest "
        "first: "
        + "; ".join(
            f"{n} {_figure(m)} [{_figure(lo)}-{_figure(hi)}]"
            for n, (m, lo, hi) in zip(names, estimates, strict=True)
        )
        + "."
    )
    return fig


def goal_chart(goals: Mapping[str, Mapping[str, object]], *, title: str, judged: bool = True) -> Figure:
    """Each goal's ratio with its 95% interval, the goal as a vertical tick, coloured by the
    verdict (met: the whole interval clears the goal). The ratio and the verdict are written in
    a column right of the axes, clear of the intervals and the goal ticks. A run that does not
    judge the goals (``judged`` False: not the machine they are stated for) draws them grey, its
    verdicts marked "here", and its alt text says they are not judged."""
    names = list(goals)
    fig, ax = new_chart(8.0, 0.6 * len(names) + 1.4)
    for i, name in enumerate(names):
        g = goals[name]
        low, high = g["ci95"]  # type: ignore[misc]
        value = float(g["ratio"])  # type: ignore[arg-type]
        color = VERDICT_COLORS.get(str(g["verdict"]), "tab:gray") if judged else "tab:gray"
        ax.errorbar(value, i, xerr=[[value - low], [high - value]], fmt="o", color=color, capsize=4)
        ax.plot([g["goal"]] * 2, [i - 0.3, i + 0.3], color="black", linewidth=2)
        ax.annotate(
            f"{value:.2f}x ({g['verdict']}{'' if judged else ' here'})",
            (1, i),
            xycoords=ax.get_yaxis_transform(),
            xytext=(8, 0),
            textcoords="offset points",
            va="center",
            ha="left",
            fontsize=TICK_FONT_PT,
            color=color,
            annotation_clip=False,
        )
    ax.set_yticks(
        np.arange(len(names)), [textwrap.fill(n, LABEL_CHARACTERS) for n in names], fontsize=TICK_FONT_PT
    )
    ax.set_ylim(len(names) - 0.5, -0.5)
    ax.set_xlabel("ratio (dot: estimate, bar: 95% interval; black tick: the goal)")
    ax.set_title(textwrap.fill(title, TITLE_CHARACTERS))
    ax.margins(x=0.08)
    fig.alt = (
        f"Chart of goals, {title}: "
        + "; ".join(
            f"{name}: {float(g['ratio']):.2f}x [{g['ci95'][0]:.2f}-{g['ci95'][1]:.2f}] against a goal of "  # type: ignore[index]
            f"{g['goal']}, {g['verdict'] if judged else unjudged(str(g['verdict']))}"
            for name, g in goals.items()
        )
        + "."
    )
    return fig


def scaling_chart(
    rates: Mapping[int, Sequence[float]],
    busy: Mapping[int, float | None],
    *,
    xlabel: str,
    ylabel: str,
    busy_label: str,
    title: str,
) -> Figure:
    """A rate against a count (readers, workers): each trial a dot, the geometric mean with its
    95% interval as an error bar; beside it, on a second axis, how busy an engine was (its mean
    over the trials, a square; None: not measured, not drawn). One legend, under the axes."""
    counts = sorted(rates)
    estimates = np.array([rate_interval(rates[n]) for n in counts])
    fig, ax = new_chart(8.0, 4.6)
    ax.errorbar(
        counts,
        estimates[:, 0],
        yerr=[estimates[:, 0] - estimates[:, 1], estimates[:, 2] - estimates[:, 0]],
        fmt="o-",
        color="tab:green",
        capsize=4,
        label="geometric mean, 95% interval",
    )
    for i, n in enumerate(counts):
        ax.plot([n] * len(rates[n]), rates[n], "k.", markersize=4, label="one trial" if i == 0 else None)
    ax.set_xticks(counts)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    handles, labels = ax.get_legend_handles_labels()
    shown = [n for n in counts if busy.get(n) is not None]
    if shown:
        twin = ax.twinx()
        twin.plot(shown, [busy[n] for n in shown], "s--", color="tab:purple", label=busy_label)
        twin.set_ylim(0, 105)
        twin.set_ylabel(f"{busy_label} (%)")
        more_handles, more_labels = twin.get_legend_handles_labels()
        handles, labels = handles + more_handles, labels + more_labels
    ax.set_title(title)
    legend_below(fig, handles, labels)
    fig.alt = (
        f"Chart, {title}: {ylabel} against {xlabel}, geometric mean and 95% interval: "
        + "; ".join(
            f"{n}: {_figure(m)} [{_figure(lo)}-{_figure(hi)}]"
            + (f", {busy_label} {busy[n]:.0f}%" if busy.get(n) is not None else "")
            for n, (m, lo, hi) in zip(counts, estimates, strict=True)
        )
        + "."
    )
    return fig


def _figure(value: float) -> str:
    """A rate as an alt text says it: thousands separated, decimals only under 100."""
    return f"{value:,.1f}" if value < 100 else f"{value:,.0f}"
