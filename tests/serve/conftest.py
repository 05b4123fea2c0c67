"""Fixtures for the server's tests: a real uvicorn on loopback, tokens, and headless Chromium.

``served_app`` runs `create_app` under uvicorn in a thread on a free 127.0.0.1 port with a fresh
database; ``served_app.token(role, name)`` creates a token and returns it. ``browser`` is
Playwright driving Debian's chromium (``/usr/bin/chromium``, never Playwright's own download);
``page`` may reach the served origin only (any other request is aborted and recorded in
``aborted_requests``), ``offline_page`` nothing at all (for self-contained files). Browser tests
are marked ``browser``; they skip only when no chromium exists and ``CI`` is unset.
Screenshots go to ``tests/serve/screenshots/`` (gitignored), see `screenshot_dir`.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

SCREENSHOTS = Path(__file__).with_name("screenshots")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@dataclass
class ServedApp:
    """A running server: its base ``url``, database, the app, and a way to mint tokens."""

    url: str
    db_path: Path
    app: Any
    server: Any
    thread: threading.Thread
    sock: socket.socket
    issued: list[str] = field(default_factory=list)

    def token(self, role: str = "admin", name: str | None = None) -> str:
        """A new token of ``role`` held by ``name`` (default: the role and a counter)."""
        issued = self.app.state.tokens.create(role, name or f"{role}-{len(self.issued) + 1}")
        self.issued.append(issued.secret)
        return str(issued.secret)

    def login_url(self, token: str) -> str:
        """The personal login link for ``token`` on this server."""
        from judgecards.serve.pages import login_link

        return login_link(self.url, token)

    def headers(self, token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()
        self.app.state.store.close()  # lifespan closed it already unless startup failed


def start_server(db_path: Path, **settings: Any) -> ServedApp:
    """`create_app` on ``db_path`` under uvicorn in a daemon thread, ready when this returns."""
    import uvicorn

    from judgecards.serve.app import create_app

    app = create_app(db_path, **settings)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        log_level="warning",
        ws="none",
        lifespan="on",
        access_log=False,
        timeout_graceful_shutdown=5,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    return ServedApp(
        url=f"http://127.0.0.1:{port}",
        db_path=db_path,
        app=app,
        server=server,
        thread=thread,
        sock=sock,
    )


@pytest.fixture
def served_app(tmp_path: Path) -> Iterator[ServedApp]:
    """A running server on a fresh database (``tmp_path / "serve.db"``)."""
    served = start_server(tmp_path / "serve.db")
    try:
        yield served
    finally:
        served.stop()


def chromium_path() -> str | None:
    for candidate in (
        "/usr/bin/chromium",
        shutil.which("chromium"),
        shutil.which("chromium-browser"),
    ):
        if candidate and Path(candidate).exists():
            return candidate
    return None


@pytest.fixture
def browser() -> Iterator[Any]:
    """Headless Chromium from Debian's package, started for one test.

    Not shared across tests: Playwright's sync API keeps an asyncio loop running on the main
    thread while it is open, and every later test calling `Judge.score_many` (which refuses to
    run inside a loop) would fail.
    """
    executable = chromium_path()
    if executable is None:
        if os.environ.get("CI"):
            pytest.fail("no chromium executable in CI (apt-get install -y chromium)")
        pytest.skip("no chromium executable (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


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


@pytest.fixture
def screenshot_dir() -> Path:
    """Where browser tests write screenshots for a person to look at (gitignored)."""
    SCREENSHOTS.mkdir(exist_ok=True)
    return SCREENSHOTS
