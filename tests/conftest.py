from __future__ import annotations

import hashlib
from pathlib import Path

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--gpu-run", type=Path, default=None,
                     help="output folder of `helpers.suite run --device gpu` to check")


@pytest.fixture(scope="session")
def gpu_run(request: pytest.FixtureRequest) -> Path:
    path = request.config.getoption("--gpu-run")
    if path is None:
        pytest.skip("GPU tier only: pass --gpu-run DIR (make test-gpu does)")
    return path


def _fingerprint() -> dict[str, str]:
    """The committed notebooks and the data manifests: running a notebook must not change them."""
    from helpers.data_sources import REPO_ROOT, default_data_dir

    files = sorted(REPO_ROOT.glob("notebooks/*.ipynb")) + sorted(default_data_dir().rglob("MANIFEST.json"))
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


@pytest.fixture(scope="session")
def ci_run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Every notebook executed once at CI scale (shared by the tests of all notebooks)."""
    from helpers import suite
    from helpers.data_sources import locate_data

    locate_data(verbose=False)  # build the data first: a first build is not a change
    before = _fingerprint()
    out = tmp_path_factory.mktemp("ci-run")
    runs = suite.run_suite("auto", "ci", out)
    assert _fingerprint() == before, "running the notebooks changed committed files or data"
    return {run.name: run for run in runs}
