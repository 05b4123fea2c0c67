"""`JudgeResult`: one judged item, successful or not. Nothing is dropped: a failure is a record."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["JudgeResult", "TokenUsage"]


class TokenUsage(BaseModel):
    """Tokens the provider billed for this item, summed over re-asks and transport retries.

    ``input_tokens`` counts every prompt token; ``cache_read_tokens`` and
    ``cache_write_tokens`` are the part of them the provider read from or wrote to its prompt
    cache (`judgecards.cards.prompt_cache`), billed at the cache rates.
    """

    model_config = ConfigDict(frozen=True)

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


def _now() -> datetime:
    return datetime.now(timezone.utc)


class JudgeResult(BaseModel):
    """The outcome of judging one item with one card and one model.

    Attributes:
        id: stable key of (card hash, model, call parameters, item id, inputs); re-judging the
            same thing writes the same row, so results never duplicate.
        item_id: the caller's id for the item (the ``id`` field of an input line), if any.
        status: ``ok``, or ``error`` when every attempt failed (see ``error_kind``), or
            ``not_judged``: not started because its projected cost would pass the judge's
            ``max_cost`` (`judgecards.limits.budget`); never stored, not an error.
        verdict: decided in code by the card's rule (None for cards without verdicts).
        scores: numeric axes by name (e.g. ``correctness``).
        model_verdict: the verdict the judge itself wrote; ``verdict_overridden`` when it differs.
        output: the full validated judgment (reasoning, per-axis details).
        raw_reply: the judge's last reply text, kept for audit and for error records.
        card / card_hash: ``name@version`` and ``sha256:<hex>`` of the card used.
        model: ``provider:model`` as configured (``mock:…`` for synthetic runs).
        usage: tokens billed; zero when served from cache, except for a batch's result (below).
        cost_usd: US dollars billed for ``usage`` at the price table's rates
            (`judgecards.limits.pricing`); ``None`` means unknown (tokens were billed on a model with
            no price), never free; 0.0 for mock models and for results that made no call (served
            from cache this time: the row stored earlier keeps what it cost then). A result judged
            by a provider batch (``via == "batch"``) carries what the batch billed for it also
            when served from the store, since that is how its output is written; it is still
            ``cached``, and run summaries count only results that were not.
        latency_s: wall time spent on the item, waits included.
        attempts: judge replies requested (1 + re-asks); a transport retry is not an attempt.
        transport_retries: requests re-sent after a retryable transport failure (429, 5xx,
            timeout, connection error, a rejected parameter) for this item, summed over its
            attempts; 0 for cached results.
        cached: served from the results store or response cache without a provider call.
        extraction: how the judgment was read (`judgecards.replies.structured_output`): ``native``
            (JSON constrained by the provider's structured output), ``prompt_json`` (JSON asked
            for in the prompt), ``final_token`` (a final rating line) or ``geval`` (scores
            weighted by token probabilities); None for errors and results stored before it.
        native_method: for a natively constrained reply, the form that carried the schema
            (`judgecards.replies.structured_output.NativeMethod`): ``json_schema``, ``json_object``
            (with the schema, as llama-cpp-python's server takes it) or ``tool``; None for
            prompt-mode and error results and for results stored before it was recorded.
        via: where the first reply came from: ``live`` (a call per item) or ``batch`` (a
            provider batch, `judgecards.batch`; its re-asks are live calls).
        error_kind: ``invalid_output``, ``truncated`` (the reply was cut at the token limit, also
            at twice the budget), ``rate_limit``, ``transient``, ``context_length`` (the prompt
            and reply budget exceed the model's context; the error gives the server's numbers),
            ``fatal`` or ``input`` (the item is missing an input, has one over the size limit,
            or its data breaks the card).
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    item_id: str | None = None
    status: Literal["ok", "error", "not_judged"]
    verdict: str | None = None
    scores: dict[str, int | float] = Field(default_factory=dict)
    model_verdict: str | None = None
    verdict_overridden: bool = False
    output: dict[str, Any] | None = None
    raw_reply: str | None = None
    card: str
    card_hash: str
    model: str
    usage: TokenUsage = Field(default_factory=TokenUsage)
    cost_usd: float | None = None
    latency_s: float = 0.0
    attempts: int = 0
    transport_retries: int = 0
    cached: bool = False
    via: Literal["live", "batch"] = "live"
    extraction: Literal["native", "prompt_json", "final_token", "geval"] | None = None
    native_method: Literal["json_schema", "json_object", "tool"] | None = None
    error_kind: str | None = None
    error: str | None = None
    created_at: datetime = Field(default_factory=_now)

    @property
    def ok(self) -> bool:
        return self.status == "ok"
