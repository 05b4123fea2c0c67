"""Who is asking: bearer tokens or the session cookie, roles, and CSRF protection.

Every route except the login page takes ``Depends(require_role(...))``. A request is
authenticated by ``Authorization: Bearer <token>`` (scripts, tests) or by the session cookie
that the login page sets (browsers). The cookie holds a server-side session id, never the token
(`Tokens.open_session`), so logging out ends it for good. A bearer header that does not check
out is refused even if a valid cookie came along: the two are never mixed.

CSRF: a cookie is sent by the browser whoever made the page, so every state-changing route a
cookie can reach also takes ``Depends(csrf_protect)``. Its token is an HMAC of the session
cookie under a per-process secret (the signed double-submit pattern): pages carry it in
``<meta name="csrf-token">`` and scripts send it back as ``X-CSRF-Token``; another site can
neither read the page nor compute it. Bearer requests are exempt: a browser never adds that
header on its own, and another origin cannot without a CORS grant (none is given). The session
cookie is also ``SameSite=Strict``, so a cross-site request does not carry it at all in
current browsers; the CSRF token is the defence that does not depend on that. A request whose
cookie no longer authenticates (logged out, token revoked) is a 401 before any CSRF check, as
on every other route.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Literal, cast

from fastapi import Depends, Request

from judgecards.serve.api_errors import ApiError
from judgecards.serve.tokens import Tokens

__all__ = [
    "CSRF_HEADER",
    "AdminUser",
    "AnyUser",
    "SESSION_COOKIE",
    "Principal",
    "authenticate",
    "csrf_protect",
    "csrf_token",
    "require_role",
]

SESSION_COOKIE = "jc_session"
CSRF_HEADER = "X-CSRF-Token"


@dataclass(frozen=True)
class Principal:
    """The holder of the token a request came with."""

    token_id: str
    role: Literal["admin", "labeler"]
    name: str


def _presented(request: Request) -> tuple[str, str] | None:
    """``(how, secret)`` from the Authorization header, else the session cookie."""
    header = request.headers.get("authorization")
    if header is not None:
        scheme, _, secret = header.partition(" ")
        return ("bearer", secret.strip()) if scheme.lower() == "bearer" else ("bearer", "")
    cookie = request.cookies.get(SESSION_COOKIE)
    return ("cookie", cookie) if cookie else None


def authenticate(request: Request) -> Principal | None:
    """The request's principal, or ``None`` when it carries no valid token (cached per request)."""
    if hasattr(request.state, "principal"):
        return cast("Principal | None", request.state.principal)
    principal = None
    presented = _presented(request)
    if presented is not None:
        tokens: Tokens = request.app.state.tokens
        how, secret = presented
        row = tokens.check(secret) if how == "bearer" else tokens.session(secret)
        if row is not None:
            role = cast(Literal["admin", "labeler"], row.role)
            principal = Principal(token_id=row.id, role=role, name=row.name)
    request.state.principal = principal
    return principal


def _authenticated(request: Request) -> Principal:
    principal = authenticate(request)
    if principal is None:
        raise ApiError(
            401,
            "unauthenticated",
            "log in with your personal link, or send Authorization: Bearer <token>",
        )
    return principal


def require_role(*roles: Literal["admin", "labeler"]) -> Callable[[Request], Principal]:
    """A FastAPI dependency: the request's `Principal` if its role is one of ``roles``.

    No valid token: 401 (JSON, or a page saying how to log in). Another role: 403.
    """
    if not roles:
        raise ValueError("require_role needs at least one role")

    def dependency(request: Request) -> Principal:
        principal = _authenticated(request)
        if principal.role not in roles:
            raise ApiError(403, "forbidden", f"this needs the {' or '.join(roles)} role")
        return principal

    return dependency


def csrf_token(request: Request) -> str:
    """The CSRF token for pages of this session (empty when the request has no cookie)."""
    cookie = request.cookies.get(SESSION_COOKIE, "")
    if not cookie:
        return ""
    secret: bytes = request.app.state.csrf_secret
    return hmac.new(secret, cookie.encode("utf-8"), hashlib.sha256).hexdigest()


def csrf_protect(request: Request) -> None:
    """A FastAPI dependency for state-changing routes: cookie requests need ``X-CSRF-Token``."""
    presented = _presented(request)
    if presented is None or presented[0] == "bearer":
        return  # unauthenticated requests are refused by require_role; bearer is exempt
    _authenticated(request)  # a dead session is "log in again" (401), not a CSRF failure
    expected = csrf_token(request)
    sent = request.headers.get(CSRF_HEADER, "")
    if not expected or not hmac.compare_digest(sent.encode(), expected.encode()):
        raise ApiError(403, "csrf", f"missing or wrong {CSRF_HEADER} header (reload the page)")


AdminUser = Annotated[Principal, Depends(require_role("admin"))]
"""A route parameter ``principal: AdminUser`` admits admin tokens only."""
AnyUser = Annotated[Principal, Depends(require_role("admin", "labeler"))]
"""A route parameter ``principal: AnyUser`` admits any valid token."""
