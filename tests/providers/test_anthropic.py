"""The judge core driven through the real ``anthropic`` SDK against a scripted httpx2 transport."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from pathlib import Path
from typing import Any

import httpx2
import pytest

from judgecards import Judge, ProviderConfigError, RetryPolicy, TransportError
from judgecards.providers.anthropic import AnthropicProvider
from tests.fakes.http import (
    Script,
    Waits,
    anthropic_message,
    bad_request,
    fixture_reply,
    forbidden,
    rate_limited,
    reference_judgment,
    server_error,
    timeout,
    truncated,
    unauthorized,
)
from tests.fakes.judges import ANTHROPIC_KEY as KEY
from tests.fakes.judges import anthropic_judge, anthropic_provider

INPUTS = {
    "question": "Name the largest planet in the solar system.",
    "gold_answer": "Jupiter.",
    "model_output": "The largest planet is Jupiter.",
}
GOOD = reference_judgment()


def body(request: httpx2.Request) -> dict[str, Any]:
    return json.loads(request.content)  # type: ignore[no-any-return]


def items(n: int) -> list[dict[str, Any]]:
    return [{"id": i, **INPUTS, "model_output": f"Candidate {i}: Jupiter."} for i in range(n)]


# ---------------------------------------------------------------- happy paths


def test_score_sends_a_messages_request() -> None:
    script = Script(anthropic_message(GOOD, input_tokens=845, output_tokens=102))
    result = anthropic_judge(script).score(**INPUTS)

    assert result.status == "ok" and result.verdict == "match" and result.attempts == 1
    assert (result.usage.input_tokens, result.usage.output_tokens) == (845, 102)
    assert result.model == "anthropic:claude-sonnet-5"

    [request] = script.requests
    assert str(request.url) == "https://api.anthropic.com/v1/messages"
    sent = body(request)
    assert sent["model"] == "claude-sonnet-5"
    assert sent["max_tokens"] == 800
    assert sent["temperature"] == 0  # sent through extra_body, lands in the JSON body
    assert "impartial grader" in sent["system"]  # the system prompt is a top-level field
    [turn] = sent["messages"]
    assert turn["role"] == "user" and INPUTS["model_output"] in turn["content"]


def test_ascore_and_score_many_use_the_async_client() -> None:
    script = Script(default=anthropic_message(GOOD))
    judge = anthropic_judge(script)

    single = asyncio.run(judge.ascore(**INPUTS))
    batch = judge.score_many(items(3), concurrency=2)

    assert single.status == "ok"
    assert [r.item_id for r in batch] == ["0", "1", "2"]
    assert all(r.status == "ok" for r in batch)
    assert len(script.requests) == 4
    assert all(r.headers["x-stainless-async"].startswith("async:") for r in script.requests)


def test_prose_around_json_is_parsed() -> None:
    result = anthropic_judge(Script(fixture_reply("anthropic_prose_json"))).score(**INPUTS)
    assert result.status == "ok" and result.attempts == 1
    assert result.scores == {"correctness": 5, "completeness": 4, "style_fidelity": 5}
    assert (result.usage.input_tokens, result.usage.output_tokens) == (1187, 118)


def test_fenced_json_is_parsed() -> None:
    result = anthropic_judge(Script(anthropic_message(f"```json\n{GOOD}\n```"))).score(**INPUTS)
    assert result.status == "ok" and result.verdict == "match"


def test_invalid_reply_is_reasked_with_reply_and_problems() -> None:
    invalid = reference_judgment(0, 4)
    script = Script(anthropic_message(invalid), anthropic_message(GOOD))
    result = anthropic_judge(script).score(**INPUTS)

    assert result.status == "ok" and result.attempts == 2
    turns = body(script.requests[1])["messages"]
    assert [t["role"] for t in turns] == ["user", "assistant", "user"]
    assert turns[1]["content"] == invalid
    assert (
        "- scores.correctness: Input should be greater than or equal to 1"
        in turns[2]["content"].splitlines()
    )


def test_max_tokens_stop_is_asked_again_with_twice_the_budget_not_reasked() -> None:
    script = Script(fixture_reply("anthropic_max_tokens"), anthropic_message(GOOD))
    result = anthropic_judge(script).score(**INPUTS)

    assert result.status == "ok" and result.attempts == 2
    first, second = (body(request) for request in script.requests)
    assert second["messages"] == first["messages"]
    assert second["max_tokens"] == 2 * first["max_tokens"]


def test_truncated_builder_uses_stop_reason_max_tokens() -> None:
    script = Script(truncated('{"scores": {', provider="anthropic"), anthropic_message(GOOD))
    assert anthropic_judge(script).score(**INPUTS).attempts == 2


def test_exhausted_reasks_are_an_error_record() -> None:
    script = Script(
        anthropic_message("Hmm.", input_tokens=10, output_tokens=1),
        anthropic_message("Hmm, still thinking.", input_tokens=20, output_tokens=3),
        anthropic_message(reference_judgment(5, 9), input_tokens=30, output_tokens=40),
    )
    result = anthropic_judge(script).score(**INPUTS)  # max_attempts defaults to 3

    assert result.status == "error" and result.error_kind == "invalid_output"
    assert result.attempts == 3
    assert result.raw_reply == reference_judgment(5, 9)
    assert (result.usage.input_tokens, result.usage.output_tokens) == (60, 44)
    assert result.error is not None and "scores.completeness" in result.error


# ---------------------------------------------------------------- transport


def test_429_waits_what_retry_after_says() -> None:
    waits = Waits()
    script = Script(rate_limited(retry_after=1, provider="anthropic"), anthropic_message(GOOD))
    assert anthropic_judge(script, waits=waits).score(**INPUTS).status == "ok"
    assert waits.waits == [1.0]


def test_529_overloaded_then_success() -> None:
    waits = Waits()
    script = Script(server_error(529, provider="anthropic"), anthropic_message(GOOD))
    [result] = anthropic_judge(script, waits=waits).score_many(items(1))
    assert result.status == "ok"
    assert len(script.requests) == 2 and len(waits.waits) == 1


def test_timeout_then_success_async() -> None:
    waits = Waits()
    script = Script(timeout(), anthropic_message(GOOD))
    result = asyncio.run(anthropic_judge(script, waits=waits).ascore(**INPUTS))
    assert result.status == "ok" and len(script.requests) == 2 and len(waits.waits) == 1


def test_500s_exhaust_into_an_error_record() -> None:
    waits = Waits()
    script = Script(default=server_error(500, provider="anthropic"))
    result = anthropic_judge(script, waits=waits, attempts=3).score(**INPUTS)

    assert result.status == "error" and result.error_kind == "transient"
    assert result.error is not None and "HTTP 500" in result.error
    assert len(script.requests) == 3  # the SDK does not retry on its own


@pytest.mark.parametrize("reply", [unauthorized, forbidden], ids=["401", "403"])
def test_auth_failure_raises_out_of_score_many(reply: Any) -> None:
    script = Script(anthropic_message(GOOD), reply(provider="anthropic"))
    judge = anthropic_judge(script)
    with pytest.raises(TransportError) as caught:
        judge.score_many(items(3), concurrency=1)
    assert caught.value.kind == "auth"
    assert KEY not in str(caught.value)
    assert [r.item_id for r, _ in judge.store.results()] == ["0"]
    assert len(script.requests) == 2


# ---------------------------------------------------------------- temperature


def test_temperature_rejected_by_the_model_is_dropped_and_the_call_retried(
    caplog: pytest.LogCaptureFixture,
) -> None:
    waits = Waits()
    script = Script(
        bad_request(
            "temperature: this model does not support a non-default temperature",
            provider="anthropic",
        ),
        anthropic_message(GOOD),
        anthropic_message(GOOD),
    )
    judge = anthropic_judge(script, waits=waits)

    with caplog.at_level(logging.WARNING, logger="judgecards.judging.retry"):
        first = judge.score(**INPUTS)
    second = judge.score(**{**INPUTS, "model_output": "Jupiter, the gas giant."})

    assert first.status == "ok" and second.status == "ok"
    assert (first.attempts, first.transport_retries) == (1, 1)
    assert second.transport_retries == 0  # built without it: no second 400
    sent = [body(r) for r in script.requests]
    assert sent[0]["temperature"] == 0
    assert "temperature" not in sent[1] and "temperature" not in sent[2]  # dropped for good
    assert waits.waits == [0.0]
    assert "rejects temperature" in caplog.text


def test_a_400_about_something_else_is_fatal_and_not_retried() -> None:
    script = Script(
        bad_request("messages: roles must alternate", provider="anthropic"), anthropic_message(GOOD)
    )
    result = anthropic_judge(script).score(**INPUTS)
    assert result.status == "error" and result.error_kind == "fatal"
    assert result.error is not None and "HTTP 400" in result.error
    assert len(script.requests) == 1


def test_temperature_none_sends_none() -> None:
    script = Script(anthropic_message(GOOD))
    policy = RetryPolicy(sleep=Waits())
    judge = Judge(
        "reference@1",
        "anthropic:claude-sonnet-5",
        provider=anthropic_provider(script),
        retry=policy,
        temperature=None,
    )
    judge.score(**INPUTS)
    assert "temperature" not in body(script.requests[0])


# ---------------------------------------------------------------- keys and configuration


def test_missing_api_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-unrelated-secret")
    with pytest.raises(ProviderConfigError) as caught:
        AnthropicProvider("claude-sonnet-5")
    message = str(caught.value)
    assert "ANTHROPIC_API_KEY" in message
    assert "sk-" not in message
    assert caught.value.provider == "anthropic"
    with pytest.raises(ProviderConfigError, match="ANTHROPIC_API_KEY"):
        Judge("reference@1", "anthropic:claude-sonnet-5")


def test_key_from_the_environment_is_used_and_never_stored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:4010")
    script = Script(
        anthropic_message("not json"),
        anthropic_message(GOOD),
        server_error(500, provider="anthropic"),
    )
    provider = AnthropicProvider("claude-sonnet-5", http_client=script.client())
    judge = Judge(
        "reference@1", "anthropic:claude-sonnet-5", provider=provider, retry=RetryPolicy(attempts=1)
    )

    assert judge.score(**INPUTS).status == "ok"
    failed = judge.score(**{**INPUTS, "model_output": "Saturn."})
    assert failed.status == "error" and KEY not in (failed.error or "")
    assert KEY not in repr(provider)
    judge.store.close()

    assert str(script.requests[0].url) == "http://127.0.0.1:4010/v1/messages"
    assert KEY in (
        script.requests[0].headers.get("x-api-key", "")
        + script.requests[0].headers.get("authorization", "")
    )
    db = Path(os.environ["JUDGECARDS_DB"])
    for path in db.parent.iterdir():
        if path.name.startswith(db.name):
            assert KEY.encode() not in path.read_bytes(), path
