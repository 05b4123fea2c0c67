"""The JSON API for scripts: ``/v1/score``, ``/v1/compare``, ``/v1/cards``, ``/v1/results``.

Admin tokens only: results hold the judge's verdicts, which labelers must never see (their
labels would stop being blind). Scoring runs the same `Judge` as ``judgecards score`` on the
app's one `Store`, so the cache, the stored results and resumption are shared with the CLI:
a request repeated, or already judged from the command line, costs nothing.

Every input is checked before the first call (the card, the model, the item count against
``max_items``, each item's inputs against the card), so a bad request is a 4xx naming the field
and writes nothing. The judge runs in FastAPI's thread pool (these are plain ``def`` routes),
never on the event loop.
"""

from __future__ import annotations

import base64
import binascii
import threading
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from judgecards.cards import Card, check_inputs, list_cards, load_card, lone_surrogate
from judgecards.errors import CardError, InvalidInput, ProviderConfigError, TransportError
from judgecards.judging import Judge
from judgecards.limits import PriceTable, load_prices
from judgecards.pairwise.compare import ComparisonResult, compare_many
from judgecards.pairwise.rules import is_pairwise
from judgecards.serve.api_errors import ApiError, ErrorResponse
from judgecards.serve.auth import AdminUser, csrf_protect
from judgecards.storage import JudgeResult, Store

__all__ = ["router"]

_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorResponse} for status in (401, 403, 413, 422, 502)
}
router = APIRouter(prefix="/v1", tags=["api"], responses=_ERRORS)

_Ref = Annotated[str, Field(min_length=1, max_length=200)]


class ScoreRequest(BaseModel):
    """Items to judge with one card and model, as ``judgecards score`` would."""

    model_config = ConfigDict(extra="forbid")

    card: _Ref = Field(description="NAME or NAME@VERSION")
    model: _Ref = Field(description="provider:model, e.g. openai:gpt-4o or mock:judge")
    items: list[dict[str, Any]] = Field(
        min_length=1, description="Objects with the card's inputs and an optional 'id'."
    )
    cache: bool = Field(default=True, description="Reuse stored results and cached replies.")


class ResultOut(BaseModel):
    """One judged item (the fields `judgecards.JudgeResult` documents)."""

    id: str
    item_id: str | None
    status: str
    verdict: str | None
    scores: dict[str, int | float]
    model_verdict: str | None
    output: dict[str, Any] | None
    card: str
    card_hash: str
    model: str
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    latency_s: float
    attempts: int
    cached: bool
    error_kind: str | None
    error: str | None
    created_at: datetime

    @classmethod
    def of(cls, result: JudgeResult) -> ResultOut:
        return cls(
            **result.model_dump(
                include={
                    "id",
                    "item_id",
                    "status",
                    "verdict",
                    "scores",
                    "model_verdict",
                    "output",
                    "card",
                    "card_hash",
                    "model",
                    "cost_usd",
                    "latency_s",
                    "attempts",
                    "cached",
                    "error_kind",
                    "error",
                    "created_at",
                }
            ),
            input_tokens=result.usage.input_tokens,
            output_tokens=result.usage.output_tokens,
        )


class StoredResult(ResultOut):
    inputs: dict[str, Any]


class ScoreResponse(BaseModel):
    card: str
    model: str
    results: list[ResultOut]


class PairIn(BaseModel):
    """One pair: the card's inputs (``question``, ``answer_a``, ``answer_b``, optional
    ``reference``), an optional ``id`` and labels of the models that wrote A and B."""

    model_config = ConfigDict(extra="allow")

    id: str | int | None = None
    answer_a: str
    answer_b: str
    model_a: str | None = None
    model_b: str | None = None


class CompareRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    card: _Ref = Field(default="pairwise", description="A pairwise card, NAME or NAME@VERSION")
    model: _Ref
    pairs: list[PairIn] = Field(min_length=1)
    model_a: str | None = Field(default=None, max_length=200)
    model_b: str | None = Field(default=None, max_length=200)


class CompareResponse(BaseModel):
    card: str
    model: str
    comparisons: list[ComparisonResult]


class CardOut(BaseModel):
    ref: str
    name: str
    version: int
    hash: str
    description: str
    inputs: list[str]
    required_inputs: list[str]
    pairwise: bool
    released: bool


class CardsResponse(BaseModel):
    cards: list[CardOut]


class ResultsPage(BaseModel):
    results: list[StoredResult]
    next_cursor: str | None = Field(
        description="Pass as ?cursor= for the next page; null at the end."
    )


# --------------------------------------------------------------------------- checks


_card_lock = threading.Lock()


def _card(request: Request, ref: str) -> Card:
    """The card ``ref``, loaded once per server (parsing every card file per request is slow;
    a card edited on disk is seen after a restart, and a released card cannot change anyway)."""
    with _card_lock:
        cache: dict[str, Card] | None = getattr(request.app.state, "card_cache", None)
        if cache is None:
            cache = request.app.state.card_cache = {}
        if ref not in cache:
            try:
                cache[ref] = load_card(ref)
            except CardError as error:
                raise ApiError(422, "card", str(error), field="body.card") from error
        return cache[ref]


def _check_count(request: Request, count: int, field: str) -> None:
    limit: int = request.app.state.max_items
    if count > limit:
        raise ApiError(
            413,
            "too_many_items",
            f"{count} {field} in one request; at most {limit}",
            field=f"body.{field}",
        )


def _check_items(card: Card, items: Sequence[Mapping[str, Any]], field: str) -> None:
    for index, item in enumerate(items):
        item_id = item.get("id")
        if item_id is not None and not isinstance(item_id, (str, int)):
            raise ApiError(
                422,
                "invalid",
                "id must be a string or an integer",
                field=f"body.{field}.{index}.id",
            )
        if (found := lone_surrogate(item)) is not None:  # valid JSON, not text: cannot be sent
            raise ApiError(
                422,
                "input",
                f"a lone surrogate {found[1]}: valid JSON, but not text",
                field=f"body.{field}.{index}.{found[0]}",
            )
        try:
            check_inputs(card, item)
        except InvalidInput as error:
            where = f"body.{field}.{index}" + (f".{error.variable}" if error.variable else "")
            raise ApiError(422, "input", str(error), field=where) from error


def _prices(request: Request) -> PriceTable:
    """The price table (``JUDGECARDS_PRICES`` over the shipped one), read once per server:
    parsing it is most of a one-item request's time."""
    with _card_lock:
        prices: PriceTable | None = getattr(request.app.state, "prices", None)
        if prices is None:
            prices = request.app.state.prices = load_prices()
        return prices


def _judge(request: Request, card: Card, model: str, *, cache: bool = True) -> Judge:
    store: Store = request.app.state.store
    try:
        return Judge(card, model, db=store, cache=cache, prices=_prices(request))
    except ProviderConfigError as error:
        raise ApiError(422, "model", str(error), field="body.model") from error


def _provider_failed(error: TransportError) -> ApiError:
    return ApiError(502, "provider", f"the judge's provider refused the run: {error}")


# --------------------------------------------------------------------------- routes


@router.post("/score", response_model=ScoreResponse, dependencies=[Depends(csrf_protect)])
def score(body: ScoreRequest, request: Request, principal: AdminUser) -> ScoreResponse:
    """Judge items with a card and model; results are stored like ``judgecards score``'s."""
    card = _card(request, body.card)
    if is_pairwise(card):
        raise ApiError(
            422, "card", f"{card.ref} is a pairwise card: use /v1/compare", field="body.card"
        )
    _check_count(request, len(body.items), "items")
    _check_items(card, body.items, "items")
    with _judge(request, card, body.model, cache=body.cache) as judge:
        try:
            results = judge.score_many(body.items)
        except TransportError as error:
            raise _provider_failed(error) from error
    return ScoreResponse(
        card=card.ref, model=body.model, results=[ResultOut.of(r) for r in results]
    )


@router.post("/compare", response_model=CompareResponse, dependencies=[Depends(csrf_protect)])
def compare(body: CompareRequest, request: Request, principal: AdminUser) -> CompareResponse:
    """Judge pairs in both orders with a pairwise card; stored like ``judgecards compare``'s."""
    card = _card(request, body.card)
    if not is_pairwise(card):
        raise ApiError(
            422,
            "card",
            f"{card.ref} is not a pairwise card (no answer_a/answer_b)",
            field="body.card",
        )
    _check_count(request, len(body.pairs), "pairs")
    pairs = [pair.model_dump(exclude_none=True) for pair in body.pairs]
    _check_items(card, pairs, "pairs")
    with _judge(request, card, body.model) as judge:
        try:
            comparisons = compare_many(judge, pairs, model_a=body.model_a, model_b=body.model_b)
        except TransportError as error:
            raise _provider_failed(error) from error
    return CompareResponse(card=card.ref, model=body.model, comparisons=comparisons)


@router.get("/cards", response_model=CardsResponse)
def cards(principal: AdminUser) -> CardsResponse:
    """Every card version this server can judge with."""
    listed = [
        CardOut(
            ref=card.ref,
            name=card.name,
            version=card.version,
            hash=card.hash,
            description=card.spec.description,
            inputs=list(card.spec.inputs),
            required_inputs=[name for name, spec in card.spec.inputs.items() if spec.required],
            pairwise=is_pairwise(card),
            released=card.released,
        )
        for card in list_cards()
    ]
    return CardsResponse(cards=listed)


def _decode_cursor(cursor: str) -> tuple[str, str]:
    try:
        created_at, _, result_id = base64.urlsafe_b64decode(cursor.encode()).decode().partition("|")
    except (binascii.Error, UnicodeDecodeError, ValueError) as error:
        raise ApiError(
            422, "invalid", "cursor is not one this server gave out", field="query.cursor"
        ) from error
    if not created_at or not result_id:
        raise ApiError(
            422, "invalid", "cursor is not one this server gave out", field="query.cursor"
        )
    return created_at, result_id


def _encode_cursor(result: JudgeResult) -> str:
    return base64.urlsafe_b64encode(
        f"{result.created_at.isoformat()}|{result.id}".encode()
    ).decode()


_Filter = Annotated[str | None, Query(max_length=200)]


@router.get("/results", response_model=ResultsPage)
def results(  # noqa: PLR0917  FastAPI reads each query parameter from the signature
    request: Request,
    principal: AdminUser,
    card: _Filter = None,
    model: _Filter = None,
    status: Literal["ok", "error"] | None = None,
    item_id: _Filter = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    cursor: Annotated[str | None, Query(max_length=400)] = None,
) -> ResultsPage:
    """Stored results, oldest first, filtered by card (NAME or NAME@VERSION), judge model,
    status and item id; ``limit`` per page and the ``next_cursor`` of the previous page."""
    store: Store = request.app.state.store
    page = store.results_page(
        card=card,
        model=model,
        status=status,
        item_id=item_id,
        limit=limit + 1,
        after=_decode_cursor(cursor) if cursor else None,
    )
    more = len(page) > limit
    page = page[:limit]
    return ResultsPage(
        results=[StoredResult(**ResultOut.of(r).model_dump(), inputs=i) for r, i in page],
        next_cursor=_encode_cursor(page[-1][0]) if more else None,
    )
