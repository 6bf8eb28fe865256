"""The recipes' rules (tools.recipes), for every notebook's recipe; each notebook's own test file
runs its recipe as a user would (``run_recipe``), and checks what it hands over."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from helpers.data import registry
from tools import recipes

NOTEBOOKS = [entry.path for entry in registry.notebooks()]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem[:2] for p in NOTEBOOKS])
def test_every_notebook_ends_in_a_recipe_that_keeps_the_rules(notebook: Path) -> None:
    """One cell tagged recipe, visible, after the last measurement, at most 40 lines, importing
    only DALI, torch, torchvision, numpy and the standard library, with its settings on top."""
    found = recipes.recipe(notebook)
    assert found is not None, f"{notebook.name} has no cell tagged {recipes.TAG!r}"
    assert not found.problems(), found.problems()
    cells = nbformat.read(notebook, as_version=4).cells
    cell = next(c for c in cells if recipes.TAG in c.metadata.get("tags", []))
    assert not cell.metadata.get("jupyter", {}).get("source_hidden"), "a recipe is shown"
    heading = cells[cells.index(cell) - 1]
    # "## Recipe" alone: the docs site gives it the id the bottom line links to (#recipe)
    assert heading.cell_type == "markdown", heading
    assert heading.source.splitlines()[0] == "## Recipe", heading.source[:200]
    # it comes after the record is saved: what a user copies is not what the suite measured with
    saved = [i for i, c in enumerate(cells) if "save_results(" in c.source]
    assert saved and saved[-1] < cells.index(cell)


def fake(tmp_path: Path, source: str) -> recipes.Recipe:
    notebook = tmp_path / "99-fake.ipynb"
    cell = nbformat.v4.new_code_cell(source, metadata={"tags": [recipes.TAG]})
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), notebook)
    found = recipes.recipe(notebook)
    assert found is not None
    return found


def test_settings_are_the_first_run_of_uppercase_assignments(tmp_path: Path) -> None:
    found = fake(
        tmp_path, "import os\n\n# settings\nFOLDER = folder.root  # yours\n\nBATCH = 8\nx = 1\nLATER = 2\n"
    )
    assert found.settings == {"FOLDER": "folder.root  # yours", "BATCH": "8"}
    script = recipes.script(found, {"FOLDER": "/data", "BATCH": 2}, {"x": "x"})
    assert "FOLDER = '/data'\n" in script and "BATCH = 2\n" in script and "LATER = 2" in script
    with pytest.raises(recipes.RecipeError, match=r"no setting \['BTACH'\]; it has \['BATCH', 'FOLDER'\]"):
        recipes.script(found, {"BTACH": 2}, {})


def test_a_recipe_that_breaks_the_rules_is_named(tmp_path: Path) -> None:
    found = fake(tmp_path, "import helpers\nfrom PIL import Image\nX = 1\n" + "y = 2\n" * 40)
    problems = found.problems()
    assert "43 non-blank lines (at most 40)" in problems
    assert any("imports ['PIL', 'helpers']" in p for p in problems)
    assert not fake(tmp_path, "import json\nimport numpy as np\nimport torch\nX = 1\n").problems()


def test_a_setting_that_reads_a_notebook_variable_is_named(tmp_path: Path) -> None:
    """A setting is a literal or an expression of the recipe's own imports: copied into a user's
    file, it runs as it is."""
    found = fake(
        tmp_path,
        "import torch\nFOLDER = str(train_dir)  # yours\n"
        "DEVICE = 'gpu' if torch.cuda.is_available() else 'cpu'\nSTEPS = (8, 16)\n"
        "BATCH = batch_size\nx = 1\n",
    )
    problems = found.problems()
    assert any(p.startswith("setting FOLDER reads ['train_dir']") for p in problems), problems
    assert any(p.startswith("setting BATCH reads ['batch_size']") for p in problems), problems
    assert not any("DEVICE" in p or "STEPS" in p for p in problems), problems


@pytest.mark.slow
def test_a_recipe_runs_where_the_suite_cannot_be_imported(tmp_path: Path) -> None:
    """Run as a user runs it: the suite's modules cannot be imported, the working directory is not
    the repository; the report is read back; a failure shows the recipe's own error."""
    ok = fake(tmp_path, "import os\nX = 1\nhere = os.getcwd()\n")
    report = recipes.run(ok, {"X": 3}, {"x": "X", "here": "here"}, tmp_path)
    assert report == {"x": 3, "here": str(tmp_path)}
    for source, error in [
        ("import helpers\nX = 1\n", "ModuleNotFoundError"),
        ("from tools import recipes\nX = 1\n", "ModuleNotFoundError"),
        ("X = 1\nraise SystemExit(3)\n", "exit 3"),
    ]:
        with pytest.raises(AssertionError, match=error):
            recipes.run(fake(tmp_path, source), {}, {}, tmp_path)


# the notebooks whose training runs only in processes they launch: the page shows the script's loop
IN_A_SCRIPT = {"04": "torchrun's processes run notebooks/scripts/train_ddp.py; its loop is excerpted on top"}


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem[:2] for p in NOTEBOOKS])
def test_every_notebook_that_trains_shows_its_whole_loop_before_the_harness_times_it(notebook: Path) -> None:
    """A notebook whose recipe trains holds its training loop in a cell of plain code, shown as
    it is, before the suite's harness times it (issue #47, item 3); 03 shows pipeline mode's
    loop too, the feeder its bottom line advises."""
    found = recipes.recipe(notebook)
    if found is None or "backward(" not in found.source:
        pytest.skip(f"{notebook.name}'s recipe trains no model")
    cells = nbformat.read(notebook, as_version=4).cells
    if notebook.stem[:2] in IN_A_SCRIPT:
        shown = [c for c in cells[:5] if c.cell_type == "code" and "excerpt(SCRIPT" in c.source]
        assert shown and not recipes.out_of_sight(shown[0]), "the script's loop, shown"
        assert shown and "for step, (jpegs, labels)" in shown[0].source, "the script's loop, on top"
        return
    loops = recipes.loops_in_sight(notebook)
    assert loops, (
        f"{notebook.name}: no visible code cell, before the harness times the training, loops over "
        f"a DALI epoch ({recipes.EPOCHS}) calling the model's step"
    )
    if notebook.stem.startswith("03"):
        assert any("DALIGenericIterator(" in cells[i].source for i in loops), "pipeline mode's loop"


def test_a_loop_folded_after_the_harness_or_over_no_epoch_is_not_in_sight(tmp_path: Path) -> None:
    notebook = tmp_path / "99-fake.ipynb"
    loop = "for jpegs, labels in reader.next_epoch(batch_size=8):\n    train_step(*prepare(jpegs, labels))\n"

    def found(*cells: tuple[str, dict]) -> list[int]:
        made = [nbformat.v4.new_code_cell(s, metadata=m) for s, m in cells]
        nbformat.write(nbformat.v4.new_notebook(cells=made), notebook)
        return recipes.loops_in_sight(notebook)

    assert found(("x = 1", {}), (loop, {})) == [1]
    stream = "stream = (b for _ in range(2) for b in reader.next_epoch(batch_size=8))\n"
    assert found((stream + "while True:\n    loop.fit(*next(stream))\n", {})) == [0]
    assert found((loop, {"tags": ["hide-input"]})) == []  # folded
    assert found((loop, {"jupyter": {"source_hidden": True}})) == []  # folded in JupyterLab
    assert found((loop, {"tags": [recipes.TAG]})) == []  # the recipe is not where the loop is taught
    assert found(("harness = Harness(unit='clips')", {}), (loop, {})) == []  # after the harness
    assert found(("harness = Harness(unit='clips')", {"tags": ["hide-input"]}), (loop, {})) == []
    timed = "fed = harness.run(ways, 3, step=train_step)"
    assert found(("harness.run(ways, 3)\nstep = 2", {}), (loop, {}), (timed, {})) == [1]  # no step= keyword
    assert found(("harness = Harness()", {}), (loop, {}), (timed, {})) == [1]  # before it times the step
    assert found((timed, {}), (loop, {})) == []
    once = "first = next(iter(reader.next_epoch(batch_size=8)))\nfor _ in range(3):\n    train_step(*first)\n"
    assert found((once, {})) == []  # one batch, not an epoch
    assert found(("for x, y in reader.next_epoch(batch_size=8):\n    model.train()\n", {})) == []
    assert found(("for x in reader.next_epoch(batch_size=8):\n    pass\ntrain_step(x)", {})) == []
    assert found(("%%time\n" + loop, {})) == []  # not plain Python
