"""A live server on a free loopback port and Debian's chromium driven by Playwright."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from server_helpers import OPERATOR
from web_helpers import CHROMIUM, CHROMIUM_FLAGS, LiveServer, free_port, watch_console

from twentyone.server.app import create_app
from twentyone.server.config import Settings


@pytest.fixture
def live_server(tmp_path: Path) -> Iterator[LiveServer]:
    settings = Settings(f"sqlite:///{tmp_path / 'web.db'}", tmp_path, OPERATOR)
    server = LiveServer(create_app(settings), free_port(), settings)
    server.start()
    yield server
    server.stop()


# A module's browser, not the session's: Playwright's sync API holds an asyncio loop running in the thread while it
# is up, and a later test of the same process (make test runs files on several workers, in any order) that calls
# asyncio.run() failed with "cannot be called from a running event loop". A launch costs about a second a module.
@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not shutil.which(CHROMIUM) and not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            raise RuntimeError(f"CI must run the browser tests: {CHROMIUM} is missing (.ci/run installs chromium).")
        pytest.skip(f"browser tests skipped: {CHROMIUM} is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any, live_server: LiveServer) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15000)
    page.console_problems = watch_console(page)
    page.outage_from = None  # a test that stops the server sets this: the page's refused retries are the outage's
    yield page
    context.close()
    problems = page.console_problems
    if page.outage_from is not None:  # they may reach us late, even after the test's last step
        problems = problems[:page.outage_from] + [problem for problem in problems[page.outage_from:]
                                                  if "ERR_CONNECTION_REFUSED" not in problem
                                                  and "ERR_CONNECTION_RESET" not in problem  # cut by the stop
                                                  and problem != "Failed to fetch"]
    assert not problems, problems  # no console errors, no missing files (favicon)
