"""The MNIST classifier of DALI's tutorial "Capture mode in practice": a 784-128-10 perceptron,
deliberately small so that data loading shows in the timings. Notebook 02 shows the same lines
inline; notebooks 03 and 04 and the tests import it from here.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
import torch.nn.functional as F
from torch import nn


class MNISTClassifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(28 * 28, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        images = torch.flatten(images, start_dim=1)
        return self.fc2(F.relu(self.fc1(images)))


@torch.no_grad()
def accuracy(model: nn.Module, batches: Iterable[tuple[torch.Tensor, torch.Tensor]]) -> float:
    """Fraction of the samples in ``batches`` (images, class indices) that ``model`` classifies
    correctly; the model is put in eval mode for the pass and back in train mode after it."""
    model.eval()
    correct = total = 0
    try:
        for images, targets in batches:
            correct += int((model(images).argmax(dim=1) == targets).sum())
            total += int(targets.numel())
    finally:
        model.train()
    if total == 0:
        raise ValueError("no samples to measure accuracy on")
    return correct / total
