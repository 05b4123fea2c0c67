"""Prepared items: the one public seam between a `Judge` and the code that drives it.

Every driver (``score_many``'s pool, ``plan``, the cost cap, provider batches, the pairwise
budget) asks the same questions of an item before paying for it: what is its key, is it stored
already, does the card refuse its inputs, is its first reply in the response cache, or must it be
called? `Judge.prepare` answers them for many items at once (one chunked store lookup) and
`Judge.classify` answers the last two for one item; `Judge.afinish` stores a prepared item's
result from a reply already paid for. This module holds the answers (`PreparedItem`), the one
rule for an item's id (`item_id_of`), and what code below `judgecards.judging.judge` may use of a judge
(`ItemJudge`), so that nothing there imports `Judge` upward.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from judgecards.cards import Card
    from judgecards.limits import PriceTable
    from judgecards.providers.base import CompletionRequest, Provider
    from judgecards.schemas import RubricPolicy
    from judgecards.storage import JudgeResult

__all__ = ["ItemJudge", "ItemState", "PreparedItem", "item_id_of"]

ItemState = Literal["stored", "cached", "refused", "to_call"]
"""``stored``: judged before (its result is kept); ``cached``: its first reply is in the response
cache (judging it costs nothing); ``refused``: its inputs or its rendered prompt are refused, it is
never sent; ``to_call``: it needs the provider."""


def item_id_of(item: Mapping[str, Any]) -> str | None:
    """An item's ``id`` as results carry it: text, or None when it has none (so ``7`` and
    ``"7"`` are one item in the store, the cache key and every report)."""
    value = item.get("id")
    return None if value is None else str(value)


@dataclass(frozen=True)
class PreparedItem:
    """One item as a judge found it before any call.

    Attributes:
        key: the id its result is stored under (for inputs refused before a key exists: the id
            of their ``input`` error record).
        item_id: the item's own id (`item_id_of`).
        inputs: the card inputs it is judged on (defaults such as a rubric's criteria filled
            in); for inputs refused before a key exists, the item as given less its ``id``.
        state: see `ItemState`; ``prepare`` without ``classify`` leaves ``cached`` items as
            ``to_call`` (the run looks the reply up anyway).
        source: the item as given.
        request: its first request, once classified (None when refused or not classified).
        cache_key: that request's key in the response cache, once classified.
        result: the stored result (``stored``) or the ``input`` error record (``refused``, when
            refusals were recorded).
        refusal: why a ``refused`` item is refused.
    """

    key: str
    item_id: str | None
    inputs: dict[str, Any]
    state: ItemState = "to_call"
    source: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    request: CompletionRequest | None = field(default=None, repr=False, compare=False)
    cache_key: str | None = None
    result: JudgeResult | None = field(default=None, repr=False, compare=False)
    refusal: str | None = None


class ItemJudge(Protocol):
    """What the modules `judgecards.judging.judge` builds on (its re-ask loop, its pool) use of a judge:
    typed here so that they never import `Judge` (a `Judge` is one)."""

    @property
    def card(self) -> Card: ...

    @property
    def model(self) -> str: ...

    @property
    def provider(self) -> Provider: ...

    @property
    def prices(self) -> PriceTable: ...

    @property
    def rubric(self) -> RubricPolicy | None: ...

    @property
    def max_attempts(self) -> int: ...

    def first_request(self, item: PreparedItem) -> CompletionRequest:
        """``item``'s first request as it would be sent now."""
        ...

    def prepare(
        self,
        items: Iterable[Mapping[str, Any]],
        *,
        classify: bool = False,
        record_refusals: bool = False,
    ) -> list[PreparedItem]:
        """``items`` prepared, in order (see `Judge.prepare`)."""
        ...
