"""Alt texts: the suite's charts and image grids write what they show into their output's
metadata, and the docs' pages put it on each figure's ``<img>`` (tools.docs_alt)."""

from __future__ import annotations

import json

import numpy as np
import nvidia.dali.experimental.dynamic as ndd
import pytest
from IPython.core.formatters import PNGFormatter

from helpers.data.registry import notebook_paths
from helpers.toolkit import display
from helpers.toolkit import plots
from tools.docs_alt import alt_texts
from tools.docs_alt import with_alt_texts
from tools.docs_checks import AWAITING_RERUN
from tools.docs_checks import BEFORE_ALT_TEXTS


def _png(mime_data: str = "iVBORw0KGgo=") -> str:
    return (
        f'<img alt="No description has been provided for this image" '
        f'src="data:image/png;base64,{mime_data}" width="8"/>'
    )


def test_charts_say_their_numbers_and_verdicts() -> None:
    goals = {"capture / eager": {"ratio": 1.69, "ci95": [1.61, 1.78], "goal": 1.6, "verdict": "met"}}
    chart = plots.goal_chart(goals, title="Goal of notebook 02")
    assert chart.alt == (
        "Chart of goals, Goal of notebook 02: capture / eager: 1.69x [1.61-1.78] against a goal of 1.6, met."
    )
    elsewhere = plots.goal_chart(goals, title="Goal of notebook 02 on an H100", judged=False)
    assert elsewhere.alt.endswith(
        "1.69x [1.61-1.78] against a goal of 1.6, met on this machine, not judged (the goals are stated "
        "for an H200)."
    )
    bars = plots.interval_bars(
        {"slow": [10.0, 11.0, 10.5], "fast": [2000.0, 2100.0, 2050.0]},
        xlabel="samples / s",
        title="Throughput",
    )
    assert bars.alt.index("fast 2,0") < bars.alt.index("slow 10."), bars.alt  # highest first
    data, metadata = plots.png_at_twice_the_pixels(chart)
    assert metadata["alt"] == chart.alt and metadata["width"] > 0


def test_a_grid_says_how_many_images_and_their_labels() -> None:
    images = ndd.as_batch([np.zeros((28, 28, 1), dtype=np.uint8)] * 3, layout="HWC")
    labels = ndd.as_batch([np.array([v], dtype=np.int32) for v in (1, 0, 1)])
    grid = display.show_batch(images, labels, class_names=["cat", "dog"], title="Train")
    assert grid.alt == "Train: 3 images, labelled dog, cat, dog."
    data, metadata = display._png_with_alt(grid)
    assert metadata == {"alt": grid.alt} and data


def test_ipython_shows_a_chart_with_its_alt_text_in_the_metadata() -> None:
    formatter = PNGFormatter()
    formatter.for_type(plots.Chart, plots.png_at_twice_the_pixels)
    goals = {"a": {"ratio": 2.0, "ci95": [1.5, 2.5], "goal": 1.0, "verdict": "met"}}
    chart = plots.goal_chart(goals, title="t")
    data, metadata = formatter(chart)
    assert metadata["alt"].startswith("Chart of goals, t: a: 2.00x")


def test_the_page_gets_each_outputs_alt_text_in_order() -> None:
    first = {"data": {"image/png": "x"}, "metadata": {"image/png": {"alt": 'A "b" <c>'}}}
    notebook = {
        "cells": [
            {"outputs": [first]},
            {"outputs": [{"data": {"text/plain": "t"}}, {"data": {"image/png": "y"}}]},
        ]
    }
    page, problems = with_alt_texts(f"<p>{_png()}</p><p>{_png()}</p>", notebook)
    assert not problems
    assert 'alt="A &quot;b&quot; &lt;c&gt;"' in page
    assert page.count("No description has been provided") == 1  # the second output has none
    page, problems = with_alt_texts(_png(), notebook)  # one image for two outputs
    assert problems and "alt texts not added" in problems[0]


@pytest.mark.parametrize(
    "notebook",
    [
        pytest.param(
            p,
            id=p.stem,
            marks=pytest.mark.xfail(
                strict=True, reason="its committed outputs predate the alt texts: re-run it"
            ),
        )
        if p.stem in BEFORE_ALT_TEXTS
        else pytest.param(p, id=p.stem)
        for p in notebook_paths()
    ],
)
def test_every_committed_figure_has_an_alt_text(notebook) -> None:
    texts = alt_texts(json.loads(notebook.read_text()))
    missing = [i + 1 for i, text in enumerate(texts) if not text]
    assert not missing, f"{notebook.name}: figures {missing} of {len(texts)} have no alt text"


def test_a_notebook_whose_outputs_predate_the_alt_texts_awaits_its_rerun() -> None:
    """BEFORE_ALT_TEXTS names notebooks of AWAITING_RERUN only: a re-run notebook leaves both."""
    assert set(BEFORE_ALT_TEXTS) <= set(AWAITING_RERUN), set(BEFORE_ALT_TEXTS) - set(AWAITING_RERUN)
