"""helpers.loader_benchmark: the scheduling and timing that notebook 03 relies on."""

from __future__ import annotations

import time

import pytest
import torch

from helpers.loader_benchmark import Config
from helpers.loader_benchmark import profile_top
from helpers.loader_benchmark import time_epochs
from helpers.loader_benchmark import time_split


def test_config_names_say_what_differs_from_the_default() -> None:
    assert Config("capture").name == "capture b64"
    assert Config("dataloader", workers=8).name == "dataloader b64 workers=8"
    assert Config("pipeline", batch=1024, decode="cpu", threads=8).name == \
        "pipeline b1024 decode=cpu threads=8"
    assert Config("capture", labels_in_torch=True, overlap="thread").name == \
        "capture b64 labels-in-torch overlap=thread"



def test_time_epochs_times_only_the_epochs_after_the_warm_up() -> None:
    calls = []

    def train(batches):
        calls.append(list(batches))
        time.sleep(0.01)
        return 100, 0.5

    record = time_epochs(lambda: iter([1, 2]), train, warmup=2, timed=3)
    assert len(calls) == 5 and calls[0] == [1, 2]
    assert len(record["epoch_samples_per_s"]) == 3 and record["final_loss"] == 0.5
    assert record["timed_samples"] == 300  # the trial's rate: timed samples over timed seconds
    assert min(record["epoch_samples_per_s"]) <= record["samples_per_s"] <= max(record["epoch_samples_per_s"])
    assert all(0 < rate <= 100 / 0.01 for rate in record["epoch_samples_per_s"])


def test_time_split_separates_the_data_side_from_the_training_side() -> None:
    def slow_batches():
        for _ in range(4):
            time.sleep(0.02)
            yield torch.zeros(64, 1), torch.zeros(64)

    split = time_split(slow_batches(), lambda x, y: time.sleep(0.005), lambda: None, step=64)
    assert split["samples"] == 256
    assert split["data_ms_per_step"] >= 19 and 4 <= split["train_ms_per_step"] < 19




def test_profile_top_names_functions_per_step() -> None:
    def work():
        for _ in range(10):
            sum(i * i for i in range(20000))

    profile = profile_top(work, steps=10, top=3)
    assert len(profile["top"]) == 3 and profile["steps"] == 10
    assert sum(profile["share_by_package"].values()) == pytest.approx(1.0)
    assert all(row["own_us_per_step"] > 0 for row in profile["top"])


@pytest.mark.parametrize("filename, expected", [
    ("/tmp/site/nvidia/dali/experimental/dynamic/_tensor.py", "experimental/dynamic/_tensor.py:176(f)"),
    ("/x/.venv/lib/python3.11/site-packages/nvidia/dali/_batch.py", "nvidia/dali/_batch.py:176(f)"),
    ("/usr/lib/python3/dist-packages/torch/autograd/graph.py", "torch/autograd/graph.py:176(f)"),
    ("/home/u/repo/helpers/loaders.py", "loaders.py:176(f)"),
])
def test_profile_rows_name_a_module_by_its_package_path_never_the_machines(filename, expected) -> None:
    from helpers.loader_benchmark import _package
    from helpers.loader_benchmark import _short

    assert _short((filename, 176, "f")) == expected
    assert (_package((filename, 176, "f")) == "DALI (Python side)") == ("nvidia" in filename)
