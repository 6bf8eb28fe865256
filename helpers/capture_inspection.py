"""Which operators capture mode captured: evidence for the capture rules.

DALI 2.4.0 has no public call for this; it reads the private ``CaptureContext`` of the loop
that is running, and returns ``None`` where that is not available (another DALI version)."""

from __future__ import annotations


def captured_operators() -> list[str] | None:
    """Names of the operators captured by the capture loop running now, in call order; ``[]``
    outside a capture loop or before its pipeline is built (after its first step)."""
    try:
        from nvidia.dali.experimental.dynamic import _capture

        context = _capture.CaptureContext.current()
    except (ImportError, AttributeError):
        return None
    if context is None:
        return []
    return [node.op_class.__name__ for node in getattr(context, "nodes", [])]
