"""Showing a batch of images as a grid, whatever its size and device."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from matplotlib import pyplot as plt
from matplotlib.figure import Figure

from helpers.toolkit.batches import as_arrays
from helpers.toolkit.batches import as_labels


class Grid(Figure):
    """A grid of :func:`show_batch`: IPython shows it as the inline backend does, with its ``alt``
    text (how many images, and their labels) in the output's metadata, where the docs' pages read
    it (``tools.docs_alt``)."""

    alt: str = ""


def _png_with_alt(figure: Grid) -> tuple[str, dict[str, str]]:
    from IPython.core.pylabtools import print_figure

    return print_figure(figure, "png", base64=True, bbox_inches="tight"), {"alt": figure.alt}


def _show_grids_with_their_alt_text() -> None:
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None:
        shell.display_formatter.formatters["image/png"].for_type(Grid, _png_with_alt)


_show_grids_with_their_alt_text()


def _displayable(image: np.ndarray, layout: str) -> np.ndarray:
    if layout.startswith("C") and image.ndim == 3:  # CHW -> HWC
        image = np.transpose(image, (1, 2, 0))
    if image.ndim == 3 and image.shape[2] == 1:
        image = image[:, :, 0]
    if image.dtype != np.uint8:  # e.g. normalized floats: stretch to [0, 1] for display
        low, high = float(image.min()), float(image.max())
        image = (image - low) / (high - low) if high > low else np.zeros_like(image, dtype=float)
    return image


def grid_shape(count: int, columns: int) -> tuple[int, int]:
    """(rows, columns) of a grid that holds ``count`` images, at most ``columns`` wide."""
    if count < 1:
        raise ValueError("there is nothing to show: the batch is empty")
    if columns < 1:
        raise ValueError(f"columns must be at least 1, not {columns}")
    columns = min(columns, count)
    return math.ceil(count / columns), columns


# Legible where the figure is shown at its own size (JupyterLab, the docs' pages): in pixels
LABEL_PX = 17  # a label's font size: its "x" is 9.4 px high (DejaVu Sans: 0.55 of the size)
CHARACTER_EM = 0.62  # a label's characters are this wide on average, of the font's size
MIN_IMAGE_PX = 50  # an image's width, at least (MNIST's 28x28 digits at nearly twice their size)
MAX_WIDTH_PX = 900  # the grid's width, at most: the docs' column at 1280 px shows it unscaled
GAP_PX = 6  # between two images


def show_batch(
    images,
    labels=None,
    *,
    class_names: Sequence[str] | None = None,
    columns: int = 4,
    title: str | None = None,
    size: float = 1.8,
    dpi: int = 60,
) -> Figure:
    """Show every image of a DALI ``Batch`` (CPU or GPU, HWC or CHW, any batch size) in a grid,
    with its label (or class name) above it; returns the figure. ``size`` (inches per image)
    and ``dpi`` are kept small, so that notebooks with many grids stay small on disk; whatever
    they are, an image is at least ``MIN_IMAGE_PX`` wide and as wide as its label, a label's
    font ``LABEL_PX``, and the grid at most ``MAX_WIDTH_PX`` wide (fewer columns then). A label
    is the class name, or the label's number."""
    arrays = as_arrays(images)
    layout = str(images.layout or "HWC")
    label_values = as_labels(labels) if labels is not None else None
    names = [] if label_values is None else [class_names[v] if class_names else str(v) for v in label_values]
    widest_label_px = max((len(n) for n in names), default=0) * CHARACTER_EM * LABEL_PX
    image_px = max(size * dpi, MIN_IMAGE_PX, widest_label_px)  # a label no wider than its image
    cell_px = image_px + GAP_PX
    rows, cols = grid_shape(len(arrays), min(columns, max(1, int(MAX_WIDTH_PX // cell_px))))
    first = _displayable(arrays[0], layout)
    aspect = min(max(first.shape[0] / first.shape[1], 0.5), 1.5)  # height / width
    font_pt = LABEL_PX * 72 / dpi
    label_in = font_pt * 1.8 / 72 if label_values is not None else 0.0  # a label and its gap
    title_in = font_pt * 2.4 / 72 if title else 0.0
    image_in, gap_in = image_px / dpi, GAP_PX / dpi
    # constrained layout keeps each label clear of the row above it
    fig, axes = plt.subplots(
        rows,
        cols,
        dpi=dpi,
        squeeze=False,
        layout="constrained",
        FigureClass=Grid,
        figsize=((image_in + gap_in) * cols, rows * (image_in * aspect + label_in + gap_in) + title_in),
    )
    fig.get_layout_engine().set(w_pad=gap_in / 2, h_pad=gap_in / 2, wspace=0, hspace=0)
    for index, ax in enumerate(axes.flat):
        ax.axis("off")
        if index >= len(arrays):
            continue
        image = first if index == 0 else _displayable(arrays[index], layout)
        ax.imshow(image, cmap="gray" if image.ndim == 2 else None)
        if names:
            ax.set_title(names[index], fontsize=font_pt)
    if title:
        fig.suptitle(title, fontsize=font_pt * 1.15)
    fig.alt = (
        f"{title or 'A batch'}: {len(arrays)} images"
        + (f", labelled {', '.join(names)}" if names else "")
        + "."
    )
    return fig
