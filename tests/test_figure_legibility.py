"""show_batch's grids are legible where they are shown at their own size (JupyterLab, the docs'
pages): labels LABEL_PX high and clear of the row above, images at least MIN_IMAGE_PX wide, the
grid no wider than MAX_WIDTH_PX; with the arguments notebooks 01 and 02 pass."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import numpy as np
import nvidia.dali.experimental.dynamic as ndd
import pytest
from matplotlib import pyplot as plt
from matplotlib.figure import Figure

from helpers.display import LABEL_PX
from helpers.display import MAX_WIDTH_PX
from helpers.display import MIN_IMAGE_PX
from helpers.display import show_batch


def _batch(count: int, shape: tuple[int, ...]) -> tuple[object, object]:
    rng = np.random.default_rng(count)
    images = ndd.as_batch([rng.integers(0, 255, shape).astype(np.uint8) for _ in range(count)],
                          layout="HWC")
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
@pytest.mark.parametrize(("count", "shape", "arguments"), [
    (64, (28, 28, 1), {"columns": 16, "size": 0.7}),  # notebook 02's digits
    (8, (427, 640, 3), {"class_names": list("abcdefghij"), "title": "First batch"}),  # 01
    (8, (100, 150, 3), {"class_names": list("abcdefghij"), "size": 1.2}),  # 01's corners
    (40, (28, 28, 1), {"columns": 64, "size": 0.3, "dpi": 40}),  # asked for too much
])
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
