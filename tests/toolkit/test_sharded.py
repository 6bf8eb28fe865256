"""helpers.toolkit.sharded on the CPU: N file readers, one shard each on threads of their own, hand over
every sample of an epoch exactly once (N = 1, 2, 3, eager and capture mode); an error in a
reader's thread is raised in the caller's thread naming the shard; leaving early or an error
stops every thread; readers made without the shard settings are refused."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from helpers.toolkit.loaders import DynamicFeed
from helpers.toolkit.sharded import RoundRobin
from helpers.toolkit.sharded import ShardedFeed
from helpers.toolkit.sharded import ShardError
from helpers.toolkit.sharded import shard_size

ndd = pytest.importorskip("nvidia.dali.experimental.dynamic")

pytestmark = pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")

SAMPLES = 23  # not a multiple of any batch or shard count below: every shard's last batch is padded
BATCH = 4


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """SAMPLES small files, labelled 0..SAMPLES-1 by a file list: a label names its sample."""
    root = tmp_path_factory.mktemp("samples")
    (root / "list.txt").write_text("".join(f"s{i}.bin {i}\n" for i in range(SAMPLES)))
    for i in range(SAMPLES):
        (root / f"s{i}.bin").write_bytes(bytes([i]) * 8)
    return root


class Labels(DynamicFeed):
    """One shard of the file list; a step that DALI captures (a cast), labels as torch."""

    def __init__(
        self,
        root: Path,
        shard: int,
        shards: int,
        *,
        capture: bool,
        fail_at: int | None = None,
        stick: bool = True,
        pad: bool = True,
    ) -> None:
        reader = ndd.readers.File(
            file_root=str(root),
            file_list=str(root / "list.txt"),
            num_shards=shards,
            shard_id=shard,
            stick_to_shard=stick,
            pad_last_batch=pad,
            random_shuffle=True,
            seed=shard + 1,
        )
        super().__init__(
            reader, ndd.EvalContext(num_threads=1), batch_size=BATCH, capture=capture, name=f"shard {shard}"
        )
        self.fail_at, self.steps = fail_at, 0

    def step(self, data, labels):
        self.steps += 1
        if self.steps == self.fail_at:
            raise ValueError("a bad sample")
        return (ndd.cast(labels, dtype=ndd.int64).torch().view(-1),)


def feeds(root: Path, shards: int, **kwargs) -> list[Labels]:
    return [Labels(root, i, shards, **kwargs) for i in range(shards)]


def alive(loader: ShardedFeed) -> list[str]:
    """The names of the loader's reader threads (one a reader) that still run."""
    assert len(loader._threads) == len(loader.feeds)
    return [thread.name for thread in loader._threads if thread.is_alive()]


def test_shard_size_follows_dalis_split() -> None:
    sizes = [shard_size({"epoch_size": 23, "number_of_shards": 3, "shard_id": i}) for i in range(3)]
    assert sizes == [7, 8, 8] and sum(sizes) == 23


@pytest.mark.parametrize("shards", [1, 2, 3])
@pytest.mark.parametrize("capture", [False, True])
def test_every_sample_once_per_epoch(files: Path, shards: int, capture: bool) -> None:
    loader = ShardedFeed(feeds(files, shards, capture=capture), name=f"{shards} readers")
    try:
        assert loader.samples_per_epoch is None  # known once every shard has run
        for _ in range(3):  # the padding is cut off every epoch, and no shard moves
            seen = Counter(v for (labels,) in loader.epoch() for v in labels.tolist())
            assert seen == Counter(range(SAMPLES))
            assert loader.samples_per_epoch == SAMPLES
        if capture:
            each = "its one reader" if shards == 1 else f"each of {shards} readers"
            assert "captured Cast" in loader.guard and each in loader.guard
    finally:
        loader.close()
    assert alive(loader) == []


def test_an_error_in_a_reader_is_raised_naming_its_shard_and_stops_every_thread(files: Path) -> None:
    readers = feeds(files, 3, capture=False)
    readers[1].fail_at = 2
    loader = ShardedFeed(readers, name="3 readers")
    with pytest.raises(ShardError, match=r"reader 1 of 3 .*ValueError: a bad sample") as raised:
        for _ in loader.epoch():
            pass
    assert isinstance(raised.value.__cause__, ValueError)
    assert alive(loader) == []
    with pytest.raises(RuntimeError, match="was closed.*make a new one"):
        next(loader.epoch())


@pytest.mark.parametrize("capture", [False, True])
def test_leaving_an_epoch_early_stops_every_thread(files: Path, capture: bool) -> None:
    loader = ShardedFeed(feeds(files, 3, capture=capture), name="3 readers")
    for _ in loader.epoch():
        break
    assert alive(loader) == []
    with pytest.raises(RuntimeError, match="was closed"):
        next(loader.epoch())


@pytest.mark.parametrize(
    ("setting", "named"), [({"stick": False}, "stick_to_shard"), ({"pad": False}, "pad_last_batch")]
)
def test_readers_without_the_shard_settings_are_refused(files: Path, setting: dict, named: str) -> None:
    loader = ShardedFeed(feeds(files, 2, capture=False, **setting), name="2 readers")
    with pytest.raises(ShardError, match=f"{named}.*num_shards=2, shard_id=i, stick_to_shard=True"):
        list(loader.epoch())
    assert alive(loader) == []
    loader = ShardedFeed(feeds(files, 3, capture=False)[:2], name="2 readers")  # shards of 3
    with pytest.raises(ShardError, match="number_of_shards"):
        list(loader.epoch())


class Listed:
    def __init__(self, items: list[int]) -> None:
        self.items, self.closed = items, False

    def epoch(self):
        return iter(self.items)

    def close(self) -> None:
        self.closed = True


def test_round_robin_takes_a_batch_from_each_in_turn_until_all_end() -> None:
    loaders = [Listed([1, 2, 3]), Listed([10]), Listed([20, 21])]
    robin = RoundRobin(loaders)
    assert list(robin.epoch()) == [1, 10, 20, 2, 21, 3]
    robin.close()
    assert all(loader.closed for loader in loaders)
