"""The results page's tables and the README's findings, generated from the committed records
(never typed): the command that writes them.

    python -m tools.results_table          # rewrite README.md's findings, docs/pages/results.md's tables,
                                           # docs/pages/bottleneck.md's and each notebook's bottom-line cell
    python -m tools.results_table --check  # exit 1 if one of them is out of date

The records are read through ``tools.records`` (``results/*.json``; format in
``tools.record_format``): every fact comes from the records themselves, never from a file name.
Each block is a module's job. The results page (docs/pages/results.md) holds, in this order:

- the goals table (block ``goals``): ``tools.goals_table`` (each goal checked by
  ``tools.goal_check``);
- a table per notebook (block ``notebook-tables``): ``tools.notebook_tables``, rows labelled by
  each notebook's ``headline`` metadata;
- the comparison with what DALI's own tutorials printed (block ``published-comparison``):
  ``tools.published_comparison``.

The bottleneck page (docs/pages/bottleneck.md, ``--bottleneck-page``) holds the table of what the
sampler shows (block ``bottleneck-video``): ``tools.bottleneck_table``, every figure from one run,
the newest GPU record that holds notebook 07.

The README's findings block is ``tools.findings``', the notebooks' bottom-line cells
``tools.bottom_lines``' (``--notebooks DIR``, default ``notebooks/``). The committed page links
to the records and notebooks from ``docs/pages/`` (``../../results/...``); the docs hook
(docs/hooks.py) fills the same blocks with the site's links (``results/...``) when it builds the
page.
"""

from __future__ import annotations

import sys

from helpers.data.paths import REPO_ROOT
from tools import bottleneck_table
from tools import bottom_lines
from tools import findings
from tools import readme_blocks
from tools.goals_table import render_goals_table
from tools.notebook_tables import render_notebook_tables
from tools.published_comparison import render_published_comparison

GOALS_BLOCK = "goals"
TABLES_BLOCK = "notebook-tables"
PUBLISHED_BLOCK = "published-comparison"
RESULTS_PAGE = REPO_ROOT / "docs" / "pages" / "results.md"
# links lead from the page to the folder that holds results/ and notebooks/: "" in the README and
# on the site (docs/hooks.py), PAGE_PREFIX in the committed docs/pages/results.md
PAGE_PREFIX = "../../"


# what this command writes: the README's block, and the results page's blocks (with the page's links)
README_BLOCKS = {findings.BLOCK: findings.render_findings}
PAGE_BLOCKS = {
    GOALS_BLOCK: lambda: render_goals_table(prefix=PAGE_PREFIX),
    TABLES_BLOCK: lambda: render_notebook_tables(prefix=PAGE_PREFIX),
    PUBLISHED_BLOCK: lambda: render_published_comparison(prefix=PAGE_PREFIX),
}
# the bottleneck page's table, from the newest GPU record that holds notebook 07 (no links)
BOTTLENECK_BLOCKS = {bottleneck_table.BLOCK: bottleneck_table.render_bottleneck_table}
# and each notebook's bottom-line cell (tools.bottom_lines), in the notebooks of --notebooks
OTHERS = {"notebooks": (bottom_lines.NOTEBOOKS_DIR, bottom_lines.update)}


def main(argv: list[str] | None = None) -> int:
    return readme_blocks.main(
        argv,
        blocks=README_BLOCKS,
        command="python -m tools.results_table",
        description=__doc__.split("\n")[0],
        pages={
            "results-page": (RESULTS_PAGE, PAGE_BLOCKS),
            "bottleneck-page": (bottleneck_table.PAGE, BOTTLENECK_BLOCKS),
        },
        others=OTHERS,
    )


if __name__ == "__main__":
    sys.exit(main())
