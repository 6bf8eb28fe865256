"""A notebook page of the docs site shaped for readers (:func:`reader_view`): the cell tags of
the test machinery are not shown, papermill's injected-parameters cell becomes one line that says
with which parameters the outputs were made, a progress bar on stderr is not styled as an error,
a long printed file or a table (a cell tagged ``collapse-output``, as text, IPython's highlighted
``Code`` or a pandas table) is shown folded, a file highlighted; the code of a cell tagged
``hide-input`` (bookkeeping) is folded under its first comment or what it defines; an interval
in a table cell is not broken at its hyphen; and an output of nothing but whitespace (a progress
bar's closing newline) is not shown.
"""

from __future__ import annotations

import ast
import re
from html import escape as html_escape
from typing import Any

from bs4 import BeautifulSoup
from bs4 import Tag
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from helpers.toolkit.parameters import INJECTED_TAG

COLLAPSE = "collapse-output"  # a cell tag of ours: its printed output is a file, shown folded
# Jupyter Book's tag, ours too: the cell's code is bookkeeping (imports, parameter checks, tables of
# results, the record), shown folded under its first comment; JupyterLab folds it by the cell's
# metadata jupyter.source_hidden, which tests/notebooks/test_notebooks.py keeps in step with the tag
HIDE_INPUT = "hide-input"
_INTERVAL = re.compile(r"\[\s*-?[\d.,]+\s*[-–]\s*-?[\d.,]+\s*\]")
_PROGRESS_LINE = re.compile(r"^.*\d+%\|.*\|\s*\d+(\.\d+)?[kMG]?/\d+(\.\d+)?[kMG]?\b.*$")


def _cells_tagged(soup: BeautifulSoup, tag: str) -> list[Tag]:
    """The outermost element of each cell with ``tag`` (mkdocs-jupyter nests two divs per cell,
    both with the class ``celltag_<tag>``)."""
    css = f"celltag_{tag}"
    return [
        cell
        for cell in soup.find_all(class_=css)
        if not any(css in (parent.get("class") or []) for parent in cell.parents)
    ]


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def injected_assignments(notebook: dict[str, Any]) -> list[str]:
    """The assignments of papermill's injected-parameters cell (comments left out)."""
    lines: list[str] = []
    for cell in notebook.get("cells", []):
        if INJECTED_TAG in cell.get("metadata", {}).get("tags", []):
            lines += [
                line.strip()
                for line in _source(cell).splitlines()
                if line.strip() and not line.lstrip().startswith("#")
            ]
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
    return (
        f'<details class="printed-file"><summary>The printed {what} (click to show)'
        f"</summary>\n{body}</details>"
    )


def reader_view(html: str, notebook: dict[str, Any]) -> str:
    """A notebook page as a reader needs it; see the module's docstring."""
    soup = BeautifulSoup(html, "html.parser")
    for toolbar in soup.select(".celltoolbar"):  # the tag chips (parameters, nbval-check-output)
        toolbar.decompose()
    parameters = injected_assignments(notebook)
    for cell in _cells_tagged(soup, INJECTED_TAG):
        note = soup.new_tag("p", attrs={"class": "run-parameters"})
        note.append(
            "The outputs on this page come from a run with these parameters, which the "
            "runner (papermill) set over the defaults above: "
        )
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
    names = [
        node.name for node in body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    ]
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
    return not output.get_text().strip() and not output.find(
        ["img", "svg", "table", "iframe", "video", "canvas", "input"]
    )


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
