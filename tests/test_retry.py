"""Retry classification and the transport retry loop, on the real SDKs' real exceptions.

Each case drives the official SDK through the scripted transport until it raises its own
exception class (``RateLimitError``, ``APITimeoutError``…); the provider then classifies that
exception. Nothing is constructed by hand that the SDK would build itself.
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from collections.abc import Callable
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from judgecards.errors import ProviderConfigError, TransportError
from judgecards.providers.anthropic import AnthropicProvider
from judgecards.providers.base import Completion, CompletionRequest, Message, RetryDecision
from judgecards.providers.openai import OpenAIProvider
from judgecards.retry import RetryPolicy, acall_with_retries, call_with_retries
from tests.fakes.http import (
    Script,
    Waits,
    anthropic_message,
    bad_request,
    connection_error,
    forbidden,
    openai_chat,
    rate_limited,
    server_error,
    timeout,
    unauthorized,
)

REQUEST = CompletionRequest(
    model="m", messages=(Message("user", "Judge this."),), system="Be fair."
)


def openai_provider(script: Script) -> OpenAIProvider:
    return OpenAIProvider(
        "gpt-4o",
        api_key="sk-test-classify",
        http_client=script.client(),
        async_http_client=script.async_client(),
    )


def anthropic_provider(script: Script) -> AnthropicProvider:
    return AnthropicProvider(
        "claude-sonnet-5",
        api_key="sk-ant-test-classify",
        http_client=script.client(),
        async_http_client=script.async_client(),
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
    ("timeout", lambda p: timeout(), "APITimeoutError", RetryDecision(retry=True, kind="transient")),
    ("connection", lambda p: connection_error(), "APIConnectionError", RetryDecision(retry=True, kind="transient")),
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
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    provider, error = raised_by(
        "openai",
        httpx2.Response(503, headers={"retry-after": when}, json={"error": {"message": "busy"}}),
    )
    decision = provider.classify(error)
    assert decision.retry and decision.kind == "transient"
    assert decision.retry_after is not None and 27 <= decision.retry_after <= 31


def test_anthropic_400_about_temperature_is_retried_once_without_it() -> None:
    provider, error = raised_by(
        "anthropic",
        bad_request("temperature is not supported for this model", provider="anthropic"),
    )
    assert isinstance(error, anthropic.BadRequestError)
    assert provider.classify(error) == RetryDecision(
        retry=True, kind="transient", retry_after=0.0, status=400
    )
    # Once dropped, a second such 400 is an ordinary fatal error: no endless loop.
    assert provider.classify(error) == RetryDecision(retry=False, kind="fatal", status=400)


@pytest.mark.parametrize("provider_name", ["openai", "anthropic"])
def test_an_exception_that_is_not_the_sdks_is_not_classified(provider_name: str) -> None:
    # A bug (ours or the SDK's) is not a transport failure: it must propagate, not become a
    # quiet error record.
    provider = PROVIDERS[provider_name](Script())
    assert provider.classify(ValueError("boom")) is None


@pytest.mark.parametrize("provider_name", ["openai", "anthropic"])
def test_a_bug_inside_the_call_propagates_out_of_the_retry_loop(provider_name: str) -> None:
    provider = PROVIDERS[provider_name](Script())
    waits = Waits()

    def buggy() -> None:
        raise KeyError("a bug, not an HTTP failure")

    with pytest.raises(KeyError):
        call_with_retries(provider, buggy, policy(waits))
    assert waits.waits == []


# ---------------------------------------------------------------- the transport loop


def policy(waits: Waits, **kw: Any) -> RetryPolicy:
    return RetryPolicy(sleep=waits, async_sleep=waits.asleep, **kw)


def test_call_with_retries_returns_after_retryable_failures() -> None:
    waits = Waits()
    script = Script(rate_limited(retry_after=2), timeout(), server_error(502), openai_chat("fine"))
    provider = openai_provider(script)

    completion = call_with_retries(
        provider, lambda: provider.complete(REQUEST), policy(waits, jitter=0)
    )

    assert isinstance(completion, Completion) and completion.text == "fine"
    assert len(script.requests) == 4
    # 2.0 from retry-after, then exponential backoff (initial 1 s, doubling, no jitter).
    assert waits.waits == [2.0, 2.0, 4.0]


def test_backoff_is_capped_at_max_wait() -> None:
    waits = Waits()
    script = Script(default=server_error(500))
    provider = openai_provider(script)
    with pytest.raises(TransportError):
        call_with_retries(
            provider,
            lambda: provider.complete(REQUEST),
            policy(waits, attempts=6, initial_wait=1, max_wait=3, jitter=0),
        )
    assert waits.waits == [1.0, 2.0, 3.0, 3.0, 3.0]
    assert len(script.requests) == 6


def test_give_up_raises_transport_error_with_kind_status_and_cause() -> None:
    waits = Waits()
    script = Script(default=server_error(500, provider="anthropic"))
    provider = anthropic_provider(script)
    with pytest.raises(TransportError) as caught:
        call_with_retries(provider, lambda: provider.complete(REQUEST), policy(waits, attempts=2))
    error = caught.value
    assert (error.kind, error.status, error.provider, error.model) == (
        "transient",
        500,
        "anthropic",
        "claude-sonnet-5",
    )
    assert "HTTP 500" in str(error)
    assert isinstance(error.__cause__, anthropic.InternalServerError)
    assert len(script.requests) == 2


def test_non_retryable_errors_are_not_retried() -> None:
    waits = Waits()
    script = Script(unauthorized(), openai_chat("never reached"))
    provider = openai_provider(script)
    with pytest.raises(TransportError) as caught:
        call_with_retries(provider, lambda: provider.complete(REQUEST), policy(waits))
    assert caught.value.kind == "auth" and caught.value.status == 401
    assert len(script.requests) == 1 and waits.waits == []


def test_provider_errors_pass_through_unclassified() -> None:
    waits = Waits()
    calls = 0

    def call() -> Completion:
        nonlocal calls
        calls += 1
        raise ProviderConfigError("not configured", provider="openai")

    with pytest.raises(ProviderConfigError):
        call_with_retries(openai_provider(Script()), call, policy(waits))
    assert calls == 1


def test_deadline_stops_before_a_wait_that_would_pass_it() -> None:
    waits = Waits()
    script = Script(rate_limited(retry_after=120), openai_chat("too late"))
    provider = openai_provider(script)
    with pytest.raises(TransportError) as caught:
        call_with_retries(provider, lambda: provider.complete(REQUEST), policy(waits, deadline=60))
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

    async def run() -> Completion:
        return await acall_with_retries(
            provider, lambda: provider.acomplete(REQUEST), policy(waits, jitter=0)
        )

    completion = asyncio.run(run())
    assert completion.text == "ok"
    assert waits.waits == [1.0, 2.0]
    assert len(script.requests) == 3


def test_async_give_up() -> None:
    waits = Waits()
    script = Script(default=timeout())
    provider = openai_provider(script)

    async def run() -> Completion:
        return await acall_with_retries(
            provider, lambda: provider.acomplete(REQUEST), policy(waits, attempts=3)
        )

    with pytest.raises(TransportError) as caught:
        asyncio.run(run())
    assert caught.value.kind == "transient" and caught.value.status is None
    assert len(script.requests) == 3 and len(waits.waits) == 2
