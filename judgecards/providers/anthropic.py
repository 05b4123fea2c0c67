"""Anthropic's Messages API through the official ``anthropic`` SDK.

Recent SDKs removed ``temperature`` from ``messages.create`` and recent models reject a
non-default temperature, while older models still honour it. We send it in ``extra_body``; when
the server answers 400 naming the temperature, `classify` says so (``rejected_parameter``) and
the retry layer sends a new request without it, instead of failing every item of a batch. The
provider itself never changes: concurrent calls each get the same decision.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from judgecards.cards import estimated_tokens, load_cache_minimums
from judgecards.providers._sdk import SDKProvider
from judgecards.providers.base import (
    Completion,
    CompletionRequest,
    DroppableParameter,
    RetryDecision,
    Usage,
)
from judgecards.providers.http_errors import classify_connection, classify_status

__all__ = ["AnthropicProvider"]

TOOL_NAME = "record_judgment"


class AnthropicProvider(SDKProvider):
    """Claude models through the official ``anthropic`` SDK (``max_retries=0``; we retry).

    Args:
        model: e.g. ``claude-sonnet-5-5``.
        api_key: defaults to ``ANTHROPIC_API_KEY``.
        base_url: defaults to ``ANTHROPIC_BASE_URL``, else Anthropic's API.
        http_client / async_http_client: ``httpx2`` clients (tests inject a MockTransport).
        timeout: seconds per request.
    """

    name: ClassVar[str] = "anthropic"
    # Sends a JSON schema natively (`CompletionRequest.native`); see judgecards.replies.structured_output.
    native_output: ClassVar[bool] = True
    key_variable: ClassVar[str] = "ANTHROPIC_API_KEY"
    base_url_variable: ClassVar[str] = "ANTHROPIC_BASE_URL"
    default_base_url: ClassVar[str] = "https://api.anthropic.com"

    def __init__(self, model: str, **options: Any) -> None:
        super().__init__(model, **options)
        # Read before any call: a broken user table (JUDGECARDS_CACHE_MINIMUMS) stops here.
        self.cache_minimum = load_cache_minimums().minimum(self.name, model)

    def _sdk_classes(self) -> tuple[Any, Any]:
        import anthropic

        return anthropic.Anthropic, anthropic.AsyncAnthropic

    def _arguments(self, request: CompletionRequest) -> dict[str, Any]:
        arguments: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
        }
        if request.system:
            arguments["system"] = request.system
        _mark_static_prefix(arguments, request, self.cache_minimum)
        if request.temperature is not None:
            arguments["extra_body"] = {"temperature": request.temperature}
        if request.native_schema is not None and request.native == "schema":
            arguments["output_config"] = {
                "format": {"type": "json_schema", "schema": dict(request.native_schema)}
            }
        elif request.native_schema is not None and request.native == "tool":
            # For models without output_config: one strict tool the model must call; its input
            # is the judgment (`_completion` returns it as the reply text).
            arguments["tools"] = [
                {
                    "name": TOOL_NAME,
                    "description": "Record your judgment.",
                    "input_schema": dict(request.native_schema),
                    "strict": True,
                }
            ]
            arguments["tool_choice"] = {"type": "tool", "name": TOOL_NAME}
        if request.timeout is not None:
            arguments["timeout"] = request.timeout
        return arguments

    def complete(self, request: CompletionRequest) -> Completion:
        return _completion(self._sync().messages.create(**self._arguments(request)))

    async def acomplete(self, request: CompletionRequest) -> Completion:
        return _completion(await self._async().messages.create(**self._arguments(request)))

    def completion_from_body(self, body: Any) -> Completion:
        """A reply from a message's JSON body (a batch result's ``result.message``), read
        exactly as a live response is."""
        from anthropic.types import Message

        return _completion(Message.model_validate(body))

    def classify(self, error: BaseException) -> RetryDecision | None:
        import anthropic

        if isinstance(error, anthropic.APIStatusError):
            # Anthropic's error body has no ``param``: the message names the field.
            message = str(error.message).lower()
            rejected = _rejected_field(message) if error.status_code == 400 else None
            return classify_status(
                error.status_code, error.response.headers, error.body, rejected_parameter=rejected
            )
        if isinstance(error, anthropic.APIConnectionError):
            return classify_connection(
                error, timed_out=isinstance(error, anthropic.APITimeoutError)
            )
        if isinstance(error, anthropic.AnthropicError):
            return RetryDecision(retry=False, kind="fatal")
        return None


def _rejected_field(message: str) -> DroppableParameter | None:
    """The request field a 400's message refuses: native JSON output (a forced tool replaces
    it), the forced tool (the schema goes into the prompt), or the temperature."""
    if any(word in message for word in ("output_config", "output_format", "structured output")):
        return "output_config"
    if "tool_choice" in message or "tools" in message:
        return "response_format"
    if "temperature" in message:
        return "temperature"
    return None


_EPHEMERAL = {"type": "ephemeral"}


def _mark_static_prefix(
    arguments: dict[str, Any], request: CompletionRequest, minimum: int
) -> None:
    """Mark the card's static prefix for Anthropic's prompt cache (`judgecards.cards.prompt_cache`).

    The cached prefix runs from the start of the request to the marked block, system prompt
    included, so the first user message is split into its static part (marked) and the item;
    with no static part, a system prompt alone is marked. Nothing is marked below the model's
    minimum cacheable length: the API would cache nothing anyway.
    """
    text = request.messages[0].content if request.messages else ""
    static = request.static_prefix_chars if 0 < request.static_prefix_chars < len(text) else 0
    if estimated_tokens(len(request.system or "") + static) < minimum:
        return
    if static:
        arguments["messages"][0]["content"] = [
            {"type": "text", "text": text[:static], "cache_control": _EPHEMERAL},
            {"type": "text", "text": text[static:]},
        ]
    elif request.system:
        arguments["system"] = [
            {"type": "text", "text": request.system, "cache_control": _EPHEMERAL}
        ]


def _completion(message: Any) -> Completion:
    blocks = message.content or ()
    forced = [b for b in blocks if getattr(b, "type", None) == "tool_use" and b.name == TOOL_NAME]
    if forced:  # a forced tool call: its input is the judgment
        text = json.dumps(forced[0].input)
    else:
        text = "".join(b.text for b in blocks if getattr(b, "type", None) == "text")
    usage = message.usage
    return Completion(
        text=text,
        model=message.model or "",
        usage=_usage(usage),
        finish_reason=message.stop_reason,
        raw={"id": message.id},
    )


def _usage(usage: Any) -> Usage:
    """Anthropic reports uncached input apart from cache reads and writes; `Usage` counts all
    three as input and keeps the cached parts as well."""
    if usage is None:
        return Usage()
    read = getattr(usage, "cache_read_input_tokens", None) or 0
    written = getattr(usage, "cache_creation_input_tokens", None) or 0
    return Usage(
        input_tokens=(usage.input_tokens or 0) + read + written,
        output_tokens=usage.output_tokens or 0,
        cache_read_tokens=read,
        cache_write_tokens=written,
    )
