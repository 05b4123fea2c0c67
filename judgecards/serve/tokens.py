"""Access tokens: created once, shown once, stored as a sha256 only.

A token is 32 random bytes (``secrets.token_urlsafe``) behind the prefix ``jc_``; only its
sha256 is stored, so a copy of the database does not hand out access. Lookups hash what was
presented and compare hashes in SQL (the hash of a guess reveals nothing about stored ones).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Literal, get_args

from judgecards.errors import JudgecardsError
from judgecards.serve.repository import TokenRepository, TokenRow
from judgecards.store import Store

__all__ = ["ROLES", "IssuedToken", "Role", "TokenError", "Tokens", "login_link", "token_hash"]

Role = Literal["admin", "labeler"]
ROLES: tuple[Role, ...] = get_args(Role)
_PREFIX = "jc_"


class TokenError(JudgecardsError):
    """A token command got a role or id that does not exist."""


@dataclass(frozen=True)
class IssuedToken:
    """A token just created: ``secret`` is shown to the person once and never stored."""

    id: str
    role: Role
    name: str
    secret: str


def token_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def login_link(base_url: str, secret: str) -> str:
    """The personal link that logs a browser in with ``secret``.

    The token rides in the fragment (``/login#token=...``), which browsers never send to the
    server: it reaches no access log, proxy or Referer (see `judgecards.serve.pages`).
    """
    return f"{base_url.rstrip('/')}/login#token={secret}"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class Tokens:
    """Create, check, list and revoke the access tokens stored in one database."""

    def __init__(self, store: Store) -> None:
        self._repository = TokenRepository(store)

    def create(self, role: str, name: str) -> IssuedToken:
        if role not in ROLES:
            raise TokenError(f"unknown role {role!r}: use one of {', '.join(ROLES)}")
        name = name.strip()
        if not name or len(name) > 100 or not name.isprintable():
            raise TokenError("a token needs a name of 1-100 printable characters (who holds it)")
        secret = _PREFIX + secrets.token_urlsafe(32)
        issued = IssuedToken(id=secrets.token_hex(4), role=role, name=name, secret=secret)
        self._repository.insert(
            TokenRow(issued.id, token_hash(secret), role, name, _now(), revoked_at=None)
        )
        return issued

    def check(self, secret: str) -> TokenRow | None:
        """The live token presented as ``secret``, or ``None`` (unknown, revoked, malformed)."""
        if not secret.startswith(_PREFIX) or len(secret) > 200:
            return None
        return self._repository.by_hash(token_hash(secret))

    def list(self) -> list[TokenRow]:
        return self._repository.all()

    def any_live(self) -> bool:
        return any(row.revoked_at is None for row in self._repository.all())

    def revoke(self, token_id: str) -> None:
        if not self._repository.revoke(token_id, _now()):
            raise TokenError(
                f"no live token with id {token_id!r} (see: judgecards serve token list)"
            )
