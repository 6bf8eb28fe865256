"""Nothing of the machine in committed files: no absolute path of the checkout, a home,
temporary or output folder in the notebooks, results JSON, docs pages or README.

The suite's one detector of such paths (``machine_paths_in``): the docs site's tests
(tests/test_docs_site.py) apply it to the built pages."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import pytest

from helpers.data.paths import REPO_ROOT

MACHINE_FOLDERS = sorted(
    {
        str(REPO_ROOT),
        str(Path.home()),
        tempfile.gettempdir(),
        "/tmp",
        "/root",
        "/home",
        "/work",
        "/mnt",
        "/Users",
        "/var/folders",
    },
    key=len,
    reverse=True,
)
# an absolute path starts a word: not inside a URL, ~/..., $VAR/... or a relative path
ABSOLUTE = re.compile(
    r"(?<![\w/.~$-])(?:" + "|".join(re.escape(f) for f in MACHINE_FOLDERS) + r")/[^\s\"'`)\\<>]*"
)
# and any absolute path into an installed package (a warning's or a traceback's file, such as
# /opt/venv/lib/python3.12/site-packages/tqdm/auto.py): the Python it ran on
PACKAGE_FILE = re.compile(r"(?<![\w/.~$-])/[^\s\"'`)\\<>]*/(?:site|dist)-packages/[^\s\"'`)\\<>]*")


def committed_files(root: Path = REPO_ROOT) -> list[Path]:
    patterns = (
        "notebooks/**/*.ipynb",
        "results/*.json",
        "docs/**/*.md",
        "docs/**/*.yml",
        "README.md",
        "data/README.md",
        ".github/**/*.yml",
        ".github/*.yaml",
    )
    return sorted(
        {p for pattern in patterns for p in root.glob(pattern) if ".ipynb_checkpoints" not in p.parts}
    )


def machine_paths_in(text: str) -> list[str]:
    """The absolute paths of a machine that ``text`` holds: a folder of this machine's or the usual
    places of others' (``MACHINE_FOLDERS``), or a file of an installed package."""
    return sorted(set(ABSOLUTE.findall(text)) | set(PACKAGE_FILE.findall(text)))


def machine_paths(path: Path) -> list[str]:
    """``machine_paths_in`` of a committed file, and for a notebook the paths papermill recorded
    in its metadata, which must be relative."""
    text = path.read_text(errors="replace")
    found = set(machine_paths_in(text))
    if path.suffix == ".ipynb":  # papermill records the paths it was handed: a path, relative
        recorded = json.loads(text)["metadata"].get("papermill", {})
        for key in ("input_path", "output_path"):
            value = recorded.get(key)
            if value is not None and (not isinstance(value, str) or value.startswith("/")):
                found.add(f"metadata.papermill.{key} = {str(value)[:40]}")
    return sorted(found)


@pytest.mark.parametrize("path", committed_files(), ids=lambda p: p.relative_to(REPO_ROOT).as_posix())
def test_no_absolute_path_of_the_machine(path: Path) -> None:
    found = machine_paths(path)
    assert not found, f"{path.relative_to(REPO_ROOT)} holds absolute paths of a machine: {found[:5]}"


def test_the_check_finds_machine_paths_and_spares_the_rest(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        f'see {REPO_ROOT}/data and "/tmp/pytest-1/x.json", /root/out/run\n'
        "fine: ~/DALI_extra, $DALI_EXTRA_PATH/db, build/run-1, "
        "https://example.com/home/x, /usr/bin/chromium, notebooks/01.ipynb\n"
        "/opt/venv/lib/python3.12/site-packages/tqdm/auto.py:21: TqdmWarning\n"
        '<a href="/mnt/disk/run.html">a built page</a> <code>/home/me/x.py</code>\n'
    )
    assert machine_paths(page) == sorted(
        {
            f"{REPO_ROOT}/data",
            "/tmp/pytest-1/x.json",
            "/root/out/run",
            "/opt/venv/lib/python3.12/site-packages/tqdm/auto.py:21:",
            "/mnt/disk/run.html",
            "/home/me/x.py",
        }
    )
    notebook = tmp_path / "run.ipynb"
    notebook.write_text(
        json.dumps(
            {"metadata": {"papermill": {"input_path": {"cells": []}, "output_path": "build/run/x.ipynb"}}}
        )
    )
    assert machine_paths(notebook) == ["metadata.papermill.input_path = {'cells': []}"]
