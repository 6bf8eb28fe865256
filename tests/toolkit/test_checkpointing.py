"""helpers.toolkit.checkpointing: the commit protocol, and every bad input ending in a clear message that
changes nothing on disk."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from helpers.toolkit import checkpointing as ck

COMPAT = {"data": "build/x/training", "records": 1024, "batch_size": 64, "world_size": 2, "dali": "2.4.0"}


def _save(root: Path, step: int, keep: int = 3, **compat) -> Path:
    parts = {
        "model.pt": f"model at {step}".encode() * 100,
        "rank-0.pt": b"r0" * step,
        "rank-1.pt": b"r1" * step,
    }
    return ck.save(root, step, parts, {**COMPAT, **compat}, keep=keep)


def _tree(root: Path) -> dict[str, str]:
    """Every file under root with its checksum: what "changes nothing" compares."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_a_saved_checkpoint_loads_with_its_parts_and_manifest(tmp_path: Path) -> None:
    path = _save(tmp_path, 10)
    assert path.name == "step-00000010" and not list(tmp_path.glob(".partial-*"))
    manifest = json.loads((path / ck.MANIFEST).read_text())
    assert manifest["step"] == 10 and manifest["compat"] == COMPAT
    assert set(manifest["files"]) == {"model.pt", "rank-0.pt", "rank-1.pt"}
    loaded = ck.load_latest(tmp_path, COMPAT, say=pytest.fail)
    assert loaded.step == 10 and loaded.skipped == []
    assert loaded.read("rank-1.pt") == b"r1" * 10
    with pytest.raises(ck.CheckpointError, match="has no part 'rank-2.pt'"):
        loaded.read("rank-2.pt")


def test_the_newest_is_loaded_and_only_the_last_k_are_kept(tmp_path: Path) -> None:
    for step in (5, 10, 15, 20):
        _save(tmp_path, step, keep=2)
    assert [s for s, _ in ck.checkpoints(tmp_path)] == [20, 15]
    assert ck.load_latest(tmp_path, COMPAT).step == 20


def test_ranks_commit_one_checkpoint_together(tmp_path: Path) -> None:
    ck.prepare(tmp_path, 7)  # rank 0
    for rank in range(2):  # every rank writes its part
        ck.write_part(tmp_path, 7, f"rank-{rank}.pt", bytes([rank]) * 10)
    with pytest.raises(ck.CheckpointError, match="part.* rank-2.pt were not written"):
        ck.commit(tmp_path, 7, COMPAT, ["rank-0.pt", "rank-1.pt", "rank-2.pt"])
    assert ck.checkpoints(tmp_path) == []  # nothing published
    path = ck.commit(tmp_path, 7, COMPAT, ["rank-0.pt", "rank-1.pt"])
    assert ck.problem(path) is None and ck.load_latest(tmp_path, COMPAT).step == 7


def test_a_writer_killed_before_the_rename_leaves_only_a_staging_folder(tmp_path: Path) -> None:
    _save(tmp_path, 5)
    ck.prepare(tmp_path, 10)
    ck.write_part(tmp_path, 10, "model.pt", b"half")  # killed here: no manifest, no rename
    loaded = ck.load_latest(tmp_path, COMPAT, say=pytest.fail)
    assert loaded.step == 5  # the staging folder is not a checkpoint
    _save(tmp_path, 10)  # the next attempt replaces the leftover staging folder
    assert ck.load_latest(tmp_path, COMPAT).step == 10 and not list(tmp_path.glob(".partial-*"))


@pytest.mark.parametrize(
    "damage,reason",
    [
        (lambda p: (p / "rank-1.pt").write_bytes((p / "rank-1.pt").read_bytes()[:3]), "truncated"),
        (lambda p: (p / "model.pt").write_bytes(b"X" * (p / "model.pt").stat().st_size), "corrupt"),
        (lambda p: (p / "rank-0.pt").unlink(), "part rank-0.pt is missing"),
        (lambda p: (p / ck.MANIFEST).unlink(), "MANIFEST.json is missing"),
        (lambda p: (p / ck.MANIFEST).write_text("{not json"), "MANIFEST.json is unreadable"),
        (lambda p: (p / ck.MANIFEST).write_text('{"format": 99}'), "not a checkpoint manifest"),
    ],
)
def test_a_damaged_newest_checkpoint_falls_back_to_the_previous_one(tmp_path: Path, damage, reason) -> None:
    _save(tmp_path, 5)
    newest = _save(tmp_path, 10)
    damage(newest)
    before = _tree(tmp_path)
    said: list[str] = []
    loaded = ck.load_latest(tmp_path, COMPAT, say=said.append)
    assert loaded.step == 5
    assert said[0].startswith("skipped step-00000010: ") and reason in said[0]
    assert said[-1] == "resuming from step-00000005, the newest whole checkpoint"
    assert loaded.skipped == said[:1]
    assert _tree(tmp_path) == before  # the damaged one is still there, unchanged


def test_when_every_checkpoint_is_damaged_nothing_is_loaded_or_removed(tmp_path: Path) -> None:
    for step in (5, 10):
        path = _save(tmp_path, step)
        (path / "rank-0.pt").write_bytes(b"")
    before = _tree(tmp_path)
    with pytest.raises(ck.CheckpointCorrupt) as error:
        ck.load_latest(tmp_path, COMPAT, say=pytest.fail)
    message = str(error.value)
    assert "no checkpoint in" in message and "is whole" in message
    assert "skipped step-00000010" in message and "skipped step-00000005" in message
    assert "They were left as they are" in message
    assert _tree(tmp_path) == before


def test_pruning_never_removes_a_damaged_checkpoint(tmp_path: Path) -> None:
    damaged = _save(tmp_path, 5, keep=1)
    (damaged / "model.pt").write_bytes(b"")
    before = (damaged / ck.MANIFEST).read_bytes()
    _save(tmp_path, 10, keep=1)
    _save(tmp_path, 15, keep=1)
    assert [s for s, _ in ck.checkpoints(tmp_path)] == [15, 5]
    assert (damaged / ck.MANIFEST).read_bytes() == before


def test_rewriting_a_rejected_step_moves_the_old_folder_aside(tmp_path: Path) -> None:
    _save(tmp_path, 5)
    rejected = _save(tmp_path, 10)
    (rejected / "model.pt").write_bytes(b"torn")
    _save(tmp_path, 10)  # after a fall-back to 5, training reaches step 10 again
    assert ck.problem(tmp_path / "step-00000010") is None
    aside = tmp_path / "rejected-step-00000010-0"
    assert (aside / "model.pt").read_bytes() == b"torn"


@pytest.mark.parametrize("missing", ["absent", "empty"])
def test_resuming_from_nothing_says_what_to_do(tmp_path: Path, missing: str) -> None:
    root = tmp_path / "checkpoints"
    if missing == "empty":
        root.mkdir()
        (root / "notes.txt").write_text("mine")
    with pytest.raises(ck.CheckpointNotFound, match="Start without resuming, or give the folder"):
        ck.load_latest(root, COMPAT, shown=lambda p: p.name)
    assert root.exists() == (missing == "empty")  # not created
    if missing == "empty":
        assert (root / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize(
    "key,value",
    [
        ("data", "elsewhere/training"),
        ("batch_size", 32),
        ("dali", "2.5.0"),
        ("world_size", 1),
        ("records", 512),
    ],
)
def test_a_checkpoint_of_other_settings_is_refused_naming_what_differs(tmp_path: Path, key, value) -> None:
    _save(tmp_path, 5)
    before = _tree(tmp_path)
    with pytest.raises(ck.CheckpointIncompatible) as error:
        ck.load_latest(tmp_path, {**COMPAT, key: value}, say=pytest.fail)
    assert error.value.differences == {key: (COMPAT[key], value)}
    assert f"{key}: checkpoint {COMPAT[key]!r}, this run {value!r}" in str(error.value)
    assert "start a new run in another checkpoint folder" in str(error.value)
    assert _tree(tmp_path) == before


def test_a_part_changed_after_the_check_is_caught_when_read(tmp_path: Path) -> None:
    _save(tmp_path, 5)
    loaded = ck.load_latest(tmp_path, COMPAT)
    (loaded.path / "rank-0.pt").write_bytes(b"r9" * 5)  # same size, other bytes
    with pytest.raises(ck.CheckpointCorrupt, match="changed after it was checked"):
        loaded.read("rank-0.pt")


def test_bad_names_and_keep_are_refused(tmp_path: Path) -> None:
    ck.prepare(tmp_path, 1)
    for name in ("", "../x", ck.MANIFEST, ".hidden"):
        with pytest.raises(ValueError, match="cannot be the name"):
            ck.write_part(tmp_path, 1, name, b"")
    with pytest.raises(ValueError, match="keep must be at least 1"):
        ck.commit(tmp_path, 1, COMPAT, [], keep=0)


def test_commit_fsyncs_the_files_and_the_folders(tmp_path: Path, monkeypatch) -> None:
    synced: list[str] = []
    real = os.fsync

    def spy(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(ck.os, "fsync", spy)
    _save(tmp_path, 3)
    names = [Path(p).name for p in synced]
    assert {"model.pt", "rank-0.pt", "rank-1.pt"} <= set(names)  # each part's bytes
    assert f".{ck.MANIFEST}.tmp" in names  # the manifest, before its rename
    assert ".partial-step-00000003" in names  # the folder's entries, before its rename
    assert names[-1] == tmp_path.name  # the root, after the rename
