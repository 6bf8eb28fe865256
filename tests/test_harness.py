"""helpers.harness: the suite's one benchmark harness (ways, interleaved rounds from the same state,
rates, ratios, picks, the table and the record)."""

from __future__ import annotations

import time

import pytest

from helpers.benchmarking import ratio
from helpers.harness import Harness
from helpers.harness import Results
from helpers.harness import Trial
from helpers.harness import Way
from helpers.harness import narrow
from helpers.results_file import RESULTS_FOLDER_VARIABLE


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


def test_every_loader_is_made_and_warmed_up_before_the_first_timed_trial(monkeypatch):
    monkeypatch.setenv(RESULTS_FOLDER_VARIABLE, "x")
    log, timed = [], []
    harness = Harness(say=lambda _: None)
    original = harness.trial

    def trial(w, **kw):
        timed.append(len(log))
        return original(w, **kw)

    harness.trial = trial
    harness.run([way("a", log), way("b", log), way("c", log)], 2, label="alone")
    first_timed = timed[0]
    assert log[:first_timed] == [("make", "a"), ("epoch", "a"), ("make", "b"), ("epoch", "b"),
                                 ("make", "c"), ("epoch", "c")]
    assert [e for e in log if e[0] == "make"] == [("make", "a"), ("make", "b"), ("make", "c")]


def test_rounds_are_interleaved_and_loaders_kept_for_the_next_run(monkeypatch):
    monkeypatch.setenv(RESULTS_FOLDER_VARIABLE, "x")
    log = []
    harness = Harness(say=lambda _: None)
    ways = [way("a", log), way("b", log), way("c", log)]
    harness.run(ways, 3, label="alone")
    timed = [name for kind, name in log if kind == "epoch"][3:]  # after the three warm-ups
    assert timed == ["a", "b", "c", "b", "c", "a", "c", "a", "b"]
    harness.run(ways, 1, label="again")
    assert sum(1 for kind, _ in log if kind == "make") == 3  # made once, reused
    harness.close(keep=["b"])
    assert ("close", "a") in log and ("close", "c") in log and ("close", "b") not in log
    assert list(harness.loaders) == ["b"]


def test_a_trial_counts_every_sample_of_its_epochs_and_times_the_step(monkeypatch):
    monkeypatch.setenv(RESULTS_FOLDER_VARIABLE, "x")
    log = []
    harness = Harness(say=lambda _: None)
    steps = []
    w = way("a", log, batches=4, size=5, pause=0.01)
    trial = harness.trial(w, step=lambda x, y: (steps.append(len(y)), time.sleep(0.02)), epochs=2)
    assert trial.samples == 40 and steps == [5] * 8
    assert 8 * 0.03 <= trial.seconds < 8 * 0.03 + 0.5
    assert 8 * 0.01 <= trial.waited_s < trial.seconds - 8 * 0.02 + 0.05
    assert trial.rate == pytest.approx(40 / trial.seconds)


def test_an_empty_epoch_is_refused_with_what_to_check(monkeypatch):
    monkeypatch.setenv(RESULTS_FOLDER_VARIABLE, "x")
    harness = Harness(say=lambda _: None)
    with pytest.raises(RuntimeError, match="gave no batches; check the data folder"):
        harness.trial(way("empty", [], batches=0))


def test_two_ways_of_one_name_are_refused():
    with pytest.raises(ValueError, match="two ways share a name"):
        Harness(say=lambda _: None).run([way("a", []), way("a", [])], 1, label="alone")


def fake(rates: dict[str, list[float]], **busy) -> Results:
    ways = [Way(n, lambda: None, kind="fake") for n in rates]
    trials = {n: [Trial(int(r), 1.0, 0.25, 0.5, dict(busy)) for r in values] for n, values in rates.items()}
    return Results("fake", "images", ways, trials, fed=True)


def test_ratios_pair_rounds_and_picks_follow_the_interval():
    results = fake({"a": [100, 110, 105, 98], "b": [200, 215, 205, 199], "c": [210, 205, 200, 206]})
    assert results.ratio("b", "a") == ratio([200, 215, 205, 199], [100, 110, 105, 98])
    clear = results.pick(["a", "b"])
    assert clear.best == "b" and clear.clear and "ahead of every other" in str(clear)
    tie = results.pick()
    assert tie.best == "c" and list(tie.ties) == ["b"] and str(tie).startswith("a tie: c, and b:")


def test_the_table_shows_rates_with_intervals_and_the_hardware_where_read():
    table = fake({"a": [100, 110, 105, 98]}, gpu_pct=50.0, nvjpg_pct=70.0, nvdec_pct=None,
                 cpu_pct=20.0).table()
    row = table.loc["a"]
    assert row["images/s"] == pytest.approx(103.1, abs=0.1) and row["trials"] == 4
    assert row["GPU %"] == 50 and row["NVJPG %"] == 70 and "NVDEC %" not in table.columns
    assert row["CPU s / 1,000 images"] == pytest.approx(1000 * 2.0 / 413, abs=0.01)
    assert row["waiting %"] == pytest.approx(25.0)
    low, high = (float(v.replace(",", "")) for v in row["95% interval"].split("-"))
    assert low < row["images/s"] < high


def test_the_record_holds_every_trial():
    record = fake({"a": [100, 110], "b": [50, 55]}).as_record()
    assert record["fed"] is True and [t["rate"] for t in record["ways"]["b"]["trials"]] == [50, 55]


def test_more_rounds_until_the_interval_is_narrow_then_stop(monkeypatch):
    monkeypatch.setenv(RESULTS_FOLDER_VARIABLE, "x")
    harness = Harness(say=lambda _: None)
    ways = [way("a", [], batches=2), way("b", [], batches=2)]
    assert len(harness.run(ways, 2, label="x", until=lambda r: True, most=6).rates("a")) == 2
    assert len(harness.run(ways, 2, label="x", until=lambda r: False, most=5).rates("a")) == 5
    assert narrow([("a", "b")], 0.5)(fake({"a": [100, 101, 99], "b": [50, 51, 49]}))
    assert not narrow([("a", "b")], 0.01)(fake({"a": [100, 150, 80], "b": [50, 51, 49]}))


def test_headless_runs_print_one_line_and_no_bar(monkeypatch, capsys):
    monkeypatch.setenv(RESULTS_FOLDER_VARIABLE, "x")
    said = []
    Harness(say=said.append).run([way("a", []), way("b", [])], 2, label="alone")
    assert capsys.readouterr().out == ""
    assert len(said) == 1 and said[0].startswith("alone: 2 rounds of 2 ways, 1 epoch a trial, in ")


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
    harness = Harness(say=lambda _: None)
    w = Way("pipeline", lambda: Ahead("p", log, batches=10, size=4, pause=0.02))
    trial = harness.trial(w, step=lambda x, y: stepped.append(1))
    assert trial.skipped == 2 and trial.samples == 8 * 4 and len(stepped) == 8
    every = harness.trial(w, step=lambda x, y: stepped.append(1), step_ready=True)
    assert every.skipped == 2 and every.samples == 8 * 4 and len(stepped) == 8 + 10  # all trained on
    assert 8 * 0.02 <= trial.seconds < 10 * 0.02  # two of the ten pauses were before the timer
    results = harness.run([w, way("cold", [], batches=10)], 2, label="alone")
    assert results.table().loc["pipeline", "ready, untimed"] == 2
    assert results.table().loc["cold", "ready, untimed"] == 0
    assert results.ratio("pipeline", "cold") == ratio(results.rates("pipeline"), results.rates("cold"))


def test_an_epoch_no_longer_than_what_was_ready_is_refused_with_what_to_do(monkeypatch):
    monkeypatch.setenv(RESULTS_FOLDER_VARIABLE, "x")
    harness = Harness(say=lambda _: None)
    with pytest.raises(RuntimeError, match=r"no longer than the 2 batch\(es\) its loader had ready.*data"):
        harness.trial(Way("p", lambda: Ahead("p", [], batches=2)))
