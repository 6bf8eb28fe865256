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

from helpers.data.paths import REPO_ROOT


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
    environment = yaml.safe_load((REPO_ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in environment["dependencies"] if isinstance(d, dict))
    assert sorted(pip) == sorted(_requirements(REPO_ROOT / "requirements.txt"))
    assert "pip" in environment["dependencies"]
    assert any(str(d).startswith("python") for d in environment["dependencies"])


def test_the_required_packages_are_listed() -> None:
    names = {re.split(r"[=<>!~\[ ]", r)[0].lower() for r in _requirements(REPO_ROOT / "requirements.txt")}
    assert {
        "nvidia-dali-cuda120",
        "torch",
        "matplotlib",
        "jupyterlab",
        "nbval",
        "papermill",
        "lmdb",
        "mlxtend",
    } <= names


def test_ci_runs_the_readme_test_command() -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    assert "make test" in readme and "make run" in readme
    assert re.search(r"^make test\b", (REPO_ROOT / ".ci" / "run").read_text(), re.M)


def test_make_knows_every_target_the_readme_names() -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    targets = set(re.findall(r"`make ([a-z-]+)", readme))
    result = subprocess.run(
        ["make", "-n", "-C", str(REPO_ROOT), *sorted(targets), "SETUP="], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def _makefile_targets() -> set[str]:
    text = (REPO_ROOT / "Makefile").read_text()
    return set(re.findall(r"^([a-z][a-z-]*):", text, re.M))


def test_make_help_lists_every_target() -> None:
    result = subprocess.run(
        ["make", "-s", "-C", str(REPO_ROOT), "help"], capture_output=True, text=True, check=True
    )
    listed = set(re.findall(r"^make ([a-z-]+)", result.stdout, re.M))
    assert listed == _makefile_targets() - {"help"}


def test_every_makefile_variable_is_used() -> None:
    text = (REPO_ROOT / "Makefile").read_text()
    defined = set(re.findall(r"^([A-Z_]+)\s*[?:]?=", text, re.M))
    unused = {v for v in defined if v != "PYTHONPATH" and f"$({v})" not in text}
    assert not unused


def _imported_packages() -> set[str]:
    """Top-level names of the third-party packages the code, the tests and the notebooks import."""
    sources = [
        p.read_text()
        for folder in ("helpers", "tools", "tests", "notebooks")
        for p in (REPO_ROOT / folder).rglob("*.py")
    ]
    for notebook in sorted((REPO_ROOT / "notebooks").glob("*.ipynb")):
        sources += [
            "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
            for cell in nbformat.read(notebook, as_version=4).cells
            if cell.cell_type == "code"
        ]
    names: set[str] = set()
    for source in sources:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    local = (
        {"helpers", "tools", "conftest"}
        | {p.stem for p in (REPO_ROOT / "tests").rglob("*.py")}
        | {p.stem for p in (REPO_ROOT / "notebooks" / "scripts").glob("*.py")}
    )  # scripts import each other
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
    return {
        Path(str(f)).parts[0].removesuffix(".py")
        for f in dist.files or []
        if not str(f).startswith("..") and ".dist-info" not in str(f)
    }


def test_every_imported_package_is_declared() -> None:
    """pandas or PyYAML arriving as someone else's dependency is not enough: each is listed."""
    declared = {re.split(r"[=<>!~\[ ]", r)[0] for r in _requirements(REPO_ROOT / "requirements.txt")}
    importable = set().union(*(_top_level_names(d) for d in declared))
    undeclared = _imported_packages() - importable
    assert not undeclared, f"imported but not in requirements.txt: {sorted(undeclared)}"


def test_committed_notebooks_name_the_suites_kernel() -> None:
    """`make setup` installs the kernel as python3 with this display name; a notebook that names
    another one is marked modified as soon as JupyterLab opens it."""
    display = re.search(r"^KERNEL_DISPLAY_NAME = (.+)$", (REPO_ROOT / "Makefile").read_text(), re.M)[1]
    for notebook in sorted((REPO_ROOT / "notebooks").glob("*.ipynb")):
        spec = nbformat.read(notebook, as_version=4).metadata["kernelspec"]
        assert (spec["name"], spec["display_name"]) == ("python3", display), notebook.name


WORKFLOWS = REPO_ROOT / ".github" / "workflows"


def _workflow(name: str) -> dict:
    return yaml.safe_load((WORKFLOWS / name).read_text())


def _commands(workflow: dict) -> dict[str, str]:
    """{job: its `run:` steps, one per line}."""
    return {
        job: "\n".join(step["run"] for step in spec.get("steps", []) if "run" in step)
        for job, spec in workflow["jobs"].items()
    }


def test_ci_workflows_run_what_the_readme_and_ci_run_run() -> None:
    """CI runs the commands a user runs: the CPU tier and the weekly run call .ci/run (whose last
    command is the README's `make test`), the GPU tier `make test-gpu`, the docs `make docs`;
    every make target a workflow or .ci/run calls exists, and the workflows' are in the README."""
    names = ("cpu.yml", "gpu.yml", "docs.yml", "weekly.yml")
    assert {p.name for p in WORKFLOWS.glob("*.yml")} == set(names)
    cpu, gpu, docs, weekly = (_commands(_workflow(n)) for n in names)
    assert cpu["test"].strip().endswith("bash .ci/run") and "bash .ci/run" in weekly["cpu"]
    ci_run = (REPO_ROOT / ".ci" / "run").read_text()
    assert ci_run.rstrip().splitlines()[-1] == "make test"
    assert all("make test-gpu " in gpu[job] for job in ("test-gpu", "two-gpus"))
    assert "make test-gpu ONLY=04" in gpu["two-gpus"]
    assert "make docs" in docs["build"]
    readme_targets = set(re.findall(r"`make ([a-z-]+)", (REPO_ROOT / "README.md").read_text()))
    called = {
        t
        for jobs in (cpu, gpu, docs, weekly)
        for text in jobs.values()
        for t in re.findall(r"\bmake ([a-z-]+)", text)
    }
    assert called <= readme_targets, called - readme_targets
    assert called | set(re.findall(r"^make ([a-z-]+)", ci_run, re.M)) <= _makefile_targets()
    assert _workflow("weekly.yml")["jobs"]["gpu"]["uses"] == "./.github/workflows/gpu.yml"


def test_the_gpu_tier_runs_on_the_self_hosted_runners_that_the_docs_describe() -> None:
    gpu = _workflow("gpu.yml")
    labels = {job: spec["runs-on"] for job, spec in gpu["jobs"].items()}
    assert labels == {
        "test-gpu": ["self-hosted", "linux", "gpu"],
        "two-gpus": ["self-hosted", "linux", "gpu", "gpu-x2"],
    }
    assert "pull_request" not in gpu[True]  # `on:` (YAML 1.1 reads it as true): no fork reaches them
    custom = {label for names in labels.values() for label in names} - {"self-hosted", "linux"}
    config = yaml.safe_load((REPO_ROOT / ".github" / "actionlint.yaml").read_text())
    assert set(config["self-hosted-runner"]["labels"]) == custom
    variables = set(re.findall(r"vars\.([A-Z_0-9]+)", (WORKFLOWS / "gpu.yml").read_text()))
    running = (REPO_ROOT / "docs" / "pages" / "running.md").read_text()
    missing = {name for name in custom | variables if f"`{name}`" not in running}
    assert not missing, f"docs/pages/running.md does not explain {sorted(missing)}"


def test_only_ci_run_pins_torch() -> None:
    """One source for the torch pin: .ci/run; the docs point at it and state no version."""
    files = [
        REPO_ROOT / "Makefile",
        REPO_ROOT / "README.md",
        REPO_ROOT / "environment.yml",
        *REPO_ROOT.glob("requirements*.txt"),
        *(REPO_ROOT / "docs").rglob("*.md"),
        *WORKFLOWS.glob("*.yml"),
    ]
    pinned = [
        p.relative_to(REPO_ROOT).as_posix() for p in files if re.search(r"torch(vision)?==", p.read_text())
    ]
    assert not pinned, f"pin torch in .ci/run only: {pinned}"
    ci_run = (REPO_ROOT / ".ci" / "run").read_text()
    assert re.search(r"^export TORCH=.*torch==[\d.]+ torchvision==[\d.]+", ci_run, re.M)
