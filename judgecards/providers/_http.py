"""Retry classification shared by the HTTP providers.

The official SDKs raise different classes for the same HTTP facts, but both carry a status code,
response headers and a body. The decision depends only on those facts, so it is written once here.
"""

from __future__ import annotations

import email.utils
import errno
import json
import socket
import time
from collections.abc import Mapping
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


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """Seconds the server asked us to wait: ``retry-after-ms``, ``retry-after`` seconds or HTTP date."""
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
        return max(0.0, email.utils.mktime_tz(parsed) - time.time())


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


def _error_code(body: Any) -> str | None:
    return _error_field(body, "code") or _error_field(body, "type")


def _error_field(body: Any, name: str) -> str | None:
    if isinstance(body, Mapping):
        error = body.get("error", body)
        if isinstance(error, Mapping):
            value = error.get(name)
            return str(value) if value is not None else None
    return None
