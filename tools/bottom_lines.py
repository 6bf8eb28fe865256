"""Each notebook's bottom line: a Markdown cell right under its title, generated from its newest
record, never typed.

    python -m tools.results_table          # writes them, with the README's findings
    python -m tools.results_table --check  # exit 1 if a notebook's bottom line is out of date

The cell says on which machine and in which record (a link) the notebook's figures were measured,
then what the notebook found (:func:`tools.findings.writers`: the README's sentence for that
notebook, each ratio with its 95% interval and worded by it) and its goals' verdicts as the
record states them (each checked against its interval, :meth:`tools.findings.Lookup.goals`).
The record is the one the README's findings read: the newest of a machine with a GPU that holds
the notebook, else the newest without (:func:`tools.records.newest_gpu_first`).

The cell is found by its tag (:data:`TAG`) and is the only cell this module writes: where a
notebook has none, it is inserted after the title cell (the first Markdown cell that starts with
``# ``); every other cell, output, execution count and the metadata stay as they are. A notebook
is written in nbformat's own layout (``json.dumps(indent=1, sort_keys=True, ensure_ascii=False)``,
as papermill and JupyterLab save it), and one that is not in that layout is refused, so that the
only lines that change are the cell's.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from helpers.data.paths import REPO_ROOT
from helpers.data.registry import GOALS_GPU
from helpers.data.registry import judges_goals
from tools.findings import ADVICE
from tools.findings import Finding
from tools.findings import Lookup
from tools.findings import find
from tools.findings import writers
from tools.recipes import recipe
from tools.record_format import Record
from tools.records import RESULTS
from tools.records import newest_gpu_first

TAG = "bottom-line"
CELL_ID = "bottom-line"
NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
# from a notebook (notebooks/) to the records and to the results page's goals
RECORDS_LINK = "../results/"
GOALS_LINK = "../docs/pages/results.md#the-suites-goals"
# the recipe's heading is "## Recipe": the docs site (MkDocs' toc) and GitHub give it this id
RECIPE_LINK = "#recipe"
VERDICTS = ("met", "not met", "inconclusive")
# after the advice, the finding's first sentence, and its second while the cell stays within
# SHOWN_CHARS as a reader sees it (links as their text): five lines at 1280 px; the README's
# bullet holds every sentence
FINDING_SENTENCES = 2
SHOWN_CHARS = 500


def shown_length(markdown: str) -> int:
    """The characters a reader sees of ``markdown``: links as their text, no ``**`` or backticks."""
    return len(re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", markdown).replace("**", "").replace("`", ""))


def machine(record: Record) -> str:
    """``On one NVIDIA H200``, ``On 2 NVIDIA H200 GPUs``, or ``Without a GPU`` (the finding says
    on how many cores where that matters: notebook 04's)."""
    gpus = record.machine.get("gpu_count") or 1
    if not record.has_gpu:
        return "Without a GPU"
    return f"On one {record.machine['gpu']}" if gpus == 1 else f"On {gpus} {record.machine['gpu']} GPUs"


def goals_sentence(get: Lookup, notebook: str) -> str | None:
    """The notebook's goals as its record states them (None: it sets none). One goal is named,
    with its ratio where the finding does not show it already; several are counted by verdict,
    with a link to the results page, which lists them."""
    goals = get.goals(notebook)
    if not goals:
        return None
    record = get.record(notebook)
    # goals are stated for a GPU: a CPU run, or one that recorded no verdict, says nothing about them
    if not record.has_gpu or any(g["verdict"] is None for g in goals.values()):
        names = ", ".join(goals)
        return (
            f"Its goal{'s' * (len(goals) > 1)} ({names}) {'are' if len(goals) > 1 else 'is'} stated "
            "for GPUs and not judged on this run."
        )
    gpu = record.machine.get("gpu")
    if not judges_goals(gpu):  # measured on another GPU: its verdicts say how that GPU compares
        several = len(goals) > 1
        return (
            f"Its goal{'s' * several} {'are' if several else 'is'} stated for an {GOALS_GPU}, not "
            f"judged on this {gpu} ([{f'all {len(goals)}' if several else 'listed'}]({GOALS_LINK}))."
        )
    where = ""
    if len(goals) == 1:
        ((name, goal),) = goals.items()
        shown = {f.shown for f in get.figures}
        ratio = get.ratio(notebook, "goals", name).shown_against(goal["goal"])  # its bounds beside the goal's
        figure = "" if ratio in shown else f" ({ratio})"
        return f"Its goal, {name} of {goal['goal']:g}x or more, is {goal['verdict']}{figure}{where}."
    counts = [
        (count, verdict)
        for verdict in VERDICTS
        if (count := sum(g["verdict"] == verdict for g in goals.values()))
    ]
    listed = ", ".join(f"{count} {verdict}" for count, verdict in counts)
    return f"Its goals: {listed} ([all {len(goals)}]({GOALS_LINK})){where}."


def bottom_line(notebook: str, results_dir: Path = RESULTS) -> str:
    """The cell's Markdown: the machine and the record, the notebook's finding, its goals."""
    chosen = newest_gpu_first(results_dir)
    if notebook not in chosen:
        return (
            f"**Bottom line.** No record in `results/` holds {notebook} yet: its bottom line "
            "comes with its first run."
        )
    known = writers(results_dir)
    if notebook not in known:
        raise ValueError(
            f"{notebook} has a record but is not a notebook of the registry beside "
            f"{results_dir}: name it notebooks/NN-slug.ipynb with its metadata entry"
        )
    topic, write = known[notebook]

    record = chosen[notebook]
    link = f"[record]({RECORDS_LINK}{record.name})"
    opening = f"**Bottom line.** {advice(notebook, chosen, results_dir)}{machine(record)} ({link}): "

    def with_goals(get: Lookup) -> list[str]:
        found = write(get)
        goals = [said] if (said := goals_sentence(get, notebook)) else []
        kept = found[:1]
        for sentence in found[1:FINDING_SENTENCES]:
            if shown_length(opening + " ".join([*kept, sentence, *goals])) > SHOWN_CHARS:
                break
            kept.append(sentence)
        return [*kept, *goals]

    finding: Finding = find(topic, with_goals, chosen)
    return opening + finding.text


def advice(notebook: str, chosen: dict[str, Record], results_dir: Path = RESULTS) -> str:
    """What to do, by the record's verdicts (:data:`tools.findings.ADVICE`), with a link to the
    notebook's recipe where it has one; empty for a notebook without advice."""
    if notebook not in ADVICE:
        return ""
    said = find("", lambda get: [ADVICE[notebook](get)], chosen).text
    path = results_dir.parent / "notebooks" / f"{notebook}.ipynb"
    link = f" ([the recipe]({RECIPE_LINK}))" if path.exists() and recipe(path) else ""
    return f"{said.removesuffix('.')}{link}. "


def _layout(notebook: dict[str, Any]) -> str:
    """A notebook's text as nbformat (and so papermill and JupyterLab) writes it."""
    return json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def _title_index(cells: list[dict[str, Any]], where: str) -> int:
    for index, cell in enumerate(cells):
        if cell.get("cell_type") == "markdown" and "".join(cell.get("source", "")).startswith("# "):
            return index
    raise ValueError(
        f"{where} has no title cell (a Markdown cell that starts with '# '): nowhere to put its bottom line"
    )


def tagged_cells(notebook: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in notebook.get("cells", []) if TAG in c.get("metadata", {}).get("tags", [])]


def with_bottom_line(text: str, source: str, where: str = "the notebook") -> str:
    """The notebook's text (JSON) with its bottom-line cell holding ``source``: the tagged cell's
    source replaced, or a new cell after the title cell. Nothing else changes."""
    notebook = json.loads(text)
    if _layout(notebook) != text:
        raise ValueError(
            f"{where} is not in nbformat's layout (indent 1, sorted keys): writing its "
            "bottom line would rewrite other lines; save it with nbformat first"
        )
    cells = notebook["cells"]
    tagged = tagged_cells(notebook)
    if len(tagged) > 1:
        raise ValueError(f"{where} has {len(tagged)} cells tagged {TAG}: keep one")
    lines = source.splitlines(keepends=True)
    if tagged:
        if tagged[0].get("cell_type") != "markdown":
            raise ValueError(f"{where}: the cell tagged {TAG} is not a Markdown cell")
        tagged[0]["source"] = lines
        tagged[0]["metadata"] = {"tags": [TAG]}  # a generated cell: no run's metadata (papermill's)
    else:
        if any(c.get("id") == CELL_ID for c in cells):
            raise ValueError(f"{where}: another cell has the id {CELL_ID!r}")
        cells.insert(
            _title_index(cells, where) + 1,
            {"cell_type": "markdown", "id": CELL_ID, "metadata": {"tags": [TAG]}, "source": lines},
        )
    return _layout(notebook)


def update(notebooks_dir: Path = NOTEBOOKS_DIR, *, check: bool, results_dir: Path = RESULTS) -> int:
    """Write the bottom line of every notebook of ``notebooks_dir`` (exit status 0), or with
    ``check`` only report those out of date (1) without writing. Every cell is generated before
    any notebook is written: an error leaves them all as they were."""
    updated = {}
    for path in sorted(notebooks_dir.glob("[0-9][0-9]-*.ipynb")):
        text = path.read_text(encoding="utf-8")
        updated[path] = (text, with_bottom_line(text, bottom_line(path.stem, results_dir), path.name))
    stale = [path for path, (old, new) in updated.items() if old != new]
    if check:
        if stale:
            print(
                f"{', '.join(p.name for p in stale)}: the bottom-line cell is out of date: run "
                "`python -m tools.results_table`"
            )
        return 1 if stale else 0
    for path in stale:
        path.write_text(updated[path][1], encoding="utf-8")
    return 0
