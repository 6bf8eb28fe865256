"""Two packages, one direction: ``tools`` may import ``helpers``, never the reverse; no import
cycle among the modules of either, not even inside a function; ``helpers.paths`` imports nothing
of the project. import-linter checks these contracts (pyproject.toml's ``[tool.importlinter]``,
run by `make lint`); the tests here run it on this checkout and on a tree that breaks each."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from helpers.paths import REPO_ROOT

CONTRACTS = "# `make lint` (lint-imports)"


def lint_imports(root: Path, config: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(root))
    return subprocess.run([sys.executable, "-c", "from importlinter.cli import lint_imports_command; "
                           "lint_imports_command()", "--config", str(config), "--no-cache"],
                          cwd=root, env=env, capture_output=True, text=True, check=False)


def test_the_checkout_keeps_its_import_contracts() -> None:
    result = lint_imports(REPO_ROOT, REPO_ROOT / "pyproject.toml")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "4 kept, 0 broken" in result.stdout


def test_the_contracts_catch_each_kind_of_fault(tmp_path: Path) -> None:
    text = (REPO_ROOT / "pyproject.toml").read_text()
    (tmp_path / "pyproject.toml").write_text(text[text.index(CONTRACTS):])
    files = {"helpers/__init__.py": "", "tools/__init__.py": "", "tools/x.py": "y = 1\n",
             "helpers/paths.py": "import helpers.a\n",  # paths imports the project
             "helpers/a.py": "from tools import x\n",  # helpers imports tools
             "helpers/b.py": "def f():\n    import helpers.c\n",  # a cycle, inside a function
             "helpers/c.py": "import helpers.b\n",
             "helpers/data_sources.py": "import helpers.parameters\n",  # the data layer imports teaching code
             "helpers/parameters.py": ""}
    # the contracts name modules that must exist: the checkout's, empty unless given above
    files = {f"helpers/{m.name}": "" for m in (REPO_ROOT / "helpers").glob("*.py")} | files
    for name, source in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(source)
    result = lint_imports(tmp_path, tmp_path / "pyproject.toml")
    assert result.returncode != 0
    broken = re.findall(r"^(.*?) BROKEN$", result.stdout, re.MULTILINE)
    assert len(broken) == 4 and "0 kept, 4 broken" in result.stdout, result.stdout[-3000:]


def test_contributing_lists_every_helpers_module_and_no_other() -> None:
    """CONTRIBUTING.md's module table is the one place that says what each module is for."""
    text = (REPO_ROOT / "CONTRIBUTING.md").read_text()
    listed = re.findall(r"`helpers\.(\w+)`", text)
    modules = {p.stem for p in (REPO_ROOT / "helpers").glob("*.py") if p.stem != "__init__"}
    assert set(listed) == modules, (f"missing from CONTRIBUTING.md: {sorted(modules - set(listed))}; "
                                    f"listed but gone: {sorted(set(listed) - modules)}")
