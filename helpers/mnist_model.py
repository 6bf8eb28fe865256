"""The seed's MNIST classifier: a 784-128-10 perceptron, deliberately small."""

from __future__ import annotations

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
