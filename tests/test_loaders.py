"""helpers.loaders without DALI: the interleaved rounds (fixed, and until the intervals are narrow
enough) and the background thread's guarantees."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import pytest

from helpers.loaders import InBackground
from helpers.loaders import rates
from helpers.loaders import rounds


@dataclass(frozen=True)
class Named:
    name: str


CONFIGS = [Named("a"), Named("b"), Named("c")]


def test_rounds_rotate_the_order_and_keep_each_configurations_records_in_round_order(capsys) -> None:
    order = []
    records = rounds(CONFIGS, 3, "test", lambda c, k: order.append((k, c.name)) or {"rate": k + 1})
    assert order == [(0, "a"), (0, "b"), (0, "c"), (1, "b"), (1, "c"), (1, "a"),
                     (2, "c"), (2, "a"), (2, "b")]
    assert rates(records, "b", "rate") == [1, 2, 3]
    out, err = capsys.readouterr()
    assert err == "" and "test" in out  # the bar on stdout: no stray newline on stderr


def test_rounds_continue_until_the_condition_holds_and_stop_at_the_most() -> None:
    asked = []

    def enough(records):
        asked.append(len(records["a"]))
        return len(records["a"]) >= 5

    records = rounds(CONFIGS, 2, "test", lambda c, k: {"rate": 1.0}, until=enough, most=9)
    assert [len(v) for v in records.values()] == [5, 5, 5]
    assert asked == [2, 3, 4, 5]  # asked after every round past the first two
    never = rounds(CONFIGS, 2, "test", lambda c, k: {"rate": 1.0}, until=lambda r: False, most=4)
    assert [len(v) for v in never.values()] == [4, 4, 4]
    fixed = rounds(CONFIGS, 2, "test", lambda c, k: {"rate": 1.0}, most=9)  # no until: count
    assert [len(v) for v in fixed.values()] == [2, 2, 2]
    with pytest.raises(ValueError, match="at least 1"):
        rounds(CONFIGS, 0, "test", lambda c, k: {})


class Counting:
    """A loader of ``size`` batches an epoch that can fail at batch ``fail_at``."""

    def __init__(self, size: int, fail_at: int | None = None) -> None:
        self.size, self.fail_at, self.served, self.closed = size, fail_at, [], False
        self.threads = set()

    def epoch(self):
        for i in range(self.size):
            self.threads.add(threading.get_ident())
            if i == self.fail_at:
                raise RuntimeError(f"batch {i} failed")
            self.served.append(i)
            yield i, i

    def close(self) -> None:
        self.closed = True


def test_in_background_serves_every_epoch_on_one_thread_and_closes_the_loader() -> None:
    loader = Counting(5)
    background = InBackground(loader)
    assert [x for x, _ in background.epoch()] == [0, 1, 2, 3, 4]
    assert [x for x, _ in background.epoch()] == [0, 1, 2, 3, 4]
    assert len(loader.threads) == 1 and threading.get_ident() not in loader.threads
    background.close()
    assert loader.closed and not background.thread.is_alive()


def test_in_background_raises_the_threads_error_and_runs_an_abandoned_epoch_to_its_end() -> None:
    failing = InBackground(Counting(5, fail_at=2))
    with pytest.raises(RuntimeError, match="batch 2 failed"):
        list(failing.epoch())
    failing.close()
    loader = Counting(6)
    background = InBackground(loader)
    for x, _ in background.epoch():
        if x == 1:
            break  # the training loop leaves early
    assert loader.served == [0, 1, 2, 3, 4, 5]  # the loader's epoch still ran to its end
    assert [x for x, _ in background.epoch()] == list(range(6))  # and the next epoch is whole
    background.close()
