"""CONTRIBUTING.md's module table names every module of ``helpers`` and no other. The import
contracts (pyproject.toml's ``[tool.importlinter]``) are checked by `make lint`, not here."""

from __future__ import annotations

import re

from helpers.paths import REPO_ROOT


def test_contributing_lists_every_helpers_module_and_no_other() -> None:
    """CONTRIBUTING.md's module table is the one place that says what each module is for."""
    text = (REPO_ROOT / "CONTRIBUTING.md").read_text()
    listed = re.findall(r"`helpers\.(\w+)`", text)
    modules = {p.stem for p in (REPO_ROOT / "helpers").glob("*.py") if p.stem != "__init__"}
    assert set(listed) == modules, (f"missing from CONTRIBUTING.md: {sorted(modules - set(listed))}; "
                                    f"listed but gone: {sorted(set(listed) - modules)}")
