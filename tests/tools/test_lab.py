"""`make lab`: it starts as root too (containers, cloud machines) and says how to reach it from
another machine; it serves working copies only, and a notebook opened, run and saved through
JupyterLab's server leaves notebooks/ byte-identical."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from tornado.websocket import websocket_connect

from helpers.data.paths import REPO_ROOT
from helpers.data.registry import notebook_paths
from helpers.toolkit.parameters import INJECTED_TAG
from tools.copies import copy_notebooks
from tools.run_parameters import scales_of

pytestmark = pytest.mark.slow
NOTEBOOK = "01-getting-started.ipynb"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _committed() -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted((REPO_ROOT / "notebooks").glob("*.ipynb"))
    }


class Server:
    def __init__(self, port: int, lab: Path, log: Path) -> None:
        self.base, self.lab, self.log, self.port = f"http://127.0.0.1:{port}", lab, log, port
        self.token = ""  # read from what `make lab` prints, as a learner does

    def printed_token(self) -> str | None:
        found = re.search(rf"http://127\.0\.0\.1:{self.port}/lab\?token=(\w+)", self.log.read_text())
        return found.group(1) if found else None

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.base}{path}",
            data=data,
            method=method,
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                text = response.read().decode()
                return response.status, json.loads(text) if text else None
        except urllib.error.HTTPError as error:
            return error.code, None


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """`make lab` as a learner starts it, on working copies in a folder of the test's own."""
    lab = tmp_path_factory.mktemp("lab") / "lab"
    # beside the data, as `make lab`'s lab/ is in the checkout: the recipes read ../data/...
    (lab.parent / "data").symlink_to(REPO_ROOT / "data", target_is_directory=True)
    port = _free_port()
    log = open(lab.parent / "lab.log", "w")
    # as the README says to reach it from another machine; no --allow-root: as root (containers,
    # CI machines) `make lab` must add it itself, or Jupyter refuses to start
    process = subprocess.Popen(
        [
            "make",
            "-s",
            "-C",
            str(REPO_ROOT),
            "lab",
            f"PY={sys.executable}",
            "SETUP=",
            f"LAB={lab}",
            f"LAB_ARGS=--ip 0.0.0.0 --port {port} --no-browser --ServerApp.port_retries=0",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    server = Server(port, lab, log=lab.parent / "lab.log")
    try:
        deadline = time.time() + 180
        while True:
            server.token = server.printed_token() or ""
            try:
                if server.token and server.request("GET", "/api/status")[0] == 200:
                    break
            except OSError:
                pass
            if process.poll() is not None or time.time() > deadline:
                pytest.fail(f"make lab did not serve: {server.log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield server
    finally:
        if process.poll() is None:  # make, jupyter lab and its kernels: ours alone
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        log.close()


async def _run_cells(server: Server, kernel_id: str, session_id: str, cells: list) -> None:
    """Execute the code cells on the server's kernel over its websocket, as JupyterLab does,
    and put their outputs into ``cells``."""
    url = (
        f"ws://{server.base.removeprefix('http://')}/api/kernels/{kernel_id}/channels"
        f"?session_id={session_id}&token={server.token}"
    )
    connection = await websocket_connect(url)
    try:
        count = 0
        for cell in cells:
            if cell.cell_type != "code":
                continue
            msg_id = uuid.uuid4().hex
            await connection.write_message(
                json.dumps(
                    {
                        "header": {
                            "msg_id": msg_id,
                            "username": "test",
                            "session": session_id,
                            "msg_type": "execute_request",
                            "version": "5.3",
                        },
                        "parent_header": {},
                        "metadata": {},
                        "channel": "shell",
                        "buffers": [],
                        "content": {
                            "code": cell.source,
                            "silent": False,
                            "store_history": True,
                            "user_expressions": {},
                            "allow_stdin": False,
                            "stop_on_error": True,
                        },
                    }
                )
            )
            cell.outputs = []
            while True:
                raw = await asyncio.wait_for(connection.read_message(), timeout=600)
                assert raw is not None, "the kernel's websocket closed"
                message = json.loads(raw)
                if message.get("parent_header", {}).get("msg_id") != msg_id:
                    continue
                kind = message["header"]["msg_type"]
                if kind in ("stream", "display_data", "execute_result", "error"):
                    cell.outputs.append(nbformat.v4.output_from_msg(message))
                    assert kind != "error", f"cell failed: {message['content']['evalue']}"
                if kind == "status" and message["content"]["execution_state"] == "idle":
                    break
            count += 1
            cell.execution_count = count
    finally:
        connection.close()


def test_make_lab_allows_root_exactly_when_run_as_root(tmp_path: Path) -> None:
    """The command `make lab` runs (make -n: nothing started): --allow-root as root only."""
    result = subprocess.run(
        ["make", "-n", "-s", "-C", str(REPO_ROOT), "lab", "PY=python", "SETUP=", f"LAB={tmp_path / 'lab'}"],
        capture_output=True,
        text=True,
        check=True,
    )
    command = next(line for line in result.stdout.splitlines() if "-m jupyter lab" in line)
    assert ("--allow-root" in command.split()) == (os.geteuid() == 0), command


def test_make_lab_says_how_to_reach_it(server: Server) -> None:
    """Its banner says which notebook to open and how to reach the lab from another machine;
    Jupyter's own lines give the address with the token."""
    log = server.log.read_text()
    assert "start with 01-getting-started.ipynb" in log
    assert 'LAB_ARGS="--ip 0.0.0.0 --port 8888 --no-browser"' in log
    assert "ssh -N -L 8888:localhost:8888" in log
    assert server.token and len(server.token) >= 32  # the address it printed is the one that works
    assert server.request("GET", "/api/status")[0] == 200
    server.token, real = "wrong", server.token
    try:
        assert server.request("GET", "/api/status")[0] == 403  # the token guards it
    finally:
        server.token = real


def test_jupyterlab_serves_the_working_copies_only(server: Server) -> None:
    names = [p.name for p in notebook_paths()]
    status, listing = server.request("GET", "/api/contents")
    assert status == 200
    assert sorted(item["name"] for item in listing["content"] if item["type"] == "notebook") == names
    # JupyterLab serves the working copies only: the committed notebooks are out of its reach
    assert server.request("GET", f"/api/contents/../notebooks/{NOTEBOOK}")[0] in (403, 404)


def test_a_lab_copy_says_where_its_stored_outputs_came_from(server: Server) -> None:
    """Until it is re-run, a working copy shows the committed run's outputs: its first cell says
    so, with that run's date and runtime; the rest of it is the committed notebook."""
    name = "02-capture-mode.ipynb"  # not the notebook the next test runs and saves
    committed = nbformat.read(REPO_ROOT / "notebooks" / name, as_version=4)
    copy = nbformat.read(server.lab / name, as_version=4)
    note = copy.cells[0]
    assert note.cell_type == "markdown" and "lab-provenance" in note.metadata.get("tags", [])
    run = committed.metadata.get("papermill") or {}
    assert "Until you run a cell" in note.source
    assert (run.get("end_time") or "an unrecorded date")[:10] in note.source
    assert f"{run['duration'] / 60:.1f} min" in note.source
    own = [c.source for c in committed.cells if INJECTED_TAG not in c.metadata.get("tags", [])]
    assert [c.source for c in copy.cells[1:]] == own


def test_a_notebook_run_and_saved_in_jupyterlab_leaves_the_committed_ones_alone(server: Server) -> None:
    before = _committed()
    status, model = server.request("GET", f"/api/contents/{NOTEBOOK}?content=1")
    assert status == 200
    notebook = nbformat.from_dict(model["content"])
    # a learner makes the run quick: smaller values in the parameters cell
    parameters = next(c for c in notebook.cells if "parameters" in c.metadata.get("tags", []))
    ci = scales_of(REPO_ROOT / "notebooks" / NOTEBOOK)["ci"]
    parameters.source += "\n" + "\n".join(f"{k} = {v!r}" for k, v in ci.items())
    status, session = server.request(
        "POST",
        "/api/sessions",
        {"path": NOTEBOOK, "type": "notebook", "name": NOTEBOOK, "kernel": {"name": "python3"}},
    )
    assert status == 201
    asyncio.run(_run_cells(server, session["kernel"]["id"], session["id"], notebook.cells))
    # autosave and "Save": the contents API, then a checkpoint
    status, saved = server.request(
        "PUT", f"/api/contents/{NOTEBOOK}", {"type": "notebook", "format": "json", "content": notebook}
    )
    assert status == 200 and saved["path"] == NOTEBOOK
    assert server.request("POST", f"/api/contents/{NOTEBOOK}/checkpoints")[0] == 201
    server.request("DELETE", f"/api/sessions/{session['id']}")

    assert _committed() == before
    on_disk = nbformat.read(server.lab / NOTEBOOK, as_version=4)
    code = [c for c in on_disk.cells if c.cell_type == "code"]
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1))  # this run's
    assert any("| device:" in o.get("text", "") for c in code for o in c.outputs)  # helpers imported


def _dirty_after_opening(page: Any, server: Server, name: str) -> tuple[list[str], int]:
    """The tabs JupyterLab marks modified, and how many folded inputs it shows, once the
    notebook ``name`` of the lab folder has opened and settled, in a workspace of its own (a
    restored workspace would reopen other tabs)."""
    workspace = f"test-{uuid.uuid4().hex[:8]}"
    page.goto(
        f"{server.base}/lab/workspaces/{workspace}/tree/{name}?reset&token={server.token}", wait_until="load"
    )
    page.locator(".lm-TabBar-tab", has_text=name).first.wait_for(timeout=120_000)
    page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell").first.wait_for(timeout=120_000)
    # the kernel started and idle (JupyterLab then writes the kernel's language_info if it differs)
    page.wait_for_function(
        "document.querySelector('.jp-StatusBar-Widget, #jp-main-statusbar')?.textContent.includes('Idle')",
        timeout=120_000,
    )
    page.wait_for_timeout(3_000)
    dirty = page.evaluate(
        "[...document.querySelectorAll('.lm-TabBar-tab.jp-mod-dirty')].map(t => t.textContent)"
    )
    folded = page.evaluate(
        "document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) "
        ".jp-Cell .jp-InputPlaceholder').length"
    )
    return dirty, folded


@pytest.mark.browser
def test_a_lab_copy_opens_unmodified_with_its_bookkeeping_folded(server: Server, chromium_path: Path) -> None:
    """A learner opens a working copy in JupyterLab: the tab is not marked modified (nothing for
    JupyterLab to rewrite, such as language_info), and the cells the docs fold (hide-input) are
    folded there too (their jupyter.source_hidden). A copy that names another Python is marked
    modified on opening: the check sees it."""
    from playwright.sync_api import sync_playwright

    # a copy as `make lab` makes it (the module's other tests run and save the lab's own 01)
    fresh_dir = server.lab.parent / "fresh-copies"
    copy_notebooks(fresh_dir, True, True, False)
    opened = server.lab / f"opened-{NOTEBOOK}"
    shutil.copy(fresh_dir / NOTEBOOK, opened)
    copy = json.loads(opened.read_text())
    hidden = [c["id"] for c in copy["cells"] if c["metadata"].get("jupyter", {}).get("source_hidden")]
    assert hidden, "01 folds its set-up cells"
    stale = server.lab / "stale-language-info.ipynb"
    copy["metadata"]["language_info"]["version"] = "3.0.0"
    stale.write_text(json.dumps(copy))
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium_path), args=["--no-sandbox"])
        try:
            dirty, folded = _dirty_after_opening(
                browser.new_page(viewport={"width": 1280, "height": 900}), server, opened.name
            )
            stale_dirty, _ = _dirty_after_opening(
                browser.new_page(viewport={"width": 1280, "height": 900}), server, stale.name
            )
        finally:
            browser.close()
            stale.unlink()
            opened.unlink()
    assert not dirty, f"JupyterLab marks {dirty} modified on opening the unedited copy: it rewrote something"
    assert folded >= len(hidden), f"{folded} folded inputs shown, {len(hidden)} cells hidden"
    assert stale_dirty, "a copy naming another Python should open modified: the check sees nothing"
