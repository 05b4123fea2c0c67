"""API keys a server echoes back never reach exceptions, stderr or the database."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx2
import pytest

from judgecards import JudgeResult, Store, TransportError, compare_many
from judgecards.batch import collect_batch, submit_batch
from judgecards.judging import Judge
from judgecards.redaction import REDACTED, redact, register_secret
from tests.builders import REPO
from tests.fakes.batch_server import BatchFake
from tests.fakes.http import Script, openai_chat, reference_judgment
from tests.fakes.judges import OPENAI_KEY, openai_judge
from tests.fakes.server import FakeRequest, FakeServer, card_reply, echo_key_error, sent_key

# A key no other test registers, so the CLI subprocess (a fresh process) knows it only from
# the environment, as a user's run would.
CLI_KEY = "sk-proj-cliTEST9f8e7d6c5b4a3928172635445362718190aBcDeF"
INPUTS = {
    "question": "Name the largest planet in the solar system.",
    "gold_answer": "Jupiter.",
    "model_output": "The largest planet is Jupiter.",
}


# ---------------------------------------------------------------- the function


def test_configured_keys_and_key_shaped_tokens_are_redacted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MY_SERVICE_API_KEY", "plain-secret-value-1234")
    register_secret("registered-token-5678")
    text = (
        "bad key sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv, also plain-secret-value-1234, "
        "registered-token-5678 and sk-proj-0123456789abcdefXYZ"
    )
    redacted = redact(text)
    for secret in (
        "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv", "plain-secret-value-1234",
        "registered-token-5678", "sk-proj-0123456789abcdefXYZ",
    ):  # fmt: skip
        assert secret not in redacted
    assert redacted.count(REDACTED) == 4


def test_ordinary_text_is_left_alone() -> None:
    register_secret("short")  # too short to register: it would blank ordinary words
    text = "Use sk-learn (scikit-learn) or ask-me-anything; the short answer is 42."
    assert redact(text) == text


def test_model_text_keeps_key_shaped_tokens_unless_they_are_configured_keys() -> None:
    register_secret(OPENAI_KEY)
    reply = f"The docs show sk-example-0000000000000000 as a placeholder; leaked: {OPENAI_KEY}"
    redacted = redact(reply, key_shaped=False)
    assert "sk-example-0000000000000000" in redacted and OPENAI_KEY not in redacted


def test_the_store_redacts_defensively(tmp_path: Path) -> None:
    register_secret(OPENAI_KEY)
    db = tmp_path / "j.db"
    store = Store(db)
    store.save(
        JudgeResult(
            id="r1", status="error", card="reference@1", card_hash="sha256:0", model="m",
            error=f"echoed {OPENAI_KEY}", raw_reply=f"the key is {OPENAI_KEY}",
        ),
        inputs={}, params={},
    )  # fmt: skip
    store.close()
    assert OPENAI_KEY.encode() not in b"".join(p.read_bytes() for p in tmp_path.iterdir())


# ---------------------------------------------------------------- end to end


def echoing(status: int) -> Callable[[httpx2.Request], httpx2.Response]:
    """A server that quotes the key it was sent in an error body."""

    def reply(request: httpx2.Request) -> httpx2.Response:
        key = request.headers["authorization"].removeprefix("Bearer ")
        body = {"error": {"message": f"Incorrect API key provided: {key}.", "type": "invalid"}}
        return httpx2.Response(status, json=body)

    return reply


def test_a_key_echoed_in_a_400_is_in_no_row_and_no_exception(tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    script = Script(openai_chat(reference_judgment()), default=echoing(400))
    judge = openai_judge(script, db=db)

    results = judge.score_many(
        [{"id": f"i{n}", **INPUTS, "model_output": f"Jupiter {n}."} for n in range(3)]
    )
    judge.close()

    assert [r.status for r in results] == ["ok", "error", "error"]
    for result in results[1:]:
        assert result.error is not None and REDACTED in result.error
        assert OPENAI_KEY not in result.error
    assert OPENAI_KEY.encode() not in b"".join(p.read_bytes() for p in tmp_path.iterdir())


def test_a_key_echoed_in_a_401_is_not_in_the_exception() -> None:
    judge = openai_judge(Script(echoing(401)))
    with pytest.raises(TransportError) as caught:
        judge.score(**INPUTS)
    assert caught.value.kind == "auth"
    assert OPENAI_KEY not in str(caught.value) and REDACTED in str(caught.value)


def echo_key_unauthorized(request: FakeRequest) -> tuple[int, dict[str, Any]]:
    _, body = echo_key_error(request)
    body["error"]["message"] = f"Incorrect API key provided: {sent_key(request)}."
    return 401, body


@pytest.mark.parametrize("fault", [echo_key_error, echo_key_unauthorized], ids=["400", "401"])
def test_cli_run_against_a_server_that_echoes_the_key_leaks_it_nowhere(
    serve: Callable[..., FakeServer], tmp_path: Path, fault: Any
) -> None:
    server = serve(fault=fault)
    items = tmp_path / "items.jsonl"
    items.write_text(
        "".join(
            f'{{"id": "i{n}", "question": "Q{n}?", "gold_answer": "A.", "model_output": "A{n}."}}\n'
            for n in range(3)
        )
    )
    db, output = tmp_path / "j.db", tmp_path / "out.jsonl"
    env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": CLI_KEY}
    done = subprocess.run(
        [sys.executable, "-m", "judgecards", "score", "--card", "reference@1",
         "--model", "openai:gpt-4o", str(items), "--output", str(output),
         "--db", str(db)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip

    assert server.requests >= 1
    assert CLI_KEY not in done.stdout and CLI_KEY not in done.stderr
    assert REDACTED in done.stderr + done.stdout + (output.read_text() if output.exists() else "")
    for path in tmp_path.iterdir():
        assert CLI_KEY.encode() not in path.read_bytes(), path
    if db.exists():
        with closing(sqlite3.connect(db)) as connection:
            errors = [row[0] for row in connection.execute("SELECT error FROM results")]
        assert all(CLI_KEY not in (error or "") for error in errors)
    assert done.returncode != 0  # every item failed (400) or the run stopped (401)


# ---------------------------------------------------------------- every path, every column

# Not ``sk-``-shaped: only its being a configured key (an ``*_API_KEY`` variable) redacts it.
CANARY = "jc-canary-7f3a9c1e5b2d4f60a8e1"


def echoing_replies(prompt: str) -> str:
    """The card's valid reply, with the key the fake was sent quoted in its free text."""
    reply = json.loads(card_reply(prompt))
    field = "reasoning" if "reasoning" in reply else "decision_basis"
    reply[field] = f"{reply[field]} The request carried the key {CANARY}"
    return json.dumps(reply)


def everything_stored(db: Path) -> list[tuple[str, str, Any]]:
    """Every value of every column of every table: ``(table, column, value)``."""
    found = []
    with closing(sqlite3.connect(db)) as connection:
        tables = [row[0] for row in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'"
        )]  # fmt: skip
        for table in tables:
            cursor = connection.execute(f'SELECT * FROM "{table}"')
            columns = [d[0] for d in cursor.description]
            found += [(table, c, v) for row in cursor for c, v in zip(columns, row)]
    return found


def test_a_canary_key_is_in_no_table_after_every_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Live score, compare, batch submit and collect (both providers, errored lines quoting
    the key), then ``collect --live``: the key the providers echo is in no stored value."""
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)
    db = tmp_path / "j.db"
    with BatchFake(reply=echoing_replies, echo_key=True) as fake:
        urls = {"openai": fake.openai_url, "anthropic": fake.base_url}
        models = {"openai": "openai:gpt-4o-mini", "anthropic": "anthropic:claude-sonnet-5"}
        with Judge("reference@1", models["openai"], db=db, base_url=urls["openai"]) as judge:
            assert all(r.ok for r in judge.score_many([{"id": "live", **INPUTS}]))
        with Judge("pairwise", models["openai"], db=db, base_url=urls["openai"]) as judge:
            pair = {"id": "p", "question": "Q?", "answer_a": "A one.", "answer_b": "A two."}
            assert all(c.ok for c in compare_many(judge, [pair]))
        for provider in ("openai", "anthropic"):
            batch_items = [
                {"id": f"{provider}{n}", **INPUTS, "model_output": f"Jupiter {n}."}
                for n in range(3)
            ]
            with Judge("reference@1", models[provider], db=db, base_url=urls[provider]) as judge:
                submit_batch(judge, batch_items)
                keys = sorted(r["custom_id"] for r in list(fake.batches.values())[-1].requests)
                fake.errored = set(keys[1:])  # one line answers, two are errors quoting the key
                first = collect_batch(judge, wait=True, poll=0.001)
                assert first.left == {"errored": 2}
                fake.errored = set()
                again = collect_batch(judge, wait=True, poll=0.001, retry="live")
                assert again.live == 2 and again.finished
        assert fake.counts["live"] >= 5
    quoted = [f"API key: {CANARY}" in str(b.outcomes) for b in fake.batches.values()]
    assert quoted == [True, True]  # the fake did quote the key in both providers' error lines

    stored = everything_stored(db)
    tables = {table for table, _, _ in stored}
    assert {"results", "response_cache", "comparisons", "batch_jobs", "batch_items"} <= tables
    leaks = [(t, c) for t, c, v in stored if CANARY in str(v)]
    assert leaks == []
    assert any(REDACTED in str(v) for t, c, v in stored if (t, c) == ("batch_items", "error"))
    assert any(REDACTED in str(v) for t, c, v in stored if (t, c) == ("response_cache", "text"))
    for path in tmp_path.iterdir():
        assert CANARY.encode() not in path.read_bytes(), path
