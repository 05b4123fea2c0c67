"""Retry classification and the transport retry loop, on the real SDKs' real exceptions.

Each case drives the official SDK through the scripted transport until it raises its own
exception class (``RateLimitError``, ``APITimeoutError``…); the provider then classifies that
exception. Nothing is constructed by hand that the SDK would build itself.
"""

from __future__ import annotations

import asyncio
import email.utils
import socket
import time
from collections.abc import Callable
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from judgecards.errors import TransportError
from judgecards.judging.retry import Sent, TransportState, acall_with_retries, call_with_retries
from judgecards.providers.base import CompletionRequest, Message, RetryDecision
from judgecards.providers.http_errors import retry_after_seconds
from tests.fakes.http import (
    Script,
    Waits,
    anthropic_message,
    bad_request,
    connection_error,
    connection_refused,
    forbidden,
    openai_chat,
    rate_limited,
    server_error,
    timeout,
    unauthorized,
)
from tests.fakes.judges import OPENAI_KEY, anthropic_provider, openai_provider

REQUEST = CompletionRequest(
    model="m", messages=(Message("user", "Judge this."),), system="Be fair."
)


PROVIDERS: dict[str, Callable[[Script], Any]] = {
    "openai": openai_provider,
    "anthropic": anthropic_provider,
}


def raised_by(provider_name: str, reply: Any) -> tuple[Any, BaseException]:
    """Make one call through the real SDK that fails with ``reply``; return (provider, exception)."""
    provider = PROVIDERS[provider_name](Script(reply))
    with pytest.raises(Exception) as caught:
        provider.complete(REQUEST)
    return provider, caught.value


def gai_error() -> httpx2.ConnectError:
    """A host name that does not resolve, with the socket error as its cause, as httpx2 raises it."""
    error = httpx2.ConnectError("[Errno -2] Name or service not known")
    error.__cause__ = socket.gaierror(-2, "Name or service not known")
    return error


CASES = [
    # (id, reply builder(provider) -> reply, SDK exception attribute name, expected decision)
    ("429", lambda p: rate_limited(retry_after=1, provider=p), "RateLimitError",
     RetryDecision(retry=True, kind="rate_limit", retry_after=1.0, status=429)),
    ("429-no-retry-after", lambda p: rate_limited(retry_after=None, provider=p), "RateLimitError",
     RetryDecision(retry=True, kind="rate_limit", retry_after=None, status=429)),
    ("429-retry-after-ms", lambda p: rate_limited(retry_after=None, retry_after_ms=1500, provider=p), "RateLimitError",
     RetryDecision(retry=True, kind="rate_limit", retry_after=1.5, status=429)),
    ("500", lambda p: server_error(500, provider=p), "InternalServerError",
     RetryDecision(retry=True, kind="transient", status=500)),
    ("503", lambda p: server_error(503, provider=p), "InternalServerError",
     RetryDecision(retry=True, kind="transient", status=503)),
    ("529", lambda p: server_error(529, provider=p), "APIStatusError",
     RetryDecision(retry=True, kind="transient", status=529)),
    ("401", lambda p: unauthorized(provider=p), "AuthenticationError",
     RetryDecision(retry=False, kind="auth", status=401)),
    ("403", lambda p: forbidden(provider=p), "PermissionDeniedError",
     RetryDecision(retry=False, kind="auth", status=403)),
    ("400", lambda p: bad_request("messages: text content blocks must be non-empty", provider=p), "BadRequestError",
     RetryDecision(retry=False, kind="fatal", status=400)),
    ("timeout", lambda p: timeout(), "APITimeoutError",
     RetryDecision(retry=True, kind="transient", cause="timeout")),
    ("connection-reset", lambda p: connection_error(), "APIConnectionError",
     RetryDecision(retry=True, kind="transient", cause="connection")),
    ("connection-refused", lambda p: connection_refused(), "APIConnectionError",
     RetryDecision(retry=True, kind="transient", cause="unreachable")),
    ("name-not-resolved", lambda p: gai_error(), "APIConnectionError",
     RetryDecision(retry=True, kind="transient", cause="unreachable")),
]  # fmt: skip


@pytest.mark.parametrize("provider_name", ["openai", "anthropic"])
@pytest.mark.parametrize(
    ("reply", "sdk_error", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_classification_of_real_sdk_errors(
    provider_name: str, reply: Any, sdk_error: str, expected: RetryDecision
) -> None:
    sdk = openai if provider_name == "openai" else anthropic
    provider, error = raised_by(provider_name, reply(provider_name))

    assert isinstance(error, getattr(sdk, sdk_error)), type(error)
    assert provider.classify(error) == expected


def test_a_timeout_is_the_sdks_timeout_class_and_a_connection_error() -> None:
    _, error = raised_by("openai", timeout())
    assert isinstance(error, openai.APITimeoutError) and isinstance(
        error, openai.APIConnectionError
    )
    _, error = raised_by("anthropic", timeout())
    assert isinstance(error, anthropic.APITimeoutError) and isinstance(
        error, anthropic.APIConnectionError
    )


def test_quota_exhausted_429_is_fatal() -> None:
    provider, error = raised_by("openai", rate_limited(retry_after=1, code="insufficient_quota"))
    assert isinstance(error, openai.RateLimitError)
    assert provider.classify(error) == RetryDecision(retry=False, kind="fatal", status=429)


def test_retry_after_as_an_http_date() -> None:
    # A date years ahead, so the wall clock the provider compares it to cannot pass it; the
    # seconds themselves are counted from an injected clock.
    now = float(int(time.time()) + 10 * 365 * 86400)
    when = email.utils.formatdate(now + 30, usegmt=True)
    provider, error = raised_by(
        "openai",
        httpx2.Response(503, headers={"retry-after": when}, json={"error": {"message": "busy"}}),
    )
    decision = provider.classify(error)
    assert decision.retry and decision.kind == "transient"
    assert decision.retry_after is not None and decision.retry_after > 30
    assert isinstance(error, openai.APIStatusError)
    assert retry_after_seconds(error.response.headers, clock=lambda: now) == 30.0


def test_anthropic_400_about_temperature_names_the_rejected_parameter_and_changes_nothing() -> None:
    script = Script(
        bad_request("temperature is not supported for this model", provider="anthropic"),
        anthropic_message("ok"),
    )
    provider = anthropic_provider(script)
    with pytest.raises(anthropic.BadRequestError) as caught:
        provider.complete(REQUEST)
    expected = RetryDecision(
        retry=False, kind="fatal", status=400, rejected_parameter="temperature"
    )
    # Pure: the same error gets the same decision every time, and the provider still sends
    # the temperature it is asked to send (it used to switch itself off for every caller).
    assert provider.classify(caught.value) == expected
    assert provider.classify(caught.value) == expected
    provider.complete(REQUEST)
    assert script.bodies()[1]["temperature"] == 0


def test_openai_400_naming_a_parameter_is_recognised_from_the_body() -> None:
    provider, error = raised_by(
        "openai",
        bad_request(
            "Unsupported value: 'temperature' does not support 0.0 with this model.",
            param="temperature",
        ),
    )
    assert provider.classify(error) == RetryDecision(
        retry=False, kind="fatal", status=400, rejected_parameter="temperature"
    )
    provider, error = raised_by(
        "openai", bad_request("logprobs are not supported", param="logprobs")
    )
    assert provider.classify(error).rejected_parameter == "top_logprobs"


@pytest.mark.parametrize("provider_name", ["openai", "anthropic"])
def test_an_exception_that_is_not_the_sdks_is_not_classified(provider_name: str) -> None:
    # A bug (ours or the SDK's) is not a transport failure: it must propagate, not become a
    # quiet error record.
    provider = PROVIDERS[provider_name](Script())
    assert provider.classify(ValueError("boom")) is None


def test_a_bug_on_our_side_of_the_call_propagates_out_of_the_retry_loop() -> None:
    # A 200 whose choice has no message makes our reply conversion fail: that is a bug to see,
    # not a transport failure to retry.
    body = openai_chat("x").json()
    body["choices"][0]["message"] = None
    script = Script(httpx2.Response(200, json=body), openai_chat("never reached"))
    waits = Waits()
    with pytest.raises(AttributeError):
        call_with_retries(openai_provider(script), REQUEST, waits.policy())
    assert waits.waits == [] and len(script.requests) == 1


# ---------------------------------------------------------------- the transport loop


def test_call_with_retries_returns_after_retryable_failures() -> None:
    waits = Waits()
    script = Script(rate_limited(retry_after=2), timeout(), server_error(502), openai_chat("fine"))

    sent = call_with_retries(openai_provider(script), REQUEST, waits.policy(jitter=0))

    assert isinstance(sent, Sent) and sent.completion.text == "fine"
    assert sent.retries == 3 and sent.request == REQUEST
    assert len(script.requests) == 4
    # 2.0 from retry-after, then exponential backoff (initial 1 s, doubling, no jitter).
    assert waits.waits == [2.0, 2.0, 4.0]


def test_backoff_is_capped_at_max_wait() -> None:
    waits = Waits()
    script = Script(default=server_error(500))
    with pytest.raises(TransportError) as caught:
        call_with_retries(
            openai_provider(script),
            REQUEST,
            waits.policy(attempts=6, initial_wait=1, max_wait=3, jitter=0),
        )
    assert waits.waits == [1.0, 2.0, 3.0, 3.0, 3.0]
    assert len(script.requests) == 6 and caught.value.retries == 5


def test_give_up_raises_transport_error_with_kind_status_and_cause() -> None:
    script = Script(default=server_error(500, provider="anthropic"))
    with pytest.raises(TransportError) as caught:
        call_with_retries(anthropic_provider(script), REQUEST, Waits().policy(attempts=2))
    error = caught.value
    assert (error.kind, error.status, error.provider, error.model) == (
        "transient",
        500,
        "anthropic",
        "claude-sonnet-5",
    )
    assert "HTTP 500" in str(error) and not error.stops_batch
    assert isinstance(error.__cause__, anthropic.InternalServerError)
    assert len(script.requests) == 2


def test_non_retryable_errors_are_not_retried() -> None:
    waits = Waits()
    script = Script(unauthorized(), openai_chat("never reached"))
    with pytest.raises(TransportError) as caught:
        call_with_retries(openai_provider(script), REQUEST, waits.policy())
    assert caught.value.kind == "auth" and caught.value.status == 401
    assert caught.value.stops_batch
    assert len(script.requests) == 1 and waits.waits == []


def test_deadline_stops_before_a_wait_that_would_pass_it() -> None:
    waits = Waits()
    script = Script(rate_limited(retry_after=120), openai_chat("too late"))
    with pytest.raises(TransportError) as caught:
        call_with_retries(openai_provider(script), REQUEST, waits.policy(deadline=60))
    assert caught.value.kind == "rate_limit"
    assert waits.waits == [] and len(script.requests) == 1


def test_async_loop_uses_the_async_sleep() -> None:
    waits = Waits()
    script = Script(
        rate_limited(retry_after=1, provider="anthropic"),
        server_error(529, provider="anthropic"),
        anthropic_message("ok"),
    )
    provider = anthropic_provider(script)

    async def run() -> Sent:
        return await acall_with_retries(provider, REQUEST, waits.policy(jitter=0))

    sent = asyncio.run(run())
    assert sent.completion.text == "ok" and sent.retries == 2
    assert waits.waits == [1.0, 2.0]
    assert len(script.requests) == 3


def test_async_give_up() -> None:
    waits = Waits()
    script = Script(default=timeout())
    provider = openai_provider(script)

    async def run() -> Sent:
        return await acall_with_retries(provider, REQUEST, waits.policy(attempts=3))

    with pytest.raises(TransportError) as caught:
        asyncio.run(run())
    assert caught.value.kind == "transient" and caught.value.status is None
    assert len(script.requests) == 3 and len(waits.waits) == 2


# ---------------------------------------------------------------- rate limits and the deadline


def test_a_sustained_rate_limit_does_not_use_up_the_try_budget() -> None:
    # 30 429s with retry-after 1 are 30 s of waiting, well inside the 300 s deadline: the item
    # must not fail after 6 tries (it did: rate_limit error after ~5 s).
    waits = Waits()
    script = Script(*[rate_limited(retry_after=1)] * 30, openai_chat("fine"))

    sent = call_with_retries(openai_provider(script), REQUEST, waits.policy())

    assert sent.completion.text == "fine" and sent.retries == 30
    assert waits.waits == [1.0] * 30  # each retry-after honoured exactly


def test_a_rate_limit_that_never_passes_gives_up_at_the_deadline() -> None:
    waits = Waits()
    script = Script(default=rate_limited(retry_after=1))
    with pytest.raises(TransportError) as caught:
        call_with_retries(openai_provider(script), REQUEST, waits.policy(deadline=20))
    assert caught.value.kind == "rate_limit" and caught.value.status == 429
    # No wait is started that would end at or past the deadline.
    assert waits.waits == [1.0] * 19 and len(script.requests) == 20
    assert caught.value.retries == 19


def test_retry_now_is_stretched_once_the_budget_is_spent_so_the_loop_cannot_spin() -> None:
    waits = Waits()
    script = Script(default=rate_limited(retry_after=0))
    with pytest.raises(TransportError):
        call_with_retries(openai_provider(script), REQUEST, waits.policy(attempts=2, deadline=5))
    assert waits.waits == [0.0, 1.0, 1.0, 1.0, 1.0]


def test_only_failures_other_than_429_count_against_attempts() -> None:
    failures = [rate_limited(1), server_error(500), rate_limited(1), server_error(500)]
    sent = call_with_retries(
        openai_provider(Script(*failures, openai_chat("ok"))), REQUEST, Waits().policy(attempts=3)
    )
    assert sent.completion.text == "ok" and sent.retries == 4

    script = Script(*failures, openai_chat("not reached"))
    with pytest.raises(TransportError) as caught:
        call_with_retries(openai_provider(script), REQUEST, Waits().policy(attempts=2))
    assert caught.value.kind == "transient" and len(script.requests) == 4


# ---------------------------------------------------------------- a parameter the server rejects


def test_a_rejected_parameter_is_dropped_from_a_new_request_and_remembered() -> None:
    waits = Waits()
    state = TransportState()
    script = Script(
        bad_request("temperature: not supported for this model", provider="anthropic"),
        anthropic_message("ok"),
        anthropic_message("again"),
    )
    provider = anthropic_provider(script)

    sent = call_with_retries(provider, REQUEST, waits.policy(), state)

    assert sent.completion.text == "ok" and sent.retries == 1
    assert sent.request.temperature is None and REQUEST.temperature == 0.0  # a new request
    assert [body.get("temperature") for body in script.bodies()] == [0, None]
    assert waits.waits == [0.0]
    assert state.rejected == {"temperature"}
    assert state.counters.rejected_parameters == 1
    # Later requests are built without it from the start.
    again = call_with_retries(provider, REQUEST, waits.policy(), state)
    assert again.retries == 0 and "temperature" not in script.bodies()[2]


def test_a_second_rejection_of_a_dropped_parameter_is_fatal() -> None:
    reject = bad_request("temperature: not supported", provider="anthropic")
    script = Script(reject, reject, anthropic_message("never"))
    with pytest.raises(TransportError) as caught:
        call_with_retries(anthropic_provider(script), REQUEST, Waits().policy())
    assert caught.value.kind == "fatal" and caught.value.status == 400
    assert len(script.requests) == 2


# ---------------------------------------------------------------- a URL that does not answer


def test_connection_refused_before_any_answer_stops_at_once_naming_the_url() -> None:
    waits = Waits()
    script = Script(connection_refused(), openai_chat("never"))
    with pytest.raises(TransportError) as caught:
        call_with_retries(openai_provider(script), REQUEST, waits.policy())
    error = caught.value
    assert error.kind == "unreachable" and error.stops_batch
    assert error.url == "https://api.openai.com/v1/chat/completions"
    assert error.url in str(error) and "connection refused" in str(error)
    assert "OPENAI_BASE_URL" in str(error) and OPENAI_KEY not in str(error)
    assert len(script.requests) == 1 and waits.waits == []


def test_connection_refused_after_the_server_answered_is_retried() -> None:
    waits = Waits()
    state = TransportState()
    script = Script(openai_chat("first"), connection_refused(), openai_chat("second"))
    provider = openai_provider(script)

    call_with_retries(provider, REQUEST, waits.policy(), state)
    sent = call_with_retries(provider, REQUEST, waits.policy(), state)

    assert sent.completion.text == "second" and sent.retries == 1
    assert state.counters.connection_errors == 1 and len(waits.waits) == 1


def test_an_error_status_counts_as_an_answer() -> None:
    script = Script(server_error(503), connection_refused(), openai_chat("ok"))
    sent = call_with_retries(openai_provider(script), REQUEST, Waits().policy())
    assert sent.completion.text == "ok" and sent.retries == 2


# ---------------------------------------------------------------- live counters


def test_counters_count_every_retry_once_under_its_cause() -> None:
    state = TransportState()
    script = Script(
        rate_limited(retry_after=1), server_error(500), timeout(), connection_error(),
        rate_limited(retry_after=1), openai_chat("ok"),
    )  # fmt: skip
    call_with_retries(openai_provider(script), REQUEST, Waits().policy(), state)
    assert state.counters.snapshot() == {
        "requests": 6,
        "retries": 5,
        "rate_limited": 2,
        "server_errors": 1,
        "timeouts": 1,
        "connection_errors": 1,
        "rejected_parameters": 0,
    }
