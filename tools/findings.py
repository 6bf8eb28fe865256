"""What the suite found: the README's findings and each notebook's bottom line, generated from
the newest records.

    python -m tools.results_table   # rewrites README.md's findings block, the results page and
                                    # each notebook's bottom-line cell (tools.bottom_lines)

Each sentence reads its figures from the records (``results/*.json``), never from a file name:
for each notebook, the newest record of a machine with a GPU that holds it, else the newest
record of one without (:func:`tools.records.newest_gpu_first`). A figure is a ratio of rates
with its 95% interval, ``{"ratio", "ci95": [low, high], "trials"}`` (``"launches"`` for
notebook 04), at a path of keys in the notebook's ``results`` (``("goals", "capture / eager")``,
``("benchmark", "ratios", ...)``); a comparison is worded by its interval with
:func:`helpers.toolkit.benchmarking.versus` ("faster than" when the whole interval is above 1, "slower
than" when below, "not distinguishable from" otherwise), so that a new record can change the words
as well as the numbers. A path that the chosen record does not hold is an error that names it:
a notebook that renamed a ratio needs its function here updated, never an older record's figure.

One function per notebook (:data:`WRITERS`; the topic and the order are the notebook's metadata,
``finding``) writes what its newest record found, in one or two
short sentences: the README shows it as a bullet, and the notebook's bottom line
(``tools.bottom_lines``) opens with it. A notebook whose record keys change needs only its own
function updated. The README's block opens with :func:`answer`, the one line a learner needs.

Each finding names the notebooks and the records its figures come from (links), and holds every
figure with the record and the path it was read from (``tests/tools/test_findings.py`` checks
the README's figures against the records).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from helpers.data import registry
from helpers.lessons.nb07_video_clips import DEFAULTS as VIDEO_DEFAULTS
from helpers.toolkit.benchmarking import Ratio
from helpers.toolkit.benchmarking import versus
from tools.goal_check import goal_problems
from tools.record_format import NotebookEntry
from tools.record_format import Record
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
    against: tuple[float, ...] = ()  # values its bounds are shown beside (a goal), as well as 1

    @property
    def shown(self) -> str:
        """How the sentence shows it: ``2.17x [2.07-2.27]`` (:class:`helpers.toolkit.benchmarking.Ratio`),
        with the decimals that keep each bound on its side of ``against`` too (``0.973x [0.968-0.978]``
        beside a goal of 0.97)."""
        return self.ratio.shown_against(*self.against)


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
                raise ValueError(
                    f"{self.chosen[notebook].name}: {notebook} records no "
                    f"{'.'.join(keys)}: update tools/findings.py to what it records"
                )
            found = found[key]
        return found

    def ratio(self, notebook: str, *keys: str, shown: bool = True, against: tuple[float, ...] = ()) -> Ratio:
        """The ratio at ``results.<keys>``, with its 95% interval; ``shown=False`` for one that
        only decides a wording (another sentence shows it); ``against``: values the sentence shows
        its bounds beside (``ratio.shown_against(*against)``, :attr:`Figure.shown`), such as its goal."""
        found = self.value(notebook, "results", *keys)
        if not isinstance(found, dict) or not {"ratio", "ci95"} <= set(found):
            raise ValueError(
                f"{self.chosen[notebook].name}: {notebook}'s results.{'.'.join(keys)} is "
                'not a ratio with its interval ({"ratio", "ci95"})'
            )
        low, high = found["ci95"]
        count = int(found.get("trials", found.get("launches", 0)))
        ratio = Ratio(float(found["ratio"]), float(low), float(high), count, paired=True)
        figure = Figure(notebook, keys, self.chosen[notebook].path, ratio, against)
        if shown and figure.shown not in {f.shown for f in self.figures if f.notebook == notebook}:
            self.figures.append(figure)
        return ratio

    def goals(self, notebook: str) -> dict[str, dict[str, Any]]:
        """The notebook's recorded goals (``results.goals``; none: ``{}``), each verdict checked
        against its interval (:func:`goal_problems`): a verdict the interval does not give is an
        error that names the record and the goal."""
        goals = self.entry(notebook).results.get("goals") or {}
        for name, goal in goals.items():
            problems = goal_problems(goal)
            if problems:
                raise ValueError(
                    f"{self.chosen[notebook].name}, {notebook}, goal {name!r}: {'; '.join(problems)}"
                )
        return goals


def versus_each(compared: Sequence[tuple[Ratio, str]], reference: str, **words: str) -> str:
    """Ratios against one reference, each with what it measured (``(ratio, "on MNIST")``), worded
    together when their intervals give the same words (``faster than X (1.97x [...] on A; 1.77x
    [...] on B)``), else each in its own; ``words`` as :func:`helpers.toolkit.benchmarking.versus` takes
    them."""
    said = [versus(r, reference, **words).removesuffix(f" ({r})") for r, _ in compared]
    if len(set(said)) == 1:
        return f"{said[0]} ({'; '.join(f'{r} {what}' for r, what in compared)})"
    return " and ".join(f"{versus(r, reference, **words)} {what}" for r, what in compared)


NB01, NB02, NB03, NB04, NB05, NB06 = (
    "01-getting-started",
    "02-capture-mode",
    "03-feeding-pytorch-fast",
    "04-scaling-out",
    "05-photos-at-scale",
    "06-checkpoint-resume",
)
NB07 = "07-video-clips"
R50 = "ResNet-50: best dynamic / "
SAME_KNOBS = "pipeline mode at the same knobs"
LOADER = "the best torch DataLoader"

# --- one function per notebook: what its newest record found, in one or two sentences -------------
# The first sentence starts in lower case: it follows a colon (the README's topic, the bottom
# line's machine).


def _getting_started(get: Lookup) -> list[str]:
    threads = get.value(NB01, "results", "reference_threads")
    if "hw_gpu_over_cpu" in get.value(NB01, "results", "ratios"):  # DALI's speed test (the harness)
        hardware = get.ratio(NB01, "ratios", "hw_gpu_over_cpu")
        default = get.ratio(NB01, "ratios", "gpu_over_cpu")
        nvjpg = get.value(NB01, "headline").get("hw_gpu_nvjpg_pct")
        busy = f" (NVJPG {nvjpg:.0f}% busy)" if nvjpg is not None else ""
        views = get.value(NB01, "parameters", "speed_images")
        one_over_default = ""  # the ratio behind the advice, where the record holds it
        if "hw_over_default" in get.value(NB01, "results", "ratios"):
            one = get.ratio(NB01, "ratios", "hw_over_default")
            one_over_default = f"; hw_decoder_load 1 was {versus(one, 'the default')}"
        return [
            f"decoding {views} JPEG views of the photographs at hw_decoder_load 1{busy}, the GPU was "
            f"{versus(hardware, f'CPU decoding at {threads} threads')}.",
            f"At DALI's default hw_decoder_load it was {versus(default, 'CPU decoding')}{one_over_default}.",
        ]
    # records before the suite's harness (2026-12-02 and earlier): a sweep of settings
    load = get.value(NB01, "headline", "best_hw_decoder_load")
    fixed = get.ratio(NB01, "ratios", "best_gpu_over_cpu")
    best = get.ratio(NB01, "ratios", "best_gpu_over_best_cpu")
    return [
        f"at hw_decoder_load {load:g} (its highest sweep median), GPU decoding of the photographs "
        f"was {versus(fixed, f'CPU decoding at {threads} threads')}.",
        f"Each at its best sweep setting, it was {versus(best, 'CPU decoding')}.",
    ]


def _capture_mode(get: Lookup) -> list[str]:
    ratio = get.ratio(NB02, "ratios", "capture_over_eager")
    return [f"training on MNIST, capture mode was {versus(ratio, 'eager mode')}, on the same batches."]


def _dynamic_at(get: Lookup, notebook: str, kind: str, rounds: str) -> str:
    """``at its best``, or where the record's pick of dynamic mode (``results.picks[kind]``) came
    from a tie, ``at its picked knobs (`<its name>`, a tie in <rounds>)``: the pick was the highest mean, not
    shown ahead of the others."""
    pick = get.value(notebook, "results", "picks", kind)
    return f"at its picked knobs (`{pick['best']}`, a tie in {rounds})" if pick.get("ties") else "at its best"


def _light_model(get: Lookup) -> list[str]:
    loader = get.ratio(NB03, "goals", "best dynamic / best DataLoader")
    same = get.ratio(NB03, "goals", "best dynamic / pipeline mode, same knobs")
    return [
        f"on MNIST, dynamic mode {_dynamic_at(get, NB03, 'dynamic', 'the confirmation')} was "
        f"{versus(loader, LOADER)}.",
        f"It was {versus(same, SAME_KNOBS)}.",
    ]


def _scaling_out(get: Lookup) -> list[str]:
    processes = get.value(NB04, "headline", "processes")
    weak = get.ratio(NB04, "goals", "weak scaling (all processes / 1 process)")
    record = get.record(NB04)
    where = (
        f"on {record.machine.get('gpu_count') or 1} GPUs"
        if record.has_gpu
        else f"on {record.machine.get('cpu_count', '?')} CPU cores, not GPU scaling"
    )
    sentences = [f"in samples/s, {processes} processes under torchrun were {versus(weak, 'one')}, {where}."]
    if "strong_scaling" in get.value(NB04, "results"):
        strong = get.ratio(NB04, "strong_scaling")
        sentences.append(f"At the same global batch they were {versus(strong, 'one process')}.")
    return sentences


def _photos(get: Lookup) -> list[str]:
    loader, same = (
        get.ratio(NB05, "goals", R50 + against)
        for against in ("best DataLoader", "pipeline mode, same knobs")
    )
    goal = float(get.value(NB05, "results", "goals", R50 + "ceiling", "goal"))  # its bounds shown beside it
    ceiling = get.ratio(NB05, "goals", R50 + "ceiling", against=(goal,))
    cpu = get.ratio(NB05, "goals", "cpu: DataLoader / dynamic mode, CPU time per image")
    size = get.value(NB05, "parameters", "image_size")
    at = _dynamic_at(get, NB05, "capture", "the knob selection")
    capture = "the best capture loop" if at == "at its best" else "the picked capture loop"
    return [
        f"feeding ResNet-50 ({size}px crops), dynamic mode {at} was {versus(loader, LOADER)} "
        f"and {versus(same, SAME_KNOBS)}, reaching {ceiling.shown_against(goal)} of training alone.",
        "Alone, PIL in the DataLoader used "
        + versus(cpu, capture, faster="more CPU time per image than", slower="less CPU time per image than")
        + ('; the capture loop decoded with `device="gpu"`.' if get.record(NB05).has_gpu else "."),
    ]


def _resuming(get: Lookup) -> list[str]:
    resume = get.value(NB06, "results", "resume")
    same = "bit-identically" if resume["bit_identical"] else "but not bit-identically"
    against = {
        "capture": "capture mode with one reader and no checkpoints",
        "eager + checkpoints": "eager mode with checkpoints",
    }
    resumable = "capture, epoch readers + checkpoints / "
    ratios = {key: get.ratio(NB06, "benchmark", "ratios", resumable + key) for key in against}
    words = [versus(ratios[key], other) for key, other in against.items()]
    steps = get.value(NB06, "results", "steps_per_epoch")
    sentences = [
        f"killed at step {resume['kill_step']}, training resumed from step {resume['resumed_from']} {same}.",
        f"Over epochs of {steps} steps, resumable capture mode (a new reader each epoch, "
        f"checkpoints) was {' and '.join(words)}.",
    ]
    rebuild = "capture, epoch readers / capture"  # a new reader each epoch, without checkpoints
    if rebuild in get.value(NB06, "results", "benchmark", "ratios"):
        sentences.append(
            f"A new reader each epoch without checkpoints was "
            f"{versus(get.ratio(NB06, 'benchmark', 'ratios', rebuild), 'capture mode with one reader')}."
        )
    return sentences


def _video(get: Lookup) -> list[str]:
    alone = get.ratio(NB07, "goals", "alone: best DALI / best PyAV DataLoader")
    fed = get.ratio(NB07, "goals", "fed: best DALI / training alone")
    codec, frames, gop = (get.value(NB07, "parameters", key) for key in ("codec", "clip_frames", "gop"))
    codec = {"h264": "H.264", "hevc": "HEVC"}.get(codec, codec.upper())
    best = get.value(NB07, "results", "picks", "best DALI")
    if "readers_of_way" in get.value(NB07, "results"):
        readers = get.value(NB07, "results", "readers_of_way", best)
    else:  # records before the suite's harness (2026-12-03 and earlier)
        readers = get.value(NB07, "results", "alone", "configs", best, "count")
    nvdec = get.value(NB07, "headline", "best_dali_nvdec_pct")
    busy = f" (NVDEC {nvdec:.0f}% busy)" if nvdec is not None else ""
    who = (
        f"{readers} DALI readers, one shard each{busy}, were" if readers > 1 else f"one DALI reader{busy} was"
    )
    parameters = get.value(NB07, "parameters")  # resolution None: the default of the device it ran on
    by_device = {"gpu": VIDEO_DEFAULTS["resolution"][0], "cpu": VIDEO_DEFAULTS["resolution"][1]}
    resolution = parameters.get("resolution") or by_device.get(parameters.get("device"))
    sizes = [(alone, f"at {resolution or 'its default size'}, gop {gop}")]
    sizes += [
        (get.ratio(NB07, "sweep", "dali_over_dataloader", size), f"at {size}, the same DataLoader")
        for size in get.value(NB07, "results", "sweep", "dali_over_dataloader")
    ]
    return [
        f"on {codec} clips of {frames} frames, loading alone, {who} "
        f"{versus_each(sizes, 'PyAV in ' + LOADER)}.",
        f"Feeding the 3D model, {'they' if readers > 1 else 'it'} reached {fed} of training alone.",
    ]


# --- one function per notebook: what to do, by its record's verdicts ----------------------------
# The bottom line opens with it (an imperative, no figures: the finding after it holds them), and
# links it to the notebook's recipe where there is one (tools.bottom_lines).


def _side(r: Ratio) -> str:
    """``faster`` (the whole interval above 1), ``slower`` (below) or ``same``."""
    return "faster" if r.low > 1 else "slower" if r.high < 1 else "same"


def _advise_decoding(get: Lookup) -> str:
    if not get.record(NB01).has_gpu:
        return "Read, shuffle, decode and augment a folder of photos with a few DALI calls"
    ratios = get.value(NB01, "results", "ratios")
    old = "hw_gpu_over_cpu" not in ratios  # records before the suite's harness: a sweep's best
    hardware = get.ratio(NB01, "ratios", "best_gpu_over_cpu" if old else "hw_gpu_over_cpu", shown=False)
    default = get.ratio(NB01, "ratios", "best_gpu_over_cpu" if old else "gpu_over_cpu", shown=False)
    if "hw_over_default" in ratios:  # hw_decoder_load=1 / the default, paired by round
        one_ahead = get.ratio(NB01, "ratios", "hw_over_default", shown=False).low > 1
    else:  # older records: where its interval lies above the default's
        one_ahead = hardware.low > default.high
    if _side(hardware) == "faster":
        return "Decode JPEGs on the GPU" + (" with `hw_decoder_load=1`" * one_ahead)
    return "Decode JPEGs with DALI's CPU threads: the hardware decoder did not pay off here"


def _advise_capture(get: Lookup) -> str:
    if _side(get.ratio(NB02, "ratios", "capture_over_eager", shown=False)) == "faster":
        return "Train with `next_epoch(capture=True)`"
    return "Keep eager mode: capture mode did not pay off here"


def _advise_light(get: Lookup) -> str:
    loader = _side(get.ratio(NB03, "goals", "best dynamic / best DataLoader", shown=False))
    same = _side(get.ratio(NB03, "goals", "best dynamic / pipeline mode, same knobs", shown=False))
    if loader != "faster":
        return "Feed a light model with the loader that measured fastest below"
    return "Feed a light model with DALI, " + ("in pipeline mode" if same == "slower" else "not a DataLoader")


def _advise_sharding(get: Lookup) -> str:
    return (
        "Give each rank a shard of the reader (`num_shards`, `shard_id`) and pad the shards alike "
        "(`pad_last_batch=True`)"
    )


def _advise_photos(get: Lookup) -> str:
    if _side(get.ratio(NB05, "goals", R50 + "best DataLoader", shown=False)) != "faster":
        return "Feed ResNet-50 from JPEGs with the loader that measured fastest below"
    return "Feed ResNet-50 from JPEGs with DALI, not a DataLoader"


def _advise_resuming(get: Lookup) -> str:
    if not get.value(NB06, "results", "resume")["bit_identical"]:
        return "Check your own resumption: this run's did not resume bit-identically"
    key = "capture, epoch readers + checkpoints / eager + checkpoints"
    resumable = get.ratio(NB06, "benchmark", "ratios", key, shown=False)
    mode = "a capture loop with a new reader each epoch" if _side(resumable) == "faster" else "an eager loop"
    return f"Resume {mode} from DALI's checkpoints inside one of your own"


def _advise_video(get: Lookup) -> str:
    alone = _side(get.ratio(NB07, "goals", "alone: best DALI / best PyAV DataLoader", shown=False))
    if alone == "faster":
        return "Feed video clips with one DALI reader per hardware decoder, one shard each, not PyAV"
    return "Feed video clips with the loader that measured fastest below"


ADVICE: dict[str, Callable[[Lookup], str]] = {
    NB01: _advise_decoding,
    NB02: _advise_capture,
    NB03: _advise_light,
    NB04: _advise_sharding,
    NB05: _advise_photos,
    NB06: _advise_resuming,
    NB07: _advise_video,
}


Write = Callable[[Lookup], list[str]]
# {notebook: its function}; the README's topic and the bullets' order are each notebook's metadata
# (``finding``: {"topic", "order"}, helpers.data.registry)
WRITERS: dict[str, Write] = {
    NB01: _getting_started,
    NB02: _capture_mode,
    NB03: _light_model,
    NB04: _scaling_out,
    NB05: _photos,
    NB06: _resuming,
    NB07: _video,
}


def _goals_only(notebook: str) -> Write:
    """What a notebook without a function of its own found: its goals' ratios, each with its
    target (the bottom line adds their verdicts)."""

    def write(get: Lookup) -> list[str]:
        goals = get.goals(notebook)
        if not goals:
            return ["its record holds no goals: its notebook shows what it measured."]
        said = [
            f"{name}, {get.ratio(notebook, 'goals', name)} (goal >= {goal['goal']:g}x)"
            for name, goal in goals.items()
        ]
        return [f"{'; '.join(said)}."]

    return write


def writers(results_dir: Path = RESULTS) -> dict[str, tuple[str, Write]]:
    """``{notebook: (topic, function)}`` for every notebook of the registry (the notebooks beside
    ``results_dir``), in the README's order: those whose metadata has a ``finding`` by its
    ``order``, under its ``topic``, then the others under their titles. A notebook's function is
    its own in :data:`WRITERS`, else its goals' ratios (:func:`_goals_only`): a new notebook needs
    no function here to be in the README and to get a bottom line."""
    entries = registry.notebooks(results_dir.parent)
    placed = sorted((e for e in entries if e.finding), key=lambda e: e.finding["order"])
    ordered = placed + [e for e in entries if not e.finding]
    return {
        e.slug: (e.finding.get("topic", e.title), WRITERS.get(e.slug, _goals_only(e.slug))) for e in ordered
    }


def _answer(get: Lookup) -> list[str]:
    """The one line a learner needs: whether dynamic mode pays off in place of a DataLoader and
    of pipeline mode, on a heavy model (05) and a light one (03), and by how much."""
    loaders = [
        (get.ratio(NB05, "goals", R50 + "best DataLoader"), "feeding ResNet-50 from JPEGs"),
        (get.ratio(NB03, "goals", "best dynamic / best DataLoader"), "on MNIST"),
    ]
    same = [
        (get.ratio(NB05, "goals", R50 + "pipeline mode, same knobs"), "on ResNet-50"),
        (get.ratio(NB03, "goals", "best dynamic / pipeline mode, same knobs"), "on MNIST"),
    ]
    pays = {
        "faster": "pays off in place of",
        "slower": "does not pay off in place of",
        "same": "is not distinguishable from",
    }
    # the second sentence names its reference once: "it is slower (0.98x [...]) on ResNet-50 and ..."
    plain = {"faster": "faster", "slower": "slower", "same": "not distinguishable"}
    against = versus_each(same, "", **plain)  # no reference: "slower (0.98x [...])"
    return [
        f"dynamic mode {versus_each(loaders, LOADER, **pays)}.",
        f"Against DALI's {SAME_KNOBS}, it is {against}.",
    ]


@dataclass(frozen=True)
class Finding:
    topic: str
    sentences: tuple[str, ...]
    notebooks: tuple[str, ...]
    records: tuple[str, ...]
    figures: tuple[Figure, ...]

    @property
    def text(self) -> str:
        return " ".join(self.sentences)

    def links(self, prefix: str = "") -> str:
        """Links to its notebooks and records: ``[05](notebooks/...), [x.json](results/x.json)``."""
        links = [f"[{n[:2]}]({prefix}notebooks/{n}.ipynb)" for n in self.notebooks]
        links += [f"[{name}]({prefix}results/{name})" for name in self.records]
        return ", ".join(links)

    def line(self, prefix: str = "") -> str:
        """The README's bullet: the topic, links to its notebooks and records, the sentences."""
        return f"- **{self.topic}** ({self.links(prefix)}): {self.text}"


def find(topic: str, write: Write, chosen: dict[str, Record]) -> Finding:
    """The finding that ``write`` makes from the chosen records, with what it read."""
    get = Lookup(chosen)
    sentences = tuple(write(get))
    names = tuple(dict.fromkeys(chosen[n].name for n in get.notebooks))
    return Finding(topic, sentences, tuple(get.notebooks), names, tuple(get.figures))


def findings(results_dir: Path = RESULTS) -> list[Finding]:
    """A finding per notebook of the registry that a record holds (:func:`writers`: in the
    README's order), written from the records of ``results_dir``; a notebook with a function of its
    own in :data:`WRITERS` and no record is an error that names it."""
    chosen = newest_gpu_first(results_dir)
    return [
        find(topic, write, chosen)
        for name, (topic, write) in writers(results_dir).items()
        if name in WRITERS or name in chosen
    ]


def answer(results_dir: Path = RESULTS) -> Finding:
    return find("In short", _answer, newest_gpu_first(results_dir))


def render_findings(results_dir: Path = RESULTS, prefix: str = "") -> str:
    """The README's block (Markdown): the answer, where the figures come from, then a bullet per
    notebook."""
    found = findings(results_dir)
    short = answer(results_dir)
    chosen = newest_gpu_first(results_dir)
    used = {chosen[n].name: chosen[n] for f in found for n in f.notebooks}
    machines: dict[str, list[str]] = {}
    for name, record in used.items():
        machines.setdefault(machine_heading(record.machine), []).append(f"[{name}]({prefix}results/{name})")
    sources = "; ".join(f"{', '.join(links)} ({machine})" for machine, links in machines.items())
    first = f"**{short.topic}:** {short.text}"
    how = (
        'Ratios: the first-named rate over the other, 95% interval in brackets; "faster" or '
        '"slower" only when the interval excludes 1. Records: each notebook\'s newest with a GPU, '
        f"else without: {sources}."
    )
    outro = "Generated by `python -m tools.results_table`."
    return "\n\n".join([first, how, "\n".join(f.line(prefix) for f in found), outro])
