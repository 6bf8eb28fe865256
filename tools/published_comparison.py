"""The results page's comparison with what DALI's own tutorials printed (``results/seed.json``;
block ``published-comparison``): a table of the seed's figures beside the newest GPU record's,
and how far apart they are, in words generated from the figures. Which figures are compared is
each notebook's metadata (``published``: helpers.data.registry).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from helpers.data import registry
from tools.notebook_tables import GENERATED
from tools.notebook_tables import format_cell
from tools.notebook_tables import headline_labels
from tools.notebook_tables import interval_of
from tools.record_format import NotebookEntry
from tools.records import RESULTS
from tools.records import SEED
from tools.records import column_heading
from tools.records import newest_per_notebook
from tools.records import records


def compared_figures(root: Path) -> tuple[list[tuple[str, str, str, str]], list[tuple[str, str, str, str]]]:
    """The figures that DALI's tutorials printed and the suite measures alike, as each notebook's
    metadata names them (``published``, helpers.data.registry): ``(notebook, key in seed.json, key
    in a record, what it is)``, the rates, then the ratios."""
    found: dict[str, list[tuple[str, str, str, str]]] = {"rate": [], "ratio": []}
    for entry in registry.notebooks(root):
        for figure in entry.published:
            found[figure["kind"]].append((entry.slug, figure["seed"], figure["key"], figure["what"]))
    return found["rate"], found["ratio"]


def _gpu_of(newest: dict[str, Any], notebooks: Any) -> Callable[[str], str]:
    """``on(notebook)``: "" where the records of ``notebooks`` are all of one GPU, else " (its GPU)",
    so that figures of two GPUs side by side each name theirs."""
    gpus = {newest[n].machine.get("gpu") for n in notebooks if n in newest}
    return lambda n: f" ({newest[n].machine.get('gpu')})" if len(gpus) > 1 and n in newest else ""


def render_published_table(results_dir: Path = RESULTS, prefix: str = "") -> str:
    """Every figure of ``seed.json`` beside the same figure of the newest GPU record that holds its
    notebook ("—" where the suite measures no such figure), in Markdown; empty without a seed."""
    seed_path = results_dir / SEED
    if not seed_path.is_file():
        return ""
    seed = json.loads(seed_path.read_text(encoding="utf-8"))["notebooks"]
    newest = newest_per_notebook([r for r in records(results_dir) if r.has_gpu])
    labels = headline_labels(results_dir.parent / "notebooks")
    rates, ratios = compared_figures(results_dir.parent)
    ours = {(n, seed_key): key for n, seed_key, key, _ in [*rates, *ratios]}
    used = {newest[n].name: newest[n] for n in seed if n in newest}
    heading = (
        column_heading(next(iter(used.values())))
        if len(used) == 1
        else "this suite, the newest record of a machine with a GPU"
    )
    lines = [f"| Figure | DALI's tutorials, as published | {heading} |", "|---|---:|---:|"]
    on = _gpu_of(newest, seed)
    for notebook in sorted(seed):
        for seed_key, published in seed[notebook].get("headline", {}).items():
            spec = seed[notebook]["labels"][seed_key]  # the seed labels its own figures
            label, fmt = spec["label"], spec["format"]
            measured = "—"
            key = ours.get((notebook, seed_key))
            entry = newest[notebook].notebooks[notebook] if notebook in newest else None
            if key is not None and entry and entry.headline.get(key) is not None:
                spec = labels.get(notebook, {}).get(key, {})
                measured = format_cell(spec.get("format", fmt), entry.headline[key], interval_of(entry, spec))
            measured += on(notebook) if measured != "—" else ""
            lines.append(f"| {notebook[:2]} · {label} | {fmt.format(published)} | {measured} |")
    sources = "; ".join(f"[{name}]({prefix}results/{name})" for name in [SEED, *used])
    lines += ["", f"From {sources}. {GENERATED}"]
    return "\n".join(lines)


def render_published_comparison(results_dir: Path = RESULTS, prefix: str = "") -> str:
    """How the newest GPU record's figures compare with those DALI's tutorials printed
    (``seed.json``): a table of both (:func:`render_published_table`), each rate as published
    against measured, the range of their quotients, and the ratios with their intervals
    (Markdown, for the docs' results page)."""
    seed_path = results_dir / SEED
    newest = newest_per_notebook([r for r in records(results_dir) if r.has_gpu])
    rates, published_ratios = compared_figures(results_dir.parent)
    notebooks = {n for n, *_ in [*rates, *published_ratios]}
    if not seed_path.is_file() or not notebooks or not notebooks <= set(newest):
        named = " and ".join(sorted(n[:2] for n in notebooks)) or "none"
        return (
            f"No record of a GPU machine holds every notebook with published figures ({named}) yet: "
            "nothing to set beside the published figures."
        )
    seed = json.loads(seed_path.read_text(encoding="utf-8"))["notebooks"]
    absent = [
        f"{n}: {key}"
        for n, key, *_ in [*rates, *published_ratios]
        if key not in seed.get(n, {}).get("headline", {})
    ]
    if absent:
        raise ValueError(
            f"results/{SEED} holds no published figure for {', '.join(absent)}, which the notebook's "
            "metadata (`published`) sets beside it: add the figure DALI's tutorial printed to the "
            'notebook\'s "headline" there, with its "labels" entry'
        )
    labels = headline_labels(results_dir.parent / "notebooks")

    def measured(notebook: str, key: str) -> tuple[float, NotebookEntry]:
        entry = newest[notebook].notebooks[notebook]
        return entry.headline[key], entry

    pairs, quotients, lower, on = [], [], True, _gpu_of(newest, notebooks)
    for notebook, seed_key, key, what in rates:
        value, _ = measured(notebook, key)
        published = seed[notebook]["headline"][seed_key]
        lower = lower and value < published
        quotients.append(max(published / value, value / published))
        pairs.append(f"{value:,.0f}{on(notebook)} against {published:,.0f} {what}")
    dates = sorted({newest[n].date for n in notebooks})
    files = sorted({newest[n].name for n in notebooks})
    lines = [
        render_published_table(results_dir, prefix),
        "",
        f"The GPU column ({', '.join(files)}, {', '.join(dates)}) reads {min(quotients):.1f} to "
        f"{max(quotients):.1f} times {'below' if lower else 'apart from'} \"DALI's tutorials, as "
        'published" for the same figures: ' + "; ".join(pairs) + ".",
    ]
    ratios, apart = [], []
    for notebook, seed_key, key, what in published_ratios:
        value, entry = measured(notebook, key)
        published = seed[notebook]["headline"][seed_key]
        apart.append(max(value / published, published / value))
        interval = interval_of(entry, labels.get(notebook, {}).get(key))
        shown = f"{value:.2f} times"
        if interval:
            shown += f" (95% interval {interval[0]:.2f}-{interval[1]:.2f})"
        ratios.append(what.format(shown) + f" here{on(notebook)}, against {published:.2f} in the tutorial")
    closer = max(apart) < min(quotients)
    lines += ["", ("The ratios are closer: " if closer else "The ratios: ") + "; ".join(ratios) + "."]
    return "\n".join(lines)
