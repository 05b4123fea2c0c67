"""Two retry loops, kept apart: transport retries (here) and re-asks on invalid output (judge.py).

Transport: the provider classifies each failure (`RetryDecision`); tenacity retries only what is
retryable, waits what the server's ``retry-after`` asks or else exponential backoff with jitter,
and stops after ``attempts`` tries or when the next wait would pass the ``deadline``. The SDKs
are built with ``max_retries=0``, so this is the only transport retry layer. ``sleep`` is
injectable so tests record waits instead of sleeping.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    stop_before_delay,
    wait_exponential_jitter,
)

from judgecards.errors import ProviderError, TransportError
from judgecards.providers.base import Provider, RetryDecision

__all__ = ["RetryPolicy", "call_with_retries", "acall_with_retries"]

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try a provider call before giving up on an item.

    Attributes:
        attempts: total tries per call, the first included.
        deadline: seconds after the first try beyond which no further wait is started.
        initial_wait / max_wait / jitter: exponential backoff (seconds) when the server gives no
            ``retry-after``; when it gives one, that wait is used as is.
        sleep / async_sleep: replaceable for tests.
    """

    attempts: int = 6
    deadline: float = 300.0
    initial_wait: float = 1.0
    max_wait: float = 60.0
    jitter: float = 1.0
    sleep: Callable[[float], None] = time.sleep
    async_sleep: Callable[[float], Awaitable[None]] = asyncio.sleep


class _Classified(Exception):
    """Carries a provider error with the decision made about it, so it is classified only once."""

    def __init__(self, error: BaseException, decision: RetryDecision) -> None:
        super().__init__(str(error))
        self.error = error
        self.decision = decision


class _wait_for_server:
    def __init__(self, policy: RetryPolicy) -> None:
        self._backoff = wait_exponential_jitter(
            initial=policy.initial_wait, max=policy.max_wait, jitter=policy.jitter
        )

    def __call__(self, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome else None
        if isinstance(error, _Classified) and error.decision.retry_after is not None:
            # The server knows when it will take us back; its word replaces our guess.
            return max(error.decision.retry_after, 0.0)
        return float(self._backoff(state))


def _classified(provider: Provider, error: Exception) -> Exception:
    """Wrap a provider's error with its decision; anything the provider does not recognise (a
    bug, not a transport failure) is returned unwrapped so it propagates instead of becoming a
    quiet error record."""
    decision = provider.classify(error)
    return error if decision is None else _Classified(error, decision)


def _stop(policy: RetryPolicy) -> object:
    return stop_after_attempt(policy.attempts) | stop_before_delay(policy.deadline)


def _retryable(error: BaseException) -> bool:
    return isinstance(error, _Classified) and error.decision.retry


def _give_up(provider: Provider, classified: _Classified) -> TransportError:
    decision = classified.decision
    status = f"HTTP {decision.status}: " if decision.status else ""
    # The SDK's message is built from the response body, never from request headers or keys.
    return TransportError(
        f"{provider.name}:{provider.model} failed ({decision.kind}): {status}{classified.error}",
        provider=provider.name,
        model=provider.model,
        kind=decision.kind,
        status=decision.status,
    )


def call_with_retries(provider: Provider, call: Callable[[], T], policy: RetryPolicy) -> T:
    """Run a provider call under the transport policy.

    Raises:
        TransportError: the call failed for good (``kind`` and ``status`` say why).
    """

    def attempt() -> T:
        try:
            return call()
        except ProviderError:
            raise
        except Exception as error:
            raise _classified(provider, error) from error

    retrying = Retrying(
        retry=retry_if_exception(_retryable),
        wait=_wait_for_server(policy),
        stop=_stop(policy),  # type: ignore[arg-type]
        sleep=policy.sleep,
        reraise=True,
    )
    try:
        return retrying(attempt)
    except _Classified as classified:
        raise _give_up(provider, classified) from classified.error


async def acall_with_retries(
    provider: Provider, call: Callable[[], Awaitable[T]], policy: RetryPolicy
) -> T:
    """Async twin of `call_with_retries`."""

    async def attempt() -> T:
        try:
            return await call()
        except ProviderError:
            raise
        except Exception as error:
            raise _classified(provider, error) from error

    retrying = AsyncRetrying(
        retry=retry_if_exception(_retryable),
        wait=_wait_for_server(policy),
        stop=_stop(policy),  # type: ignore[arg-type]
        sleep=policy.async_sleep,
        reraise=True,
    )
    try:
        return await retrying(attempt)
    except _Classified as classified:
        raise _give_up(provider, classified) from classified.error
