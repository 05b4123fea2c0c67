"""Adaptive concurrency (`judgecards.rate`): the limiter's rules, the retry loop feeding it through
the real SDKs, and whole runs against a loopback server that takes only so many calls at once.

Unit tests step a fake clock and record waits instead of sleeping; the runs assert counts
(requests refused, items lost), never timings.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx2
import pytest

from judgecards import Judge
from judgecards.providers.base import CompletionRequest, Message
from judgecards.rate import DECREASE, AdaptiveLimiter, Permit
from judgecards.retry import RetryPolicy, acall_with_retries, call_with_retries
from tests.fakes.http import Script, Waits, anthropic_message, openai_chat, rate_limited
from tests.fakes.judges import anthropic_provider, openai_provider
from tests.fakes.server import FakeServer

REQUEST = CompletionRequest(model="m", messages=(Message("user", "Judge this."),), max_tokens=50)


class Clock:
    """A clock that moves only when told to."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def take(limiter: AdaptiveLimiter, n: int) -> list[Permit]:
    return [limiter.acquire_blocking() for _ in range(n)]


# ---------------------------------------------------------------- the limiter's rules


def test_slow_start_grows_from_eight_to_the_ceiling_and_never_past_it() -> None:
    limiter = AdaptiveLimiter(20)
    assert limiter.concurrency == 8
    for _ in range(30):  # rounds of: fill every slot, all answered
        for permit in take(limiter, limiter.concurrency):
            limiter.succeeded(permit)
    assert limiter.concurrency == 20


def test_a_burst_of_429s_lands_near_what_the_server_accepted_in_one_cut() -> None:
    limiter = AdaptiveLimiter(64, start=16)
    permits = take(limiter, 16)  # the server takes 8 and refuses the rest at once
    for permit in permits[8:]:
        limiter.overloaded(permit, None)
    stats = limiter.stats()
    assert (stats.overloads, stats.decreases) == (8, 1)
    assert limiter.concurrency == int(8 * DECREASE)
    for permit in permits[:8]:
        limiter.succeeded(permit)


def test_one_refusal_cuts_by_one_factor_and_a_stale_one_by_at_most_one_more() -> None:
    limiter = AdaptiveLimiter(64, start=8)
    permits = take(limiter, 8)
    limiter.overloaded(permits[0], None)  # 7 others in flight: 8 -> 0.75 * 7
    assert limiter.concurrency == int(DECREASE * 7)
    for permit in permits[1:7]:
        limiter.released(permit)  # failures that say nothing about load: no growth
    limiter.overloaded(permits[7], None)  # sent before the cut, alone in flight now
    assert limiter.concurrency == int(DECREASE * DECREASE * 7)
    assert limiter.stats().decreases == 1


def test_the_limit_never_falls_below_one() -> None:
    limiter = AdaptiveLimiter(8)
    for _ in range(20):
        limiter.overloaded(take(limiter, 1)[0], None)
    assert limiter.concurrency == 1
    assert limiter.stats().lowest == 1


def test_after_a_cut_the_limit_climbs_back_more_slowly_each_time_refused_at_one_level() -> None:
    limiter = AdaptiveLimiter(64, start=8)

    def refused_when_full() -> None:
        permits = take(limiter, limiter.concurrency)
        limiter.overloaded(permits[-1], None)
        for permit in permits[:-1]:
            limiter.released(permit)

    def round_trips_back_to(level: int) -> int:
        rounds = 0
        while limiter.concurrency < level:
            for permit in take(limiter, limiter.concurrency):
                limiter.succeeded(permit)
            rounds += 1
        return rounds

    refused_when_full()  # refused at 8
    first = round_trips_back_to(8)
    refused_when_full()  # refused at 8 again: probe half as fast
    second = round_trips_back_to(8)
    refused_when_full()
    third = round_trips_back_to(8)
    assert 0 < first < second < third


def test_a_limit_not_in_use_does_not_grow() -> None:
    limiter = AdaptiveLimiter(64, start=8)
    for _ in range(50):  # one call at a time: never half the limit in flight
        limiter.succeeded(take(limiter, 1)[0])
    assert limiter.concurrency == 8


def test_a_retry_after_pauses_every_other_call_but_not_the_one_that_waited_it() -> None:
    clock = Clock()
    limiter = AdaptiveLimiter(8, clock=clock)
    until = limiter.overloaded(take(limiter, 1)[0], 5.0)
    assert until == 105.0
    other, waited = Waits(), Waits()
    limiter.acquire_blocking(sleep=other)
    limiter.acquire_blocking(sleep=waited, paused_until=until)
    assert other.waits == [5.0]
    assert waited.waits == []
    stats = limiter.stats()
    assert (stats.pauses, stats.paused_s) == (1, 5.0)


def test_async_acquire_waits_out_the_pause_with_the_given_sleep() -> None:
    clock = Clock()
    limiter = AdaptiveLimiter(8, clock=clock)
    limiter.overloaded(take(limiter, 1)[0], 2.0)
    waits = Waits()
    asyncio.run(limiter.acquire(sleep=waits.asleep))
    assert waits.waits == [2.0]


def test_requests_per_minute_bucket() -> None:
    limiter = AdaptiveLimiter(64, rpm=120, clock=Clock())  # 2 a second, holding 2
    waits = Waits()
    for _ in range(3):
        limiter.acquire_blocking(sleep=waits)
    assert waits.waits == [0.5]


def test_tokens_per_minute_reserve_the_estimate_and_give_back_what_usage_did_not_use() -> None:
    limiter = AdaptiveLimiter(64, tpm=6000, clock=Clock())  # 100 tokens a second, holding 100
    waits = Waits()
    first = limiter.acquire_blocking(100, sleep=waits)
    limiter.succeeded(first, used_tokens=30)  # 70 come back
    limiter.acquire_blocking(70, sleep=waits)
    assert waits.waits == []
    limiter.acquire_blocking(70, sleep=waits)  # the bucket is empty now
    assert waits.waits == [0.7]


def test_a_call_larger_than_the_bucket_waits_for_a_full_bucket_not_forever() -> None:
    limiter = AdaptiveLimiter(64, tpm=600, clock=Clock())  # 10 a second, holding 10
    waits = Waits()
    limiter.acquire_blocking(500, sleep=waits)
    assert waits.waits == []
    limiter.acquire_blocking(5, sleep=waits)
    assert waits.waits and waits.waits[0] > 0


def test_threads_never_exceed_the_limit() -> None:
    limiter = AdaptiveLimiter(3, start=3)
    lock = threading.Lock()
    busy = peak = 0

    def call(_: int) -> None:
        nonlocal busy, peak
        permit = limiter.acquire_blocking()
        with lock:
            busy += 1
            peak = max(peak, busy)
        threading.Event().wait(0.002)
        with lock:
            busy -= 1
        limiter.succeeded(permit)

    with ThreadPoolExecutor(12) as pool:
        list(pool.map(call, range(120)))
    assert peak == 3


@pytest.mark.parametrize("bad", [{"ceiling": 0}, {"rpm": 0}, {"tpm": -5}, {"decrease": 1.0}])
def test_bad_settings_are_refused(bad: dict[str, float]) -> None:
    options: dict[str, float] = {"ceiling": 8, **bad}
    ceiling = int(options.pop("ceiling"))
    with pytest.raises(ValueError):
        AdaptiveLimiter(ceiling, **options)  # type: ignore[arg-type]


# ---------------------------------------------------------------- the retry loop feeds it


def test_a_429_with_retry_after_cuts_and_pauses_and_is_waited_once() -> None:
    limiter = AdaptiveLimiter(8)
    waits = Waits()
    script = Script(rate_limited(retry_after=0.25), openai_chat("fine"))
    sent = call_with_retries(openai_provider(script), REQUEST, waits.policy(), limiter=limiter)
    assert sent.completion.text == "fine"
    stats = limiter.stats()
    assert (stats.requests, stats.overloads, stats.decreases, stats.pauses) == (2, 1, 1, 1)
    assert waits.waits == [0.25]  # its own retry wait covers the pause it caused


def overloaded_503(retry_after: str | None) -> httpx2.Response:
    headers = {} if retry_after is None else {"retry-after": retry_after}
    body = {"error": {"message": "Service unavailable", "type": "server_error"}}
    return httpx2.Response(503, json=body, headers=headers)


@pytest.mark.parametrize(
    ("reply", "overload"),
    [
        (overloaded_503("0"), True),
        (overloaded_503(None), False),
        (httpx2.Response(500, json={"error": {"message": "boom"}}), False),
    ],
)
def test_503_counts_as_overload_only_with_a_retry_after(
    reply: httpx2.Response, overload: bool
) -> None:
    limiter = AdaptiveLimiter(8)
    script = Script(reply, openai_chat("fine"))
    call_with_retries(openai_provider(script), REQUEST, Waits().policy(), limiter=limiter)
    assert limiter.stats().decreases == int(overload)


def test_anthropic_529_overloaded_cuts_the_limit_async() -> None:
    limiter = AdaptiveLimiter(8)
    overloaded = httpx2.Response(
        529,
        json={"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    )
    script = Script(overloaded, anthropic_message("fine"))
    sent = asyncio.run(
        acall_with_retries(anthropic_provider(script), REQUEST, Waits().policy(), limiter=limiter)
    )
    assert sent.completion.text == "fine"
    assert limiter.stats().decreases == 1


# ---------------------------------------------------------------- whole runs


def items(n: int) -> list[dict[str, str]]:
    return [
        {
            "id": f"i{i}",
            "question": f"Capital {i}?",
            "gold_answer": f"C{i}",
            "model_output": f"C{i}",
        }
        for i in range(n)
    ]


@pytest.fixture
def server_of_8(request: pytest.FixtureRequest) -> Iterator[FakeServer]:
    server = FakeServer(latency=0.02, capacity=8, retry_after=request.param).serve_in_thread()
    yield server
    server.stop()


@pytest.mark.parametrize(
    "server_of_8", [True, False], ids=["retry-after", "no-retry-after"], indirect=True
)
def test_concurrency_64_against_a_server_of_8_loses_nothing_and_is_refused_little(
    server_of_8: FakeServer, tmp_path: Path
) -> None:
    # Issue 10's target: 200 items, asked concurrency 64, a server taking 8 at once.
    # Before the limiter: 904 requests, 525 of them 429s, 21 items lost.
    policy = RetryPolicy(jitter=0.1)  # backoff from 1 s when no retry-after is given
    with Judge(
        "reference", "openai:fake", db=tmp_path / "db", base_url=server_of_8.base_url,
        api_key="sk-test", retry=policy,
    ) as judge:  # fmt: skip
        results = judge.score_many(items(200), concurrency=64)
        stats = judge.rates.stats()
        assert stats is not None
    assert [r.status for r in results].count("ok") == 200
    assert server_of_8.rejected <= 40
    assert server_of_8.requests == 200 + server_of_8.rejected
    assert stats.overloads == server_of_8.rejected and stats.ceiling == 64
    assert stats.concurrency <= 64


def test_single_calls_from_threads_share_one_limiter(tmp_path: Path) -> None:
    server = FakeServer(latency=0.02, capacity=4).serve_in_thread()
    try:
        with Judge(
            "reference", "openai:fake", db=tmp_path / "db", base_url=server.base_url,
            api_key="sk-test",
        ) as judge:  # fmt: skip
            with ThreadPoolExecutor(16) as pool:
                results = list(pool.map(lambda item: judge.score(**item), items(64)))
            stats = judge.rates.stats()
        assert stats is not None
    finally:
        server.stop()
    assert all(r.status == "ok" for r in results)
    assert stats.ceiling is None and stats.overloads == server.rejected
    assert server.rejected <= 32  # 16 threads at once against 4 slots, without the limiter: ~all


def test_eval_passes_rpm_and_tpm_to_its_judge_and_tells_the_limiter_story(
    tmp_path: Path,
) -> None:
    from click.testing import CliRunner

    from judgecards.cli import cli
    from tests.test_eval_cli import YAML, setup

    config = setup(tmp_path, YAML)
    result = CliRunner().invoke(
        cli,
        ["eval", str(config), "--db", str(tmp_path / "j.db"), "--rpm", "6000", "--tpm", "90000"],
    )
    assert result.exit_code == 0, result.output
    assert "rate: concurrency 4 asked" in result.output  # the config's judge tier asks 4
    assert "rpm 6000, tpm 90000" in result.output
