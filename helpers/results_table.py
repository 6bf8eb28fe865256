"""The README's results table, generated from the committed results JSON (never typed).

    python -m helpers.results_table          # rewrite the table in README.md
    python -m helpers.results_table --check  # exit 1 if README.md's table is out of date
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from helpers.data_sources import REPO_ROOT

START, END = "<!-- results-table:start -->", "<!-- results-table:end -->"
RESULTS = REPO_ROOT / "results"

# (row label, notebook, headline key, format)
ROWS: list[tuple[str, str, str, str]] = [
    ("01 · CPU decode, 4 threads (img/s)", "01-getting-started", "cpu_decode_img_s_4_threads", "{:,.0f}"),
    ("01 · GPU decode, 4 threads (img/s)", "01-getting-started", "gpu_decode_img_s_4_threads", "{:,.0f}"),
    ("01 · GPU / CPU decode, 4 threads", "01-getting-started", "gpu_over_cpu_4_threads", "{:.2f}x"),
    ("02 · eager training (samples/s)", "02-capture-mode", "eager_samples_per_s", "{:,.0f}"),
    ("02 · capture training (samples/s)", "02-capture-mode", "capture_samples_per_s", "{:,.0f}"),
    ("02 · capture / eager", "02-capture-mode", "capture_over_eager", "{:.2f}x"),
    ("02 · final loss, eager", "02-capture-mode", "final_loss_eager", "{:.4f}"),
    ("02 · final loss, capture", "02-capture-mode", "final_loss_capture", "{:.4f}"),
]


def _columns() -> list[tuple[str, Path]]:
    """(heading, JSON file): the seed, then each recorded run, oldest first."""
    columns = [("Seed notebooks, as published", RESULTS / "seed.json")]
    for path in sorted(RESULTS.glob("*.json")):
        if path.name == "seed.json":
            continue
        record = json.loads(path.read_text())
        first = next(iter(record["notebooks"].values()))["parameters"]
        kind = "committed notebooks" if path.name.startswith("notebooks-") else "`make bench`"
        trials = first.get("trials")
        gpu = record["machine"].get("gpu") or "CPU only"
        columns.append((f"{gpu}, {kind} ({trials} trials, {record['date']})", path))
    return columns


def render_results_table() -> str:
    columns = _columns()
    documents = [json.loads(path.read_text())["notebooks"] for _, path in columns]
    lines = ["| Figure | " + " | ".join(h for h, _ in columns) + " |",
             "|---|" + "---:|" * len(columns)]
    for label, notebook, key, fmt in ROWS:
        cells = []
        for document in documents:
            value = document.get(notebook, {}).get("headline", {}).get(key)
            cells.append("—" if value is None else fmt.format(value))
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    sources = "; ".join(f"[{path.name}](results/{path.name})" for _, path in columns)
    lines.append("")
    lines.append(f"Each column is one JSON file ({sources}): every cell is its "
                 "`notebooks.<notebook>.headline.<key>` value; medians over the trials. Generated "
                 "by `python -m helpers.results_table`; a test keeps it in step with the JSON.")
    return "\n".join(lines)


def _replace(text: str, table: str) -> str:
    if START not in text or END not in text:
        raise SystemExit(f"README.md has no {START} ... {END} block")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{table}\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--readme", type=Path, default=REPO_ROOT / "README.md")
    args = parser.parse_args(argv)
    text = args.readme.read_text()
    updated = _replace(text, render_results_table())
    if args.check:
        if updated != text:
            print("README.md's results table is out of date: run python -m helpers.results_table")
            return 1
        return 0
    args.readme.write_text(updated)
    return 0


if __name__ == "__main__":
    sys.exit(main())
