"""Showing a batch of images as a grid, whatever its size and device."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from matplotlib import pyplot as plt
from matplotlib.figure import Figure

from helpers.batches import as_arrays, as_labels


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


def show_batch(images, labels=None, *, class_names: Sequence[str] | None = None,
               columns: int = 4, title: str | None = None, size: float = 1.8,
               dpi: int = 60) -> Figure:
    """Show every image of a DALI ``Batch`` (CPU or GPU, HWC or CHW, any batch size) in a grid,
    with its label (or class name) above it; returns the figure. ``size`` (inches per image)
    and ``dpi`` are kept small, so that notebooks with many grids stay small on disk."""
    arrays = as_arrays(images)
    layout = str(images.layout or "HWC")
    label_values = as_labels(labels) if labels is not None else None
    rows, cols = grid_shape(len(arrays), columns)
    fig, axes = plt.subplots(rows, cols, figsize=(size * cols, size * rows * 0.8), dpi=dpi,
                             squeeze=False)
    for index, ax in enumerate(axes.flat):
        ax.axis("off")
        if index >= len(arrays):
            continue
        image = _displayable(arrays[index], layout)
        ax.imshow(image, cmap="gray" if image.ndim == 2 else None)
        if label_values is not None:
            label = label_values[index]
            ax.set_title(class_names[label] if class_names else f"label {label}", fontsize=9)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig
