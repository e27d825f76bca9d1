"""Opening a page from disk in a real browser for the HTML report tests: Debian's headless Chromium driven by
Playwright's Python client (never a browser Playwright downloads), every request routed so that anything but a
`file://` read is refused and recorded, console errors collected, and a screenshot kept as a test artifact.

Without Chromium or Playwright the tests skip, except under `SFBENCH_REQUIRE_EXTRAS=1` (CI, `.ci/run`, installs
both): there a missing browser fails. Screenshots go to `$SFBENCH_TEST_ARTIFACTS` (a folder) when it is set,
else to the test's temporary folder.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
#: A laptop screen.
VIEWPORT = {"width": 1366, "height": 768}


def require_browser() -> None:
    """Skip (or, under SFBENCH_REQUIRE_EXTRAS=1, fail) when Chromium or Playwright is missing."""
    missing = []
    if not CHROMIUM.is_file():
        missing.append(f"{CHROMIUM} (apt-get install -y chromium)")
    if importlib.util.find_spec("playwright") is None:
        missing.append("playwright (pip install -e '.[test-browser]')")
    if not missing:
        return
    message = f"no browser for the HTML tests: {', '.join(missing)} not installed"
    if os.environ.get("SFBENCH_REQUIRE_EXTRAS") == "1":
        pytest.fail(message + " (SFBENCH_REQUIRE_EXTRAS=1: CI must run these tests)")
    pytest.skip(message)


def artifact_folder(tmp_path: Path) -> Path:
    """Where screenshots are kept: `$SFBENCH_TEST_ARTIFACTS` or the test's temporary folder."""
    folder = Path(os.environ.get("SFBENCH_TEST_ARTIFACTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@dataclass
class OpenedPage:
    """A page opened from disk: the Playwright page, and what it tried that it must not."""

    page: Any
    refused: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)


@contextlib.contextmanager
def opened(path: Path) -> Iterator[OpenedPage]:
    """Open `path` (a local HTML file) in headless Chromium; every non-`file://` request is aborted and
    recorded in `refused`, every console error and page error in `console_errors`."""
    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport=VIEWPORT)
            result = OpenedPage(page=None)

            def route(handle: Any) -> None:
                url = handle.request.url
                if url.startswith("file://"):
                    handle.continue_()
                else:
                    result.refused.append(url)
                    handle.abort()

            context.route("**/*", route)
            page = context.new_page()
            page.on("console", lambda message: result.console_errors.append(message.text)
                    if message.type == "error" else None)
            page.on("pageerror", lambda error: result.console_errors.append(str(error)))
            page.on("request", lambda request: None if request.url.startswith("file://")
                    else result.refused.append(request.url))
            page.goto(Path(path).resolve().as_uri(), wait_until="load")
            result.page = page
            yield result
        finally:
            browser.close()


def screenshot(opened_page: OpenedPage, target: Path, *, full_page: bool = True) -> Path:
    """A PNG of the page (kept as a test artifact); returns its path."""
    target.parent.mkdir(parents=True, exist_ok=True)
    opened_page.page.screenshot(path=str(target), full_page=full_page)
    return target


def table_cells(opened_page: OpenedPage, table_id: str) -> list[dict[str, Any]]:
    """Each body row of a table as the browser shows it: its data attributes and every cell's text and
    `data-value`."""
    return opened_page.page.eval_on_selector_all(
        f"#{table_id} tbody tr",
        """rows => rows.map(row => ({data: Object.assign({}, row.dataset),
            cells: Array.from(row.children).map(cell => ({text: cell.innerText, value: cell.dataset.value}))}))""")
