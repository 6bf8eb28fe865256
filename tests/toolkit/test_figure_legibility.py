"""show_batch's grids are legible where they are shown at their own size (JupyterLab, the docs'
pages): labels LABEL_PX high and clear of the row above, images at least MIN_IMAGE_PX wide, the
grid no wider than MAX_WIDTH_PX; with the arguments notebooks 01 and 02 pass. The charts of
helpers.toolkit.plots and helpers.lessons.nb03_feeding_pytorch_fast: no text under 9 CSS px at
their size on a page, legends off the plotted area, value labels clear of the data and of the goal
ticks, shown in IPython at twice their pixels with their CSS size (the docs' pages at 390 px:
tests/test_docs_site.py)."""

from __future__ import annotations

import base64
import io
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")
import numpy as np
import nvidia.dali.experimental.dynamic as ndd
import pytest
from matplotlib import pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.text import Text
from PIL import Image

from helpers.lessons import nb03_feeding_pytorch_fast as loader_charts  # crossover: 03's chart
from helpers.toolkit import plots
from helpers.toolkit.display import LABEL_PX
from helpers.toolkit.display import MAX_WIDTH_PX
from helpers.toolkit.display import MIN_IMAGE_PX
from helpers.toolkit.display import show_batch


def _batch(count: int, shape: tuple[int, ...]) -> tuple[object, object]:
    rng = np.random.default_rng(count)
    images = ndd.as_batch([rng.integers(0, 255, shape).astype(np.uint8) for _ in range(count)], layout="HWC")
    labels = ndd.as_batch([np.array([i % 10], dtype=np.int32) for i in range(count)])
    return images, labels


def _overlaps(a: object, b: object) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def legibility_problems(figure: Figure) -> list[str]:
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    dpi = figure.dpi
    drawn = [ax for ax in figure.axes if ax.images]
    problems = []
    width = figure.get_size_inches()[0] * dpi
    if width > MAX_WIDTH_PX + 1:
        problems.append(f"the grid is {width:.0f} px wide")
    for ax in drawn:
        image = ax.images[0].get_window_extent(renderer)
        if image.width < MIN_IMAGE_PX - 1:
            problems.append(f"an image {image.width:.0f} px wide")
        title = ax.title
        if title.get_text():
            if title.get_fontsize() * dpi / 72 < LABEL_PX - 0.5:
                problems.append(f"a label {title.get_fontsize() * dpi / 72:.1f} px high")
            box = title.get_window_extent(renderer)
            for other in drawn:
                if other is not ax and _overlaps(box, other.images[0].get_window_extent(renderer)):
                    problems.append(f"the label {title.get_text()!r} touches another image")
                    break
    return problems


@pytest.mark.slow  # renders a grid at several sizes: seconds
@pytest.mark.parametrize(
    ("count", "shape", "arguments"),
    [
        (64, (28, 28, 1), {"columns": 16, "size": 0.7}),  # notebook 02's digits
        (8, (427, 640, 3), {"class_names": list("abcdefghij"), "title": "First batch"}),  # 01
        (8, (100, 150, 3), {"class_names": list("abcdefghij"), "size": 1.2}),  # 01's corners
        (40, (28, 28, 1), {"columns": 64, "size": 0.3, "dpi": 40}),  # asked for too much
    ],
)
def test_grids_are_legible(count: int, shape: tuple[int, ...], arguments: dict) -> None:
    images, labels = _batch(count, shape)
    figure = show_batch(images, labels, **arguments)
    try:
        assert not legibility_problems(figure)
        assert len([ax for ax in figure.axes if ax.images]) == count
    finally:
        plt.close(figure)


@pytest.mark.slow
def test_a_grid_keeps_the_columns_it_was_asked_for_when_they_fit() -> None:
    images, labels = _batch(64, (28, 28, 1))
    figure = show_batch(images, labels, columns=16, size=0.7)
    try:
        first_row = {round(ax.get_position().y0, 3) for ax in figure.axes if ax.images}
        assert len(first_row) == 4  # 64 digits in 4 rows of 16
    finally:
        plt.close(figure)


@pytest.mark.slow
def test_the_checks_catch_an_illegible_grid() -> None:
    """A grid drawn as show_batch drew them before: 7.5 px labels over 20 px digits."""
    figure, axes = plt.subplots(4, 16, figsize=(16 * 0.7, 4 * 0.7 * 0.8), dpi=60)
    for ax in axes.flat:
        ax.imshow(np.zeros((28, 28)))
        ax.set_title("label 7", fontsize=9)
    try:
        report = "\n".join(legibility_problems(figure))
        assert "a label 7.5 px high" in report and "px wide" in report
    finally:
        plt.close(figure)


# The charts of helpers.toolkit.plots and helpers.lessons.nb03_feeding_pytorch_fast, at their size
# on a page (CSS_DPI): no text whose "x" is under 9 CSS px, the legend off the plotted area, value
# labels clear of the data and goals.
CSS_MIN_X_HEIGHT_PX = 9


def _rates() -> dict[str, list[float]]:
    rng = np.random.default_rng(0)
    return {
        "dynamic mode, capture, b64": list(rng.normal(5000, 200, 5)),
        "pipeline mode": list(rng.normal(5200, 150, 5)),
        "DataLoader, 8 workers": list(rng.normal(2500, 400, 5)),
        "ceiling": list(rng.normal(6000, 100, 5)),
    }


def _goals(wide: bool = False) -> dict[str, dict[str, object]]:
    """Goals as notebook 07 recorded them (results/h200-2026-12-02-2.json and
    results/h200-2026-12-03.json): ratios below their goals, where the old chart wrote
    "0.15x (not met)" and "0.84x (not met)" over the goals' ticks, long names; ``wide``: with
    a wide interval far right too (the axis' scale shrinks)."""

    def goal(ratio: float, low: float, high: float, target: float, verdict: str) -> dict[str, object]:
        return {"ratio": ratio, "ci95": [low, high], "goal": target, "verdict": verdict}

    wide_one = {"alone: best DALI / best PyAV DataLoader": goal(5.065, 3.513, 7.301, 5, "inconclusive")}
    return {
        "fed: best dynamic / ceiling": goal(0.15, 0.141, 0.161, 0.5, "not met"),
        **(wide_one if wide else {}),
        "alone: dynamic mode (threads) / pipeline mode (pipelines), same readers": goal(
            0.857, 0.723, 1.014, 0.95, "inconclusive"
        ),
        "fed, HEVC: best DALI / training alone": goal(0.842, 0.82, 0.865, 0.95, "not met"),
        "capture / eager": goal(1.7, 1.5, 2.0, 1.5, "met"),
    }


CHARTS = {
    "interval_bars": lambda: plots.interval_bars(
        _rates(), xlabel="samples / s", title="Confirmation", reference="ceiling"
    ),
    "interval_bars, log": lambda: plots.interval_bars(
        _rates(), xlabel="samples / s", title="Alone", log=True
    ),
    "goal_chart": lambda: plots.goal_chart(_goals(), title="Goals"),
    "goal_chart, not judged": lambda: plots.goal_chart(_goals(), title="Goals on an H100", judged=False),
    "goal_chart, wide": lambda: plots.goal_chart(
        _goals(wide=True),
        title=(
            "Goals (set for an NVIDIA H200, 1280x720 H.264; this run: NVIDIA H200, h264, 160 frames a video)"
        ),
    ),
    "scaling_chart": lambda: plots.scaling_chart(
        {1: [50, 52, 49], 2: [100, 98, 101], 4: [190, 200, 195], 7: [340, 350, 352]},
        {1: 16, 2: 30, 4: None, 7: 85},
        xlabel="readers",
        ylabel="clips / s",
        busy_label="NVDEC busy",
        title="Readers",
    ),
    "crossover": lambda: loader_charts.crossover(
        {
            "capture": [(64, 5000, 4800, 5100), (256, 7000, 6800, 7100)],
            "pipeline": [(64, 5200, 5000, 5300), (256, 7200, 7000, 7300)],
        },
        ceiling=(8000, 7800, 8100),
        title="Crossover",
    ),
}


def _texts(figure: Figure) -> list[Text]:
    return [t for t in figure.findobj(Text) if t.get_visible() and t.get_text().strip()]


def smallest_text_px(figure: Figure) -> float:
    """The smallest font of the figure's texts as drawn, in px at the figure's dpi."""
    figure.canvas.draw()
    return min(t.get_fontsize() * figure.dpi / 72 for t in _texts(figure))


def _data_extents(ax: Axes, renderer: object) -> list[object]:
    artists = [*ax.patches, *ax.lines, *ax.collections]
    return [a.get_window_extent(renderer) for a in artists if a.get_visible()]


def chart_problems(figure: Figure) -> list[str]:
    """What covers what in a drawn chart: a legend over an axes' plotted area (or over its tick
    labels, axis labels or title), a value label (a text or annotation of an axes) over a bar, a
    line (a goal tick, an interval) or a marker, or over another value label."""
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    problems = []
    data = [extent for ax in figure.axes for extent in _data_extents(ax, renderer)]
    legends = [*figure.legends, *(ax.get_legend() for ax in figure.axes if ax.get_legend())]
    labels = [
        (t, t.get_window_extent(renderer))
        for ax in figure.axes
        for t in ax.texts
        if t.get_visible() and t.get_text().strip()
    ]
    for legend in legends:
        box = legend.get_window_extent(renderer)
        for ax in figure.axes:
            if _overlaps(box, ax.get_window_extent(renderer)):
                problems.append("a legend over the plotted area")
            words = [*ax.get_xticklabels(), *ax.get_yticklabels(), ax.xaxis.label, ax.yaxis.label, ax.title]
            for word in words:
                if word.get_text() and _overlaps(box, word.get_window_extent(renderer)):
                    problems.append(f"a legend over the text {word.get_text()!r}")
        for text, extent in labels:
            if _overlaps(box, extent):
                problems.append(f"a legend over the label {text.get_text()!r}")
    for ax in figure.axes:
        for text in ax.texts:
            if not (text.get_visible() and text.get_text().strip()):
                continue
            extent = text.get_window_extent(renderer)
            if any(_overlaps(extent, drawn) for drawn in data):
                problems.append(f"the label {text.get_text()!r} over the data or a goal tick")
            if any(other is not text and _overlaps(extent, box) for other, box in labels):
                problems.append(f"the label {text.get_text()!r} over another label")
    return problems


def test_the_smallest_chart_text_has_an_x_of_at_least_9_css_px() -> None:
    """The x-height of matplotlib's font, measured, not assumed: its "x" at 100 px."""
    from matplotlib import font_manager
    from matplotlib import ft2font

    font = ft2font.FT2Font(font_manager.findfont(plt.rcParams["font.sans-serif"][0]))
    font.set_size(100, 72)  # 100 px
    assert font.load_char(ord("x")).height / 64 / 100 >= plots.X_HEIGHT_EM - 0.005
    assert plots.SMALLEST_X_HEIGHT_PX >= CSS_MIN_X_HEIGHT_PX
    assert plots.SMALLEST_TEXT_PX == pytest.approx(plots.SMALLEST_FONT_PT * plots.CSS_DPI / 72)


@pytest.mark.slow  # draws every chart: seconds
@pytest.mark.parametrize("name", list(CHARTS))
def test_charts_are_legible_on_a_page(name: str) -> None:
    """Drawn at their CSS size (CSS_DPI), every text at least SMALLEST_TEXT_PX high, the legend
    under the axes, value labels clear of the data and the goal ticks."""
    figure = CHARTS[name]()
    try:
        assert isinstance(figure, plots.Chart) and figure.dpi == plots.CSS_DPI
        assert smallest_text_px(figure) >= plots.SMALLEST_TEXT_PX - 1e-9
        assert not chart_problems(figure)
        assert figure.legends or name.startswith("goal_chart"), "a chart's legend goes under its axes"
    finally:
        plt.close(figure)


@pytest.mark.slow
def test_the_chart_checks_catch_a_legend_on_the_data_and_a_label_on_a_goal_tick() -> None:
    """A goal chart and a bar chart drawn as the helpers drew them before: the legend inside the
    axes over a bar, "0.15x (not met)" written right of its interval, over the goal's tick, and
    7 pt ticks at 60 dpi."""
    figure, (bars, goals) = plt.subplots(2, 1, figsize=(8, 5), dpi=60)
    bars.barh([0, 1], [5000, 4000], label="geometric mean, 95% interval")
    bars.legend(loc="lower right", fontsize=8)
    bars.set_yticks([0, 1], ["a", "b"], fontsize=7)
    goals.errorbar(0.15, 0, xerr=[[0.05], [0.05]], fmt="o")
    goals.plot([0.3, 0.3], [-0.3, 0.3], color="black", linewidth=2)  # the goal, inside the label's span
    goals.annotate("0.15x (not met)", (0.2, 0), xytext=(6, 0), textcoords="offset points", va="center")
    goals.set_xlim(0, 1)
    try:
        report = "\n".join(chart_problems(figure))
        assert "a legend over the plotted area" in report
        assert "the label '0.15x (not met)' over the data or a goal tick" in report
        assert smallest_text_px(figure) * plots.X_HEIGHT_EM < CSS_MIN_X_HEIGHT_PX
    finally:
        plt.close(figure)


def test_charts_show_at_twice_their_pixels_and_their_own_size() -> None:
    figure = plots.goal_chart(_goals(), title="Goals")
    try:
        data, metadata = plots.png_at_twice_the_pixels(figure)
        image = Image.open(io.BytesIO(base64.b64decode(data)))
        assert (metadata["width"], metadata["height"]) == (image.width // 2, image.height // 2)
        figure.canvas.draw()
        inches = figure.get_tightbbox().width + 2 * matplotlib.rcParams["savefig.pad_inches"]
        css_width = inches * plots.CSS_DPI  # what the figure measures at its dpi
        assert abs(metadata["width"] - css_width) <= 2
    finally:
        plt.close(figure)


def test_in_ipython_a_chart_is_a_2x_png_and_another_figure_is_left_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The formatter that IPython's inline backend sets for every Figure (a 1x PNG) stays for
    other figures (show_batch's grids); a Chart gets the 2x PNG with its CSS size."""
    import IPython
    from IPython.core.formatters import DisplayFormatter

    formatter = DisplayFormatter()
    formatter.formatters["image/png"].for_type(Figure, lambda fig: "1x")  # the inline backend's
    shell = SimpleNamespace(display_formatter=formatter)
    monkeypatch.setattr(IPython, "get_ipython", lambda: shell)
    plots._show_charts_at_twice_the_pixels()
    chart = plots.goal_chart(_goals(), title="Goals")
    other, _ = plt.subplots()
    try:
        data, metadata = formatter.format(chart)
        assert data["image/png"] != "1x" and set(metadata["image/png"]) == {"width", "height", "alt"}
        assert formatter.format(other)[0]["image/png"] == "1x"
    finally:
        plt.close(chart)
        plt.close(other)
