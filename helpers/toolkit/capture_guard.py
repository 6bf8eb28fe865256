"""A guard for capture loops: no operator may run eagerly without saying so.

Capture mode records an operator call only when it can prove every argument constant (a literal,
a tuple of literals, ``ndd.capture.invariant(...)``) or the output of another captured call; any
other call runs eagerly on every step, and DALI 2.4 says nothing about it. ``CaptureGuard`` wraps
the batches of one ``next_epoch(..., capture=True)`` loop and, at the end of the first two steps of
every epoch, raises ``EagerOperatorError`` naming each operator that ran eagerly, the argument
that stopped it and what to do::

    guard = CaptureGuard("train_images")
    for jpegs, labels in guard(reader.next_epoch(batch_size=256, capture=True)):
        ...
    print(guard)  # what it captured

It reads DALI's private capture context (``nvidia.dali.experimental.dynamic._capture``), as no
public call tells what was captured. Where that is missing (another DALI version) the guard says
once that it cannot check, lets the loop run, and ``guard.checked`` stays ``False``.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from collections.abc import Iterator
from dataclasses import dataclass
from types import FrameType
from typing import Any
from typing import TypeVar

T = TypeVar("T")

WATCHED_STEPS = 2  # steps checked at the start of every epoch: the traced one and a captured one
WHAT_TO_DO = (
    "What to do: give each argument a value capture mode can prove constant: a literal, a list "
    "or tuple of constants written in the call, a DALI constant, or a name assigned once inside "
    "the function to a tuple (bind a tuple: `size = (64, 64)`, not `size = [64, 64]`); wrap in "
    "ndd.capture.invariant(...) what capture mode cannot prove: a global, an attribute, a "
    "function's result. In DALI 2.4.0 some fail wrapped too: `squeeze`'s `axes`, and `normalize`'s "
    "`mean` and `stddev` as scalars (arrays with the input's dimensions work, both of one shape); "
    "write those as literals, or names bound once in the function to a literal (a tuple, not a list). "
    "An operator whose input is the output of an eager one is eager too: fix the first one. "
    "Notebook 02, 'The capture rules, seen in action', shows a global in `range=` running its "
    "operator eagerly and ndd.capture.invariant(...) fixing it, and globals in `device=` and "
    "`batch_size=` that stop nothing."
)


class EagerOperatorError(RuntimeError):
    """A capture loop ran operators eagerly. The loop stops where the guard found them; a reader
    whose capture loop was left early cannot run another capture-mode epoch: make a new one."""


@dataclass(frozen=True)
class EagerCall:
    """One operator call that capture mode ran eagerly, and why, as far as the guard can tell."""

    operator: str
    site: str  # the function and line of the call (never a file's path)
    reasons: tuple[str, ...]

    def __str__(self) -> str:
        why = "; ".join(self.reasons) or (
            "no call of the traced step (step 0) matches it: a call "
            "step 0 did not make, or arguments that changed"
        )
        return f"{self.operator} ({self.site}): {why}"


def _capture_module() -> Any | None:
    try:
        from nvidia.dali.experimental.dynamic import _capture
        from nvidia.dali.experimental.dynamic import _source_analysis

        _capture.CaptureContext.current  # noqa: B018  (the private API this guard reads)
        _capture.CaptureContext.record  # noqa: B018
        _capture.CaptureContext._find_captured_node  # noqa: B018
        _source_analysis._Classifier  # noqa: B018
    except (ImportError, AttributeError):
        return None
    return _capture


def available() -> bool:
    """True when this DALI offers the private capture context the guard reads."""
    return _install()


def _source_text(node: Any) -> str | None:
    try:  # the source of an argument, with the parser DALI's capture analysis uses
        from nvidia.dali.experimental.dynamic._source_analysis import cst

        return cst.Module([]).code_for_node(node)
    except Exception:  # noqa: BLE001  (a name for the message, never a reason to fail)
        return None


def _reasons(frame: FrameType, inputs: tuple, kwargs: dict) -> tuple[str, ...]:
    """The arguments of a call that capture mode could not prove constant or captured."""
    try:
        from nvidia.dali.experimental.dynamic import _source_analysis as analysis
        from nvidia.dali.experimental.dynamic._batch import Batch
        from nvidia.dali.experimental.dynamic._capture import CapturedBatch

        classifier = analysis._Classifier(analysis._get_module_info(frame.f_code), frame)
        info = analysis.site_info(frame)
        split = analysis._split_call_args(info.node) if info is not None else None
        positional, named = split or ((), {})
    except Exception:  # noqa: BLE001  (DALI's internals changed: name the operator only)
        return ()
    arguments = [
        (f"input {i}", positional[i] if i < len(positional) else None, value)
        for i, value in enumerate(inputs)
    ]
    arguments += [(name, named.get(name), value) for name, value in kwargs.items()]
    reasons = []
    for label, node, value in arguments:
        if value is None:
            continue
        try:
            classifier._capture_arg(node, value)
            continue
        except analysis._Unresolved:
            pass
        except Exception:  # noqa: BLE001
            continue
        text = _source_text(node) if node is not None else None
        shown = f"`{label}={text}`" if text and not label.startswith("input") else f"{label} ({text})"
        if isinstance(value, Batch) and not isinstance(value, CapturedBatch):
            reasons.append(
                f"{shown} is a batch that capture mode did not produce (the output of "
                "an eager operator, a slice, or arithmetic on batches)"
            )
        else:
            reasons.append(f"{shown} is a value capture mode cannot prove constant")
    return tuple(reasons)


def _note(context: Any, frame: FrameType, op_class: type, inputs: tuple, kwargs: dict) -> None:
    log = getattr(context, "_guard_log", None)
    if log is None:  # no guard watches this loop's step
        return
    site = f"{frame.f_code.co_name}, line {frame.f_lineno}" if frame is not None else "unknown"
    log.append(EagerCall(op_class.__name__, site, _reasons(frame, inputs, kwargs) if frame else ()))


_installed: bool | None = None


def _install() -> bool:
    """Wrap the two calls through which every traced or captured operator call passes: the
    traced step's ``record`` (None: not captured) and a captured step's lookup (None: eager)."""
    global _installed
    if _installed is not None:
        return _installed
    capture = _capture_module()
    if capture is None:
        _installed = False
        return False
    context_class = capture.CaptureContext
    record, find = context_class.record, context_class._find_captured_node

    def guarded_record(self, frame, op_class, inputs, kwargs, *rest, **named):
        node = record(self, frame, op_class, inputs, kwargs, *rest, **named)
        if node is None:
            _note(self, frame, op_class, inputs, kwargs)
        return node

    def guarded_find(self, frame, op_class, inputs, kwargs, *rest, **named):
        node = find(self, frame, op_class, inputs, kwargs, *rest, **named)
        if node is None:
            _note(self, frame, op_class, inputs, kwargs)
        return node

    context_class.record = guarded_record
    context_class._find_captured_node = guarded_find
    _installed = True
    return True


class CaptureGuard:
    """Checks one capture loop (one reader's ``next_epoch(..., capture=True)``): wrap its
    batches with the guard, ``for batch in guard(reader.next_epoch(...)):``. ``captured`` names
    the operators it captured, in call order, once a step has run."""

    def __init__(self, name: str = "capture loop") -> None:
        self.name = name
        self.captured: list[str] | None = None
        self.checked = False  # True once a step was checked

    def __call__(self, batches: Iterable[T]) -> Iterator[T]:
        if not _install():
            warnings.warn(
                f"CaptureGuard({self.name!r}): this DALI version lacks the private "
                "capture context the guard reads; the loop runs unchecked.",
                stacklevel=2,
            )
            yield from batches
            return
        from nvidia.dali.experimental.dynamic._capture import CaptureContext
        from nvidia.dali.experimental.dynamic._capture import State

        iterator = iter(batches)
        step, context = 0, None
        try:
            while True:
                try:
                    batch = next(iterator)
                except StopIteration:
                    return
                if step < WATCHED_STEPS:
                    context = CaptureContext.current()
                    if context is None or context.state is State.DISABLED:
                        raise EagerOperatorError(
                            f"{self.name}: no capture-mode loop is running (is capture=True "
                            "passed to next_epoch?), or DALI fell back to eager mode because "
                            f"it captured no operator. {WHAT_TO_DO}"
                        )
                    context._guard_log = []
                yield batch
                if step < WATCHED_STEPS:
                    log, context._guard_log = context._guard_log, None
                    self.captured = [node.op_class.__name__ for node in context.nodes]
                    self.checked = True
                    if log:
                        calls = list(dict.fromkeys(str(call) for call in log))
                        raise EagerOperatorError(
                            f"{self.name}: {len(calls)} operator call(s) "
                            + (
                                "were not captured at the traced step (step 0)"
                                if step == 0
                                else f"matched no captured call at step {step} and ran eagerly"
                            )
                            + "; they run eagerly on every step, silently:\n"
                            + "\n".join(f"  - {call}" for call in calls)
                            + f"\nCaptured: {', '.join(self.captured) or 'nothing'}.\n{WHAT_TO_DO}"
                            + " The loop stopped here: make its reader again before the next "
                            "capture-mode epoch."
                        )
                step += 1
        finally:
            if context is not None and step < WATCHED_STEPS:
                context._guard_log = None
            close = getattr(iterator, "close", None)
            if close is not None:
                close()

    def __str__(self) -> str:
        if not self.checked:
            return f"{self.name}: not checked"
        return (
            f"{self.name}: captured {', '.join(self.captured or []) or 'nothing'}; nothing eager "
            f"in the steps checked (the first {WATCHED_STEPS} of each epoch)"
        )
