"""The docs site: the committed, executed notebooks and the pages of docs/, rendered to HTML.

    python -m helpers.docs_site build                 (make docs) -> build/site
    python -m helpers.docs_site serve [--port 8000]   serves build/site on 127.0.0.1

Nothing is executed: the notebooks are rendered with the outputs they were committed with
(MkDocs + mkdocs-jupyter, ``execute: false``). ``build`` stages ``docs/*.md``, ``notebooks/*.ipynb``
and ``results/`` into ``build/docs-src`` (filling in the landing page's notebook inventory and
results table, and dropping a progress bar's overwritten states, as Jupyter shows them), runs
``mkdocs build --strict`` with ``docs/mkdocs.yml`` into a temporary folder, checks the site (every
notebook has its page and all its figures, every internal link and figure resolves, nothing is
loaded from outside) and only then moves it to ``build/site``. Any problem raises
:class:`DocsBuildError`, and the command exits non-zero.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass
from functools import partial
from html.parser import HTMLParser
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from helpers.data_sources import REPO_ROOT
from helpers.results_table import render_results_table

INVENTORY_MARK = "<!-- docs-site:notebook-inventory -->"
RESULTS_MARK = "<!-- docs-site:results-table -->"
# files of docs/ that configure or describe the site, and are not pages of it
NOT_PAGES = {"mkdocs.yml", "hooks.py", "README.md"}
IMAGE_MIME_TYPES = ("image/png", "image/jpeg", "image/gif")


class DocsBuildError(RuntimeError):
    """The site cannot be built as it should be; the message says what is wrong and where."""


@dataclass(frozen=True)
class NotebookInfo:
    """What the landing page says about a notebook, read from its first cell and its metadata."""

    path: Path
    number: str
    title: str
    learn: list[str]
    needs_gpu: str
    runtime: str
    ran_seconds: float | None  # papermill's duration of the committed run
    ran_device: str | None
    figures: int  # image outputs, each of which its page must show

    @property
    def page(self) -> str:
        return f"notebooks/{self.path.name}"


def _section(text: str, label: str, stop: str = r"\n\s*\n|\Z") -> str:
    match = re.search(rf"\*\*{re.escape(label)}\*\*:?\s*(.*?)(?={stop})", text, re.DOTALL)
    return " ".join(match.group(1).split()) if match else ""


def _bullets(text: str, label: str) -> list[str]:
    match = re.search(rf"\*\*{re.escape(label)}\*\*\s*\n((?:[ \t]*[-*] .*\n?|[ \t]+\S.*\n?)+)", text)
    if not match:
        return []
    items: list[str] = []
    for line in match.group(1).splitlines():
        if re.match(r"\s*[-*] ", line):
            items.append(re.sub(r"^\s*[-*] ", "", line).strip())
        elif items:
            items[-1] += " " + line.strip()
    return [item.rstrip(";.") for item in items]


def read_notebook(path: Path) -> NotebookInfo:
    """The notebook's header (title, what you learn, GPU, runtime); fails on a notebook that was
    not executed or holds an error output, since the site shows the committed outputs as they are."""
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise DocsBuildError(f"{path}: cannot read the notebook ({err})") from err
    cells: list[dict[str, Any]] = nb.get("cells", [])
    code = [c for c in cells if c.get("cell_type") == "code" and "".join(c.get("source", "")).strip()]
    if not code or any(c.get("execution_count") is None for c in code):
        raise DocsBuildError(
            f"{path}: not executed (code cells without outputs). The site shows the committed "
            "outputs and runs nothing: commit the notebook as executed (e.g. from `make test-gpu`).")
    errors = [(i, o.get("ename")) for i, c in enumerate(cells) for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    if errors:
        raise DocsBuildError(f"{path}: error outputs in cells {errors}; commit a run without errors")
    header = "".join(next((c["source"] for c in cells if c.get("cell_type") == "markdown"), ""))
    if isinstance(header, list):
        header = "".join(header)
    heading = re.search(r"^#\s+(?:(\d+)\s*·\s*)?(.+?)\s*$", header, re.MULTILINE)
    learn = _bullets(header, "What you will learn")
    needs_gpu = _section(header, "Needs a GPU?", r"\*\*Runtime\*\*|\n\s*\n|\Z")
    runtime = _section(header, "Runtime")
    missing = [name for name, value in (("a '# NN · Title' heading", heading),
                                        ("**What you will learn** bullets", learn),
                                        ("**Needs a GPU?**", needs_gpu),
                                        ("**Runtime**:", runtime)) if not value]
    if missing or heading is None:
        raise DocsBuildError(f"{path}: its first Markdown cell lacks {', '.join(missing)}; "
                             "the landing page's inventory is read from there")
    papermill = nb.get("metadata", {}).get("papermill", {})
    figures = sum(1 for c in cells for o in c.get("outputs", [])
                  if any(m in o.get("data", {}) for m in IMAGE_MIME_TYPES))
    return NotebookInfo(path=path, number=heading.group(1) or path.stem.split("-")[0],
                        title=heading.group(2), learn=learn, needs_gpu=needs_gpu, runtime=runtime,
                        ran_seconds=papermill.get("duration"),
                        ran_device=(papermill.get("parameters") or {}).get("device"),
                        figures=figures)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


def notebook_inventory(infos: list[NotebookInfo]) -> str:
    """The landing page's table of notebooks (Markdown)."""
    rows = ["| # | Notebook | What you learn | Needs a GPU? | Runtime |",
            "| --- | --- | --- | --- | --- |"]
    for info in infos:
        learn = "<br>".join(f"• {_cell(item)}" for item in info.learn)
        runtime = info.runtime
        if info.ran_seconds is not None:
            where = f" with `device=\"{info.ran_device}\"`" if info.ran_device else ""
            runtime += f" The run shown here: {_duration(info.ran_seconds)}{where}."
        rows.append(f"| {info.number} | [{_cell(info.title)}]({info.page}) | {learn} | "
                    f"{_cell(info.needs_gpu)} | {_cell(runtime)} |")
    return "\n".join(rows)


def load_config(config_path: Path) -> dict[str, Any]:
    import yaml

    if not config_path.is_file():
        raise DocsBuildError(f"no MkDocs configuration at {config_path}")
    config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    if not isinstance(config, dict):
        raise DocsBuildError(f"{config_path} is not a MkDocs configuration")
    return config


def nav_pages(nav: Any) -> list[str]:
    """Every page that a MkDocs ``nav`` names, in order."""
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [page for item in nav for page in nav_pages(item)]
    if isinstance(nav, dict):
        return [page for value in nav.values() for page in nav_pages(value)]
    return []


def check_notebooks(config: dict[str, Any], notebook_dir: Path) -> list[Path]:
    """The notebooks that the nav lists; fails when the nav and ``notebooks/`` disagree."""
    listed = [p for p in nav_pages(config.get("nav")) if p.endswith(".ipynb")]
    present = sorted(p.name for p in notebook_dir.glob("[0-9][0-9]-*.ipynb"))
    missing = [p for p in listed if Path(p).name not in present]
    if missing:
        raise DocsBuildError(f"the nav of docs/mkdocs.yml lists {', '.join(missing)}, missing "
                             f"from {notebook_dir}")
    unlisted = [name for name in present if f"notebooks/{name}" not in listed]
    if unlisted:
        raise DocsBuildError(f"{', '.join(unlisted)} in {notebook_dir} not in the nav of "
                             "docs/mkdocs.yml: add it under Notebooks")
    return [notebook_dir / Path(p).name for p in listed]


_OVERWRITTEN = re.compile(r".*\r(?=[^\n])")


def coalesce_streams(outputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Outputs as Jupyter shows them: consecutive writes to one stream merged, and text that a
    carriage return overwrote (a progress bar's earlier states) dropped. Only for display."""
    merged: list[dict[str, Any]] = []
    for output in outputs:
        last = merged[-1] if merged else None
        if (output.get("output_type") == "stream" and last is not None
                and last.get("output_type") == "stream" and last.get("name") == output.get("name")):
            last["text"] = "".join(last["text"]) + "".join(output["text"])
        else:
            merged.append(dict(output))
    for output in merged:
        if output.get("output_type") == "stream":
            text = "".join(output["text"])
            output["text"] = _OVERWRITTEN.sub("", text) if "\r" in text else text
    return merged


def stage(root: Path, stage_dir: Path, infos: list[NotebookInfo]) -> None:
    """Lay out the documentation folder that MkDocs reads."""
    docs = root / "docs"
    shutil.rmtree(stage_dir, ignore_errors=True)
    shutil.copytree(docs, stage_dir, ignore=lambda folder, names: [
        n for n in names if n in NOT_PAGES or n == "__pycache__"] if Path(folder) == docs else [])
    (stage_dir / "notebooks").mkdir(exist_ok=True)
    for info in infos:
        nb = json.loads(info.path.read_text(encoding="utf-8"))
        for cell in nb.get("cells", []):
            if "outputs" in cell:
                cell["outputs"] = coalesce_streams(cell["outputs"])
        (stage_dir / "notebooks" / info.path.name).write_text(json.dumps(nb), encoding="utf-8")
    if (root / "results").is_dir():  # the results table may link to the records
        for record in (root / "results").rglob("*.json"):
            target = stage_dir / "results" / record.relative_to(root / "results")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(record, target)
    index = stage_dir / "index.md"
    text = index.read_text(encoding="utf-8") if index.is_file() else ""
    for mark in (INVENTORY_MARK, RESULTS_MARK):
        if mark not in text:
            raise DocsBuildError(f"{docs / 'index.md'} lacks the marker {mark}")
    text = text.replace(INVENTORY_MARK, notebook_inventory(infos))
    text = text.replace(RESULTS_MARK, render_results_table().strip())
    index.write_text(text, encoding="utf-8")


class _PageParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []  # <a href>
        self.resources: list[tuple[str, str]] = []  # (tag, url) the page loads
        self.images: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        for key in ("id", "name"):
            if values.get(key):
                self.ids.add(values[key])
        if tag == "a" and "href" in values:
            self.links.append(values["href"])
        elif tag == "img":
            self.images.append(values.get("src", ""))
        elif tag in ("script", "iframe", "source") and values.get("src"):
            self.resources.append((tag, values["src"]))
        elif tag == "link" and values.get("href") and values.get("rel", "") in (
                "stylesheet", "icon", "preload", "modulepreload"):
            self.resources.append((tag, values["href"]))


def _parse(page: Path) -> _PageParser:
    parser = _PageParser()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


def check_site(site_dir: Path, infos: list[NotebookInfo]) -> list[str]:
    """Problems of a built site: a notebook page missing or short of figures, a figure that is
    empty or missing, an internal link or anchor that resolves to nothing, an outside resource."""
    problems: list[str] = []
    # 404.html is served in place of any missing page, so its links are absolute by design
    pages = {p: _parse(p) for p in sorted(site_dir.rglob("*.html")) if p.name != "404.html"}
    for info in infos:
        page = site_dir / Path(info.page).with_suffix(".html")
        if page not in pages:
            problems.append(f"{info.path.name}: no page {page.relative_to(site_dir)}")
            continue
        shown = sum(1 for src in pages[page].images if src.startswith("data:image/"))
        if shown < info.figures:
            problems.append(f"{page.relative_to(site_dir)}: {shown} figures, but "
                            f"{info.path.name} has {info.figures}")
    for page, parsed in pages.items():
        name = str(page.relative_to(site_dir))
        for src in parsed.images:
            if src.startswith("data:"):
                payload = src.split(",", 1)[1] if "," in src else ""
                try:
                    empty = not base64.b64decode(payload, validate=False)
                except (binascii.Error, ValueError):
                    empty = True
                if empty:
                    problems.append(f"{name}: an empty or broken embedded figure")
                continue
            problems += _check_url(site_dir, page, src, pages, "figure")
        for tag, url in parsed.resources:
            problems += _check_url(site_dir, page, url, pages, f"<{tag}>")
        for href in parsed.links:
            if not urlsplit(href).scheme and not href.startswith("//"):
                problems += _check_url(site_dir, page, href, pages, "link")
    return problems


def _check_url(site_dir: Path, page: Path, url: str, pages: dict[Path, _PageParser],
               what: str) -> list[str]:
    name = str(page.relative_to(site_dir))
    parts = urlsplit(url)
    if parts.scheme or url.startswith("//"):
        return [f"{name}: {what} {url} loads from outside the site"] \
            if parts.scheme in ("http", "https") or url.startswith("//") else []
    if parts.path.startswith("/"):
        return [f"{name}: {what} {url} is absolute; the site must work from any folder"]
    target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
    if target.is_dir():
        target = target / "index.html"
    if not target.is_file() or not target.is_relative_to(site_dir.resolve()):
        return [f"{name}: {what} {url} resolves to nothing"]
    if parts.fragment and target.suffix == ".html":
        ids = pages[target].ids if target in pages else _parse(target).ids
        if unquote(parts.fragment) not in ids:
            return [f"{name}: {what} {url}: no anchor #{parts.fragment} in "
                    f"{target.relative_to(site_dir.resolve())}"]
    return []


def build(root: Path = REPO_ROOT, site_dir: Path | None = None, quiet: bool = False) -> Path:
    """Build the site of the checkout at ``root`` into ``site_dir`` (default: build/site, as
    docs/mkdocs.yml says); raises :class:`DocsBuildError` on any problem."""
    config_path = root / "docs" / "mkdocs.yml"
    config = load_config(config_path)
    stage_dir = (config_path.parent / config.get("docs_dir", "")).resolve()
    site_dir = (site_dir or config_path.parent / config.get("site_dir", "site")).resolve()
    if stage_dir == (root / "docs").resolve() or not stage_dir.is_relative_to(root.resolve() / "build"):
        raise DocsBuildError(f"docs_dir of {config_path} must be a staging folder under build/, "
                             f"not {stage_dir}")
    infos = [read_notebook(path) for path in check_notebooks(config, root / "notebooks")]
    stage(root, stage_dir, infos)
    tmp = site_dir.with_name(f".{site_dir.name}-tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--clean",
               "--config-file", str(config_path), "--site-dir", str(tmp)]
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # Material's end-of-life banner
    result = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True)
    output = (result.stderr + result.stdout).strip()
    if result.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        reported = [line for line in output.splitlines()
                    if line.startswith(("WARNING", "ERROR", "Error", "Aborted"))] or [output]
        raise DocsBuildError("mkdocs build --strict failed:\n  " + "\n  ".join(reported))
    if not quiet and output:
        print(output)
    problems = check_site(tmp, infos)
    if problems:
        shutil.rmtree(tmp, ignore_errors=True)
        raise DocsBuildError("the built site has problems:\n  " + "\n  ".join(problems))
    for info in infos:  # the download next to each page: the notebook as committed
        shutil.copy2(info.path, tmp / Path(info.page))
    old = site_dir.with_name(f".{site_dir.name}-old-{os.getpid()}")
    if site_dir.exists():
        site_dir.rename(old)
    tmp.rename(site_dir)
    shutil.rmtree(old, ignore_errors=True)
    return site_dir


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def start_server(site_dir: Path, host: str = "127.0.0.1", port: int = 0,
                 quiet: bool = True) -> ThreadingHTTPServer:
    """Serve ``site_dir`` from a background thread (``port=0``: a free port); stop it with
    ``server.shutdown()``. The URL is ``f"http://{host}:{server.server_address[1]}/"``."""
    if not (site_dir / "index.html").is_file():
        raise DocsBuildError(f"no site in {site_dir}: run `make docs` first")
    handler = partial(_QuietHandler if quiet else SimpleHTTPRequestHandler, directory=str(site_dir))
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="docs-site", daemon=True).start()
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=("build", "serve"))
    parser.add_argument("--site-dir", type=Path, default=REPO_ROOT / "build" / "site")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            site = build(site_dir=args.site_dir)
            print(f"docs site: {site / 'index.html'} "
                  f"(python -m helpers.docs_site serve: http://127.0.0.1:8000/)")
            return 0
        server = start_server(args.site_dir, args.host, args.port, quiet=False)
    except DocsBuildError as err:
        print(f"make docs: {err}", file=sys.stderr)
        return 1
    print(f"serving {args.site_dir} at http://{args.host}:{server.server_address[1]}/ (Ctrl-C stops)")
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
