"""The README's notebook table, generated from the notebooks' own metadata (never typed).

    python -m tools.inventory          # rewrite the inventory block of README.md
    python -m tools.inventory --check  # exit 1 if README.md's table is out of date

Each notebook carries ``metadata["dali_tutorials"] = {"title", "learn", "needs_gpu", "scales"}``
(``scales``: the runner's per-scale parameters). Runtimes are measured, never typed: the H200
column is papermill's ``duration`` of the committed, executed notebook; the 2-CPU-core column is
``notebooks.<notebook>.seconds`` of the newest ``results/cpu-*.json`` record. The docs hook
(docs/hooks.py) shows the same table on the site's landing page.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helpers.paths import REPO_ROOT
from tools.readme_blocks import update
from tools.results_table import records

BLOCK = "inventory"
KEY = "dali_tutorials"
REQUIRED = ("title", "learn", "needs_gpu")
CPU_RECORDS = "cpu-*.json"


@dataclass(frozen=True)
class Entry:
    path: Path
    title: str
    learn: str
    needs_gpu: str
    h200_seconds: float | None  # papermill's duration of the committed run, if executed

    @property
    def number(self) -> str:
        return self.path.name[:2]


def notebook_paths(root: Path = REPO_ROOT) -> list[Path]:
    return sorted((root / "notebooks").glob("[0-9][0-9]-*.ipynb"))


def read_metadata(path: Path) -> dict[str, Any]:
    """A notebook's ``metadata["dali_tutorials"]``; an error that says what to add if absent."""
    try:
        notebook = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ValueError(f"{path.name}: cannot read the notebook ({err})") from err
    meta = notebook.get("metadata", {}).get(KEY)
    missing = [k for k in REQUIRED if not (isinstance(meta, dict) and str(meta.get(k, "")).strip())]
    if missing:
        raise ValueError(f"{path.name}: metadata[{KEY!r}] lacks {', '.join(missing)}; the notebook "
                         f"inventory is read from there (keys: {', '.join(REQUIRED)}, scales)")
    return dict(meta, papermill=notebook["metadata"].get("papermill") or {})


def read_entry(path: Path) -> Entry:
    meta = read_metadata(path)
    return Entry(path=path, title=meta["title"], learn=meta["learn"], needs_gpu=meta["needs_gpu"],
                 h200_seconds=meta["papermill"].get("duration"))


def cpu_runtimes(root: Path = REPO_ROOT) -> tuple[Path | None, dict[str, float]]:
    """The newest 2-CPU-core record and each notebook's ``seconds`` in it."""
    found = [(p, r) for p, r in records(root / "results") if p.match(CPU_RECORDS)]
    if not found:
        return None, {}
    path, record = found[-1]
    return path, {name: nb["seconds"] for name, nb in record["notebooks"].items() if "seconds" in nb}


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


def render_inventory(root: Path = REPO_ROOT) -> str:
    """The table (Markdown) with one row per notebook, and where its runtimes come from."""
    record, cpu = cpu_runtimes(root)
    lines = ["| # | Notebook | What you learn | Needs a GPU? | Runtime: 2 CPU cores / H200 |",
             "|---|---|---|---|---|"]
    for entry in map(read_entry, notebook_paths(root)):
        runtime = f"{duration(cpu.get(entry.path.stem))} / {duration(entry.h200_seconds)}"
        lines.append(f"| {entry.number} | [{_cell(entry.title)}](notebooks/{entry.path.name}) | "
                     f"{_cell(entry.learn)} | {_cell(entry.needs_gpu)} | {runtime} |")
    cpu_source = (f"`notebooks.<notebook>.seconds` of [{record.name}](results/{record.name})"
                  if record else f"— until a `results/{CPU_RECORDS}` record is committed")
    lines += ["", f"Runtimes, measured with each notebook's default parameters. 2 CPU cores: "
              f"{cpu_source}. H200: papermill's `duration` in the committed notebook. Generated "
              f"by `python -m tools.inventory` from each notebook's `metadata.{KEY}`; a test "
              "keeps it in step."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="only say whether the table is stale")
    parser.add_argument("--readme", type=Path, default=REPO_ROOT / "README.md")
    args = parser.parse_args(argv)
    try:
        table = render_inventory()
    except ValueError as err:
        print(f"tools.inventory: {err}", file=sys.stderr)
        return 1
    return update(args.readme, BLOCK, table, check=args.check, command="python -m tools.inventory")


if __name__ == "__main__":
    sys.exit(main())
