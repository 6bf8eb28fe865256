"""Fake runs of the harness for the tests: one builder in place of one per test file.

A fake run is what ``helpers.toolkit.harness.Harness.run`` returns (``Results``), with the rates
a test chooses: ``fake_results({"a": [100, 110], "b": [50, 55]})`` is two ways of two rounds,
each trial ``samples`` samples in ``samples / rate`` seconds. Everything else a trial records
(the share spent waiting, CPU time, the hardware's readings, the batches handed over untimed)
is given where a test needs it, per way or for all. A run saved in a record comes back with
``Results.from_record``, the harness's own inverse of ``Results.as_record``.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from helpers.toolkit.harness import Results
from helpers.toolkit.harness import Trial
from helpers.toolkit.harness import Way


def _never() -> Any:
    raise RuntimeError("a fake way has no loader to make")


def fake_way(name: str, kind: str = "fake", knob: str = "") -> Way:
    """A way that tables and compares, and cannot be run."""
    return Way(name, _never, kind=kind, knob=knob)


def fake_results(
    rates: Mapping[str, Sequence[float]],
    *,
    ways: Sequence[Way] | None = None,
    kinds: Mapping[str, str] | str = "fake",
    knobs: Mapping[str, str] | None = None,
    label: str = "fake",
    unit: str = "samples",
    fed: bool = True,
    samples: int = 100,
    waiting: float = 0.0,
    cpu_s: float | Callable[[str, int], float] = 0.5,
    busy: Mapping[str, Mapping[str, Any]] | Mapping[str, Any] | None = None,
    skipped: Mapping[str, int] | None = None,
) -> Results:
    """A run whose way ``name`` made ``rates[name][i]`` per second in round ``i``.

    ``ways``: the ways themselves (else one :func:`fake_way` per name, its kind from ``kinds``, a
    name's or one for all, and its knob from ``knobs``); ``waiting``: the share of each trial spent
    in the loader's ``next()``; ``cpu_s``: each trial's CPU time, or ``cpu_s(name, i)``;
    ``busy``: the hardware's readings, ``{name: readings}`` or one dict for every way;
    ``skipped``: the batches a way had ready before each timer."""
    knobs, skipped = knobs or {}, skipped or {}
    if ways is None:
        ways = [fake_way(n, kinds if isinstance(kinds, str) else kinds[n], knobs.get(n, "")) for n in rates]
    per_way = (
        busy is not None and set(busy) <= set(rates) and all(isinstance(v, Mapping) for v in busy.values())
    )

    def readings(name: str) -> dict[str, Any]:
        if busy is None:
            return {}
        return dict(busy.get(name, {})) if per_way else dict(busy)

    def trial(name: str, i: int, rate: float) -> Trial:
        seconds = samples / rate
        cpu = cpu_s(name, i) if callable(cpu_s) else cpu_s
        return Trial(samples, seconds, waiting * seconds, cpu, readings(name), skipped=skipped.get(name, 0))

    trials = {name: [trial(name, i, r) for i, r in enumerate(values)] for name, values in rates.items()}
    return Results(label, unit, list(ways), trials, fed=fed)
