"""Training checkpoints that survive a kill: a durable commit protocol, checked on the way back in.

A checkpoint is a folder ``step-<N>`` under a checkpoint root, holding one file per part (for
example one per rank) and a ``MANIFEST.json`` that lists each part with its size and SHA-256,
the step, and what the checkpoint is only valid for (``compat``: data, batch size, DALI
version, world size, ...). It is committed like this:

1. the parts are written into a staging folder ``.partial-step-<N>`` (each file written,
   flushed and ``fsync``-ed: its bytes are on the disk before anything refers to them);
2. the manifest is written last, to a temporary name, ``fsync``-ed and renamed into place;
3. the staging folder is ``fsync``-ed (its entries are on the disk), renamed to ``step-<N>``
   (one atomic step: the checkpoint exists whole or not at all), and the root is ``fsync``-ed
   (the rename is on the disk);
4. older complete checkpoints beyond the last ``keep`` are removed.

A process killed at any point leaves the committed checkpoints whole, plus at most a staging
folder, which loading ignores; killed while step 4 removes an old checkpoint, it can leave that
one partly deleted, which loading skips as damaged. What ``fsync`` guards against is a machine
that loses power or crashes after the rename but before the data reached the disk: the files of the newest
checkpoint may then be short or hold garbage. Loading therefore checks every part against the
manifest, and falls back to the newest checkpoint that is whole, saying which one it skipped
and why. It never deletes or changes a checkpoint it rejects.

Several processes (ranks) commit one checkpoint together: rank 0 calls :func:`prepare`, every
rank writes its part with :func:`write_part`, and after a barrier rank 0 calls :func:`commit`
(see ``notebooks/scripts/train_resumable.py``). :func:`save` does all three for one process.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

FORMAT = 1
MANIFEST = "MANIFEST.json"
STAGING_PREFIX = ".partial-"
_NAME = re.compile(r"step-(\d+)$")


class CheckpointError(RuntimeError):
    """A checkpoint cannot be used; the message says why and what to do. Nothing was changed."""


class CheckpointNotFound(CheckpointError):
    """There is no checkpoint to resume from."""


class CheckpointCorrupt(CheckpointError):
    """Every checkpoint found is incomplete or damaged."""


class CheckpointIncompatible(CheckpointError):
    """The checkpoint was written by a run with other settings (``differences`` names them)."""

    def __init__(self, message: str, differences: Mapping[str, tuple[Any, Any]]) -> None:
        super().__init__(message)
        self.differences = dict(differences)


def step_name(step: int) -> str:
    return f"step-{step:08d}"


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_durably(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def staging(root: str | Path, step: int) -> Path:
    """The staging folder of the checkpoint of ``step`` (the same name on every rank)."""
    return Path(root) / f"{STAGING_PREFIX}{step_name(step)}"


def prepare(root: str | Path, step: int) -> Path:
    """Create an empty staging folder for ``step`` (one process: rank 0, before the others
    write). A staging folder left by a writer that was killed holds no committed checkpoint
    (it was never renamed), so it is replaced."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    folder = staging(root, step)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    return folder


def write_part(root: str | Path, step: int, name: str, data: bytes) -> Path:
    """Write one part of the checkpoint of ``step`` into its staging folder, durably."""
    if "/" in name or name in ("", ".", "..", MANIFEST) or name.startswith("."):
        raise ValueError(f"{name!r} cannot be the name of a checkpoint part")
    path = staging(root, step) / name
    _write_durably(path, data)
    return path


def commit(
    root: str | Path,
    step: int,
    compat: Mapping[str, Any],
    parts: list[str],
    *,
    keep: int = 2,
    extra: Mapping[str, Any] | None = None,
) -> Path:
    """Publish the staged checkpoint of ``step``: check that every part in ``parts`` is there,
    write the manifest, rename the folder to ``step-<N>``, and keep the last ``keep``
    checkpoints. A ``step-<N>`` that already exists (a checkpoint rejected as damaged, then
    written again after a fall-back) is moved aside to ``rejected-step-<N>-<k>``, not deleted."""
    if keep < 1:
        raise ValueError(f"keep must be at least 1, not {keep}")
    root = Path(root)
    folder = staging(root, step)
    missing = [p for p in parts if not (folder / p).is_file()]
    if missing:
        raise CheckpointError(
            f"cannot commit the checkpoint of step {step}: part(s) "
            f"{', '.join(missing)} were not written to {folder.name}"
        )
    manifest = {
        "format": FORMAT,
        "step": step,
        "compat": dict(compat),
        "extra": dict(extra or {}),
        "files": {
            p: {"bytes": (folder / p).stat().st_size, "sha256": file_sha256(folder / p)}
            for p in sorted(parts)
        },
    }
    tmp = folder / f".{MANIFEST}.tmp"
    _write_durably(tmp, json.dumps(manifest, indent=1, sort_keys=True).encode())
    tmp.replace(folder / MANIFEST)
    _fsync_dir(folder)
    final = root / step_name(step)
    if final.exists():
        k = 0
        while (aside := root / f"rejected-{final.name}-{k}").exists():
            k += 1
        final.rename(aside)
    folder.rename(final)
    _fsync_dir(root)
    prune(root, keep)
    return final


def save(
    root: str | Path,
    step: int,
    parts: Mapping[str, bytes],
    compat: Mapping[str, Any],
    *,
    keep: int = 2,
    extra: Mapping[str, Any] | None = None,
) -> Path:
    """One process: stage, write and commit a checkpoint of ``parts`` (name -> bytes)."""
    prepare(root, step)
    for name, data in parts.items():
        write_part(root, step, name, data)
    return commit(root, step, compat, list(parts), keep=keep, extra=extra)


def checkpoints(root: str | Path) -> list[tuple[int, Path]]:
    """The committed ``step-<N>`` folders under ``root``, newest first (not checked)."""
    root = Path(root)
    if not root.is_dir():
        return []
    found = [(int(m[1]), p) for p in root.iterdir() if p.is_dir() and (m := _NAME.match(p.name))]
    return sorted(found, reverse=True)


def prune(root: str | Path, keep: int) -> list[Path]:
    """Remove complete checkpoints older than the newest ``keep`` that are whole, and staging
    folders older than the newest whole one (leftovers of killed writers). A damaged
    checkpoint is never removed. Returns what was removed."""
    whole = [path for _, path in checkpoints(root) if not problem(path)]
    removed = whole[keep:]
    if whole:
        newest = int(_NAME.match(whole[0].name)[1])
        for p in Path(root).glob(f"{STAGING_PREFIX}step-*"):
            m = _NAME.search(p.name)
            if m and int(m[1]) <= newest:
                removed.append(p)
    for path in removed:
        shutil.rmtree(path)
    return removed


def problem(path: str | Path) -> str | None:
    """Why the checkpoint folder ``path`` cannot be used (its manifest missing or unreadable, a
    part missing, shorter or longer than recorded, or with other bytes), or None if it is whole."""
    path = Path(path)
    try:
        manifest = json.loads((path / MANIFEST).read_text())
    except FileNotFoundError:
        return f"{MANIFEST} is missing (the checkpoint was not committed)"
    except (OSError, UnicodeDecodeError, ValueError) as error:
        return f"{MANIFEST} is unreadable ({type(error).__name__})"
    if (
        not isinstance(manifest, dict)
        or manifest.get("format") != FORMAT
        or not isinstance(manifest.get("files"), dict)
    ):
        return f"{MANIFEST} is not a checkpoint manifest of format {FORMAT}"
    for name, entry in sorted(manifest["files"].items()):
        part = path / name
        if not part.is_file():
            return f"part {name} is missing"
        size = part.stat().st_size
        if size != entry.get("bytes"):
            return f"part {name} has {size:,} bytes, the manifest {entry.get('bytes'):,} (truncated)"
        if file_sha256(part) != entry.get("sha256"):
            return f"part {name} does not match its SHA-256 checksum (corrupt)"
    return None


@dataclass
class Loaded:
    """A checked checkpoint: its folder, step and manifest, and the newer ones it skipped."""

    path: Path
    step: int
    manifest: dict[str, Any]
    skipped: list[str] = field(default_factory=list)

    def read(self, name: str) -> bytes:
        """The bytes of part ``name``, checked against the manifest again (read once)."""
        entry = self.manifest["files"].get(name)
        if entry is None:
            raise CheckpointError(
                f"checkpoint {self.path.name} has no part {name!r}; it has "
                f"{', '.join(sorted(self.manifest['files']))}"
            )
        data = (self.path / name).read_bytes()
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            raise CheckpointCorrupt(
                f"part {name} of checkpoint {self.path.name} changed after it was checked; resume again"
            )
        return data


def compare(saved: Mapping[str, Any], expected: Mapping[str, Any]) -> dict[str, tuple[Any, Any]]:
    """{key: (saved value, expected value)} for every key of either that differs."""
    return {
        k: (saved.get(k), expected.get(k))
        for k in sorted(set(saved) | set(expected))
        if saved.get(k) != expected.get(k)
    }


def load_latest(
    root: str | Path,
    expected: Mapping[str, Any],
    *,
    say: Callable[[str], None] = print,
    shown: Callable[[Path], str] = str,
) -> Loaded:
    """The newest whole checkpoint under ``root``, checked against ``expected`` (the settings of
    the run that resumes). A damaged newer checkpoint is skipped with a message through ``say``.
    Raises :class:`CheckpointNotFound`, :class:`CheckpointCorrupt` (none is whole) or
    :class:`CheckpointIncompatible` (the newest whole one belongs to other settings); changes
    nothing on disk. ``shown`` turns a path into what messages print."""
    root = Path(root)
    found = checkpoints(root)
    if not found:
        where = "does not exist" if not root.exists() else "holds no committed checkpoint (step-*)"
        raise CheckpointNotFound(
            f"cannot resume: {shown(root)} {where}. Start without resuming, "
            "or give the folder that the interrupted run wrote its "
            "checkpoints to."
        )
    skipped = []
    for step, path in found:
        why = problem(path)
        if why is None:
            manifest = json.loads((path / MANIFEST).read_text())
            differences = compare(manifest.get("compat", {}), expected)
            if differences:
                listed = "; ".join(
                    f"{k}: checkpoint {a!r}, this run {b!r}" for k, (a, b) in differences.items()
                )
                raise CheckpointIncompatible(
                    f"cannot resume from {shown(path)}: it was written by a run with other "
                    f"settings ({listed}). Resume with the checkpoint's settings, or start a new "
                    "run in another checkpoint folder.",
                    differences,
                )
            for message in skipped:
                say(message)
            if skipped:
                say(f"resuming from {path.name}, the newest whole checkpoint")
            return Loaded(path, step, manifest, skipped)
        skipped.append(f"skipped {path.name}: {why}")
    raise CheckpointCorrupt(
        f"cannot resume: no checkpoint in {shown(root)} is whole ("
        + "; ".join(skipped)
        + "). They were left as they are; start a new "
        "run, in another folder if you want to keep them."
    )
