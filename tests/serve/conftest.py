"""Fixtures for the server's tests: a real uvicorn on loopback, tokens, and headless Chromium.

``served_app`` runs `create_app` under uvicorn in a thread on a free 127.0.0.1 port with a fresh
database (`tests.builders.start_server`); ``served_app.token(role, name)`` creates a token and
returns it. ``browser`` (tests/conftest.py) is Playwright driving Debian's chromium
(``/usr/bin/chromium``, never Playwright's own download); ``page`` may reach the served origin only (any other request is aborted and recorded in
``aborted_requests``), ``offline_page`` nothing at all (for self-contained files). Browser tests
are marked ``browser``; they skip only when no chromium exists and ``CI`` is unset.
Screenshots go to ``tests/serve/screenshots/`` (gitignored), see `screenshot_dir`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.builders import ServedApp, start_server


@pytest.fixture
def served_app(tmp_path: Path) -> Iterator[ServedApp]:
    """A running server on a fresh database (``tmp_path / "serve.db"``)."""
    served = start_server(tmp_path / "serve.db")
    try:
        yield served
    finally:
        served.stop()


@pytest.fixture
def aborted_requests() -> list[str]:
    """URLs the ``page`` / ``offline_page`` fixtures refused to fetch."""
    return []


@pytest.fixture
def page(browser: Any, served_app: ServedApp, aborted_requests: list[str]) -> Iterator[Any]:
    """A fresh browser page that can reach ``served_app``'s origin and nothing else."""
    context = browser.new_context()
    origin = served_app.url

    def guard(route: Any) -> None:
        url = route.request.url
        if url == origin or url.startswith(origin + "/"):
            route.continue_()
        else:
            aborted_requests.append(url)
            route.abort()

    context.route("**/*", guard)
    opened = context.new_page()
    try:
        yield opened
    finally:
        context.close()


@pytest.fixture
def offline_page(browser: Any, aborted_requests: list[str]) -> Iterator[Any]:
    """A fresh browser page whose every network request is aborted (and recorded)."""
    context = browser.new_context(offline=True)

    def refuse(route: Any) -> None:
        aborted_requests.append(route.request.url)
        route.abort()

    context.route("**/*", refuse)
    opened = context.new_page()
    try:
        yield opened
    finally:
        context.close()
