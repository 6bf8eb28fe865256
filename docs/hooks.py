"""MkDocs hooks of the docs site (docs/mkdocs.yml names this file).

MkDocs validates the nav and the links of the Markdown pages, mkdocs-jupyter renders the
notebooks, nbconvert coalesces their streams (jupyter_nbconvert_config.json here). This hook adds
what no library does:

- the nav's Notebooks section, left empty in mkdocs.yml (``- Notebooks: []``), is filled with the
  registry's notebooks (tools.registry: every notebooks/NN-*.ipynb, in order), so that no notebook
  is listed by hand; one listed there by hand is a warning;
- the committed notebooks and results records (results/*.json) of the checkout become files of
  the site, where MkDocs checks the nav and the links against them;
- the landing page's inventory block and the results page's blocks (goals, a table per notebook,
  the published comparison) are filled in by the functions that write the README's and the
  committed page's (tools.inventory, tools.results_table), with the site's links;
- each notebook must have been executed (execution counts 1, 2, 3... in order and papermill's
  metadata), hold no error output, and show every figure it holds on its page; a notebook never
  executed (committed before its first GPU run) is shown with a note that says so;
- links inside a notebook (mkdocs-jupyter renders them, MkDocs never sees them): a link to
  another notebook becomes a link to its page, and so does one to a docs page by its path in the
  checkout (``../docs/pages/x.md``, which GitHub follows); one that points to nothing is a warning;
- a notebook page is shaped for readers (:func:`reader_view`): the cell tags of the test
  machinery are not shown, papermill's injected-parameters cell becomes one line that says with
  which parameters the outputs were made, a progress bar on stderr is not styled as an error,
  a long printed file or a table (a cell tagged ``collapse-output``, as text, IPython's
  highlighted ``Code`` or a pandas table) is shown folded, a file highlighted; the code of a
  cell tagged ``hide-input`` (bookkeeping) is folded under its first comment or what it
  defines; an interval in a table cell is not broken at its hyphen; and an output of nothing
  but whitespace (a progress bar's closing newline) is not shown;
- each notebook page starts with a download link that says what the notebook needs to run.

Every problem is a warning; `strict: true` turns them into a failed build.
"""

from __future__ import annotations

import ast
import base64
import binascii
import json
import logging
import os
import posixpath
import re
from html import escape as html_escape
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bs4 import BeautifulSoup
from bs4 import Tag
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File
from mkdocs.structure.files import Files
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

try:
    from helpers.parameters import INJECTED_TAG
    from tools.goals_table import render_goals_table
    from tools.inventory import render_inventory
    from tools.notebook_tables import render_notebook_tables
    from tools.published_comparison import render_published_comparison
    from tools.readme_blocks import replace_block
    from tools.registry import notebook_paths
except ImportError as err:  # mkdocs started outside the checkout's path
    raise ImportError(f"{err}: run mkdocs from the checkout with PYTHONPATH=$PWD "
                      "(`make docs` does)") from err

log = logging.getLogger("mkdocs.hooks.docs_site")  # under "mkdocs": counted by --strict

IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif")
# a notebook links to a page of the docs by its path in the checkout (notebooks/ -> ../docs/pages/),
# which GitHub follows; on the site the page is at the top (docs_dir is docs/pages)
PAGES_IN_THE_CHECKOUT = "docs/pages/"
_URL_ATTRIBUTE = re.compile(r'\b(href|src)="([^"]*)"')
_EMBEDDED_IMAGE = re.compile(r'<img\b[^>]*\bsrc="data:image/[a-z+]+;base64,([^"]*)"')


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


NAV_SECTION = "Notebooks"  # the nav section that the hook fills with the registry's notebooks


def notebook_nav(nav: list[Any] | None, root: Path) -> tuple[list[Any], list[str]]:
    """``nav`` with its Notebooks section (``- Notebooks: []`` in mkdocs.yml) holding the
    registry's notebooks of the checkout at ``root`` (their paths in the site, in order), and
    what is wrong with the section as written: missing, or listing notebooks by hand."""
    entries = [f"notebooks/{path.name}" for path in notebook_paths(root)]
    nav = list(nav or [])
    problems: list[str] = []
    at = [i for i, item in enumerate(nav) if isinstance(item, dict) and NAV_SECTION in item]
    if not at:
        problems.append(f"the nav has no `- {NAV_SECTION}: []` section: add it where the notebooks "
                        "go (the hook fills it with every notebooks/NN-*.ipynb)")
        return nav, problems
    listed = nav[at[0]][NAV_SECTION]
    if listed:
        problems.append(f"the nav's {NAV_SECTION} section lists {listed!r} by hand: leave it "
                        f"`- {NAV_SECTION}: []`, the hook fills it with every notebooks/NN-*.ipynb "
                        "(tools.registry)")
    nav[at[0]] = {NAV_SECTION: entries}
    return nav, problems


@event_priority(50)  # before mkdocs-jupyter's on_files, which wraps the notebooks as pages
def on_files(files: Files, config: Any) -> Files:
    root = _root(config)
    added = [*notebook_paths(root), *sorted((root / "results").glob("*.json"))]
    for path in added:
        files.append(File(path.relative_to(root).as_posix(), src_dir=str(root),
                          dest_dir=config.site_dir, use_directory_urls=config.use_directory_urls))
    return files


# the generated blocks of the pages, with the site's links: the landing page the notebook
# inventory (the README's), the results page the goals, a table per notebook and the published
# comparison (committed with links from docs/pages/, `python -m tools.results_table`)
PAGE_BLOCKS = {
    "index.md": {"inventory": lambda root: render_inventory(root)},
    "results.md": {"goals": lambda root: render_goals_table(root / "results"),
                   "notebook-tables": lambda root: render_notebook_tables(root / "results"),
                   "published-comparison": lambda root: render_published_comparison(root / "results")},
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


def notebook_problems(notebook: dict[str, Any]) -> list[str]:
    """What shows that a notebook was not executed as committed notebooks must be."""
    problems: list[str] = []
    cells = notebook.get("cells", [])
    code = [c for c in cells if c.get("cell_type") == "code" and "".join(c.get("source", "")).strip()]
    counts = [c.get("execution_count") for c in code]
    if counts != list(range(1, len(code) + 1)):
        problems.append(f"not executed in order (execution counts {counts[:8]}...; expected "
                        "1, 2, 3...): commit the notebook as the runner executed it")
    papermill = notebook.get("metadata", {}).get("papermill")
    if not papermill or papermill.get("duration") is None:
        problems.append("no papermill metadata (duration): commit the notebook as the runner "
                        "executed it")
    elif papermill.get("exception"):
        problems.append("papermill recorded an exception: commit a run that finished")
    for index, cell in enumerate(cells):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                problems.append(f"cell {index}: error output {output.get('ename')}: commit a run "
                                "without errors")
            for mime in IMAGE_TYPES:
                data = output.get("data", {}).get(mime)
                if data is not None and not _decodes("".join(data)):
                    problems.append(f"cell {index}: an empty or broken figure ({mime})")
    return problems


def figure_count(notebook: dict[str, Any]) -> int:
    return sum(1 for c in notebook.get("cells", []) for o in c.get("outputs", [])
               if any(m in o.get("data", {}) for m in IMAGE_TYPES))


def _decodes(payload: str) -> bool:
    try:
        return bool(base64.b64decode(payload, validate=False))
    except (binascii.Error, ValueError):
        return False


def _is_relative(url: str) -> bool:
    parts = urlsplit(url)
    return bool(parts.path) and not parts.scheme and not parts.netloc and not url.startswith("/")


_HEADING = re.compile(r'<h[1-6][^>]*\bid="([^"]+)"[^>]*>(.*?)</h[1-6]>', re.S)


def _words_within(words: list[str], other: list[str]) -> bool:
    """Whether ``words`` appear in ``other`` in order (other words may come between)."""
    rest = iter(other)
    return all(word in rest for word in words)


def repair_toc(toc: Any, headings: dict[str, str]) -> None:
    """mkdocs-jupyter's table of contents drops a heading's code spans ("2 · Samples out of a
    `Batch`" became a link to #2-samples-out-of-a, "The ceiling, `ndd.pytorch.nodes`, and..."
    one to #the-ceiling-and-..., which no heading has): point such an entry at the one heading
    whose id holds the entry's words in order, with that heading's text."""
    for item in toc:
        if item.id not in headings:
            matches = [id_ for id_ in headings
                       if _words_within(item.id.split("-"), id_.split("-"))]
            if len(matches) == 1:
                item.id, item.title = matches[0], headings[matches[0]]
        repair_toc(item.children, headings)


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    source = page.file.src_uri
    if not source.endswith(".ipynb"):
        return html  # Markdown pages: MkDocs validates their links itself
    headings = {id_: re.sub(r"<[^>]+>|¶", "", text).strip() for id_, text in _HEADING.findall(html)}
    repair_toc(page.toc, headings)
    notebook = json.loads(Path(page.file.abs_src_path).read_text(encoding="utf-8"))
    awaiting = awaits_its_first_run(notebook)
    for problem in [] if awaiting else notebook_problems(notebook):
        log.warning("%s: %s", source, problem)
    shown = sum(1 for payload in _EMBEDDED_IMAGE.findall(html) if _decodes(payload))
    if shown < figure_count(notebook):
        log.warning("%s: its page shows %d figures, the notebook holds %d", source, shown,
                    figure_count(notebook))

    def rewrite(match: re.Match[str]) -> str:
        attribute, url = match.group(1), match.group(2)
        if not _is_relative(url):
            return match.group(0)
        parts = urlsplit(url)
        target = posixpath.normpath(posixpath.join(posixpath.dirname(source), parts.path))
        if target.startswith(PAGES_IN_THE_CHECKOUT):  # ../docs/pages/x.md: a link that works on GitHub
            target = target[len(PAGES_IN_THE_CHECKOUT):]
        file = files.get_file_from_path(target)
        if file is None:
            kind = "figure" if attribute == "src" else "link"
            log.warning("%s: %s '%s' points to '%s', which is not in the site", source, kind,
                        url, target)
            return match.group(0)
        if attribute == "href" and target.endswith((".ipynb", ".md")):
            fragment = f"#{parts.fragment}" if parts.fragment else ""
            return f'href="{file.url_relative_to(page.file)}{fragment}"'
        return match.group(0)

    name = posixpath.basename(source)  # mkdocs-jupyter's include_source puts it beside the page
    note = download_note(name) + (AWAITING_NOTE if awaiting else "")
    return note + reader_view(_URL_ATTRIBUTE.sub(rewrite, html), notebook)


# A new notebook is committed before its first GPU run (the runner's executed notebook follows):
# its page says so. tests/test_committed_notebooks.py names each such notebook
# (AWAITS_ITS_FIRST_GPU_RUN), so that none stays unexecuted unnoticed.
AWAITING_NOTE = ('<p class="notebook-awaits-run"><strong>Not run yet.</strong> This notebook is shown '
                 "without outputs: they come with its first run on the GPU machine, which replaces "
                 "this page. Run it yourself with <code>make lab</code>.</p>\n")


def awaits_its_first_run(notebook: dict[str, Any]) -> bool:
    """Never executed: no code cell has an execution count or an output, and papermill left no
    metadata (a notebook executed in part, or out of order, is a fault: notebook_problems)."""
    code = [c for c in notebook.get("cells", []) if c.get("cell_type") == "code"]
    return (not notebook.get("metadata", {}).get("papermill")
            and all(c.get("execution_count") is None and not c.get("outputs") for c in code))


# What a downloaded notebook needs; its first cell stops with the same words outside the checkout.
NEEDS_THE_REPOSITORY = ("It runs inside its repository, dali-dynamic-tutorials: clone it and run "
                        "<code>make lab</code>, which sets up the packages and the data "
                        "(<code>make data</code>) and opens the notebooks in JupyterLab.")


def download_note(name: str) -> str:
    return (f'<p class="notebook-download"><a href="{name}" download title="the notebook as '
            f'committed, with its outputs">Download {name}</a> '
            f'<span class="notebook-needs">{NEEDS_THE_REPOSITORY}</span></p>\n')


COLLAPSE = "collapse-output"  # a cell tag of ours: its printed output is a file, shown folded
# Jupyter Book's tag, ours too: the cell's code is bookkeeping (imports, parameter checks, tables of
# results, the record), shown folded under its first comment; JupyterLab folds it by the cell's
# metadata jupyter.source_hidden, which tests/test_notebooks.py keeps in step with the tag
HIDE_INPUT = "hide-input"
_INTERVAL = re.compile(r"\[\s*-?[\d.,]+\s*[-–]\s*-?[\d.,]+\s*\]")
_PROGRESS_LINE = re.compile(r"^.*\d+%\|.*\|\s*\d+(\.\d+)?[kMG]?/\d+(\.\d+)?[kMG]?\b.*$")


def _cells_tagged(soup: BeautifulSoup, tag: str) -> list[Tag]:
    """The outermost element of each cell with ``tag`` (mkdocs-jupyter nests two divs per cell,
    both with the class ``celltag_<tag>``)."""
    css = f"celltag_{tag}"
    return [cell for cell in soup.find_all(class_=css)
            if not any(css in (parent.get("class") or []) for parent in cell.parents)]


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def run_parameters(notebook: dict[str, Any]) -> list[str]:
    """The assignments of papermill's injected-parameters cell (comments left out)."""
    lines: list[str] = []
    for cell in notebook.get("cells", []):
        if INJECTED_TAG in cell.get("metadata", {}).get("tags", []):
            lines += [line.strip() for line in _source(cell).splitlines()
                      if line.strip() and not line.lstrip().startswith("#")]
    return lines


def is_progress_bar(text: str) -> bool:
    """Whether a stderr output holds nothing but tqdm's progress lines."""
    lines = [line for line in re.split(r"[\r\n]+", text) if line.strip()]
    return bool(lines) and all(_PROGRESS_LINE.match(line) for line in lines)


def folded_source(text: str) -> str:
    """A printed file as a folded <details>, highlighted as Python when it parses as Python."""
    count = len(text.rstrip("\n").splitlines())
    try:
        tree = ast.parse(text)
        body = highlight(text, PythonLexer(), HtmlFormatter(cssclass="highlight", wrapcode=True))
        one_value = len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr)  # a dict, a list
        what = f"value: {count} lines" if one_value else f"script: {count} lines of Python"
    except SyntaxError:
        body = f"<pre>{html_escape(text)}</pre>"
        what = f"text: {count} lines"
    return (f'<details class="printed-file"><summary>The printed {what} (click to show)'
            f"</summary>\n{body}</details>")


def reader_view(html: str, notebook: dict[str, Any]) -> str:
    """A notebook page as a reader needs it; see the module's docstring."""
    soup = BeautifulSoup(html, "html.parser")
    for toolbar in soup.select(".celltoolbar"):  # the tag chips (parameters, nbval-check-output)
        toolbar.decompose()
    parameters = run_parameters(notebook)
    for cell in _cells_tagged(soup, INJECTED_TAG):
        note = soup.new_tag("p", attrs={"class": "run-parameters"})
        note.append("The outputs on this page come from a run with these parameters, which the "
                    "runner (papermill) set over the defaults above: ")
        for index, line in enumerate(parameters):
            if index:
                note.append(", ")
            code = soup.new_tag("code")
            code.string = line
            note.append(code)
        note.append(".")
        cell.replace_with(note)
    for output in soup.select('[data-mime-type="application/vnd.jupyter.stderr"]'):
        if is_progress_bar(output.get_text()):
            output["class"] = [*output.get("class", []), "progress-output"]
    for output in soup.select(".jp-OutputArea-output"):  # an empty stream: a progress bar's newline
        if _is_empty(output):
            (output.find_parent(class_="jp-OutputArea-child") or output).decompose()
    for cell in _cells_tagged(soup, COLLAPSE):
        for output in cell.select('.jp-OutputArea-output[data-mime-type="text/plain"]'):
            pre = output.find("pre")
            if pre is not None:
                pre.replace_with(BeautifulSoup(folded_source(pre.get_text()), "html.parser"))
        for output in cell.select('.jp-OutputArea-output[data-mime-type="text/html"]'):
            _fold_html(soup, output)  # IPython.display.Code: already highlighted
    for cell in _cells_tagged(soup, HIDE_INPUT):
        _fold_input(soup, cell)
    for td in soup.select("table.dataframe td"):  # "0.12x [0.08-0.16]": not broken at the hyphen
        if _INTERVAL.search(td.get_text()):
            td["class"] = [*td.get("class", []), "interval"]
    return str(soup)


def folded_input_summary(code: str) -> str:
    """What a folded cell's summary says: its first line when that is a comment (the cell's title),
    else what it imports or defines, and how many lines of Python it holds."""
    lines = code.rstrip("\n").splitlines()
    first = lines[0].strip() if lines else ""
    count = f"{len(lines)} line{'s' if len(lines) != 1 else ''} of Python, click to show"
    if first.startswith("#"):
        return f"{first.lstrip('#').strip()} ({count})"
    try:
        body = ast.parse(code).body
    except SyntaxError:
        body = []
    if body and all(isinstance(node, (ast.Import, ast.ImportFrom)) for node in body):
        return f"The imports ({count})"
    names = [node.name for node in body
             if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    if names:
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        return f"The code that defines {shown} ({count})"
    return f"The code of this cell ({count})"


def _fold_input(soup: BeautifulSoup, cell: Tag) -> None:
    """A cell's code inside a folded <details>; its outputs stay in view."""
    wrapper = cell.find(class_="jp-Cell-inputWrapper")
    if wrapper is None:
        return
    pre = wrapper.find("pre")
    details = soup.new_tag("details", attrs={"class": "folded-input"})
    summary = soup.new_tag("summary")
    summary.string = folded_input_summary(pre.get_text() if pre is not None else "")
    wrapper.replace_with(details)
    details.append(summary)
    details.append(wrapper)


def _is_empty(output: Tag) -> bool:
    """An output that shows nothing: only whitespace, no image, table or other element."""
    return not output.get_text().strip() and not output.find(["img", "svg", "table", "iframe",
                                                              "video", "canvas", "input"])


def _fold_html(soup: BeautifulSoup, output: Tag) -> None:
    """The children of an HTML output (a highlighted file, IPython.display.Code) inside a folded
    <details>, with its line count."""
    pre, table = output.find("pre"), output.find("table")
    count = len(pre.get_text().rstrip("\n").splitlines()) if pre is not None else 0
    if table is not None and pre is None:  # a pandas DataFrame: the chart above shows its figures
        rows = len(table.select("tbody tr")) or len(table.find_all("tr"))
        text = f"The table: {rows} row{'s' if rows != 1 else ''} (click to show)"
    elif output.find(class_="highlight"):
        text = f"The printed script: {count} lines of Python (click to show)"
    else:
        text = f"The printed file: {count} lines (click to show)"
    details = soup.new_tag("details", attrs={"class": "printed-file"})
    summary = soup.new_tag("summary")
    summary.string = text
    details.append(summary)
    for child in list(output.children):
        details.append(child.extract())
    output.append(details)
