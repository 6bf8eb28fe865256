from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.benchmarking import machine_info, machine_label, save_results, summarize


def test_summarize() -> None:
    s = summarize([3.0, 1.0, 2.0, 10.0])
    assert s["median"] == 2.5 and s["min"] == 1.0 and s["max"] == 10.0 and s["n"] == 4
    assert s["spread"] == pytest.approx(9.0 / 2.5)
    assert summarize([5.0])["stdev"] == 0.0
    with pytest.raises(ValueError):
        summarize([])


def test_machine_info_names_what_numbers_depend_on() -> None:
    info = machine_info()
    for key in ("cpu", "cpu_count", "dali", "torch", "gpu", "gpu_driver", "gpu_count"):
        assert key in info
    assert info["dali"].startswith("2.")


@pytest.mark.parametrize("gpu,label", [("NVIDIA H200", "h200"), (None, "cpu"),
                                       ("NVIDIA GeForce RTX 4090", "geforce-rtx-4090")])
def test_machine_label(gpu, label) -> None:
    assert machine_label({"gpu": gpu}) == label


def test_save_results_writes_everything(tmp_path: Path) -> None:
    path = save_results("99-test", {"a": 1}, {"r": [1, 2]}, {"h": 3.0}, tmp_path)
    document = json.loads(path.read_text())
    assert path == tmp_path / "99-test.json"
    assert document["parameters"] == {"a": 1} and document["headline"] == {"h": 3.0}
    assert document["results"] == {"r": [1, 2]} and document["machine"]["dali"]
    assert not list(tmp_path.glob("*.tmp-*"))
