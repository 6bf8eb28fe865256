"""The suite's own promises about set-up: one package list, one test command."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parent.parent


def _requirements(path: Path) -> list[str]:
    lines = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("-r "):
            lines += _requirements(path.parent / line[3:].strip())
        elif line:
            lines.append(line)
    return lines


def test_environment_yml_mirrors_requirements_txt() -> None:
    environment = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in environment["dependencies"] if isinstance(d, dict))
    assert sorted(pip) == sorted(_requirements(ROOT / "requirements.txt"))
    assert "pip" in environment["dependencies"]
    assert any(str(d).startswith("python") for d in environment["dependencies"])


def test_the_required_packages_are_listed() -> None:
    names = {re.split(r"[=<>!~\[ ]", r)[0].lower() for r in _requirements(ROOT / "requirements.txt")}
    assert {"nvidia-dali-cuda120", "torch", "matplotlib", "jupyterlab", "nbval", "papermill",
            "lmdb", "mlxtend"} <= names


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme and "make run" in readme
    assert re.search(r"^make test\b", (ROOT / ".ci" / "run").read_text(), re.M)


def test_make_knows_every_target_the_readme_names() -> None:
    readme = (ROOT / "README.md").read_text()
    targets = set(re.findall(r"`make ([a-z-]+)", readme))
    result = subprocess.run(["make", "-n", "-C", str(ROOT), *sorted(targets), "SETUP="],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def _makefile_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([a-z][a-z-]*):", text, re.M))


def test_make_help_lists_every_target() -> None:
    result = subprocess.run(["make", "-s", "-C", str(ROOT), "help"], capture_output=True, text=True,
                            check=True)
    listed = set(re.findall(r"^make ([a-z-]+)", result.stdout, re.M))
    assert listed == _makefile_targets() - {"help"}


def test_every_makefile_variable_is_used() -> None:
    text = (ROOT / "Makefile").read_text()
    defined = set(re.findall(r"^([A-Z_]+)\s*[?:]?=", text, re.M))
    unused = {v for v in defined if v != "PYTHONPATH" and f"$({v})" not in text}
    assert not unused


def _imported_packages() -> set[str]:
    """Top-level names of the third-party packages the code, the tests and the notebooks import."""
    sources = [p.read_text() for folder in ("helpers", "tools", "tests", "notebooks")
               for p in (ROOT / folder).rglob("*.py")]
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        sources += ["\n".join(line for line in cell.source.splitlines()
                              if not line.lstrip().startswith(("%", "!")))
                    for cell in nbformat.read(notebook, as_version=4).cells if cell.cell_type == "code"]
    names: set[str] = set()
    for source in sources:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    local = {"helpers", "tools", "conftest"} | {p.stem for p in (ROOT / "tests").glob("*.py")} \
        | {p.stem for p in (ROOT / "notebooks" / "scripts").glob("*.py")}  # scripts import each other
    return names - set(sys.stdlib_module_names) - local


def _top_level_names(distribution: str) -> set[str]:
    """The names a declared distribution can be imported by."""
    try:
        dist = importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return set()
    listed = dist.read_text("top_level.txt")
    if listed:
        return set(listed.split())
    return {Path(str(f)).parts[0].removesuffix(".py") for f in dist.files or []
            if not str(f).startswith("..") and ".dist-info" not in str(f)}


def test_every_imported_package_is_declared() -> None:
    """pandas or PyYAML arriving as someone else's dependency is not enough: each is listed."""
    declared = {re.split(r"[=<>!~\[ ]", r)[0] for r in _requirements(ROOT / "requirements.txt")}
    importable = set().union(*(_top_level_names(d) for d in declared))
    undeclared = _imported_packages() - importable
    assert not undeclared, f"imported but not in requirements.txt: {sorted(undeclared)}"


def test_committed_notebooks_name_the_suites_kernel() -> None:
    """`make setup` installs the kernel as python3 with this display name; a notebook that names
    another one is marked modified as soon as JupyterLab opens it."""
    display = re.search(r"^KERNEL_DISPLAY_NAME = (.+)$", (ROOT / "Makefile").read_text(), re.M)[1]
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        spec = nbformat.read(notebook, as_version=4).metadata["kernelspec"]
        assert (spec["name"], spec["display_name"]) == ("python3", display), notebook.name
