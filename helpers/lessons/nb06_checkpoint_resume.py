"""Notebook 06's machinery, kept out of its lessons: the set-up (the parameters checked, the data
copied), the training script's runs (in the kernel, launched and killed with ``SIGKILL``,
resumed), the bit-for-bit comparison with the uninterrupted run, the damaged and incompatible
checkpoints, the costs, the sentences of its conclusion and its record, built in one call.

DALI's checkpoint calls and the script's save, restore and epoch loop stay where the learner sees
them: in the notebook and in ``notebooks/scripts/train_resumable.py``, which the notebook shows.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import math
import os
import random
import re
import shutil
import signal
import sys
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from types import ModuleType
from typing import Any

from helpers.data.data_sources import locate_data
from helpers.data.lmdb_subset import first_records
from helpers.data.paths import REPO_ROOT
from helpers.data.paths import relative
from helpers.data.paths import work_folder
from helpers.toolkit import checkpointing
from helpers.toolkit.benchmarking import Ratio
from helpers.toolkit.benchmarking import Record
from helpers.toolkit.benchmarking import summarize
from helpers.toolkit.benchmarking import versus
from helpers.toolkit.devices import gpu_count
from helpers.toolkit.devices import resolve_device
from helpers.toolkit.distributed import UsageError
from helpers.toolkit.hardware import Sampler
from helpers.toolkit.harness import Harness
from helpers.toolkit.harness import Way
from helpers.toolkit.parameters import ParameterError
from helpers.toolkit.parameters import at_least
from helpers.toolkit.parameters import positive_int
from helpers.toolkit.parameters import reject_unknown_parameters
from helpers.toolkit.torchrun import Launch
from helpers.toolkit.torchrun import LaunchError
from helpers.toolkit.torchrun import display_command
from helpers.toolkit.torchrun import run_launches
from helpers.toolkit.torchrun import run_torchrun

NOTEBOOK = "06-checkpoint-resume.ipynb"
SCRIPT = REPO_ROOT / "notebooks" / "scripts" / "train_resumable.py"
STEP_LINE = re.compile(r"rank (\d+) pid (\d+) step (\d+)")
SAID = re.compile(r"(eager|capture|capture-plain): |resum|skipped |error ")  # the script's own lines
# what the benchmark compares: its label, and the two ways of the ratio (each printed by the cost report and
# kept in the record's ratios)
COMPARISONS = {
    "capture, epoch readers / capture": ("capture, epoch readers", "capture"),
    "capture, epoch readers + checkpoints / capture": ("capture, epoch readers + checkpoints", "capture"),
    "capture, epoch readers + checkpoints / capture, epoch readers": (
        "capture, epoch readers + checkpoints",
        "capture, epoch readers",
    ),
    "capture, epoch readers + checkpoints / eager + checkpoints": (
        "capture, epoch readers + checkpoints",
        "eager + checkpoints",
    ),
    "eager + checkpoints / eager": ("eager + checkpoints", "eager"),
}
# the record's headline ratios, each of its comparison (the checkpoints within the epoch readers' loop
# are in the record's ratios only: records before it lack them)
HEADLINE_RATIOS = {
    "epoch_readers_over_capture": "capture, epoch readers / capture",
    "resumable_capture_over_capture": "capture, epoch readers + checkpoints / capture",
    "resumable_capture_over_eager_checkpoints": "capture, epoch readers + checkpoints / eager + checkpoints",
    "eager_checkpoints_over_eager": "eager + checkpoints / eager",
}


def load_script() -> ModuleType:
    """``train_resumable.py``, imported as a module: the notebook runs its training in the kernel
    too, and shows its code."""
    if "train_resumable" not in sys.modules:
        spec = importlib.util.spec_from_file_location("train_resumable", SCRIPT)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["train_resumable"] = module
        spec.loader.exec_module(module)
    return sys.modules["train_resumable"]


@dataclass(frozen=True)
class Setup:
    """The notebook's parameters, checked and resolved for this machine (:func:`set_up`), and what
    follows from them; read by attribute. :attr:`parameters` is what the record keeps."""

    data_path: Path  # the LMDB the records are copied from
    train_path: Path  # the first ``records`` records, in the working folder
    workdir: Path  # build/nb06, removed at the end
    device: str  # "cpu" or "gpu": where the single-process training runs
    processes: int  # ranks in the torchrun part
    records: int
    batch_size: int
    epochs: int
    every: int  # steps between checkpoints
    keep: int  # checkpoints kept
    learning_rate: float
    trials: int
    min_seconds: float | None  # a benchmark trial's least duration; None: the harness's default
    num_threads: int
    seed: int
    launch_timeout: float
    results_dir: str | Path | None
    gpus: int  # the GPUs DALI finds
    dist_device: str  # where the torchrun part runs: the GPUs if there are enough, else CPUs
    pick: random.Random = field(compare=False)  # chooses the steps at which processes are killed

    @property
    def steps_per_epoch(self) -> int:
        return math.ceil(self.records / self.batch_size)

    @property
    def total_steps(self) -> int:
        return self.epochs * self.steps_per_epoch

    @property
    def rank_steps(self) -> int:
        """One rank's steps under torchrun (each rank reads its shard of the records)."""
        return self.epochs * math.ceil(math.ceil(self.records / self.processes) / self.batch_size)

    @property
    def rank_threads(self) -> int:
        """DALI's CPU threads per rank under torchrun: ranks on CPUs share ``num_threads``, ranks
        on GPUs have them each."""
        return max(1, self.num_threads // self.processes) if self.dist_device == "cpu" else self.num_threads

    @property
    def parameters(self) -> dict[str, Any]:
        """The parameters as the record keeps them: resolved (the device, the records), the data
        path relative to the checkout."""
        return {
            "data_path": relative(self.data_path),
            "device": self.device,
            "processes": self.processes,
            "records": self.records,
            "batch_size": self.batch_size,
            "epochs": self.epochs,
            "every": self.every,
            "keep": self.keep,
            "learning_rate": self.learning_rate,
            "trials": self.trials,
            "num_threads": self.num_threads,
            "seed": self.seed,
        }


def set_up(
    history: Sequence[str],
    *,
    data_path: str | Path | None,
    device: str,
    processes: int,
    records: int | None,
    batch_size: int,
    epochs: int,
    every: int,
    keep: int,
    learning_rate: float,
    trials: int,
    min_seconds: float | None,
    num_threads: int,
    seed: int,
    launch_timeout: float,
    results_dir: str | Path | None,
) -> Setup:
    """The notebook's parameters checked (a bad one raises ParameterError by name), the first
    ``records`` records copied into ``build/nb06`` (removed at the end); prints what the runs will
    do. ``history`` is IPython's ``In`` (an unknown parameter that papermill injected is refused
    by name)."""
    reject_unknown_parameters(history, NOTEBOOK)
    device = resolve_device(device)
    at_least(
        {
            "processes": processes,
            "epochs": epochs,
            "batch_size": batch_size,
            "every": every,
            "keep": keep,
            "trials": trials,
            "num_threads": num_threads,
            "launch_timeout": launch_timeout,
        },
        {
            "processes": (2, "the torchrun part kills one of several processes"),
            "epochs": (2, "the first epoch of each benchmark trial is an untimed warm-up"),
            **dict.fromkeys(("batch_size", "every", "keep", "trials", "num_threads", "launch_timeout"), 1),
        },
    )
    records = positive_int("records", records or (16384 if device == "gpu" else 4096))
    steps_per_epoch = math.ceil(records / batch_size)
    rank_steps = epochs * math.ceil(math.ceil(records / processes) / batch_size)
    fewest = min(epochs * steps_per_epoch, rank_steps)
    if fewest < 2 * every + 3:
        raise ParameterError(
            f"parameter every={every} is too large for {fewest} steps: the kills below need two "
            f"checkpoints before them. Use every <= {(fewest - 3) // 2}, or more records or epochs."
        )
    source = Path(data_path or locate_data(verbose=False).mnist_training)
    gpus = gpu_count()
    workdir = work_folder("nb06")  # build/nb06, emptied now
    setup = Setup(
        data_path=source,
        train_path=first_records(source, workdir / "training", records),
        workdir=workdir,
        device=device,
        processes=processes,
        records=records,
        batch_size=batch_size,
        epochs=epochs,
        every=every,
        keep=keep,
        learning_rate=learning_rate,
        trials=trials,
        min_seconds=min_seconds,
        num_threads=num_threads,
        seed=seed,
        launch_timeout=launch_timeout,
        results_dir=results_dir,
        gpus=gpus,
        dist_device=device if device == "cpu" or gpus >= processes else "cpu",
        pick=random.Random(seed),
    )
    print(
        f"training on the first {records:,} records of {relative(source)} on {device}: "
        f"{steps_per_epoch} steps of {batch_size} per epoch, {setup.total_steps} steps in {epochs} "
        f"epochs, a checkpoint every {every} steps, the last {keep} kept"
    )
    return setup


def error_of(action: Callable[[], Any]) -> str:
    """What ``action`` raises, as ``"Type: message"``; ``"no error"`` if it raises nothing."""
    try:
        action()
    except Exception as error:  # what DALI raises, named in the output
        return f"{type(error).__name__}: {error}"
    return "no error"


class Killer:
    """Called with every line the launched processes print: sends ``SIGKILL`` to the process of
    ``rank`` as soon as it reports step ``step`` (the script prints ``rank R pid P step S``)."""

    def __init__(self, step: int, rank: int = 0, kill: Callable[[int, int], None] = os.kill) -> None:
        self.step, self.rank, self.kill = step, rank, kill
        self.killed: int | None = None  # the step reported when the signal was sent
        self.last_seen = 0

    def __call__(self, line: str) -> None:
        found = STEP_LINE.fullmatch(line)
        if not found or int(found[1]) != self.rank:
            return
        self.last_seen = int(found[3])
        if self.killed is None and self.last_seen >= self.step:
            self.kill(int(found[2]), signal.SIGKILL)
            self.killed = self.last_seen


def quote(lines: Sequence[str]) -> list[str]:
    """What the script said: not its per-step lines, nor torchrun's report of a failure."""
    return [f"   | {line}" for line in lines if SAID.match(line)]


@dataclass
class Runs:
    """The training script's runs with the notebook's parameters (``setup``): ``args`` builds a
    command line, ``in_kernel`` runs the training in this kernel, ``killed`` launches it and kills
    it, ``resumed`` launches it with ``--resume``, ``attempt`` tries a resume that may be refused."""

    script: ModuleType
    setup: Setup
    say: Callable[[str], None] = print

    def args(
        self,
        name: str,
        *,
        mode: str = "eager",
        folder: Path | None = None,
        on: str | None = None,
        every: int | None = None,
        batch: int | None = None,
        data: Path | None = None,
        threads: int | None = None,
        epochs: int | None = None,
    ) -> list[str]:
        """The script's command line for a run called ``name``: its results in
        ``build/nb06/<name>.json``, its checkpoints (unless ``every`` is 0) in ``folder``, by
        default ``build/nb06/<name>``."""
        s = self.setup
        every = s.every if every is None else every
        return [
            "--data",
            str(data or s.train_path),
            "--mode",
            mode,
            "--device",
            on or s.device,
            "--batch-size",
            str(batch or s.batch_size),
            "--epochs",
            str(epochs or s.epochs),
            "--every",
            str(every),
            "--keep",
            str(s.keep),
            "--lr",
            str(s.learning_rate),
            "--seed",
            str(s.seed),
            "--num-threads",
            str(threads or s.num_threads),
            "--out",
            str(s.workdir / f"{name}.json"),
        ] + (["--checkpoints", str(folder or s.workdir / name)] if every else [])

    def in_kernel(self, args: Sequence[str]) -> dict[str, Any]:
        """The script's training in this kernel, its output left out."""
        with contextlib.redirect_stdout(io.StringIO()):
            return self.script.run([*args, "--quiet"])

    def _launch(self, args: Sequence[str], nproc: int, on_line: Callable[[str], None] | None) -> Launch:
        timeout = self.setup.launch_timeout
        if nproc:
            return run_torchrun(SCRIPT, args, nproc, timeout=timeout, echo=False, on_line=on_line)
        return run_launches(
            [[sys.executable, str(SCRIPT), *args]], timeout=timeout, echo=False, on_line=on_line
        )[0]

    def _show(self, launch: Launch) -> None:
        self.say(f"$ {display_command(launch.command)}")
        for line in quote(launch.lines):
            self.say(line)

    def killed(
        self, args: Sequence[str], step: int, *, nproc: int = 0, rank: int = 0
    ) -> tuple[Killer, Launch]:
        """Launch the script (under torchrun with ``nproc`` processes) and ``SIGKILL`` the process
        of ``rank`` when it reports ``step``. Raises if the launch ends without being killed."""
        killer = Killer(step, rank)
        try:
            self._launch(args, nproc, killer)
        except LaunchError as error:  # a killed process fails its launch
            launch = error.launches[0]
        else:
            raise AssertionError(f"the launch reached its end before step {step}: it was not killed")
        self._show(launch)
        if killer.killed is None:
            raise AssertionError(f"the launch failed before step {step}: {launch.root_cause}")
        return killer, launch

    def launched(self, args: Sequence[str], *, nproc: int = 0) -> dict[str, Any]:
        """Launch the script (under torchrun with ``nproc`` processes) to its end; returns its
        results (the ``--out`` file)."""
        launch = self._launch([*args, "--quiet"], nproc, None)
        self._show(launch)
        return json.loads(Path(args[list(args).index("--out") + 1]).read_text())

    def resumed(self, args: Sequence[str], *, nproc: int = 0) -> dict[str, Any]:
        """Launch the script with ``--resume``; returns its results."""
        return self.launched([*args, "--resume"], nproc=nproc)

    def attempt(self, what: str, checkpoints: Path, args: Sequence[str]) -> dict[str, Any]:
        """A resume in this kernel that may be refused (the script raises ``UsageError`` with its
        message); a refusal must leave every file of ``checkpoints`` as it was."""
        before = checksums(checkpoints)
        try:
            result, message = self.in_kernel([*args, "--resume"]), None
        except UsageError as error:
            result, message = None, str(error)
        unchanged = checksums(checkpoints) == before if message else None
        said = (
            f"{message}\n    files unchanged: {unchanged}"
            if message
            else (
                f"resumed from step {result['resumed']['step']}; " + "; ".join(result["resumed"]["skipped"])
            )
        )
        self.say(f"{what}:\n    {said}")
        return {
            "refused": message is not None,
            "message": message,
            "files_unchanged": unchanged,
            "result": result,
        }

    def weights(self, name: str) -> Path:
        return self.setup.workdir / f"{name}.weights.pt"


def checksums(root: Path) -> dict[str, str]:
    """Every file under ``root`` with its SHA-256 (nothing for a folder that does not exist)."""
    if not root.exists():
        return {}
    return {
        str(p.relative_to(root)): checkpointing.file_sha256(p) for p in sorted(root.rglob("*")) if p.is_file()
    }


def folder(path: Path) -> list[str]:
    return sorted(p.name for p in path.iterdir())


def compare(
    reference: Mapping[str, Any], resumed: Mapping[str, Any], ref_weights: Path, res_weights: Path
) -> dict[str, Any]:
    """The loss of every step of every rank, and the final weights, bit for bit."""
    import torch

    a, b = torch.load(ref_weights, map_location="cpu"), torch.load(res_weights, map_location="cpu")
    same_losses = reference["losses"] == resumed["losses"]
    same_weights = (
        all(torch.equal(a[k], b[k]) for k in a) and reference["weights_sha256"] == resumed["weights_sha256"]
    )
    return {
        "losses_identical": same_losses,
        "weights_identical": same_weights,
        "bit_identical": same_losses and same_weights,
        "largest_loss_gap": max(
            abs(x - y)
            for ra, rb in zip(reference["losses"], resumed["losses"], strict=False)
            for x, y in zip(ra, rb, strict=False)
        ),  # lengths differ: not identical
        "largest_weight_gap": max(float((a[k].double() - b[k].double()).abs().max()) for k in a),
        "steps_compared": sum(len(r) for r in resumed["losses"]),
    }


def resume_line(check: Mapping[str, Any], what: str, where: str) -> str:
    """Whether a resumed run matched the uninterrupted one, and if not by how much."""
    if check["bit_identical"]:
        return f"{what} ({where}): bit-identical to the uninterrupted run"
    return (
        f"{what} ({where}): NOT bit-identical: largest loss difference {check['largest_loss_gap']:.2e}, "
        f"largest weight difference {check['largest_weight_gap']:.2e}"
    )


def check_resume(check: Mapping[str, Any], what: str, where: str) -> None:
    """Print whether the resume was exact; on the CPU nothing but bit-identical will do (on a GPU
    the record keeps the gaps)."""
    print(resume_line(check, what, where))
    if where == "cpu":
        assert check["bit_identical"], f"{what}: the resumed run differs from the uninterrupted one: {check}"


def loss_chart(reference: Mapping[str, Any], resumed: Mapping[str, Any], killed: int) -> Any:
    """The uninterrupted run's loss per step, the resumed process's on top, the kill and the
    checkpoint used marked."""
    import numpy as np

    from helpers.toolkit.plots import legend_below
    from helpers.toolkit.plots import new_chart

    at = resumed["resumed"]["step"]
    steps = np.arange(1, len(reference["losses"][0]) + 1)
    fig, ax = new_chart(9.0, 3.6)
    ax.plot(steps, reference["losses"][0], color="tab:gray", lw=3, alpha=0.5, label="uninterrupted")
    ax.plot(steps[at:], resumed["losses"][0][at:], ".", ms=3, color="tab:blue", label="resumed process")
    ax.axvline(killed, color="tab:red", ls="--", label=f"SIGKILL (step {killed})")
    ax.axvline(at, color="tab:green", ls=":", label=f"checkpoint used (step {at})")
    ax.set_xlabel("step")
    ax.set_ylabel("training loss (one batch)")
    ax.set_title("Eager mode: the resumed process continues the uninterrupted run's curve")
    legend_below(fig, *ax.get_legend_handles_labels(), columns=4)
    same = np.array_equal(np.asarray(reference["losses"][0][at:]), np.asarray(resumed["losses"][0][at:]))
    fig.alt = (
        f"Line chart of the training loss at each of {len(steps):,} steps: the uninterrupted run's, and the "
        f"resumed process's from the checkpoint of step {at} on, after a SIGKILL at step {killed}. The "
        f"resumed process's losses {'are the same as' if same else 'differ from'} the uninterrupted run's."
    )
    return fig


def damage(runs: Runs, copy: Path, reference: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The damaged, missing and incompatible checkpoints, made from ``copy`` (a copy of the killed
    run's checkpoints): each refused with a message and its files unchanged, except a truncated
    newest checkpoint, which is skipped for the previous one. Returns the cases and the comparison
    of that fallback resume with the uninterrupted ``reference``."""
    workdir, newest = runs.setup.workdir, checkpointing.checkpoints(copy)[0][1]
    cases: dict[str, Any] = {}
    truncated = workdir / "truncated"
    shutil.copytree(copy, truncated)
    part = truncated / newest.name / "rank-0.pt"
    part.write_bytes(part.read_bytes()[: part.stat().st_size // 2])
    cases["truncated_newest"] = runs.attempt(
        "newest checkpoint truncated", truncated, runs.args("fallback", folder=truncated)
    )
    cases["truncated_newest"]["left"] = folder(truncated)
    runs.say(f"    left after the resumed run: {folder(truncated)}")
    fallback = cases["truncated_newest"].pop("result")
    corrupt = workdir / "corrupt"
    shutil.copytree(copy, corrupt)
    for _, path in checkpointing.checkpoints(corrupt):
        (path / "model.pt").write_bytes(bytes(b ^ 0xFF for b in (path / "model.pt").read_bytes()))
    other_dali = workdir / "other-dali"
    shutil.copytree(copy, other_dali)
    for _, path in checkpointing.checkpoints(other_dali):
        manifest = json.loads((path / checkpointing.MANIFEST).read_text())
        manifest["compat"]["dali"] = "2.3.0"
        (path / checkpointing.MANIFEST).write_text(json.dumps(manifest))
    other_data = first_records(runs.setup.train_path, workdir / "other-data", runs.setup.records // 2)
    refused = {
        "all_corrupt": ("every checkpoint corrupt", corrupt, {}),
        "missing": ("checkpoint folder missing", workdir / "no-such-folder", {}),
        "other_batch_size": ("another batch size", copy, {"batch": runs.setup.batch_size // 2}),
        "other_data": ("another data set", copy, {"data": other_data}),
        "other_dali_version": ("another DALI version", other_dali, {}),
    }
    for name, (what, where, changes) in refused.items():
        cases[name] = runs.attempt(what, where, runs.args("x", folder=where, **changes))
        assert cases[name]["refused"] and cases[name]["files_unchanged"] is not False, name
    assert not (workdir / "x.json").exists(), "a refused resume wrote results"
    assert not cases["truncated_newest"]["refused"] and fallback["resumed"]["skipped"]
    return cases, {
        **compare(reference, fallback, runs.weights("eager-ref"), runs.weights("fallback")),
        "skipped": fallback["resumed"]["skipped"],
        "resumed_from": fallback["resumed"]["step"],
        "resumed": fallback["resumed"],
    }


def kill_step_inside_an_epoch(setup: Setup) -> int:
    """A step whose newest checkpoint lies inside an epoch (the resume then takes the eager path
    for the rest of that epoch), chosen at random."""
    every = setup.every
    inside = [
        s for s in range(2 * every + 1, setup.total_steps - 1) if (s // every * every) % setup.steps_per_epoch
    ]
    return setup.pick.choice(inside or range(2 * every + 1, setup.total_steps - 1))


def kill_step_before_the_last_epoch(setup: Setup) -> int:
    """A rank's step whose newest checkpoint lies before the last epoch (the resumed run then
    crosses an epoch boundary), chosen at random."""
    every, epochs = setup.every, setup.epochs
    per_epoch = setup.rank_steps // epochs
    before = [
        s for s in range(2 * every + 1, setup.rank_steps - 1) if s // every * every < (epochs - 1) * per_epoch
    ]
    return setup.pick.choice(before or range(2 * every + 1, setup.rank_steps - 1))


@dataclass(frozen=True)
class Kill:
    """A training killed with ``SIGKILL`` and resumed (:func:`eager_kill`, :func:`capture_kill`):
    the uninterrupted run's results (``reference``), the step ``chosen`` for the kill, the
    :class:`Killer` (the step it saw), the killed ``launch``, the ``copy`` of its checkpoints taken
    before the resume (None where none is taken), the ``resumed`` run's results and their
    comparison with the reference (``check``, :func:`compare`)."""

    reference: dict[str, Any]
    chosen: int
    killer: Killer
    launch: Launch
    copy: Path | None
    resumed: dict[str, Any]
    check: dict[str, Any]


@dataclass(frozen=True)
class TorchrunKill(Kill):
    """A kill under torchrun (:func:`torchrun_kill`), and what the newest checkpoint before its
    resume held: its files (``parts``), each rank's reader state (``states``), its size in bytes;
    the epoch boundaries that the resumed run ``crossed``; the ``device`` the ranks ran on."""

    device: str
    parts: list[str]
    states: list[str]
    checkpoint_bytes: int
    crossed: int


def eager_kill(runs: Runs) -> Kill:
    """Notebook 06's real kill in eager mode: the training uninterrupted in this kernel, for
    reference; launched and sent ``SIGKILL`` at a step drawn from ``setup.pick`` (after two
    checkpoints, before the last step); its checkpoints copied to ``eager-copy`` (damaged on
    purpose later); resumed in a new process with ``--resume``. Says each run, what the kill left
    and whether the resume was bit-identical (:func:`check_resume`: on the CPU it must be)."""
    s = runs.setup
    reference = runs.in_kernel(runs.args("eager-ref", every=0))
    runs.say(f"uninterrupted: {reference['steps']} steps, last loss {reference['losses'][0][-1]:.4f}")
    chosen = s.pick.randint(2 * s.every + 1, s.total_steps - 2)
    killer, launch = runs.killed(runs.args("eager"), chosen)
    runs.say(
        f"chosen step {chosen}: SIGKILL sent when the process reported step {killer.killed}; exit "
        f"status {launch.returncode}, minus the number of the signal that ended it"
    )
    runs.say(f"left in its checkpoint folder: {folder(s.workdir / 'eager')}")
    copy = shutil.copytree(s.workdir / "eager", s.workdir / "eager-copy")
    resumed = runs.resumed(runs.args("eager"))
    check = compare(reference, resumed, runs.weights("eager-ref"), runs.weights("eager"))
    at = resumed["resumed"]["step"]
    runs.say(
        f"resumed from step {at}: {killer.killed - at} step(s) done again; loss of all "
        f"{check['steps_compared']} steps identical: {check['losses_identical']}; final weights "
        f"identical: {check['weights_identical']}"
    )
    check_resume(check, "eager mode, killed and resumed", s.device)
    return Kill(reference, chosen, killer, launch, copy, resumed, check)


def capture_kill(runs: Runs) -> Kill:
    """The same three runs in capture mode (a reader per epoch): uninterrupted in this kernel,
    killed at a step whose newest checkpoint lies inside an epoch
    (:func:`kill_step_inside_an_epoch`), resumed. Says where the resume began in its epoch, the
    batches it skipped, whether it was bit-identical, and what the reference run's capture loops
    captured (their ``CaptureGuard``)."""
    s = runs.setup
    reference = runs.in_kernel(runs.args("capture-ref", mode="capture", every=0))
    chosen = kill_step_inside_an_epoch(s)
    killer, launch = runs.killed(runs.args("capture", mode="capture"), chosen)
    runs.say(f"SIGKILL at step {killer.killed}; left: {folder(s.workdir / 'capture')}")
    resumed = runs.resumed(runs.args("capture", mode="capture"))
    check = compare(reference, resumed, runs.weights("capture-ref"), runs.weights("capture"))
    at = resumed["resumed"]["step"]
    runs.say(
        f"resumed from step {at}, step {at % s.steps_per_epoch} of epoch {at // s.steps_per_epoch} "
        "(both counted from 0): "
        f"{resumed['fast_forward_batches']} batch(es) skipped (read, not decoded), the rest of the "
        "epoch eager, then capture mode"
    )
    check_resume(check, "capture mode, killed and resumed", s.device)
    runs.say("captured (CaptureGuard in the script): " + ", ".join(reference["captured_operators"]))
    return Kill(reference, chosen, killer, launch, None, resumed, check)


def boundaries_crossed(start: int, end: int, per_epoch: int) -> int:
    """The epoch boundaries that a run crosses from step ``start`` (the steps done) to step
    ``end``, in epochs of ``per_epoch`` steps: the epoch of its last step less that of ``start``."""
    return (end - 1) // per_epoch - start // per_epoch


def torchrun_kill(runs: Runs) -> TorchrunKill:
    """The eager training under torchrun, ``setup.processes`` ranks (on the GPUs if there are
    enough, else on CPUs, which it says): uninterrupted; launched and the last rank sent
    ``SIGKILL`` at a step whose newest checkpoint lies before the last epoch
    (:func:`kill_step_before_the_last_epoch`); the newest checkpoint's parts and reader states
    read, the checkpoints copied to ``dist-copy`` (handed to a single process later); resumed on
    all ranks. Says each, the epoch boundaries the resumed run crossed and whether it was
    bit-identical."""
    s = runs.setup
    processes, on = s.processes, s.dist_device
    if on != s.device:
        runs.say(
            f"{processes} GPUs are needed for the GPU version of this part; DALI finds {s.gpus}. "
            f"The ranks run as {processes} CPU processes (gloo) instead."
        )
    args = {name: runs.args(f"dist-{name}", on=on, threads=s.rank_threads) for name in ("ref", "run")}
    runs.say("uninterrupted:")
    reference = runs.launched(args["ref"], nproc=processes)
    chosen = kill_step_before_the_last_epoch(s)
    killer, launch = runs.killed(args["run"], chosen, nproc=processes, rank=processes - 1)
    runs.say(f"killed: rank {processes - 1} at step {killer.killed}; torchrun: {launch.root_cause}")
    newest = checkpointing.checkpoints(s.workdir / "dist-run")[0][1]
    parts, states = folder(newest), reader_states(runs.script, newest, processes)
    size = sum(p.stat().st_size for p in newest.iterdir())
    runs.say(f"{newest.name}: parts {parts}; {len(set(states))} different reader states of {processes} ranks")
    copy = shutil.copytree(s.workdir / "dist-run", s.workdir / "dist-copy")
    resumed = runs.resumed(args["run"], nproc=processes)
    check = compare(reference, resumed, runs.weights("dist-ref"), runs.weights("dist-run"))
    at = resumed["resumed"]["step"]
    crossed = boundaries_crossed(at, s.rank_steps, resumed["steps_per_epoch"])
    runs.say(
        f"the resumed run went from step {at} to {s.rank_steps}, across {crossed} epoch "
        f"boundar{'y' if crossed == 1 else 'ies'}"
    )
    check_resume(check, f"{processes} ranks, rank {processes - 1} killed, all resumed", on)
    return TorchrunKill(
        reference, chosen, killer, launch, copy, resumed, check, on, parts, states, size, crossed
    )


# the benchmark's ways: the way's name, its run's name (its files in build/nb06), the script's mode,
# and whether it writes checkpoints (every `every` steps)
BENCH_WAYS = (
    ("eager", "bench-eager", "eager", False),
    ("eager + checkpoints", "bench-eager-ckpt", "eager", True),
    ("capture, epoch readers", "bench-epochs", "capture", False),
    ("capture, epoch readers + checkpoints", "bench-epochs-ckpt", "capture", True),
    ("capture", "bench-capture", "capture-plain", False),
)


def cost_harness(runs: Runs) -> tuple[Harness, list[Way]]:
    """The benchmark's five ways (``BENCH_WAYS``), each a loader of the script's ``Trainer`` in this
    kernel (rank 0 of 1, quiet, more epochs than the trials run: each runs whole epochs until it
    lasts the harness's least duration), and the suite's harness that times them in samples. The
    trainers take turns and share one ``EvalContext``: DALI's eager reader keeps its context
    entered between batches."""
    import nvidia.dali.experimental.dynamic as ndd
    import torch

    s, script = runs.setup, runs.script
    shared = ndd.EvalContext(num_threads=s.num_threads, device_id=0 if s.device == "gpu" else None)

    def trainer_for(name: str, mode: str, every_steps: int) -> Callable[[], Any]:
        args = script.parse_args([*runs.args(name, mode=mode, every=every_steps, epochs=1000), "--quiet"])
        return lambda: script.Trainer(args, rank=0, local_rank=0, world=1, ctx=shared)

    ways = [
        Way(label, trainer_for(name, mode, s.every if saves else 0))
        for label, name, mode, saves in BENCH_WAYS
    ]
    harness = Harness(
        unit="samples",
        synchronize=torch.cuda.synchronize if s.device == "gpu" else None,
        sampler=Sampler(),
        min_seconds=s.min_seconds,
        gpu=s.device == "gpu",
    )
    return harness, ways


def cost_report(
    bench: Any,
    harness: Harness,
    setup: Setup,
    restores: Mapping[str, Mapping[str, Any]],
    *,
    checkpoint_bytes: int,
) -> tuple[dict[str, Any], Any]:
    """The benchmark's ratios (``COMPARISONS``, paired by round), what a checkpoint costs
    (:func:`costs`: the writes of the ``eager + checkpoints`` trainer, the ``restores``, the
    share of the steps) said by :func:`cost_lines`, and the chart of every way's throughput.
    Returns the costs and the chart."""
    from helpers.toolkit.plots import interval_bars

    for label, (a, b) in COMPARISONS.items():
        print(f"{label}: {versus(bench.ratio(a, b), 'the second')}")
    cost = costs(
        bench,
        harness.loaders["eager + checkpoints"].save_seconds,
        restores,
        every=setup.every,
        batch_size=setup.batch_size,
        checkpoint_bytes=checkpoint_bytes,
    )
    print("\n".join(cost_lines(cost, bench.ratio("eager + checkpoints", "eager"), setup.processes)))
    chart = interval_bars(
        {w.name: bench.rates(w.name) for w in bench.ways},
        xlabel="samples / s",
        title=f"Training throughput on {setup.device}",
        reference="capture",
    )
    return cost, chart


def ratio_record(r: Ratio) -> dict[str, Any]:
    """A ratio as the record keeps it, with the words of :func:`helpers.toolkit.benchmarking.versus`."""
    return {**r.as_record(), "verdict": versus(r, "the second").split(" (")[0]}


def costs(
    bench: Any,
    writes: Sequence[float],
    resumes: Mapping[str, Mapping[str, Any]],
    *,
    every: int,
    batch_size: int,
    checkpoint_bytes: int,
) -> dict[str, Any]:
    """What a checkpoint costs: the time to write one (``writes``, seconds, from the ``eager +
    checkpoints`` trainer); for each resume (``resumes``: the script's ``resumed`` results by
    name) the time its ``restore()`` took and the time until its first step was done (DALI
    applies a reader's state at the reader's first batch); and what a checkpoint every ``every``
    steps adds to those steps, estimated from the median write and eager's mean step (from its
    geometric-mean rate; the ratio ``eager + checkpoints / eager`` measures it directly)."""
    step_s = batch_size / bench.estimate("eager")[0]
    write = summarize([w * 1000 for w in writes])
    return {
        "write_ms": write,
        "restore_ms": summarize([r["seconds"] * 1000 for r in resumes.values()]),
        "resumes": {
            name: {
                "from_step": r["step"],
                "restore_ms": r["seconds"] * 1000,
                "to_first_step_ms": r["to_first_step_seconds"] * 1000,
            }
            for name, r in resumes.items()
        },
        "step_ms": step_s * 1000,
        "share_of_steps": write["median"] / 1000 / (every * step_s),
        "every": every,
        "bytes": checkpoint_bytes,
    }


def cost_lines(cost: Mapping[str, Any], direct: Ratio, processes: int) -> list[str]:
    """The costs, said: the writes, each resume, the share of the steps, the size."""
    write, restore = cost["write_ms"], cost["restore_ms"]
    return [
        f"writing a checkpoint: median {write['median']:.1f} ms (min {write['min']:.1f}, max "
        f"{write['max']:.1f}, {write['n']} writes)",
        f"restoring one (reading and checking its files, loading torch's state, registering "
        f"DALI's): median {restore['median']:.1f} ms over {restore['n']} resumes; each, and the time "
        "until its first step was done (DALI applies the reader's state at its first batch; a new "
        "process's first step is also its first, cold):",
        *(
            f"  {name:<12} from step {r['from_step']:>5}: restore {r['restore_ms']:6.1f} ms, first step "
            f"done after {r['to_first_step_ms']:7.1f} ms"
            for name, r in cost["resumes"].items()
        ),
        f"a step: {cost['step_ms']:.1f} ms (eager, from its mean rate); estimated from the median write "
        f"and eager's mean step, one checkpoint every {cost['every']} steps adds "
        f"{_percent(cost['share_of_steps'])} to their time; measured directly, eager + checkpoints / "
        f"eager: {direct}" + _outside(cost, direct),
        f"size of a {processes}-rank checkpoint: {cost['bytes'] / 1e6:.2f} MB",
    ]


def _percent(share: float) -> str:
    """A share of the time, as the cost line prints it: a percent to one decimal."""
    return f"{share * 100:.1f}%".replace("-0.0%", "0.0%")


def _time_added(low: float, high: float) -> str:
    """An interval of time added (shares, ``low`` to ``high``), said as more or less time, by its
    bounds as printed."""
    shown_low, shown_high = (float(_percent(v)[:-1]) for v in (low, high))
    if shown_low >= 0:
        return f"{_percent(low)} to {_percent(high)} more time"
    if shown_high <= 0:
        return f"{_percent(-high)} to {_percent(-low)} less time"
    return f"{_percent(-low)} less to {_percent(high)} more time"


def _outside(cost: Mapping[str, Any], direct: Ratio) -> str:
    """Where the writes' estimate (a point: the median write over ``every`` of eager's mean steps)
    lies against the direct measurement's interval, said as time added (a slowdown of ``1 / ratio -
    1``): below it, within it or above it, each compared as printed (one decimal of a percent), and
    worded as what this run shows."""
    if not 0 < direct.low <= direct.high < math.inf:  # a single trial has no interval
        return ""
    low, high = 1 / direct.high - 1, 1 / direct.low - 1
    shown = {name: float(_percent(v)[:-1]) for name, v in (("low", low), ("high", high))}
    estimate = float(_percent(cost["share_of_steps"])[:-1])
    if estimate < shown["low"]:
        where = "the writes' estimate lies below it; something besides the writes may add the rest"
    elif estimate > shown["high"]:
        where = "the writes' estimate lies above it; the steps may have lost less time than the writes took"
    else:
        where = "the writes' estimate lies within it"
    return f" (that is {_time_added(low, high)}: {where})"


def reader_states(script: ModuleType, checkpoint: Path, processes: int) -> list[str]:
    """Each rank's reader state in a checkpoint of the script (its ``rank-R.pt`` parts)."""
    return [
        json.loads(script.from_bytes((checkpoint / f"rank-{r}.pt").read_bytes())["dali"])["states"]["reader"][
            "state"
        ]
        for r in range(processes)
    ]


def _first_steps(cost: Mapping[str, Any]) -> str:
    times = [r["to_first_step_ms"] / 1000 for r in cost["resumes"].values()]
    return f"{min(times):.1f} to {max(times):.1f} s" if len(times) > 1 else f"{times[0]:.1f} s"


def epoch_cost(bench: Any, slower: str, faster: str) -> tuple[int, float] | None:
    """``(steps, seconds)``: the steps of one epoch and how much longer an epoch of ``slower``
    took than one of ``faster`` (from their geometric-mean rates), read off ``slower``'s trials,
    each of whole epochs (the batches handed over untimed and those timed); None where the trials
    do not say it (no epochs recorded, or epochs of different lengths)."""
    trials = (getattr(bench, "trials", None) or {}).get(slower) or []
    lengths = {(t.batches + t.skipped) / t.epochs for t in trials if getattr(t, "epochs", 0) and t.batches}
    if len(lengths) != 1 or not (steps := lengths.pop()).is_integer():
        return None
    batch = trials[0].samples / trials[0].batches
    seconds = steps * batch * (1 / bench.estimate(slower)[0] - 1 / bench.estimate(faster)[0])
    return int(steps), seconds


def _resumable_capture(bench: Any, r: Mapping[str, Ratio]) -> str:
    """Resumable capture against capture with one reader, over epochs of this run's length (and the
    time an epoch added, from the mean rates); then its two parts: a reader per epoch without
    checkpoints against one reader, and that loop with checkpoints added against it without them;
    then what one epoch length leaves open (whether a cost paid once an epoch stays the same for a
    longer epoch, and so is a smaller share of its time); last, resumable capture against eager mode with
    checkpoints. ``r``: the ratios of ``COMPARISONS`` by label; each comparison worded by
    :func:`versus`."""
    resumable = r["capture, epoch readers + checkpoints / capture"]
    readers = r["capture, epoch readers / capture"]
    checkpoints = r["capture, epoch readers + checkpoints / capture, epoch readers"]
    eager = r["capture, epoch readers + checkpoints / eager + checkpoints"]
    found = epoch_cost(bench, "capture, epoch readers + checkpoints", "capture")
    once = (
        "whether the cost paid once an epoch (a new reader, trace and pipeline) grows with the epoch; if "
        "it does not, it is a smaller share of a longer one"
    )
    if found is None:
        over = "over this run's epochs"
        length = f"This run's trials do not say one epoch length, nor {once}."
    else:
        steps, seconds = found
        more = "more" if seconds > 0 else "less"
        over = (
            f"over epochs of {steps} steps, about {abs(seconds):.2f} s {more} an epoch (from the mean rates)"
        )
        length = f"This run times epochs of one length, so it cannot tell {once}."
    already = "already " if readers.side is not None and readers.side == resumable.side else ""
    alone = versus(readers, "capture mode with one reader")
    return (
        "Made resumable (a reader, a random generator and an `EvalContext` per epoch), capture mode was "
        f"**{versus(resumable, 'capture mode with one reader and no checkpoints')}** {over}. With a reader "
        f"per epoch and no checkpoints, the loop was {already}{alone}; with "
        f"checkpoints added, the loop was {versus(checkpoints, 'the same loop without them')}. {length} "
        f"The resumable capture loop was **{versus(eager, 'eager mode with checkpoints')}**."
    )


def _said(check: Mapping[str, Any]) -> str:
    return (
        "bit-identical"
        if check["bit_identical"]
        else (f"not bit-identical (largest loss difference {check['largest_loss_gap']:.1e})")
    )


def conclusion(
    *,
    machine: str,
    checks: Mapping[str, Mapping[str, Any]],
    dist_device: str,
    processes: int,
    refused: int,
    cost: Mapping[str, Any],
    bench: Any,
) -> str:
    """The answer, from this run: the resumes (``checks``: eager, capture, distributed), the refused
    checkpoints, the costs and the ratios of the benchmark (``bench``, the harness's results)."""
    r = {label: bench.ratio(*pair) for label, pair in COMPARISONS.items()}
    resumable = r["capture, epoch readers + checkpoints / capture"]
    lines = [
        f"**The answer on this machine ({machine}).** Killed with `SIGKILL` and resumed from its "
        f"checkpoints, the training was {_said(checks['eager'])} in eager mode and "
        f"{_said(checks['capture'])} in capture mode (every step's loss and the final weights "
        f"against the uninterrupted run); with {processes} ranks under torchrun on {dist_device}, "
        f"{_said(checks['distributed'])}. {refused} damaged, missing or incompatible checkpoints were "
        "refused with a message and their files left unchanged; a truncated newest one was skipped "
        "for the previous one.",
        f"A checkpoint took {cost['write_ms']['median']:.1f} ms to write, and `restore()` alone "
        f"{cost['restore_ms']['median']:.1f} ms (medians). That is not the time to resume: DALI "
        "applies the reader's state at its first batch, a capture resume inside an epoch reads the "
        "batches already trained on again, and a resume in a new process takes its first step cold, "
        f"so a resumed run's first step was done {_first_steps(cost)} after its restore began. "
        f"With a checkpoint every {cost['every']} steps, "
        f"eager mode was **{versus(r['eager + checkpoints / eager'], 'eager mode without them')}**.",
        _resumable_capture(bench, r),
    ]
    versus_eager = r["capture, epoch readers + checkpoints / eager + checkpoints"]
    eager = "checkpoint eager loops with DALI's `Checkpoint` inside a durable checkpoint of your own"
    if versus_eager.low > 1:
        advice = (
            "What to do: where the time of every step counts, make a capture loop resumable with a "
            "reader per epoch, as this notebook's script does: here it was faster than eager mode "
            f"with checkpoints. Otherwise {eager} (the recipe): DALI checkpoints an eager reader as it "
            "is, with no replay of an epoch's first batches. Measure both on your model."
        )
    elif versus_eager.high < 1:
        advice = f"What to do: {eager} (the recipe): here they were faster than a resumable capture loop."
    else:
        advice = (
            f"What to do: {eager} (the recipe). Made resumable, capture mode was not distinguishable "
            "from them here, and it needs more: a reader per epoch and, after a resume, a skip of "
            "the epoch's batches already trained on (read, not decoded; their random numbers drawn); "
            "DALI checkpoints an eager reader as it is."
        )
    if resumable.high < 1:
        advice += (
            " A resumable capture loop pays for a new reader, trace and pipeline every epoch: "
            "measure it on your model before you choose it."
        )
    elif resumable.low > 1:
        advice += (
            " Here the resumable capture loop was faster than one reader for all epochs; measure "
            "it on your model before you rely on that."
        )
    else:
        advice += (
            " This run cannot tell what making a capture loop resumable costs against one reader "
            "for all epochs: more rounds (`trials`) narrow the interval."
        )
    lines.append(advice)
    return "\n\n".join(lines)


def record(
    setup: Setup,
    *,
    restore_identical: bool,
    save_without_seq: str,
    capture_with_checkpointing: str,
    chosen_step: int,
    killer: Killer,
    killed_launch: Launch,
    resumed: Mapping[str, Any],
    eager_check: Mapping[str, Any],
    fallback: Mapping[str, Any],
    bad: Mapping[str, Any],
    capture_killer: Killer,
    capture_res: Mapping[str, Any],
    capture_check: Mapping[str, Any],
    dist_killer: Killer,
    dist_launch: Launch,
    dist_res: Mapping[str, Any],
    dist_check: Mapping[str, Any],
    parts: Sequence[str],
    states: Sequence[str],
    crossed: int,
    bench: Any,
    cost: Mapping[str, Any],
) -> Record:
    """The notebook's record, from what its lessons made: DALI's API demo (``restore_identical``,
    ``save_without_seq``, ``capture_with_checkpointing``), the eager kill (``chosen_step``,
    ``killer``, ``killed_launch``, ``resumed``, ``eager_check``) and its damaged copies
    (``fallback``, ``bad``), the capture kill (``capture_*``), the torchrun kill (``dist_*``, the
    newest checkpoint's ``parts`` and reader ``states``, the epoch boundaries ``crossed``), the
    harness's ``bench`` and the ``cost``."""
    ratios = {label: ratio_record(bench.ratio(*pair)) for label, pair in COMPARISONS.items()}
    at = resumed["resumed"]["step"]
    resume = {
        "signal": "SIGKILL",
        "kill_step": killer.killed,
        "chosen_step": chosen_step,
        "returncode": killed_launch.returncode,
        "resumed_from": at,
        "steps_redone": killer.killed - at,
        **eager_check,
        "corrupt_checkpoint_rejected": bool(fallback["skipped"]) and bad["all_corrupt"]["refused"],
        "fallback": {k: v for k, v in fallback.items() if k != "resumed"},
    }
    first_steps = [r["to_first_step_ms"] for r in cost["resumes"].values()]  # restore() to a step done
    headline = {
        "kill_step": killer.killed,
        "resumed_from": at,
        "bit_identical": int(eager_check["bit_identical"]),
        "checkpoint_write_ms": cost["write_ms"]["median"],
        "checkpoint_restore_ms": cost["restore_ms"]["median"],
        "resume_first_step_ms": summarize(first_steps)["median"],  # beside restore() alone
        "checkpoint_share_of_steps": cost["share_of_steps"],
        **{key: ratios[label]["ratio"] for key, label in HEADLINE_RATIOS.items()},
    }
    processes = setup.processes
    results = {
        "resume": resume,
        "capture_resume": {
            "signal": "SIGKILL",
            "kill_step": capture_killer.killed,
            "resumed_from": capture_res["resumed"]["step"],
            "fast_forward_batches": capture_res["fast_forward_batches"],
            **capture_check,
        },
        "distributed": {
            "signal": "SIGKILL",
            "processes": processes,
            "device": setup.dist_device,
            "killed_rank": processes - 1,
            "kill_step": dist_killer.killed,
            "root_cause": dist_launch.root_cause,
            "resumed_from": dist_res["resumed"]["step"],
            "parts": sorted(parts),
            "distinct_reader_states": len(set(states)),
            "epoch_boundaries_after_resume": crossed,
            **dist_check,
        },
        "bad_inputs": dict(bad),
        "dali_api": {
            "restore_identical": restore_identical,
            "save_without_seq": save_without_seq,
            "capture_with_checkpointing": capture_with_checkpointing,
        },
        "benchmark": {
            "configurations": {
                w.name: [{"samples_per_s": rate} for rate in bench.rates(w.name)] for w in bench.ways
            },
            "summary": {w.name: summarize(bench.rates(w.name)) for w in bench.ways},
            "ratios": ratios,
            "harness": bench.as_record(),
        },
        "checkpoint_cost": dict(cost),
        "steps_per_epoch": setup.steps_per_epoch,
        "total_steps": setup.total_steps,
        "bit_identical_required_on": "cpu",  # on a GPU the gaps are recorded, not asserted
    }
    return Record(setup.parameters, results, headline)


__all__ = [
    "BENCH_WAYS",
    "COMPARISONS",
    "Kill",
    "Killer",
    "Runs",
    "Setup",
    "TorchrunKill",
    "boundaries_crossed",
    "capture_kill",
    "check_resume",
    "checksums",
    "compare",
    "conclusion",
    "cost_harness",
    "cost_lines",
    "cost_report",
    "costs",
    "damage",
    "eager_kill",
    "error_of",
    "folder",
    "kill_step_before_the_last_epoch",
    "kill_step_inside_an_epoch",
    "load_script",
    "loss_chart",
    "quote",
    "reader_states",
    "record",
    "resume_line",
    "set_up",
    "torchrun_kill",
]
