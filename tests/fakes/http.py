"""Fake provider servers at the HTTP level: the real SDKs talk to a scripted httpx2 transport.

`Script` pops one scripted reply per request and records every request; running out of replies
fails the test. Reply builders produce bodies shaped like the real APIs' (ids, usage, stop
reasons, logprobs). A reply may also be a callable ``(request) -> Response`` for judges whose
answer depends on the prompt (e.g. one that always prefers the first position); with the async
client it may also be an ``async`` callable (e.g. one that sleeps to overlap requests).

Running out of replies raises `AssertionError` inside the transport. The SDKs let it through, but
the judge turns any provider failure into an error record, so ``Script.overruns`` also counts
such requests: a test can assert it is zero.
"""

from __future__ import annotations

import inspect
import json
import re
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx2

from judgecards.judging import RetryPolicy

Reply = (
    httpx2.Response
    | BaseException
    | Callable[[httpx2.Request], httpx2.Response]
    | Callable[[httpx2.Request], Awaitable[httpx2.Response]]
)


def _fresh(response: httpx2.Response) -> httpx2.Response:
    """A new Response with the same status, headers and body: a Response's stream is consumed by
    one client (sync or async), so a reply scripted once but served several times is copied."""
    return httpx2.Response(response.status_code, headers=response.headers, content=response.content)


class Script:
    """A scripted server: ``Script(reply, reply, ...)``; ``.requests`` holds what the SDK sent."""

    def __init__(self, *replies: Reply, default: Reply | None = None) -> None:
        self.replies: deque[Reply] = deque(replies)
        self.default = default
        self.requests: list[httpx2.Request] = []
        self.overruns = 0  # requests that found the script exhausted

    def add(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def _next(self, request: httpx2.Request) -> Reply:
        self.requests.append(request)
        if self.replies:
            return self.replies.popleft()
        if self.default is not None:
            return self.default
        self.overruns += 1
        raise AssertionError(
            f"unexpected request #{len(self.requests)} to {request.url}: script exhausted"
        )

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        reply = self._next(request)
        if isinstance(reply, BaseException):
            raise reply
        if callable(reply) and not isinstance(reply, httpx2.Response):
            response = reply(request)
            if inspect.isawaitable(response):
                raise TypeError("an async reply was scripted but the SDK used the sync client")
            return response
        return _fresh(reply)

    async def ahandle(self, request: httpx2.Request) -> httpx2.Response:
        await request.aread()
        reply = self._next(request)
        if isinstance(reply, BaseException):
            raise reply
        if callable(reply) and not isinstance(reply, httpx2.Response):
            response = reply(request)
            return await response if inspect.isawaitable(response) else response  # type: ignore[no-any-return]
        return _fresh(reply)

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
    cached_tokens: int = 0,
) -> httpx2.Response:
    """A Chat Completions response body as the OpenAI API returns it (``cached_tokens``: the
    part of ``prompt_tokens`` read from OpenAI's prompt cache)."""
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
            "prompt_tokens_details": {"cached_tokens": cached_tokens, "audio_tokens": 0},
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
    cache_read_input_tokens: int = 0,
    cache_creation_input_tokens: int = 0,
) -> httpx2.Response:
    """A Messages API response body as Anthropic returns it (``input_tokens`` is the uncached
    input only: Anthropic reports cache reads and writes apart)."""
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
            "cache_creation_input_tokens": cache_creation_input_tokens,
            "cache_read_input_tokens": cache_read_input_tokens,
        },
    }
    return httpx2.Response(200, json=body, headers={"request-id": "req_011CRq"})


def rate_limited(
    retry_after: float | None = 1,
    *,
    provider: str = "openai",
    code: str = "rate_limit_exceeded",
    retry_after_ms: float | None = None,
) -> httpx2.Response:
    """A 429. ``code="insufficient_quota"`` is OpenAI's exhausted-quota variant (not retryable)."""
    headers = {"retry-after": str(retry_after)} if retry_after is not None else {}
    if retry_after_ms is not None:
        headers["retry-after-ms"] = str(retry_after_ms)
    if code == "insufficient_quota" and provider == "openai":
        body_q = {
            "error": {
                "message": "You exceeded your current quota, please check your plan and billing details.",
                "type": "insufficient_quota",
                "param": None,
                "code": "insufficient_quota",
            }
        }
        return httpx2.Response(429, json=body_q, headers=headers)
    if provider == "anthropic":
        body: dict[str, Any] = {
            "type": "error",
            "error": {
                "type": "rate_limit_error",
                "message": "Number of request tokens has exceeded your per-minute rate limit",
            },
        }
    else:
        body = {
            "error": {
                "message": "Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM).",
                "type": "tokens",
                "param": None,
                "code": code,
            }
        }
    return httpx2.Response(429, json=body, headers=headers)


def server_error(status: int = 500, *, provider: str = "openai") -> httpx2.Response:
    if provider == "anthropic":
        kind = "overloaded_error" if status == 529 else "api_error"
        body: dict[str, Any] = {
            "type": "error",
            "error": {"type": kind, "message": "Internal server error"},
        }
    else:
        body = {
            "error": {
                "message": "The server had an error while processing your request. Sorry about that!",
                "type": "server_error",
                "param": None,
                "code": None,
            }
        }
    return httpx2.Response(status, json=body)


def unauthorized(*, provider: str = "openai") -> httpx2.Response:
    if provider == "anthropic":
        body: dict[str, Any] = {
            "type": "error",
            "error": {"type": "authentication_error", "message": "invalid x-api-key"},
        }
    else:
        body = {
            "error": {
                "message": "Incorrect API key provided: sk-test...7890.",
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_api_key",
            }
        }
    return httpx2.Response(401, json=body)


def forbidden(*, provider: str = "openai") -> httpx2.Response:
    if provider == "anthropic":
        body: dict[str, Any] = {
            "type": "error",
            "error": {
                "type": "permission_error",
                "message": "Your API key does not have permission to use the specified resource.",
            },
        }
    else:
        body = {
            "error": {
                "message": "You are not allowed to sample from this model",
                "type": "invalid_request_error",
                "param": None,
                "code": None,
            }
        }
    return httpx2.Response(403, json=body)


def bad_request(
    message: str = "Invalid request.", *, provider: str = "openai", param: str | None = None
) -> httpx2.Response:
    """A 400 with the given message (e.g. Anthropic rejecting ``temperature`` for a model)."""
    if provider == "anthropic":
        body: dict[str, Any] = {
            "type": "error",
            "error": {"type": "invalid_request_error", "message": message},
        }
    else:
        body = {
            "error": {
                "message": message,
                "type": "invalid_request_error",
                "param": param,
                "code": None,
            }
        }
    return httpx2.Response(400, json=body)


def truncated(text: str, *, provider: str = "openai", **kwargs: Any) -> httpx2.Response:
    """A reply cut off at the token limit (OpenAI ``finish_reason=length``, Anthropic ``max_tokens``)."""
    if provider == "anthropic":
        return anthropic_message(text, stop_reason="max_tokens", **kwargs)
    return openai_chat(text, finish_reason="length", **kwargs)


def timeout() -> httpx2.ReadTimeout:
    return httpx2.ReadTimeout("timed out")


def connection_error() -> httpx2.ReadError:
    """A connection that broke after it was made (the server went away mid-request)."""
    return httpx2.ReadError("[Errno 104] Connection reset by peer")


def connection_refused() -> httpx2.ConnectError:
    """Nothing listening at the URL, with the socket error as its cause, as httpx2 raises it."""
    error = httpx2.ConnectError("[Errno 111] Connection refused")
    error.__cause__ = ConnectionRefusedError(111, "Connection refused")
    return error


def token_logprobs(
    text: str, alternatives: dict[int, list[tuple[str, float]]] | None = None
) -> list[dict[str, Any]]:
    """Per-character 'tokens' of ``text`` with logprob 0, plus top alternatives at given positions."""
    out = []
    for index, char in enumerate(text):
        top = (alternatives or {}).get(index, [(char, 0.0)])
        out.append({
            "token": char, "logprob": top[0][1] if top[0][0] == char else 0.0, "bytes": list(char.encode()),
            "top_logprobs": [{"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in top],
        })  # fmt: skip
    return out


# ---------------------------------------------------------------- judge-shaped helpers

REPLIES_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "replies"


def fixture_reply(name: str, *, status: int = 200) -> httpx2.Response:
    """A hand-written, realistic response body from ``tests/fixtures/replies/<name>.json``."""
    body = json.loads((REPLIES_DIR / f"{name}.json").read_text("utf-8"))
    return httpx2.Response(status, json=body)


def reference_judgment(
    correctness: int = 5,
    completeness: int = 4,
    style_fidelity: int = 5,
    *,
    verdict: str = "match",
    style_relevant: bool = False,
    **overrides: Any,
) -> str:
    """The JSON text of a ``reference`` card judgment; ``overrides`` replace or add top-level keys."""
    body: dict[str, Any] = {
        "scores": {
            "correctness": correctness,
            "completeness": completeness,
            "style_fidelity": style_fidelity,
        },
        "style_relevant": style_relevant,
        "verdict": verdict,
        "delta": "The output states the same facts in different words.",
        "decision_basis": "Every point of the gold answer is present and correct.",
    }
    body.update(overrides)
    return json.dumps(body)


class Waits:
    """Records the waits a `RetryPolicy` asks for instead of sleeping.

    ``waits.policy(attempts=3)`` is ``RetryPolicy(sleep=waits, async_sleep=waits.asleep,
    attempts=3)``; ``waits.waits`` holds the seconds asked for, in order.
    """

    def __init__(self) -> None:
        self.waits: list[float] = []

    def policy(self, **options: Any) -> RetryPolicy:
        return RetryPolicy(sleep=self, async_sleep=self.asleep, **options)

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)

    async def asleep(self, seconds: float) -> None:
        self.waits.append(seconds)

    def __repr__(self) -> str:
        return f"Waits({self.waits!r})"


def bpe_tokens(text: str) -> list[str]:
    """Split ``text`` roughly as a BPE tokenizer does: a word with its leading space, runs of up to
    three digits (``" 4"``, ``"10"``), punctuation runs (``'":'``), whitespace. Joins back to ``text``."""
    tokens = re.findall(r" ?[A-Za-z]+| ?\d{1,3}| ?[^\sA-Za-z\d]+|\s+(?!\S)|\s+", text)
    assert "".join(tokens) == text
    return tokens


def chat_logprobs(
    tokens: list[str], alternatives: dict[int, list[tuple[str, float]]] | None = None
) -> list[dict[str, Any]]:
    """``logprobs.content`` for these tokens as the Chat Completions API returns it.

    Each token has logprob 0 and itself as its only alternative, except at the indexes given in
    ``alternatives`` (``{index: [(token, logprob), ...]}``), where the sampled token's logprob is
    taken from its entry in the list. Find an index with ``tokens.index(" 4")``.
    """
    out = []
    for index, token in enumerate(tokens):
        top = (alternatives or {}).get(index, [(token, 0.0)])
        logprob = next((lp for t, lp in top if t == token), 0.0)
        out.append({
            "token": token, "logprob": logprob, "bytes": list(token.encode()),
            "top_logprobs": [{"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in top],
        })  # fmt: skip
    return out
