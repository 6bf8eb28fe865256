from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import numpy as np
import nvidia.dali.experimental.dynamic as ndd
import pytest
from matplotlib import pyplot as plt

from helpers.toolkit.batches import as_arrays
from helpers.toolkit.batches import as_labels
from helpers.toolkit.display import grid_shape
from helpers.toolkit.display import show_batch


@pytest.mark.parametrize("count", range(1, 10))
def test_grid_holds_any_batch_size(count: int) -> None:
    rows, columns = grid_shape(count, 4)
    assert rows * columns >= count and rows == math.ceil(count / min(4, count))
    assert (rows - 1) * columns < count  # no empty row


def test_grid_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="empty"):
        grid_shape(0, 4)
    with pytest.raises(ValueError, match="columns"):
        grid_shape(3, 0)


def _batch(count: int, shape=(6, 8, 3), dtype=np.uint8, layout="HWC"):
    rng = np.random.default_rng(count)
    samples = [rng.integers(0, 255, shape).astype(dtype) for _ in range(count)]
    return ndd.as_batch(samples, layout=layout), samples


@pytest.mark.parametrize("count", [1, 5, 7, 8])
def test_show_batch_draws_every_image_once(count: int) -> None:
    images, samples = _batch(count)
    labels = ndd.as_batch([np.array([i % 2], dtype=np.int32) for i in range(count)])
    figure = show_batch(images, labels, class_names=["a", "b"], columns=4)
    drawn = [ax for ax in figure.axes if ax.images]
    assert len(drawn) == count
    assert [ax.get_title() for ax in drawn] == ["a" if i % 2 == 0 else "b" for i in range(count)]
    np.testing.assert_array_equal(drawn[-1].images[0].get_array(), samples[-1])
    plt.close(figure)


def test_show_batch_handles_chw_floats_and_grayscale() -> None:
    images, _ = _batch(3, shape=(1, 5, 5), dtype=np.float32, layout="CHW")
    figure = show_batch(images)
    assert all(ax.images[0].get_array().shape == (5, 5) for ax in figure.axes if ax.images)
    plt.close(figure)


def test_samples_and_labels_out_of_a_batch() -> None:
    images, samples = _batch(3)
    assert all(np.array_equal(a, b) for a, b in zip(as_arrays(images), samples, strict=True))
    labels = ndd.as_batch([np.array([v], dtype=np.int32) for v in (3, 1, 4)])
    assert as_labels(labels) == [3, 1, 4]
