"""Several dynamic-mode readers as one loader: one shard each, each on a thread of its own.

A DALI video reader decodes its clips one at a time through one hardware decoding session (NVDEC),
and one session keeps one of a GPU's video decoders busy (an H200 has seven). ``ShardedFeed``
runs ``N`` readers of the same files, reader ``i`` reading shard ``i`` of ``N``, each under its
own ``EvalContext`` on its own thread, and hands their batches to one iterator as they come: one
epoch of the loader is one epoch of every shard, so every sample once. ``RoundRobin`` is the
pipeline-mode counterpart: ``N`` pipelines, one shard each, read in turn.

    feeds = [VideoLoader(shard=i, shards=7) for i in range(7)]   # DynamicFeed subclasses
    loader = ShardedFeed(feeds, name="7 readers")
    for clips, labels in loader.epoch():
        ...
    loader.close()

Each reader must be made with ``num_shards=N``, ``shard_id=i``, ``stick_to_shard=True`` (else it
moves to the next shard every epoch) and ``pad_last_batch=True`` (else a shard's last batch is
filled from its next pass): the padding, repeats of a shard's last sample, is cut off here, so
that an epoch hands over each sample exactly once. Leaving an epoch early, or an error in any
reader, stops every thread and closes the loader (a capture loop left early cannot run again).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from collections.abc import Sequence
from typing import Any

from helpers.toolkit.loaders import Batch
from helpers.toolkit.loaders import DynamicFeed

_END = object()
_POLL_S = 0.05  # how often a thread that waits to hand over a batch looks for a stop


class ShardError(RuntimeError):
    """A reader of a :class:`ShardedFeed` failed; the message names its shard."""


def shard_size(metadata: dict[str, Any]) -> int:
    """The samples of one shard, from a reader's ``get_metadata()``: DALI gives shard ``i`` of
    ``N`` the samples ``[n * i // N, n * (i + 1) // N)`` of ``n``."""
    n, shards, shard = metadata["epoch_size"], metadata["number_of_shards"], metadata["shard_id"]
    return n * (shard + 1) // shards - n * shard // shards


def _shard_of(feed: DynamicFeed, index: int, readers: int) -> int:
    """Reader ``index``'s shard size, after its settings are checked. DALI 2.4: a reader's
    ``get_metadata()`` before its first batch fixes its batch size at 1, so this runs after it."""
    meta = feed.reader.get_metadata()
    wanted = {"number_of_shards": readers, "shard_id": index, "stick_to_shard": 1, "pad_last_batch": 1}
    wrong = {k: meta.get(k) for k, v in wanted.items() if meta.get(k) != v}
    if wrong:
        raise ValueError(
            f"reader {index} of {readers} was made with {wrong}; make reader i with "
            f"num_shards={readers}, shard_id=i, stick_to_shard=True and pad_last_batch=True, so "
            "that an epoch reads every sample once"
        )
    return shard_size(meta)


def _first(batch: Batch, count: int) -> Batch:
    """The first ``count`` samples of every part of a batch (torch tensors, sliced after DALI)."""
    return tuple(part[:count] for part in batch)  # type: ignore[return-value]


class ShardedFeed:
    """``feeds[i]`` (a :class:`~helpers.toolkit.loaders.DynamicFeed`, its reader on shard ``i``) runs its
    epochs on thread ``i``; ``epoch()`` yields the batches of every shard's epoch as they are
    ready, each sample once (a shard's padding cut off). At most ``depth`` batches a thread wait
    to be taken. ``guard``: what the threads' capture loops captured."""

    def __init__(self, feeds: Sequence[DynamicFeed], *, name: str, depth: int = 2) -> None:
        if not feeds:
            raise ValueError("ShardedFeed needs at least one reader")
        self.feeds, self.name = list(feeds), name
        self.sizes: list[int | None] = [None] * len(self.feeds)  # known from each shard's first batch
        self._requests: list[queue.Queue] = [queue.Queue() for _ in self.feeds]
        self._batches: queue.Queue = queue.Queue(maxsize=depth * len(self.feeds))
        self._stop = threading.Event()
        self._closed = False
        self._threads = [
            threading.Thread(target=self._serve, args=(i,), daemon=True, name=f"{name}: shard {i}")
            for i in range(len(self.feeds))
        ]
        for thread in self._threads:
            thread.start()

    @property
    def guard(self) -> str:
        """What the readers' guards saw: one line when they agree, else a line per reader."""
        seen = [str(feed.guard).removeprefix(f"{feed.guard.name}: ") for feed in self.feeds]
        if len(set(seen)) == 1:
            each = "its one reader" if len(seen) == 1 else f"each of {len(seen)} readers"
            return f"{self.name}, {each}: {seen[0]}"
        return "\n".join(f"{self.name}, reader {i}: {s}" for i, s in enumerate(seen))

    def _put(self, item: Any) -> bool:
        while not self._stop.is_set():
            try:
                self._batches.put(item, timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def _serve(self, shard: int) -> None:
        feed = self.feeds[shard]
        while self._requests[shard].get():  # one request per epoch; False: stop
            try:
                left = self.sizes[shard]
                batches = feed.epoch()
                try:
                    for batch in batches:
                        if self._stop.is_set():
                            return
                        if left is None:
                            left = self.sizes[shard] = _shard_of(feed, shard, len(self.feeds))
                        count = min(left, len(batch[-1]))
                        left -= count
                        if count and not self._put((shard, _first(batch, count))):
                            return
                finally:
                    batches.close()
            except BaseException as error:  # raised in the caller's thread, naming the shard
                self._put((shard, error))
                return
            if not self._put((shard, _END)):
                return

    def epoch(self) -> Iterator[Batch]:
        if self._closed:
            raise RuntimeError(
                f"{self.name}: this loader was closed (an epoch was left early, or a "
                "reader failed); make a new one"
            )
        for requests in self._requests:
            requests.put(True)
        running, finished = set(range(len(self.feeds))), False
        try:
            while running:
                shard, item = self._batches.get()
                if item is _END:
                    running.discard(shard)
                elif isinstance(item, BaseException):
                    raise ShardError(
                        f"{self.name}: reader {shard} of {len(self.feeds)} (shard "
                        f"{shard}) failed: {type(item).__name__}: {item}"
                    ) from item
                else:
                    yield item
            finished = True
        finally:
            if not finished:  # left early or failed: every thread stops
                self.close()

    def close(self, timeout: float = 60.0) -> None:
        """Stop and join every thread (a thread in the middle of an epoch leaves it)."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        for requests in self._requests:
            requests.put(False)
        for thread in self._threads:
            thread.join(timeout)
        alive = [t.name for t in self._threads if t.is_alive()]
        if alive:
            raise RuntimeError(
                f"{self.name}: {len(alive)} reader thread(s) did not stop within "
                f"{timeout:.0f} s ({', '.join(alive)}); restart the kernel to free them"
            )
        for feed in self.feeds:
            feed.close()

    @property
    def samples_per_epoch(self) -> int | None:
        """Every shard's samples (each sample once); None until every shard has run a batch."""
        return None if None in self.sizes else sum(self.sizes)  # type: ignore[arg-type]


class RoundRobin:
    """Pipeline mode's counterpart: ``N`` loaders (``helpers.toolkit.loaders.PipelineFeed``, pipeline
    ``i`` reading shard ``i``), a batch from each in turn; each pipeline prepares its next
    batches on its own threads meanwhile. An epoch ends when every loader's has."""

    def __init__(self, feeds: Sequence[Any]) -> None:
        self.feeds = list(feeds)

    def epoch(self) -> Iterator[Batch]:
        iterators = [iter(feed.epoch()) for feed in self.feeds]
        while iterators:
            for iterator in list(iterators):
                try:
                    yield next(iterator)
                except StopIteration:
                    iterators.remove(iterator)

    def close(self) -> None:
        for feed in self.feeds:
            feed.close()
