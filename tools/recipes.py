"""Each notebook's recipe: the code cell tagged ``recipe`` that a user copies into a project that
does not have this repository.

A recipe imports only DALI, torch, torchvision, numpy and the standard library, is at most
:data:`MAX_LINES` non-blank lines, and starts with its **settings**: the first run of top-level
assignments to UPPERCASE names (``FOLDER = ...  # what it is``), the only lines a user edits and
the only names the notebook's own values reach it by. Every line after them runs as it would in a
user's file.

:func:`run` runs a recipe as a user does: in a fresh Python process whose working directory is
not the repository and where ``helpers`` and ``tools`` cannot be imported, with some settings
replaced (:func:`script`), and hands back what the caller asks to see of its namespace (a JSON
object of expressions evaluated after the recipe ran). tests/tools/test_recipes.py runs every recipe so
on the CPU at a small scale, and the GPU tier on the GPU.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat

TAG = "recipe"
MAX_LINES = 40
ALLOWED = ("nvidia", "torch", "torchvision", "numpy")  # and the standard library
SETTING = re.compile(r"^([A-Z][A-Z0-9_]*) = (.+)$")
# the first lines of every recipe's script: the suite is not there to import
NO_SUITE = (
    "import sys\nsys.modules.update(helpers=None, tools=None)  # as in a project without this repository\n"
)
REPORT = "__recipe_report__"


class RecipeError(ValueError):
    """A recipe that breaks the rules above; the message names the notebook and the rule."""


@dataclass(frozen=True)
class Recipe:
    notebook: Path
    source: str

    @property
    def lines(self) -> list[str]:
        return [line for line in self.source.splitlines() if line.strip()]

    @property
    def settings(self) -> dict[str, str]:
        """The settings: name -> the expression the notebook gives it (its first run of top-level
        ``NAME = value`` lines, comments and blank lines inside it allowed)."""
        found: dict[str, str] = {}
        for line in self.source.splitlines():
            match = SETTING.match(line)
            if match:
                found[match.group(1)] = match.group(2)
            elif found and line.strip() and not line.lstrip().startswith("#"):
                break
        return found

    def imports(self) -> set[str]:
        """The top-level modules the recipe imports."""
        names: set[str] = set()
        for node in ast.walk(ast.parse(self.source)):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                names.add((node.module or ".").split(".")[0])
        return names

    def problems(self) -> list[str]:
        """What breaks the rules (empty: none)."""
        found = []
        if len(self.lines) > MAX_LINES:
            found.append(f"{len(self.lines)} non-blank lines (at most {MAX_LINES})")
        foreign = sorted(m for m in self.imports() if m not in ALLOWED and m not in sys.stdlib_module_names)
        if foreign:
            found.append(f"imports {foreign} (only DALI, torch, torchvision, numpy and the standard library)")
        if not self.settings:
            found.append("no settings (UPPERCASE_NAME = value lines) at its top")
        for name, expression in self.settings.items():
            foreign = sorted(_names(expression) - self.imported_names() - set(self.settings) - BUILTINS)
            if foreign:
                found.append(
                    f"setting {name} reads {foreign}: a setting is a literal or an "
                    "expression of the recipe's own imports, never a notebook's variable"
                )
        return found

    def imported_names(self) -> set[str]:
        """The names the recipe's imports bind (``import torch`` binds torch)."""
        names: set[str] = set()
        for node in ast.walk(ast.parse(self.source)):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        return names


BUILTINS = {"True", "False", "None", "str", "int", "float", "tuple", "len", "min", "max", "range"}


def _names(expression: str) -> set[str]:
    """The free names an expression reads (``a.b(c)`` reads a and c)."""
    return {
        node.id for node in ast.walk(ast.parse(expression.strip(), mode="eval")) if isinstance(node, ast.Name)
    }


def recipe(notebook: Path) -> Recipe | None:
    """The notebook's recipe cell (None: it has none); two are an error."""
    cells = [
        c
        for c in nbformat.read(notebook, as_version=4).cells
        if c.cell_type == "code" and TAG in c.metadata.get("tags", [])
    ]
    if len(cells) > 1:
        raise RecipeError(f"{notebook.name}: {len(cells)} cells tagged {TAG!r}; a notebook has one recipe")
    return Recipe(notebook, cells[0].source) if cells else None


def script(found: Recipe, settings: dict[str, Any], report: dict[str, str]) -> str:
    """The recipe as a file a user would run: the settings named in ``settings`` replaced by
    those values (``repr``), then lines that print ``report``'s expressions as one JSON object."""
    unknown = sorted(set(settings) - set(found.settings))
    if unknown:
        raise RecipeError(
            f"{found.notebook.name}: its recipe has no setting {unknown}; it has {sorted(found.settings)}"
        )
    lines = []
    for line in found.source.splitlines():
        match = SETTING.match(line)
        if match and match.group(1) in settings:
            line = f"{match.group(1)} = {settings[match.group(1)]!r}"
        lines.append(line)
    shown = ", ".join(f"{key!r}: {expression}" for key, expression in report.items())
    return (
        NO_SUITE
        + "\n".join(lines)
        + f"\n\nimport json as _json\nprint({REPORT!r}, _json.dumps({{{shown}}}, default=str))\n"
    )


def run(
    found: Recipe,
    settings: dict[str, Any],
    report: dict[str, str],
    workdir: Path,
    timeout: float = 600,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run the recipe with ``settings`` in a fresh process in ``workdir``; return ``report``
    evaluated in its namespace. A failure raises with the recipe's own output."""
    path = workdir / f"recipe_{found.notebook.stem[:2]}.py"
    path.write_text(script(found, settings, report))
    done = subprocess.run(
        [sys.executable, path.name],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith(REPORT)]
    if done.returncode or not lines:
        raise AssertionError(
            f"{found.notebook.name}'s recipe failed (exit {done.returncode}):\n"
            f"{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
        )
    return json.loads(lines[-1][len(REPORT) :])


STEP_CALLS = ("train_step", "train", "step")  # a model's step, called by name (not a method)
STEP_METHODS = ("train_step", "fit", "backward")  # ... or as a method: a trainer's, or the loss's
EPOCHS = ("next_epoch", "epoch", "eager_batches", "DALIGenericIterator")  # what yields a DALI epoch
FOLDED = ("hide-input", TAG)  # code a page does not show as plain code where it teaches


def _call_name(node: ast.AST) -> str:
    if not isinstance(node, ast.Call):
        return ""
    return node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")


def _calls_a_step(loop: ast.For | ast.While) -> bool:
    for node in ast.walk(loop):
        if isinstance(node, ast.Call) and (
            (isinstance(node.func, ast.Name) and node.func.id in STEP_CALLS)
            or (isinstance(node.func, ast.Attribute) and node.func.attr in STEP_METHODS)
        ):
            return True
    return False


def _yields_an_epoch(node: ast.AST, streams: set[str]) -> bool:
    """``node`` is a call that yields a DALI epoch, a name bound to one in the cell, or an
    expression built on one (``zip(range(n), reader.next_epoch(...))``, a generator over it)."""
    return any(
        _call_name(n) in EPOCHS or (isinstance(n, ast.Name) and n.id in streams) for n in ast.walk(node)
    )


def _iterates_an_epoch(loop: ast.For | ast.While, streams: set[str]) -> bool:
    if isinstance(loop, ast.For):
        return _yields_an_epoch(loop.iter, streams)
    return any(  # a while loop that takes a stream's batches: next(stream)
        _call_name(n) == "next" and n.args and _yields_an_epoch(n.args[0], streams)
        for n in ast.walk(loop)
        if isinstance(n, ast.Call)
    )


def out_of_sight(cell: Any) -> bool:
    """Not where a loop is taught: code hidden on the page or in JupyterLab (``hide-input``,
    ``source_hidden``), or the recipe, which follows the lessons."""
    return bool(set(FOLDED) & set(cell.metadata.get("tags", []))) or bool(
        cell.metadata.get("jupyter", {}).get("source_hidden")
    )


def _times_the_training(source: str) -> bool:
    """The suite's harness timing a model's step: a call of ``.run(..., step=...)``."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    return any(
        _call_name(node) == "run" and any(k.arg == "step" for k in node.keywords)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
    )


def loops_in_sight(notebook: Path) -> list[int]:
    """The indexes of the code cells that hold a whole training loop in plain code, shown as
    it is (neither folded nor the recipe), before the suite's harness times the training (the
    first cell that runs it with a ``step``, or, in a notebook whose harness times trainers, the
    first that makes a ``Harness``): a ``for`` or ``while`` over a DALI epoch (:data:`EPOCHS`, or a
    name the cell binds to one) whose body calls the model's step (:data:`STEP_CALLS`,
    :data:`STEP_METHODS`)."""
    cells = nbformat.read(notebook, as_version=4).cells
    code = [c.source for c in cells if c.cell_type == "code"]
    harness_times_steps = any(_times_the_training(source) for source in code)
    found: list[int] = []
    for index, cell in enumerate(cells):
        if cell.cell_type != "code":
            continue
        if _times_the_training(cell.source) if harness_times_steps else "Harness(" in cell.source:
            break
        if out_of_sight(cell):
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:  # IPython's magics: not plain Python
            continue
        streams = {
            target.id
            for node in ast.walk(tree)
            if isinstance(node, ast.Assign) and _yields_an_epoch(node.value, set())
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        loops = [n for n in ast.walk(tree) if isinstance(n, (ast.For, ast.While))]
        if any(_iterates_an_epoch(loop, streams) and _calls_a_step(loop) for loop in loops):
            found.append(index)
    return found
