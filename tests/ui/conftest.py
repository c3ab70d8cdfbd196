"""The browser fixtures the UI tests share: one headless Chromium per module, a fresh context
(with failure screenshots and a trace) per test."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, sync_playwright

from tests.ui.test_browser import CHROMIUM_ARGS, UISession, chromium_path


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def ui_session(
    browser: Browser, dagster_ui: Any, request: pytest.FixtureRequest
) -> Iterator[UISession]:
    session = UISession(browser, dagster_ui.url, request.node.name)
    try:
        yield session
    finally:
        session.close()
