"""helpers.lessons.nb01_getting_started: notebook 01's epoch counts and their sentences, the speed
test's stand-in reader, its set-up (the parameters checked and resolved), and the sentences and
record it makes from a harness's results (fake trials, no timing); helpers.data.paths.relative
through a linked data folder."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from fakes import fake_results

from helpers.data import registry
from helpers.data.data_sources import check_image_folder
from helpers.data.data_sources import locate_data
from helpers.data.errors import ParameterError
from helpers.data.paths import REPO_ROOT
from helpers.data.paths import relative
from helpers.lessons import nb01_getting_started as gs
from helpers.toolkit.benchmarking import Record
from helpers.toolkit.benchmarking import ratio
from helpers.toolkit.harness import Results

CPU, DEFAULT, HARDWARE = "CPU, 4 threads", "GPU, default", "GPU, hw 1"


KINDS = {CPU: "cpu", DEFAULT: "gpu", HARDWARE: "gpu"}
KNOBS = {DEFAULT: gs.DEFAULT, HARDWARE: gs.ALL_TO_HARDWARE}


def fake(rates: dict[str, list[float]], nvjpg: float | None = None) -> Results:
    """The speed test's ways, decoding alone; NVJPG busy ``nvjpg`` % on the GPU ways (tests/fakes.py)."""
    busy = {name: {"nvjpg_pct": nvjpg if KINDS[name] == "gpu" else None} for name in rates}
    return fake_results(
        rates, kinds=KINDS, knobs=KNOBS, label="decoding", unit="images", fed=False, busy=busy
    )


CPU_ONLY = {CPU: [1000, 1100, 1050, 980, 1020]}
ON_GPU = {
    CPU: [1000, 1100, 1050, 980, 1020],
    DEFAULT: [3000, 3500, 3300, 2900, 3100],
    HARDWARE: [9000, 11000, 9500, 8800, 10000],
}


def test_epoch_counts_and_their_sentences_follow_what_each_epoch_held() -> None:
    counts = {
        "plain": [{"samples": 24, "distinct photos": 21, "photos read twice or more": 3}] * 2,
        "shuffled": [
            {"samples": 24, "distinct photos": 21, "photos read twice or more": 3},
            {"samples": 24, "distinct photos": 19, "photos read twice or more": 5},
        ],
        "padded": [{"samples": 24, "distinct photos": 21, "photos read twice or more": 0}] * 2,
    }
    lines = gs.what_epochs_hold(counts, 21).splitlines()
    assert lines[0] == (
        "- `plain`: epochs of 24 samples; every epoch held all 21 photos, 3 of them twice or more."
    )
    assert lines[1] == (
        "- `shuffled`: epochs of 24 samples; epoch 2 of 2 missed some photos and read others twice or more."
    )
    assert lines[2] == "- `padded`: epochs of 24 samples; every epoch held all 21 photos."
    table = gs.epoch_table(counts)
    assert table.loc["shuffled", ("epoch 2", "distinct photos")] == 19


def test_epoch_counts_read_whole_epochs_of_a_reader() -> None:
    import nvidia.dali.experimental.dynamic as ndd

    root = locate_data(verbose=False).images
    rows = gs.epoch_counts(ndd.readers.File(file_root=root), 8, epochs=2)
    photos = len(check_image_folder(root).files)
    assert rows == [{"samples": 24, "distinct photos": photos, "photos read twice or more": 24 - photos}] * 2


def test_jpeg_views_yield_count_batches_of_distinct_jpegs_and_refuse_capture() -> None:
    from helpers.data.embedded_data import jpeg_variants

    jpegs = jpeg_variants(check_image_folder(locate_data(verbose=False).images).files[:2], 6)
    views = gs.JpegViews(jpegs, 4, 5)
    assert views.distinct == 6 and len(views.batches) == 2
    batches = list(views.next_epoch(batch_size=4))
    assert len(batches) == 5 and all(b.batch_size == 4 and labels == [0, 1, 2, 3] for b, labels in batches)
    assert bytes(np.asarray(batches[0][0].select(0))) == jpegs[0]
    with pytest.raises(ValueError, match="eager batches of 4"):
        next(views.next_epoch(batch_size=4, capture=True))


PARAMETERS = dict(
    image_dir=None,
    batch_size=8,
    device="cpu",
    num_threads=4,
    speed_images=64,
    speed_batch_size=64,
    speed_batches=None,
    trials=5,
    min_seconds=None,
    seed=42,
    results_dir=None,
)


@pytest.mark.parametrize(
    "changed, message",
    [
        ({"batch_size": 22}, "batch_size=22 is larger than the 21 images"),
        ({"speed_batch_size": 65}, "speed_batch_size=65 is larger than speed_images=64"),
        ({"num_threads": 0}, "parameter num_threads must be a positive integer"),
        ({"trials": 1}, "a 95% interval needs two trials"),
        ({"speed_batches": 0}, "parameter speed_batches must be a positive integer"),
        ({"min_seconds": -1}, "parameter min_seconds must be a number of seconds >= 0"),
    ],
)
def test_parameters_are_refused_by_name(changed, message) -> None:
    with pytest.raises(ParameterError, match=message):
        gs.set_up([""], **{**PARAMETERS, **changed})


def test_a_mistyped_parameter_that_papermill_injected_is_refused() -> None:
    history = ["", "batch_size = 8", "# Parameters\nbatchsize = 8"]
    with pytest.raises(ParameterError, match="unknown parameter batchsize; did you mean batch_size?"):
        gs.set_up(history, **PARAMETERS)


def test_the_set_up_resolves_each_default_by_device_and_records_no_path_of_this_machine(
    monkeypatch, capsys
) -> None:
    from dataclasses import FrozenInstanceError

    from helpers.toolkit.harness import steady_seconds

    on_cpu = gs.set_up([""], **PARAMETERS)
    assert (on_cpu.device, on_cpu.speed_batches, on_cpu.min_seconds) == (
        "cpu",
        gs.SPEED_BATCHES["cpu"],
        steady_seconds(None, gpu=False),
    )
    assert "21 images in data/images" in capsys.readouterr().out and on_cpu.folder.root.name == "images"
    monkeypatch.setattr(gs, "resolve_device", lambda device: "gpu")  # as on a machine with a GPU
    on_gpu = gs.set_up([""], **{**PARAMETERS, "device": "auto"})
    assert (on_gpu.device, on_gpu.speed_batches, on_gpu.min_seconds) == (
        "gpu",
        gs.SPEED_BATCHES["gpu"],
        steady_seconds(None, gpu=True),
    )
    given = gs.set_up([""], **{**PARAMETERS, "speed_batches": 3, "min_seconds": 0.5, "results_dir": "/tmp/r"})
    assert (given.speed_batches, given.min_seconds) == (3, 0.5)  # a value given is kept
    assert given.parameters == {
        "batch_size": 8,
        "device": "gpu",
        "num_threads": 4,
        "speed_images": 64,
        "speed_batch_size": 64,
        "speed_batches": 3,
        "trials": 5,
        "min_seconds": 0.5,
        "seed": 42,
        "image_dir": "data/images",
    }  # not where the JSON goes
    with pytest.raises(FrozenInstanceError):
        given.batch_size = 4  # type: ignore[misc]


def test_decode_gap_sentences_follow_the_figures() -> None:
    assert gs.decode_gap_sentence((0.0, 0), (0.0, 0)).endswith("The two decoders gave the same pixels.")
    assert "accounts for it" in gs.decode_gap_sentence((1.0, 9), (0.01, 2))
    assert "removed 50% of the mean difference and took the largest from 9 to 4" in gs.decode_gap_sentence(
        (1.0, 9), (0.5, 4)
    )
    assert gs.decode_gap_sentence((1.0, 9), (1.2, 9)).endswith("did not make the difference smaller.")
    import nvidia.dali.experimental.dynamic as ndd

    zeros = ndd.as_batch([np.zeros((2, 2), np.uint8), np.zeros((2, 2), np.uint8)])
    threes = ndd.as_batch([np.full((2, 2), 3, np.uint8), np.array([[3, 3], [3, 9]], np.uint8)])
    assert gs.gap(zeros, threes) == (3.75, 9)


def test_without_a_gpu_the_answer_says_the_cpu_rate_and_judges_no_goal() -> None:
    speed = fake(CPU_ONLY)
    answer = gs.speed_answer(speed, 4, 64, None)
    rate, low, high = speed.estimate(CPU)
    assert (
        f"**{rate:,.0f} images/s** [{low:,.0f}-{high:,.0f}] (JPEG views of the photographs) with 4 "
        "threads, in batches of 64" in answer
    )
    assert "No GPU in this run" in answer and gs.comparisons(speed) == {} and gs.goals(speed, 4) == {}
    setup, lessons = _objects(speed, device="cpu")
    recorded = gs.record(setup, **lessons)
    assert recorded.headline == {"cpu_decode_img_s": rate}
    assert recorded.results["ratios"] == {} and recorded.results["goals"] == {}
    assert recorded.results["device"] == recorded.parameters["device"] == "cpu"


def test_on_a_gpu_the_answer_words_each_ratio_by_its_interval_and_says_runs_differ() -> None:
    speed = fake(ON_GPU, nvjpg=40.0)
    answer = gs.speed_answer(speed, 4, 64, "NVIDIA H200")
    over_cpu = ratio(ON_GPU[HARDWARE], ON_GPU[CPU])
    assert (
        f"The GPU with hw_decoder_load=1 (NVJPG 40% busy) was **faster than the CPU ({over_cpu})**" in answer
    )
    assert "The GPU with default hw_decoder_load (NVJPG 40% busy) was **faster than the CPU" in answer
    assert f"{over_cpu}, **{over_cpu.verdict(gs.goal(4)[1])}** (this run is on an H200" in answer
    assert "runs differ, and another run at the same parameters can give another verdict" in answer
    assert "the goal is stated for an H200, and this run is on NVIDIA A100" in gs.speed_answer(
        speed, 4, 64, "NVIDIA A100"
    )
    assert "(NVJPG not read)" in gs.speed_answer(fake(ON_GPU), 4, 64, "NVIDIA H200")


def test_the_record_holds_every_trial_and_the_headline_recomputes_from_them() -> None:
    speed = fake(ON_GPU, nvjpg=40.0)
    setup, lessons = _objects(speed)
    recorded = gs.record(setup, **lessons)
    assert isinstance(recorded, Record) and recorded.parameters == setup.parameters
    results, headline = recorded.results, recorded.headline
    trials = results["speed_test"]["ways"]
    assert [t["rate"] for t in trials[HARDWARE]["trials"]] == ON_GPU[HARDWARE]
    hw = ratio(ON_GPU[HARDWARE], ON_GPU[CPU])
    assert results["ratios"]["hw_gpu_over_cpu"] == {"ratio": hw.ratio, "ci95": [hw.low, hw.high], "trials": 5}
    # the goal's name and the threads recorded are the set-up's num_threads (3 here), not a default
    name, target = gs.goal(3)  # its name and target from 01's metadata (helpers.data.registry)
    assert name == "hardware-decoder GPU / CPU decode at 3 threads"
    assert target == registry.goal_targets("01-getting-started", threads=3)[name] > 1
    assert results["goals"] == {name: hw.goal(target)}
    assert results["reference_threads"] == 3 and results["images"] == 3
    assert list(results["classes"]) == ["a", "b"]
    assert headline["hw_gpu_over_cpu"] == hw.ratio and headline["hw_gpu_nvjpg_pct"] == 40.0
    assert headline["gpu_over_cpu"] == ratio(ON_GPU[DEFAULT], ON_GPU[CPU]).ratio
    assert set(headline) == {
        "cpu_decode_img_s",
        "gpu_decode_img_s",
        "gpu_over_cpu",
        "hw_gpu_decode_img_s",
        "hw_gpu_over_cpu",
        "hw_gpu_nvjpg_pct",
    }
    assert results["gaps_vs_cpu"] == {"decode": {"mean": 0.5, "max": 7}}
    assert results["random_angles"] == [1.5, -2.0] and results["shuffled_labels"] == [0, 1]
    setup, lessons = _objects(fake(ON_GPU))
    assert "hw_gpu_nvjpg_pct" not in gs.record(setup, **lessons).headline  # NVML not read


def _objects(speed: Results, device: str = "gpu") -> tuple[gs.Setup, dict]:
    """A set-up (3 threads, the photographs' folder with fake contents) and the lessons' objects."""
    import nvidia.dali.experimental.dynamic as ndd

    images = ndd.as_batch([np.zeros((4, 6, 3), np.uint8)] * 2)
    labels = ndd.as_batch([np.array([0], np.int32), np.array([1], np.int32)])

    @dataclass
    class Views:
        distinct: int = 64

    @dataclass
    class Photos:
        root: Path = REPO_ROOT / "data" / "images"
        classes: tuple = ("a", "b")
        files: tuple = ("x", "y", "z")

    setup = gs.Setup(Photos(), device, 2, 3, 64, 64, 10, 5, 1.0, 42, None)  # type: ignore[arg-type]
    angles = ndd.as_batch([np.float32(1.5), np.float32(-2.0)])
    return setup, dict(
        images=images,
        corners=images,
        selected={"select([0, 1])": images},
        epochs={},
        labels=labels,
        shuffled_labels=labels,
        single=images.select(0),
        angles=angles,
        gaps={"decode": (0.5, 7)},
        views=Views(),
        speed=speed,
    )


def test_relative_names_a_linked_data_folder_by_its_place_in_the_checkout(tmp_path: Path) -> None:
    link = REPO_ROOT / "build" / "test-linked-data"
    link.parent.mkdir(exist_ok=True)
    link.unlink(missing_ok=True)
    link.symlink_to(tmp_path, target_is_directory=True)
    try:
        assert relative(link / "images") == "build/test-linked-data/images"
    finally:
        link.unlink()
