"""Headless Chromium for the viewer's tests: the system browser (Debian's ``chromium``, which .ci/run
installs) driven by Playwright — never a downloaded browser. Where it is missing the tests skip and say
why; in CI (``CI=true``) a missing browser fails them instead."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]


def chromium_path() -> str | None:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    return found or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)


def _missing(why: str) -> None:
    if os.environ.get("CI", "").lower() in ("true", "1", "yes"):
        pytest.fail(f"CI must run the browser tests: {why}")
    pytest.skip(f"browser tests skipped: {why}")


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium browser (Playwright's Browser), closed afterwards."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("the playwright package is not installed (pip install -e '.[test]')")
    path = chromium_path()
    if path is None:
        _missing("no chromium on this machine (apt-get install chromium)")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=path, args=ARGS)
        try:
            yield browser
        finally:
            browser.close()


def expect(locator: Any) -> Any:
    """Playwright's retrying assertions (imported here, so a machine without Playwright only skips)."""
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(locator)
