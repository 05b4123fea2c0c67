"""``--output-mode`` and ``--max-tokens`` on score and compare, against the loopback fake server
(the real OpenAI SDK over HTTP): what each request carried, and what was stored."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from judgecards.cli import cli
from tests.builders import run_cli, write_jsonl
from tests.fakes.server import FakeRequest, FakeServer

ITEMS = [
    {"id": f"q{i}", "question": f"Capital of country {i}?", "gold_answer": "Paris",
     "model_output": f"It is Paris ({i})."}
    for i in range(3)
]  # fmt: skip


def recorder(seen: list[dict[str, Any]]) -> Callable[[FakeRequest], None]:
    def fault(request: FakeRequest) -> None:
        seen.append(request.body)  # never answers instead: the server replies as usual

    return fault


def score(server: FakeServer, tmp_path: Path, *extra: str) -> Any:
    """``judgecards score`` of `ITEMS` against the fake server, one call at a time."""
    tmp_path.mkdir(exist_ok=True)
    items = write_jsonl(tmp_path / "items.jsonl", ITEMS)
    return run_cli(
        "score",
        "--card",
        "reference@1",
        "--model",
        "openai:local-judge",
        items,
        "--output",
        tmp_path / "o.jsonl",
        "--db",
        tmp_path / "s.db",
        "--concurrency",
        "1",
        *extra,
        env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": None},
    )


def test_score_sends_native_output_by_default_and_the_prompt_form_when_asked(
    tmp_path: Path, serve: Callable[..., FakeServer]
) -> None:
    seen: list[dict[str, Any]] = []
    server = serve(fault=recorder(seen))

    native = score(server, tmp_path / "a", "--max-tokens", "300")
    prompt = score(server, tmp_path / "b", "--output-mode", "prompt")

    assert native.exit_code == 0 and prompt.exit_code == 0, native.output + prompt.output
    assert [("response_format" in body) for body in seen] == [True] * 3 + [False] * 3
    assert "extracted: native 3" in native.stdout
    assert "extracted: prompt_json 3" in prompt.stdout
    assert [body["max_tokens"] for body in seen] == [300] * 3 + [800] * 3
    for directory, expected in (("a", "native"), ("b", "prompt_json")):
        lines = [json.loads(x) for x in (tmp_path / directory / "o.jsonl").read_text().splitlines()]
        assert {line["extraction"] for line in lines} == {expected}
        with closing(sqlite3.connect(tmp_path / directory / "s.db")) as connection:
            stored = {row[0] for row in connection.execute("SELECT extraction FROM results")}
        assert stored == {expected}


def test_an_unknown_output_mode_is_a_usage_error(
    tmp_path: Path, serve: Callable[..., FakeServer]
) -> None:
    result = score(serve(), tmp_path, "--output-mode", "json")
    assert result.exit_code == 2 and "--output-mode" in result.output
    assert not (tmp_path / "s.db").exists()


EVAL_CONFIG = """\
items: items.jsonl
tiers:
  - name: judge
    judge:
      card: reference@1
      model: openai:local-judge
      base_url: {url}
      max_tokens: 300
      pass_verdicts: [match]
      concurrency: 1
"""


def test_eval_takes_the_judge_tier_settings_and_the_command_line_over_them(
    tmp_path: Path, serve: Callable[..., FakeServer]
) -> None:
    seen: list[dict[str, Any]] = []
    server = serve(fault=recorder(seen))
    (tmp_path / "items.jsonl").write_text(
        "".join(json.dumps(item) + "\n" for item in ITEMS[:2]), "utf-8"
    )
    config = tmp_path / "eval.yaml"
    config.write_text(EVAL_CONFIG.format(url=server.base_url), "utf-8")

    def evaluate(*extra: str) -> Any:
        return CliRunner(env={"OPENAI_API_KEY": None}).invoke(
            cli, ["eval", str(config), "--db", str(tmp_path / "e.db"), "--json", *extra],
            catch_exceptions=False,
        )  # fmt: skip

    assert evaluate().exit_code == 0
    assert evaluate("--output-mode", "prompt", "--max-tokens", "500").exit_code == 0

    assert [("response_format" in body, body["max_tokens"]) for body in seen] == [
        (True, 300), (True, 300), (False, 500), (False, 500),
    ]  # fmt: skip
