from __future__ import annotations

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
