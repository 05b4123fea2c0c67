"""The SQLite store: results, the response cache, and (through `calibration`) human labels.

One embedded database file: ``--db`` / ``JUDGECARDS_DB`` / ``db=``, default ``./judgecards.db``.
WAL journal, one transaction per finished item, so a run killed at any moment (even SIGKILL)
keeps every item it finished and a re-run redoes only the rest. The schema is created and
migrated by ordered, named, atomic sqlite-utils migrations, never by hand.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlite_utils
from sqlite_utils import Migrations

from judgecards.errors import StoreError
from judgecards.providers.base import Completion, TokenLogprob, Usage
from judgecards.results import JudgeResult, TokenUsage

__all__ = ["DB_ENV", "DEFAULT_DB", "Store", "default_db_path"]

DB_ENV = "JUDGECARDS_DB"
DEFAULT_DB = "judgecards.db"

migrations = Migrations("judgecards")


@migrations()
def m001_results_and_cache(db: sqlite_utils.Database) -> None:
    db.table("results").create(
        {
            "id": str,
            "item_id": str,
            "card": str,
            "card_hash": str,
            "model": str,
            "status": str,
            "verdict": str,
            "model_verdict": str,
            "verdict_overridden": int,
            "scores": str,
            "output": str,
            "inputs": str,
            "params": str,
            "raw_reply": str,
            "error_kind": str,
            "error": str,
            "attempts": int,
            "input_tokens": int,
            "output_tokens": int,
            "latency_s": float,
            "cached": int,
            "created_at": str,
        },
        pk="id",
        not_null={"card", "card_hash", "model", "status", "created_at"},
    )
    db.table("results").create_index(
        ["card", "model", "created_at"], index_name="results_card_model_time"
    )
    db.table("results").create_index(["item_id"], index_name="results_item")
    db.table("results").create_index(["status"], index_name="results_status")
    db.table("response_cache").create(
        {
            "key": str,
            "provider": str,
            "model": str,
            "text": str,
            "reply_model": str,
            "finish_reason": str,
            "input_tokens": int,
            "output_tokens": int,
            "logprobs": str,
            "created_at": str,
        },
        pk="key",
    )


@migrations()
def m002_comparisons(db: sqlite_utils.Database) -> None:
    """Pairwise comparisons (`judgecards.pairwise`): one row per pair judged in both orders.

    The two orders are ordinary rows of ``results`` (``first_result_id``, ``second_result_id``);
    this table holds what is decided from them, plus the compared models' labels that
    ``judgecards rank`` needs.
    """
    db.table("comparisons").create(
        {
            "id": str,
            "pair_id": str,
            "card": str,
            "card_hash": str,
            "model": str,
            "model_a": str,
            "model_b": str,
            "status": str,
            "winner": str,
            "position_consistent": int,
            "first_verdict": str,
            "second_verdict": str,
            "first_result_id": str,
            "second_result_id": str,
            "len_a": int,
            "len_b": int,
            "error": str,
            "created_at": str,
        },
        pk="id",
        not_null={
            "card",
            "card_hash",
            "model",
            "status",
            "first_result_id",
            "second_result_id",
            "created_at",
        },
    )
    db.table("comparisons").create_index(
        ["card", "model", "created_at"], index_name="comparisons_card_model_time"
    )
    db.table("comparisons").create_index(["model_a", "model_b"], index_name="comparisons_models")


_RESULT_COLUMNS = (
    "id", "item_id", "card", "card_hash", "model", "status", "verdict", "model_verdict",
    "verdict_overridden", "scores", "output", "inputs", "params", "raw_reply", "error_kind",
    "error", "attempts", "input_tokens", "output_tokens", "latency_s", "cached", "created_at",
)  # fmt: skip
_INSERT_RESULT = (
    f"INSERT OR REPLACE INTO results ({', '.join(_RESULT_COLUMNS)}) "
    f"VALUES ({', '.join('?' for _ in _RESULT_COLUMNS)})"
)
_INSERT_CACHE = (
    "INSERT OR REPLACE INTO response_cache (key, provider, model, text, reply_model, finish_reason, "
    "input_tokens, output_tokens, logprobs, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_CHUNK = 500  # below SQLite's bound-parameter limit


def default_db_path() -> Path:
    return Path(os.environ.get(DB_ENV) or DEFAULT_DB)


class Store:
    """Results, cache and labels in one SQLite file. Safe to share between threads."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else default_db_path()
        try:
            if self.path.parent and not self.path.parent.exists():
                self.path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30.0)
            self.db = sqlite_utils.Database(connection)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            migrations.apply(self.db)
        except sqlite3.Error as error:
            raise StoreError(f"cannot open database {self.path}: {error}") from error
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Store({str(self.path)!r})"

    def close(self) -> None:
        self.db.conn.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One atomic transaction on the shared connection, serialised with every other use.

        Modules that keep their own tables in this database (comparisons, labels, audits) write
        through this, so a failure leaves nothing half-written. ``sqlite3`` errors propagate for
        the caller to name what it was writing.
        """
        with self._lock, self.db.atomic():
            yield self.db.conn

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Rows of a read-only query, serialised with writers."""
        with self._lock:
            return list(self.db.conn.execute(sql, tuple(params)).fetchall())

    # ------------------------------------------------------------------ writes

    def save(
        self,
        result: JudgeResult,
        *,
        inputs: Mapping[str, Any],
        params: Mapping[str, Any],
        cache_entries: Sequence[tuple[str, str, Completion]] = (),
    ) -> None:
        """Write one finished item (and the replies that produced it) in one transaction."""
        row = (
            result.id, result.item_id, result.card, result.card_hash, result.model, result.status,
            result.verdict, result.model_verdict, int(result.verdict_overridden),
            json.dumps(result.scores), _json_or_none(result.output), json.dumps(inputs, default=str),
            json.dumps(params, sort_keys=True), result.raw_reply, result.error_kind, result.error,
            result.attempts, result.usage.input_tokens, result.usage.output_tokens,
            result.latency_s, int(result.cached), result.created_at.isoformat(),
        )  # fmt: skip
        now = result.created_at.isoformat()
        cache_rows = [
            (key, provider, completion.model, completion.text, completion.model,
             completion.finish_reason, completion.usage.input_tokens,
             completion.usage.output_tokens, _logprobs_json(completion.logprobs), now)
            for key, provider, completion in cache_entries
        ]  # fmt: skip
        with self._lock:
            conn = self.db.conn
            try:
                with conn:
                    conn.execute(_INSERT_RESULT, row)
                    if cache_rows:
                        conn.executemany(_INSERT_CACHE, cache_rows)
            except sqlite3.Error as error:
                raise StoreError(
                    f"cannot write result {result.id} to {self.path}: {error}"
                ) from error

    # ------------------------------------------------------------------ reads

    def cached_completion(self, key: str) -> Completion | None:
        with self._lock:
            row = self.db.conn.execute(
                "SELECT text, reply_model, finish_reason, input_tokens, output_tokens, logprobs "
                "FROM response_cache WHERE key = ?",
                (key,),
            ).fetchone()
        if row is None:
            return None
        text, model, finish_reason, input_tokens, output_tokens, logprobs = row
        return Completion(
            text=text,
            model=model or "",
            usage=Usage(input_tokens or 0, output_tokens or 0),
            finish_reason=finish_reason,
            logprobs=_logprobs_from_json(logprobs),
        )

    def finished(self, ids: Iterable[str]) -> dict[str, JudgeResult]:
        """Stored successful results among ``ids`` (the resume and re-run path)."""
        wanted = list(ids)
        found: dict[str, JudgeResult] = {}
        with self._lock:
            for start in range(0, len(wanted), _CHUNK):
                chunk = wanted[start : start + _CHUNK]
                marks = ", ".join("?" for _ in chunk)
                cursor = self.db.conn.execute(
                    f"SELECT {', '.join(_RESULT_COLUMNS)} FROM results "
                    f"WHERE status = 'ok' AND id IN ({marks})",
                    chunk,
                )
                for values in cursor:
                    result = _result_from_row(
                        dict(zip(_RESULT_COLUMNS, values)), served_from_store=True
                    )
                    found[result.id] = result
        return found

    def results(
        self,
        *,
        card: str | None = None,
        model: str | None = None,
        status: str | None = None,
        since: datetime | str | None = None,
    ) -> Iterator[tuple[JudgeResult, dict[str, Any]]]:
        """Stored results with their inputs, oldest first, filtered by card ref, model, status, time.

        ``card`` may be ``name`` (any version) or ``name@version``.
        """
        clauses: list[str] = []
        params: list[Any] = []
        if card:
            if "@" in card:
                clauses.append("card = ?")
                params.append(card)
            else:
                clauses.append("card LIKE ?")
                params.append(f"{card}@%")
        if model:
            clauses.append("model = ?")
            params.append(model)
        if status:
            clauses.append("status = ?")
            params.append(status)
        if since:
            clauses.append("created_at >= ?")
            params.append(since.isoformat() if isinstance(since, datetime) else since)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        with self._lock:
            rows = self.db.conn.execute(
                f"SELECT {', '.join(_RESULT_COLUMNS)} FROM results {where} ORDER BY created_at, id",
                params,
            ).fetchall()
        for values in rows:
            row = dict(zip(_RESULT_COLUMNS, values))
            yield _result_from_row(row), json.loads(row["inputs"] or "{}")

    def get(self, result_id: str) -> tuple[JudgeResult, dict[str, Any]] | None:
        with self._lock:
            values = self.db.conn.execute(
                f"SELECT {', '.join(_RESULT_COLUMNS)} FROM results WHERE id = ?", (result_id,)
            ).fetchone()
        if values is None:
            return None
        row = dict(zip(_RESULT_COLUMNS, values))
        return _result_from_row(row), json.loads(row["inputs"] or "{}")


def _json_or_none(value: Any) -> str | None:
    return None if value is None else json.dumps(value)


def _logprobs_json(logprobs: tuple[TokenLogprob, ...] | None) -> str | None:
    if logprobs is None:
        return None
    return json.dumps([[t.token, t.logprob, [list(alt) for alt in t.top]] for t in logprobs])


def _logprobs_from_json(text: str | None) -> tuple[TokenLogprob, ...] | None:
    if text is None:
        return None
    return tuple(
        TokenLogprob(token=token, logprob=logprob, top=tuple((a, b) for a, b in top))
        for token, logprob, top in json.loads(text)
    )


def _result_from_row(row: Mapping[str, Any], *, served_from_store: bool = False) -> JudgeResult:
    return JudgeResult(
        id=row["id"],
        item_id=row["item_id"],
        status=row["status"],
        verdict=row["verdict"],
        scores=json.loads(row["scores"] or "{}"),
        model_verdict=row["model_verdict"],
        verdict_overridden=bool(row["verdict_overridden"]),
        output=json.loads(row["output"]) if row["output"] else None,
        raw_reply=row["raw_reply"],
        card=row["card"],
        card_hash=row["card_hash"],
        model=row["model"],
        # A result served from the store cost nothing this time (JudgeResult.usage's contract);
        # the tokens it was billed once stay in its row.
        usage=TokenUsage()
        if served_from_store
        else TokenUsage(
            input_tokens=row["input_tokens"] or 0, output_tokens=row["output_tokens"] or 0
        ),
        latency_s=row["latency_s"] or 0.0,
        attempts=row["attempts"] or 0,
        cached=served_from_store or bool(row["cached"]),
        error_kind=row["error_kind"],
        error=row["error"],
        created_at=datetime.fromisoformat(row["created_at"]),
    )
