"""The docs site's nav: its Notebooks section, left empty in docs/mkdocs.yml
(``- Notebooks: []``), holds the registry's notebooks (``helpers.data.registry``: every
notebooks/NN-*.ipynb, in order), so that no notebook is listed by hand; one listed there by hand,
or a missing section, is a problem the hook reports (docs/hooks.py, ``on_config``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from helpers.data.registry import notebook_paths

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
        problems.append(
            f"the nav has no `- {NAV_SECTION}: []` section: add it where the notebooks "
            "go (the hook fills it with every notebooks/NN-*.ipynb)"
        )
        return nav, problems
    listed = nav[at[0]][NAV_SECTION]
    if listed:
        problems.append(
            f"the nav's {NAV_SECTION} section lists {listed!r} by hand: leave it "
            f"`- {NAV_SECTION}: []`, the hook fills it with every notebooks/NN-*.ipynb "
            "(helpers.data.registry)"
        )
    nav[at[0]] = {NAV_SECTION: entries}
    return nav, problems
