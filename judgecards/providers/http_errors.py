"""Retry classification shared by the HTTP providers.

The official SDKs raise different classes for the same HTTP facts, but both carry a status code,
response headers and a body. The decision depends only on those facts, so it is written once here.
"""

from __future__ import annotations

import email.utils
import errno
import json
import re
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, get_args

from judgecards.providers.base import DroppableParameter, RetryDecision

# Statuses worth another try: request timeout, conflict, rate limit, server errors and
# Anthropic's 529 "overloaded".
_TRANSIENT = {408, 409, 500, 502, 503, 504, 520, 522, 524, 529}
_QUOTA_CODES = {"insufficient_quota", "billing_hard_limit_reached", "quota_exceeded"}
# OpenAI names the refused field in ``error.param`` (``logprobs`` stands for ``top_logprobs``).
_PARAMETERS: dict[str, DroppableParameter] = {
    **{name: name for name in get_args(DroppableParameter)},
    "logprobs": "top_logprobs",
}
_UNREACHABLE_ERRNOS = {errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH}


def retry_after_seconds(
    headers: Mapping[str, str] | None, clock: Callable[[], float] = time.time
) -> float | None:
    """Seconds the server asked us to wait: ``retry-after-ms``, ``retry-after`` seconds or HTTP
    date (counted from ``clock``, Unix seconds: injectable so a test's date need not race it)."""
    if not headers:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_tz(value)
        if parsed is None:
            return None
        return max(0.0, email.utils.mktime_tz(parsed) - clock())


@dataclass(frozen=True)
class ContextOverflow:
    """A server's refusal of a prompt longer than the model's context, with its numbers.

    Attributes:
        requested: tokens the request needs (prompt, and the reply budget where the server
            counts it), when the server says.
        maximum: the model's context size in tokens, when the server says.
    """

    requested: int | None
    maximum: int | None

    def advice(self) -> str:
        """What the server said and what to change, for the error record."""
        if self.requested is not None and self.maximum is not None:
            numbers = f"{self.requested} tokens requested, the model's context holds {self.maximum}"
        elif self.maximum is not None:
            numbers = f"the model's context holds {self.maximum} tokens"
        else:
            numbers = "the server did not say by how much"
        return (
            f"the prompt does not fit the model's context ({numbers}). Shorten the inputs "
            "(--max-input-chars), lower the reply budget (--max-tokens), or serve the model "
            "with a larger context (llama.cpp: --n_ctx / -c)"
        )


# How servers word it. OpenAI and llama-cpp-python's server: "This model's maximum context
# length is 2048 tokens. However, you requested 2394 tokens (...)" (newer OpenAI models: "...
# limit of 272000 tokens. Your messages resulted in 300000 tokens"); llama-cpp-python's own
# ValueError, when it reaches the body: "Requested tokens (2394) exceed context window of 2048";
# Anthropic: "prompt is too long: 208310 tokens > 200000 maximum" and "input length and
# `max_tokens` exceed context limit: 198000 + 8192 > 200000". llama.cpp's C++ server gives
# ``exceed_context_size_error`` with ``n_prompt_tokens`` and ``n_ctx`` fields.
# Searched with re.DOTALL; compiled on first use (`re`'s own cache): most runs never see one.
_CONTEXT_WORDS = (
    r"maximum context length is (?P<maximum>\d+) tokens.*?(?:requested|resulted in) "
    r"(?P<requested>\d+) tokens",
    r"limit of (?P<maximum>\d+) tokens.*?resulted in (?P<requested>\d+) tokens",
    r"requested tokens \((?P<requested>\d+)\) exceed context window of (?P<maximum>\d+)",
    r"prompt is too long: (?P<requested>\d+) tokens > (?P<maximum>\d+) maximum",
    r"exceed context limit: (?P<prompt>\d+) \+ (?P<reply>\d+) > (?P<maximum>\d+)",
)
_CONTEXT_CODES = {"context_length_exceeded", "exceed_context_size_error"}


def context_overflow(status: int, message: Any, body: Any) -> ContextOverflow | None:
    """The numbers of a refusal for a prompt over the model's context (any of the phrasings
    above, in a 400, 413 or a llama-cpp-python 500), or None for any other error."""
    if status not in (400, 413, 422, 500):
        return None
    text = f"{message} {json.dumps(body, default=str) if body is not None else ''}".lower()
    for pattern in _CONTEXT_WORDS:
        found = re.search(pattern, text, re.DOTALL)
        if found is not None:
            numbers = found.groupdict()
            requested = numbers.get("requested")
            if requested is None:
                requested = str(int(numbers["prompt"]) + int(numbers["reply"]))
            return ContextOverflow(int(requested), int(numbers["maximum"]))
    if _error_code(body) in _CONTEXT_CODES or "context size" in text:
        error = body.get("error", body) if isinstance(body, Mapping) else {}
        error = error if isinstance(error, Mapping) else {}
        prompt, limit = error.get("n_prompt_tokens"), error.get("n_ctx")
        return ContextOverflow(
            prompt if isinstance(prompt, int) else None, limit if isinstance(limit, int) else None
        )
    return None


def classify_status(
    status: int,
    headers: Mapping[str, str] | None,
    body: Any,
    *,
    rejected_parameter: DroppableParameter | None = None,
) -> RetryDecision:
    """Decide from an HTTP error status whether to retry, and after how long at least.

    ``rejected_parameter`` is what the caller found the server refusing in a way this function
    cannot see (e.g. in the wording of Anthropic's message); OpenAI-style bodies name it in
    ``error.param`` themselves.
    """
    if context_overflow(status, None, body) is not None:
        return RetryDecision(retry=False, kind="context_length", status=status)
    if status == 400:
        rejected = rejected_parameter or _PARAMETERS.get(_error_field(body, "param") or "")
        return RetryDecision(retry=False, kind="fatal", status=status, rejected_parameter=rejected)
    if status in (401, 403):
        return RetryDecision(retry=False, kind="auth", status=status)
    if status == 429:
        if _error_code(body) in _QUOTA_CODES:
            # An exhausted quota does not recover by waiting; retrying only burns the deadline.
            return RetryDecision(retry=False, kind="fatal", status=status)
        return RetryDecision(
            retry=True, kind="rate_limit", retry_after=retry_after_seconds(headers), status=status
        )
    if status == 404 and not _names_model(body):
        return RetryDecision(retry=False, kind="fatal", status=status, cause="wrong_path")
    if status in _TRANSIENT or status >= 500:
        return RetryDecision(
            retry=True, kind="transient", retry_after=retry_after_seconds(headers), status=status
        )
    return RetryDecision(retry=False, kind="fatal", status=status)


_STRUCTURED_OUTPUT_WORDS = ("response_format", "json_schema", "output_config", "output_format")


def refuses_structured_output(status: int, message: Any, body: Any) -> bool:
    """Whether an error answer refuses native structured output: a 400 (or 422) whose body
    names ``response_format``/``json_schema``/``output_config``, or the HTTP 500 with which
    llama-cpp-python answers a ``json_schema`` response format. Such an answer is not worth
    retrying as it is: the request must be sent without native output (or fail, in ``native``
    mode)."""
    if status not in (400, 422, 500):
        return False
    if status == 400 and _error_field(body, "param") == "response_format":
        return True
    text = f"{message} {json.dumps(body, default=str) if body is not None else ''}".lower()
    return any(word in text for word in _STRUCTURED_OUTPUT_WORDS)


def offers_json_object(message: Any, body: Any) -> bool:
    """Whether a refusal of native output refuses the ``json_schema`` type and offers
    ``json_object`` instead, as llama-cpp-python's server does ("Input should be 'text' or
    'json_object'", input 'json_schema'): its ``json_object`` takes a schema, so the judge can
    stay native there rather than fall back to the prompt."""
    text = f"{message} {json.dumps(body, default=str) if body is not None else ''}"
    return "'json_object'" in text and "json_schema" in text


def classify_connection(error: BaseException, *, timed_out: bool) -> RetryDecision:
    """A failure without an HTTP answer. Retryable, since a server may be restarting; `cause`
    says whether anything was listening at all, which the retry layer treats as a wrong URL
    while the server has never answered."""
    if timed_out:
        return RetryDecision(retry=True, kind="transient", cause="timeout")
    if unreachable_reason(error):
        return RetryDecision(retry=True, kind="transient", cause="unreachable")
    return RetryDecision(retry=True, kind="transient", cause="connection")


def unreachable_reason(error: BaseException) -> str | None:
    """``"connection refused"``, ``"host name not resolved"`` or ``"no route to host"`` when
    the SDK's connection error comes from one of those socket errors, else None.

    The SDKs wrap the socket error two or three levels deep (and anyio in a group), so the
    whole chain of causes is searched."""
    pending: list[BaseException] = [error]
    seen: set[int] = set()
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, socket.gaierror):
            return "host name not resolved"
        if isinstance(current, OSError) and current.errno in _UNREACHABLE_ERRNOS:
            return (
                "connection refused" if current.errno == errno.ECONNREFUSED else "no route to host"
            )
        grouped = getattr(current, "exceptions", None)  # an ExceptionGroup (Python 3.11+)
        if isinstance(grouped, (list, tuple)):
            pending.extend(e for e in grouped if isinstance(e, BaseException))
        pending.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return None


def _names_model(body: Any) -> bool:
    """Whether a 404's body is about the model (OpenAI's ``model_not_found``, vLLM's and
    Ollama's "model ... does not exist / not found", Anthropic's ``model: ...``), not the path:
    a server with no API at a path answers ``{"detail": "Not Found"}``, "File Not Found" or
    "Invalid URL" instead."""
    if _error_code(body) == "model_not_found":
        return True
    text = json.dumps(body, default=str).lower() if body is not None else ""
    return "model" in text


def _error_code(body: Any) -> str | None:
    return _error_field(body, "code") or _error_field(body, "type")


def _error_field(body: Any, name: str) -> str | None:
    if isinstance(body, Mapping):
        error = body.get("error", body)
        if isinstance(error, Mapping):
            value = error.get(name)
            return str(value) if value is not None else None
    return None
