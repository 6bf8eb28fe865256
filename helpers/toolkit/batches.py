"""Getting samples out of a DALI ``Batch`` as NumPy, on the CPU or the GPU.

A ``Batch`` iterates over its samples (``Tensor`` objects); notebook 01 shows why samples are
taken one at a time rather than with ``select`` and a range in DALI 2.4.0.
"""

from __future__ import annotations

import numpy as np


def _on_cpu(batch):
    return batch.cpu() if str(batch.device).startswith("gpu") else batch


def as_arrays(batch) -> list[np.ndarray]:
    """Every sample of a Batch (CPU or GPU) as a NumPy array."""
    return [np.asarray(sample) for sample in _on_cpu(batch)]


def as_labels(batch) -> list[int]:
    """The integer label of every sample of a label Batch (each sample of shape ``(1,)``)."""
    return [int(np.asarray(sample).reshape(-1)[0]) for sample in as_arrays(batch)]
