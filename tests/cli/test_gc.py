"""The CLI pauses the garbage collector while a command's modules are imported and until a score
run's first result (start-up, issue 10 §5): it must hand the collector back as it found it,
whatever the run does, since tests and programs call the CLI inside their own process."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.builders import run_cli, write_jsonl
from tests.fakes.server import FakeRequest, FakeServer

ITEM = {"id": "a", "question": "Capital of Peru?", "gold_answer": "Lima.", "model_output": "Lima."}


@pytest.fixture
def collector() -> Iterator[None]:
    enabled = gc.isenabled()
    yield
    if enabled:
        gc.enable()
    else:
        gc.disable()


def score(tmp_path: Path, *model: str, env: dict[str, Any] | None = None) -> int:
    items = write_jsonl(tmp_path / "items.jsonl", [ITEM])
    result = run_cli(
        "score",
        "--card",
        "reference",
        "--model",
        *model,
        items,
        "--output",
        tmp_path / "out.jsonl",
        "--db",
        tmp_path / "run.db",
        env=env,
    )
    return result.exit_code


@pytest.mark.usefixtures("collector")
def test_a_score_run_leaves_the_collector_on(tmp_path: Path) -> None:
    gc.enable()
    assert score(tmp_path, "mock:judge") == 0
    assert gc.isenabled()


@pytest.mark.usefixtures("collector")
def test_a_score_run_leaves_a_collector_the_caller_turned_off_off(tmp_path: Path) -> None:
    gc.disable()
    assert score(tmp_path, "mock:judge") == 0
    assert not gc.isenabled()


@pytest.mark.usefixtures("collector")
def test_a_run_that_stops_before_its_first_result_turns_the_collector_back_on(
    tmp_path: Path, serve: Callable[..., FakeServer]
) -> None:
    def refuse(request: FakeRequest) -> tuple[int, dict[str, Any]]:
        return 401, {"error": {"message": "bad key", "type": "invalid_request_error"}}

    server = serve(fault=refuse)
    gc.enable()
    exit_code = score(
        tmp_path,
        "openai:judge",
        env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test-not-a-real-key"},
    )
    assert exit_code != 0
    assert gc.isenabled()


@pytest.mark.usefixtures("collector")
def test_a_cli_run_inside_another_process_freezes_nothing(tmp_path: Path) -> None:
    """Frozen objects are never freed: a test suite or a service calling the CLI in-process
    would keep every run's garbage for good."""
    frozen = gc.get_freeze_count()
    assert score(tmp_path, "mock:judge") == 0
    assert gc.get_freeze_count() == frozen


def test_the_judgecards_program_freezes_its_import_time_heap(tmp_path: Path) -> None:
    import subprocess
    import sys

    check = (
        "import gc, sys\n"
        "from judgecards.cli import main\n"
        "sys.argv = ['judgecards', 'cards', 'list']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(gc.get_freeze_count() > 0, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, check=True)
    assert done.stderr.strip().splitlines()[-1] == "True"
