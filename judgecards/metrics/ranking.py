"""Ranking metrics for retrieval and reranking: NDCG@k, MRR, Recall@k, Precision@k and MAP.

Two levels, as everywhere in `judgecards.metrics`:

* **One query.** `dcg_at_k`, `ndcg_at_k`, `precision_at_k`, `recall_at_k`,
  `average_precision` and `reciprocal_rank` take ``relevances``: the relevance grade of each
  retrieved item, in ranked order (``[3, 2, 0]`` = the top item has grade 3). Relevant items that
  were not retrieved are passed separately (``ideal`` for NDCG, ``n_relevant`` for recall and AP);
  by default every relevant item is assumed to be in the list.
* **A run.** `mean_ndcg_at_k`, `mrr`, `mean_recall_at_k`, `mean_precision_at_k` and
  `mean_average_precision` take a TREC-style run ``{query_id: {doc_id: score}}`` and qrels
  ``{query_id: {doc_id: grade}}`` and average over queries, with a bootstrap interval over
  queries.

Conventions (those of NIST's ``trec_eval``, which the tests reproduce to the printed 4 decimals
and ``pytrec_eval`` to 1e-12):

* A run's documents are ranked by score, highest first; ties are broken by document id in
  *descending* string order, and the given ranks are ignored (`ranked_relevances`).
* An item is relevant when its grade is at least ``relevance_level`` (default 1). Unjudged
  documents have grade 0.
* DCG@k sums ``gain(grade_i) / log2(i + 1)`` over ranks ``i = 1..k``. The gain is
  ``2**grade - 1`` by default (``gain="exponential"``, Burges et al. 2005) or ``grade``
  (``gain="linear"``, trec_eval's ``ndcg``); grades at or below 0 give no gain in either case.
  The two agree for binary grades. NDCG@k divides by the DCG@k of the ideal ordering of all
  judged items for the query.
* A query without relevant items scores 0 on every measure. Queries of the run without any
  judgments are skipped, as are judged queries missing from the run unless ``complete=True``
  (then they score 0, like ``trec_eval -c``).
* ``k=None`` means no cut-off.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Literal, TypeAlias

from judgecards.metrics.stats import Estimate, bootstrap_ci

__all__ = [
    "Qrels",
    "Run",
    "average_precision",
    "dcg_at_k",
    "mean_average_precision",
    "mean_ndcg_at_k",
    "mean_precision_at_k",
    "mean_recall_at_k",
    "mrr",
    "ndcg_at_k",
    "precision_at_k",
    "ranked_relevances",
    "recall_at_k",
    "reciprocal_rank",
]

Gain = Literal["exponential", "linear"]
Run: TypeAlias = Mapping[str, Mapping[str, float]]
"""Retrieval scores per query: ``{query_id: {doc_id: score}}``, higher score = ranked higher."""
Qrels: TypeAlias = Mapping[str, Mapping[str, float]]
"""Relevance judgments per query: ``{query_id: {doc_id: grade}}``."""


def dcg_at_k(relevances: Sequence[float], k: int | None, *, gain: Gain = "exponential") -> float:
    """Discounted cumulative gain of the top ``k`` items.

    ``sum_{i=1..k} gain(rel_i) / log2(i + 1)``. For grades (3, 2, 0) and k = 3 with the
    exponential gain: 7/1 + 3/log2(3) + 0 = 7 + 1.8928 = 8.8928.

    Args:
        relevances: grades of the retrieved items in ranked order.
        k: cut-off rank (>= 1), or ``None`` for the whole list.
        gain: ``"exponential"`` (``2**g - 1``) or ``"linear"`` (``g``); grades <= 0 give 0.

    Returns:
        DCG@k, >= 0.
    """
    to_gain = _gain_function(gain)
    top = _top(relevances, k)
    return math.fsum(to_gain(g) / math.log2(i + 2) for i, g in enumerate(top) if g > 0)


def ndcg_at_k(
    relevances: Sequence[float],
    k: int | None,
    *,
    ideal: Sequence[float] | None = None,
    gain: Gain = "exponential",
) -> float:
    """Normalised DCG: DCG@k of the ranking divided by DCG@k of the ideal ranking.

    Args:
        relevances: grades of the retrieved items in ranked order.
        k: cut-off rank (>= 1), or ``None`` for the whole list.
        ideal: grades of *all* judged items for the query, in any order (they are sorted);
            default ``relevances`` itself, i.e. every relevant item was retrieved.
        gain: as in `dcg_at_k`.

    Returns:
        NDCG@k in [0, 1] when ``ideal`` covers the retrieved items; 0.0 when nothing is
        relevant.
    """
    best = dcg_at_k(sorted(relevances if ideal is None else ideal, reverse=True), k, gain=gain)
    return dcg_at_k(relevances, k, gain=gain) / best if best > 0 else 0.0


def precision_at_k(relevances: Sequence[float], k: int, *, relevance_level: float = 1) -> float:
    """Fraction of the top ``k`` ranks that hold a relevant item.

    The denominator is always ``k``, also when fewer than ``k`` items were retrieved (as
    trec_eval's ``P_k``).

    Args:
        relevances: grades of the retrieved items in ranked order.
        k: cut-off rank (>= 1).
        relevance_level: minimum grade that counts as relevant.

    Returns:
        Precision@k in [0, 1].
    """
    if k is None or k < 1:
        raise ValueError(f"precision_at_k needs k >= 1, got {k}")
    return sum(1 for g in _top(relevances, k) if g >= relevance_level) / k


def recall_at_k(
    relevances: Sequence[float],
    k: int | None,
    *,
    n_relevant: int | None = None,
    relevance_level: float = 1,
) -> float:
    """Fraction of all relevant items that appear in the top ``k``.

    Args:
        relevances: grades of the retrieved items in ranked order.
        k: cut-off rank (>= 1), or ``None`` for the whole list.
        n_relevant: number of relevant items for the query, retrieved or not; default the
            number of relevant items in ``relevances``.
        relevance_level: minimum grade that counts as relevant.

    Returns:
        Recall@k in [0, 1]; 0.0 when nothing is relevant.
    """
    total = _n_relevant(relevances, n_relevant, relevance_level)
    found = sum(1 for g in _top(relevances, k) if g >= relevance_level)
    return found / total if total else 0.0


def average_precision(
    relevances: Sequence[float], *, n_relevant: int | None = None, relevance_level: float = 1
) -> float:
    """Average precision: mean of precision@i over the ranks i of the relevant items.

    Relevant items that were not retrieved contribute precision 0, so the sum is divided by
    ``n_relevant``. For [1, 0, 1, 0, 1]: (1/1 + 2/3 + 3/5) / 3 = 2.2667 / 3 = 0.7556.

    Args:
        relevances: grades of the retrieved items in ranked order.
        n_relevant: number of relevant items for the query, retrieved or not; default the
            number of relevant items in ``relevances``.
        relevance_level: minimum grade that counts as relevant.

    Returns:
        AP in [0, 1]; 0.0 when nothing is relevant.
    """
    total = _n_relevant(relevances, n_relevant, relevance_level)
    if not total:
        return 0.0
    hits = 0
    precisions = []
    for rank, grade in enumerate(relevances, start=1):
        if grade >= relevance_level:
            hits += 1
            precisions.append(hits / rank)
    return math.fsum(precisions) / total


def reciprocal_rank(relevances: Sequence[float], *, relevance_level: float = 1) -> float:
    """1 / rank of the first relevant item; 0.0 when none was retrieved.

    Args:
        relevances: grades of the retrieved items in ranked order.
        relevance_level: minimum grade that counts as relevant.

    Returns:
        Reciprocal rank in [0, 1].
    """
    for rank, grade in enumerate(relevances, start=1):
        if grade >= relevance_level:
            return 1.0 / rank
    return 0.0


def ranked_relevances(scores: Mapping[str, float], judgments: Mapping[str, float]) -> list[float]:
    """Grades of one query's retrieved documents, in trec_eval's ranking order.

    Documents are sorted by score, highest first; equal scores are ordered by document id,
    descending (``"d9"`` before ``"d10"`` before ``"d1"``). Unjudged documents get grade 0.

    Args:
        scores: ``{doc_id: score}`` for the query.
        judgments: ``{doc_id: grade}`` for the query.

    Returns:
        The grades in ranked order.
    """
    ranking = sorted(scores.items(), key=lambda item: (item[1], item[0]), reverse=True)
    return [judgments.get(doc, 0) for doc, _ in ranking]


def mean_ndcg_at_k(
    run: Run,
    qrels: Qrels,
    k: int | None = 10,
    *,
    gain: Gain = "exponential",
    complete: bool = False,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int | None = 0,
) -> Estimate:
    """Mean `ndcg_at_k` over the queries of a run, with a bootstrap interval over queries.

    The ideal ranking of a query uses all its judged documents, retrieved or not.

    Args:
        run: ``{query_id: {doc_id: score}}``.
        qrels: ``{query_id: {doc_id: grade}}``.
        k: cut-off rank, or ``None`` for none.
        gain: as in `dcg_at_k`; ``"linear"`` reproduces trec_eval's ``ndcg_cut`` on graded
            judgments.
        complete: score judged queries missing from the run as 0 instead of skipping them.
        level: confidence level of the interval.
        n_resamples: bootstrap resamples.
        seed: bootstrap seed.

    Returns:
        An `Estimate` of mean NDCG@k; ``n`` is the number of queries averaged.
    """
    values = [
        ndcg_at_k(ranked, k, ideal=list(judged.values()), gain=gain)
        for ranked, judged in _queries(run, qrels, complete)
    ]
    return bootstrap_ci(values, level=level, n_resamples=n_resamples, seed=seed)


def mrr(
    run: Run,
    qrels: Qrels,
    *,
    relevance_level: float = 1,
    complete: bool = False,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int | None = 0,
) -> Estimate:
    """Mean reciprocal rank over the queries of a run (trec_eval's ``recip_rank``).

    Args:
        run: ``{query_id: {doc_id: score}}``.
        qrels: ``{query_id: {doc_id: grade}}``.
        relevance_level: minimum grade that counts as relevant.
        complete: score judged queries missing from the run as 0 instead of skipping them.
        level: confidence level of the interval.
        n_resamples: bootstrap resamples.
        seed: bootstrap seed.

    Returns:
        An `Estimate` of MRR.
    """
    values = [
        reciprocal_rank(ranked, relevance_level=relevance_level)
        for ranked, _ in _queries(run, qrels, complete)
    ]
    return bootstrap_ci(values, level=level, n_resamples=n_resamples, seed=seed)


def mean_recall_at_k(
    run: Run,
    qrels: Qrels,
    k: int | None = 10,
    *,
    relevance_level: float = 1,
    complete: bool = False,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int | None = 0,
) -> Estimate:
    """Mean `recall_at_k` over the queries of a run (trec_eval's ``recall_k``).

    The denominator of each query is its number of relevant judged documents.

    Args:
        run: ``{query_id: {doc_id: score}}``.
        qrels: ``{query_id: {doc_id: grade}}``.
        k: cut-off rank, or ``None`` for none.
        relevance_level: minimum grade that counts as relevant.
        complete: score judged queries missing from the run as 0 instead of skipping them.
        level: confidence level of the interval.
        n_resamples: bootstrap resamples.
        seed: bootstrap seed.

    Returns:
        An `Estimate` of mean Recall@k.
    """
    values = [
        recall_at_k(
            ranked,
            k,
            n_relevant=_count_relevant(judged, relevance_level),
            relevance_level=relevance_level,
        )
        for ranked, judged in _queries(run, qrels, complete)
    ]
    return bootstrap_ci(values, level=level, n_resamples=n_resamples, seed=seed)


def mean_precision_at_k(
    run: Run,
    qrels: Qrels,
    k: int = 10,
    *,
    relevance_level: float = 1,
    complete: bool = False,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int | None = 0,
) -> Estimate:
    """Mean `precision_at_k` over the queries of a run (trec_eval's ``P_k``).

    Args:
        run: ``{query_id: {doc_id: score}}``.
        qrels: ``{query_id: {doc_id: grade}}``.
        k: cut-off rank (>= 1).
        relevance_level: minimum grade that counts as relevant.
        complete: score judged queries missing from the run as 0 instead of skipping them.
        level: confidence level of the interval.
        n_resamples: bootstrap resamples.
        seed: bootstrap seed.

    Returns:
        An `Estimate` of mean Precision@k.
    """
    values = [
        precision_at_k(ranked, k, relevance_level=relevance_level)
        for ranked, _ in _queries(run, qrels, complete)
    ]
    return bootstrap_ci(values, level=level, n_resamples=n_resamples, seed=seed)


def mean_average_precision(
    run: Run,
    qrels: Qrels,
    *,
    relevance_level: float = 1,
    complete: bool = False,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int | None = 0,
) -> Estimate:
    """MAP: mean `average_precision` over the queries of a run (trec_eval's ``map``).

    Args:
        run: ``{query_id: {doc_id: score}}``.
        qrels: ``{query_id: {doc_id: grade}}``.
        relevance_level: minimum grade that counts as relevant.
        complete: score judged queries missing from the run as 0 instead of skipping them.
        level: confidence level of the interval.
        n_resamples: bootstrap resamples.
        seed: bootstrap seed.

    Returns:
        An `Estimate` of MAP.
    """
    values = [
        average_precision(
            ranked,
            n_relevant=_count_relevant(judged, relevance_level),
            relevance_level=relevance_level,
        )
        for ranked, judged in _queries(run, qrels, complete)
    ]
    return bootstrap_ci(values, level=level, n_resamples=n_resamples, seed=seed)


def _gain_function(gain: Gain) -> Callable[[float], float]:
    if gain == "exponential":
        return _exponential_gain
    if gain == "linear":
        return _linear_gain
    raise ValueError(f"gain must be 'exponential' or 'linear', got {gain!r}")


def _exponential_gain(grade: float) -> float:
    return math.pow(2.0, grade) - 1.0


def _linear_gain(grade: float) -> float:
    return float(grade)


def _top(relevances: Sequence[float], k: int | None) -> Sequence[float]:
    if k is None:
        return relevances
    if k < 1:
        raise ValueError(f"k must be at least 1 (or None for no cut-off), got {k}")
    return relevances[:k]


def _n_relevant(relevances: Sequence[float], n_relevant: int | None, relevance_level: float) -> int:
    retrieved = sum(1 for g in relevances if g >= relevance_level)
    if n_relevant is None:
        return retrieved
    if n_relevant < retrieved:
        raise ValueError(
            f"n_relevant={n_relevant} but {retrieved} relevant items were retrieved; "
            "n_relevant counts all relevant items, retrieved or not"
        )
    return n_relevant


def _count_relevant(judged: Mapping[str, float], relevance_level: float) -> int:
    return sum(1 for g in judged.values() if g >= relevance_level)


def _queries(
    run: Run, qrels: Qrels, complete: bool
) -> list[tuple[list[float], Mapping[str, float]]]:
    """(ranked grades, judgments) for each evaluated query, in sorted query-id order."""
    if isinstance(run, str) or isinstance(qrels, str):
        raise TypeError("run and qrels are mappings {query_id: {doc_id: value}}")
    queries = []
    for qid in sorted(qrels):
        judged = qrels[qid]
        if qid in run:
            queries.append((ranked_relevances(run[qid], judged), judged))
        elif complete:
            queries.append(([], judged))
    return queries
