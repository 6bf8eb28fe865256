"""helpers.toolkit.hardware's sampler and helpers.toolkit.devices.video_decoders, on a CPU: without NVML the
sampler says so once and records the CPU alone; with NVML (a stand-in module that counts) it
records every engine the GPU reports, skipping one it lacks."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from helpers.toolkit import hardware
from helpers.toolkit.devices import video_decoders


def test_without_nvml_it_says_so_once_and_records_the_cpu_alone(monkeypatch) -> None:
    monkeypatch.setattr(hardware, "_load_nvml", lambda: None)
    said = []
    sampler = hardware.Sampler(say=said.append)
    assert not sampler.available and len(said) == 1 and "not installed" in said[0]
    with sampler.sample() as busy:
        sum(i * i for i in range(300_000))  # some CPU work
    record = busy.as_dict()
    assert record["nvdec_pct"] is None and record["gpu_pct"] is None and record["nvml_samples"] == 0
    assert 0 < record["cpu_pct"] <= 100
    assert len(said) == 1  # said once, not once a trial


class FakeNVML:
    """pynvml's calls the sampler makes: the decoder busy at 14% then 28%, no JPEG engine."""

    class NVMLError(Exception):
        pass

    def __init__(self) -> None:
        self.decoder = iter([14.0] + [28.0] * 10_000)
        self.busy_before: float | None = None  # until then the decoder reads 90% (a previous trial)

    def next_decoder_reading(self) -> float:
        if self.busy_before is not None and time.perf_counter() < self.busy_before:
            return 90.0
        return next(self.decoder)

    def nvmlInit(self) -> None:
        pass

    def nvmlShutdown(self) -> None:
        pass

    def nvmlDeviceGetHandleByIndex(self, index: int) -> str:
        return f"gpu{index}"

    def nvmlDeviceGetName(self, handle: str) -> str:
        return "NVIDIA H200"

    def nvmlDeviceGetUtilizationRates(self, handle: str):
        return SimpleNamespace(gpu=40, memory=5)

    def nvmlDeviceGetDecoderUtilization(self, handle: str):
        return [self.next_decoder_reading(), 166_666]

    def nvmlDeviceGetJpgUtilization(self, handle: str):
        raise self.NVMLError("Not Supported")


def test_with_nvml_it_records_each_engine_the_gpu_reports(monkeypatch) -> None:
    fake = FakeNVML()
    monkeypatch.setattr(hardware, "_load_nvml", lambda: fake)
    sampler = hardware.Sampler(interval=0.01, say=pytest.fail)  # available: nothing to say
    assert sampler.available and sampler.name == "NVIDIA H200"
    assert set(sampler.readers) == {"gpu_pct", "nvdec_pct"}  # no JPEG engine: not read
    with sampler.sample() as busy:
        time.sleep(0.35)  # the readings of its first 0.17 s (NVML's sampling period) left out
    record = busy.as_dict()
    assert record["nvml_samples"] >= 5
    assert record["nvdec_pct"] == pytest.approx(28.0) and record["nvdec_max_pct"] == 28.0
    assert record["gpu_pct"] == 40.0 and record["nvjpg_pct"] is None
    sampler.close()
    assert not sampler.available


@pytest.mark.parametrize(
    ("name", "count"),
    [
        ("NVIDIA H200", 7),
        ("NVIDIA H100 80GB HBM3", 7),
        ("NVIDIA GH200 480GB", 7),
        ("NVIDIA A100-SXM4-80GB", 5),
        ("NVIDIA A30", 4),
    ],
)
def test_video_decoders_by_gpu_name(name: str, count: int) -> None:
    assert video_decoders(name, say=pytest.fail) == count


@pytest.mark.parametrize("name", ["Tesla T4", None])
def test_an_unknown_gpu_gets_one_reader_and_a_line_saying_what_to_set(name) -> None:
    said = []
    assert video_decoders(name, say=said.append) == 1
    assert len(said) == 1 and "`readers`" in said[0]


def test_readings_within_nvmls_sampling_period_of_a_trials_start_are_left_out(monkeypatch) -> None:
    """NVML averages each reading over its sampling period: one taken early in a trial still holds
    the previous trial's work (here the decoder at 90% for 0.1 s after the trial starts)."""
    fake = FakeNVML()
    monkeypatch.setattr(hardware, "_load_nvml", lambda: fake)
    sampler = hardware.Sampler(interval=0.01, say=pytest.fail)
    assert sampler.settle_s == pytest.approx(0.166666)
    fake.busy_before = time.perf_counter() + 0.1
    with sampler.sample() as busy:
        time.sleep(0.4)
    record = busy.as_dict()
    assert record["nvdec_max_pct"] == 28.0 and 5 <= record["nvml_samples"] <= 25
    with sampler.sample() as busy:  # shorter than the period: no reading is clean
        time.sleep(0.05)
    assert busy.as_dict()["nvdec_pct"] is None and busy.as_dict()["nvml_samples"] == 0
