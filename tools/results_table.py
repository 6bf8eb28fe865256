"""The README's results and goals tables, generated from the committed records (never typed).

    python -m tools.results_table          # rewrite the results and goals blocks of README.md
    python -m tools.results_table --check  # exit 1 if either block of README.md is out of date

Every fact comes from the records themselves (``results/*.json``, written by
``tools.suite.write_record``; format in ``tools.suite``'s docstring), never from a file name:

- a column per record, oldest first by the date it records; its heading says the machine
  (``machine.gpu``/``gpu_count``, else its CPU cores), the runner's scale and device (each
  notebook's ``run``), and the date. ``seed.json`` (what DALI's own tutorials printed) is always
  the first column. A record without ``run`` (written before runs kept these facts) reads as
  scale, device and command "unknown" (:func:`run_facts`);
- a row per headline figure. Its label comes from the notebook's metadata, filled from the
  parameters that the record says the notebook ran with::

      "metadata": {"dali_tutorials": {..., "headline": {
          "cpu_decode_img_s": {"label": "CPU decode, {threads} threads (img/s)",
                               "format": "{:,.0f}"},
          "gpu_over_cpu": {"label": "GPU / CPU decode, {threads} threads", "format": "{:.2f}x"}}}}

  The keys are the notebook's headline keys (rows follow the records' order of keys). ``label`` is a
  :meth:`str.format` template whose fields are looked up in the record's
  ``notebooks.<notebook>.parameters``, then in its ``results`` (top-level values), so a key
  holds no parameter value and the label shows the one each record ran with; records that
  differ in it get a row each. ``format`` formats the value (default ``{:,.4g}``). The row is
  prefixed by the notebook's number. Keys that the metadata does not list take their label
  from :data:`LEGACY_LABELS` (the keys of records made before the notebooks carried labels,
  with the parameter values of those runs in their names), else the key itself, which
  ``tests/test_generated_tables.py`` refuses in the committed records. A ratio's spec may add
  ``"interval": ["goals", "<goal name>"]`` (or ``["ratios", "<key>"]``): the path, in the
  record's ``results``, of its ``{"ratio", "ci95"}``; the cell then shows the 95% interval
  beside the value;
- the goals table: each notebook's ``results.goals`` in the newest record of a machine with a
  GPU that holds the notebook (01-03 may come from a run on one GPU, 04 from one on two),
  ``{name: {"ratio", "ci95": [low, high], "goal", "verdict", "trials"}}`` (``"launches"`` in
  place of ``"trials"`` for notebook 04); a row per goal, labelled with its name. The verdict must follow the
  interval (met: its low end clears the goal; not met: its high end is below it; inconclusive
  otherwise), or the table is not generated. Goals recorded in the older form
  ``{"ratio", "goal", "met"}`` show "no interval recorded" in place of a verdict, and a
  notebook without goals a row saying so.

The docs hook (docs/hooks.py) shows the same results table on the site's landing page.
"""

from __future__ import annotations

import datetime as dt
import json
import string
import sys
from pathlib import Path
from typing import Any, NamedTuple

from helpers.benchmarking import Ratio
from helpers.paths import REPO_ROOT
from tools import readme_blocks

BLOCK = "results-table"
GOALS_BLOCK = "goals"
RESULTS = REPO_ROOT / "results"
SEED = "seed.json"  # what DALI's own notebooks printed: always the first column
DEFAULT_FORMAT = "{:,.4g}"
UNKNOWN = "unknown"

# Labels of the headline keys of records made before the notebooks carried
# `metadata.dali_tutorials.headline` (their keys hold parameter values: "4_threads", "batch 64").
# Drop an entry once no committed record holds its key.
LEGACY_LABELS: dict[tuple[str, str], tuple[str, str]] = {
    ("01-getting-started", "cpu_decode_img_s_4_threads"): ("CPU decode, 4 threads (img/s)", "{:,.0f}"),
    ("01-getting-started", "gpu_decode_img_s_4_threads"):
        ("GPU decode, default hw_decoder_load, 4 threads (img/s)", "{:,.0f}"),
    ("01-getting-started", "gpu_over_cpu_4_threads"):
        ("GPU / CPU decode, default hw_decoder_load, 4 threads", "{:.2f}x"),
    ("01-getting-started", "best_gpu_decode_img_s_4_threads"):
        ("GPU decode, best hw_decoder_load, 4 threads (img/s)", "{:,.0f}"),
    ("01-getting-started", "best_gpu_over_cpu_4_threads"): ("best GPU / CPU decode, 4 threads", "{:.2f}x"),
    ("01-getting-started", "best_hw_decoder_load"): ("best hw_decoder_load", "{:g}"),
    ("02-capture-mode", "eager_samples_per_s"): ("eager training (samples/s)", "{:,.0f}"),
    ("02-capture-mode", "capture_samples_per_s"): ("capture training (samples/s)", "{:,.0f}"),
    ("02-capture-mode", "capture_over_eager"): ("capture / eager", "{:.2f}x"),
    ("02-capture-mode", "final_loss_eager"): ("final loss, eager (last batch)", "{:.4f}"),
    ("02-capture-mode", "final_loss_capture"): ("final loss, capture (last batch)", "{:.4f}"),
    ("02-capture-mode", "last_epoch_mean_loss_eager"): ("last epoch's mean loss, eager", "{:.4f}"),
    ("02-capture-mode", "last_epoch_mean_loss_capture"): ("last epoch's mean loss, capture", "{:.4f}"),
    ("02-capture-mode", "test_accuracy_eager"): ("held-out accuracy, eager", "{:.1%}"),
    ("02-capture-mode", "test_accuracy_capture"): ("held-out accuracy, capture", "{:.1%}"),
    ("02-capture-mode", "capture_cpu_decode_samples_per_s"): ("capture, CPU decode (samples/s)", "{:,.0f}"),
    ("02-capture-mode", "capture_gpu_decode_samples_per_s"): ("capture, GPU decode (samples/s)", "{:,.0f}"),
    ("02-capture-mode", "gpu_decode_over_cpu_decode"): ("capture, GPU decode / CPU decode", "{:.2f}x"),
    ("03-feeding-pytorch-fast", "eager_samples_per_s"): ("dynamic eager, batch 64 (samples/s)", "{:,.0f}"),
    ("03-feeding-pytorch-fast", "capture_samples_per_s"):
        ("dynamic capture, batch 64 (samples/s)", "{:,.0f}"),
    ("03-feeding-pytorch-fast", "pipeline_default_samples_per_s"):
        ("pipeline mode, default (samples/s)", "{:,.0f}"),
    ("03-feeding-pytorch-fast", "dataloader_samples_per_s"): ("torch DataLoader (samples/s)", "{:,.0f}"),
    ("03-feeding-pytorch-fast", "ceiling_samples_per_s"):
        ("training alone, the ceiling (samples/s)", "{:,.0f}"),
    ("03-feeding-pytorch-fast", "best_dynamic_samples_per_s"): ("best dynamic mode (samples/s)", "{:,.0f}"),
    ("03-feeding-pytorch-fast", "best_pipeline_samples_per_s"): ("best pipeline mode (samples/s)", "{:,.0f}"),
    ("03-feeding-pytorch-fast", "best_over_pipeline"): ("best dynamic / pipeline default", "{:.2f}x"),
    ("03-feeding-pytorch-fast", "best_over_dataloader"): ("best dynamic / DataLoader", "{:.2f}x"),
    ("03-feeding-pytorch-fast", "best_over_best_pipeline"): ("best dynamic / best pipeline", "{:.2f}x"),
    ("03-feeding-pytorch-fast", "best_over_ceiling"): ("best dynamic / ceiling", "{:.2f}x"),
    ("04-scaling-out", "processes"): ("processes (GPUs) in the multi-process run", "{:d}"),
    ("04-scaling-out", "samples_per_s_single"): ("1 process, batch 64 (samples/s)", "{:,.0f}"),
    ("04-scaling-out", "samples_per_s_multi"): ("all processes, batch 64 each (samples/s)", "{:,.0f}"),
    ("04-scaling-out", "speedup_weak"): ("weak scaling (multi / single)", "{:.2f}x"),
    ("04-scaling-out", "speedup_strong"): ("strong scaling (same global batch)", "{:.2f}x"),
    ("04-scaling-out", "accuracy_single"): ("held-out accuracy, 1 process, same global batch", "{:.1%}"),
    ("04-scaling-out", "accuracy_multi"): ("held-out accuracy, all processes", "{:.1%}"),
}


class Column(NamedTuple):
    heading: str
    path: Path
    record: dict[str, Any]


class Row(NamedTuple):
    label: str
    cells: list[str]


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


def run_facts(entry: dict[str, Any]) -> dict[str, Any]:
    """How a notebook of a record was run (``notebooks.<notebook>.run``): scale, the device
    asked for, the parameters handed to papermill, command, commit; "unknown" where the record
    does not say."""
    facts = entry.get("run") or {}
    return {"scale": facts.get("scale", UNKNOWN), "device": facts.get("device", UNKNOWN),
            "parameters": facts.get("parameters", {}), "command": facts.get("command", UNKNOWN),
            "commit": facts.get("commit", UNKNOWN)}


def has_gpu(record: dict[str, Any]) -> bool:
    machine = record.get("machine", {})
    return bool(machine.get("gpu_count") or machine.get("gpu"))


def machine_heading(machine: dict[str, Any]) -> str:
    """``2x NVIDIA H200``, or ``CPU only, 2 cores``."""
    if machine.get("gpu"):
        gpus = machine.get("gpu_count") or 1
        return f"{gpus}x {machine['gpu']}" if gpus > 1 else machine["gpu"]
    return f"CPU only, {machine.get('cpu_count', '?')} cores"


def _one_or_all(values: list[str]) -> str:
    unique = list(dict.fromkeys(values))
    return "/".join(unique) if unique else UNKNOWN


def run_heading(record: dict[str, Any]) -> str:
    """The scale and the device of a record's runs: ``full scale, device gpu``, or for
    ``auto`` what it resolved to: ``bench scale, device auto → cpu``."""
    entries = list(record.get("notebooks", {}).values())
    facts = [run_facts(e) for e in entries]
    scale = _one_or_all([f["scale"] for f in facts])
    device = _one_or_all([f["device"] for f in facts])
    if device == "auto":
        resolved = _one_or_all([str(e.get("parameters", {}).get("device", UNKNOWN)) for e in entries])
        device = f"auto → {resolved}"
    return f"{scale} scale, device {device}"


def column_heading(path: Path, record: dict[str, Any], date_format: str = " ({})") -> str:
    """``2x NVIDIA H200, full scale, device gpu (2026-11-30)``: what a record says of itself."""
    date = record.get("date") or recorded_at(record, path).date().isoformat()
    return f"{machine_heading(record.get('machine', {}))}, {run_heading(record)}{date_format.format(date)}"


def headline_labels(notebooks_dir: Path) -> dict[str, dict[str, dict[str, str]]]:
    """``{notebook stem: metadata.dali_tutorials.headline}`` of the notebooks in ``notebooks_dir``."""
    labels = {}
    for path in sorted(notebooks_dir.glob("[0-9][0-9]-*.ipynb")):
        meta = json.loads(path.read_text(encoding="utf-8")).get("metadata", {}).get("dali_tutorials", {})
        labels[path.stem] = meta.get("headline") or {}
    return labels


def fill_label(template: str, entry: dict[str, Any], where: str) -> str:
    """``template`` with its fields from the entry's recorded parameters, then its results."""
    values = {**{k: v for k, v in entry.get("results", {}).items() if not isinstance(v, (dict, list))},
              **entry.get("parameters", {})}
    fields = [f for _, f, _, _ in string.Formatter().parse(template) if f]
    missing = [f for f in fields if f not in values]
    if missing:
        raise ValueError(f"{where}: the label {template!r} needs {', '.join(missing)}, which this record's "
                         "parameters and results do not hold")
    return template.format(**values)


def _label(notebook: str, key: str, entry: dict[str, Any], specs: dict[str, dict[str, Any]],
           where: str) -> tuple[str, str]:
    if key in specs:
        spec = specs[key]
        return fill_label(spec["label"], entry, where), spec.get("format", DEFAULT_FORMAT)
    return LEGACY_LABELS.get((notebook, key), (key, DEFAULT_FORMAT))


def interval_of(entry: dict[str, Any], spec: dict[str, Any] | None) -> list[float] | None:
    """The 95% interval that the spec's ``interval`` path (keys into the entry's ``results``)
    leads to: a ``{"ratio", "ci95": [low, high]}`` record, as ``helpers.benchmarking`` writes
    them; None where the spec names none or the record does not hold it."""
    found: Any = entry.get("results", {})
    for step in (spec or {}).get("interval") or [None]:
        if step is None or not isinstance(found, dict) or step not in found:
            return None
        found = found[step]
    return found.get("ci95") if isinstance(found, dict) else None


def format_cell(fmt: str, value: Any, interval: list[float] | None) -> str:
    """``value`` in ``fmt``, followed by its 95% interval where the record holds one."""
    if interval is None:
        return fmt.format(value)
    low, high = interval
    return f"{fmt.format(value)} [{fmt.format(low)}–{fmt.format(high)}]"


def table_rows(columns: list[Column], labels: dict[str, dict[str, dict[str, str]]]) -> list[Row]:
    """One row per notebook and filled label, in notebook order, then the order in which the
    records (oldest first) list their headline keys (the metadata's keys, then legacy ones, after
    them: the metadata is stored with sorted keys). Keys whose labels read the same share a row:
    an older record's ``cpu_decode_img_s_4_threads`` and a newer one's ``cpu_decode_img_s`` run
    with 4 threads.
    A cell is "—" where a column holds no key of that label."""
    notebooks = sorted({name for c in columns for name in c.record.get("notebooks", {})} | set(labels))
    rows = []
    for notebook in notebooks:
        specs = labels.get(notebook, {})
        held = [k for c in columns
                for k in c.record.get("notebooks", {}).get(notebook, {}).get("headline", {})]
        legacy = [k for (n, k) in LEGACY_LABELS if n == notebook]
        by_label: dict[str, list[str]] = {}
        for key in dict.fromkeys([*held, *specs, *legacy]):  # the records' order first
            for i, column in enumerate(columns):
                entry = column.record.get("notebooks", {}).get(notebook, {})
                value = entry.get("headline", {}).get(key)
                if value is None:
                    continue
                where = f"{column.path.name}, {notebook}.{key}"
                label, fmt = _label(notebook, key, entry, specs, where)
                cells = by_label.setdefault(label, ["—"] * len(columns))
                if cells[i] != "—":
                    raise ValueError(f"{where}: another headline key of this record has the label {label!r}")
                cells[i] = format_cell(fmt, value, interval_of(entry, specs.get(key)))
        rows += [Row(f"{notebook[:2]} · {label}", cells) for label, cells in by_label.items()]
    return rows


def columns_of(results_dir: Path) -> list[Column]:
    columns = []
    seed = results_dir / SEED
    if seed.is_file():
        columns.append(Column("DALI's tutorials, as published", seed, json.loads(seed.read_text())))
    found = records(results_dir)
    headings = [column_heading(path, record) for path, record in found]
    # two records of alike machines on one day (another machine of the same kind): the file tells them apart
    return columns + [Column(heading if headings.count(heading) == 1
                             else column_heading(path, record, f" ({{}}, {path.name})"), path, record)
                      for (path, record), heading in zip(found, headings, strict=True)]


def render_results_table(results_dir: Path = RESULTS, link_prefix: str = "results/") -> str:
    """The table (Markdown): a column per record, a row per headline figure. The labels come
    from the notebooks next to ``results_dir`` (``<results_dir>/../notebooks``)."""
    columns = columns_of(results_dir)
    rows = table_rows(columns, headline_labels(results_dir.parent / "notebooks"))
    lines = ["| Figure | " + " | ".join(c.heading for c in columns) + " |",
             "|---|" + "---:|" * len(columns)]
    lines += [f"| {row.label} | " + " | ".join(row.cells) + " |" for row in rows]
    sources = "; ".join(f"[{c.path.name}]({link_prefix}{c.path.name})" for c in columns)
    lines += ["", (f"Each column is one JSON file ({sources}), oldest first: every cell is its "
                   "`notebooks.<notebook>.headline.<key>` value (a rate over trials; a ratio with its 95% "
                   "interval in brackets where the record holds one). A heading "
                   "names the machine, and the scale and device the record says the notebooks ran "
                   "with (`notebooks.<notebook>.run`). Generated by `python -m tools.results_table`; "
                   "a test keeps it in step with the JSON.")]
    return "\n".join(lines)


def goal_problems(goal: dict[str, Any]) -> list[str]:
    """What is wrong with a goal in the current form (an empty list when nothing is): the
    fields it lacks, or a verdict that does not follow its 95% interval."""
    count = "launches" if "launches" in goal else "trials"
    missing = [k for k in ("ratio", "ci95", "goal", "verdict", count) if k not in goal]
    if missing:
        return [f"lacks {', '.join(missing)}"]
    low, high = goal["ci95"]
    # the rule the notebooks judge by (helpers.benchmarking), applied to what the record says
    expected = Ratio(goal["ratio"], low, high, goal[count], paired=True).verdict(goal["goal"])
    problems = []
    if not low <= goal["ratio"] <= high:
        problems.append(f"ratio {goal['ratio']:.3g} lies outside its interval [{low:.3g}, {high:.3g}]")
    if goal["verdict"] != expected:
        problems.append(f"verdict {goal['verdict']!r}, but the interval [{low:.3g}, {high:.3g}] against "
                        f"the goal {goal['goal']:g} says {expected!r}")
    return problems


def _goal_row(notebook: str, name: str, goal: dict[str, Any], where: str) -> str:
    label = f"{notebook[:2]} · {name}"
    if "ci95" not in goal and "verdict" not in goal:  # the older form {ratio, goal, met}
        return (f"| {label} | >= {goal['goal']:g}x | {goal['ratio']:.2f}x | — | no interval recorded | — |")
    problems = goal_problems(goal)
    if problems:
        raise ValueError(f"{where}, goal {name!r}: {'; '.join(problems)}")
    low, high = goal["ci95"]
    count = f"{goal['launches']} launches" if "launches" in goal else f"{goal['trials']} trials"
    return (f"| {label} | >= {goal['goal']:g}x | {goal['ratio']:.2f}x | {low:.2f}x–{high:.2f}x | "
            f"{goal['verdict']} | {count} |")


def newest_per_notebook(found: list[tuple[Path, dict[str, Any]]]) -> dict[str, tuple[Path, dict[str, Any]]]:
    """``{notebook: (path, record)}``: for each notebook, the newest of ``found`` (oldest first)
    that holds it. Notebooks run on different machines (notebooks 01-03 on one GPU, 04 on two)
    each come from their own record."""
    return {name: (path, record) for path, record in found for name in record.get("notebooks", {})}


def render_goals_table(results_dir: Path = RESULTS, link_prefix: str = "results/") -> str:
    """The goals of each notebook in the newest record of a machine with a GPU that holds it
    (Markdown)."""
    newest = newest_per_notebook([(p, r) for p, r in records(results_dir) if has_gpu(r)])
    lines = ["| Goal | target | measured | 95% interval | verdict | trials |",
             "|---|---:|---:|---:|---|---:|"]
    if not newest:
        return "\n".join([*lines, "| no record of a GPU machine in results/ | — | — | — | — | — |"])
    for notebook, (path, record) in sorted(newest.items()):
        goals = record["notebooks"][notebook].get("results", {}).get("goals")
        if not goals:
            lines.append(f"| {notebook[:2]} · no goals recorded | — | — | — | — | — |")
            continue
        lines += [_goal_row(notebook, name, goal, f"{path.name}, {notebook}") for name, goal in goals.items()]
    # goals that only a record without a GPU holds: stated, never judged here
    elsewhere = newest_per_notebook([(p, r) for p, r in records(results_dir) if not has_gpu(r)])
    for notebook, (_, record) in sorted(elsewhere.items()):
        if notebook in newest:
            continue
        for name, goal in (record["notebooks"][notebook].get("results", {}).get("goals") or {}).items():
            lines.append(f"| {notebook[:2]} · {name} | >= {goal['goal']:g}x | — | — | not judged: no "
                         "GPU run of this notebook's current version | — |")
    lines[2:] = sorted(lines[2:], key=lambda row: row[2:4])  # in notebook order
    sources = {path.name: f"[{path.name}]({link_prefix}{path.name}) ({column_heading(path, record, ', {}')})"
               for path, record in newest.values()}
    lines += ["", (f"Each notebook's `results.goals` in the newest record of a machine with a GPU that "
                   f"holds it: {'; '.join(sources.values())}. A goal is met when the 95% interval of "
                   "its ratio clears the target, not met when the interval lies below it, "
                   "inconclusive otherwise. Generated by `python -m tools.results_table`; a test "
                   "keeps it in step with the JSON.")]
    return "\n".join(lines)


# figures that DALI's tutorials printed and the suite measures alike: (notebook, key in seed.json,
# key in a record, what it is); rates, then ratios
PUBLISHED_RATES = [
    ("01-getting-started", "cpu_decode_img_s_4_threads", "cpu_decode_img_s",
     "images/s for CPU decoding in 01"),
    ("01-getting-started", "gpu_decode_img_s_4_threads", "gpu_decode_img_s",
     "images/s for GPU decoding in 01 (default `hw_decoder_load`)"),
    ("02-capture-mode", "eager_samples_per_s", "eager_samples_per_s", "samples/s for eager training in 02"),
    ("02-capture-mode", "capture_samples_per_s", "capture_samples_per_s",
     "samples/s for capture training in 02"),
]
PUBLISHED_RATIOS = [
    ("01-getting-started", "gpu_over_cpu_4_threads", "gpu_over_cpu",
     "the GPU decodes {} as fast as the CPU at 4 threads"),
    ("02-capture-mode", "capture_over_eager", "capture_over_eager",
     "capture mode trains {} as fast as eager mode"),
]


def render_published_comparison(results_dir: Path = RESULTS) -> str:
    """How the newest GPU record's figures compare with those DALI's tutorials printed
    (``seed.json``): each rate as published against measured, the range of their quotients,
    and the ratios with their intervals (Markdown, for the docs' results page)."""
    seed_path = results_dir / SEED
    newest = newest_per_notebook([(p, r) for p, r in records(results_dir) if has_gpu(r)])
    notebooks = {n for n, *_ in PUBLISHED_RATES}
    if not seed_path.is_file() or not notebooks <= set(newest):
        return ("No record of a GPU machine holds notebooks 01 and 02 yet: nothing to set beside "
                "the published figures.")
    seed = json.loads(seed_path.read_text(encoding="utf-8"))["notebooks"]
    labels = headline_labels(results_dir.parent / "notebooks")

    def measured(notebook: str, key: str) -> tuple[float, dict[str, Any]]:
        entry = newest[notebook][1]["notebooks"][notebook]
        return entry["headline"][key], entry

    pairs, quotients, lower = [], [], True
    for notebook, seed_key, key, what in PUBLISHED_RATES:
        value, _ = measured(notebook, key)
        published = seed[notebook]["headline"][seed_key]
        lower = lower and value < published
        quotients.append(max(published / value, value / published))
        pairs.append(f"{value:,.0f} against {published:,.0f} {what}")
    dates = sorted({newest[n][1].get("date") or "" for n in notebooks})
    files = sorted({newest[n][0].name for n in notebooks})
    lines = [f"The GPU column ({', '.join(files)}, {', '.join(dates)}) reads {min(quotients):.1f} to "
             f"{max(quotients):.1f} times {'below' if lower else 'apart from'} \"DALI's tutorials, as "
             "published\" for the same figures: " + "; ".join(pairs) + "."]
    ratios, apart = [], []
    for notebook, seed_key, key, what in PUBLISHED_RATIOS:
        value, entry = measured(notebook, key)
        published = seed[notebook]["headline"][seed_key]
        apart.append(max(value / published, published / value))
        interval = interval_of(entry, labels.get(notebook, {}).get(key))
        shown = f"{value:.2f} times"
        if interval:
            shown += f" (95% interval {interval[0]:.2f}-{interval[1]:.2f})"
        ratios.append(what.format(shown) + f" here, against {published:.2f} in the tutorial")
    closer = max(apart) < min(quotients)
    lines += ["", ("The ratios are closer: " if closer else "The ratios: ") + "; ".join(ratios) + "."]
    return "\n".join(lines)


BLOCKS = {BLOCK: render_results_table, GOALS_BLOCK: render_goals_table}


def main(argv: list[str] | None = None) -> int:
    return readme_blocks.main(argv, blocks=BLOCKS, command="python -m tools.results_table",
                              description=__doc__.split("\n")[0])


if __name__ == "__main__":
    sys.exit(main())
