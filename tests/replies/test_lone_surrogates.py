"""A lone surrogate (``"\\ud800"``: valid JSON, not text) in an input is a located input error,
never a crash (issue 22 item 6: ``score`` died with a UnicodeEncodeError traceback and no
output on OpenAI and Anthropic, and serve answered 500)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from judgecards.cli import cli
from judgecards.serve.app import create_app
from tests.fakes.http import Script, anthropic_message, openai_chat, reference_judgment
from tests.fakes.judges import anthropic_judge, openai_judge

ITEM = {"question": "Capital of France?", "gold_answer": "Paris.", "model_output": "Paris."}
# As json.loads reads the line {"question": "Capital\ud800?", ...}.
BROKEN = {**ITEM, "question": "Capital\ud800 of France?"}
LINES = (
    '{"id": "fine", "question": "Capital of France?", "gold_answer": "Paris.", '
    '"model_output": "Paris."}\n'
    '{"id": "bad", "question": "Capital\\ud800 of France?", "gold_answer": "Paris.", '
    '"model_output": "Paris."}\n'
)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_the_item_is_an_input_error_record_and_the_others_are_judged(
    provider: str, tmp_path: Path
) -> None:
    reply = reference_judgment()
    script = Script(openai_chat(reply) if provider == "openai" else anthropic_message(reply))
    make = openai_judge if provider == "openai" else anthropic_judge
    with make(script, db=tmp_path / "j.db") as judge:
        fine, bad = judge.score_many([{"id": "fine", **ITEM}, {"id": "bad", **BROKEN}])
    assert fine.ok and len(script.requests) == 1  # the broken item was never sent
    assert (bad.status, bad.error_kind, bad.attempts) == ("error", "input", 0)
    assert bad.error is not None and "\\ud800" in bad.error and "'question'" in bad.error
    bad.model_dump_json()  # the record can be written out


@pytest.mark.parametrize("model", ["openai:gpt-4o", "anthropic:claude-sonnet-5"])
def test_score_names_file_line_and_field_and_creates_nothing(
    model: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-unused-0000000000")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-unused-000000000")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing is sent anyway
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    items = tmp_path / "items.jsonl"
    items.write_text(LINES, encoding="utf-8")
    db, out = tmp_path / "j.db", tmp_path / "out.jsonl"
    result = CliRunner().invoke(
        cli, ["score", "--card", "reference@1", "--model", model, str(items),
              "--output", str(out), "--db", str(db)],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert f"{items}:2, field 'question': a lone surrogate \\ud800" in result.output
    assert isinstance(result.exception, SystemExit)  # a usage error, not a crash
    assert not db.exists() and not out.exists()


def test_serve_answers_422_naming_the_field(tmp_path: Path) -> None:
    db = tmp_path / "api.db"
    with TestClient(create_app(db, max_items=5)) as client:
        tokens = client.app.state.tokens  # type: ignore[attr-defined]
        admin = {"Authorization": f"Bearer {tokens.create('admin', 'ann').secret}"}
        body = (
            '{"card": "reference", "model": "mock:judge", "items": [{"id": "a", '
            '"question": "Q\\ud800?", "gold_answer": "A.", "model_output": "A."}]}'
        )
        answer = client.post(
            "/v1/score", content=body.encode(),
            headers={**admin, "content-type": "application/json"},
        )  # fmt: skip
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert (error["code"], error["field"]) == ("input", "body.items.0.question")
    assert "\\ud800" in error["message"]
