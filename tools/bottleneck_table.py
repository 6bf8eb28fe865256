"""The table of docs/pages/bottleneck.md (block ``bottleneck-video``), generated from one run:
every figure in its last column comes from the newest record of a machine with a GPU that holds
notebook 07 (``tools.records.newest_gpu_first``), never from another run, never typed.

The figures are those notebook 07 printed, as its record keeps them: the rows of its tables
(``results.tables``: ``alone``, ``fed``, ``variants``), its goals (``results.goals``: the share of
training alone, the share of NVDEC's measured limit) and its headline (``nvdec_limit_fps``). A
figure the record lacks (an older helper kept no probe of NVDEC's limit, or named a column
otherwise) is said to be missing in its row, not taken from another record. Each figure is a
:class:`Figure` that names where in the record it comes from, which the tests check.

``python -m tools.results_table`` writes the block into the committed page (``--check``: whether
it is stale); the docs hook (docs/hooks.py) fills it again when it builds the site.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from typing import NamedTuple

from helpers.data.paths import REPO_ROOT
from helpers.toolkit.benchmarking import Ratio
from tools.record_format import NotebookEntry
from tools.record_format import Record
from tools.records import RESULTS
from tools.records import column_heading
from tools.records import newest_gpu_first

BLOCK = "bottleneck-video"
PAGE = REPO_ROOT / "docs" / "pages" / "bottleneck.md"
NOTEBOOK = "07-video-clips"
FED_GOAL = "fed: best DALI / training alone"
LIMIT_GOAL = "alone: best DALI's decoded frames/s / NVDEC's measured limit"
MISSING = "not in this record"
# a column of the notebook's tables under each name a version of its helper gave it
COLUMNS = {"waiting %": ("waiting %", "loop waiting %")}
HEADER = (
    "| What the sampler shows | What limits the loop | The knob to turn | Measured in this suite |\n"
    "| --- | --- | --- | --- |"
)


class Figure(NamedTuple):
    """A figure as the page shows it, and where the record of ``NOTEBOOK`` keeps it: ``keys`` from
    the notebook's entry (``("results", "tables", table, way, column)``: the row of ``table`` whose
    first cell is ``way``; ``("results", "goals", goal)``; ``("headline", key)``)."""

    shown: str
    keys: tuple[str, ...]


def video_record(results_dir: Path = RESULTS) -> Record | None:
    """The newest record of a machine with a GPU that holds notebook 07, or None."""
    record = newest_gpu_first(results_dir).get(NOTEBOOK)
    return record if record is not None and record.has_gpu else None


def _number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"{value:,}" if isinstance(value, int) else str(value)


def _ratio(goal: dict[str, Any]) -> str:
    return str(Ratio(goal["ratio"], *goal["ci95"], goal.get("trials", 0), paired=True))


class Reader:
    """The figures of one record's notebook 07 entry, each kept as the :class:`Figure` it is shown as."""

    def __init__(self, entry: NotebookEntry | None) -> None:
        self.entry = entry
        self.figures: list[Figure] = []

    def _row(self, table: str, way: str | None) -> dict[str, Any] | None:
        rows = (self.entry.results.get("tables") or {}).get(table) or [] if self.entry else []
        return next((row for row in rows if row and next(iter(row.values())) == way), None)

    def cell(self, table: str, way: str | None, column: str, suffix: str = "") -> str | None:
        """The cell as shown (``suffix`` after it, such as ``%``), or None where the record lacks it."""
        row = self._row(table, way)
        for name in COLUMNS.get(column, (column,)):
            if row is not None and row.get(name) not in (None, ""):
                shown = f"{_number(row[name])}{suffix}"
                self.figures.append(Figure(shown, ("results", "tables", table, str(way), name)))
                return shown
        return None

    def goal(self, name: str) -> tuple[str, dict[str, Any]] | None:
        found = (self.entry.results.get("goals") or {}).get(name) if self.entry else None
        if not found or found.get("ci95") is None:
            return None
        shown = _ratio(found)
        self.figures.append(Figure(shown, ("results", "goals", name)))
        return shown, found

    def headline(self, key: str, fmt: str) -> str | None:
        value = self.entry.headline.get(key) if self.entry else None
        if value is None:
            return None
        shown = fmt.format(value)
        self.figures.append(Figure(shown, ("headline", key)))
        return shown

    def ways(self, kind: str, knob: str | None = None, run: str = "alone") -> list[str]:
        ways = ((self.entry.results.get(run) or {}).get("ways") or {}) if self.entry else {}
        return [
            name
            for name, way in ways.items()
            if way.get("kind") == kind and (knob is None or str(way.get("knob")) == knob)
        ]

    def pick(self, role: str) -> str | None:
        return ((self.entry.results.get("picks") or {}).get(role)) if self.entry else None

    def variants(self) -> list[str]:
        rows = (self.entry.results.get("tables") or {}).get("variants") or [] if self.entry else []
        return [str(next(iter(row.values()))) for row in rows if row]


def _or_missing(shown: str | None, what: str) -> str:
    return shown if shown is not None else f"{what}: {MISSING}"


def _code(name: str | None) -> str:
    return f"`{name}`" if name else "(the record names no such way)"


def _versus(found: tuple[str, dict[str, Any]] | None, reference: str, what: str) -> str:
    """The ratio worded by its interval (``helpers.toolkit.benchmarking.versus``'s rule)."""
    if found is None:
        return f"{what}: {MISSING}"
    shown, goal = found
    low, high = goal["ci95"]
    words = "more than" if low > 1 else "less than" if high < 1 else "not distinguishable from"
    return f"{shown} the clips/s of {reference}, {words} it"


def _variant_parts(name: str) -> tuple[str, str]:
    codec, _, gop = name.partition(",")
    return codec.strip(), gop.strip()


def rows(reader: Reader) -> list[tuple[str, str, str, str]]:
    """The table's rows: (what the sampler shows, what limits the loop, the knob, the figures)."""
    r = reader
    one = next(iter(r.ways("dali", "1")), None)
    best, pyav = r.pick("best DALI"), r.pick("best DataLoader")
    full = next(iter(r.ways("decoders.video")), None)

    def rate(table: str, way: str | None) -> str:
        return _or_missing(r.cell(table, way, "clips/s", " clips/s"), "clips/s")

    def pct(table: str, way: str | None, column: str, label: str) -> str:
        shown = r.cell(table, way, column, "%")
        return f"{label} {shown}" if shown is not None else f"{label}: {MISSING}"

    readers = (
        f"{_code(one)} alone: {rate('alone', one)}, {pct('alone', one, 'NVDEC %', 'NVDEC')}; "
        f"feeding the model, {pct('fed', one, 'waiting %', 'the loop waited')} of the time; "
        f"{_code(best)} alone: {rate('alone', best)}, {pct('alone', best, 'NVDEC %', 'NVDEC')} "
        "(notebook 07, sections 3 and 4)"
    )

    names = r.variants()
    first = names[0] if names else None
    codec, gop = _variant_parts(first) if first else ("", "")
    longer = next((n for n in names[1:] if _variant_parts(n)[0] == codec), None)
    hevc = next((n for n in names[1:] if _variant_parts(n) == ("hevc", gop)), None)
    busy = [r.cell("variants", n, "NVDEC %", "%") for n in names]

    def against(name: str | None, what: str) -> str:
        shown = r.cell("variants", name, "against the first row")
        if shown is None:
            return f"{what}: {MISSING}"
        low, high = (float(x) for x in re.findall(r"\[([\d.]+)-([\d.]+)\]", shown)[0])
        words = "more than" if low > 1 else "less than" if high < 1 else "not distinguishable from"
        return f"{_code(name)} {shown} the clips/s of {_code(first)}, {words} it"

    def frames(name: str | None) -> str:
        return _or_missing(r.cell("variants", name, "frames / clip (rule)"), "frames a clip")

    shown_busy = [b for b in busy if b is not None]
    busy_words = (
        f"NVDEC {', '.join(shown_busy)} in turn"
        if shown_busy and len(shown_busy) == len(busy)
        else f"NVDEC %: {MISSING}"
    )
    limit = r.headline("nvdec_limit_fps", "{:,.0f}")
    share = r.goal(LIMIT_GOAL)
    probe = (
        f"NVDEC's limit as the probe measures it (section 3): {limit} frames/s, "
        f"{_code(best)} decoding {share[0]} of it"
        if limit is not None and share is not None
        else f"NVDEC's limit as the probe measures it (section 3): {MISSING}"
    )
    decoders = (
        f"{_code(best)} alone over each build of the videos, {busy_words}: "
        f"{against(longer, 'the longer GOP')} ({frames(longer)} frames a clip against "
        f"{frames(first)}); {against(hevc, 'HEVC')} (section 5); {probe}"
    )

    def per_clip(way: str | None) -> str:
        return _or_missing(r.cell("alone", way, "frames / clip (rule)"), "frames a clip")

    full_figures = (
        f"{_code(full)}: {pct('alone', full, 'NVDEC %', 'NVDEC')} busy for "
        f"{rate('alone', full)}, {per_clip(full)} frames a clip by that rule (modelled, "
        f"not counted) against the readers' {per_clip(one)} (section 3)"
    )

    cpu = (
        f"{_code(pyav)}: {pct('alone', pyav, 'CPU %', 'CPU')}, "
        f"{pct('alone', pyav, 'NVDEC %', 'NVDEC')}, {rate('alone', pyav)}; feeding the model, "
        f"{pct('fed', pyav, 'waiting %', 'the loop waited')} of the time (sections 3 and 4)"
    )

    ceiling = next(iter(r.ways("ceiling", run="fed")), None)
    model = (
        f"{_code(best)} feeding `r2plus1d_18`: {pct('fed', best, 'GPU %', 'GPU')}, "
        f"{pct('fed', best, 'waiting %', 'the loop waited')} of the time, "
        f"{_versus(r.goal(FED_GOAL), 'training alone', 'share of training alone')}; training alone: "
        f"{pct('fed', ceiling, 'GPU %', 'GPU')} (section 4)"
    )

    return [
        (
            "The loop waits; NVDEC busy at about one engine's share (100 / engines %)",
            "one video reader: one decoding session",
            "one reader per decoder, one shard each (`helpers.toolkit.sharded.ShardedFeed`)",
            readers,
        ),
        (
            "NVDEC near its limit (the probe's reading, notebook 07 section 3)",
            "the decoders themselves",
            "less decoding work a clip: a shorter GOP (keyframes closer, fewer frames decoded a clip), "
            "smaller videos; or frames NVDEC decodes faster: HEVC instead of H.264 keeps the same frames "
            "a clip, and whether NVDEC decodes them faster is measured beside",
            decoders,
        ),
        (
            "NVDEC busy, yet few clips/s for it",
            "decoding frames no clip uses",
            "a reader, not `decoders.video` over the file's bytes (in DALI 2.4.0 it decodes from the "
            "file's first frame: its `build_index`, documented to speed up seeking, is not passed on by "
            "`video_decoder_base.h`)",
            full_figures,
        ),
        (
            "CPU busy, NVDEC idle, the loop waits",
            "decoding on the CPU (PyAV, FFmpeg)",
            "decode on the GPU",
            cpu,
        ),
        (
            "GPU (kernels) busy, the loop hardly waits",
            "the model, and the loader's work beside it (its CPU threads, or its decoding and resizing "
            "kernels): the run does not say which",
            "little on the data side: less work in the loader's step, such as a smaller resize",
            model,
        ),
    ]


def render_bottleneck_table(results_dir: Path = RESULTS) -> str:
    """The block: where its figures come from, and the table."""
    record = video_record(results_dir)
    entry = record.notebooks[NOTEBOOK] if record else None
    if record is None or record.path is None:
        source = (
            "No record of a machine with a GPU holds notebook 07 yet: each figure of this "
            "table's last column is missing until its first GPU run is recorded."
        )
    else:
        source = (
            f"Every figure of this table's last column comes from one run: notebook 07 in "
            f"`results/{record.path.name}` ({column_heading(record)}), the newest record of a "
            "machine with a GPU that holds it. A figure that record lacks is said to be missing "
            '("' + MISSING + '"), not taken from another run.'
        )
    lines = [f"| {' | '.join(row)} |" for row in rows(Reader(entry))]
    return "\n".join([source, "", HEADER, *lines])


def figures(results_dir: Path = RESULTS) -> tuple[Record | None, list[Figure]]:
    """The record the block reads and every figure it shows from it."""
    record = video_record(results_dir)
    reader = Reader(record.notebooks[NOTEBOOK] if record else None)
    rows(reader)
    return record, reader.figures


__all__: Sequence[str] = ["BLOCK", "PAGE", "Figure", "figures", "render_bottleneck_table", "video_record"]
