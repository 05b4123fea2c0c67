"""The provider protocol: one call in each flavour (sync, async) plus a classifier for errors.

Providers only *classify* failures; retries, the cache and concurrency live above them in
`judgecards.judging.retry` and `judgecards.judging.judge`. That keeps a new provider to one small module.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

__all__ = [
    "Cause",
    "Completion",
    "CompletionRequest",
    "DroppableParameter",
    "Message",
    "Provider",
    "RetryDecision",
    "TokenLogprob",
    "Usage",
    "endpoint_of",
]


@dataclass(frozen=True)
class Message:
    """One chat turn. ``role`` is ``"user"`` or ``"assistant"``; the system prompt is separate."""

    role: Literal["user", "assistant"]
    content: str


@dataclass(frozen=True)
class CompletionRequest:
    """Everything a provider needs for one call. Immutable: a re-ask builds a new request."""

    model: str
    messages: tuple[Message, ...]
    system: str | None = None
    temperature: float | None = 0.0
    max_tokens: int = 1024
    top_logprobs: int | None = None
    timeout: float | None = None
    # The JSON Schema the reply must match (JSON cards; a rubric's is built for the item's
    # criteria). Not in `cache_fields`: it follows from the card and the inputs, which the
    # messages already fix; a provider that sends it natively must key on that mode.
    response_schema: Mapping[str, Any] | None = field(default=None, hash=False)
    # How many leading characters of the first message are the card's static part, the same
    # for every item (`judgecards.cards.prompt_cache`): Anthropic marks them for its prompt cache.
    # Not in `cache_fields`: it changes what is billed, never the reply.
    static_prefix_chars: int = 0
    # Native structured output (`judgecards.replies.structured_output`): ``schema`` sends
    # ``native_schema`` as the provider's JSON-schema output (OpenAI ``response_format``,
    # Anthropic ``output_config``), ``tool`` as a forced tool (Anthropic models without
    # ``output_config``), ``json_object`` as ``{"type": "json_object", "schema": ...}`` (the
    # form llama-cpp-python's server takes where it refuses OpenAI's ``json_schema``); None
    # writes the schema in the prompt. ``fallback_messages`` are the
    # messages to send if the server refuses native output (the schema shown in the prompt),
    # allowed only when ``can_fall_back`` (output mode ``auto``).
    native: Literal["schema", "tool", "json_object"] | None = None
    native_schema: Mapping[str, Any] | None = field(default=None, hash=False)
    fallback_messages: tuple[Message, ...] | None = field(default=None, hash=False)
    can_fall_back: bool = False

    def cache_fields(self) -> dict[str, Any]:
        """The parameters that change a reply, for the response-cache key.

        The output mode actually sent is part of it (a native reply and a prompt reply answer
        different requests); prompt-mode requests keep the keys they had before native output.
        """
        fields: dict[str, Any] = {
            "system": self.system,
            "messages": [[m.role, m.content] for m in self.messages],
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "top_logprobs": self.top_logprobs,
        }
        if self.native is not None:
            fields["native"] = [self.native, self.native_schema]
        return fields

    def sends(self, parameter: DroppableParameter) -> bool:
        """Whether this request sends ``parameter`` in a form the judge can do without."""
        if parameter == "response_format":
            return self.native is not None and self.can_fall_back
        if parameter in ("output_config", "json_schema"):
            return self.native == "schema"
        return getattr(self, parameter) is not None

    def without(self, parameters: frozenset[DroppableParameter]) -> CompletionRequest:
        """A new request without ``parameters`` (this one when it sends none of them).

        Without ``response_format`` the schema goes back into the prompt (``fallback_messages``);
        without ``output_config`` it is sent as a forced tool; without ``json_schema`` as a
        ``json_object`` response format that carries the schema.
        """
        request = self
        if "temperature" in parameters and request.temperature is not None:
            request = replace(request, temperature=None)
        if "top_logprobs" in parameters and request.top_logprobs is not None:
            request = replace(request, top_logprobs=None)
        if "response_format" in parameters and request.sends("response_format"):
            messages = request.fallback_messages or request.messages
            request = replace(
                request, native=None, native_schema=None, fallback_messages=None, messages=messages
            )
        if "output_config" in parameters and request.native == "schema":
            request = replace(request, native="tool")
        if "json_schema" in parameters and request.native == "schema":
            request = replace(request, native="json_object")
        return request


@dataclass(frozen=True)
class Usage:
    """Token counts as the server reported them (0 when it reported none).

    ``input_tokens`` counts every prompt token, cached or not (OpenAI's ``prompt_tokens``;
    Anthropic's ``input_tokens`` plus its cache reads and writes, which it reports apart);
    ``cache_read_tokens`` and ``cache_write_tokens`` are the part of them read from and written
    to the provider's prompt cache, billed at their own rates (`judgecards.limits.pricing`).
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )


@dataclass(frozen=True)
class TokenLogprob:
    """One generated token with its log-probability and the top alternatives at that position."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Completion:
    """A provider's reply. ``raw`` is the response body only: never headers, never keys."""

    text: str
    model: str
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None
    logprobs: tuple[TokenLogprob, ...] | None = None
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def truncated(self) -> bool:
        """True when the reply stopped at the token limit (OpenAI "length", Anthropic "max_tokens")."""
        return self.finish_reason in ("length", "max_tokens")


Cause = Literal["status", "timeout", "connection", "unreachable", "wrong_path"]
"""Why a call failed: the server answered with an error ``status``; no answer in time
(``timeout``); the connection broke (``connection``); nothing could be reached at the URL at
all (``unreachable``: connection refused, host name not resolved, no route to the host); or a
server answered that it has no API at the request's path (``wrong_path``: an HTTP 404 that does
not name a model, e.g. a base URL without ``/v1``)."""

DroppableParameter = Literal[
    "temperature", "top_logprobs", "response_format", "output_config", "json_schema"
]
"""Request fields a server may reject for a model and that a judge can do without:
``response_format`` stands for any native structured output (the schema then goes in the
prompt), ``output_config`` for Anthropic's JSON-schema output (a forced tool replaces it),
``json_schema`` for OpenAI's ``json_schema`` response format where a server offers
``json_object`` with a schema instead (llama-cpp-python's server)."""


@dataclass(frozen=True)
class RetryDecision:
    """How the retry layer should treat an exception raised by a provider call.

    A decision is a pure function of the error: classifying never changes the provider, so
    concurrent calls cannot see each other's failures (`judgecards.judging.retry` acts on it).

    Attributes:
        retry: the same request may succeed if sent again.
        kind: ``rate_limit`` (429 that may pass), ``transient`` (5xx, timeout, connection),
            ``auth`` (401/403: retrying cannot help and every other item will fail too),
            ``context_length`` (the prompt and reply budget exceed the model's context; see
            `judgecards.providers.http_errors.context_overflow`) or ``fatal`` (anything else, e.g.
            400 or an exhausted quota).
        retry_after: seconds the server asked us to wait, if it said.
        status: the HTTP status, when the server answered.
        cause: see `Cause`; ``unreachable`` before any answer from the server means a wrong
            base URL or a server that is not running, which the retry layer reports at once.
        rejected_parameter: the server refused this request field (e.g. a model that accepts
            no ``temperature``). The request is fatal as sent; the retry layer may send a new
            request without the field.
    """

    retry: bool
    kind: Literal["rate_limit", "transient", "auth", "context_length", "fatal"]
    retry_after: float | None = None
    status: int | None = None
    cause: Cause = "status"
    rejected_parameter: DroppableParameter | None = None


@runtime_checkable
class Provider(Protocol):
    """What the judge needs from a model provider."""

    name: ClassVar[str]
    model: str

    def complete(self, request: CompletionRequest) -> Completion:
        """Make one call, without retrying."""
        ...

    async def acomplete(self, request: CompletionRequest) -> Completion:
        """Make one call asynchronously, without retrying."""
        ...

    def classify(self, error: BaseException) -> RetryDecision | None:
        """Say whether and how soon an error from `complete`/`acomplete` may be retried.

        Pure: it never changes the provider (concurrent calls share it); a request that must
        change is named in ``rejected_parameter`` and rebuilt by the retry layer. ``None`` means the error is not the provider's (not an HTTP or SDK failure, e.g. a bug):
        it propagates to the caller instead of becoming an error record.
        """
        ...

    def close(self) -> None:
        """Release the sync client's HTTP connections."""
        ...

    async def aclose(self) -> None:
        """Release the async client, which is bound to the event loop that used it."""
        ...


def endpoint_of(provider: Provider) -> str:
    """The server ``provider`` talks to, for the response cache's keys: its ``endpoint``
    (a base URL, the hosted default included), else its name for a provider that talks to no
    server (the mock, a recorded replay). Replies from two servers under one model name are
    different judgments and must never be served for each other."""
    endpoint = getattr(provider, "endpoint", None)
    return endpoint if isinstance(endpoint, str) and endpoint else provider.name
