"""The registry of notebooks (helpers.data.registry): each notebook's own metadata is its entry, and every
listing of notebooks (the runner, the inventory, the results page, the docs nav, the refusal
tests, the GPU tier, the CI-scale run) reads it. A notebook 99 added to a copy of the checkout must
turn up in each of them, with nothing else edited."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from fakes import fake_record
from nbformat.v4 import new_code_cell
from nbformat.v4 import new_markdown_cell
from nbformat.v4 import new_notebook
from notebook_setup import notebook_test_file
from notebook_setup import refusal_cases
from test_docs_site import load_hooks
from test_docs_site import site_nav

from helpers.data import registry
from helpers.data.paths import REPO_ROOT
from tools import bottom_lines
from tools import findings
from tools import inventory
from tools import notebook_tables
from tools import published_comparison
from tools import run_parameters

ENTRY = {
    "title": "A dummy",
    "learn": "Nothing, on purpose",
    "needs_gpu": "No: it computes nothing",
    "scales": {"ci": {"answer": 2}, "bench": {"answer": 3}},
    "headline": {"answer": {"label": "the answer", "format": "{:.0f}"}},
    "goals": {"answer / nothing": 1.1, "answer / {what}": {"target": 0.5, "per": "processes"}},
    "published": [{"seed": "answer_seed", "key": "answer", "kind": "rate", "what": "answers/s in 99"}],
}
DUMMY_TEST = """from helpers.toolkit.parameters import ParameterError

REFUSALS = [({"answer": 0}, ParameterError, "parameter answer must be a positive integer")]
"""


def _copy_checkout(dest: Path) -> Path:
    """The committed files of the checkout (as they are in the working tree) under ``dest``."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO_ROOT, capture_output=True, check=False)
    if listed.returncode != 0:
        pytest.skip("not a git checkout: the copy is made of `git ls-files`")
    for name in listed.stdout.decode().split("\0"):
        source = REPO_ROOT / name
        if name and source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


def _write_dummy(root: Path) -> Path:
    """notebooks/99-dummy.ipynb, as small as a notebook of the suite can be, and its test file."""
    node = new_notebook()
    node.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    node.metadata[registry.KEY] = ENTRY
    parameters = new_code_cell('answer = 1  # what it computes\ndevice = "auto"')
    parameters.metadata["tags"] = ["parameters"]
    check = new_code_cell(
        "from helpers.toolkit.parameters import positive_int\n\nanswer = positive_int('answer', answer)"
    )
    check.metadata["tags"] = ["hide-input"]
    check.metadata["jupyter"] = {"source_hidden": True}
    node.cells = [new_markdown_cell("# A dummy"), parameters, check, new_code_cell("answer")]
    path = root / "notebooks" / "99-dummy.ipynb"
    nbformat.write(node, path)
    notebook_test_file(path, root).write_text(DUMMY_TEST)
    return path


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A copy of the checkout with notebook 99 added: (its root, the notebook)."""
    root = _copy_checkout(tmp_path_factory.mktemp("checkout"))
    return root, _write_dummy(root)


def test_the_runner_runs_notebook_99_with_its_scales(checkout: tuple[Path, Path]) -> None:
    root, dummy = checkout
    assert run_parameters.notebooks(root=root)[-1] == dummy
    assert run_parameters.notebooks(["99"], root=root) == [dummy]
    assert run_parameters.scales_of(dummy) == ENTRY["scales"]
    assert run_parameters.parameters_for(dummy, "ci", "auto") == {"answer": 2}
    assert run_parameters.parameters_for(dummy, "bench", "auto") == {"answer": 3}


def test_the_inventory_and_the_results_page_list_notebook_99(checkout: tuple[Path, Path]) -> None:
    root, _ = checkout
    rows = [line for line in inventory.render_inventory(root).splitlines() if line.startswith("| 99 ")]
    assert rows == [
        "| 99 | [A dummy](notebooks/99-dummy.ipynb) | Nothing, on purpose | No: it computes nothing | — / — |"
    ]
    assert notebook_tables.notebook_titles(root / "notebooks")["99-dummy"] == "A dummy"
    assert notebook_tables.headline_labels(root / "notebooks")["99-dummy"] == ENTRY["headline"]


def test_the_readme_findings_and_the_bottom_line_take_notebook_99_from_its_record(
    checkout: tuple[Path, Path],
) -> None:
    """With no function of its own in tools.findings, notebook 99's record still gives it a README
    bullet (its title, its goals' ratios) and a bottom line (with the goals' verdicts)."""
    root, _ = checkout
    goal = {"ratio": 1.3, "ci95": [1.2, 1.5], "trials": 5, "goal": 1.1, "verdict": "met"}
    results = root / "results"
    fake_record(  # a record of a CPU machine, as tools.run_record writes it
        results / "cpu-2099-01-01.json",
        "2099-01-01T09:00:00+00:00",
        {
            "99-dummy": {
                "parameters": {"answer": 1},
                "results": {"goals": {"answer / nothing": goal}},
                "seconds": 1.0,
            }
        },
    )
    try:
        (bullet,) = [f for f in findings.findings(results) if f.notebooks == ("99-dummy",)]
        assert bullet.topic == "A dummy"
        assert bullet.text == "answer / nothing, 1.30x [1.20-1.50] (goal >= 1.1x)."
        line = bottom_lines.bottom_line("99-dummy", results)
        assert "([record](../results/cpu-2099-01-01.json))" in line and bullet.text in line
        assert "Its goal (answer / nothing) is stated for GPUs and not judged on this run." in line
        placed = sorted((e for e in registry.notebooks(root) if e.finding), key=lambda e: e.finding["order"])
        # those with a `finding` in their metadata first, by its order, then 99 under its title
        assert [f.notebooks for f in findings.findings(results)] == [(e.slug,) for e in placed] + [
            ("99-dummy",)
        ]
        assert [f.topic for f in findings.findings(results)][:-1] == [e.finding["topic"] for e in placed]
        path = root / "notebooks" / "99-dummy.ipynb"
        original = path.read_text()
        try:  # a `finding` in 99's metadata puts it where its order says, under its topic
            node = nbformat.read(path, as_version=4)
            node.metadata[registry.KEY]["finding"] = {"topic": "What the dummy found", "order": 0}
            nbformat.write(node, path)
            first = findings.findings(results)[0]
            assert (first.topic, first.notebooks) == ("What the dummy found", ("99-dummy",))
        finally:
            path.write_text(original)
    finally:
        (results / "cpu-2099-01-01.json").unlink()


def test_notebook_99s_goals_and_published_figures_are_read_from_its_metadata(
    checkout: tuple[Path, Path],
) -> None:
    """Its lesson and its test read its goals' targets (helpers.data.registry.goal_targets): a name's
    fields filled, a target stated per process multiplied; the results page compares the figures
    its metadata names with those DALI's tutorials printed (tools.published_comparison)."""
    root, _ = checkout
    assert registry.goal_targets("99-dummy", root, what="everything", processes=4) == {
        "answer / nothing": 1.1,
        "answer / everything": 2.0,
    }
    with pytest.raises(KeyError, match="needs what, processes: pass them to goal_targets"):
        registry.goal_targets("99-dummy", root)
    rates, ratios = published_comparison.compared_figures(root)
    assert rates[-1] == ("99-dummy", "answer_seed", "answer", "answers/s in 99")
    assert {n for n, *_ in rates + ratios} == {"01-getting-started", "02-capture-mode", "99-dummy"}
    with pytest.raises(registry.RegistryError, match="no notebooks/98-none.ipynb"):
        registry.entry("98-none", root)


def test_the_docs_nav_and_files_take_notebook_99(checkout: tuple[Path, Path]) -> None:
    root, dummy = checkout
    notebooks = next(
        item["Notebooks"] for item in site_nav(root) if isinstance(item, dict) and "Notebooks" in item
    )
    assert notebooks[-1] == "notebooks/99-dummy.ipynb"
    assert notebooks == [f"notebooks/{p.name}" for p in registry.notebook_paths(root)]
    # the hook adds the notebooks to the site's files (docs/hooks.py, on_files)
    assert dummy in load_hooks(root).notebook_paths(root)


def test_the_refusal_tests_and_the_gpu_tier_take_notebook_99(checkout: tuple[Path, Path]) -> None:
    """The parametrizations of the copy's own test files, as pytest collects them there: a test
    file that listed its notebooks by hand would not hold 99."""
    root, _ = checkout
    (case,) = [c for c in refusal_cases(root) if c.values[0] == "99-dummy"]
    assert case.id == "99-dummy-0" and case.values[1] == {"answer": 0}
    collected = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/notebooks/test_notebook_refusals.py",
            "tests/notebooks/test_gpu_tier.py",
            "tests/notebooks/test_notebooks.py",
        ],
        cwd=root,
        env={**_environment(), "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert collected.returncode == 0, collected.stdout[-3000:] + collected.stderr[-3000:]
    ids = collected.stdout.splitlines()
    for expected in (
        "tests/notebooks/test_notebook_refusals.py::test_a_bad_parameter_is_refused_by_name_in_the_set_up[99-dummy-0]",
        "tests/notebooks/test_notebook_refusals.py::test_good_parameters_pass_the_set_up_and_it_ends_before"
        "_the_first_lesson[99-dummy]",
        "tests/notebooks/test_gpu_tier.py::test_notebook_ran_on_the_gpu[99-dummy]",
        "tests/notebooks/test_notebooks.py::test_cells_folded_on_the_site_are_folded_in_jupyterlab[99-dummy]",
    ):
        assert expected in ids, f"{expected} not collected:\n" + "\n".join(ids[-40:])


def _environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}


def test_the_findings_functions_are_named_after_notebooks_of_the_registry() -> None:
    """tools.findings keys its own sentences and advice by notebook: a key that is no notebook
    (a renamed one) would be left out of the README without a word."""
    slugs = {entry.slug for entry in registry.notebooks()}
    assert set(findings.WRITERS) <= slugs and set(findings.ADVICE) <= slugs
    assert all(entry.finding for entry in registry.notebooks() if entry.slug in findings.WRITERS)


def test_each_entry_is_read_from_the_notebooks_metadata() -> None:
    entries = registry.notebooks()
    assert [e.path for e in entries] == registry.notebook_paths() and entries
    numbers = [e.number for e in entries]
    assert numbers == sorted(set(numbers)), "two notebooks share a number"
    for entry in entries:
        meta = json.loads(entry.path.read_text())["metadata"][registry.KEY]
        assert [entry.title, entry.learn, entry.needs_gpu] == [meta[k] for k in registry.REQUIRED_TEXT]
        assert set(registry.REQUIRED_SCALES) <= set(entry.scales)
        assert entry.slug == entry.path.stem and entry.site_path == f"notebooks/{entry.path.name}"
        assert notebook_test_file(entry.path, REPO_ROOT).is_file(), f"{entry.slug} has no tests/notebooks/test_nbNN.py"


@pytest.mark.parametrize(
    "change, said",
    [
        (lambda meta: meta.pop("learn"), "lacks learn;"),
        (lambda meta: meta.update(title="  "), "lacks title;"),
        (lambda meta: meta["scales"].pop("bench"), "lacks scales.bench;"),
        (lambda meta: meta.update(headline=[]), "has headline (a dict"),
        (lambda meta: meta.update(goals={"x / y": 0}), "has goals (a dict of {name: target}"),
        (lambda meta: meta.update(goals={"x / y": {"per": "processes"}}), "has goals (a dict"),
        (lambda meta: meta.update(goals={"x / y": {"target": 1, "per": 2}}), "has goals (a dict"),
        (lambda meta: meta.update(finding={"topic": "x"}), 'has finding (a dict {"topic"'),
        (lambda meta: meta.update(published=[{"seed": "a", "key": "b"}]), "has published (a list"),
        (lambda meta: meta["published"][0].update(kind="speed"), "has published (a list"),
    ],
)
def test_an_incomplete_entry_names_the_notebook_and_the_key(tmp_path: Path, change, said) -> None:
    """A required key missing: the error names it and says what to add; an optional one in another
    form: the error names it and where its form is described, and nothing of the required ones."""
    meta = json.loads(json.dumps(ENTRY))
    change(meta)
    path = tmp_path / "notebooks" / "42-broken.ipynb"
    path.parent.mkdir()
    path.write_text(
        json.dumps({"cells": [], "metadata": {registry.KEY: meta}, "nbformat": 4, "nbformat_minor": 5})
    )
    with pytest.raises(registry.RegistryError) as raised:
        registry.notebooks(tmp_path)
    assert str(raised.value).startswith(f"42-broken.ipynb: metadata['{registry.KEY}'] {said}")
    required = said.startswith("lacks")
    assert ("add title, learn, needs_gpu" in str(raised.value)) == required
    assert ("in another form; write it in the form given here" in str(raised.value)) != required
    path.write_text("{not json")
    with pytest.raises(registry.RegistryError, match="42-broken.ipynb: cannot read the notebook"):
        registry.notebooks(tmp_path)


def test_only_a_run_on_the_goals_gpu_judges_them() -> None:
    assert registry.judges_goals("NVIDIA H200") and registry.judges_goals("NVIDIA H200 NVL")
    assert not registry.judges_goals("NVIDIA H100 80GB HBM3")
    assert not registry.judges_goals("NVIDIA GH200 480GB")  # another GPU, its name holding "H200"
    assert not registry.judges_goals(None)
