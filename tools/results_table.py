"""The README's results table, generated from the committed results JSON (never typed).

    python -m tools.results_table          # rewrite the results block of README.md
    python -m tools.results_table --check  # exit 1 if README.md's table is out of date

The docs hook (docs/hooks.py) shows the same table on the site's landing page.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any, NamedTuple

from helpers.paths import REPO_ROOT
from tools import readme_blocks

BLOCK = "results-table"
RESULTS = REPO_ROOT / "results"
SEED = "seed.json"  # what DALI's own notebooks printed: always the first column


class Row(NamedTuple):
    label: str
    notebook: str  # the notebook's file stem: notebooks.<notebook> in the JSON
    key: str  # notebooks.<notebook>.headline.<key>
    format: str


# One row per headline figure. A new notebook's rows go here, in notebook order; a key that no
# record holds shows as "—", so rows can be added before the records that fill them.
ROWS: list[Row] = [
    Row("01 · CPU decode, 4 threads (img/s)", "01-getting-started", "cpu_decode_img_s_4_threads", "{:,.0f}"),
    Row("01 · GPU decode, default hw_decoder_load, 4 threads (img/s)", "01-getting-started",
        "gpu_decode_img_s_4_threads", "{:,.0f}"),
    Row("01 · GPU / CPU decode, default hw_decoder_load, 4 threads", "01-getting-started",
        "gpu_over_cpu_4_threads", "{:.2f}x"),
    Row("01 · GPU decode, best hw_decoder_load, 4 threads (img/s)", "01-getting-started",
        "best_gpu_decode_img_s_4_threads", "{:,.0f}"),
    Row("01 · best GPU / CPU decode, 4 threads", "01-getting-started", "best_gpu_over_cpu_4_threads",
        "{:.2f}x"),
    Row("01 · best hw_decoder_load", "01-getting-started", "best_hw_decoder_load", "{:g}"),
    Row("02 · eager training (samples/s)", "02-capture-mode", "eager_samples_per_s", "{:,.0f}"),
    Row("02 · capture training (samples/s)", "02-capture-mode", "capture_samples_per_s", "{:,.0f}"),
    Row("02 · capture / eager", "02-capture-mode", "capture_over_eager", "{:.2f}x"),
    Row("02 · final loss, eager (last batch)", "02-capture-mode", "final_loss_eager", "{:.4f}"),
    Row("02 · final loss, capture (last batch)", "02-capture-mode", "final_loss_capture", "{:.4f}"),
    Row("02 · last epoch's mean loss, eager", "02-capture-mode", "last_epoch_mean_loss_eager", "{:.4f}"),
    Row("02 · last epoch's mean loss, capture", "02-capture-mode", "last_epoch_mean_loss_capture", "{:.4f}"),
    Row("02 · held-out accuracy, eager", "02-capture-mode", "test_accuracy_eager", "{:.1%}"),
    Row("02 · held-out accuracy, capture", "02-capture-mode", "test_accuracy_capture", "{:.1%}"),
    Row("02 · capture, CPU decode (samples/s)", "02-capture-mode", "capture_cpu_decode_samples_per_s",
        "{:,.0f}"),
    Row("02 · capture, GPU decode (samples/s)", "02-capture-mode", "capture_gpu_decode_samples_per_s",
        "{:,.0f}"),
    Row("02 · capture, GPU decode / CPU decode", "02-capture-mode", "gpu_decode_over_cpu_decode",
        "{:.2f}x"),
    Row("03 · dynamic eager, batch 64 (samples/s)", "03-feeding-pytorch-fast", "eager_samples_per_s",
        "{:,.0f}"),
    Row("03 · dynamic capture, batch 64 (samples/s)", "03-feeding-pytorch-fast", "capture_samples_per_s",
        "{:,.0f}"),
    Row("03 · pipeline mode, default (samples/s)", "03-feeding-pytorch-fast",
        "pipeline_default_samples_per_s", "{:,.0f}"),
    Row("03 · torch DataLoader (samples/s)", "03-feeding-pytorch-fast", "dataloader_samples_per_s",
        "{:,.0f}"),
    Row("03 · training alone, the ceiling (samples/s)", "03-feeding-pytorch-fast", "ceiling_samples_per_s",
        "{:,.0f}"),
    Row("03 · best dynamic mode (samples/s)", "03-feeding-pytorch-fast", "best_dynamic_samples_per_s",
        "{:,.0f}"),
    Row("03 · best pipeline mode (samples/s)", "03-feeding-pytorch-fast", "best_pipeline_samples_per_s",
        "{:,.0f}"),
    Row("03 · best dynamic / pipeline default", "03-feeding-pytorch-fast", "best_over_pipeline", "{:.2f}x"),
    Row("03 · best dynamic / DataLoader", "03-feeding-pytorch-fast", "best_over_dataloader", "{:.2f}x"),
    Row("03 · best dynamic / best pipeline", "03-feeding-pytorch-fast", "best_over_best_pipeline",
        "{:.2f}x"),
    Row("03 · best dynamic / ceiling", "03-feeding-pytorch-fast", "best_over_ceiling", "{:.2f}x"),
    Row("04 · processes (GPUs) in the multi-process run", "04-scaling-out", "processes", "{:d}"),
    Row("04 · 1 process, batch 64 (samples/s)", "04-scaling-out", "samples_per_s_single", "{:,.0f}"),
    Row("04 · all processes, batch 64 each (samples/s)", "04-scaling-out", "samples_per_s_multi", "{:,.0f}"),
    Row("04 · weak scaling (multi / single)", "04-scaling-out", "speedup_weak", "{:.2f}x"),
    Row("04 · strong scaling (same global batch)", "04-scaling-out", "speedup_strong", "{:.2f}x"),
    Row("04 · held-out accuracy, 1 process, same global batch", "04-scaling-out", "accuracy_single",
        "{:.1%}"),
    Row("04 · held-out accuracy, all processes", "04-scaling-out", "accuracy_multi", "{:.1%}"),
]

# what produced a record, from its file name's prefix (anything else: `make bench`)
KINDS = {"notebooks-": "committed notebooks", "cpu-": "`make run`"}


def recorded_at(record: dict[str, Any], path: Path) -> dt.datetime:
    """When a record was made: the latest ``created`` of its notebooks, else its ``date`` or
    ``created``. A record that says nothing of when is an error, not a guess from its name."""
    stamps = [nb.get("created") for nb in record.get("notebooks", {}).values()]
    stamps = [s for s in stamps if s] or [s for s in (record.get("created"), record.get("date")) if s]
    if not stamps:
        raise ValueError(f"{path.name} records no date (`date`, or `created` per notebook): "
                         "write it with `python -m tools.suite record`")
    times = [dt.datetime.fromisoformat(str(s)) for s in stamps]
    return max(t if t.tzinfo else t.replace(tzinfo=dt.timezone.utc) for t in times)


def records(results_dir: Path = RESULTS) -> list[tuple[Path, dict[str, Any]]]:
    """The run records of ``results_dir`` (not the seed), oldest first by their recorded date."""
    found = [(p, json.loads(p.read_text(encoding="utf-8")))
             for p in results_dir.glob("*.json") if p.name != SEED]
    return sorted(found, key=lambda item: (recorded_at(item[1], item[0]), item[0].name))


def _heading(path: Path, record: dict[str, Any]) -> str:
    kind = next((k for prefix, k in KINDS.items() if path.name.startswith(prefix)), "`make bench`")
    machine = record.get("machine", {})
    where = machine.get("gpu") or f"CPU only, {machine.get('cpu_count', '?')} cores"
    gpus = machine.get("gpu_count") or 0
    where = f"{gpus}x {where}" if gpus > 1 else where
    date = record.get("date") or recorded_at(record, path).date().isoformat()
    return f"{where}, {kind} ({date})"


def render_results_table(results_dir: Path = RESULTS, link_prefix: str = "results/") -> str:
    """The table (Markdown): one row per :data:`ROWS` entry, one column per JSON file."""
    columns: list[tuple[str, Path, dict[str, Any]]] = []
    seed = results_dir / SEED
    if seed.is_file():
        columns.append(("DALI's tutorials, as published", seed, json.loads(seed.read_text())))
    columns += [(_heading(path, record), path, record) for path, record in records(results_dir)]
    lines = ["| Figure | " + " | ".join(heading for heading, _, _ in columns) + " |",
             "|---|" + "---:|" * len(columns)]
    for row in ROWS:
        cells = []
        for _, _, record in columns:
            value = record["notebooks"].get(row.notebook, {}).get("headline", {}).get(row.key)
            cells.append("—" if value is None else row.format.format(value))
        lines.append(f"| {row.label} | " + " | ".join(cells) + " |")
    sources = "; ".join(f"[{path.name}]({link_prefix}{path.name})" for _, path, _ in columns)
    lines += ["", (f"Each column is one JSON file ({sources}), oldest first: every cell is its "
                   "`notebooks.<notebook>.headline.<key>` value; medians over the trials. "
                   "Generated by `python -m tools.results_table`; a test keeps it in step with "
                   "the JSON.")]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return readme_blocks.main(argv, name=BLOCK, render=render_results_table,
                              command="python -m tools.results_table",
                              description=__doc__.split("\n")[0])


if __name__ == "__main__":
    sys.exit(main())
