"""What the suite found: the README's sentences, each generated from the newest records.

    python -m tools.results_table   # rewrites README.md's findings block (and the results page)

Each sentence reads its figures from the records (``results/*.json``), never from a file name:
for each notebook, the newest record of a machine with a GPU that holds it, else the newest
record of one without (:func:`tools.records.newest_gpu_first`). A figure is a ratio of rates
with its 95% interval, ``{"ratio", "ci95": [low, high], "trials"}`` (``"launches"`` for
notebook 04), at a path of keys in the notebook's ``results`` (``("goals", "capture / eager")``,
``("benchmark", "ratios", ...)``); a comparison is worded by its interval with
:func:`helpers.benchmarking.versus` ("faster than" when the whole interval is above 1, "slower
than" when below, "not distinguishable from" otherwise), so that a new record can change the words
as well as the numbers. A path that the chosen record does not hold is an error that names it:
a notebook that renamed a ratio needs its sentence here updated, never an older record's figure.

Each sentence names the notebooks and the records its figures come from (links), and
:func:`findings` returns, beside the text, every figure with the record and the path it was
read from (``tests/test_generated_tables.py`` checks the README's figures against the records).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from helpers.benchmarking import Ratio
from helpers.benchmarking import versus
from helpers.records import NotebookEntry
from helpers.records import Record
from tools.records import RESULTS
from tools.records import machine_heading
from tools.records import newest_gpu_first

BLOCK = "findings"


@dataclass(frozen=True)
class Figure:
    """A ratio read from a record: which notebook, the path of keys in its ``results``, and the file."""

    notebook: str
    keys: tuple[str, ...]
    path: Path
    ratio: Ratio

    @property
    def shown(self) -> str:
        """How the sentence shows it: ``2.17x [2.07-2.27]`` (:class:`helpers.benchmarking.Ratio`)."""
        return str(self.ratio)


@dataclass
class Lookup:
    """Reads figures and facts of the chosen records, and remembers what one sentence used."""

    chosen: dict[str, Record]
    figures: list[Figure] = field(default_factory=list)
    notebooks: list[str] = field(default_factory=list)

    def entry(self, notebook: str) -> NotebookEntry:
        if notebook not in self.chosen:
            raise ValueError(f"no record in results/ holds {notebook}: its finding cannot be written")
        if notebook not in self.notebooks:
            self.notebooks.append(notebook)
        return self.chosen[notebook].notebooks[notebook]

    def record(self, notebook: str) -> Record:
        self.entry(notebook)
        return self.chosen[notebook]

    def value(self, notebook: str, *keys: str) -> Any:
        """The value at ``keys`` of the notebook's entry (``"results", "reference_threads"``)."""
        entry = self.entry(notebook)
        found: Any = {"headline": entry.headline, "results": entry.results, "parameters": entry.parameters}
        for key in keys:
            if not isinstance(found, dict) or key not in found:
                raise ValueError(f"{self.chosen[notebook].name}: {notebook} records no "
                                 f"{'.'.join(keys)}: update tools/findings.py to what it records")
            found = found[key]
        return found

    def ratio(self, notebook: str, *keys: str, shown: bool = True) -> Ratio:
        """The ratio at ``results.<keys>``, with its 95% interval; ``shown=False`` for one that
        only decides a wording (another sentence shows it)."""
        found = self.value(notebook, "results", *keys)
        if not isinstance(found, dict) or not {"ratio", "ci95"} <= set(found):
            raise ValueError(f"{self.chosen[notebook].name}: {notebook}'s results.{'.'.join(keys)} is "
                             "not a ratio with its interval ({\"ratio\", \"ci95\"})")
        low, high = found["ci95"]
        count = int(found.get("trials", found.get("launches", 0)))
        ratio = Ratio(float(found["ratio"]), float(low), float(high), count, paired=True)
        if shown:
            self.figures.append(Figure(notebook, keys, self.chosen[notebook].path, ratio))
        return ratio


def _pick(same_knobs: Ratio) -> str:
    """Which DALI mode the interval of dynamic / pipeline mode at the same knobs picks."""
    if same_knobs.high < 1:
        return "pipeline mode"
    if same_knobs.low > 1:
        return "dynamic mode"
    return "either DALI mode (dynamic mode for plain Python)"


NB01, NB02, NB03, NB04, NB05, NB06 = ("01-getting-started", "02-capture-mode", "03-feeding-pytorch-fast",
                                      "04-scaling-out", "05-photos-at-scale", "06-checkpoint-resume")
NB07 = "07-video-clips"
R50 = "ResNet-50: best dynamic / "
SAME_KNOBS = "pipeline mode at the same knobs"


def _resnet50(get: Lookup) -> str:
    loader, same, ceiling = (get.ratio(NB05, "goals", R50 + against)
                             for against in ("best DataLoader", "pipeline mode, same knobs", "ceiling"))
    size = get.value(NB05, "parameters", "image_size")
    return (f"feeding ResNet-50 ({size}px crops), dynamic mode at its best was "
            f"{versus(loader, 'the best torch DataLoader')} and {versus(same, SAME_KNOBS)}, reaching "
            f"{ceiling} of training alone.")


def _video(get: Lookup) -> str:
    alone = get.ratio(NB07, "goals", "alone: best DALI / best PyAV DataLoader")
    fed = get.ratio(NB07, "goals", "fed: best DALI / training alone")
    codec = get.value(NB07, "parameters", "codec")
    frames = get.value(NB07, "parameters", "clip_frames")
    codec = {"h264": "H.264", "hevc": "HEVC"}.get(codec, codec.upper())
    best = get.value(NB07, "results", "picks", "best DALI")
    readers = get.value(NB07, "results", "alone", "configs", best, "count")
    nvdec = get.value(NB07, "headline", "best_dali_nvdec_pct")
    busy = f", NVDEC {nvdec:.0f}% busy" if nvdec is not None else ""
    sweep = get.value(NB07, "results", "sweep", "dali_over_dataloader")
    told = [f"{s} ({get.ratio(NB07, 'sweep', 'dali_over_dataloader', s)})" for s in sweep]
    swept = f"; DALI / the DataLoader at other sizes: {', '.join(told)}" if told else ""
    who = f"{readers} DALI readers, one shard each" if readers > 1 else "one DALI reader"
    return (f"on {codec} clips of {frames} frames, {who} ({busy.lstrip(', ') or best}), alone, "
            f"{'were' if readers > 1 else 'was'} "
            f"{versus(alone, 'PyAV in the best torch DataLoader')}, and "
            f"feeding the 3D model the loader reached {fed} of training alone{swept}.")


def _capture(get: Lookup) -> str:
    ratio = get.ratio(NB02, "ratios", "capture_over_eager")
    return f"training on MNIST, capture mode was {versus(ratio, 'eager mode')}, on the same batches."


def _hardware_decoder(get: Lookup) -> str:
    threads = get.value(NB01, "results", "reference_threads")
    load = get.value(NB01, "headline", "best_hw_decoder_load")
    fixed = get.ratio(NB01, "ratios", "best_gpu_over_cpu")
    best = get.ratio(NB01, "ratios", "best_gpu_over_best_cpu")
    return (f"at hw_decoder_load {load:g} (its highest sweep median), GPU decoding "
            f"of the photographs was {versus(fixed, f'CPU decoding at {threads} threads')} and, each "
            f"at its setting with the highest sweep median, "
            f"{versus(best, 'CPU decoding')}.")


def _cpu_time(get: Lookup) -> str:
    ratio = get.ratio(NB05, "goals", "cpu: DataLoader / dynamic mode, CPU time per image")
    capture = "the best capture loop's"
    return ("loading alone, the best torch DataLoader's CPU time per image (workers included) was "
            f"{versus(ratio, capture, faster='higher than', slower='lower than')}.")


def _resumable(get: Lookup) -> str:
    against = {"capture": "capture mode without them", "eager + checkpoints": "eager mode with checkpoints"}
    resumable = "capture, epoch readers + checkpoints / "
    words = [versus(get.ratio(NB06, "benchmark", "ratios", resumable + key), other)
             for key, other in against.items()]
    return f"resumable capture mode (a reader per epoch, checkpoints) was {' and '.join(words)}."


def _scaling(get: Lookup) -> str:
    processes = get.value(NB04, "headline", "processes")
    weak = get.ratio(NB04, "goals", "weak scaling (all processes / 1 process)")
    record = get.record(NB04)
    machine = record.machine
    where = (f"on {machine.get('gpu_count') or 1} GPUs" if record.has_gpu
             else f"on {machine.get('cpu_count', '?')} CPU cores (no GPU run of 04 yet)")
    return f"in samples/s, {processes} processes under torchrun were {versus(weak, 'one')}, {where}."


def _which(get: Lookup) -> str:
    small = get.ratio(NB03, "goals", "best dynamic / pipeline mode, same knobs")
    large = get.ratio(NB05, "goals", R50 + "pipeline mode, same knobs")
    loader_small = get.ratio(NB03, "goals", "best dynamic / best DataLoader")
    loader_large = get.ratio(NB05, "goals", R50 + "best DataLoader", shown=False)  # the first sentence's
    only = all(r.low > 1 for r in (loader_small, loader_large))
    return (f"for a light model (03's MNIST classifier) {_pick(small)}, as dynamic mode was "
            f"{versus(small, SAME_KNOBS)}; for ResNet-50 {_pick(large)}, as dynamic mode was "
            f"{versus(large, 'pipeline mode')}; a torch DataLoader "
            f"{'only for data that DALI cannot read' if only else 'where it keeps up'}, as dynamic mode was "
            f"{versus(loader_small, 'the best one')} on MNIST{' too' if only else ''}.")


# (what the sentence is about, how it is written): the README shows them in this order
SENTENCES: list[tuple[str, Callable[[Lookup], str]]] = [
    ("ResNet-50 from JPEGs", _resnet50),
    ("Video clips", _video),
    ("Capture mode", _capture),
    ("The hardware JPEG decoder", _hardware_decoder),
    ("CPU time", _cpu_time),
    ("Resuming", _resumable),
    ("Several processes", _scaling),
    ("Which to pick", _which),
]


@dataclass(frozen=True)
class Finding:
    topic: str
    text: str
    notebooks: tuple[str, ...]
    records: tuple[str, ...]
    figures: tuple[Figure, ...]

    def line(self, prefix: str = "") -> str:
        """The README's bullet: the topic, links to its notebooks and records, the sentence."""
        links = [f"[{n[:2]}]({prefix}notebooks/{n}.ipynb)" for n in self.notebooks]
        links += [f"[{name}]({prefix}results/{name})" for name in self.records]
        return f"- **{self.topic}** ({', '.join(links)}): {self.text}"


def findings(results_dir: Path = RESULTS) -> list[Finding]:
    """Every sentence of :data:`SENTENCES`, written from the records of ``results_dir``."""
    chosen = newest_gpu_first(results_dir)
    found = []
    for topic, write in SENTENCES:
        get = Lookup(chosen)
        text = write(get)
        names = tuple(dict.fromkeys(chosen[n].name for n in get.notebooks))
        found.append(Finding(topic, text, tuple(get.notebooks), names, tuple(get.figures)))
    return found


def render_findings(results_dir: Path = RESULTS, prefix: str = "") -> str:
    """The README's block (Markdown): where the figures come from, then a bullet per finding."""
    found = findings(results_dir)
    chosen = newest_gpu_first(results_dir)
    used = {chosen[n].name: chosen[n] for f in found for n in f.notebooks}
    sources = "; ".join(f"[{name}]({prefix}results/{name}) ({machine_heading(record.machine)}, {record.date})"
                        for name, record in used.items())
    intro = ("Ratios with 95% intervals in brackets, worded by the interval, from each notebook's newest "
             f"record with a GPU, else without: {sources}.")
    outro = "Generated by `python -m tools.results_table`; a test keeps it in step."
    return "\n\n".join([intro, "\n".join(f.line(prefix) for f in found), outro])
