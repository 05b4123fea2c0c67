"""Access tokens and browser sessions: created once, shown once, stored as a sha256 only.

A token is 32 random bytes (``secrets.token_urlsafe``) behind the prefix ``jc_``; only its
sha256 is stored, so a copy of the database does not hand out access. Lookups hash what was
presented and compare hashes in SQL (the hash of a guess reveals nothing about stored ones).

A browser that logs in with a token gets a session of its own (``js_`` + 32 random bytes, also
stored as a sha256): the cookie carries the session id, never the token, so logging out
revokes that session and the old cookie stops working, while the token and the holder's other
sessions live on. A session ends with its token (revoked or expired).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Literal, get_args

from judgecards.errors import JudgecardsError
from judgecards.serve.repository import SessionRow, TokenRepository, TokenRow
from judgecards.storage import Store

__all__ = [
    "ROLES",
    "IssuedToken",
    "Role",
    "TokenError",
    "Tokens",
    "expired",
    "login_link",
    "token_hash",
]

Role = Literal["admin", "labeler"]
ROLES: tuple[Role, ...] = get_args(Role)
_PREFIX = "jc_"
_SESSION_PREFIX = "js_"


class TokenError(JudgecardsError):
    """A token command got a role or id that does not exist."""


@dataclass(frozen=True)
class IssuedToken:
    """A token just created: ``secret`` is shown to the person once and never stored."""

    id: str
    role: Role
    name: str
    secret: str
    expires_at: datetime | None = None


def token_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def login_link(base_url: str, secret: str) -> str:
    """The personal link that logs a browser in with ``secret``.

    The token rides in the fragment (``/login#token=...``), which browsers never send to the
    server: it reaches no access log, proxy or Referer (see `judgecards.serve.pages`).
    """
    return f"{base_url.rstrip('/')}/login#token={secret}"


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _stamp(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds")


def expired(row: TokenRow, now: datetime | None = None) -> bool:
    """Whether ``row`` has passed its expiry (a token without one never expires)."""
    if row.expires_at is None:
        return False
    return datetime.fromisoformat(row.expires_at) <= (now or _now())


class Tokens:
    """Create, check, list and revoke the access tokens stored in one database."""

    def __init__(self, store: Store) -> None:
        self._repository = TokenRepository(store)

    def create(self, role: str, name: str, *, expires_in: timedelta | None = None) -> IssuedToken:
        """A new token; with ``expires_in`` it stops working (and logs its holder out) then."""
        if role not in ROLES:
            raise TokenError(f"unknown role {role!r}: use one of {', '.join(ROLES)}")
        name = name.strip()
        if not name or len(name) > 100 or not name.isprintable():
            raise TokenError("a token needs a name of 1-100 printable characters (who holds it)")
        if expires_in is not None and expires_in <= timedelta(0):
            raise TokenError("a token's lifetime must be positive")
        secret = _PREFIX + secrets.token_urlsafe(32)
        now = _now()
        # Whole seconds, as stored and as a cookie's Expires states it.
        expires_at = None if expires_in is None else (now + expires_in).replace(microsecond=0)
        issued = IssuedToken(
            id=secrets.token_hex(4), role=role, name=name, secret=secret, expires_at=expires_at
        )
        self._repository.insert(
            TokenRow(
                issued.id,
                token_hash(secret),
                role,
                name,
                _stamp(now),
                revoked_at=None,
                expires_at=None if expires_at is None else _stamp(expires_at),
            )
        )
        return issued

    def check(self, secret: str) -> TokenRow | None:
        """The live token presented as ``secret``, or ``None`` (unknown, revoked, expired,
        malformed)."""
        if not secret.startswith(_PREFIX) or len(secret) > 200:
            return None
        row = self._repository.by_hash(token_hash(secret))
        return None if row is None or expired(row) else row

    def list(self) -> list[TokenRow]:
        return self._repository.all()

    def any_live(self) -> bool:
        return any(row.revoked_at is None and not expired(row) for row in self._repository.all())

    def revoke(self, token_id: str) -> None:
        if not self._repository.revoke(token_id, _stamp(_now())):
            raise TokenError(
                f"no live token with id {token_id!r} (see: judgecards serve token list)"
            )

    def open_session(self, row: TokenRow) -> str:
        """A new browser session for the live token ``row``: the session id, for the cookie."""
        session = _SESSION_PREFIX + secrets.token_urlsafe(32)
        self._repository.insert_session(
            SessionRow(token_hash(session), row.id, _stamp(_now()), row.expires_at)
        )
        return session

    def session(self, session: str) -> TokenRow | None:
        """The live token behind the live session ``session``, or ``None`` (unknown, logged
        out, its token revoked or expired, malformed)."""
        if not session.startswith(_SESSION_PREFIX) or len(session) > 200:
            return None
        row = self._repository.session_token(token_hash(session))
        return None if row is None or expired(row) else row

    def close_session(self, session: str) -> bool:
        """Log one browser session out; ``False`` when it was not live."""
        return self._repository.revoke_session(token_hash(session), _stamp(_now()))

    def record_address(self, url: str) -> None:
        """Remember where the server listens (``serve`` calls it once it is bound)."""
        self._repository.set_address(url.rstrip("/"), _stamp(_now()))

    def address(self) -> tuple[str, str] | None:
        """``(url, since)`` the server last recorded for this database, or ``None``."""
        return self._repository.address()
