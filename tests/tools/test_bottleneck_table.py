"""docs/pages/bottleneck.md's table (tools.bottleneck_table): every figure of its last column comes
from one run, the newest record of a machine with a GPU that holds notebook 07, as that record
keeps it; a figure the record lacks is said to be missing, never taken from another run."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from helpers.data.paths import REPO_ROOT
from helpers.toolkit.benchmarking import Ratio
from tools import bottleneck_table
from tools import records
from tools.readme_blocks import replace_block

RESULTS = REPO_ROOT / "results"
NOTEBOOK = bottleneck_table.NOTEBOOK


def _block(text: str) -> str:
    start, end = (f"<!-- {bottleneck_table.BLOCK}:{side} -->" for side in ("start", "end"))
    return text.split(start, 1)[1].split(end, 1)[0]


def _value(entry: dict[str, Any], keys: tuple[str, ...]) -> Any:
    """The value at ``keys`` in a record's notebook entry, read from the JSON (a table's row is the
    one whose first cell is the way)."""
    value: Any = entry
    for key in keys:
        if isinstance(value, list):
            value = next(row for row in value if next(iter(row.values())) == key)
        else:
            value = value[key]
    return value


def _matches(shown: str, value: Any) -> bool:
    if isinstance(value, dict):  # a goal
        return shown == str(Ratio(value["ratio"], *value["ci95"], 0, paired=True))
    if isinstance(value, str):
        return shown == value
    number = re.match(r"[\d,.]+", shown)
    return number is not None and abs(float(number.group(0).replace(",", "")) - float(value)) <= (
        0.5 if "." not in number.group(0) else 0.05
    )


def problems(block: str, results_dir: Path) -> list[str]:
    """What in ``block`` is not the newest GPU record of notebook 07: a figure shown otherwise than
    the record keeps it, or a number of the last column that no figure of the record accounts for."""
    record, figures = bottleneck_table.figures(results_dir)
    found = []
    if record is not None:
        entry = json.loads(Path(record.path).read_text())["notebooks"][NOTEBOOK]
        if f"`results/{record.path.name}`" not in block:
            found.append(f"the block does not name {record.path.name}")
        for figure in figures:
            try:
                value = _value(entry, figure.keys)
            except (KeyError, StopIteration):
                found.append(f"{figure.shown}: no {figure.keys} in {record.path.name}")
                continue
            if not _matches(figure.shown, value):
                found.append(f"{figure.shown} is not {value!r} ({figure.keys})")
    shown = sorted({f.shown for f in figures}, key=len, reverse=True)
    for line in block.splitlines():
        if not line.startswith("| ") or line.startswith("| What the sampler") or line.startswith("| ---"):
            continue
        cell = line.rstrip(" |").rsplit(" | ", 1)[1]
        for figure in shown:
            if figure not in cell:
                continue
            cell = cell.replace(figure, "")
        rest = re.sub(r"`[^`]*`|sections? \d+( and \d+)?|notebook 07", "", cell)
        if re.search(r"\d", rest):
            found.append(f"a number that no figure of the record accounts for: {rest.strip()!r}")
    return found


def test_the_committed_block_is_the_newest_gpu_record_of_07() -> None:
    page = bottleneck_table.PAGE.read_text()
    assert replace_block(page, bottleneck_table.BLOCK, bottleneck_table.render_bottleneck_table()) == page, (
        "run `python -m tools.results_table`"
    )
    record = bottleneck_table.video_record()
    newest = [r for r in records.records() if r.has_gpu and NOTEBOOK in r.notebooks][-1]
    assert record is not None and record.path == newest.path
    assert not problems(_block(page), RESULTS)


def test_no_figure_of_another_record_is_quoted() -> None:
    block = _block(bottleneck_table.PAGE.read_text())
    record, figures = bottleneck_table.figures()
    assert record is not None and figures
    others = [r.path.name for r in records.records() if r.path != record.path]
    assert not [name for name in others if name in block]


def test_a_figure_typed_into_the_block_is_caught() -> None:
    block = _block(bottleneck_table.PAGE.read_text())
    _, figures = bottleneck_table.figures()
    ratio = next(f for f in figures if "x [" in f.shown)
    assert problems(block.replace(ratio.shown, "0.99x [0.90-1.08]"), RESULTS)
    rate = next(f for f in figures if f.shown.endswith("clips/s"))
    assert problems(block.replace(rate.shown, "351.3 clips/s"), RESULTS)
    assert problems(block.replace("(section 4) |", "(section 4), 351.3 clips/s in another run |"), RESULTS)


def _copy_07(tmp_path: Path, edit: Any) -> Path:
    """The committed newest GPU record of 07 alone, edited by ``edit(entry)``."""
    record = bottleneck_table.video_record()
    assert record is not None
    results = tmp_path / "results"
    results.mkdir()
    data = json.loads(record.path.read_text())
    edit(data["notebooks"][NOTEBOOK])
    (results / "gpu-07.json").write_text(json.dumps(data))
    return results


def test_a_figure_the_record_lacks_is_said_to_be_missing(tmp_path: Path) -> None:
    def older(entry: dict[str, Any]) -> None:  # a helper that kept no fed table and no probe
        del entry["results"]["tables"]["fed"]
        entry["results"]["goals"].pop(bottleneck_table.FED_GOAL)
        entry["headline"].pop("nvdec_limit_fps", None)

    results = _copy_07(tmp_path, older)
    block = bottleneck_table.render_bottleneck_table(results)
    assert "`results/gpu-07.json`" in block
    assert block.count(bottleneck_table.MISSING) >= 5  # waiting x3, GPU x2, the ratio, the probe
    assert not problems(block, results)


def test_the_probe_and_its_share_are_shown_when_the_record_holds_them(tmp_path: Path) -> None:
    def probed(entry: dict[str, Any]) -> None:
        entry["headline"]["nvdec_limit_fps"] = 11234.5
        entry["results"]["goals"][bottleneck_table.LIMIT_GOAL] = {
            "ratio": 0.93,
            "ci95": [0.9, 0.96],
            "goal": 0.9,
            "verdict": "met",
            "trials": 4,
        }

    results = _copy_07(tmp_path, probed)
    block = bottleneck_table.render_bottleneck_table(results)
    assert "11,234 frames/s" in block and "0.93x [0.90-0.96] of it" in block
    assert not problems(block, results)


def test_without_a_gpu_record_of_07_every_figure_is_missing(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    for record in records.records():
        if not record.has_gpu:
            shutil.copy(record.path, results / record.path.name)
    block = bottleneck_table.render_bottleneck_table(results)
    assert "No record of a machine with a GPU holds notebook 07" in block
    assert not problems(block, results)
