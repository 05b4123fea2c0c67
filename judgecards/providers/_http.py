"""Retry classification shared by the HTTP providers.

The official SDKs raise different classes for the same HTTP facts, but both carry a status code,
response headers and a body. The decision depends only on those facts, so it is written once here.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping
from typing import Any

from judgecards.providers.base import RetryDecision

# Statuses worth another try: request timeout, conflict, rate limit, server errors and
# Anthropic's 529 "overloaded".
_TRANSIENT = {408, 409, 500, 502, 503, 504, 520, 522, 524, 529}
_QUOTA_CODES = {"insufficient_quota", "billing_hard_limit_reached", "quota_exceeded"}


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


def classify_status(status: int, headers: Mapping[str, str] | None, body: Any) -> RetryDecision:
    """Decide from an HTTP error status whether to retry, and after how long at least."""
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


def _error_code(body: Any) -> str | None:
    if isinstance(body, Mapping):
        error = body.get("error", body)
        if isinstance(error, Mapping):
            code = error.get("code") or error.get("type")
            return str(code) if code is not None else None
    return None
