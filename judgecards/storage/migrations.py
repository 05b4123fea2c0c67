"""The results database's schema, as ordered, named, atomic sqlite-utils migrations.

Kept apart from `judgecards.storage.store` so the schema's history reads in one place and the store
holds only the SQL that uses it. A migration is never edited once released: a change is a new
one at the end (the numbers are the order sqlite-utils applies them in). Feature packages with
tables of their own (calibration, batches, the server) keep their own migration sets in the
same file, applied with `Database.migrate`.
"""

from __future__ import annotations

import sqlite_utils
from sqlite_utils import Migrations

__all__ = ["migrations"]

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


@migrations()
def m003_transport_retries(db: sqlite_utils.Database) -> None:
    """`JudgeResult.transport_retries`: requests re-sent after a transport failure.

    Rows written before it existed read as 0: nothing was counted then.
    """
    db.table("results").add_column("transport_retries", int, not_null_default=0)


@migrations()
def m004_time_order_indexes(db: sqlite_utils.Database) -> None:
    """Indexes in the tables' time order (``created_at, id``), which exports page through.

    Without them every page of `Store.export_rows` scans and sorts the whole table (100,000
    results: 20 s of paging instead of under one).
    """
    db.table("results").create_index(["created_at", "id"], index_name="results_time")
    db.table("comparisons").create_index(["created_at", "id"], index_name="comparisons_time")


@migrations()
def m005_result_cost(db: sqlite_utils.Database) -> None:
    """`JudgeResult.cost_usd`, NULL when unknown (older rows, unless they billed no tokens)."""
    db.table("results").add_column("cost_usd", float)
    db.execute(
        "UPDATE results SET cost_usd = 0.0 WHERE coalesce(input_tokens, 0) = 0 "
        "AND coalesce(output_tokens, 0) = 0"
    )


@migrations()
def m006_result_extraction(db: sqlite_utils.Database) -> None:
    """`JudgeResult.extraction`: how the judgment was read (``native``, ``prompt_json``,
    ``final_token``, ``geval``). NULL for rows written before it: nobody recorded it then."""
    db.table("results").add_column("extraction", str)


@migrations()
def m007_cache_tokens(db: sqlite_utils.Database) -> None:
    """Prompt-cache tokens (`TokenUsage.cache_read_tokens`, ``cache_write_tokens``) on results
    and cached replies: the part of ``input_tokens`` billed at the cache rates.

    Rows written before it existed read as 0: their cost was computed with none.
    """
    for table in ("results", "response_cache"):
        db.table(table).add_column("cache_read_tokens", int, not_null_default=0)
        db.table(table).add_column("cache_write_tokens", int, not_null_default=0)


@migrations()
def m009_result_via(db: sqlite_utils.Database) -> None:
    """`JudgeResult.via`: ``live`` or ``batch`` (the first reply came from a provider batch).

    Rows written before it existed were all judged live.
    """
    db.table("results").add_column("via", str, not_null_default="live")


@migrations()
def m010_result_native_method(db: sqlite_utils.Database) -> None:
    """`JudgeResult.native_method`: which native form carried the schema (``json_schema``,
    ``json_object``, ``tool``). NULL for rows written before it: nobody recorded it then."""
    db.table("results").add_column("native_method", str)
