"""What DALI 2.4 does that its documentation does not say (or says otherwise), one small test per
finding of docs/pages/dali-behaviour.md, on the CPU and the embedded data (under ~30 s in all).

Each test fails when DALI's behaviour changes, so that the weekly newest-DALI run
(.github/workflows/weekly.yml, whose job summary lists the tests that changed) says when a
workaround of the suite can go or must change:

- a bug expected to be fixed is ``xfail(strict=True)``: the test asserts what the documentation
  promises, and an XPASS fails the run;
- any other finding asserts today's behaviour, with a message that names the page and the
  workaround to update.

A GPU-only finding is skipped without a GPU (``helpers.toolkit.devices.gpu_count()``).
"""

from __future__ import annotations

import cProfile
import os
import pstats
import shutil
import subprocess
import sys
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import nvidia.dali.experimental.dynamic as ndd
import nvidia.dali.types as types
import pytest

from helpers.data.data_sources import locate_data
from helpers.toolkit.capture_guard import CaptureGuard
from helpers.toolkit.capture_guard import EagerOperatorError
from helpers.toolkit.devices import gpu_count

PAGE = "docs/pages/dali-behaviour.md"
BATCH = 100  # the MNIST test LMDB holds 1,000 records: 10 batches an epoch
RECORDS = 1000
SIZE = [20, 20]  # a module-level name bound to a list: capture mode cannot prove it constant


def changed(workaround: str) -> str:
    """The message of an assertion of today's behaviour."""
    return f"DALI changed: update {PAGE} and the workaround in {workaround}"


@pytest.fixture(scope="module")
def lmdb() -> str:
    """The embedded 1,000-record LMDB, also where DALI_EXTRA_PATH names DALI_extra (the GPU
    tier's), whose testing set is larger: the tests count its records and keys."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("DALI_EXTRA_PATH", raising=False)
        path = locate_data(verbose=False).mnist_testing
    assert ndd.readers.Caffe2(path=str(path)).get_metadata()["epoch_size"] == RECORDS
    return str(path)


def keys(jpegs: ndd.Batch) -> list[int]:
    """The LMDB keys of a batch's records (source_info: "<path> at key 00000042")."""
    info = ndd.get_property(jpegs, key="source_info")
    return [int(bytes(np.asarray(sample)).decode().rsplit(" ", 1)[-1]) for sample in info]


def in_a_thread(action: Callable[[], object]) -> object:
    """Run ``action`` on a thread of its own: its own default RNG (DALI's is per thread) and its
    own capture-mode loop, so that nothing it does reaches the other tests."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(action).result()


def numbers(batch) -> list[list[int]]:
    return [np.asarray(sample).tolist() for sample in batch]


# --- 1. Batch.select with a range -------------------------------------------------------------


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="DALI 2.4: Batch.select(slice or list) returns the whole batch "
    "(_batch.py: Batch(self.tensors[r])); helpers.toolkit.batches takes samples one by "
    "one",
)
def test_batch_select_with_a_range_returns_the_samples_asked_for() -> None:
    batch = ndd.batch([[0], [1], [2], [3]])
    assert numbers(batch.select(slice(1, 3))) == [[1], [2]]
    assert numbers(batch.select([0, 2])) == [[0], [2]]


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="DALI 2.4: batch.tensors[1:3] has len 2, but [0] is sample 0 and iterating "
    "it yields every sample of the batch; only .tolist() is right",
)
def test_batch_tensors_slice_indexes_and_iterates_its_own_samples() -> None:
    part = ndd.batch([[0], [1], [2], [3]]).tensors[1:3]
    assert numbers(part.tolist()) == [[1], [2]]  # right in 2.4
    assert np.asarray(part[0]).tolist() == [1]
    assert numbers(part) == [[1], [2]]


def test_an_operator_on_a_selected_batch_runs_eagerly_in_a_capture_loop(lmdb) -> None:
    guard = CaptureGuard("select")
    with pytest.raises(EagerOperatorError) as caught, ndd.EvalContext(num_threads=2):
        for jpegs, _ in guard(ndd.readers.Caffe2(path=lmdb).next_epoch(batch_size=BATCH, capture=True)):
            first = jpegs.select(slice(0, BATCH // 2))
            ndd.decoders.image(first, device="cpu", output_type=types.GRAY).evaluate()
    message = str(caught.value)
    assert "Image (" in message and "a batch that capture mode did not produce" in message, changed(
        "helpers.toolkit.batches (samples taken one at a time, outside capture loops)"
    )


# --- 2. Arguments capture mode cannot prove constant ------------------------------------------


def global_and_local_list(jpegs):
    images = ndd.decoders.image(jpegs, device="cpu", output_type=types.GRAY)
    images = ndd.resize(images, size=SIZE)  # a global
    mean = [0.0]  # a local name bound to a list
    return ndd.crop_mirror_normalize(images, mean=mean, std=(255.0,))


def test_an_argument_capture_cannot_prove_constant_runs_its_operator_eagerly_without_a_warning(lmdb) -> None:
    guard = CaptureGuard("global_and_local_list")
    with (
        warnings.catch_warnings(record=True) as seen,
        pytest.raises(EagerOperatorError) as caught,
        ndd.EvalContext(num_threads=2),
    ):
        warnings.simplefilter("always")
        for jpegs, _ in guard(ndd.readers.Caffe2(path=lmdb).next_epoch(batch_size=BATCH, capture=True)):
            global_and_local_list(jpegs).evaluate()
    message = str(caught.value)
    assert "`size=SIZE`" in message and "`mean=mean`" in message, changed(
        "helpers.toolkit.capture_guard (CaptureGuard around every capture loop)"
    )
    assert guard.captured == ["Image"], changed("helpers.toolkit.capture_guard")
    warned = [
        f"{w.category.__name__}: {w.message}"
        for w in seen
        if not issubclass(w.category, DeprecationWarning | PendingDeprecationWarning)
    ]
    assert not warned, changed("helpers.toolkit.capture_guard (DALI now warns: say so)") + f": {warned}"


def test_capture_mode_has_no_public_way_to_say_what_it_captured() -> None:
    """What a loop captured is only in the private ``_capture.CaptureContext`` (CaptureGuard reads
    it; tests/toolkit/test_capture_guard.py checks that it is there)."""
    public = {name for name in dir(ndd.capture) if not name.startswith("_")}
    assert public == {"invariant"}, changed(
        "helpers.toolkit.capture_guard (a public API may replace "
        f"the private one it reads): ndd.capture has {sorted(public)}"
    )


# --- 3. Checkpoint.save ------------------------------------------------------------------------


def collected_checkpoint() -> ndd.checkpoint.Checkpoint:
    checkpoint = ndd.checkpoint.Checkpoint()
    checkpoint.register(ndd.random.RNG(seed=1), "rng")
    checkpoint.collect()
    return checkpoint


def test_checkpoint_save_needs_seq_although_its_docstring_calls_it_optional(tmp_path: Path) -> None:
    assert "optionally containing ``{seq}``" in ndd.checkpoint.Checkpoint.save.__doc__, changed(
        "helpers.toolkit.checkpointing and notebook 06 (Checkpoint.save's docstring)"
    )
    with pytest.raises(ValueError, match="must include `{seq}`"):
        collected_checkpoint().save(str(tmp_path / "dali.json"))


def test_checkpoint_save_writes_without_fsync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced = []
    for name in ("fsync", "fdatasync"):
        if hasattr(os, name):
            monkeypatch.setattr(os, name, lambda fd, name=name: synced.append(name))
    written = collected_checkpoint().save(str(tmp_path / "ckpt_{seq:04d}.json"))
    assert Path(written).name == "ckpt_0000.json"
    assert synced == [], changed("helpers.toolkit.checkpointing (its own fsync-ed commit protocol)")


# --- 4. Checkpointing and capture mode ---------------------------------------------------------


def test_a_checkpointing_reader_refuses_capture_mode(lmdb) -> None:
    reader = ndd.readers.Caffe2(path=lmdb, enable_checkpointing=True)
    with pytest.raises(NotImplementedError, match="not supported in capture mode"):
        next(iter(reader.next_epoch(batch_size=BATCH, capture=True)))


# --- 5. set_state from a mid-epoch checkpoint --------------------------------------------------


def test_after_set_state_next_epoch_runs_a_whole_epoch_from_the_checkpoint(lmdb) -> None:
    reader = ndd.readers.Caffe2(path=lmdb, enable_checkpointing=True)
    batches = reader.next_epoch(batch_size=BATCH)
    for _ in range(3):
        next(batches)
    state = str(reader.get_state())
    for _ in batches:  # finish the epoch
        pass
    resumed = ndd.readers.Caffe2(path=lmdb, enable_checkpointing=True)
    resumed.set_state(state)
    epochs = [[keys(jpegs)[0] for jpegs, _ in resumed.next_epoch(batch_size=BATCH)] for _ in range(2)]
    # 10 batches from record 300 on: across the epoch boundary, into the next epoch's 0..299;
    # the next next_epoch() starts at 300 again (the boundary moved for good)
    shifted = [*range(300, RECORDS, BATCH), *range(0, 300, BATCH)]
    assert epochs == [shifted, shifted], changed(
        "notebooks/scripts/train_resumable.py (eager_batches: one stream, its own step count)"
    )


# --- 6. The default RNG, and leaving a capture loop early -------------------------------------


def rotate_digits(jpegs, rng=None):
    images = ndd.decoders.image(jpegs, device="cpu", output_type=types.GRAY)
    angles = ndd.random.uniform(batch_size=BATCH, range=(-10.0, 10.0), rng=rng)
    return ndd.rotate(images, angle=angles, fill_value=0, size=(28, 28))


def two_epochs_with_a_random_draw_between(reader, rng: ndd.random.RNG | None) -> list[int]:
    """Two capture-mode epochs of ``reader``; between them, a random operator on the default RNG
    (another loader's, or an eager augmentation's). The steps of each epoch."""
    steps = []
    for epoch in range(2):
        if epoch:
            ndd.random.uniform(batch_size=4, range=(0.0, 1.0)).evaluate()
        steps.append(0)
        for jpegs, _ in reader.next_epoch(batch_size=BATCH, capture=True):
            rotate_digits(jpegs, rng).evaluate()
            steps[-1] += 1
    return steps


def next_epoch_error(reader) -> str:
    try:
        for _ in reader.next_epoch(batch_size=BATCH, capture=True):
            pass
    except RuntimeError as error:
        return str(error)
    return "no error"


def default_rng_loop(lmdb: str, rng: ndd.random.RNG | None) -> list[int]:
    with ndd.EvalContext(num_threads=2):
        return two_epochs_with_a_random_draw_between(ndd.readers.Caffe2(path=lmdb), rng)


@pytest.mark.xfail(
    strict=True,
    raises=RuntimeError,
    reason="DALI 2.4: 'The RNG of a captured operator was used unexpectedly' once another "
    "random operator draws from the default RNG between a reader loop's epochs",
)
def test_a_capture_loop_on_the_default_rng_survives_a_random_draw_between_epochs(lmdb) -> None:
    assert in_a_thread(lambda: default_rng_loop(lmdb, None)) == [10, 10]


def test_the_workaround_an_rng_of_its_own_survives_a_random_draw_between_epochs(lmdb) -> None:
    steps = in_a_thread(lambda: default_rng_loop(lmdb, ndd.random.RNG(seed=1)))
    assert steps == [10, 10], f"an RNG of its own no longer protects a capture loop: see {PAGE}"


def test_a_failed_or_abandoned_capture_loop_leaves_its_reader_unusable(lmdb) -> None:
    def attempt() -> dict[str, str]:
        said = {}
        with ndd.EvalContext(num_threads=2):
            failed = ndd.readers.Caffe2(path=lmdb)
            try:
                two_epochs_with_a_random_draw_between(failed, None)
                said["failed"] = "no error"
            except RuntimeError as error:
                said["failed"] = str(error)
            said["after the failure"] = next_epoch_error(failed)
            abandoned, rng = ndd.readers.Caffe2(path=lmdb), ndd.random.RNG(seed=1)
            batches = abandoned.next_epoch(batch_size=BATCH, capture=True)
            for step, (jpegs, _) in enumerate(batches):
                rotate_digits(jpegs, rng).evaluate()
                if step == 2:  # a captured step: leave the epoch early
                    break
            batches.close()
            said["after leaving early"] = next_epoch_error(abandoned)
        return said

    said = in_a_thread(attempt)
    unusable = "invalid state due to a previous error and cannot be used"
    assert "RNG of a captured operator was used unexpectedly" in said["failed"], said
    assert unusable in said["after the failure"] and unusable in said["after leaving early"], (
        changed(
            "helpers.toolkit.loaders (a capture loop always runs its epochs to the end, InBackground too)"
        )
        + f": {said}"
    )


# --- 7. Shards move every epoch ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("stick_to_shard", "expected"),
    [(False, [(0, 499), (500, 999), (0, 499)]), (True, [(0, 499), (0, 499), (0, 499)])],
)
def test_a_sharded_reader_moves_to_the_next_shard_every_epoch_unless_stuck(
    lmdb, stick_to_shard, expected
) -> None:
    reader = ndd.readers.Caffe2(path=lmdb, shard_id=0, num_shards=2, stick_to_shard=stick_to_shard)
    epochs = []
    for _ in range(3):
        read = [k for jpegs, _ in reader.next_epoch(batch_size=BATCH) for k in keys(jpegs)]
        epochs.append((min(read), max(read)))
    assert epochs == expected, changed(
        "notebooks/scripts/train_resumable.py (epoch_reader: "
        "shard_id=(rank + epoch) % world with stick_to_shard=True)"
    )


# --- 8. A corrupt JPEG ------------------------------------------------------------------------


@pytest.fixture
def photos_with_a_truncated_jpeg(tmp_path: Path) -> tuple[Path, list[Path], Path]:
    """Two photos of each class of the embedded folder, the second one cut in half (as notebook
    05 cuts one); the files in readers.File's order, and the truncated one."""
    source = locate_data(verbose=False).images
    for folder in sorted(p for p in source.iterdir() if p.is_dir()):
        (tmp_path / folder.name).mkdir()
        for photo in sorted(folder.glob("*.jpg"))[:2]:
            shutil.copy(photo, tmp_path / folder.name / photo.name)
    files = sorted(tmp_path.rglob("*.jpg"))
    victim = files[1]
    victim.write_bytes(victim.read_bytes()[: victim.stat().st_size // 2])
    return tmp_path, files, victim


def innermost(error: BaseException) -> BaseException:
    while error.__cause__ or error.__context__:
        error = error.__cause__ or error.__context__
    return error


def test_one_corrupt_jpeg_fails_its_whole_batch_on_the_cpu(photos_with_a_truncated_jpeg) -> None:
    root, files, victim = photos_with_a_truncated_jpeg
    reader = ndd.readers.File(file_root=str(root))
    with pytest.raises(RuntimeError) as caught, ndd.EvalContext(num_threads=2):
        for jpegs, _ in reader.next_epoch(batch_size=len(files)):
            ndd.decoders.image(jpegs, device="cpu").evaluate()
    relative = victim.relative_to(root).as_posix()
    assert str(innermost(caught.value)) == f"Failed to decode sample #{files.index(victim)} : {relative}", (
        changed("helpers.data.data_sources (check_image_folder, batch_files and check_decodable)")
    )


@pytest.mark.skipif(gpu_count() == 0, reason="GPU-only finding: DALI finds no GPU on this machine")
def test_gpu_only_a_truncated_jpeg_decodes_on_the_gpu_without_an_error(photos_with_a_truncated_jpeg) -> None:
    """GPU-only: on an H200 (notebook 05's run) the GPU decoder returned an image for a JPEG cut
    in half, without an error, so such a file trains silently."""
    root, files, _ = photos_with_a_truncated_jpeg
    reader, rng = ndd.readers.File(file_root=str(root)), ndd.random.RNG(seed=1)
    with ndd.EvalContext(num_threads=2, device_id=0):  # notebook 05's GPU decoding, as it ran
        sizes = [
            ndd.decoders.image_random_crop(
                jpegs,
                device="gpu",
                output_type=types.RGB,
                random_area=(0.08, 1.0),
                random_aspect_ratio=(0.75, 4 / 3),
                num_attempts=100,
                rng=rng,
                hw_decoder_load=0.65,
            )
            .evaluate()
            .batch_size
            for jpegs, _ in reader.next_epoch(batch_size=len(files))
        ]
    assert sizes == [len(files)], changed(
        "helpers.data.data_sources (check_image_folder before a GPU run) and notebook 05, section 8"
    )


# --- 9. torchdata checkpointing ----------------------------------------------------------------


@pytest.mark.xfail(
    strict=True,
    raises=NotImplementedError,
    reason="DALI 2.4: ndd.pytorch.nodes.Reader.reset(initial_state) raises "
    '"DALI Dynamic readers don\'t support checkpointing yet"',
)
def test_torchdata_loader_resumes_a_dali_reader_node_from_its_state_dict(lmdb) -> None:
    import torchdata.nodes as tn
    from nvidia.dali.experimental.dynamic.pytorch import nodes

    def loader() -> tn.Loader:
        return tn.Loader(nodes.Reader(ndd.readers.Caffe2, batch_size=BATCH, path=lmdb))

    first = loader()
    batches = iter(first)
    try:
        next(batches), next(batches)
        state = first.state_dict()
        third = keys(next(batches)["data"])
        resumed = loader()
        resumed.load_state_dict(state)
        assert keys(next(iter(resumed))["data"]) == third
    finally:  # the first epoch to its end, in this thread: else the garbage collector closes DALI's
        for _ in batches:  # suspended epoch later, in whatever thread, out of its EvalContext's turn
            pass


# --- 10. Performance: DALI's Python side of a captured step -----------------------------------

CALLS_PER_STEP = 511  # DALI 2.4.0 on CPython 3.11: Python calls into DALI's code per captured step


def rotate_and_normalize(jpegs, rng):
    images = rotate_digits(jpegs, rng)
    return ndd.crop_mirror_normalize(images, mean=(0.0,), std=(255.0,), dtype=ndd.float32)


def test_a_captured_step_makes_hundreds_of_python_calls_into_dali(lmdb) -> None:
    """Four operator calls a step (decode, uniform, rotate, normalize), captured: each still
    passes through DALI's Python side (the call-site lookup, the result's Batch), which
    notebook 03's profile measured at about half of a captured MNIST step's Python time. The
    count is deterministic; a change beyond 2x either way means DALI changed that side."""

    def profiled_epoch() -> float:
        reader, rng = ndd.readers.Caffe2(path=lmdb), ndd.random.RNG(seed=1)
        with ndd.EvalContext(num_threads=2):
            for jpegs, _ in reader.next_epoch(batch_size=BATCH, capture=True):  # traces, builds
                rotate_and_normalize(jpegs, rng).evaluate()
            profile = cProfile.Profile()
            profile.enable()
            for jpegs, _ in reader.next_epoch(batch_size=BATCH, capture=True):
                rotate_and_normalize(jpegs, rng).evaluate()
            profile.disable()
        stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
        calls = sum(
            count for (file, _, _), (_, count, _, _, _) in stats.items() if f"nvidia{os.sep}dali" in file
        )
        return calls / (RECORDS // BATCH)

    per_step = in_a_thread(profiled_epoch)
    assert CALLS_PER_STEP / 2 <= per_step <= CALLS_PER_STEP * 2, (
        changed("the performance notes (notebook 03's profile, the background-thread knob)")
        + f": {per_step:.0f} Python calls into DALI per captured step, {CALLS_PER_STEP} in DALI 2.4.0"
    )


def test_get_metadata_before_the_first_epoch_fixes_the_batch_size_at_one(lmdb) -> None:
    """docs/pages/dali-behaviour.md, section 12: helpers.toolkit.sharded reads a reader's metadata only
    after its first batch."""
    reader = ndd.readers.Caffe2(path=lmdb, num_shards=2, shard_id=1)
    assert reader.get_metadata()["epoch_size"] == 1000
    with pytest.raises(ValueError, match="max_batch_size` 1"):
        next(iter(reader.next_epoch(batch_size=100)))
    fresh = ndd.readers.Caffe2(path=lmdb, num_shards=2, shard_id=1)  # metadata after a batch: no harm
    batches = fresh.next_epoch(batch_size=100)
    next(iter(batches))
    assert fresh.get_metadata()["epoch_size"] == 1000, (
        "DALI changed: update docs/pages/dali-behaviour.md (section 12) and helpers.toolkit.sharded._shard_of"
    )
    batches.close()


def test_two_eager_loops_of_different_contexts_cannot_take_turns(lmdb) -> None:
    """docs/pages/dali-behaviour.md, section 13: an eager ``next_epoch()`` keeps its EvalContext
    entered between batches, so two loops of different contexts that take turns (interleaved
    benchmark trials) break DALI's stack of contexts at the first one's end; notebook 06's
    benchmark gives its trainers one context (``train_resumable.Trainer(ctx=...)``)."""

    def turns(ctx_a: ndd.EvalContext, ctx_b: ndd.EvalContext) -> None:
        a = ndd.readers.Caffe2(path=lmdb).next_epoch(batch_size=RECORDS // 2, ctx=ctx_a)
        b = ndd.readers.Caffe2(path=lmdb).next_epoch(batch_size=RECORDS // 2, ctx=ctx_b)
        try:
            next(a), next(b), next(a)
            assert ndd.EvalContext.current() is ctx_b
            next(a, None)  # a's epoch ends: its `with ctx_a` exits
            for _ in b:
                pass
        finally:
            b.close()  # b's context, on top, leaves cleanly

    def different() -> object:
        try:
            turns(ndd.EvalContext(num_threads=1), ndd.EvalContext(num_threads=1))
        except AssertionError as error:
            return error
        return None

    assert isinstance(in_a_thread(different), AssertionError), changed(
        "notebooks/scripts/train_resumable.py (Trainer's ctx, notebook 06's benchmark)"
    )
    shared = ndd.EvalContext(num_threads=1)
    in_a_thread(lambda: turns(shared, shared))  # the workaround: one context for both loops


# --- 14. an argument DALI cannot prove constant goes with each call: squeeze cannot take it ------

SQUEEZE = """
import nvidia.dali.experimental.dynamic as ndd
AXES = 0
reader = ndd.readers.Caffe2(path={path!r})
_, labels = next(iter(reader.next_epoch(batch_size=4)))  # labels of shape (1,)
print(tuple(ndd.squeeze(labels, axes={axes}).torch().shape))
"""
MISSING_AXES = "has_axes + has_axis_names == 1"  # DALI 2.4.0's assertion when squeeze is built


def _squeezed(lmdb: str, tmp_path: Path, axes: str, *, from_a_file: bool) -> str:
    """What the snippet printed: the shape, or (on DALI 2.4.0's failure) the assertion's message."""
    code = SQUEEZE.format(path=lmdb, axes=axes)
    (tmp_path / "squeeze.py").write_text(code)
    command = ["squeeze.py"] if from_a_file else ["-c", code]
    done = subprocess.run(
        [sys.executable, *command], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    if done.stdout.strip() != "(4,)" and MISSING_AXES not in done.stderr:
        pytest.fail(f"the snippet failed otherwise: {done.stderr[-2000:]}")
    return done.stdout.strip() or MISSING_AXES


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="DALI 2.4.0: an axes that the source analysis does not prove constant (a module-level name; "
    "any argument where the code has no source) goes per call, and squeeze fails to build "
    "(docs/pages/dali-behaviour.md, section 14)",
)
@pytest.mark.parametrize(
    "axes,from_a_file", [("AXES", True), ("0", False)], ids=["module-level name", "no source"]
)
def test_squeeze_takes_an_axes_it_cannot_prove_constant(
    lmdb, tmp_path: Path, axes: str, from_a_file: bool
) -> None:
    assert _squeezed(lmdb, tmp_path, axes, from_a_file=from_a_file) == "(4,)"


def test_squeeze_takes_a_literal_axes_from_a_file(lmdb, tmp_path: Path) -> None:
    """Section 14's workaround: axes a literal, the code in a file (the suite's squeeze calls;
    tools.recipes.run; test_nb06's loop cell)."""
    assert _squeezed(lmdb, tmp_path, "0", from_a_file=True) == "(4,)", changed(
        "helpers.toolkit.distributed.preprocess, tools.recipes.run and tests/notebooks/test_nb06.py"
    )


NORMALIZE_SHAPE = "param_shape[i] == 1 || param_shape[i] == in_shape[i]"  # DALI 2.4.0's assertion
SCALAR_MEAN = 1.0  # module-level names: the source analysis does not prove them constant
ROWS_MEAN = np.ones((1, 1), dtype=np.float32)  # an extent per dimension of the 2-D samples below
ROWS = [np.arange(6, dtype=np.float32).reshape(2, 3)] * 2

# each call written where it runs: the source analysis reads the call's own line
NORMALIZE_CALLS: dict[str, Callable[[object], object]] = {
    "scalar literal": lambda rows: ndd.normalize(rows, mean=1.0, stddev=2.0),
    "scalar, module-level name": lambda rows: ndd.normalize(rows, mean=SCALAR_MEAN, stddev=2.0),
    "scalar, ndd.capture.invariant": lambda rows: ndd.normalize(
        rows, mean=ndd.capture.invariant(1.0), stddev=2.0
    ),
    "extent per dimension, module-level name": lambda rows: ndd.normalize(rows, mean=ROWS_MEAN, stddev=2.0),
    "extent per dimension, ndd.capture.invariant": lambda rows: ndd.normalize(
        rows, mean=ndd.capture.invariant(ROWS_MEAN), stddev=2.0
    ),
    "extent per dimension, a scalar stddev by name": lambda rows: ndd.normalize(
        rows, mean=ROWS_MEAN, stddev=SCALAR_MEAN
    ),
}


def _normalized(how: str) -> np.ndarray:
    return np.asarray(NORMALIZE_CALLS[how](ndd.batch(ROWS)).torch())  # type: ignore[attr-defined]


@pytest.mark.xfail(
    strict=True,
    raises=RuntimeError,
    reason="DALI 2.4.0: a scalar mean that the source analysis does not prove constant goes per call, "
    "where normalize needs an extent per input dimension (docs/pages/dali-behaviour.md, section 14)",
)
@pytest.mark.parametrize("how", ["scalar, module-level name", "scalar, ndd.capture.invariant"])
def test_normalize_takes_a_scalar_mean_it_cannot_prove_constant(how: str) -> None:
    try:
        _normalized(how)
    except RuntimeError as error:
        cause: BaseException = error
        while cause.__cause__ is not None:  # DALI's own message is the first cause
            cause = cause.__cause__
        if NORMALIZE_SHAPE not in str(cause):
            pytest.fail(f"normalize failed otherwise: {cause}")
        raise


@pytest.mark.parametrize(
    "how", ["extent per dimension, module-level name", "extent per dimension, ndd.capture.invariant"]
)
def test_normalize_takes_a_mean_with_an_extent_per_input_dimension(how: str) -> None:
    """Section 14: a mean that goes per call works when it has the input's dimensions (extent 1 or
    the input's), as a global or wrapped in ndd.capture.invariant, equal to the scalar literal."""
    assert np.array_equal(_normalized(how), _normalized("scalar literal")), changed(
        "docs/pages/dali-behaviour.md, section 14"
    )


def test_normalize_takes_a_per_call_mean_and_stddev_of_one_shape_only() -> None:
    """Section 14: given both per call, mean and stddev must have one shape; an array mean beside a
    scalar stddev by name fails, beside a literal one it works (the test above)."""
    with pytest.raises(RuntimeError) as raised:
        _normalized("extent per dimension, a scalar stddev by name")
    cause: BaseException = raised.value
    while cause.__cause__ is not None:  # DALI's own message is the first cause
        cause = cause.__cause__
    assert "their shapes must match" in str(cause), changed("docs/pages/dali-behaviour.md, section 14")
