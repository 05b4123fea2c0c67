"""Shared fixtures: a throw-away database per test, the third-party data in ../shared/data, and
the loopback fake server (`tests.fakes.server`)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from tests.builders import PRICED_MODEL, shared_data_dir
from tests.fakes.server import FakeServer

# Hypothesis' default 200 ms per-example deadline is a wall-clock test: on a loaded 2-core
# machine it fails examples that are correct but slow. Properties here assert values, not speed.
settings.register_profile("judgecards", deadline=None)
settings.load_profile("judgecards")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The public evaluation data beside the checkout (see ../shared/data/README.md).

    A user's clone may not have it, so tests that need it skip there; CI always has it, so under
    CI a missing folder is a failure, never a skip.
    """
    path = shared_data_dir()
    if not path.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"shared data folder {path} is missing in CI")
        pytest.skip(f"shared data folder {path} not present (set JUDGECARDS_SHARED_DATA)")
    return path


@pytest.fixture(autouse=True)
def _isolated_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own database and never touches a user's judgecards.db."""
    db = tmp_path / "judgecards.db"
    monkeypatch.setenv("JUDGECARDS_DB", str(db))
    for name in (
        "OPENAI_BASE_URL",
        "ANTHROPIC_BASE_URL",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "JUDGECARDS_CARDS_DIR",
    ):
        monkeypatch.delenv(name, raising=False)
    return db


@pytest.fixture
def serve() -> Iterator[Callable[..., FakeServer]]:
    """Start loopback fake servers: ``serve(latency=0.05, reply=..., fault=...)``; all are
    stopped when the test ends."""
    started: list[FakeServer] = []

    def start(**options: Any) -> FakeServer:
        fake = FakeServer(**options).serve_in_thread()
        started.append(fake)
        return fake

    yield start
    for fake in started:
        fake.stop()


@pytest.fixture
def prices(tmp_path: Path) -> Path:
    """A price file (``--prices``) for `PRICED_MODEL`: $2 in, $8 out per million tokens, batch
    at half price; for the tests of plans and cost caps."""
    path = tmp_path / "prices.yml"
    path.write_text(
        f"models:\n  {PRICED_MODEL}:\n    {{input: 2.0, output: 8.0, batch_discount: 0.5, "
        'as_of: "2026-01-01", source: "test"}\n'
    )
    return path


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    """One loopback fake server per test module, with the default `card_reply`. A test that
    changes its ``reply`` or ``fault`` must put it back (or use `serve` for a private one)."""
    fake = FakeServer().serve_in_thread()
    yield fake
    fake.stop()


# ---------------------------------------------------------------- headless Chromium
# Here, not in tests/serve/conftest.py, because the demo's report test (a CLI test) drives it too.

SCREENSHOTS = Path(__file__).parent / "serve" / "screenshots"


CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


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
def screenshot_dir() -> Path:
    """Where browser tests write screenshots for a person to look at (gitignored)."""
    SCREENSHOTS.mkdir(exist_ok=True)
    return SCREENSHOTS
