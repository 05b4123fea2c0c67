"""Fake provider servers at the HTTP level: the real SDKs talk to a scripted httpx2 transport.

`Script` pops one scripted reply per request and records every request; running out of replies
fails the test. Reply builders produce bodies shaped like the real APIs' (ids, usage, stop
reasons, logprobs). A reply may also be a callable ``(request) -> Response`` for judges whose
answer depends on the prompt (e.g. one that always prefers the first position).
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable
from typing import Any

import httpx2

Reply = httpx2.Response | BaseException | Callable[[httpx2.Request], httpx2.Response]


class Script:
    """A scripted server: ``Script(reply, reply, ...)``; ``.requests`` holds what the SDK sent."""

    def __init__(self, *replies: Reply, default: Reply | None = None) -> None:
        self.replies: deque[Reply] = deque(replies)
        self.default = default
        self.requests: list[httpx2.Request] = []

    def add(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        if self.replies:
            reply = self.replies.popleft()
        elif self.default is not None:
            reply = self.default
        else:
            raise AssertionError(f"unexpected request #{len(self.requests)} to {request.url}: script exhausted")
        if isinstance(reply, BaseException):
            raise reply
        if callable(reply) and not isinstance(reply, httpx2.Response):
            return reply(request)
        return reply

    async def ahandle(self, request: httpx2.Request) -> httpx2.Response:
        await request.aread()
        return self.handle(request)

    def client(self) -> httpx2.Client:
        return httpx2.Client(transport=httpx2.MockTransport(self.handle))

    def async_client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self.ahandle))

    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(r.content) for r in self.requests]


# ---------------------------------------------------------------- reply builders


def openai_chat(
    text: str,
    *,
    finish_reason: str = "stop",
    model: str = "gpt-4o-2024-08-06",
    prompt_tokens: int = 812,
    completion_tokens: int = 96,
    logprobs: list[dict[str, Any]] | None = None,
) -> httpx2.Response:
    """A Chat Completions response body as the OpenAI API returns it."""
    choice: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "content": text, "refusal": None, "annotations": []},
        "logprobs": {"content": logprobs, "refusal": None} if logprobs is not None else None,
        "finish_reason": finish_reason,
    }
    body = {
        "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
        "object": "chat.completion",
        "created": 1741569952,
        "model": model,
        "choices": [choice],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
        },
        "service_tier": "default",
        "system_fingerprint": "fp_f9f4fb6dbf",
    }
    return httpx2.Response(200, json=body, headers={"x-request-id": "req_9f1c2e"})


def anthropic_message(
    text: str,
    *,
    stop_reason: str = "end_turn",
    model: str = "claude-sonnet-4-5-20250929",
    input_tokens: int = 845,
    output_tokens: int = 102,
) -> httpx2.Response:
    """A Messages API response body as Anthropic returns it."""
    body = {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }
    return httpx2.Response(200, json=body, headers={"request-id": "req_011CRq"})


def rate_limited(retry_after: float | None = 1, *, provider: str = "openai", code: str = "rate_limit_exceeded") -> httpx2.Response:
    headers = {"retry-after": str(retry_after)} if retry_after is not None else {}
    if provider == "anthropic":
        body: dict[str, Any] = {"type": "error", "error": {"type": "rate_limit_error", "message": "Number of request tokens has exceeded your per-minute rate limit"}}
    else:
        body = {"error": {"message": "Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM).", "type": "tokens", "param": None, "code": code}}
    return httpx2.Response(429, json=body, headers=headers)


def server_error(status: int = 500, *, provider: str = "openai") -> httpx2.Response:
    if provider == "anthropic":
        kind = "overloaded_error" if status == 529 else "api_error"
        body: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": "Internal server error"}}
    else:
        body = {"error": {"message": "The server had an error while processing your request. Sorry about that!", "type": "server_error", "param": None, "code": None}}
    return httpx2.Response(status, json=body)


def unauthorized(*, provider: str = "openai") -> httpx2.Response:
    if provider == "anthropic":
        body: dict[str, Any] = {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}
    else:
        body = {"error": {"message": "Incorrect API key provided: sk-test...7890.", "type": "invalid_request_error", "param": None, "code": "invalid_api_key"}}
    return httpx2.Response(401, json=body)


def timeout() -> httpx2.ReadTimeout:
    return httpx2.ReadTimeout("timed out")


def token_logprobs(text: str, alternatives: dict[int, list[tuple[str, float]]] | None = None) -> list[dict[str, Any]]:
    """Per-character 'tokens' of ``text`` with logprob 0, plus top alternatives at given positions."""
    out = []
    for index, char in enumerate(text):
        top = (alternatives or {}).get(index, [(char, 0.0)])
        out.append({
            "token": char, "logprob": top[0][1] if top[0][0] == char else 0.0, "bytes": list(char.encode()),
            "top_logprobs": [{"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in top],
        })  # fmt: skip
    return out
