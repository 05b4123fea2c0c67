"""The one shared SQLite connection under `judgecards.Store`: locking, transactions, migrations.

Every statement on the database goes through `Database.transaction` or `Database.query`, which
take one lock, so a store can be shared between threads; nothing else holds the connection.

Several processes may open the same file at once (two ``judgecards score`` runs on a new
``--db``). Writes start with ``BEGIN IMMEDIATE``, which takes the write lock before anything is
read and so honours the busy timeout (a deferred transaction that reads, then writes, fails at
once with "database is locked" when another process wrote in between). Migrations run the same
way and re-read what is pending under the lock, so one process migrates and the others find the
work done. Switching to WAL needs an exclusive lock that SQLite does not wait for by itself:
that is retried until the same timeout.

Every `sqlite3` error is raised as a `StoreError` naming the file and what was being done.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlite_utils
from sqlite_utils import Migrations

from judgecards.errors import StoreError
from judgecards.redaction import scrubber

__all__ = ["BUSY_TIMEOUT", "Database", "Transaction", "insert_sql"]

BUSY_TIMEOUT = 30.0  # seconds a connection waits for another's write lock


def insert_sql(table: str, columns: Sequence[str], *, verb: str = "INSERT") -> str:
    """``INSERT INTO table (columns) VALUES (:column, ...)``: rows are bound by column name."""
    names = ", ".join(f'"{column}"' for column in columns)
    marks = ", ".join(f":{column}" for column in columns)
    return f'{verb} INTO "{table}" ({names}) VALUES ({marks})'


def storable(value: Any) -> Any:
    """``value``, with any lone surrogate in a string replaced by U+FFFD.

    A judge reply may carry a JSON escape such as ``"\\ud800"``: Python decodes it into a string
    SQLite cannot encode as UTF-8, and that one reply would otherwise stop the whole run. Other
    values pass through unchanged.
    """
    if isinstance(value, str) and not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return value


def _bindable(
    params: Sequence[Any] | Mapping[str, Any], scrub: Callable[[str], str]
) -> Sequence[Any] | Mapping[str, Any]:
    def bound(value: Any) -> Any:
        return storable(scrub(value)) if isinstance(value, str) else value

    if isinstance(params, Mapping):
        return {key: bound(value) for key, value in params.items()}
    return [bound(value) for value in params]


class Transaction:
    """The statements of one `Database.transaction`: all of them are committed, or none.

    Rows are written by column name (`insert`, `insert_many`); `execute` and `executemany` take
    any other statement. `sqlite3` errors propagate to `Database.transaction`, which rolls back
    and raises a `StoreError`; a caller may catch an integrity error inside the block to say
    what it means (a duplicate label, say).

    Every string bound to a statement has the configured API keys replaced by ``[REDACTED]``
    (`judgecards.redaction.scrubber`): this is the one path every write takes, so a key a
    provider echoed into an error, a reply or a batch line is stored in no table.
    """

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._connection = connection
        self._scrub = scrubber()

    def execute(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> sqlite3.Cursor:
        return self._connection.execute(sql, _bindable(params, self._scrub))

    def executemany(
        self, sql: str, rows: Iterable[Sequence[Any] | Mapping[str, Any]]
    ) -> sqlite3.Cursor:
        return self._connection.executemany(sql, (_bindable(row, self._scrub) for row in rows))

    def insert(self, table: str, row: Mapping[str, Any]) -> int:
        """Insert one row given as ``{column: value}``; returns its rowid."""
        cursor = self._connection.execute(insert_sql(table, list(row)), _bindable(row, self._scrub))
        return int(cursor.lastrowid or 0)

    def insert_many(self, table: str, rows: Sequence[Mapping[str, Any]]) -> None:
        """Insert rows that all have the columns of the first one."""
        if rows:
            columns = list(rows[0])
            self._connection.executemany(
                insert_sql(table, columns), (_bindable(row, self._scrub) for row in rows)
            )


class Database:
    """One SQLite file behind a lock: open, migrate, transactions, queries.

    Opening creates the file (and missing parent directories) and applies ``migrations``;
    nothing else happens before the first call.

    Args:
        path: the database file.
        migrations: the migration set applied on open (not in read-only mode).
        read_only: open an existing file without creating, migrating or writing anything.
        timeout: seconds to wait for another connection's write lock.

    Raises:
        StoreError: the file cannot be opened, is not a database, or cannot be migrated.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        migrations: Migrations | None = None,
        read_only: bool = False,
        timeout: float = BUSY_TIMEOUT,
    ) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self._timeout = timeout
        self._lock = threading.RLock()
        self._closed = False
        self._conn = self._connect()
        # sqlite-utils runs the migrations; it only ever sees the connection under our lock.
        self._db = sqlite_utils.Database(self._conn)
        if read_only:
            if migrations is not None:
                self._refuse_outdated(migrations)
            return
        try:
            try:
                self._use_wal()
                self._conn.execute("PRAGMA synchronous=NORMAL")
            except sqlite3.Error as error:
                raise self._error("open the database", error) from error
            if migrations is not None:
                self.migrate(migrations)
        except StoreError:
            self._conn.close()
            raise

    def _refuse_outdated(self, migrations: Migrations) -> None:
        # A file written by an older judgecards lacks newer columns; reading it without
        # migrating would fail on the first query with "no such column". Say what to do.
        with self._lock:
            try:
                applied = migrations.applied(self._db)
                pending = migrations.pending(self._db) if applied else []
            except sqlite3.Error as error:
                self._conn.close()
                raise self._error("read the database's migrations", error) from error
        if pending:
            self._conn.close()
            names = ", ".join(migration.name for migration in pending)
            raise StoreError(
                f"database {self.path} was written by an older judgecards (not yet applied: "
                f"{names}); open it once with a command that writes (e.g. judgecards cost "
                "--db PATH) to upgrade it",
                path=self.path,
                operation="open the database",
            )

    def _connect(self) -> sqlite3.Connection:
        doing = "open the database"
        try:
            if self.read_only:
                if not self.path.is_file():
                    raise StoreError(
                        f"cannot open database {self.path}: no such file",
                        path=self.path,
                        operation=doing,
                    )
                connection = sqlite3.connect(
                    f"{self.path.resolve().as_uri()}?mode=ro",
                    uri=True,
                    check_same_thread=False,
                    timeout=self._timeout,
                )
            else:
                if self.path.is_dir():
                    raise StoreError(
                        f"cannot open database {self.path}: it is a directory",
                        path=self.path,
                        operation=doing,
                    )
                if not self.path.parent.exists():
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                # isolation_level=None: no implicit BEGIN; every write names its transaction.
                connection = sqlite3.connect(
                    str(self.path),
                    check_same_thread=False,
                    timeout=self._timeout,
                    isolation_level=None,
                )
        except OSError as error:
            raise StoreError(
                f"cannot open database {self.path}: cannot create directory "
                f"{self.path.parent}: {error.strerror or error}",
                path=self.path,
                operation=doing,
            ) from error
        except sqlite3.Error as error:
            raise self._error(doing, error) from error
        try:
            # Fails here, not at the first read, when the file is not a database at all.
            connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.Error as error:
            connection.close()
            raise self._error(doing, error) from error
        return connection

    def _use_wal(self) -> None:
        deadline = time.monotonic() + self._timeout
        while True:
            try:
                if self._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal":
                    return
                self._conn.execute("PRAGMA journal_mode=WAL").fetchone()
                return
            except sqlite3.OperationalError as error:
                if "locked" not in str(error) or time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.path)!r})"

    def close(self) -> None:
        """Close the connection; any later use raises `StoreError`."""
        with self._lock:
            self._closed = True
            self._conn.close()

    def _error(self, doing: str, error: BaseException) -> StoreError:
        message = f"cannot {doing} in {self.path}: {error}"
        if "malformed" in str(error) or "not a database" in str(error):
            message += (
                f" (the file is damaged: restore a backup, or try `sqlite3 {self.path} .recover`)"
            )
        return StoreError(message, path=self.path, operation=doing)

    def _check_open(self, doing: str) -> None:
        if self._closed:
            raise StoreError(
                f"cannot {doing}: database {self.path} is closed", path=self.path, operation=doing
            )

    @contextmanager
    def transaction(self, doing: str = "write") -> Iterator[Transaction]:
        """One atomic transaction on the shared connection, serialised with every other use.

        ``BEGIN IMMEDIATE`` takes the write lock first (waiting up to the busy timeout for other
        processes). Nested use makes a savepoint. Any error rolls everything back; `sqlite3`
        errors become a `StoreError`: "cannot {doing} in {path}: ...".
        """
        with self._lock:
            self._check_open(doing)
            savepoint = f"judgecards_{time.monotonic_ns()}" if self._conn.in_transaction else None
            try:
                self._conn.execute(f"SAVEPOINT {savepoint}" if savepoint else "BEGIN IMMEDIATE")
            except sqlite3.Error as error:
                raise self._error(doing, error) from error
            try:
                yield Transaction(self._conn)
            except BaseException as error:
                self._rollback(savepoint)
                if isinstance(error, sqlite3.Error):
                    raise self._error(doing, error) from error
                raise
            try:
                self._conn.execute(f"RELEASE SAVEPOINT {savepoint}" if savepoint else "COMMIT")
            except sqlite3.Error as error:
                self._rollback(savepoint)
                raise self._error(doing, error) from error

    def _rollback(self, savepoint: str | None) -> None:
        if not self._conn.in_transaction:
            return  # the error already ended the transaction
        try:
            if savepoint is None:
                self._conn.execute("ROLLBACK")
            else:
                self._conn.execute(f"ROLLBACK TO SAVEPOINT {savepoint}")
                self._conn.execute(f"RELEASE SAVEPOINT {savepoint}")
        except sqlite3.Error:
            pass  # nothing more can be undone; the original error is the one to report

    def query(
        self, sql: str, params: Sequence[Any] = (), *, doing: str = "read"
    ) -> list[tuple[Any, ...]]:
        """Rows of a read-only query, serialised with writers; errors become `StoreError`."""
        with self._lock:
            self._check_open(doing)
            try:
                return list(self._conn.execute(sql, tuple(params)).fetchall())
            except sqlite3.Error as error:
                raise self._error(doing, error) from error

    def tables(self) -> set[str]:
        """Names of the tables in the file (a plain judgecards store has no calibration tables)."""
        rows = self.query(
            "SELECT name FROM sqlite_master WHERE type = 'table'", doing="list the tables"
        )
        return {row[0] for row in rows}

    def migrate(self, migration_set: Migrations) -> None:
        """Apply a migration set's pending migrations, all in one immediate transaction.

        Read first without the write lock (nothing pending: nothing to wait for); otherwise
        the lock is taken and the set re-read under it (sqlite-utils' ``apply`` does), so of
        several processes opening a new file together one migrates and the others skip.
        """
        doing = f"migrate the {migration_set.name} tables"
        with self._lock:
            self._check_open(doing)
            try:
                if not migration_set.pending(self._db):
                    return
            except sqlite3.Error as error:
                raise self._error(doing, error) from error
            with self.transaction(doing):
                migration_set.apply(self._db)
