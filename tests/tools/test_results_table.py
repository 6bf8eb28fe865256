"""The generated blocks as committed (tools.results_table): the README's findings, the results page's
goals, tables and published figures, in step with the records; `--check` catches a stale block."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from fakes import edit_bottom_line

from helpers.data.paths import REPO_ROOT
from tools import findings
from tools import goals_table
from tools import inventory
from tools import notebook_tables
from tools import published_comparison
from tools import results_table

RESULTS_PAGE = REPO_ROOT / "docs" / "pages" / "results.md"


def module_blocks(module: Any) -> dict[str, list[str]]:
    """``{command-line option of the page: its block names}`` that a module's command writes."""
    if module is results_table:
        return {
            "readme": list(results_table.README_BLOCKS),
            "results-page": list(results_table.PAGE_BLOCKS),
            "bottleneck-page": list(results_table.BOTTLENECK_BLOCKS),
        }
    return {"readme": [module.BLOCK]}


def test_readme_findings_and_the_results_page_match_the_json() -> None:
    assert results_table.main(["--check"]) == 0
    assert findings.render_findings() in (REPO_ROOT / "README.md").read_text()
    page = RESULTS_PAGE.read_text()
    prefix = results_table.PAGE_PREFIX
    for render in (
        goals_table.render_goals_table,
        notebook_tables.render_notebook_tables,
        published_comparison.render_published_comparison,
    ):
        assert render(prefix=prefix) in page


def test_the_readme_holds_no_table_of_figures(report_figure) -> None:
    """The README is for the learner: the inventory is its only table (every table of figures is
    on the results page). Its length (`wc -w README.md`) is reported, not judged."""
    readme = (REPO_ROOT / "README.md").read_text()
    report_figure("README.md words", len(readme.split()))
    headers = [line for line in readme.splitlines() if re.match(r"\|\s*[-:]+\s*\|", line)]
    assert len(headers) == 1, "a table besides the inventory: move it to docs/pages/results.md"
    assert "<!-- results-table:start -->" not in readme and "<!-- goals:start -->" not in readme


def test_the_results_page_has_the_goals_then_the_tables_then_the_published_figures() -> None:
    page = RESULTS_PAGE.read_text()
    starts = [
        page.index(f"<!-- {name}:start -->") for name in ("goals", "notebook-tables", "published-comparison")
    ]
    assert starts == sorted(starts)


@pytest.mark.parametrize("module", [inventory, results_table], ids=["inventory", "results"])
def test_check_fails_on_a_stale_block_and_the_rewrite_fixes_it(module: Any, tmp_path: Path) -> None:
    pages = {option: tmp_path / f"{option}.md" for option in module_blocks(module)}
    options = [part for option, path in pages.items() for part in (f"--{option}", str(path))]
    for option, names in module_blocks(module).items():
        blocks = "".join(f"<!-- {name}:start -->\nstale\n<!-- {name}:end -->\n" for name in names)
        pages[option].write_text(f"# x\n\n{blocks}\ntail\n")
    if module is results_table:  # and the notebooks' bottom lines: one stale, one missing
        notebooks = tmp_path / "notebooks"
        notebooks.mkdir()
        for name in ("02-capture-mode", "04-scaling-out"):
            shutil.copy(REPO_ROOT / "notebooks" / f"{name}.ipynb", notebooks)
        edit_bottom_line(notebooks / "02-capture-mode.ipynb", lambda cell: cell.update(source=["stale"]))
        edit_bottom_line(notebooks / "04-scaling-out.ipynb", None)
        options += ["--notebooks", str(notebooks)]
    assert module.main(["--check", *options]) == 1
    assert all("stale" in page.read_text() for page in pages.values())  # --check writes nothing
    assert module.main(options) == 0
    assert module.main(["--check", *options]) == 0
    for page in pages.values():
        assert page.read_text().endswith("\n\ntail\n") and "stale" not in page.read_text()
    if module is results_table:
        for path in notebooks.iterdir():
            assert path.read_bytes() == (REPO_ROOT / "notebooks" / path.name).read_bytes()
    for page in pages.values():  # a page without its blocks, the others fine
        kept = page.read_text()
        page.write_text("# no block\n")
        assert module.main(["--check", *options]) == 1
        page.write_text(kept)
