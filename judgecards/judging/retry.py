"""Two retry loops, kept apart: transport retries (here) and re-asks on invalid output (judge.py).

Transport: the provider classifies each failure (`RetryDecision`, a pure value); tenacity
retries what is retryable and this module decides the rest:

- **Waits.** What the server's ``retry-after`` asks, else exponential backoff with jitter.
- **Budgets.** ``attempts`` counts tries that failed with a server error, a timeout or a broken
  connection. A 429 does not use up that budget: rate-limited tries go on, each waiting what
  ``retry-after`` asks, until the ``deadline`` (beyond ``attempts`` such tries, a wait of less
  than ``initial_wait`` is stretched to it, so "retry now" cannot spin). No wait is started
  that would end past the deadline.
- **Rejected parameters.** A 400 naming a field the judge can do without (``temperature`` for
  models that refuse it) is fatal as sent; the request is sent again at once without the field,
  and the `TransportState` remembers it so later requests are built without it.
- **Load.** With an `AdaptiveLimiter` (`judgecards.limits.rate`), every try, retries included, first
  takes a permit from it and gives it back with what happened, so an overload (429, 529) cuts
  how many calls are in flight and a ``retry-after`` pauses every call to the model. A 429
  without ``retry-after`` that left the limiter full (`judgecards.limits.rate.Refusal.wait_for_slot`)
  is retried without a backoff: it queues for a permit, which frees when one of the calls in
  flight ends (for the first ``attempts`` such tries; then the backoff again). An async call
  that succeeded yields once after giving its permit back, so a call it woke is sent before
  its reply is parsed and stored. Time spent queued for a permit is not a retry wait and does
  not count against the deadline.
- **Wrong URL.** "Connection refused" or an unresolvable host before the server has ever
  answered in this run is a configuration error: `TransportError` with kind ``unreachable``
  naming the URL, raised at once instead of after a minute of backoff. Once the server has
  answered, the same failure is a restart to wait out, and retried.

The SDKs are built with ``max_retries=0``, so this is the only transport retry layer. ``sleep``
is injectable so tests record waits instead of sleeping; the deadline counts the waits asked
for as well as the clock, so a recording sleep still ends the loop.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from tenacity import AsyncRetrying, RetryCallState, Retrying, wait_exponential_jitter

from judgecards.errors import ProviderError, TransportError
from judgecards.limits import AdaptiveLimiter, Permit, estimate_tokens, is_overload
from judgecards.providers.base import (
    Completion,
    CompletionRequest,
    DroppableParameter,
    Provider,
    RetryDecision,
)
from judgecards.providers.http_errors import context_overflow, unreachable_reason

__all__ = [
    "RetryPolicy",
    "Sent",
    "TransportCounters",
    "TransportState",
    "acall_with_retries",
    "call_with_retries",
]

log = logging.getLogger(__name__)

# tenacity 9.1 renamed wait_exponential_jitter's ``initial`` to ``multiplier`` and warns on the
# old name (an error under ``-W error``); 9.0, which pyproject still allows, knows only ``initial``.
_FIRST_WAIT = (
    "multiplier"
    if "multiplier" in inspect.signature(wait_exponential_jitter.__init__).parameters
    else "initial"
)


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try a provider call before giving up on an item.

    Attributes:
        attempts: tries per call, the first included, that may fail with a server error, a
            timeout or a connection error. Rate-limited tries (429) are bounded by ``deadline``
            alone.
        deadline: seconds after the first try beyond which no further wait is started; waits
            asked of ``sleep`` count even if it did not really sleep.
        initial_wait / max_wait / jitter: exponential backoff (seconds) when the server gives no
            ``retry-after``; when it gives one, that wait is used as is (beyond ``attempts``
            rate-limited tries, at least ``initial_wait``).
        sleep / async_sleep: replaceable for tests.
    """

    attempts: int = 6
    deadline: float = 300.0
    initial_wait: float = 1.0
    max_wait: float = 60.0
    jitter: float = 1.0
    sleep: Callable[[float], None] = time.sleep
    async_sleep: Callable[[float], Awaitable[None]] = asyncio.sleep


class TransportCounters:
    """Live transport counts of one `Judge` (``judge.transport_counters``).

    Updated by the retry loop as each request is sent and just before each wait, so a progress
    display can read them while a batch runs (from any thread). ``retries`` is the total; every
    retry is also counted under exactly one cause. Counts only grow; take a `snapshot` to compare.

    Attributes:
        requests: requests sent to the provider, retries included (replies served from the
            store or the response cache send none).
        retries: requests re-sent after a retryable failure.
        rate_limited: of which after a 429.
        server_errors: after a retryable HTTP status other than 429 (5xx, 408, 409, 529).
        timeouts: after no answer within the request timeout.
        connection_errors: after a connection that failed or broke.
        rejected_parameters: re-sent without a field the server refused (e.g. temperature).
    """

    __slots__ = (
        "_lock",
        "connection_errors",
        "rate_limited",
        "rejected_parameters",
        "requests",
        "retries",
        "server_errors",
        "timeouts",
    )

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests = 0
        self.retries = 0
        self.rate_limited = 0
        self.server_errors = 0
        self.timeouts = 0
        self.connection_errors = 0
        self.rejected_parameters = 0

    def sending(self) -> None:
        """Count one request about to be sent."""
        with self._lock:
            self.requests += 1

    def record(self, decision: RetryDecision, *, resent_without_parameter: bool) -> None:
        """Count one retry caused by ``decision``."""
        with self._lock:
            self.retries += 1
            if resent_without_parameter:
                self.rejected_parameters += 1
            elif decision.kind == "rate_limit":
                self.rate_limited += 1
            elif decision.cause == "timeout":
                self.timeouts += 1
            elif decision.cause in ("connection", "unreachable"):
                self.connection_errors += 1
            else:
                self.server_errors += 1

    def snapshot(self) -> dict[str, int]:
        """The counts at one instant, by name."""
        with self._lock:
            return {name: getattr(self, name) for name in self.__slots__ if name != "_lock"}

    def __repr__(self) -> str:
        counts = ", ".join(f"{name}={value}" for name, value in self.snapshot().items())
        return f"TransportCounters({counts})"


class TransportState:
    """What the retry loop remembers across the calls of one `Judge`.

    - whether the server has answered yet (until it has, an unreachable URL is a configuration
      error, not a failure to wait out);
    - the request fields the server rejected, so new requests are built without them
      (`prepare`); requests already built are never changed;
    - the live `TransportCounters`.
    """

    def __init__(self) -> None:
        self.counters = TransportCounters()
        self.answered = False
        self._rejected: frozenset[DroppableParameter] = frozenset()
        self._lock = threading.Lock()

    @property
    def rejected(self) -> frozenset[DroppableParameter]:
        """Request fields the server refused in this run."""
        return self._rejected

    def prepare(self, request: CompletionRequest) -> CompletionRequest:
        """``request`` as it should be sent: a new request without the rejected fields."""
        return _without(request, self._rejected)

    def reject(self, provider: Provider, parameter: DroppableParameter) -> None:
        with self._lock:
            if parameter in self._rejected:
                return
            self._rejected = self._rejected | {parameter}
        log.warning(
            "%s:%s rejects %s; sending requests without it",
            provider.name,
            provider.model,
            parameter,
        )


@dataclass(frozen=True)
class Sent:
    """A provider call that succeeded.

    Attributes:
        completion: the reply.
        request: the request that produced it, as sent (without any rejected field).
        retries: requests re-sent before this one succeeded.
    """

    completion: Completion
    request: CompletionRequest
    retries: int


class _Classified(Exception):
    """Carries a provider error with the decision made about it, so it is classified only once."""

    def __init__(self, error: BaseException, decision: RetryDecision, *, resend: bool) -> None:
        super().__init__(str(error))
        self.error = error
        self.decision = decision
        self.resend = resend  # re-send at once, changed: not a failure of the request as sent


class _Call:
    """One provider call under the policy: the state tenacity's hooks share."""

    def __init__(
        self,
        provider: Provider,
        request: CompletionRequest,
        policy: RetryPolicy,
        state: TransportState,
        limiter: AdaptiveLimiter | None = None,
    ) -> None:
        self.provider = provider
        self.request = state.prepare(request)
        self.policy = policy
        self.state = state
        self.limiter = limiter
        self.started = time.monotonic()
        self.waited = 0.0
        self.queued = 0.0  # seconds spent waiting for the limiter's permit
        self.paused_until = -math.inf  # a shared pause this call's own retry wait covers
        self.slot_wait = False  # the limiter holds this call's retry until a slot frees
        self.failures = 0  # failures that count against policy.attempts
        self.rate_limited = 0
        self.retries = 0
        self._backoff = wait_exponential_jitter(
            **{_FIRST_WAIT: policy.initial_wait}, max=policy.max_wait, jitter=policy.jitter
        )

    def _tokens(self) -> int:
        """What a try may use of a tokens-per-minute budget: estimated input plus the reply cap."""
        return estimate_tokens(self.request) + self.request.max_tokens

    def take(self) -> Permit | None:
        if self.limiter is None:
            return None
        permit = self.limiter.acquire_blocking(
            self._tokens(), sleep=self.policy.sleep, paused_until=self.paused_until
        )
        self.queued += permit.waited
        return permit

    async def atake(self) -> Permit | None:
        if self.limiter is None:
            return None
        permit = await self.limiter.acquire(
            self._tokens(), sleep=self.policy.async_sleep, paused_until=self.paused_until
        )
        self.queued += permit.waited
        return permit

    def settle(self, permit: Permit | None, outcome: object) -> None:
        """Give the permit back with what happened to the try (``outcome``: the completion,
        the classified error, or anything else for a try that says nothing about load)."""
        if self.limiter is None or permit is None:
            return
        if isinstance(outcome, Completion):
            used = outcome.usage.input_tokens + outcome.usage.output_tokens
            self.limiter.succeeded(permit, used or None)
        elif (
            isinstance(outcome, _Classified)
            and not outcome.resend
            and is_overload(outcome.decision)
        ):
            refusal = self.limiter.overloaded(permit, outcome.decision.retry_after)
            self.paused_until, self.slot_wait = refusal.paused_until, refusal.wait_for_slot
        else:
            self.limiter.released(permit)

    def succeeded(self, completion: Completion) -> Sent:
        self.state.answered = True
        return Sent(completion=completion, request=self.request, retries=self.retries)

    def classified(self, error: Exception) -> Exception:
        """Wrap a provider's error with its decision. Anything the provider does not recognise
        (a bug, not a transport failure) is returned unwrapped so it propagates instead of
        becoming a quiet error record."""
        decision = self.provider.classify(error)
        if decision is None:
            return error
        if decision.cause == "status":
            self.state.answered = True
        elif decision.cause == "unreachable" and not self.state.answered:
            return self._unreachable(error)
        elif decision.cause == "wrong_path":
            return self._wrong_path(error)
        parameter = decision.rejected_parameter
        if parameter == "json_schema" and not self.request.sends(parameter):
            parameter = "response_format"  # the json_object form was refused too: the prompt
        if parameter is not None and self.request.sends(parameter):
            self.request = _without(self.request, {parameter})
            self.state.reject(self.provider, parameter)
            return _Classified(error, decision, resend=True)
        if decision.kind == "rate_limit":
            self.rate_limited += 1
        elif decision.retry:
            self.failures += 1
        return _Classified(error, decision, resend=False)

    # ---------------------------------------------------------------- tenacity hooks

    def retryable(self, state: RetryCallState) -> bool:
        error = state.outcome.exception() if state.outcome else None
        return isinstance(error, _Classified) and (error.resend or error.decision.retry)

    def wait(self, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome else None
        assert isinstance(error, _Classified)
        if error.resend:
            return 0.0
        retry_after = error.decision.retry_after
        if retry_after is None:
            if (
                error.decision.kind == "rate_limit"
                and self.slot_wait
                and self.rate_limited < self.policy.attempts
            ):
                # Refused while the limiter's other calls were in flight: its permit queue
                # holds the retry until one of them ends, which is when the server has room.
                return 0.0
            return float(self._backoff(state))
        if error.decision.kind == "rate_limit" and self.rate_limited >= self.policy.attempts:
            # Rate-limited tries go on until the deadline; past the budget a server that says
            # "retry at once" is not taken at its word, or the loop would spin.
            return max(retry_after, self.policy.initial_wait)
        # The server knows when it will take us back; its word replaces our guess.
        return max(retry_after, 0.0)

    def stop(self, state: RetryCallState) -> bool:
        error = state.outcome.exception() if state.outcome else None
        if isinstance(error, _Classified) and error.resend:
            return False
        if self.failures >= self.policy.attempts:
            return True
        spent = max(time.monotonic() - self.started - self.queued, self.waited)
        return spent + (state.upcoming_sleep or 0.0) >= self.policy.deadline

    def before_sleep(self, state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        assert isinstance(error, _Classified)
        self.retries += 1
        self.waited += state.upcoming_sleep or 0.0
        self.state.counters.record(error.decision, resent_without_parameter=error.resend)

    # ---------------------------------------------------------------- giving up

    def give_up(self, classified: _Classified) -> TransportError:
        decision = classified.decision
        status = f"HTTP {decision.status}: " if decision.status else ""
        overflow = context_overflow(
            decision.status or 0, classified.error, getattr(classified.error, "body", None)
        )
        if decision.kind == "context_length" and overflow is not None:
            return TransportError(
                f"{self.provider.name}:{self.provider.model} failed ({decision.kind}): "
                f"{status}{overflow.advice()}",
                provider=self.provider.name,
                model=self.provider.model,
                kind=decision.kind,
                status=decision.status,
                retries=self.retries,
            )
        # The SDK's message is built from the response body, never from request headers;
        # TransportError redacts any key a server echoed in that body.
        return TransportError(
            f"{self.provider.name}:{self.provider.model} failed ({decision.kind}): "
            f"{status}{classified.error}",
            provider=self.provider.name,
            model=self.provider.model,
            kind=decision.kind,
            status=decision.status,
            retries=self.retries,
        )

    def _unreachable(self, error: BaseException) -> TransportError:
        url = _url_of(error) or str(getattr(self.provider, "base_url", None) or "?")
        variable = getattr(self.provider, "base_url_variable", None)
        where = f"base_url= or {variable}" if variable else "base_url="
        return TransportError(
            f"{self.provider.name}:{self.provider.model}: cannot reach {url} "
            f"({unreachable_reason(error) or 'unreachable'}). Check the base URL ({where}) "
            "and that the server is running.",
            provider=self.provider.name,
            model=self.provider.model,
            kind="unreachable",
            url=url,
        )

    def _wrong_path(self, error: BaseException) -> TransportError:
        """A 404 for the endpoint itself stops the run like an unreachable server: every item
        would get the same answer. Most often the base URL lacks the ``/v1`` that
        OpenAI-compatible servers (llama.cpp, vLLM, Ollama) serve their API under."""
        url = _url_of(error) or "?"
        variable = getattr(self.provider, "base_url_variable", None)
        where = f"base_url= or {variable}" if variable else "base_url="
        hint = ""
        endpoint = "/chat/completions"  # what an OpenAI-compatible base URL is followed by
        if url.endswith(endpoint) and "/v1/" not in url:
            hint = f"; OpenAI-compatible servers serve it under /v1: try {url[: -len(endpoint)]}/v1"
        return TransportError(
            f"{self.provider.name}:{self.provider.model}: {url} answered HTTP 404 (no API at "
            f"this path). Check the base URL ({where}){hint}.",
            provider=self.provider.name,
            model=self.provider.model,
            kind="unreachable",
            status=404,
            url=url,
        )


def _without(
    request: CompletionRequest, parameters: frozenset[DroppableParameter] | set[DroppableParameter]
) -> CompletionRequest:
    """A new request without ``parameters`` (``request`` itself when it sends none of them)."""
    return request.without(frozenset(parameters))


def _url_of(error: BaseException) -> str | None:
    """The request URL of an SDK connection error, without credentials or query string."""
    url = getattr(getattr(error, "request", None), "url", None)
    if url is None:
        return None
    port = f":{url.port}" if getattr(url, "port", None) else ""
    return f"{url.scheme}://{url.host}{port}{url.path}"


def call_with_retries(
    provider: Provider,
    request: CompletionRequest,
    policy: RetryPolicy,
    state: TransportState | None = None,
    limiter: AdaptiveLimiter | None = None,
) -> Sent:
    """Send ``request`` with ``provider.complete`` under the transport policy (and, with a
    ``limiter``, each try under its permit).

    Raises:
        TransportError: the call failed for good (``kind`` and ``status`` say why; see
            `TransportError.stops_batch`).
    """
    call = _Call(provider, request, policy, state or TransportState(), limiter)

    def attempt() -> Sent:
        permit = call.take()
        outcome: object = None
        call.state.counters.sending()
        try:
            outcome = provider.complete(call.request)
            return call.succeeded(outcome)
        except ProviderError:
            raise
        except Exception as error:
            outcome = call.classified(error)
            raise outcome from error
        finally:
            call.settle(permit, outcome)

    retrying = Retrying(
        sleep=policy.sleep,
        retry=call.retryable,
        wait=call.wait,
        stop=call.stop,
        before_sleep=call.before_sleep,
        reraise=True,
    )
    try:
        return retrying(attempt)
    except _Classified as classified:
        raise call.give_up(classified) from classified.error


async def acall_with_retries(
    provider: Provider,
    request: CompletionRequest,
    policy: RetryPolicy,
    state: TransportState | None = None,
    limiter: AdaptiveLimiter | None = None,
) -> Sent:
    """Async twin of `call_with_retries`, with ``provider.acomplete``."""
    call = _Call(provider, request, policy, state or TransportState(), limiter)

    async def attempt() -> Sent:
        permit = await call.atake()
        outcome: object = None
        call.state.counters.sending()
        try:
            outcome = await provider.acomplete(call.request)
            return call.succeeded(outcome)
        except ProviderError:
            raise
        except Exception as error:
            outcome = call.classified(error)
            raise outcome from error
        finally:
            call.settle(permit, outcome)

    retrying = AsyncRetrying(
        sleep=policy.async_sleep,
        retry=call.retryable,
        wait=call.wait,
        stop=call.stop,
        before_sleep=call.before_sleep,
        reraise=True,
    )
    try:
        sent: Sent = await retrying(attempt)
    except _Classified as classified:
        raise call.give_up(classified) from classified.error
    if limiter is not None:
        # The permit just given back may have woken a call waiting for it: let that call send
        # before this reply is parsed and stored, or the freed slot idles while every reply
        # that landed together is processed.
        await asyncio.sleep(0)
    return sent
