from __future__ import annotations

import os
from pathlib import Path

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--gpu-run", type=Path, default=None,
                     help="output folder of `tools.suite run --device gpu` to check")


@pytest.fixture(scope="session")
def gpu_run(request: pytest.FixtureRequest) -> Path:
    path = request.config.getoption("--gpu-run")
    if path is None:
        pytest.skip("GPU tier only: pass --gpu-run DIR (make test-gpu does)")
    return path


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "browser: loads pages in headless Chromium (Playwright)")
    config.addinivalue_line("markers", "slow: takes more than a few seconds (not in make test-fast)")


CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture(scope="session")
def chromium_path() -> Path:
    """Debian's chromium for the browser tests: without it they are skipped with the reason,
    except under CI=true, where a missing browser is a failure."""
    missing = None
    if not CHROMIUM.is_file():
        missing = f"{CHROMIUM} is missing: run `.ci/install-browser.sh` (as root) to install it"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            missing = "Playwright for Python is missing: pip install -r requirements-docs.txt"
    if missing is None:
        return CHROMIUM
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true: {missing}", pytrace=False)
    pytest.skip(missing)
