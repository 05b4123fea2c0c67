"""Failure semantics of provider calls, end to end through `Judge` and the real SDKs.

A wrong base URL stops a run at once and names the URL; rate limits are waited out until the
deadline; a parameter the server rejects is dropped for every in-flight item, and the stored
parameters and cache keys say what was actually sent; transport retries are counted apart from
judge attempts, per item and live.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx2
import pytest

from judgecards import Judge, TransportError
from judgecards.providers.anthropic import AnthropicProvider
from judgecards.providers.openai import OpenAIProvider
from tests.fakes.http import (
    Script,
    Waits,
    anthropic_message,
    bad_request,
    connection_refused,
    openai_chat,
    rate_limited,
    reference_judgment,
    server_error,
    timeout,
)
from tests.fakes.judges import ANTHROPIC_KEY, OPENAI_KEY, anthropic_judge, openai_judge

GOOD = reference_judgment()
INPUTS = {
    "question": "Name the largest planet in the solar system.",
    "gold_answer": "Jupiter.",
    "model_output": "The largest planet is Jupiter.",
}


def items(n: int) -> list[dict[str, Any]]:
    return [{"id": f"i{i}", **INPUTS, "model_output": f"Candidate {i}: Jupiter."} for i in range(n)]


def stored_params(db: Path) -> list[dict[str, Any]]:
    with closing(sqlite3.connect(db)) as connection:
        return [json.loads(row[0]) for row in connection.execute("SELECT params FROM results")]


# ---------------------------------------------------------------- a URL that does not answer


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port with nothing listening on it."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    yield port


class CountingTransport(httpx2.BaseTransport):
    """A real HTTP transport that counts the requests it is asked to send, so a test sees
    retries made anywhere (the SDK's own or ours) without timing them."""

    def __init__(self) -> None:
        self.inner = httpx2.HTTPTransport()
        self.sent = 0

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        self.sent += 1
        return self.inner.handle_request(request)


class AsyncCountingTransport(httpx2.AsyncBaseTransport):
    """`CountingTransport` for the async client."""

    def __init__(self) -> None:
        self.inner = httpx2.AsyncHTTPTransport()
        self.sent = 0

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        self.sent += 1
        return await self.inner.handle_async_request(request)


@pytest.mark.parametrize(
    ("model", "key", "path"),
    [
        ("openai:gpt-4o", OPENAI_KEY, "/v1/chat/completions"),
        ("anthropic:claude-sonnet-5", ANTHROPIC_KEY, "/v1/messages"),
    ],
    ids=["openai", "anthropic"],
)
@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_a_wrong_base_url_stops_the_run_at_once_naming_the_url(
    closed_port: int, model: str, key: str, path: str, flavour: str, tmp_path: Path
) -> None:
    # The default retry policy (its waits recorded, not slept) over a real connection: before
    # the fix this was ~34 s of backoff asked for, ending in "Connection error." records.
    base = f"http://127.0.0.1:{closed_port}" + ("/v1" if model.startswith("openai") else "")
    sync_transport, async_transport = CountingTransport(), AsyncCountingTransport()
    provider_class = OpenAIProvider if model.startswith("openai") else AnthropicProvider
    provider = provider_class(
        model.split(":", 1)[1],
        api_key=key,
        base_url=base,
        http_client=httpx2.Client(transport=sync_transport),
        async_http_client=httpx2.AsyncClient(transport=async_transport),
    )
    waits = Waits()
    judge = Judge(
        "reference@1", model, provider=provider, retry=waits.policy(), db=tmp_path / "j.db"
    )
    with pytest.raises(TransportError) as caught:
        if flavour == "sync":
            judge.score(**INPUTS)
        else:
            judge.score_many(items(4), concurrency=2)
    judge.close()

    assert waits.waits == []  # no backoff asked of the retry layer
    # Neither the SDK nor the retry layer re-sent: one try per call in flight (2 at most).
    assert 1 <= sync_transport.sent + async_transport.sent <= (1 if flavour == "sync" else 2)
    error = caught.value
    assert error.kind == "unreachable" and error.stops_batch
    assert error.url == f"http://127.0.0.1:{closed_port}{path}"
    assert error.url in str(error) and "connection refused" in str(error)
    assert key not in str(error)


def test_a_wrong_url_leaves_no_error_records(closed_port: int, tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    judge = Judge(
        "reference@1", "openai:gpt-4o", api_key=OPENAI_KEY,
        base_url=f"http://127.0.0.1:{closed_port}/v1", db=db,
    )  # fmt: skip
    with pytest.raises(TransportError):
        judge.score_many(items(3))
    judge.close()
    assert stored_params(db) == []  # nothing recorded: a re-run with the right URL starts clean


def test_connection_refused_mid_run_is_retried() -> None:
    waits = Waits()
    script = Script(openai_chat(GOOD), connection_refused(), openai_chat(GOOD))
    judge = openai_judge(script, waits=waits)

    results = judge.score_many(items(2), concurrency=1)

    assert [r.status for r in results] == ["ok", "ok"]
    assert [r.transport_retries for r in results] == [0, 1]
    assert len(waits.waits) == 1


# ---------------------------------------------------------------- rate limits


def test_sustained_429_with_retry_after_1_does_not_drop_the_item() -> None:
    # Default policy: 6 tries, 300 s deadline. Before the fix the item became a rate_limit
    # error after 6 tries (~5 s of waits); 20 s of 429s are well inside the deadline.
    waits = Waits()
    script = Script(*[rate_limited(retry_after=1)] * 20, openai_chat(GOOD))
    result = openai_judge(script, waits=waits).score(**INPUTS)

    assert result.status == "ok"
    assert (result.attempts, result.transport_retries) == (1, 20)
    assert waits.waits == [1.0] * 20


def test_sustained_429_in_a_batch_ends_as_a_rate_limit_record_at_the_deadline() -> None:
    waits = Waits()
    script = Script(default=rate_limited(retry_after=1))
    [result] = openai_judge(script, waits=waits, deadline=30).score_many(items(1))

    assert result.status == "error" and result.error_kind == "rate_limit"
    assert result.transport_retries == 29 and sum(waits.waits) == 29.0


# ---------------------------------------------------------------- attempts vs transport retries


def test_server_errors_are_transport_retries_not_attempts() -> None:
    script = Script(server_error(500), server_error(500), server_error(500), openai_chat(GOOD))
    judge = openai_judge(script)
    result = judge.score(**INPUTS)

    assert result.status == "ok" and (result.attempts, result.transport_retries) == (1, 3)
    stored = judge.store.get(result.id)
    assert stored is not None and stored[0].transport_retries == 3


def test_transport_retries_are_summed_over_reasks_and_kept_on_error_records() -> None:
    script = Script(
        timeout(), openai_chat("not json"), server_error(502), openai_chat(GOOD),
    )  # fmt: skip
    result = openai_judge(script).score(**INPUTS)
    assert result.status == "ok" and (result.attempts, result.transport_retries) == (2, 2)

    failed = openai_judge(Script(default=server_error(503)), attempts=3, cache=False).score(
        **INPUTS
    )
    assert failed.status == "error" and failed.error_kind == "transient"
    assert (failed.attempts, failed.transport_retries) == (1, 2)


def test_live_counters_grow_while_a_batch_runs() -> None:
    script = Script(
        rate_limited(retry_after=1), openai_chat(GOOD),
        server_error(500), openai_chat(GOOD),
        timeout(), openai_chat(GOOD),
    )  # fmt: skip
    judge = openai_judge(script)
    seen: list[int] = []

    judge.score_many(
        items(3),
        concurrency=1,
        progress=lambda done, total, result: seen.append(judge.transport_counters.retries),
    )

    assert seen == [1, 2, 3]
    counts = judge.transport_counters.snapshot()
    assert (counts["rate_limited"], counts["server_errors"], counts["timeouts"]) == (1, 1, 1)


# ---------------------------------------------------------------- a rejected temperature


def rejects_temperature(latency: float = 0.02) -> Any:
    """A server that refuses any temperature, answering slowly enough that requests overlap."""

    async def reply(request: httpx2.Request) -> httpx2.Response:
        await asyncio.sleep(latency)
        if "temperature" in json.loads(request.content):
            return bad_request(
                "temperature: this model does not support a non-default temperature",
                provider="anthropic",
            )
        return anthropic_message(GOOD)

    return reply


def test_temperature_rejected_under_concurrency_fails_no_item(tmp_path: Path) -> None:
    # Before the fix the provider switched its temperature off inside classify(): the other
    # in-flight requests then got a fatal 400 (8 items at concurrency 8: 1 ok, 7 fatal).
    db = tmp_path / "j.db"
    script = Script(default=rejects_temperature())
    # Prompt output: with auto, the first native request goes alone (NativeProbe) and the
    # others would learn from its 400 before sending; this test needs all 8 in flight.
    judge = anthropic_judge(script, db=db, output_mode="prompt")

    results = judge.score_many(items(8), concurrency=8)

    assert [r.status for r in results] == ["ok"] * 8
    assert all(r.transport_retries == 1 for r in results)  # all 8 were in flight at once
    assert judge.transport_counters.rejected_parameters == 8
    assert len(script.requests) == 16
    # What is stored says what was sent: no temperature.
    assert [p["temperature"] for p in stored_params(db)] == [None] * 8

    # Later requests are built without it (no more 400s), and the cache keys carry no
    # temperature: a judge that never sends one is served these replies without a request.
    before = len(script.requests)
    later = asyncio.run(judge.ascore(**{**INPUTS, "model_output": "Jupiter, the gas giant."}))
    assert later.status == "ok" and later.transport_retries == 0
    assert len(script.requests) == before + 1
    no_temperature = anthropic_judge(script, db=judge.store, temperature=None, output_mode="prompt")
    again = no_temperature.score_many([{**item, "id": f"other-{item['id']}"} for item in items(8)])
    assert all(r.status == "ok" and r.cached for r in again)
    assert len(script.requests) == before + 1
