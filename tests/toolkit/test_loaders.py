"""helpers.toolkit.loaders: the background thread's guarantees, without DALI; the dynamic-mode feed and
its capture check on small CPU loops over the embedded MNIST test LMDB; what DALI's loaders have
ready when an epoch ends."""

from __future__ import annotations

import threading
import time

import pytest

from helpers.toolkit.loaders import InBackground
from helpers.toolkit.loaders import Staged
from helpers.toolkit.loaders import check_capture


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


# helpers.toolkit.loaders.DynamicFeed and check_capture, on the embedded MNIST test LMDB (1,000 digits)

SIDE = 20  # a module-level name: capture mode cannot prove it constant


class Digits:
    """Subclasses of DynamicFeed over the test LMDB, made on first use (DALI is imported late)."""

    @staticmethod
    def feed(step, *, capture, batch_size=100):
        import nvidia.dali.experimental.dynamic as ndd

        from helpers.data.data_sources import locate_data
        from helpers.toolkit.loaders import DynamicFeed

        class Feed(DynamicFeed):
            pass

        if step is not None:
            Feed.step = step
        reader = ndd.readers.Caffe2(path=str(locate_data(verbose=False).mnist_testing))
        return Feed(
            reader, ndd.EvalContext(num_threads=2), batch_size=batch_size, capture=capture, name="digits"
        )


def literal_step(self, jpegs, labels):
    import nvidia.dali.experimental.dynamic as ndd
    import nvidia.dali.types as types

    images = ndd.resize(
        ndd.decoders.image(jpegs, device="cpu", output_type=types.GRAY), resize_x=20, resize_y=20
    )
    return images.torch(), labels.torch()


def global_step(self, jpegs, labels):
    import nvidia.dali.experimental.dynamic as ndd
    import nvidia.dali.types as types

    images = ndd.resize(
        ndd.decoders.image(jpegs, device="cpu", output_type=types.GRAY), resize_x=SIDE, resize_y=SIDE
    )
    return images.torch(), labels.torch()


def test_a_dynamic_feed_serves_every_batch_of_each_epoch_in_both_modes_and_prints_what_it_captured(capsys):
    for capture, epochs in ((True, 2), (False, 1)):  # a capture loop keeps its reader across epochs
        feed = Digits.feed(literal_step, capture=capture)
        for _ in range(epochs):
            batches = list(feed.epoch())
            assert len(batches) == 10 and all(tuple(x.shape) == (100, 20, 20, 1) for x, _ in batches)
            assert sum(len(y) for _, y in batches) == 1000
        assert feed.guard.checked is capture
    check_capture(Digits.feed(literal_step, capture=True))
    assert capsys.readouterr().out.strip() == (
        "digits: captured Image, Resize; nothing eager in the steps checked (the first 2 of each epoch)"
    )


def test_a_dynamic_feed_whose_step_passes_a_global_fails_naming_the_operator() -> None:
    from helpers.toolkit.capture_guard import EagerOperatorError

    with pytest.raises(EagerOperatorError, match=r"(?s)digits: .*Resize .*`resize_x=SIDE`"):
        check_capture(Digits.feed(global_step, capture=True))


def test_check_capture_reports_the_loader_that_runs_on_the_background_thread(capsys) -> None:
    background = InBackground(Digits.feed(literal_step, capture=True))
    check_capture(background)
    background.close()
    assert capsys.readouterr().out.strip().endswith("(on the background thread)")


def test_a_dynamic_feed_without_a_step_says_what_to_define() -> None:
    with pytest.raises(NotImplementedError, match=r"must define step\(\*batch\)"):
        next(Digits.feed(None, capture=False).epoch())


def test_staged_serves_the_same_batches_every_epoch() -> None:
    batches = [(1, "a"), (2, "b")]
    staged = Staged(iter(batches))  # an iterator is kept as a list: every epoch sees all of it
    assert list(staged.epoch()) == list(staged.epoch()) == batches


def test_a_pipeline_feed_runs_ahead_into_the_next_epoch_by_its_prefetch_depth() -> None:
    """What the harness hands over untimed for pipeline mode: when an epoch of a pipeline-mode feed
    ends, DALI has already run (or is running) ``feed.ahead`` iterations of the next epoch, and
    none more until the next epoch is read (auto_reset schedules nothing extra). If DALI ran more
    ahead, or stopped at the epoch's end, this fails and the harness's ready batches must change."""
    import numpy as np
    from nvidia.dali import fn
    from nvidia.dali import pipeline_def

    from helpers.data.data_sources import locate_data
    from helpers.toolkit.loaders import PipelineFeed

    runs = []

    def count(_info=None):
        runs.append(1)
        return [np.zeros(1, dtype=np.int32)] * 10

    @pipeline_def(batch_size=10, num_threads=1, device_id=None, prefetch_queue_depth=2)
    def counted():
        jpegs, labels = fn.readers.caffe2(path=str(locate_data(verbose=False).mnist_testing), name="Reader")
        return labels, fn.external_source(source=count, batch=True)

    pipe = counted()
    pipe.build()
    feed = PipelineFeed(pipe, ["labels", "runs"], lambda out: (out["runs"], out["labels"]))
    batches = sum(1 for _ in feed.epoch())
    assert batches * 10 == pipe.epoch_size("Reader") and feed.ahead == 2 and feed.batch_size == 10
    assert len(runs) == batches + 2
    time.sleep(0.3)
    assert len(runs) == batches + 2, "the pipeline ran more iterations after its epoch ended"
    assert sum(1 for _ in feed.epoch()) == batches
    assert len(runs) == 2 * batches + 2 and feed.ahead == 2


def test_a_capture_loop_over_a_reader_carries_one_batch_into_the_next_epoch_and_eager_none() -> None:
    """The ready batches the harness reads off a dynamic-mode feed (``DynamicFeed.ahead``, from the
    captured pipeline's private state): DALI 2.4's capture loop over a reader ends an epoch with
    one batch of the next scheduled (it does not reset its pipeline, unlike a capture loop over
    an external source); eager mode schedules nothing. If DALI changes either, this fails."""
    capture = Digits.feed(literal_step, capture=True)
    eager = Digits.feed(literal_step, capture=False)
    assert capture.ahead == 0 and eager.ahead == 0  # nothing scheduled before the first epoch
    for _ in range(2):
        assert sum(1 for _ in capture.epoch()) == 10 and capture.ahead == 1
        assert sum(1 for _ in eager.epoch()) == 10 and eager.ahead == 0
