"""A torch ``Dataset`` over the records of a Caffe2 LMDB (notebook 03's DataLoader baseline).

It lives in a module, not in the notebook, because DataLoader workers started with
``forkserver`` or ``spawn`` import the dataset's class by name: a class defined in a notebook
cannot be imported by a fresh process. Each worker opens the LMDB itself (a handle does not
survive a fork), PIL decodes the JPEG, and torchvision's v2 transforms rotate it, still as
``uint8``: normalization happens on the device, after the 4x smaller copy.
"""

from __future__ import annotations

import io

import numpy as np
import torch
from PIL import Image
from torch.utils.data import Dataset
from torchvision.transforms import v2

from helpers.data.caffe2_records import decode_record


class LMDBDigits(Dataset):
    """Sample ``i``: the ``i``-th record of the LMDB at ``path`` (in key order) as a
    ``(1, 28, 28)`` ``uint8`` tensor and its label, rotated by a random angle in [-7.5, 7.5]
    degrees when ``augment`` (bilinear, like DALI's ``rotate``)."""

    def __init__(self, path: str, *, augment: bool = True) -> None:
        import lmdb

        self.path = str(path)
        with lmdb.open(self.path, readonly=True, lock=False) as env, env.begin() as txn:
            self.keys = list(txn.cursor().iternext(values=False))
        self.rotate = (
            v2.RandomRotation(7.5, interpolation=v2.InterpolationMode.BILINEAR, fill=0) if augment else None
        )
        self.env = None  # opened in the worker process that uses it

    def __len__(self) -> int:
        return len(self.keys)

    def __getitem__(self, index: int):
        import lmdb

        if self.env is None:
            self.env = lmdb.open(self.path, readonly=True, lock=False, readahead=False)
        with self.env.begin() as txn:
            record = decode_record(txn.get(self.keys[index]))
        image = torch.from_numpy(np.array(Image.open(io.BytesIO(record.jpeg)).convert("L")))
        image = image.unsqueeze(0)
        if self.rotate is not None:
            image = self.rotate(image)
        return image, record.label

    def __getstate__(self) -> dict:
        return {**self.__dict__, "env": None}  # a worker opens its own handle
