"""CONTRIBUTING.md's module table names every module of ``helpers`` and no other, and every module
of ``helpers`` is there for the notebooks. The import contracts (pyproject.toml's
``[tool.importlinter]``) are checked by `make lint`, not here."""

from __future__ import annotations

import ast
import re

import nbformat

from helpers.paths import REPO_ROOT


def test_contributing_lists_every_helpers_module_and_no_other() -> None:
    """CONTRIBUTING.md's module table is the one place that says what each module is for."""
    text = (REPO_ROOT / "CONTRIBUTING.md").read_text()
    listed = re.findall(r"`helpers\.(\w+)`", text)
    modules = {p.stem for p in (REPO_ROOT / "helpers").glob("*.py") if p.stem != "__init__"}
    assert set(listed) == modules, (f"missing from CONTRIBUTING.md: {sorted(modules - set(listed))}; "
                                    f"listed but gone: {sorted(set(listed) - modules)}")


def _helpers_imported_by(source: str) -> set[str]:
    """The modules of ``helpers`` that ``source`` imports (``from helpers import x`` included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module == "helpers":
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("helpers."):
            found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("helpers.")}
    return found


def test_every_helpers_module_is_there_for_the_notebooks() -> None:
    """``helpers`` is what the notebooks teach with: each of its modules is imported by a
    notebook's code cell, a training script of ``notebooks/scripts`` or another module of
    ``helpers``, never only by ``tools`` or the tests (machinery belongs in ``tools``)."""
    sources = [p.read_text() for p in [*(REPO_ROOT / "notebooks" / "scripts").glob("*.py"),
                                       *(REPO_ROOT / "helpers").glob("*.py")]]
    for notebook in sorted((REPO_ROOT / "notebooks").glob("*.ipynb")):
        sources += ["\n".join(line for line in cell.source.splitlines()
                              if not line.lstrip().startswith(("%", "!")))
                    for cell in nbformat.read(notebook, as_version=4).cells if cell.cell_type == "code"]
    used = set().union(*map(_helpers_imported_by, sources))
    modules = {p.stem for p in (REPO_ROOT / "helpers").glob("*.py") if p.stem != "__init__"}
    assert not modules - used, f"only tools or the tests import {sorted(modules - used)}: move them to tools"
