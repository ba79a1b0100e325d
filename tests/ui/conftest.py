"""The memory page's fixtures: a real ``a2m-server serve`` over a freshly seeded store per
test, and one real headless Chromium for the session (see ``ui_support``)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ui_support import CHROMIUM_ARGS, Served, chromium_path, start_serve, stop


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    """A fresh server over a freshly seeded store, for one test."""
    running = start_serve(tmp_path)
    try:
        yield running
    finally:
        stop(running)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api")
    # A loaded 2-core machine lays a page out in seconds, not milliseconds: wait longer
    # than Playwright's 5 s before calling an expectation failed.
    sync_api.expect.set_options(timeout=20_000)
    executable = chromium_path()
    with sync_api.sync_playwright() as playwright:
        try:
            launched = playwright.chromium.launch(
                executable_path=executable, args=CHROMIUM_ARGS, headless=True
            )
        except Exception as exc:  # no browser installed: say so
            if os.environ.get("CI"):
                raise
            pytest.skip(f"no Chromium to drive (install Debian's chromium): {exc}")
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh browser context (no cookies) and page, 1280 px wide."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    try:
        yield opened
    finally:
        context.close()
