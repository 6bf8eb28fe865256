"""Two packages, one direction: ``tools`` may import ``helpers``, never the reverse, and no
module of the project imports itself back through others (an import cycle), not even from
inside a function."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from helpers.paths import REPO_ROOT

PACKAGES = ("helpers", "tools")


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, dict[str, bool]]:
    """{module: {imported project module: imported at module level?}} for every module of
    ``packages`` under ``root``."""
    modules = {_module_name(p, root): p for pkg in packages for p in sorted((root / pkg).rglob("*.py"))}
    graph: dict[str, dict[str, bool]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        top_level = {id(node) for node in tree.body}
        edges: dict[str, bool] = {}
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                # `from helpers import display` imports the module helpers.display
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules
                           else node.module for a in node.names]
            for target in targets:
                if target.split(".")[0] in packages and target in modules and target != name:
                    edges[target] = edges.get(target, False) or id(node) in top_level
        graph[name] = edges
    return graph


def find_cycle(graph: dict[str, dict[str, bool]]) -> list[str] | None:
    state: dict[str, str] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        stack.append(node)
        for target in sorted(graph.get(node, {})):
            if state.get(target) == "open":
                return [*stack[stack.index(target):], target]
            if target not in state and (cycle := visit(target)):
                return cycle
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


@pytest.fixture(scope="module")
def graph() -> dict[str, dict[str, bool]]:
    return import_graph(REPO_ROOT)


def test_the_project_has_no_import_cycle(graph) -> None:
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph) or [])


def test_helpers_never_import_tools(graph) -> None:
    wrong = {m: sorted(t for t in targets if t.startswith("tools"))
             for m, targets in graph.items() if m.startswith("helpers")}
    assert not {m: t for m, t in wrong.items() if t}


def test_project_imports_are_at_module_level(graph) -> None:
    """An import inside a function is how a cycle hides; between our own modules there is none."""
    hidden = {m: sorted(t for t, top in targets.items() if not top) for m, targets in graph.items()}
    assert not {m: t for m, t in hidden.items() if t}


def test_helpers_paths_is_a_leaf(graph) -> None:
    assert graph["helpers.paths"] == {}


def test_the_checks_find_what_they_look_for(tmp_path: Path) -> None:
    (tmp_path / "helpers").mkdir()
    (tmp_path / "tools").mkdir()
    (tmp_path / "helpers" / "__init__.py").write_text("")
    (tmp_path / "helpers" / "a.py").write_text("from helpers import b\n")
    (tmp_path / "helpers" / "b.py").write_text("def f():\n    import helpers.a\n    from tools.x import y\n")
    (tmp_path / "tools" / "x.py").write_text("y = 1\n")
    graph = import_graph(tmp_path)
    assert find_cycle(graph) == ["helpers.a", "helpers.b", "helpers.a"]
    assert graph["helpers.b"] == {"helpers.a": False, "tools.x": False}
    assert graph["helpers.a"] == {"helpers.b": True}


def test_contributing_lists_every_helpers_module_and_no_other() -> None:
    """CONTRIBUTING.md's module table is the one place that says what each module is for."""
    text = (REPO_ROOT / "CONTRIBUTING.md").read_text()
    listed = re.findall(r"`helpers\.(\w+)`", text)
    modules = {p.stem for p in (REPO_ROOT / "helpers").glob("*.py") if p.stem != "__init__"}
    assert set(listed) == modules, (f"missing from CONTRIBUTING.md: {sorted(modules - set(listed))}; "
                                    f"listed but gone: {sorted(set(listed) - modules)}")
