"""Every SQL statement on the server's own tables (access tokens), and their migration set.

The tables live in the results database under their own sqlite-utils migration set,
``Migrations("judgecards.serve")``, applied with `Database.migrate` when the app or a ``serve
token`` command opens the store. Statements go through `Store.transaction` / `Store.query`, so
they take the store's lock like every other use of the shared connection.

Tables::

    serve_tokens  one access token: its sha256 (the token itself is never stored), role, the
                  person's name, when it was created, when it expires (NULL: never) and
                  (once revoked) when it was revoked
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlite_utils
from sqlite_utils import Migrations

from judgecards.store import Store

__all__ = ["TokenRow", "TokenRepository", "migrations"]

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


class TokenRepository:
    """The ``serve_tokens`` table of one store (migrated on construction)."""

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
