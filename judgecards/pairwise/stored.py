"""Stored comparisons: the ``comparisons`` table and rankings over it.

`save_comparisons` writes the decided pairs of a compare run (each with the two order results
already in ``results``); `load_comparisons` reads them back; `rankable_comparisons` picks what a
ranking counts (one judge, labelled, each judged pair once) and `rank_stored` (``judgecards
rank``) fits Bradley–Terry or Elo ratings over it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from judgecards.errors import RankingError

if TYPE_CHECKING:
    from judgecards.pairwise.comparisons import ComparisonResult
    from judgecards.pairwise.ratings import Comparison, Ratings
    from judgecards.storage import Store

__all__ = [
    "RankableComparisons",
    "load_comparisons",
    "rank_stored",
    "rankable_comparisons",
    "save_comparisons",
]


def save_comparisons(store: Store, comparisons: Sequence[ComparisonResult]) -> None:
    """Write comparisons in one transaction (the two order results are already stored).

    Re-judging a comparison updates its row but keeps its first ``created_at``
    (`judgecards.Store.save_comparisons`), so Elo's order stays the order in which pairs were
    first judged.
    """
    store.save_comparisons([_row(c) for c in comparisons])


def _row(c: ComparisonResult) -> dict[str, Any]:
    return {
        "id": c.id,
        "pair_id": c.pair_id,
        "card": c.card,
        "card_hash": c.card_hash,
        "model": c.model,
        "model_a": c.model_a,
        "model_b": c.model_b,
        "status": c.status,
        "winner": c.winner,
        "position_consistent": None
        if c.position_consistent is None
        else int(c.position_consistent),
        "first_verdict": c.first_order.verdict,
        "second_verdict": c.second_order.verdict,
        "first_result_id": c.first_order.result_id,
        "second_result_id": c.second_order.result_id,
        "len_a": c.len_a,
        "len_b": c.len_b,
        "error": c.error,
        "created_at": c.created_at.isoformat(),
    }


def load_comparisons(
    store: Store,
    *,
    card: str | None = "pairwise",
    judge_model: str | None = None,
    status: str | None = "ok",
) -> list[dict[str, Any]]:
    """Stored comparison rows, oldest first, as dicts of the ``comparisons`` columns.

    ``card`` is ``name`` (any version) or ``name@version``; ``None`` means any card.
    """
    return store.comparisons(card=card, model=judge_model, status=status)


# --------------------------------------------------------------------------- ranking


@dataclass(frozen=True)
class RankableComparisons:
    """The stored comparisons a ranking counts, each judged pair once, and what was left out.

    A judged pair (its two order results) is stored once per labelling: re-running ``compare``
    on the same outputs with other ``--model-a``/``--model-b`` labels adds rows under the new
    labels beside the old ones. Counting both would count the pair twice (and split the
    comparison graph into an old-label and a new-label group), so each judged pair counts once,
    with its most recent labelling among the selected rows.

    Attributes:
        comparisons: ``(model_a, model_b, winner)``, one per judged pair, in the order the pairs
            were first judged (the order Elo replays).
        card / judge_model: the one judge (``name@version`` and model) they come from.
        unlabelled: stored rows without two distinct model labels (cannot be ranked).
        outside_models: labelled rows left out because a label is not in ``models``.
        superseded: rows that were older labellings of a judged pair counted with newer labels.
    """

    comparisons: list[Comparison]
    card: str
    judge_model: str
    unlabelled: int
    outside_models: int
    superseded: int

    def rate(self, method: Literal["bt", "elo"] = "bt", **options: Any) -> Ratings:
        """Bradley–Terry (``"bt"``) or Elo ratings; ``options`` go to `bradley_terry` / `elo`."""
        from judgecards.pairwise.ratings import bradley_terry, elo

        if method == "bt":
            return bradley_terry(self.comparisons, **options)
        if method == "elo":
            return elo(self.comparisons, **options)
        raise ValueError(f"method must be 'bt' or 'elo', got {method!r}")


def rankable_comparisons(
    store: Store,
    *,
    card: str = "pairwise",
    judge_model: str | None = None,
    models: Sequence[str] | None = None,
) -> RankableComparisons:
    """Select the stored comparisons to rank: one judge, labelled, each judged pair once.

    Args:
        store: the database.
        card: ``name`` (any version) or ``name@version``.
        judge_model: only comparisons judged by this model.
        models: only comparisons between these labels: picks one group of models, or an older
            labelling of relabelled pairs (each judged pair still counts once, with its latest
            labelling among the rows selected).

    Raises:
        RankingError: no labelled comparisons (within ``models``); a label in ``models`` that no
            stored comparison has; comparisons from several judge models or card versions; or
            models that split into groups never compared with each other (ratings would not be on
            one scale). Each message says which option chooses.
    """
    from judgecards.pairwise.ratings import comparison_groups

    rows = load_comparisons(store, card=card, judge_model=judge_model)
    labelled = [r for r in rows if r["model_a"] and r["model_b"] and r["model_a"] != r["model_b"]]
    by = f" by {judge_model}" if judge_model else ""
    if not labelled:
        raise RankingError(
            f"no stored {card} comparisons with model labels{by} in {store.path} "
            "(label A and B with model_a/model_b or --model-a/--model-b)"
        )
    selected = labelled
    if models is not None:
        wanted = set(models)
        known = {r[side] for r in labelled for side in ("model_a", "model_b")}
        unknown = sorted(wanted - known)
        if unknown:
            raise RankingError(
                f"no stored {card} comparison{by} has the label(s) {', '.join(unknown)} "
                f"(labels: {', '.join(sorted(known))})"
            )
        selected = [r for r in labelled if r["model_a"] in wanted and r["model_b"] in wanted]
        if not selected:
            raise RankingError(
                f"no stored {card} comparison{by} is between two of {', '.join(sorted(wanted))}"
            )
    judges = sorted({(r["card"], r["model"]) for r in selected})
    if len(judges) > 1:
        listed = "; ".join(f"{c} by {m}" for c, m in judges)
        raise RankingError(
            f"stored comparisons come from {len(judges)} judges ({listed}); rank one at a time: "
            "choose it with --model MODEL and/or --card NAME@VERSION"
        )
    # Rows are oldest first: for each judged pair the last row is its latest labelling, and the
    # pair keeps the place of its first row (when it was first judged).
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for row in selected:
        key = (row["first_result_id"], row["second_result_id"])
        latest.pop(key, None)
        latest[key] = row
    first_seen = list(
        dict.fromkeys((r["first_result_id"], r["second_result_id"]) for r in selected)
    )
    comparisons = [
        (latest[key]["model_a"], latest[key]["model_b"], latest[key]["winner"])
        for key in first_seen
    ]
    groups = comparison_groups(comparisons)
    if len(groups) > 1:
        listed = "; ".join(", ".join(group) for group in groups)
        choices = " or ".join(f"--models {','.join(group)}" for group in groups)
        raise RankingError(
            f"the stored comparisons split into {len(groups)} groups of models never compared "
            f"with each other ({listed}); their ratings would not be on one scale. Rank one group "
            f"at a time: {choices}"
        )
    card_ref, model = judges[0]
    return RankableComparisons(
        comparisons=comparisons,
        card=card_ref,
        judge_model=model,
        unlabelled=len(rows) - len(labelled),
        outside_models=len(labelled) - len(selected),
        superseded=len(selected) - len(comparisons),
    )


def rank_stored(
    store: Store,
    *,
    card: str = "pairwise",
    judge_model: str | None = None,
    models: Sequence[str] | None = None,
    method: Literal["bt", "elo"] = "bt",
    **options: Any,
) -> Ratings:
    """Bradley–Terry (``"bt"``) or Elo ratings over stored comparisons that carry model labels.

    Each judged pair counts once, with its latest labelling (see `rankable_comparisons`, which
    also says how ``models`` picks a group or an older labelling). ``options`` go to
    `judgecards.pairwise.ratings.bradley_terry` or `judgecards.pairwise.ratings.elo`
    (``ties``, ``bootstrap``, ``seed``, ``k``…). Elo replays the pairs in the order they were
    first judged.

    Raises:
        RankingError: as `rankable_comparisons`.
        ValueError: an unknown ``method``.
    """
    selection = rankable_comparisons(store, card=card, judge_model=judge_model, models=models)
    return selection.rate(method, **options)
