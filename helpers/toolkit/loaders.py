"""The loader scaffolding that notebooks 02, 03, 05 and 07 share: a dynamic-mode feed, a torch
DataLoader feed and a pipeline-mode feed with one ``epoch()`` interface, and a background thread
for any loader (``helpers.toolkit.harness`` times them). The DALI calls themselves (what a
dynamic-mode step does to a batch, the ``@pipeline_def``) stay in the notebooks, where the reader
sees them.

Every loader here has ``epoch()`` (an iterable over one epoch of ``(images, labels)`` on the
model's device) and ``close()``.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

import torch
from torch.utils.data import DataLoader
from torch.utils.data import Dataset

from helpers.toolkit.capture_guard import CaptureGuard

Batch = tuple[Any, Any]


def captured_ahead(reader: Any) -> int:
    """Batches of the next epoch that a reader's capture loop has already scheduled: the loop
    runs on inside its pipeline when an epoch ends (DALI 2.4: one batch); 0 for a reader that
    has not run a capture loop. Read from the captured pipeline (private state, pinned by a
    test)."""
    iterator = getattr(reader, "_captured_iter", None)
    pipeline = getattr(getattr(iterator, "_capture_ctx", None), "pipeline", None)
    return int(getattr(pipeline, "_batches_to_consume", 0)) if pipeline is not None else 0


class DynamicFeed:
    """A dynamic-mode reader's epochs, each batch handed to ``step``: every epoch runs under
    ``context`` (an ``ndd.EvalContext``: its threads and device), in capture mode when
    ``capture``, its batches watched by a :class:`~helpers.toolkit.capture_guard.CaptureGuard`
    (``guard``), which raises if an operator of ``step`` runs eagerly in the first two steps of an
    epoch (eager and unguarded when ``capture`` is false). A notebook's loader
    subclasses it and defines ``step(*batch)``: the DALI calls of one batch, returning
    ``(inputs, labels)`` for torch. Drain every epoch: a capture loop left early destroys its
    reader."""

    def __init__(
        self, reader: Any, context: Any, *, batch_size: int, capture: bool = False, name: str
    ) -> None:
        self.reader, self.context = reader, context
        self.batch_size, self.capture = batch_size, capture
        self.guard = CaptureGuard(name)

    def step(self, *batch: Any) -> Batch:
        raise NotImplementedError(
            f"{type(self).__name__} must define step(*batch): what DALI does to one batch of its reader"
        )

    def epoch(self) -> Iterator[Batch]:
        with self.context:
            batches = self.reader.next_epoch(batch_size=self.batch_size, capture=self.capture)
            try:
                for batch in self.guard(batches) if self.capture else batches:
                    yield self.step(*batch)
            finally:  # an epoch left early ends here, on this thread, inside its context
                batches.close()

    @property
    def ahead(self) -> int:
        """Batches of the next epoch that DALI has already scheduled: a capture loop over a reader
        runs on inside its pipeline when an epoch ends (DALI 2.4: one batch); eager mode, none.
        Read from the captured pipeline (private state, pinned by a test)."""
        return captured_ahead(self.reader) if self.capture else 0

    def close(self) -> None:
        pass


class Staged:
    """The same prepared batches (on the model's device) every epoch: the data of training alone,
    the ceiling no loader can beat."""

    def __init__(self, batches: Sequence[Batch]) -> None:
        self.batches = list(batches)

    @classmethod
    def epoch_of(cls, loader: Any) -> Staged:
        """One whole epoch of ``loader``, copied and kept on its device; the loader is closed."""
        batches = [(images.clone(), labels.clone()) for images, labels in loader.epoch()]
        loader.close()
        return cls(batches)

    def epoch(self) -> Iterator[Batch]:
        return iter(self.batches)

    def close(self) -> None:
        pass


def check_capture(loader: Any) -> None:
    """Run one whole epoch of ``loader`` (a capture loop is never left early) and print what the
    guard of the loader it runs saw: the operators captured, and that none ran eagerly in the
    steps it checked."""
    for _ in loader.epoch():
        pass
    inner = getattr(loader, "loader", loader)  # InBackground runs another loader
    print(f"{inner.guard}{' (on the background thread)' if inner is not loader else ''}")


class DataLoaderFeed:
    """A torch DataLoader at its best for a GPU: persistent ``forkserver`` workers (fresh
    processes, not forks of one that holds a CUDA context and DALI's threads), a seeded shuffle,
    pinned memory on a GPU so that ``prepare`` can copy with ``non_blocking=True``. ``prepare``
    turns one DataLoader batch into ``(images, labels)`` on the model's device."""

    def __init__(
        self,
        dataset: Dataset,
        *,
        batch_size: int,
        workers: int,
        prepare: Callable[..., Batch],
        pin_memory: bool,
        seed: int,
        shuffle: bool = True,
        prefetch_factor: int | None = None,
    ) -> None:
        self.prepare = prepare
        self.loader: DataLoader | None = DataLoader(
            dataset,
            batch_size=batch_size,
            shuffle=shuffle,
            generator=torch.Generator().manual_seed(seed),
            num_workers=workers,
            multiprocessing_context="forkserver",
            persistent_workers=True,
            pin_memory=pin_memory,
            prefetch_factor=prefetch_factor,
        )

    def epoch(self) -> Iterator[Batch]:
        for batch in self.loader:
            yield self.prepare(*batch)

    def close(self) -> None:
        self.loader = None  # its workers stop with it


class PipelineFeed:
    """Pipeline mode through DALI's PyTorch plugin: ``DALIGenericIterator`` over a built
    pipeline whose reader is named ``"Reader"``, the last batch kept partial, and the next epoch
    started as soon as one ends (``auto_reset``, as between the epochs of a training run).
    ``prepare`` turns the iterator's dict of outputs into ``(images, labels)``.

    The pipeline runs ahead of the batch being read by its prefetch queue's depth, across the
    end of an epoch too: when an epoch ends, the first ``ahead`` batches of the next one are
    prepared or in work (DALI 2.4: two; a dynamic-mode capture loop over a reader carries one,
    :attr:`DynamicFeed.ahead`). ``helpers.toolkit.harness`` hands those over before its timer starts."""

    def __init__(
        self, pipe: Any, outputs: Sequence[str], prepare: Callable[[Mapping[str, Any]], Batch]
    ) -> None:
        from nvidia.dali.plugin.pytorch import DALIGenericIterator
        from nvidia.dali.plugin.pytorch import LastBatchPolicy

        self.prepare = prepare
        self.pipe = pipe
        self.batch_size = int(pipe.max_batch_size)
        self.iterator: Any = DALIGenericIterator(
            pipe,
            list(outputs),
            reader_name="Reader",
            last_batch_policy=LastBatchPolicy.PARTIAL,
            auto_reset=True,
        )

    def epoch(self) -> Iterator[Batch]:
        for (outputs,) in self.iterator:  # one dict per GPU; we use one
            yield self.prepare(outputs)

    @property
    def ahead(self) -> int:
        """Batches the pipeline has scheduled and not yet handed over (after an epoch: the next
        epoch's first ones). Read from the pipeline (private state, pinned by a test)."""
        return int(getattr(self.pipe, "_batches_to_consume", 0))

    def close(self) -> None:
        self.iterator = None


class InBackground:
    """Runs a loader's epochs on **one** background Python thread and hands the batches over
    through a queue of two (a third may wait to be put). The same thread serves every epoch (a
    capture loop keeps its
    ``EvalContext`` and its thread); an error in the thread is raised in the training loop; an
    epoch that the training loop abandons (an error in the model, an interrupt) is still run to
    its end in the thread, so that a capture loop is never left early; ``close`` stops and joins
    the thread."""

    _END = object()

    def __init__(self, loader: Any) -> None:
        self.loader = loader
        self.requests: queue.Queue = queue.Queue()
        self.batches: queue.Queue = queue.Queue(maxsize=2)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while self.requests.get():  # one request per epoch; False stops the thread
            try:
                for batch in self.loader.epoch():
                    self.batches.put(batch)
            except BaseException as error:  # handed to the training loop, raised there
                self.batches.put(error)
            else:
                self.batches.put(self._END)

    def epoch(self) -> Iterator[Batch]:
        self.requests.put(True)
        finished = False
        try:
            while (item := self.batches.get()) is not self._END:
                if isinstance(item, BaseException):
                    finished = True
                    raise item
                yield item
            finished = True
        finally:
            while not finished:  # abandoned early: let the thread run its epoch to the end
                item = self.batches.get()
                finished = item is self._END or isinstance(item, BaseException)

    def close(self, timeout: float = 60.0) -> None:
        self.requests.put(False)
        self.thread.join(timeout)  # a thread stuck handing over a batch nobody takes: give up
        if self.thread.is_alive():
            raise RuntimeError(
                "InBackground: the loader's thread did not stop; an epoch it was "
                "serving was never drained. Restart the kernel to free it."
            )
        self.loader.close()
