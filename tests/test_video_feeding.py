"""helpers.video_feeding: notebook 07's parameters parsed, the sentences it generates from its
results (each worded by its interval), its tables and its record, on small fake results."""

from __future__ import annotations

import pytest

from helpers import video_feeding
from helpers.harness import Results
from helpers.harness import Trial
from helpers.harness import Way
from helpers.parameters import ParameterError
from helpers.paths import REPO_ROOT
from helpers.video_clips import Clip
from tools.registry import read

LIMIT = "straight through"
ROLES = video_feeding.Roles(
    "DALI, 2 readers",
    "PyAV, 2 workers",
    one_reader="DALI, 1 reader",
    threads="DALI, 2 readers",
    pipeline="pipeline mode",
    file_bytes="decoders.video",
    limit=LIMIT,
)
KINDS = {
    "DALI, 1 reader": ("dali", "1"),
    "DALI, 2 readers": ("dali", "2"),
    "pipeline mode": ("pipeline", "2"),
    "decoders.video": ("decoders.video", "2"),
    "PyAV, 2 workers": ("pyav", "2"),
    LIMIT: ("limit", "2"),
    ROLES.ceiling: ("ceiling", ""),
}
PER_CLIP = {"dali": 10.0, "pipeline": 10.0, "pyav": 10.0, "decoders.video": 40.0, "limit": 20.0}


def fake(rates: dict[str, list[float]], nvdec: dict[str, float] | None = None, fed: bool = False) -> Results:
    ways = [Way(name, lambda: None, kind=KINDS[name][0], knob=KINDS[name][1]) for name in rates]
    trials = {
        name: [Trial(100, 100 / r, 0.0, 0.5, busy={"nvdec_pct": (nvdec or {}).get(name)}) for r in values]
        for name, values in rates.items()
    }
    return Results("fake", "clips", ways, trials, fed=fed)


def alone(limit_rates: list[float], nvdec: dict[str, float] | None = None) -> Results:
    return fake(
        {
            "DALI, 1 reader": [50, 52, 51],
            "DALI, 2 readers": [100, 104, 98],
            "pipeline mode": [97, 99, 101],
            "decoders.video": [15, 16, 14],
            "PyAV, 2 workers": [10, 11, 10],
            LIMIT: limit_rates,
        },
        nvdec,
    )


def test_sizes_and_sweep_entries_are_parsed_or_refused_by_name() -> None:
    assert video_feeding.size_of("1280x720", "resolution") == (1280, 720)
    assert video_feeding.sweep_settings(["480x272/16", "160x120/64"]) == [(480, 272, 16), (160, 120, 64)]
    with pytest.raises(ParameterError, match="resolution: WIDTHxHEIGHT"):
        video_feeding.size_of("720p", "resolution")
    for bad in ("480x272", "480x0/16", "axb/16", "480x272/0"):
        with pytest.raises(ParameterError, match="sweep: entries 'WIDTHxHEIGHT/GOP'"):
            video_feeding.sweep_settings([bad])


def test_a_way_decoding_more_frames_than_straight_through_makes_it_a_reference_not_the_limit() -> None:
    # DALI, 2 readers: 100 clips/s x 10 frames = 1,000 frames/s; straight through: 40 runs/s x 20 = 800
    sentence = video_feeding.limit_sentence(
        alone([40, 41, 39], {"DALI, 2 readers": 95, LIMIT: 63}), LIMIT, PER_CLIP
    )
    assert "`DALI, 2 readers` decoded more frames/s than straight-through decoding (1.2" in sentence
    assert "a reference here, not this machine's decode limit" in sentence
    assert "(NVDEC busy: straight-through 63%, the busiest way, `DALI, 2 readers`, 95%)" in sentence


def test_straight_through_bounds_the_ways_only_when_every_interval_is_below_it() -> None:
    below = video_feeding.limit_sentence(alone([80, 82, 79]), LIMIT, PER_CLIP)  # 1,620 frames/s against 1,000
    assert (
        "every way decoded fewer frames/s than straight-through decoding" in below
        and "bounded them all" in below
    )
    assert "NVDEC" not in below  # no NVML readings, none said
    tie = video_feeding.limit_sentence(
        alone([40, 60, 50]), LIMIT, PER_CLIP
    )  # 1,000 frames/s, a wide interval
    assert "not distinguishable from straight-through decoding" in tie and "none decoded more" in tie


def test_decoded_shares_scale_the_ratio_of_clips_by_the_frames_a_clip_costs() -> None:
    results = alone([40, 40, 40])
    share = video_feeding.decoded_share(results, "DALI, 2 readers", LIMIT, PER_CLIP)
    plain = results.ratio("DALI, 2 readers", LIMIT)
    assert share.ratio == pytest.approx(plain.ratio / 2) and share.low == pytest.approx(plain.low / 2)
    table = video_feeding.alone_table(results, LIMIT, PER_CLIP)
    assert {"CV %", "frames / clip (rule)", "share of straight-through"} <= set(table.columns)
    assert table.loc[LIMIT, "share of straight-through"].startswith("1.00x")


def test_frames_per_clip_counts_decoders_video_from_the_start_of_the_file() -> None:
    part = [Clip(REPO_ROOT / "a.mp4", 0, 0), Clip(REPO_ROOT / "a.mp4", 0, 16)]
    found = video_feeding.frames_per_clip(15.0, 32, part, clip_frames=8, stride=2)
    assert found == {"pyav": 15.0, "dali": 15.0, "pipeline": 15.0, "limit": 32, "decoders.video": 23.0}


def test_the_sweep_table_keeps_the_harness_columns_and_each_settings_ratio() -> None:
    dali, pyav = "DALI, 2 readers", "PyAV, 2 workers"
    sweep = video_feeding.Sweep(
        {"160x120, gop 16": (fake({dali: [100, 110, 105], pyav: [10, 11, 10]}), dali, pyav)}
    )
    table = sweep.table()
    assert {"clips/s", "95% interval", "CV %", "DALI / DataLoader"} <= set(table.columns)
    assert (
        table.loc[dali, "DALI / DataLoader"].startswith("10.") and table.loc[pyav, "DALI / DataLoader"] == ""
    )
    record = sweep.as_record([(160, 120, 16)])
    assert record["settings"] == ["160x120/16"] and record["clips_per_s"][dali] == pytest.approx(
        [100, 110, 105]
    )
    assert record["dali_over_dataloader"]["160x120, gop 16"]["verdict"] == "met"
    assert video_feeding.Sweep({}).table().empty


def _fed(two_readers: list[float], pipeline: list[float]) -> Results:
    """A fed run in which only the two contenders' rates change."""
    return fake({ROLES.ceiling: [50, 51, 50], "DALI, 2 readers": two_readers, "pipeline mode": pipeline,
                 "DALI, 1 reader": [20, 21, 20], "PyAV, 2 workers": [9, 10, 9]}, fed=True)


def test_the_answer_names_a_tie_and_words_every_comparison_by_its_interval() -> None:
    fed = _fed([44, 48, 41], [42, 41, 45])
    results = alone([40, 41, 39])
    text = video_feeding.answer(
        results, fed, ROLES, results.pick(["DALI, 1 reader", "DALI, 2 readers"]), PER_CLIP
    )
    assert (
        "faster than one reader (" in text and "the best dynamic-mode way alone was faster than it (" in text
    )
    assert "decoding 40 frames a clip by its rule against the readers' 10.0" in text
    assert "no single way: `DALI, 2 readers` led, but it was not distinguishable from `pipeline mode`" in text
    clear = _fed([48, 49, 48], [40, 41, 40])
    text = video_feeding.answer(results, clear, ROLES, results.pick(), PER_CLIP)
    assert "`DALI, 2 readers`, which fed it the most clips/s: it was faster than `pipeline mode` (" in text


def test_the_goals_and_the_record_hold_the_ratios_of_the_recorded_trials() -> None:
    results = alone([40, 41, 39])
    fed = fake(
        {
            ROLES.ceiling: [50, 51, 50],
            "DALI, 2 readers": [48, 49, 48],
            "pipeline mode": [40, 41, 40],
            "DALI, 1 reader": [20, 21, 20],
            "PyAV, 2 workers": [9, 10, 9],
        },
        fed=True,
    )
    goals = video_feeding.goals(results, fed, ROLES, PER_CLIP, None)
    assert list(goals) == [
        "fed: best DALI / training alone",
        "alone: best DALI / best PyAV DataLoader",
        "alone: best DALI's decoded frames/s / straight-through decoding",
        "alone: dynamic mode (threads) / pipeline mode (pipelines), same readers",
    ]
    assert goals["alone: best DALI / best PyAV DataLoader"]["ratio"] == pytest.approx(
        results.ratio("DALI, 2 readers", "PyAV, 2 workers").ratio
    )
    assert goals["alone: best DALI / best PyAV DataLoader"]["goal"] == video_feeding.GOALS["alone"]
    # the record's headline keys are those the registry labels (the notebook's metadata)
    labels = read(REPO_ROOT / "notebooks" / "07-video-clips.ipynb").headline
    variants = video_feeding.Variants(fake({"DALI, 2 readers": [100, 104, 98]}), {"DALI, 2 readers": 10.0})
    headline, record = video_feeding.record(
        _settings(),
        alone=results,
        fed=fed,
        roles=ROLES,
        picks={"dali": results.pick(), "pyav": results.pick()},
        per_clip=PER_CLIP,
        variants=variants,
        sweep=video_feeding.Sweep({}),
        found_goals=goals,
        checks={
            "alignment": {},
            "clips_checked": 3,
            "captured": "",
            "folder_check": "",
            "dali_on_bad_files": "",
        },
    )
    assert set(headline) <= set(labels)
    assert headline["decode_limit_fps"] == pytest.approx(results.estimate(LIMIT)[0] * 20)
    assert record["readers_of_way"]["DALI, 1 reader"] == 1 and record["goals"] == goals


def test_the_bad_folder_sentence_says_whether_only_the_bad_files_were_skipped() -> None:
    assert "skipped the two bad files" in video_feeding.dali_on_bad_files(108, 108, 12)
    assert (
        video_feeding.dali_on_bad_files(100, 108, 12)
        == "handed over 100 clips, where the 12 good videos give 108"
    )


def _settings() -> video_feeding.Settings:
    class NoSampler:
        name = None

    fields = dict.fromkeys(video_feeding.Settings._fields)
    fields.update(sampler=NoSampler(), sweep=[])
    return video_feeding.Settings(**fields)


def test_the_cpu_trainer_takes_a_loaders_uint8_clips_and_learns() -> None:
    import torch

    settings = _settings()._replace(on_gpu=False, model_device="cpu", seed=0)
    train = video_feeding.Trainer(settings, 3)
    frames = torch.randint(0, 256, (2, 4, 16, 16, 3), dtype=torch.uint8)
    before = [p.detach().clone() for p in train.model.parameters()]
    train(frames, torch.tensor([0, 2]))
    assert any(not torch.equal(a, b) for a, b in zip(before, train.model.parameters(), strict=True))


def test_the_recorded_parameters_are_the_resolved_ones_with_the_sweep_as_given() -> None:
    settings = _settings()._replace(sweep=[(480, 272, 16)], clip_frames=8, device="cpu")
    found = video_feeding.parameters_of(settings, 14, 42)
    assert list(found) == list(video_feeding.RECORDED)
    assert found["sweep"] == ["480x272/16"] and found["pyav_clips"] == 14 and found["videos"] == 42
    assert found["clip_frames"] == 8 and found["device"] == "cpu"
