"""MkDocs hooks of the docs site (docs/mkdocs.yml names this file): MkDocs' events, each handing
its page or its files to the module of ``tools`` whose job it is.

MkDocs validates the nav and the links of the Markdown pages, mkdocs-jupyter renders the
notebooks, nbconvert coalesces their streams (jupyter_nbconvert_config.json here). This hook adds
what no library does:

- the nav's Notebooks section, left empty in mkdocs.yml (``- Notebooks: []``), is filled with the
  registry's notebooks (``tools.docs_nav``), so that no notebook is listed by hand; one listed
  there by hand is a warning;
- the committed notebooks and results records (results/*.json) of the checkout become files of
  the site, where MkDocs checks the nav and the links against them;
- the landing page's inventory block and the results page's blocks (goals, a table per notebook,
  the published comparison) are filled in by the functions that write the README's and the
  committed page's (tools.inventory, tools.goals_table, tools.notebook_tables,
  tools.published_comparison), with the site's links, and the bottleneck page's table
  (tools.bottleneck_table) from the newest GPU record that holds notebook 07;
- each notebook must have been executed, hold no error output, and show every figure it holds on
  its page (``tools.docs_checks``); a notebook never executed (committed before its first GPU
  run) is shown with a note that says so;
- a notebook page's table of contents points at its headings (``tools.docs_toc``), and links
  inside a notebook lead to the pages of the notebooks and docs pages they name
  (``tools.docs_links``); one that points to nothing is a warning;
- a notebook page is shaped for readers (``tools.docs_reader_view``);
- each figure's ``<img>`` carries the alt text of its output's metadata, which the suite's
  charts and image grids write from what they draw (``tools.docs_alt``);
- each notebook page starts with a download link that says what the notebook needs to run
  (``tools.docs_notes``).

Every problem is a warning; `strict: true` turns them into a failed build. The modules of
``tools`` are imported from the checkout, which `make docs` puts on PYTHONPATH.
"""

from __future__ import annotations

import json
import logging
import os
import posixpath
from html import escape as html_escape
from pathlib import Path
from typing import Any

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File
from mkdocs.structure.files import Files

try:
    from helpers.data.registry import notebook_paths
    from tools.bottleneck_table import render_bottleneck_table
    from tools.docs_alt import with_alt_texts
    from tools.docs_checks import AWAITING_RERUN
    from tools.docs_checks import awaits_its_first_run
    from tools.docs_checks import figure_count
    from tools.docs_checks import figures_shown
    from tools.docs_checks import notebook_problems
    from tools.docs_links import rewrite_links
    from tools.docs_nav import notebook_nav
    from tools.docs_notes import AWAITING_NOTE
    from tools.docs_notes import RERUN_NOTE
    from tools.docs_notes import download_note
    from tools.docs_reader_view import reader_view
    from tools.docs_toc import headings_of
    from tools.docs_toc import repair_toc
    from tools.goals_table import render_goals_table
    from tools.inventory import render_inventory
    from tools.notebook_tables import render_notebook_tables
    from tools.published_comparison import render_published_comparison
    from tools.readme_blocks import replace_block
except ImportError as err:  # mkdocs started outside the checkout's path
    raise ImportError(f"{err}: run mkdocs from the checkout with PYTHONPATH=$PWD (`make docs` does)") from err

log = logging.getLogger("mkdocs.hooks.docs_site")  # under "mkdocs": counted by --strict


def _root(config: Any) -> Path:
    return Path(config.config_file_path).resolve().parent.parent


def on_config(config: Any) -> Any:
    # nbconvert reads its configuration (CoalesceStreamsPreprocessor: a progress bar's earlier
    # states dropped, as Jupyter shows them) from the folders JUPYTER_CONFIG_PATH lists
    here = str(Path(config.config_file_path).resolve().parent)
    paths = [p for p in os.environ.get("JUPYTER_CONFIG_PATH", "").split(os.pathsep) if p]
    if here not in paths:
        os.environ["JUPYTER_CONFIG_PATH"] = os.pathsep.join([here, *paths])
    nav, problems = notebook_nav(config.nav, _root(config))
    for problem in problems:
        log.warning("mkdocs.yml: %s", problem)
    config.nav = nav
    return config


@event_priority(50)  # before mkdocs-jupyter's on_files, which wraps the notebooks as pages
def on_files(files: Files, config: Any) -> Files:
    root = _root(config)
    added = [*notebook_paths(root), *sorted((root / "results").glob("*.json"))]
    for path in added:
        files.append(
            File(
                path.relative_to(root).as_posix(),
                src_dir=str(root),
                dest_dir=config.site_dir,
                use_directory_urls=config.use_directory_urls,
            )
        )
    return files


# the generated blocks of the pages, with the site's links: the landing page the notebook
# inventory (the README's), the results page the goals, a table per notebook and the published
# comparison (committed with links from docs/pages/, `python -m tools.results_table`)
PAGE_BLOCKS = {
    "index.md": {"inventory": lambda root: render_inventory(root)},
    "results.md": {
        "goals": lambda root: render_goals_table(root / "results"),
        "notebook-tables": lambda root: render_notebook_tables(root / "results"),
        "published-comparison": lambda root: render_published_comparison(root / "results"),
    },
    "bottleneck.md": {"bottleneck-video": lambda root: render_bottleneck_table(root / "results")},
}


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    source = page.file.src_uri
    root = _root(config)
    for name, render in PAGE_BLOCKS.get(source, {}).items():
        try:
            markdown = replace_block(markdown, name, render(root), source)
        except ValueError as err:
            log.warning("%s: %s", source, err)
    return markdown


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    source = page.file.src_uri
    if not source.endswith(".ipynb"):
        return html  # Markdown pages: MkDocs validates their links itself
    repair_toc(page.toc, headings_of(html))
    notebook = json.loads(Path(page.file.abs_src_path).read_text(encoding="utf-8"))
    awaiting = awaits_its_first_run(notebook)
    stem = posixpath.basename(source).removesuffix(".ipynb")
    rerun = AWAITING_RERUN.get(stem)
    for problem in [] if awaiting else notebook_problems(notebook, awaiting_rerun=rerun is not None):
        log.warning("%s: %s", source, problem)
    shown = figures_shown(html)
    if shown < figure_count(notebook):
        log.warning(
            "%s: its page shows %d figures, the notebook holds %d", source, shown, figure_count(notebook)
        )
    html, problems = with_alt_texts(html, notebook)
    for problem in [] if awaiting else problems:
        log.warning("%s: %s", source, problem)
    name = posixpath.basename(source)  # mkdocs-jupyter's include_source puts it beside the page
    note = (
        download_note(name)
        + (AWAITING_NOTE if awaiting else "")
        + (RERUN_NOTE.format(html_escape(rerun)) if rerun and not awaiting else "")
    )
    return note + reader_view(rewrite_links(html, source, page.file, files, log), notebook)
