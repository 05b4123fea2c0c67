"""The SQLite store: results, the response cache, comparisons and (through `calibration`) labels.

One embedded database file: ``--db`` / ``JUDGECARDS_DB`` / ``db=``, default ``./judgecards.db``.
WAL journal, each finished item committed before it is reported (`judgecards.storage.grouped_saves`:
items finishing together share a transaction), so a run killed at any moment (even SIGKILL)
keeps every item it finished and a re-run redoes only the rest. The schema is created and
migrated by ordered, named, atomic sqlite-utils migrations, never by hand.

`Store` owns the SQL on its tables: one named method per need, rows written by column name.
The calibration package keeps its own tables in the same file (its own migration set) and
issues its SQL only through `Store.transaction` and `Store.query` (`calibration.labels.repository`),
so every use of the one shared connection takes the same lock (`judgecards.storage.database`), which
is what makes a `Store` safe to share between threads and between processes opening one file.
Every `sqlite3` error is raised as a `StoreError` naming the file and what was being done.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, NamedTuple

from judgecards.providers.base import Completion, TokenLogprob, Usage
from judgecards.redaction import redact
from judgecards.storage.database import BUSY_TIMEOUT, Database, Transaction, insert_sql
from judgecards.storage.migrations import migrations
from judgecards.storage.results import JudgeResult, TokenUsage

__all__ = [
    "COMPARISON_COLUMNS",
    "DB_ENV",
    "DEFAULT_DB",
    "CacheEntry",
    "Save",
    "Store",
    "Transaction",
    "card_filter",
    "default_db_path",
]

DB_ENV = "JUDGECARDS_DB"
DEFAULT_DB = "judgecards.db"

_COST_GROUPS = {"card": "card", "model": "model", "day": "substr(created_at, 1, 10)"}
_RESULT_COLUMNS = (
    "id",
    "item_id",
    "card",
    "card_hash",
    "model",
    "status",
    "verdict",
    "model_verdict",
    "verdict_overridden",
    "scores",
    "output",
    "inputs",
    "params",
    "raw_reply",
    "error_kind",
    "error",
    "attempts",
    "transport_retries",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "latency_s",
    "cached",
    "via",
    "extraction",
    "created_at",
    "cache_read_tokens",
    "cache_write_tokens",
    "native_method",
)
_CACHE_COLUMNS = (
    "key",
    "provider",
    "model",
    "text",
    "reply_model",
    "finish_reason",
    "input_tokens",
    "output_tokens",
    "logprobs",
    "created_at",
    "cache_read_tokens",
    "cache_write_tokens",
)
COMPARISON_COLUMNS = (
    "id",
    "pair_id",
    "card",
    "card_hash",
    "model",
    "model_a",
    "model_b",
    "status",
    "winner",
    "position_consistent",
    "first_verdict",
    "second_verdict",
    "first_result_id",
    "second_result_id",
    "len_a",
    "len_b",
    "error",
    "created_at",
)
_CHUNK = 500  # below SQLite's bound-parameter limit


def _redacted(text: str | None) -> str | None:
    return None if text is None else redact(text)


class CacheEntry(NamedTuple):
    """A provider reply to keep in the response cache.

    Attributes:
        key: the cache key (provider, model, card hash, request fields).
        provider: the provider's name (``openai``, ``anthropic``, ``mock``).
        model: the model *requested*; the completion's own ``model`` is what the server
            reported (it may name a dated snapshot) and is stored as ``reply_model``.
        completion: the reply.
    """

    key: str
    provider: str
    model: str
    completion: Completion


class Save(NamedTuple):
    """One finished item for `Store.save_many`: the arguments of `Store.save`."""

    result: JudgeResult
    inputs: Mapping[str, Any]
    params: Mapping[str, Any]
    cache_entries: Sequence[CacheEntry] = ()


def _save_rows(
    result: JudgeResult,
    inputs: Mapping[str, Any],
    params: Mapping[str, Any],
    cache_entries: Sequence[CacheEntry],
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The results row and the response-cache rows of one finished item."""
    row = {
        "id": result.id,
        "item_id": result.item_id,
        "card": result.card,
        "card_hash": result.card_hash,
        "model": result.model,
        "status": result.status,
        "verdict": result.verdict,
        "model_verdict": result.model_verdict,
        "verdict_overridden": int(result.verdict_overridden),
        "scores": json.dumps(result.scores),
        "output": _json_or_none(result.output),
        "inputs": json.dumps(inputs, default=str),
        "params": json.dumps(params, sort_keys=True),
        # Configured keys are scrubbed from every value by the write path (`database`); error
        # text also loses anything key-shaped. Replies keep such text: it may be judged text.
        "raw_reply": result.raw_reply,
        "error_kind": result.error_kind,
        "error": _redacted(result.error),
        "attempts": result.attempts,
        "transport_retries": result.transport_retries,
        "input_tokens": result.usage.input_tokens,
        "output_tokens": result.usage.output_tokens,
        "cost_usd": result.cost_usd,
        "latency_s": result.latency_s,
        "cached": int(result.cached),
        "via": result.via,
        "extraction": result.extraction,
        "created_at": result.created_at.isoformat(),
        "cache_read_tokens": result.usage.cache_read_tokens,
        "cache_write_tokens": result.usage.cache_write_tokens,
        "native_method": result.native_method,
    }
    now = result.created_at.isoformat()
    cache_rows = [
        {
            "key": entry.key,
            "provider": entry.provider,
            "model": entry.model,
            "text": entry.completion.text,
            "reply_model": entry.completion.model,
            "finish_reason": entry.completion.finish_reason,
            "input_tokens": entry.completion.usage.input_tokens,
            "output_tokens": entry.completion.usage.output_tokens,
            "logprobs": _logprobs_json(entry.completion.logprobs),
            "created_at": now,
            "cache_read_tokens": entry.completion.usage.cache_read_tokens,
            "cache_write_tokens": entry.completion.usage.cache_write_tokens,
        }
        for entry in cache_entries
    ]
    return row, cache_rows


def _write_rows(tx: Transaction, row: Mapping[str, Any], cache_rows: list[dict[str, Any]]) -> None:
    tx.execute(insert_sql("results", _RESULT_COLUMNS, verb="INSERT OR REPLACE"), row)
    if cache_rows:
        tx.executemany(
            insert_sql("response_cache", _CACHE_COLUMNS, verb="INSERT OR REPLACE"), cache_rows
        )


def default_db_path() -> Path:
    """``$JUDGECARDS_DB``, else ``./judgecards.db``."""
    return Path(os.environ.get(DB_ENV) or DEFAULT_DB)


def card_filter(card: str | None, column: str = "card") -> tuple[list[str], list[Any]]:
    """SQL clauses and parameters selecting a card reference: ``name@version`` or ``name``.

    ``name@version`` matches exactly; a bare ``name`` matches every version of that card and no
    other (an exact, case-sensitive prefix test: ``LIKE`` would let ``_`` in a name match any
    character, and ignore case). ``None`` or ``""`` selects everything.
    """
    if not card:
        return [], []
    if "@" in card:
        return [f"{column} = ?"], [card]
    prefix = f"{card}@"
    return [f"substr({column}, 1, ?) = ?"], [len(prefix), prefix]


def _filters(
    card: str | None, model: str | None, since: str | None, until: str | None = None
) -> tuple[list[str], list[Any]]:
    """Clauses selecting a card ref, a judge model and a ``[since, until)`` span of created_at."""
    clauses, params = card_filter(card)
    bounds = (("model = ?", model), ("created_at >= ?", since), ("created_at < ?", until))
    for clause, value in bounds:
        if value:
            clauses.append(clause)
            params.append(value)
    return clauses, params


def _where(clauses: Sequence[str]) -> str:
    return f"WHERE {' AND '.join(clauses)}" if clauses else ""


class Store(Database):
    """Results, cache, comparisons and labels in one SQLite file. Safe to share between threads.

    Opening creates the file (and missing parent directories) and applies pending migrations;
    nothing else happens before the first call, so a tool that must not create or migrate a
    database on bad input validates its input first, then opens the store. The connection
    protocol (lock, ``BEGIN IMMEDIATE``, errors) is `judgecards.storage.database.Database`'s.

    Args:
        path: the database file (else ``JUDGECARDS_DB``, else ``./judgecards.db``).
        read_only: open an existing file without creating, migrating or writing anything
            (`StoreError` if it does not exist).
        timeout: seconds to wait for another connection's write lock.

    Raises:
        StoreError: the file cannot be opened, is not a database, or cannot be migrated.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        read_only: bool = False,
        timeout: float = BUSY_TIMEOUT,
    ) -> None:
        super().__init__(
            path if path is not None else default_db_path(),
            migrations=migrations,
            read_only=read_only,
            timeout=timeout,
        )

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ results and cache

    def save(
        self,
        result: JudgeResult,
        *,
        inputs: Mapping[str, Any],
        params: Mapping[str, Any],
        cache_entries: Sequence[CacheEntry] = (),
    ) -> None:
        """Write one finished item (and the replies that produced it) in one transaction."""
        row, cache_rows = _save_rows(result, inputs, params, cache_entries)
        with self.transaction(f"save result {result.id}") as tx:
            _write_rows(tx, row, cache_rows)

    def save_many(self, saves: Sequence[Save]) -> None:
        """Write several finished items in one transaction: all of them, or none (an error
        names no single result; `save` each to find which one fails)."""
        rows = [_save_rows(*save) for save in saves]
        with self.transaction(f"save {len(rows)} results") as tx:
            for row, cache_rows in rows:
                _write_rows(tx, row, cache_rows)

    def cached_completion(self, key: str) -> Completion | None:
        """The cached reply under ``key``, or ``None``."""
        rows = self.query(
            "SELECT text, reply_model, finish_reason, input_tokens, output_tokens, logprobs, "
            "cache_read_tokens, cache_write_tokens FROM response_cache WHERE key = ?",
            (key,),
            doing="read the response cache",
        )
        if not rows:
            return None
        text, model, finish_reason, input_tokens, output_tokens, logprobs, read, written = rows[0]
        return Completion(
            text=text,
            model=model or "",
            usage=Usage(input_tokens or 0, output_tokens or 0, read or 0, written or 0),
            finish_reason=finish_reason,
            logprobs=_logprobs_from_json(logprobs),
        )

    def finished(self, ids: Iterable[str]) -> dict[str, JudgeResult]:
        """Stored successful results among ``ids`` (the resume and re-run path)."""
        wanted = list(ids)
        found: dict[str, JudgeResult] = {}
        for start in range(0, len(wanted), _CHUNK):
            chunk = wanted[start : start + _CHUNK]
            marks = ", ".join("?" for _ in chunk)
            rows = self.query(
                f"SELECT {', '.join(_RESULT_COLUMNS)} FROM results "
                f"WHERE status = 'ok' AND id IN ({marks})",
                chunk,
                doing="read stored results",
            )
            for values in rows:
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

        ``card`` may be ``name`` (any version) or ``name@version`` (`card_filter`).
        """
        since = since.isoformat() if isinstance(since, datetime) else since
        clauses, params = _filters(card, model, since)
        if status:
            clauses.append("status = ?")
            params.append(status)
        rows = self.query(
            f"SELECT {', '.join(_RESULT_COLUMNS)} FROM results {_where(clauses)} "
            "ORDER BY created_at, id",
            params,
            doing="read stored results",
        )
        for values in rows:
            row = dict(zip(_RESULT_COLUMNS, values))
            yield _result_from_row(row), json.loads(row["inputs"] or "{}")

    def get(self, result_id: str) -> tuple[JudgeResult, dict[str, Any]] | None:
        """One stored result and its inputs, or ``None``."""
        rows = self.query(
            f"SELECT {', '.join(_RESULT_COLUMNS)} FROM results WHERE id = ?",
            (result_id,),
            doing=f"read result {result_id}",
        )
        if not rows:
            return None
        row = dict(zip(_RESULT_COLUMNS, rows[0]))
        return _result_from_row(row), json.loads(row["inputs"] or "{}")

    def results_page(
        self,
        *,
        card: str | None = None,
        model: str | None = None,
        status: str | None = None,
        item_id: str | None = None,
        after: tuple[str, str] | None = None,
        limit: int = 100,
    ) -> list[tuple[JudgeResult, dict[str, Any]]]:
        """One page of stored results with their inputs, oldest first, after the keyset
        ``after = (created_at, id)`` of the previous page's last row (the JSON API's paging: an
        index range read per page, and rows written meanwhile never shift a page)."""
        clauses, params = _filters(card, model, None)
        for clause, value in (("status = ?", status), ("item_id = ?", item_id)):
            if value is not None:
                clauses.append(clause)
                params.append(value)
        if after is not None:
            clauses.append("(created_at, id) > (?, ?)")
            params.extend(after)
        rows = self.query(
            f"SELECT {', '.join(_RESULT_COLUMNS)} FROM results {_where(clauses)} "
            "ORDER BY created_at, id LIMIT ?",
            [*params, limit],
            doing="read stored results",
        )
        page = [dict(zip(_RESULT_COLUMNS, values)) for values in rows]
        return [(_result_from_row(row), json.loads(row["inputs"] or "{}")) for row in page]

    def result_ref(self, result_id: str) -> tuple[str | None, str, str] | None:
        """``(item_id, card, model)`` of a stored result, without decoding it; ``None`` if absent."""
        rows = self.query(
            "SELECT item_id, card, model FROM results WHERE id = ?",
            (result_id,),
            doing=f"read result {result_id}",
        )
        return None if not rows else (rows[0][0], rows[0][1], rows[0][2])

    def result_ids(self, *, item_id: str, card: str, model: str) -> list[str]:
        """Ids of the stored results of one item with ``card@version`` and a model, oldest first."""
        rows = self.query(
            "SELECT id FROM results WHERE item_id = ? AND card = ? AND model = ? "
            "ORDER BY created_at, id",
            (item_id, card, model),
            doing=f"look up item {item_id}",
        )
        return [row[0] for row in rows]

    def card_refs(self, card: str, *, model: str | None = None, status: str = "ok") -> list[str]:
        """The ``name@version`` refs with stored results matching ``card`` (and model, status)."""
        clauses, params = card_filter(card)
        clauses.append("status = ?")
        params.append(status)
        if model:
            clauses.append("model = ?")
            params.append(model)
        rows = self.query(
            f"SELECT DISTINCT card FROM results {_where(clauses)} ORDER BY card",
            params,
            doing=f"list the stored versions of {card}",
        )
        return [row[0] for row in rows]

    def cost_totals(self, by: str, **filters: str | None) -> list[tuple[Any, ...]]:
        """Per card, model or UTC day: ``(group, results, served from cache, input tokens,
        output tokens, known cost in USD, results of unknown cost)``, sorted by group;
        ``filters``: ``card``, ``model``, ``since`` as in `export_rows`."""
        clauses, params = _filters(**filters)
        rows = self.query(
            f"SELECT {_COST_GROUPS[by]} AS grp, count(*), sum(cached), "
            "sum(coalesce(input_tokens, 0)), sum(coalesce(output_tokens, 0)), total(cost_usd), "
            f"sum(cost_usd IS NULL) FROM results {_where(clauses)} GROUP BY grp ORDER BY grp",
            params,
            doing="total stored costs",
        )
        return [tuple(row) for row in rows]

    # ------------------------------------------------------------------ comparisons

    def save_comparisons(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Upsert comparison rows (``{column: value}``, `COMPARISON_COLUMNS`) in one transaction.

        Re-judging a comparison updates it but keeps its first ``created_at``, so Elo's order
        stays the order in which pairs were first judged.
        """
        if not rows:
            return
        updates = ", ".join(
            f"{c} = excluded.{c}" for c in COMPARISON_COLUMNS if c not in ("id", "created_at")
        )
        sql = (
            insert_sql("comparisons", COMPARISON_COLUMNS)
            + f" ON CONFLICT(id) DO UPDATE SET {updates}"
        )
        with self.transaction(f"save {len(rows)} comparison(s)") as tx:
            tx.executemany(
                sql,
                [
                    {
                        c: _redacted(row.get(c)) if c == "error" else row.get(c)
                        for c in COMPARISON_COLUMNS
                    }
                    for row in rows
                ],
            )

    def comparisons(
        self, *, card: str | None = None, model: str | None = None, status: str | None = None
    ) -> list[dict[str, Any]]:
        """Stored comparison rows, oldest first, as ``{column: value}`` dicts."""
        clauses, params = card_filter(card)
        for column, value in (("model", model), ("status", status)):
            if value:
                clauses.append(f"{column} = ?")
                params.append(value)
        rows = self.query(
            f"SELECT {', '.join(COMPARISON_COLUMNS)} FROM comparisons {_where(clauses)} "
            "ORDER BY created_at, id",
            params,
            doing="read stored comparisons",
        )
        return [dict(zip(COMPARISON_COLUMNS, row)) for row in rows]

    # ------------------------------------------------------------------ exports

    def export_rows(
        self,
        table: Literal["results", "comparisons"],
        *,
        card: str | None = None,
        model: str | None = None,
        since: str | None = None,
        until: str | None = None,
        page: int = 1000,
    ) -> Iterator[dict[str, Any]]:
        """Rows of ``results`` or ``comparisons`` as stored, oldest first, a page at a time.

        For exports: each page is one short query (keyset paging on ``created_at, id``), so a
        table of any size is streamed without holding it in memory or the lock between pages.
        ``since`` is inclusive and ``until`` exclusive, ISO 8601 text compared with the stored
        UTC ``created_at``; ``model`` is the judge model; ``card`` as in `card_filter`.
        """
        columns = {"results": _RESULT_COLUMNS, "comparisons": COMPARISON_COLUMNS}[table]
        clauses, params = _filters(card, model, since, until)
        select = f"SELECT {', '.join(columns)} FROM {table}"
        after: tuple[str, str] | None = None
        while True:
            keyset = ["(created_at, id) > (?, ?)"] if after else []
            rows = self.query(
                f"{select} {_where([*clauses, *keyset])} ORDER BY created_at, id LIMIT ?",
                [*params, *(after or ()), page],
                doing=f"read stored {table}",
            )
            for values in rows:
                yield dict(zip(columns, values))
            if len(rows) < page:
                return
            last = rows[-1]
            after = (last[columns.index("created_at")], last[0])


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
    # A provider batch's results reach the user only from the store (the run after `batch
    # collect` writes them): they carry what the batch billed, or no output would ever show it.
    free = served_from_store and row["via"] != "batch"
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
        # the tokens it was billed once stay in its row, as do its transport retries.
        usage=TokenUsage()
        if free
        else TokenUsage(
            input_tokens=row["input_tokens"] or 0,
            output_tokens=row["output_tokens"] or 0,
            cache_read_tokens=row["cache_read_tokens"] or 0,
            cache_write_tokens=row["cache_write_tokens"] or 0,
        ),
        cost_usd=0.0 if free else row["cost_usd"],
        latency_s=row["latency_s"] or 0.0,
        attempts=row["attempts"] or 0,
        transport_retries=0 if served_from_store else row["transport_retries"] or 0,
        cached=served_from_store or bool(row["cached"]),
        via=row["via"] or "live",
        extraction=row["extraction"],
        native_method=row["native_method"],
        error_kind=row["error_kind"],
        error=row["error"],
        created_at=datetime.fromisoformat(row["created_at"]),
    )
