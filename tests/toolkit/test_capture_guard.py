"""helpers.toolkit.capture_guard on small CPU loops over the embedded MNIST test LMDB (1,000 digits)."""

from __future__ import annotations

import nvidia.dali.experimental.dynamic as ndd
import nvidia.dali.types as types
import pytest

from helpers.data.data_sources import locate_data
from helpers.toolkit import capture_guard
from helpers.toolkit.capture_guard import CaptureGuard
from helpers.toolkit.capture_guard import EagerOperatorError

SIZE = 20  # module-level names: capture mode cannot prove them constant
MEAN = [10.0]
BATCH = 100


@pytest.fixture(scope="module")
def lmdb_path() -> str:
    return str(locate_data(verbose=False).mnist_testing)


def with_globals(jpegs, step):
    images = ndd.decoders.image(jpegs, device="cpu", output_type=types.GRAY)
    images = ndd.resize(images, resize_x=SIZE, resize_y=SIZE)
    return ndd.crop_mirror_normalize(images, mean=MEAN, std=[2.0])


def with_invariants(jpegs, step):
    images = ndd.decoders.image(jpegs, device="cpu", output_type=types.GRAY)
    size = ndd.capture.invariant(SIZE)
    images = ndd.resize(images, resize_x=size, resize_y=size)
    return ndd.crop_mirror_normalize(images, mean=ndd.capture.invariant(tuple(MEAN)), std=(2.0,))


def with_a_late_call(jpegs, step):  # a call that the traced step (step 0) never made
    images = ndd.decoders.image(jpegs, device="cpu", output_type=types.GRAY)
    if step > 0:
        images = ndd.flip(images, horizontal=1)
    return images


def run(path, body, *, epochs=1, capture=True, guard=None):
    reader = ndd.readers.Caffe2(path=path)
    guard = guard or CaptureGuard(body.__name__)
    steps = []
    with ndd.EvalContext(num_threads=2):
        for _ in range(epochs):
            count = 0
            for step, (jpegs, _) in enumerate(guard(reader.next_epoch(batch_size=BATCH, capture=capture))):
                body(jpegs, step).evaluate()
                count += 1
            steps.append(count)
    return guard, steps


def test_a_global_argument_fails_naming_the_operator_and_the_argument(lmdb_path):
    with pytest.raises(EagerOperatorError) as caught:
        run(lmdb_path, with_globals)
    message = str(caught.value)
    assert "Resize (with_globals, line" in message
    assert "`resize_x=SIZE`" in message
    assert "CropMirrorNormalize" in message and "`mean=MEAN`" in message
    assert "ndd.capture.invariant" in message  # says what to do
    assert "/" not in message.split("What to do")[0].replace("a slice", "")  # no file paths


def test_the_fixed_loop_passes_every_epoch_and_names_what_it_captured(lmdb_path):
    guard, steps = run(lmdb_path, with_invariants, epochs=2)
    assert steps == [1000 // BATCH] * 2
    assert guard.checked
    assert guard.captured == ["Image", "Resize", "CropMirrorNormalize"]
    assert str(guard) == (
        "with_invariants: captured Image, Resize, CropMirrorNormalize; nothing eager "
        "in the steps checked (the first 2 of each epoch)"
    )


def test_a_call_the_traced_step_did_not_make_is_caught_at_the_first_captured_step(lmdb_path):
    with pytest.raises(
        EagerOperatorError, match=r"matched no captured call at step 1 and ran eagerly"
    ) as caught:
        run(lmdb_path, with_a_late_call)
    assert "Flip (with_a_late_call, line" in str(caught.value)
    assert "Captured: Image." in str(caught.value)


def test_an_eager_loop_is_refused(lmdb_path):
    with pytest.raises(EagerOperatorError, match="no capture-mode loop is running"):
        run(lmdb_path, with_invariants, capture=False)


def test_this_dali_offers_what_the_guard_reads():
    """Fails when DALI's private capture context changes: the guard then checks nothing (the
    weekly newest-DALI run shows it), and capture_guard must follow the new internals."""
    assert capture_guard.available()


def test_without_the_private_api_the_loop_runs_with_a_warning(lmdb_path, monkeypatch):
    monkeypatch.setattr(capture_guard, "_installed", False)
    with pytest.warns(UserWarning, match="runs unchecked"):
        guard, steps = run(lmdb_path, with_globals)
    assert steps == [1000 // BATCH] and not guard.checked
    assert str(guard) == "with_globals: not checked"


def test_the_advice_says_what_notebook_02_shows_and_which_arguments_fail_wrapped():
    """The advice points to notebook 02's section for what it shows (a global stopping a capture,
    ndd.capture.invariant fixing it, globals that stop nothing), not for "each rule"; and it says
    where ndd.capture.invariant is no way out in DALI 2.4.0 (DALI 2.4 behaviour 14: ``squeeze``'s
    ``axes``; ``normalize``'s ``mean`` and ``stddev`` as scalars, not as arrays of the input's
    dimensions, tests/test_dali_behaviour.py)."""
    advice = capture_guard.WHAT_TO_DO
    assert "shows each rule" not in advice
    assert "In DALI 2.4.0 some fail wrapped too: `squeeze`'s `axes`, and `normalize`'s" in advice
    assert "`mean` and `stddev` as scalars (arrays with the input's dimensions work, both of one" in advice
    assert "both of one shape); write those as literals" in advice
    assert "literals, or names bound once in the function to a literal (a tuple, not a list)" in advice
    assert "shows a global in `range=` running its operator eagerly and ndd.capture.invariant(...)" in advice
    assert "globals in `device=` and `batch_size=` that stop nothing" in advice
