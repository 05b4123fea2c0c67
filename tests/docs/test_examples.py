"""Every code block of the README and the docs pages runs (see `tests.docs.examples` for the
conventions), against the mock provider or the loopback fake server; shown output is checked."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs.examples import REPO, Workspace, blocks
from tests.fakes.server import FakeServer

PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
IDS = [str(page.relative_to(REPO)) for page in PAGES]

# Pages whose every block is skipped must say why; this keeps the skipped blocks few and seen.
MAX_NO_RUN = 12


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeServer]:
    server = FakeServer().serve_in_thread()
    yield server
    server.stop()


@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_page_examples_run(page: Path, tmp_path: Path, fake: FakeServer) -> None:
    workspace = Workspace.create(tmp_path, fake.base_url)
    try:
        for block in blocks(page):
            if block.title and block.lang != "text":
                workspace.write(block)
            elif block.runs:
                workspace.run(block)
    finally:
        workspace.close()


def test_blocks_are_runnable_or_say_why_not() -> None:
    """A block in a language the runner does not know is data with a file name, output, or
    marked ``no-run`` with a reason; and the no-run blocks stay few."""
    skipped = []
    for page in PAGES:
        for block in blocks(page):
            if block.no_run is not None:
                skipped.append(f"{block.where}: {block.no_run}")
            elif block.lang not in {"python", "bash"}:
                assert block.title or block.is_output, (
                    f'{block.where}: a ```{block.lang} block needs title="FILE", '
                    'title="output" after a runnable block, or <!-- docs: no-run REASON -->'
                )
    assert len(skipped) <= MAX_NO_RUN, "\n".join(skipped)
