"""helpers.toolkit.harness: the suite's one benchmark harness (ways, rounds in seeded random orders from the
same state, trials at steady state, the settle step, rates, ratios, picks, the table and the
record)."""

from __future__ import annotations

import json
import random
import time
from contextlib import nullcontext

import pandas as pd
import pytest
from fakes import fake_results

from helpers.data.results_file import RESULTS_FOLDER_VARIABLE
from helpers.toolkit.benchmarking import ratio
from helpers.toolkit.harness import Harness
from helpers.toolkit.harness import Results
from helpers.toolkit.harness import Trial
from helpers.toolkit.harness import Way
from helpers.toolkit.harness import fold
from helpers.toolkit.harness import folded
from helpers.toolkit.harness import narrow


class Sleepy:
    """A loader of ``batches`` batches of ``size`` labels, ``pause`` seconds each, that logs what
    happens to it in ``log``."""

    def __init__(self, name, log, *, batches=3, size=4, pause=0.0):
        self.name, self.log = name, log
        self.batches, self.size, self.pause = batches, size, pause
        log.append(("make", name))

    def epoch(self):
        self.log.append(("epoch", self.name))
        for _ in range(self.batches):
            time.sleep(self.pause)
            yield None, [0] * self.size

    def close(self):
        self.log.append(("close", self.name))


def way(name, log, **kw):
    return Way(name, lambda: Sleepy(name, log, **kw), kind="fake")


def quick(**kw):
    """A harness whose trials are one epoch's worth unless told otherwise (no least duration)."""
    return Harness(
        say=lambda _: None, min_seconds=kw.pop("min_seconds", 0), min_batches=kw.pop("min_batches", 1), **kw
    )


def test_every_loader_is_made_and_warmed_up_before_the_first_timed_trial(monkeypatch):
    monkeypatch.setenv(RESULTS_FOLDER_VARIABLE, "x")
    log, timed = [], []
    harness = quick()
    original = harness.trial

    def trial(w, **kw):
        timed.append(len(log))
        return original(w, **kw)

    harness.trial = trial
    harness.run([way("a", log), way("b", log), way("c", log)], 2, label="alone")
    first_timed = timed[0]
    assert log[:first_timed] == [
        ("make", "a"),
        ("epoch", "a"),
        ("make", "b"),
        ("epoch", "b"),
        ("make", "c"),
        ("epoch", "c"),
    ]
    assert [e for e in log if e[0] == "make"] == [("make", "a"), ("make", "b"), ("make", "c")]


def test_rounds_run_every_way_once_in_a_seeded_random_order_that_is_recorded(monkeypatch):
    monkeypatch.setenv(RESULTS_FOLDER_VARIABLE, "x")
    log = []
    harness = quick()
    ways = [way(n, log) for n in "abcd"]
    results = harness.run(ways, 6, label="alone")
    timed = [name for kind, name in log if kind == "epoch"][4:]  # after the four warm-ups
    rounds = [timed[4 * k : 4 * k + 4] for k in range(6)]
    assert rounds == results.orders and all(sorted(r) == list("abcd") for r in rounds)
    assert len({tuple(r) for r in rounds}) > 1  # not one order six times
    expected = random.Random("0:alone")
    assert rounds == [expected.sample(list("abcd"), 4) for _ in range(6)]  # the seed reproduces them
    record = results.as_record()
    assert record["orders"] == rounds and record["order_seed"] == "0:alone"
    assert quick(seed=1).run([way(n, []) for n in "abcd"], 6, label="alone").orders != rounds
    harness.run(ways, 1, label="again")
    assert sum(1 for kind, _ in log if kind == "make") == 4  # made once, reused
    harness.close(keep=["b"])
    assert ("close", "a") in log and ("close", "c") in log and ("close", "b") not in log
    assert list(harness.loaders) == ["b"]


def test_a_trial_counts_every_sample_of_its_epochs_and_times_the_step(monkeypatch):
    monkeypatch.setenv(RESULTS_FOLDER_VARIABLE, "x")
    log = []
    harness = quick()
    steps = []
    w = way("a", log, batches=4, size=5, pause=0.01)
    trial = harness.trial(w, step=lambda x, y: (steps.append(len(y)), time.sleep(0.02)), epochs=2)
    assert trial.samples == 40 and steps == [5] * 8
    assert 8 * 0.03 <= trial.seconds < 8 * 0.03 + 0.5
    assert 8 * 0.01 <= trial.waited_s < trial.seconds - 8 * 0.02 + 0.05
    assert trial.rate == pytest.approx(40 / trial.seconds)


def test_an_empty_epoch_is_refused_with_what_to_check(monkeypatch):
    monkeypatch.setenv(RESULTS_FOLDER_VARIABLE, "x")
    harness = quick()
    with pytest.raises(RuntimeError, match="gave no batches; check the data folder"):
        harness.trial(way("empty", [], batches=0))


def test_two_ways_of_one_name_are_refused():
    with pytest.raises(ValueError, match="two ways share a name"):
        Harness(say=lambda _: None).run([way("a", []), way("a", [])], 1, label="alone")


def fake(rates: dict[str, list[float]], **busy) -> Results:
    """Trials of 100 images, a quarter of each spent waiting, 0.5 s of CPU time (tests/fakes.py)."""
    return fake_results(rates, unit="images", waiting=0.25, busy=busy or None)


def test_ratios_pair_rounds_and_picks_follow_the_interval():
    results = fake({"a": [100, 110, 105, 98], "b": [200, 215, 205, 199], "c": [210, 205, 200, 206]})
    assert results.ratio("b", "a") == ratio([200, 215, 205, 199], [100, 110, 105, 98])
    clear = results.pick(["a", "b"])
    assert clear.best == "b" and clear.clear and "ahead of every other" in str(clear)
    tie = results.pick()
    assert tie.best == "c" and list(tie.ties) == ["b"] and str(tie).startswith("a tie: c, and b:")


def test_a_pick_described_keeps_names_with_commas_whole_and_names_the_best():
    """``Pick.described``: each way's name in backticks (notebook 05's hold commas: ``capture,
    threads 4``), the best said to be the highest mean, each rival with its ratio to the best."""
    results = fake(
        {
            "capture, threads 4, hw_decoder_load 1": [300, 330, 310, 305],
            "capture, threads 4": [290, 335, 300, 310],
            "capture, threads 8": [320, 300, 330, 280],
            "capture, threads 2": [100, 101, 99, 100],
        }
    )
    best, four, eight = "capture, threads 4, hw_decoder_load 1", "capture, threads 4", "capture, threads 8"
    tie = results.pick([best, four, eight])
    assert tie.best == best and list(tie.ties) == [four, eight]
    assert tie.described() == (
        f"a tie: `{best}` (the highest mean), `{four}` at {tie.ties[four]} of it and "
        f"`{eight}` at {tie.ties[eight]} of it"
    )
    two = results.pick([best, four])
    assert two.described() == f"a tie: `{best}` (the highest mean) and `{four}` at {two.ties[four]} of it"
    clear = results.pick([best, "capture, threads 2"])
    assert clear.described() == f"`{best}` (ahead of every other by its interval)"
    assert str(clear) == f"{best} (ahead of every other by its interval)"  # what 01, 03 and 07 print


def test_the_cpu_time_per_1000_pools_every_trial_as_the_table_shows_it():
    """``Results.cpu_per_1000``: all the trials' CPU time over all their samples, the table's
    column unrounded; not the mean of each trial's figure, which weighs a short trial as a long one."""
    trials = [Trial(1000, 1.0, 0.0, 0.1), Trial(3000, 3.0, 0.0, 0.15)]  # 0.10 and 0.05 s per 1,000
    results = Results("alone", "images", [Way("a", lambda: None)], {"a": trials})
    assert results.cpu_per_1000("a") == pytest.approx(1000 * 0.25 / 4000)  # 0.0625, not 0.075
    assert results.table().loc["a", "CPU s / 1,000 images"] == round(results.cpu_per_1000("a"), 2)
    with pytest.raises(KeyError, match="no way named 'b'"):
        results.cpu_per_1000("b")


def test_the_table_shows_rates_with_intervals_and_the_hardware_where_read():
    table = fake(
        {"a": [100, 110, 105, 98]}, gpu_pct=50.0, nvjpg_pct=70.0, nvdec_pct=None, cpu_pct=20.0
    ).table()
    row = table.loc["a"]
    assert row["images/s"] == pytest.approx(103.1, abs=0.1) and row["trials"] == 4
    assert row["GPU %"] == 50 and row["NVJPG %"] == 70 and "NVDEC %" not in table.columns
    assert row["CPU s / 1,000 images"] == pytest.approx(1000 * 2.0 / 400, abs=0.01)  # 4 x 0.5 s, 4 x 100
    assert row["waiting %"] == pytest.approx(25.0)
    low, high = (float(v.replace(",", "")) for v in row["95% interval"].split("-"))
    assert low < row["images/s"] < high


def test_the_record_holds_every_trial():
    record = fake({"a": [100, 110], "b": [50, 55]}).as_record()
    assert record["fed"] is True and [t["rate"] for t in record["ways"]["b"]["trials"]] == [50, 55]


def test_a_recorded_run_comes_back_whole_and_cannot_be_run():
    """``Results.from_record`` is ``as_record``'s inverse (through JSON): the same trials,
    readings, orders and ratios; a way rebuilt from a record says it cannot make a loader, and a
    trial lacking a field is refused by its name."""
    run = fake({"a": [100, 110], "b": [50, 55]}, nvjpg_pct=70.0)
    run.orders, run.order_seed, run.startup_s = [["a", "b"], ["b", "a"]], "seed", {"a": 0.5}
    saved = json.loads(json.dumps(run.as_record()))
    back = Results.from_record(saved)
    assert back.as_record() == run.as_record() and back.ratio("a", "b") == run.ratio("a", "b")
    assert back.trials["a"][0].busy == {"nvjpg_pct": 70.0} and back.way("b").kind == "fake"
    with pytest.raises(RuntimeError, match="a way rebuilt from a record cannot make its loader"):
        back.way("a").make()
    del saved["ways"]["a"]["trials"][0]["cpu_s"]
    with pytest.raises(KeyError, match="a recorded trial lacks cpu_s"):
        Results.from_record(saved)


def test_more_rounds_until_the_interval_is_narrow_then_stop(monkeypatch):
    monkeypatch.setenv(RESULTS_FOLDER_VARIABLE, "x")
    harness = quick()
    ways = [way("a", [], batches=2), way("b", [], batches=2)]
    assert len(harness.run(ways, 2, label="x", until=lambda r: True, most=6).rates("a")) == 2
    assert len(harness.run(ways, 2, label="x", until=lambda r: False, most=5).rates("a")) == 5
    assert narrow([("a", "b")], 0.5)(fake({"a": [100, 101, 99], "b": [50, 51, 49]}))
    assert not narrow([("a", "b")], 0.01)(fake({"a": [100, 150, 80], "b": [50, 51, 49]}))


def test_headless_runs_print_one_line_and_no_bar(monkeypatch, capsys):
    monkeypatch.setenv(RESULTS_FOLDER_VARIABLE, "x")
    said = []
    Harness(say=said.append, min_seconds=0, min_batches=1).run([way("a", []), way("b", [])], 2, label="alone")
    assert capsys.readouterr().out == ""
    assert len(said) == 1 and said[0].startswith(
        "alone: 2 rounds of 2 ways, 1 epoch a trial (at least 0 s), in "
    )


class Ahead(Sleepy):
    """A loader that, like DALI's, has ``ahead`` batches of its next epoch ready; each logs when
    it is handed over."""

    ahead = 2

    def epoch(self):
        for index, batch in enumerate(super().epoch()):
            self.log.append(("batch", self.name, index, time.perf_counter()))
            yield batch


def test_the_batches_a_loader_had_ready_are_handed_over_untimed_and_uncounted(monkeypatch):
    monkeypatch.setenv(RESULTS_FOLDER_VARIABLE, "x")
    log, stepped = [], []
    harness = quick()
    w = Way("pipeline", lambda: Ahead("p", log, batches=42, size=4, pause=0.005))
    trial = harness.trial(w, step=lambda x, y: stepped.append(1))
    assert trial.skipped == 2 and trial.samples == 40 * 4 and trial.batches == 40 and len(stepped) == 40
    every = harness.trial(w, step=lambda x, y: stepped.append(1), step_ready=True)
    assert every.skipped == 2 and every.samples == 40 * 4 and every.epochs == 1
    assert len(stepped) == 40 + 42  # every batch of the whole epoch trained on
    assert 40 * 0.005 <= trial.seconds < 42 * 0.005 + 0.3
    results = harness.run([w, way("cold", [], batches=10)], 2, label="alone")
    assert results.table().loc["pipeline", "ready, untimed"] == 2
    assert results.table().loc["cold", "ready, untimed"] == 0
    assert results.ratio("pipeline", "cold") == ratio(results.rates("pipeline"), results.rates("cold"))


def test_a_trial_times_whole_epochs_worth_until_it_is_long_enough(monkeypatch):
    monkeypatch.setenv(RESULTS_FOLDER_VARIABLE, "x")
    harness = quick(min_seconds=0.2, min_batches=12)
    trial = harness.trial(way("a", [], batches=5, size=3, pause=0.01))
    assert trial.seconds >= 0.2 and trial.batches % 5 == 0 and trial.batches >= 15
    assert trial.samples == 3 * trial.batches and trial.epochs == trial.batches // 5 and trial.skipped == 0
    assert trial.batches * 0.01 <= trial.seconds < (trial.batches + 5) * 0.01 + 0.1  # no extra epoch
    assert quick(min_batches=12).trial(way("b", [], batches=5)).batches == 15  # at least 12, whole epochs


def test_the_untimed_handover_stays_within_five_percent_of_what_a_trial_times(monkeypatch):
    monkeypatch.setenv(RESULTS_FOLDER_VARIABLE, "x")
    trial = quick().trial(Way("p", lambda: Ahead("p", [], batches=10)))
    assert trial.skipped == 2 and trial.epochs == 5 and trial.batches == 48
    assert trial.skipped <= 0.05 * trial.batches  # 4 epochs would time 38: more than 5% handed over


def test_a_folder_smaller_than_the_run_ahead_runs_more_epochs_instead_of_stopping(monkeypatch):
    monkeypatch.setenv(RESULTS_FOLDER_VARIABLE, "x")
    log = []
    harness = quick()
    trial = harness.trial(Way("p", lambda: Ahead("p", log, batches=2)), step=lambda x, y: None)
    assert trial.skipped == 2 and trial.batches == 40 and trial.epochs == 21
    assert trial.epoch_start_s is not None  # epochs began inside the timer
    assert harness.startup_s["p"] >= 0


def test_a_fixed_epoch_count_that_would_hand_over_too_much_untimed_is_refused_with_what_to_do(monkeypatch):
    monkeypatch.setenv(RESULTS_FOLDER_VARIABLE, "x")
    harness = quick()
    with pytest.raises(RuntimeError, match=r"2 batch\(es\) ready.*more than 5%.*at least 5 epochs a trial"):
        harness.trial(Way("p", lambda: Ahead("p", [], batches=10)), epochs=4)
    assert harness.trial(Way("q", lambda: Ahead("q", [], batches=10)), epochs=5).batches == 48


def test_same_work_times_the_same_samples_for_every_way_and_lasts_for_the_fastest(monkeypatch):
    monkeypatch.setenv(RESULTS_FOLDER_VARIABLE, "x")
    harness = quick(min_seconds=0.15)
    ways = [way("fast", [], batches=5, pause=0.002), way("slow", [], batches=5, pause=0.006)]
    results = harness.run(ways, 2, label="same", same_work=True)
    batches = {t.batches for ts in results.trials.values() for t in ts}
    assert len(batches) == 1 and min(t.seconds for t in results.trials["fast"]) >= 0.15
    assert results.min_seconds == 0.15  # the fastest way's trials last it: check_steady checks them


def test_hardware_readings_of_a_trial_shorter_than_a_second_are_dropped(monkeypatch):
    monkeypatch.setenv(RESULTS_FOLDER_VARIABLE, "x")

    class Reads:
        def sample(self):
            class Busy:
                def as_dict(self):
                    return {"nvdec_pct": 50.0, "nvjpg_pct": 3.0, "cpu_pct": 40.0}

            return nullcontext(Busy())

    short = quick(sampler=Reads()).trial(way("a", [], batches=2))
    assert short.busy == {"nvdec_pct": None, "nvjpg_pct": None, "cpu_pct": 40.0}
    long = quick(sampler=Reads(), min_seconds=1.0).trial(way("b", [], batches=2, pause=0.05))
    assert long.seconds >= 1.0 and long.busy["nvdec_pct"] == 50.0


def test_min_seconds_defaults_by_device_and_refuses_nonsense():
    assert Harness(gpu=True).min_seconds == 2.0 and Harness().min_seconds == 1.0
    assert Harness(min_seconds=0.5, gpu=True).min_seconds == 0.5
    with pytest.raises(ValueError, match="min_seconds must be a number of seconds >= 0"):
        Harness(min_seconds=-1)
    with pytest.raises(ValueError, match="min_seconds must be a number"):
        Harness(min_seconds="3")


class Clock:
    """A virtual clock for the harness (``perf_counter``, ``sleep``): the loaders below advance it
    instead of sleeping, so that the order test is exact on a loaded machine."""

    def __init__(self):
        self.now = 0.0

    def perf_counter(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


class Engine:
    """A shared decoder: a loader that runs ahead keeps it busy for ``carry`` seconds after each of
    its epochs; every batch of another loader takes ``slowdown`` times longer meanwhile."""

    def __init__(self, clock, carry=0.3, slowdown=10):
        self.clock, self.carry, self.slowdown, self.busy_until = clock, carry, slowdown, 0.0

    def busy(self):
        return self.clock.now < self.busy_until

    def idle(self):
        return not self.busy()

    def sample(self):
        return nullcontext(None)


class Carrier:
    def __init__(self, engine, pause, batches=5):
        self.engine, self.pause, self.batches = engine, pause, batches

    def epoch(self):
        for _ in range(self.batches):
            self.engine.clock.sleep(self.pause)
            yield None, [0] * 4
        self.engine.busy_until = self.engine.clock.now + self.engine.carry  # its run-ahead decodes on

    def close(self):
        pass


class Victim(Carrier):
    def epoch(self):
        for index in range(self.batches):
            # a little jitter, so that the rounds give an interval
            self.engine.clock.sleep(
                self.pause * (self.engine.slowdown if self.engine.busy() else 1) * (1 + 0.01 * (index % 3))
            )
            yield None, [0] * 4


def verdict_in_order(monkeypatch, order, settle):
    clock = Clock()
    monkeypatch.setattr("helpers.toolkit.harness.time", clock)
    engine = Engine(clock)
    harness = quick(sampler=engine, settle_most_s=2.0 if settle else 0.0)
    ways = {
        "heavy": Way("heavy", lambda: Carrier(engine, 0.01)),
        "b": Way("b", lambda: Victim(engine, 0.01)),
        "c": Way("c", lambda: Victim(engine, 0.015)),
    }
    trials = {name: [] for name in ways}
    for way in ways.values():
        harness.loader(way)  # made and warmed up before any trial, as Harness.run does
    for k in range(4):
        for name in order:
            engine.clock.sleep(0.001 * k)  # rounds not quite alike
            trials[name].append(harness.trial(ways[name], epochs=4))  # b: 0.2 s, c: 0.3 s
    results = Results("order", "samples", list(ways.values()), trials)
    return results.ratio("b", "c")


def test_with_the_settle_step_reversed_orders_give_the_same_verdict_without_it_they_differ(monkeypatch):
    """b is 1.5x c. The heavy way's run-ahead slows whichever way follows it: b in one order, c in
    the reversed one. Settled, both orders find b faster; unsettled, the order decides."""
    monkeypatch.setenv(RESULTS_FOLDER_VARIABLE, "x")
    forward = verdict_in_order(monkeypatch, ["heavy", "b", "c"], settle=True)
    reverse = verdict_in_order(monkeypatch, ["c", "b", "heavy"], settle=True)
    assert forward.low > 1 and reverse.low > 1
    assert forward.ratio == pytest.approx(1.5, rel=0.02) and reverse.ratio == pytest.approx(1.5, rel=0.02)
    forward = verdict_in_order(monkeypatch, ["heavy", "b", "c"], settle=False)
    reverse = verdict_in_order(monkeypatch, ["heavy", "c", "b"], settle=False)
    assert forward.high < 1 < reverse.low  # "slower" in one order, "faster" in the other


def test_a_notebook_shows_seven_columns_and_folds_the_rest():
    """At most 7 columns on the page (the ways' names and 6), an engine's column only where some
    way kept it busy, every column in the folded table; code still gets every column."""
    table = fake(
        {"a": [100, 110, 105, 98], "b": [50, 55, 52, 51]},
        gpu_pct=50.0,
        nvjpg_pct=70.0,
        nvdec_pct=0.0,
        cpu_pct=20.0,
    ).table()
    assert {"NVDEC %", "CV %", "s a trial"} <= set(table.columns) and len(table.columns) > 6
    html = table._repr_html_()
    shown, details = html.split("<details>")
    header = shown.split("<thead>")[1].split("</tr>")[0]  # the columns' names
    assert header.count("<th") == 7, header  # the ways' names and 6
    assert "images/s" in header and "95% interval" in header and "NVJPG %" in header
    assert "NVDEC %" not in header and "NVDEC %" in details  # it read 0: folded away
    assert details.startswith(f"<summary>All {len(table.columns)} columns</summary>")
    assert type(table.loc[["a"]]) is pd.DataFrame  # what code computes from it is a plain DataFrame
    assert "<details>" not in folded(table[["images/s", "95% interval"]], "images/s")._repr_html_()


def test_any_table_folds_to_the_columns_asked_for_and_refuses_too_many():
    """``fold``: the columns named on the page in their order, the whole table folded under them;
    more than SHOWN_COLUMNS, or a column the table lacks, is refused by name."""
    table = pd.DataFrame({name: [1, 2] for name in "abcdefgh"})
    shown, details = fold(table, ["c", "a"])._repr_html_().split("<details>")
    header = shown.split("<thead>")[1].split("</tr>")[0]
    assert header.index(">c<") < header.index(">a<") and ">b<" not in header
    assert ">h<" in details and details.startswith("<summary>All 8 columns</summary>")
    with pytest.raises(ValueError, match="at most 6"):
        fold(table, list("abcdefg"))
    with pytest.raises(ValueError, match="'z'"):
        fold(table, ["z"])
