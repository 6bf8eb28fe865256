from __future__ import annotations

import pytest

from helpers.toolkit import devices


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(devices, "gpu_available", lambda: False)


@pytest.fixture
def one_gpu(monkeypatch):
    monkeypatch.setattr(devices, "gpu_available", lambda: True)


def test_auto_picks_the_gpu_when_there_is_one(one_gpu) -> None:
    assert devices.resolve_device("auto") == "gpu"
    assert devices.resolve_device("cpu") == "cpu"


def test_auto_picks_the_cpu_without_a_gpu(no_gpu) -> None:
    assert devices.resolve_device("auto") == "cpu"


def test_asking_for_a_gpu_without_one_says_what_to_do(no_gpu) -> None:
    with pytest.raises(devices.GPUUnavailableError) as error:
        devices.resolve_device("gpu")
    assert 'device="cpu"' in str(error.value)
    assert "cudaErrorInsufficientDriver" in str(error.value)


def test_unknown_device(no_gpu) -> None:
    with pytest.raises(ValueError, match="auto"):
        devices.resolve_device("cuda")


def test_skip_message_says_why(no_gpu) -> None:
    assert "no usable GPU" in devices.skip_message("Step 6")
    assert "notebooks/ and its page of the docs site" in devices.skip_message("Step 6")


def test_torch_device_names_cuda_for_the_gpu() -> None:
    assert devices.torch_device("gpu") == "cuda" and devices.torch_device("cpu") == "cpu"
