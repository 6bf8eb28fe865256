"""The browser tests skip without a browser (saying why), except under CI=true, where they fail."""

from __future__ import annotations

import sys

import pytest
from conftest import browser_or_skip


def test_a_missing_browser_skips_with_the_reason(monkeypatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"install-browser\.sh"):
        browser_or_skip("/no/such/chromium")


def test_under_ci_a_missing_browser_fails(monkeypatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        browser_or_skip("/no/such/chromium")


def test_a_browser_that_is_there_is_returned(monkeypatch) -> None:
    monkeypatch.setenv("CI", "true")
    assert str(browser_or_skip(sys.executable)) == sys.executable
