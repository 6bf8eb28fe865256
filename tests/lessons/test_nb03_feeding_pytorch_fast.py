"""helpers.lessons.nb03_feeding_pytorch_fast: notebook 03's ways, tables, checks and generated answer."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pandas as pd
import pytest
import torch
from fakes import fake_results

from helpers.data.data_sources import locate_data
from helpers.data.lmdb_subset import record_count
from helpers.data.paths import REPO_ROOT
from helpers.data.paths import relative
from helpers.lessons import nb03_feeding_pytorch_fast as nb03
from helpers.lessons.nb03_feeding_pytorch_fast import Setup
from helpers.lessons.nb03_feeding_pytorch_fast import answer
from helpers.lessons.nb03_feeding_pytorch_fast import batch_series
from helpers.lessons.nb03_feeding_pytorch_fast import best
from helpers.lessons.nb03_feeding_pytorch_fast import guards
from helpers.lessons.nb03_feeding_pytorch_fast import knob_findings
from helpers.lessons.nb03_feeding_pytorch_fast import knob_table
from helpers.lessons.nb03_feeding_pytorch_fast import profile_top
from helpers.lessons.nb03_feeding_pytorch_fast import record
from helpers.lessons.nb03_feeding_pytorch_fast import same_data
from helpers.lessons.nb03_feeding_pytorch_fast import same_knobs
from helpers.lessons.nb03_feeding_pytorch_fast import way
from helpers.lessons.nb03_feeding_pytorch_fast import which_mode
from helpers.toolkit.benchmarking import Record
from helpers.toolkit.benchmarking import ratio
from helpers.toolkit.harness import Results
from helpers.toolkit.harness import steady_seconds
from helpers.toolkit.loaders import InBackground
from helpers.toolkit.loaders import Staged
from helpers.toolkit.parameters import ParameterError


def make(batch, **options):
    return ("loader", batch, options)


def test_a_way_is_named_by_its_kind_batch_and_options_and_builds_its_loader() -> None:
    base = way("capture", 1024, make, "batch size")
    threads = way("capture", 1024, make, "threads", against=base, decode="cpu", threads=8)
    assert threads.name == "capture b1024 decode=cpu threads=8" and threads.against == base.name
    assert threads.make() == ("loader", 1024, {"decode": "cpu", "threads": 8})
    assert (threads.kind, threads.knob, threads.batch) == ("capture", "threads", 1024)
    background = way("capture", 64, lambda batch: Staged([]), "background thread", background=True)
    assert background.name == "capture b64 background thread"
    loader = background.make()
    assert isinstance(loader, InBackground)
    loader.close()


def test_same_knobs_keeps_what_pipeline_mode_shares_with_dynamic_mode() -> None:
    dynamic = way("capture", 1024, make, "labels", decode="cpu", threads=2, labels_in_torch=True)
    pipeline = same_knobs(dynamic, make)
    assert pipeline.name == "pipeline b1024 decode=cpu threads=2"
    assert pipeline.make() == ("loader", 1024, {"decode": "cpu", "threads": 2})
    assert same_knobs(way("eager", 64, make, "eager mode"), make).name == "pipeline b64"


def fake(rates: dict, ways: list | None = None, *, ready: dict | None = None) -> Results:
    """A run whose trials have these rates (samples/s), a way per name unless given; ``ready``:
    the batches a way had ready before each timer (tests/fakes.py)."""
    ways = ways or [way(name.split()[0], int(name.split()[1][1:]), make, "batch size") for name in rates]
    return fake_results(rates, ways=ways, label="test", waiting=0.1, cpu_s=2.0, skipped=ready)


RATES = {
    "capture b64": [100, 110, 105],
    "capture b1024": [300, 330, 310],
    "eager b64": [50, 52, 49],
    "pipeline b64": [200, 190, 210],
    "pipeline b1024": [400, 420, 410],
    "dataloader b64": [90, 95, 92],
    "ceiling b1024": [500, 520, 505],
}


def test_best_and_the_knob_table_pair_each_way_with_the_one_without_its_knob() -> None:
    base = way("capture", 64, make, "batch size")
    ways = [base, way("capture", 1024, make, "batch size", against=base)]
    results = fake({n: RATES[n] for n in ("capture b64", "capture b1024")}, ways)
    table = knob_table(results)
    assert list(table.index) == ["capture b1024"]
    assert table.loc["capture b1024", "ratio [95% interval]"] == str(
        ratio(RATES["capture b1024"], RATES["capture b64"])
    )
    assert best(results, ["capture b64", "capture b1024"], 1) == ["capture b1024"]
    assert batch_series(results, ["capture"])["capture"][1][0] == 1024


@pytest.mark.parametrize(
    "low, high, words",
    [(0.7, 0.9, "pipeline mode, unless"), (1.1, 1.3, "dynamic mode"), (0.9, 1.1, "either")],
)
def test_which_mode_follows_the_interval(low: float, high: float, words: str) -> None:
    from helpers.toolkit.benchmarking import Ratio

    assert which_mode(Ratio((low + high) / 2, low, high, 5, True)).startswith(words)


def rounds_and_picks() -> tuple[Results, dict, dict]:
    """RATES's rounds with a DataLoader that ties with the other (``dataloader b256``)."""
    results = fake({**RATES, "dataloader b256": [91, 93, 93]}, ready={"pipeline b1024": 2})
    picks = {
        "dynamic": results.pick(["capture b64", "capture b1024", "eager b64"]),
        "pipeline": results.pick(["pipeline b64", "pipeline b1024"]),
        "dataloader": results.pick(["dataloader b64", "dataloader b256"]),
    }
    references = {
        "eager": "eager b64",
        "capture": "capture b64",
        "pipeline default": "pipeline b64",
        "same knobs": "pipeline b1024",
        "ceiling": "ceiling b1024",
    }
    return results, picks, references


def test_the_answer_comes_from_the_rounds() -> None:
    results, picks, references = rounds_and_picks()
    text = answer(results, picks, references)
    same = results.ratio("capture b1024", "pipeline b1024")
    assert same == ratio(RATES["capture b1024"], RATES["pipeline b1024"])
    assert f"slower than pipeline mode at the same knobs ({same})" in text
    assert "`capture b1024`, 313 samples/s [" in text
    assert "ahead of the other candidates by its interval" in text
    assert "pipeline mode, unless you need" in text


CPU = {
    "data_path": None,
    "device": "cpu",
    "records": 256,
    "batch_sizes": [64, 128],
    "min_seconds": None,
    "selection_trials": 2,
    "trials": 3,
    "threads": 2,
    "thread_counts": [1],
    "hw_decoder_loads": [0.0, 1.0],
    "dataloader_workers": [1, 2],
    "equal_data_batches": 2,
    "learning_rate": 0.01,
    "seed": 0,
}


def set_up(history=("",), **changes) -> Setup:
    return nb03.set_up(list(history), **{**CPU, **changes})


def test_the_set_up_resolves_the_parameters_and_copies_whole_batches_of_records(monkeypatch) -> None:
    """An epoch is the first records cut to a whole number of the largest batch, copied to a folder
    of their own; None takes the device's default (records, a trial's least duration, worker counts
    from the cores); the record keeps the source relative to the checkout and nothing of this
    machine; the set-up is read by attribute, cannot be changed and takes keywords only."""
    setup = set_up(records=300)
    source = locate_data(verbose=False).mnist_training
    assert (setup.records, setup.epoch_records, setup.step_batch, setup.big) == (300, 256, 64, 128)
    assert record_count(setup.subset) == 256 and setup.source_records == record_count(source)
    assert (setup.device, setup.on_gpu, setup.min_seconds) == ("cpu", False, steady_seconds(None, gpu=False))
    recorded = setup.parameters
    assert recorded["data_path"] == relative(source) and not Path(recorded["data_path"]).is_absolute()
    assert setup.subset not in str(recorded) and str(REPO_ROOT) not in str(recorded), recorded
    assert (recorded["records"], recorded["epoch_records"], recorded["batch_sizes"]) == (300, 256, [64, 128])
    assert set(recorded) == set(CPU) | {"epoch_records"}
    assert json.loads(json.dumps(recorded)) == recorded  # as the results JSON keeps it
    with pytest.raises(dataclasses.FrozenInstanceError):
        setup.trials = 5  # type: ignore[misc]
    with pytest.raises(TypeError):
        nb03.set_up([""], *CPU.values())  # keyword arguments only
    setup.folder.cleanup()
    assert not Path(setup.subset).exists()
    monkeypatch.setattr(nb03, "resolve_device", lambda device: "gpu")  # as on a machine with a GPU
    monkeypatch.setattr(nb03.os, "cpu_count", lambda: 16)
    on_gpu = set_up(device="auto", records=None, dataloader_workers=None, batch_sizes=[64, 1024])
    assert (on_gpu.device, on_gpu.records, on_gpu.epoch_records) == ("gpu", 15360, 15360)
    assert (on_gpu.min_seconds, on_gpu.workers) == (steady_seconds(None, gpu=True), (4, 8, 16))
    on_gpu.folder.cleanup()


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"batch_sizes": [64, 100]}, "every loader batch size must be a multiple of the first (64)"),
        ({"batch_sizes": [64, 512], "records": 300}, "the largest loader batch (512) is larger than the 300"),
        ({"records": 0}, "parameter records must be a positive integer, not 0"),
        ({"trials": 0}, "parameter trials must be a positive integer, not 0"),
        ({"thread_counts": []}, "parameter thread_counts must be a non-empty list of positive integers"),
        ({"hw_decoder_loads": [0.5, 1.5]}, "parameter hw_decoder_loads must be a list of shares from 0 to 1"),
        ({"min_seconds": -1.0}, "parameter min_seconds must be a number of seconds >= 0"),
        ({"learning_rate": 0}, "parameter learning_rate must be a number above 0, not 0"),
        ({"seed": -1}, "parameter seed must be a whole number >= 0, not -1"),
        (
            {"history": ["", "trials = 5", "# Parameters\ntrails = 3"]},
            "unknown parameter trails; did you mean trials?",
        ),  # a name papermill injected, mistyped
    ],
)
def test_the_set_up_refuses_a_bad_value_by_name(changes: dict, message: str) -> None:
    with pytest.raises(ParameterError, match=re.escape(message)):
        set_up(**changes)


def test_the_record_holds_the_set_ups_parameters_both_runs_and_the_picks_as_ratios() -> None:
    """A Record that save_results writes: the set-up's parameters; every trial of both runs (the
    batches a loader had ready among them); each tie as its ratio's record; the headline's rates
    are the confirmation's geometric means, its ratios the goals'; the same-data table as rows."""
    results, picks, references = rounds_and_picks()
    goals = {
        name: results.ratio("capture b1024", against).goal(1.0)
        for name, against in {
            "best dynamic / pipeline mode default": "pipeline b64",
            "best dynamic / best DataLoader": "dataloader b64",
            "best dynamic / pipeline mode, same knobs": "pipeline b1024",
            "best dynamic / ceiling": "ceiling b1024",
        }.items()
    }
    setup = set_up()
    setup.folder.cleanup()
    checks = pd.concat({"no rotation": pd.DataFrame({"bit equal": [True]}, index=["capture / eager"])})
    knobs = fake({"capture b64": [1, 2, 3]})
    rec = record(
        setup,
        knobs=knobs,
        confirmation=results,
        picks=picks,
        references=references,
        goals=goals,
        same_data=checks,
        captured_operators=["Image"],
        profile={"steps": 4},
    )
    assert isinstance(rec, Record) and rec.parameters == setup.parameters
    saved, headline = rec.results, rec.headline
    assert headline["best_dynamic_samples_per_s"] == pytest.approx(results.estimate("capture b1024")[0])
    assert headline["dataloader_samples_per_s"] == pytest.approx(results.estimate("dataloader b256")[0])
    assert headline["best_over_ceiling"] == goals["best dynamic / ceiling"]["ratio"]
    assert saved["knobs"]["ways"].keys() == {"capture b64"} and saved["goals"] == goals
    assert saved["confirmation"]["ways"]["pipeline b1024"]["trials"][0]["skipped"] == 2
    tie = results.ratio("dataloader b64", "dataloader b256")
    assert saved["picks"]["dataloader"] == {
        "best": "dataloader b256",
        "ties": {
            "dataloader b64": {
                "ratio": pytest.approx(tie.ratio),
                "ci95": pytest.approx([tie.low, tie.high]),
                "trials": 3,
            }
        },
    }
    assert saved["picks"]["dynamic"] == {"best": "capture b1024", "ties": {}}
    assert saved["same_data"] == [{"check": "no rotation", "loaders": "capture / eager", "bit equal": True}]
    assert (saved["captured_operators"], saved["profile"]) == (["Image"], {"steps": 4})
    json.dumps(saved)  # what save_results writes


def test_a_tie_is_called_a_tie() -> None:
    results = fake({"pipeline b64": [200, 190, 210], "pipeline b1024": [205, 185, 212]})
    words = answer(
        results,
        {k: results.pick(["pipeline b64", "pipeline b1024"]) for k in ("dynamic", "pipeline", "dataloader")},
        dict.fromkeys(("same knobs", "ceiling", "pipeline default"), "pipeline b64"),
    )
    assert "the highest rate but tied by the interval with `pipeline b" in words


class Batches:
    def __init__(self, batches, capture=False):
        self.batches, self.capture, self.closed = batches, capture, False
        self.guard = "guard"

    def epoch(self):
        return iter(self.batches)

    def close(self):
        self.closed = True


def test_same_data_compares_each_loader_with_the_first_in_grey_levels() -> None:
    from helpers.lessons.nb03_feeding_pytorch_fast import GREY_LEVEL

    images, labels = torch.zeros(4, 1, 2, 2), torch.arange(4)
    shifted = images.clone()
    shifted[0, 0, 0, 0] = GREY_LEVEL
    loaders = {
        "a": Batches([(images, labels)] * 3),
        "b": Batches([(images.clone(), labels)] * 3),
        "c": Batches([(shifted, labels)] * 3),
        "d": Batches([(images, labels + 1)] * 3),
    }
    table = same_data(loaders, 2)
    assert list(table["bit equal"]) == [True, False, False]
    assert list(table["most grey levels apart"]) == [0.0, 1.0, 0.0]
    assert list(table["labels equal"]) == [True, True, False] and set(table["batches"]) == {2}
    assert all(loader.closed for loader in loaders.values())


def test_guards_are_those_of_the_capture_loops_on_any_thread() -> None:
    loaders = {"capture": Batches([], capture=True), "eager": Batches([]), "pipeline": object()}
    thread = InBackground(Batches([], capture=True))
    try:
        assert set(guards({**loaders, "thread": thread})) == {"capture", "thread"}
    finally:
        thread.close()


def test_staged_keeps_a_copy_of_one_epoch() -> None:
    source = Batches([(torch.ones(2), torch.zeros(2))])
    staged = Staged.epoch_of(source)
    source.batches[0][0].zero_()
    assert source.closed and torch.equal(next(iter(staged.epoch()))[0], torch.ones(2))


def test_profile_top_names_functions_per_step() -> None:
    def work():
        for _ in range(10):
            sum(i * i for i in range(20000))

    profile = profile_top(work, steps=10, top=3)
    assert len(profile["top"]) == 3 and profile["steps"] == 10
    assert sum(profile["share_by_package"].values()) == pytest.approx(1.0)
    assert all(row["own_us_per_step"] > 0 for row in profile["top"])


@pytest.mark.parametrize(
    "filename, expected",
    [
        ("/tmp/site/nvidia/dali/experimental/dynamic/_tensor.py", "experimental/dynamic/_tensor.py:176(f)"),
        ("/x/.venv/lib/python3.11/site-packages/nvidia/dali/_batch.py", "nvidia/dali/_batch.py:176(f)"),
        ("/usr/lib/python3/dist-packages/torch/autograd/graph.py", "torch/autograd/graph.py:176(f)"),
        ("/home/u/repo/helpers/toolkit/loaders.py", "toolkit/loaders.py:176(f)"),
    ],
)
def test_profile_rows_name_a_module_by_its_package_path_never_the_machines(filename, expected) -> None:
    from helpers.lessons.nb03_feeding_pytorch_fast import _package
    from helpers.lessons.nb03_feeding_pytorch_fast import _short

    assert _short((filename, 176, "f")) == expected
    assert (_package((filename, 176, "f")) == "DALI (Python side)") == ("nvidia" in filename)


def _capture_knobs() -> list[nb03.LoaderWay]:
    """capture b64, and two knobs turned against it: a batch of 1024 and eager mode."""
    base = way("capture", 64, make, "batch size")
    return [
        base,
        way("capture", 1024, make, "batch size", against=base),
        way("eager", 64, make, "eager mode", against=base),
    ]


def test_the_knob_findings_sort_each_knob_by_its_interval() -> None:
    ways = _capture_knobs()
    ways.append(way("capture", 128, make, "batch size", against=ways[0]))
    results = fake(
        {
            "capture b64": [100, 110, 105],
            "capture b1024": [300, 330, 310],
            "eager b64": [50, 52, 49],
            "capture b128": [101, 108, 107],
        },
        ways,
    )
    text = knob_findings(results)
    faster = results.ratio("capture b1024", "capture b64")
    assert f"faster with batch size (`capture b1024`: {faster})" in text
    assert "slower with eager mode (`eager b64`: " in text
    assert "1 other knob setting(s) not told apart" in text
    assert text.startswith("- **The knobs**, in 3 selection round(s)")
    tie = results.ratio("capture b128", "capture b64")
    assert f"Intervals from 3 round(s) are as wide as {tie}: these rounds can show" in text
    picks = {
        "dynamic": results.pick(["capture b1024"]),
        "pipeline": results.pick(["capture b64"]),
        "dataloader": results.pick(["eager b64"]),
    }
    references = {"pipeline default": "capture b64", "same knobs": "capture b64", "ceiling": "capture b64"}
    assert text in answer(results, picks, references, knobs=results)
    assert text not in answer(results, picks, references)
    confirmed = answer(results, picks, {**references, "capture": "capture b64"}, knobs=results)
    assert (
        f"The confirmation's 3 rounds measure the picked knobs together: `capture b1024` was faster "
        f"than `capture b64` ({faster})"
    ) in confirmed


def test_two_selection_rounds_never_say_that_no_knob_helps() -> None:
    """With no knob faster by its interval, the words say what the rounds did not show, not that
    no knob made a loader faster: two rounds leave wide intervals."""
    base = way("capture", 64, make, "batch size")
    ways = [base, way("capture", 1024, make, "batch size", against=base)]
    results = fake({"capture b64": [100, 110], "capture b1024": [150, 100]}, ways)
    text = knob_findings(results)
    assert "no knob made a loader faster" not in text
    assert "no knob shown faster by its interval" in text
    assert "in 2 selection round(s)" in text and "not that a knob does not help" in text
    assert f"as wide as {results.ratio('capture b1024', 'capture b64')}" in text
    assert "confirmation" not in text


def test_the_knobs_chart_says_every_rate_and_its_interval_in_its_alt_text() -> None:
    from helpers.lessons.nb03_feeding_pytorch_fast import crossover

    series = {
        "capture": [(64, 12000.0, 11000.0, 13000.0), (1024, 20500.0, 19000.0, 22000.0)],
        "pipeline": [(64, 27000.0, 26000.0, 28000.0), (1024, 25000.0, 24000.0, 26000.0)],
    }
    fig = crossover(series, ceiling=(108000.0, 107000.0, 109000.0), title="Rates (gpu)")
    assert fig.alt == (
        "Chart: Rates (gpu). Training samples/s: capture: 12,000 [11,000-13,000] at batch 64, 20,500 "
        "[19,000-22,000] at batch 1024; pipeline: 27,000 [26,000-28,000] at batch 64, 25,000 "
        "[24,000-26,000] at batch 1024; ceiling 108,000 [107,000-109,000]."
    )


def test_the_knob_ways_turn_one_knob_each_against_the_way_without_it() -> None:
    setup = dataclasses.replace(set_up(), device="gpu")  # a GPU's knobs too: decoding on the CPU, hw load
    ways = nb03.knob_ways(setup, 64, capture=make, eager=make, pipeline=make, dataloader=make)
    names = [w.name for w in ways]
    assert len(names) == len(set(names)), "a way named twice"
    by_name = {w.name: w for w in ways}
    big = setup.big
    # each knob's way against the same way without it, which is a way of the run
    assert all(w.against in by_name for w in ways if w.against), [w.against for w in ways]
    assert by_name[f"capture b{big} decode=cpu"].against == f"capture b{big}"
    assert by_name[f"capture b{big} hw_decoder_load=0.0"].against == f"capture b{big}"
    assert by_name[f"pipeline b{big} decode=cpu threads=1"].against == f"pipeline b{big} decode=cpu"
    assert by_name["eager b64"].against == "capture b64" and by_name["eager b64"].knob == "eager mode"
    most = f"dataloader b{big} workers={setup.workers[-1]}"
    assert by_name[f"dataloader b{big} workers={setup.workers[-1]} prefetch_factor=4"].against == most
    cpu = nb03.knob_ways(set_up(), 64, capture=make, eager=make, pipeline=make, dataloader=make)
    assert not any("hw_decoder_load" in w.name or "decode=cpu" in w.name for w in cpu)  # GPU knobs only


def test_the_finalists_are_the_baselines_the_two_best_of_each_kind_and_their_references() -> None:
    ways = [
        *_capture_knobs(),
        way("pipeline", 64, make, "batch size"),
        way("pipeline", 1024, make, "batch size"),
        way("dataloader", 64, make, "workers"),
    ]
    knobs = fake({n: RATES[n] for n in [w.name for w in ways]}, ways)
    baselines, finalists = nb03.finalists(knobs, 64, pipeline=make, ceiling=make)
    assert baselines == ["eager b64", "capture b64", "pipeline b64"]
    names = [w.name for w in finalists]
    assert len(names) == len(set(names))
    assert set(names) == {
        "eager b64",
        "capture b64",
        "pipeline b64",
        "capture b1024",
        "pipeline b1024",
        "dataloader b64",
        "ceiling b64",
        "ceiling b1024",
    }


def test_the_picks_and_goals_compare_the_best_dynamic_way_with_its_references() -> None:
    results, _, _ = rounds_and_picks()
    baselines = ["eager b64", "capture b64", "pipeline b64"]
    targets = {
        "best dynamic / pipeline mode default": 1.5,
        "best dynamic / best DataLoader": 2.0,
        "best dynamic / pipeline mode, same knobs": 0.9,
        "best dynamic / ceiling": 0.5,
    }
    picks, references, goals = nb03.picks_and_goals(results, baselines, make, targets)
    assert picks["dynamic"].best == "capture b1024" and set(picks) == {"dynamic", "pipeline", "dataloader"}
    assert references == {
        "eager": "eager b64",
        "capture": "capture b64",
        "pipeline default": "pipeline b64",
        "same knobs": "pipeline b1024",
        "ceiling": "ceiling b1024",
    }
    same = goals["best dynamic / pipeline mode, same knobs"]
    assert same["ratio"] == pytest.approx(results.ratio("capture b1024", "pipeline b1024").ratio)
    assert same["goal"] == 0.9 and set(goals) == set(targets)


def test_the_data_checks_refuse_a_loader_that_differs() -> None:
    images, labels = torch.zeros(4, 1, 2, 2), torch.arange(4)
    same = {name: Batches([(images, labels)] * 2) for name in ("eager", "capture", "pipeline")}
    loader = Batches([(images + nb03.GREY_LEVEL / 2, labels)] * 2)  # within a grey level
    turned = {name: Batches([(images, labels)] * 2) for name in ("eager", "capture")}
    checks = nb03.data_checks({**same, "DataLoader": loader}, turned, 2)
    assert list(checks.index.get_level_values(0).unique()) == ["no rotation", "rotated"]
    off = Batches([(images + 2 * nb03.GREY_LEVEL, labels)] * 2)
    with pytest.raises(AssertionError, match="more than a grey level apart"):
        nb03.data_checks({**same, "DataLoader": off}, {"eager": Batches([(images, labels)] * 2)}, 2)
    bit = {"eager": Batches([(images, labels)] * 2), "capture": Batches([(images + 1e-6, labels)] * 2)}
    with pytest.raises(AssertionError, match="DALI's loaders gave other pixels"):
        nb03.data_checks(bit, {"eager": Batches([(images, labels)] * 2)}, 2)


def test_a_knob_with_a_value_is_said_with_it() -> None:
    base = way("capture", 1024, make, "batch size")
    zero = way("capture", 1024, make, "hw_decoder_load", against=base, hw_decoder_load=0.0)
    results = fake(
        {"capture b1024": [100, 101, 99], "capture b1024 hw_decoder_load=0.0": [150, 152, 149]}, [base, zero]
    )
    assert "faster with hw_decoder_load=0.0 (`capture b1024 hw_decoder_load=0.0`:" in knob_findings(results)
