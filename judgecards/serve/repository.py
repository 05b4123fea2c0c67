"""Every SQL statement on the server's own tables (access tokens, browser sessions), and their
migration set.

The tables live in the results database under their own sqlite-utils migration set,
``Migrations("judgecards.serve")``, applied with `Database.migrate` when the app or a ``serve
token`` command opens the store. Statements go through `Store.transaction` / `Store.query`, so
they take the store's lock like every other use of the shared connection.

Tables::

    serve_tokens  one access token: its sha256 (the token itself is never stored), role, the
                  person's name, when it was created, when it expires (NULL: never) and
                  (once revoked) when it was revoked
    serve_sessions  one browser login: the sha256 of its session id (the cookie's value; the id
                  itself is never stored), the token it was opened with, when it was opened,
                  when it expires (with its token) and (once logged out) when it was revoked
    serve_address  one row: the address ``judgecards serve`` last listened on for this
                  database (its real port, also with ``--port 0``), for the login links
                  ``serve token create`` prints
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlite_utils
from sqlite_utils import Migrations

from judgecards.storage import Store

__all__ = ["SessionRow", "TokenRow", "TokenRepository", "migrations"]

migrations = Migrations("judgecards.serve")


@migrations()
def m001_tokens(db: sqlite_utils.Database) -> None:
    db.table("serve_tokens").create(
        {
            "id": str,
            "token_hash": str,
            "role": str,
            "name": str,
            "created_at": str,
            "revoked_at": str,
        },
        pk="id",
        not_null={"token_hash", "role", "name", "created_at"},
    )
    db.table("serve_tokens").create_index(
        ["token_hash"], unique=True, index_name="serve_tokens_hash"
    )


@migrations()
def m002_token_expiry(db: sqlite_utils.Database) -> None:
    """Tokens may expire; those created before could not, so theirs stays NULL."""
    db.table("serve_tokens").add_column("expires_at", str)


@migrations()
def m003_sessions(db: sqlite_utils.Database) -> None:
    """Browser sessions: the cookie holds a session id, never the bearer token itself, so a
    logout can end that one session (item 3 of issue 22)."""
    db.table("serve_sessions").create(
        {
            "session_hash": str,
            "token_id": str,
            "created_at": str,
            "expires_at": str,
            "revoked_at": str,
        },
        pk="session_hash",
        not_null={"token_id", "created_at"},
        foreign_keys=[("token_id", "serve_tokens", "id")],
    )


@migrations()
def m004_server_address(db: sqlite_utils.Database) -> None:
    """Where the server listens, so ``token create`` prints links with its real port."""
    db.table("serve_address").create(
        {"id": int, "url": str, "started_at": str}, pk="id", not_null={"url", "started_at"}
    )


_COLUMNS = ("id", "token_hash", "role", "name", "created_at", "revoked_at", "expires_at")


@dataclass(frozen=True)
class TokenRow:
    """A stored token (never the token itself: only its sha256)."""

    id: str
    token_hash: str
    role: str
    name: str
    created_at: str
    revoked_at: str | None
    expires_at: str | None = None  # ISO 8601, UTC; None: never


@dataclass(frozen=True)
class SessionRow:
    """A stored browser session (never its id: only the id's sha256)."""

    session_hash: str
    token_id: str
    created_at: str
    expires_at: str | None = None  # ISO 8601, UTC; None: never


class TokenRepository:
    """The ``serve_tokens`` and ``serve_sessions`` tables of one store (migrated on
    construction)."""

    def __init__(self, store: Store) -> None:
        store.migrate(migrations)
        self.store = store

    def insert(self, row: TokenRow) -> None:
        with self.store.transaction(f"create token {row.id}") as tx:
            tx.insert("serve_tokens", {column: getattr(row, column) for column in _COLUMNS})

    def by_hash(self, token_hash: str) -> TokenRow | None:
        """The unrevoked token with this hash, or ``None`` (expiry is `Tokens.check`'s call)."""
        rows = self.store.query(
            f"SELECT {', '.join(_COLUMNS)} FROM serve_tokens "
            "WHERE token_hash = ? AND revoked_at IS NULL",
            (token_hash,),
            doing="check an access token",
        )
        return TokenRow(*rows[0]) if rows else None

    def all(self) -> list[TokenRow]:
        rows = self.store.query(
            f"SELECT {', '.join(_COLUMNS)} FROM serve_tokens ORDER BY created_at, id",
            doing="list access tokens",
        )
        return [TokenRow(*row) for row in rows]

    def revoke(self, token_id: str, when: str) -> bool:
        """Mark a live token revoked; ``False`` when no live token has that id."""
        with self.store.transaction(f"revoke token {token_id}") as tx:
            cursor = tx.execute(
                "UPDATE serve_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                (when, token_id),
            )
            return cursor.rowcount == 1

    def insert_session(self, row: SessionRow) -> None:
        with self.store.transaction(f"open a session of token {row.token_id}") as tx:
            tx.insert(
                "serve_sessions",
                {
                    "session_hash": row.session_hash,
                    "token_id": row.token_id,
                    "created_at": row.created_at,
                    "expires_at": row.expires_at,
                },
            )

    def session_token(self, session_hash: str) -> TokenRow | None:
        """The unrevoked token behind an unrevoked session, or ``None`` (expiry is the caller's)."""
        columns = ", ".join(f"t.{column}" for column in _COLUMNS)
        rows = self.store.query(
            f"SELECT {columns} FROM serve_sessions s JOIN serve_tokens t ON t.id = s.token_id "
            "WHERE s.session_hash = ? AND s.revoked_at IS NULL AND t.revoked_at IS NULL",
            (session_hash,),
            doing="check a session",
        )
        return TokenRow(*rows[0]) if rows else None

    def revoke_session(self, session_hash: str, when: str) -> bool:
        """End one session; ``False`` when it was unknown or already ended."""
        with self.store.transaction("end a session") as tx:
            cursor = tx.execute(
                "UPDATE serve_sessions SET revoked_at = ? "
                "WHERE session_hash = ? AND revoked_at IS NULL",
                (when, session_hash),
            )
            return cursor.rowcount == 1

    def set_address(self, url: str, when: str) -> None:
        with self.store.transaction("record the server's address") as tx:
            tx.execute(
                "INSERT INTO serve_address (id, url, started_at) VALUES (1, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET url = excluded.url, "
                "started_at = excluded.started_at",
                (url, when),
            )

    def address(self) -> tuple[str, str] | None:
        """``(url, started_at)`` the server last recorded, or ``None``."""
        rows = self.store.query(
            "SELECT url, started_at FROM serve_address WHERE id = 1",
            doing="read the server's address",
        )
        return (str(rows[0][0]), str(rows[0][1])) if rows else None
