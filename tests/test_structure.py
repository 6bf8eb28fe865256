"""CONTRIBUTING.md's module table names every module of ``helpers`` and no other, and every module
of ``helpers`` is there for the notebooks. The import contracts (pyproject.toml's
``[tool.importlinter]``) are checked by `make lint`, not here."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat
import pytest

from helpers.data.paths import REPO_ROOT
from tools import inventory

KINDS = ("lessons", "toolkit", "data")


def _modules(kind: str) -> set[str]:
    return {p.stem for p in (REPO_ROOT / "helpers" / kind).glob("*.py") if p.stem != "__init__"}


def test_helpers_holds_three_kinds_and_nothing_else() -> None:
    """``helpers`` is three folders by kind; a module dropped at its top level belongs in one."""
    loose = sorted(p.name for p in (REPO_ROOT / "helpers").glob("*.py") if p.stem != "__init__")
    folders = sorted(
        p.name for p in (REPO_ROOT / "helpers").iterdir() if p.is_dir() and (p / "__init__.py").exists()
    )
    assert not loose, f"helpers/{loose}: move each into helpers/lessons, helpers/toolkit or helpers/data"
    assert folders == sorted(KINDS), f"helpers' folders are {folders}, not {sorted(KINDS)}"


def test_every_lesson_module_is_named_after_its_notebook() -> None:
    """helpers/lessons holds one module per notebook, ``nbNN_<the notebook's slug>``."""
    slugs = {p.stem.replace("-", "_") for p in (REPO_ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb")}
    for module in _modules("lessons"):
        assert module.startswith("nb") and module[2:] in slugs, (
            f"helpers/lessons/{module}.py: name it nbNN_<slug> after its notebook (one of {sorted(slugs)})"
        )


def test_contributing_lists_every_helpers_module_under_its_folder() -> None:
    """CONTRIBUTING.md's tables, one per folder, are the one place that says what each module is
    for: each names every module of its folder, and no module of another folder."""
    text = (REPO_ROOT / "CONTRIBUTING.md").read_text()
    for kind in KINDS:
        heading = f"**`helpers/{kind}/`"
        assert heading in text, f"CONTRIBUTING.md has no table headed {heading}"
        table = text.split(heading, 1)[1].split("\n\n**", 1)[0]
        first_cells = [row.split("|")[1] for row in table.splitlines() if row.startswith("| `")]
        listed = [m for cell in first_cells for m in re.findall(r"`helpers\.(\w+)\.(\w+)`", cell)]
        assert {k for k, _ in listed} <= {kind}, f"helpers/{kind}'s table lists {sorted(set(listed))}"
        named = {m for _, m in listed}
        assert named == _modules(kind), (
            f"helpers/{kind}: missing from CONTRIBUTING.md: {sorted(_modules(kind) - named)}; "
            f"listed but gone: {sorted(named - _modules(kind))}"
        )


def _helpers_imported_by(source: str) -> set[str]:
    """The modules of ``helpers`` that ``source`` imports, as ``kind.module``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("helpers."):
            parts = node.module.split(".")
            found |= (
                {".".join(parts[1:3])} if len(parts) > 2 else {f"{parts[1]}.{a.name}" for a in node.names}
            )
        elif isinstance(node, ast.Import):
            found |= {".".join(a.name.split(".")[1:3]) for a in node.names if a.name.startswith("helpers.")}
    return found


def test_every_helpers_module_is_there_for_the_notebooks() -> None:
    """``helpers`` is what the notebooks teach with: each of its modules is imported by a
    notebook's code cell, a training script of ``notebooks/scripts`` or another module of
    ``helpers``, never only by ``tools`` or the tests (machinery belongs in ``tools``)."""
    sources = [
        p.read_text()
        for p in [
            *(REPO_ROOT / "notebooks" / "scripts").glob("*.py"),
            *(REPO_ROOT / "helpers").glob("*/*.py"),
        ]
    ]
    for notebook in sorted((REPO_ROOT / "notebooks").glob("*.ipynb")):
        sources += [
            "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
            for cell in nbformat.read(notebook, as_version=4).cells
            if cell.cell_type == "code"
        ]
    used = set().union(*map(_helpers_imported_by, sources))
    modules = {f"{kind}.{m}" for kind in KINDS for m in _modules(kind)}
    assert not modules - used, f"only tools or the tests import {sorted(modules - used)}: move them to tools"


def test_the_lessons_table_is_generated_from_the_lessons_docstrings(tmp_path: Path) -> None:
    """CONTRIBUTING.md's lessons table is each lesson's docstring (``python -m tools.inventory``),
    so that a new notebook's lesson needs no edit there; a lesson without a docstring is refused."""
    assert inventory.render_lessons() in (REPO_ROOT / "CONTRIBUTING.md").read_text()
    rows = [r for r in inventory.render_lessons().splitlines() if r.startswith("| `helpers.lessons.")]
    assert len(rows) == len(_modules("lessons"))
    assert "``" not in "".join(rows) and ":func:" not in "".join(rows)  # Markdown, not reST
    (tmp_path / "helpers" / "lessons").mkdir(parents=True)
    (tmp_path / "helpers" / "lessons" / "nb99_dummy.py").write_text("X = 1\n")
    with pytest.raises(ValueError, match="nb99_dummy.py has no docstring: say what it holds"):
        inventory.render_lessons(tmp_path)


# tests/<folder> holds the tests of <source>: a test file per module, named test_<module>.py
LAYOUT = {
    "lessons": "helpers/lessons",
    "toolkit": "helpers/toolkit",
    "data": "helpers/data",
    "tools": "tools",
}
# test files that cover several modules of their folder, each named after what it checks
ACROSS = {
    "toolkit": {"test_figure_legibility"},  # plots and display, the figures' text at their size
    "tools": {"test_lab"},  # make lab: tools.copies and tools.suite, through a Jupyter server
}
# at tests/: the shared modules and the tests of the suite as a whole
TOP = {
    "conftest",
    "fakes",
    "notebook_setup",
    "test_browser_fixture",
    "test_dali_behaviour",
    "test_docs_site",
    "test_environment",
    "test_no_machine_paths",
    "test_structure",
}


def test_the_tests_are_laid_out_as_the_source_is() -> None:
    """A module's tests are found where it is: tests/lessons/test_nb02_capture_mode.py for
    helpers/lessons/nb02_capture_mode.py, tests/tools/test_findings.py for tools/findings.py; a
    notebook's run is tested in tests/notebooks/test_nbNN.py, one per notebook."""
    tests = REPO_ROOT / "tests"
    for folder, source in LAYOUT.items():
        modules = {p.stem for p in (REPO_ROOT / source).glob("*.py")} - {"__init__"}
        for test in sorted((tests / folder).glob("*.py")):
            assert test.stem.removeprefix("test_") in modules or test.stem in ACROSS.get(folder, set()), (
                f"tests/{folder}/{test.name}: name it test_<module>.py after a module of {source}/, "
                "or move it where its module is"
            )
    numbers = {p.name[:2] for p in (REPO_ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb")}
    runs = {p.stem for p in (tests / "notebooks").glob("test_nb[0-9][0-9].py")}
    assert runs == {f"test_nb{n}" for n in numbers}
    top = {p.stem for p in tests.glob("*.py")}
    assert top == TOP, f"at tests/, move {sorted(top - TOP)} into the folder of what they test"
