"""The suite's own promises about set-up: one package list, one test command."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

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
