"""Ranking metrics: worked examples, trec_eval's expected output, and pytrec_eval / scikit-learn."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from judgecards.metrics import (
    average_precision,
    dcg_at_k,
    mean_average_precision,
    mean_ndcg_at_k,
    mean_precision_at_k,
    mean_recall_at_k,
    mrr,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
)
from judgecards.metrics.ranking import ranked_relevances, reciprocal_rank


# Readers for trec_eval's test files (qrels, runs and its printed output).
def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """``topic 0 docno rel`` lines into ``{topic: {docno: rel}}``."""
    qrels: dict[str, dict[str, int]] = {}
    for line in path.read_text().splitlines():
        topic, _, doc, rel = line.split()
        qrels.setdefault(topic, {})[doc] = int(rel)
    return qrels


def read_run(path: Path) -> dict[str, dict[str, float]]:
    """``topic Q0 docno rank score runid`` lines into ``{topic: {docno: score}}``; no rank."""
    run: dict[str, dict[str, float]] = {}
    for line in path.read_text().splitlines():
        topic, _, doc, _rank, score = line.split()[:5]
        run.setdefault(topic, {})[doc] = float(score)
    return run


def read_trec_eval_output(path: Path) -> dict[str, dict[str, str]]:
    """trec_eval's ``measure  topic  value`` lines into ``{topic_or_all: {measure: value}}``."""
    table: dict[str, dict[str, str]] = {}
    for line in path.read_text().splitlines():
        measure, topic, value = line.split()
        table.setdefault(topic, {})[measure] = value
    return table


def test_dcg_worked_example() -> None:
    # rels (3, 2, 0), gain 2^rel - 1, discount log2(i + 1):
    # (2^3 - 1)/log2(2) + (2^2 - 1)/log2(3) + 0 = 7/1 + 3/1.5849625 = 7 + 1.8927893 = 8.8927893
    assert dcg_at_k([3, 2, 0], 3) == pytest.approx(7 + 3 / math.log2(3), rel=1e-15)
    assert round(dcg_at_k([3, 2, 0], 3), 3) == 8.893
    # Linear gain: 3 + 2/log2(3) = 4.2619
    assert dcg_at_k([3, 2, 0], 3, gain="linear") == pytest.approx(3 + 2 / math.log2(3))
    # Already ideal, so NDCG = 1; swapping the top two lowers it.
    assert ndcg_at_k([3, 2, 0], 3) == 1.0
    assert ndcg_at_k([2, 3, 0], 3) == pytest.approx((3 + 7 / math.log2(3)) / (7 + 3 / math.log2(3)))


def test_average_precision_worked_example() -> None:
    # [1, 0, 1, 0, 1]: precision at the relevant ranks 1, 3, 5 = 1/1, 2/3, 3/5;
    # AP = (1 + 0.666667 + 0.6) / 3 = 2.266667 / 3 = 0.755556
    assert average_precision([1, 0, 1, 0, 1]) == pytest.approx((1 + 2 / 3 + 3 / 5) / 3)
    assert round(average_precision([1, 0, 1, 0, 1]), 3) == 0.756
    # Two more relevant documents that were never retrieved count as precision 0.
    assert average_precision([1, 0, 1, 0, 1], n_relevant=5) == pytest.approx(
        (1 + 2 / 3 + 3 / 5) / 5
    )


def test_other_per_query_measures() -> None:
    assert reciprocal_rank([0, 0, 1, 1]) == pytest.approx(1 / 3)
    assert reciprocal_rank([0, 0]) == 0.0
    assert recall_at_k([1, 0, 1, 0, 1], 3) == pytest.approx(2 / 3)
    assert recall_at_k([1, 0, 1, 0, 1], 3, n_relevant=4) == 0.5
    assert precision_at_k([1, 0, 1], 5) == pytest.approx(2 / 5)  # denominator is k
    assert reciprocal_rank([1, 2, 3], relevance_level=2) == 0.5
    # Nothing relevant: every measure is 0, not nan.
    assert ndcg_at_k([0, 0], 2) == recall_at_k([0, 0], 2) == average_precision([0, 0]) == 0.0
    # Grades at or below 0 give no gain (trec_eval): -1 counts as 0, not as a penalty.
    assert dcg_at_k([-1, 1], None) == pytest.approx(1 / math.log2(3))
    with pytest.raises(ValueError, match="n_relevant"):
        recall_at_k([1, 1], 2, n_relevant=1)
    with pytest.raises(ValueError, match="k must be"):
        ndcg_at_k([1], 0)
    with pytest.raises(ValueError, match="gain"):
        dcg_at_k([1], 1, gain="cubic")  # type: ignore[arg-type]


def test_trec_eval_tie_breaking() -> None:
    # Equal scores: document id descending, so "d9" > "d3" > "d10" > "d1" as strings.
    scores = {"d1": 1.0, "d10": 1.0, "d3": 1.0, "d9": 1.0, "top": 2.0}
    assert ranked_relevances(scores, {"top": 4, "d9": 3, "d3": 2, "d10": 1}) == [4, 3, 2, 1, 0]


@pytest.fixture(scope="module")
def qrels(trec_dir: Path) -> dict[str, dict[str, int]]:
    return read_qrels(trec_dir / "qrels.test")


@pytest.fixture(scope="module")
def run(trec_dir: Path) -> dict[str, dict[str, float]]:
    return read_run(trec_dir / "results.test")


def _four(value: float) -> str:
    return f"{value:.4f}"


def test_reproduces_trec_eval_out_test(
    trec_dir: Path, qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]
) -> None:
    """`trec_eval qrels.test results.test`: map 0.1785, recip_rank 0.4064, P_10 0.3000 ..."""
    expected = read_trec_eval_output(trec_dir / "out.test")["all"]
    kw = {"n_resamples": 50}
    assert _four(mean_average_precision(run, qrels, **kw).value) == expected["map"] == "0.1785"
    assert _four(mrr(run, qrels, **kw).value) == expected["recip_rank"] == "0.4064"
    for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000):
        assert _four(mean_precision_at_k(run, qrels, k, **kw).value) == expected[f"P_{k}"]


def test_reproduces_trec_eval_all_trec(
    trec_dir: Path, qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]
) -> None:
    """`-m all_trec`: ndcg 0.4021, ndcg_cut_10 0.3016, recall_*, and the per-topic table (-q)."""
    expected = read_trec_eval_output(trec_dir / "out.test.a")["all"]
    kw = {"n_resamples": 50}
    assert _four(mean_ndcg_at_k(run, qrels, None, **kw).value) == expected["ndcg"] == "0.4021"
    assert _four(mean_ndcg_at_k(run, qrels, 10, **kw).value) == expected["ndcg_cut_10"] == "0.3016"
    for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000):
        assert _four(mean_ndcg_at_k(run, qrels, k, **kw).value) == expected[f"ndcg_cut_{k}"]
        assert _four(mean_recall_at_k(run, qrels, k, **kw).value) == expected[f"recall_{k}"]

    per_topic = read_trec_eval_output(trec_dir / "out.test.aq")
    for topic in ("301", "302", "303"):
        ranked = ranked_relevances(run[topic], qrels[topic])
        judged = list(qrels[topic].values())
        n_rel = sum(1 for g in judged if g >= 1)
        row = per_topic[topic]
        assert _four(average_precision(ranked, n_relevant=n_rel)) == row["map"]
        assert _four(reciprocal_rank(ranked)) == row["recip_rank"]
        assert _four(ndcg_at_k(ranked, None, ideal=judged)) == row["ndcg"]
        assert _four(ndcg_at_k(ranked, 10, ideal=judged)) == row["ndcg_cut_10"]
        assert _four(recall_at_k(ranked, 100, n_relevant=n_rel)) == row["recall_100"]


def test_reproduces_trec_eval_graded_and_complete(
    trec_dir: Path, qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]
) -> None:
    kw = {"n_resamples": 50}
    # out.test.aql: graded qrels (-1..4) with -l2 (relevant = grade >= 2); trec_eval's ndcg
    # uses the grade itself as the gain, i.e. gain="linear".
    graded = read_qrels(trec_dir / "qrels.rel_level")
    expected = read_trec_eval_output(trec_dir / "out.test.aql")["all"]
    assert _four(mean_ndcg_at_k(run, graded, None, gain="linear", **kw).value) == expected["ndcg"]
    assert (
        _four(mean_ndcg_at_k(run, graded, 10, gain="linear", **kw).value) == expected["ndcg_cut_10"]
    )
    assert (
        _four(mean_average_precision(run, graded, relevance_level=2, **kw).value) == expected["map"]
    )
    assert _four(mrr(run, graded, relevance_level=2, **kw).value) == expected["recip_rank"]
    assert (
        _four(mean_recall_at_k(run, graded, 100, relevance_level=2, **kw).value)
        == expected["recall_100"]
    )

    # out.test.aqc: the truncated run lacks topic 302; -c averages over all 3 judged topics.
    truncated = read_run(trec_dir / "results.trunc")
    assert set(truncated) == {"301", "303"}
    expected = read_trec_eval_output(trec_dir / "out.test.aqc")["all"]
    assert expected["num_q"] == "3"
    assert (
        _four(mean_average_precision(truncated, qrels, complete=True, **kw).value)
        == expected["map"]
    )
    assert _four(mrr(truncated, qrels, complete=True, **kw).value) == expected["recip_rank"]
    assert (
        _four(mean_ndcg_at_k(truncated, qrels, 10, complete=True, **kw).value)
        == expected["ndcg_cut_10"]
    )
    assert (
        _four(mean_recall_at_k(truncated, qrels, 10, complete=True, **kw).value)
        == expected["recall_10"]
    )
    assert (
        mean_average_precision(truncated, qrels, **kw).n == 2
    )  # without -c: only topics in the run


def test_agrees_with_pytrec_eval_per_topic(
    qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]], trec_dir: Path
) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    measures = {
        "map",
        "recip_rank",
        "ndcg",
        "ndcg_cut_10",
        "ndcg_cut_5",
        "recall_10",
        "recall_100",
        "P_10",
    }
    rng = random.Random(7)
    # The real run, a run with heavy score ties (rounded scores), and graded judgments.
    tied = {q: {d: round(s, 1) for d, s in docs.items()} for q, docs in run.items()}
    graded = read_qrels(trec_dir / "qrels.rel_level")
    shuffled = {q: {d: rng.random() for d in docs} for q, docs in run.items()}
    for judged_docs, ranking in [(qrels, run), (qrels, tied), (graded, tied), (graded, shuffled)]:
        results = pytrec_eval.RelevanceEvaluator(judged_docs, measures).evaluate(ranking)
        for topic, theirs in results.items():
            ranked = ranked_relevances(ranking[topic], judged_docs[topic])
            judged = list(judged_docs[topic].values())
            n_rel = sum(1 for g in judged if g >= 1)
            ours = {
                "map": average_precision(ranked, n_relevant=n_rel),
                "recip_rank": reciprocal_rank(ranked),
                "ndcg": ndcg_at_k(ranked, None, ideal=judged, gain="linear"),
                "ndcg_cut_10": ndcg_at_k(ranked, 10, ideal=judged, gain="linear"),
                "ndcg_cut_5": ndcg_at_k(ranked, 5, ideal=judged, gain="linear"),
                "recall_10": recall_at_k(ranked, 10, n_relevant=n_rel),
                "recall_100": recall_at_k(ranked, 100, n_relevant=n_rel),
                "P_10": precision_at_k(ranked, 10),
            }
            for measure, value in ours.items():
                assert value == pytest.approx(theirs[measure], abs=1e-12), (topic, measure)


def test_exponential_gain_agrees_with_scikit_learn() -> None:
    """sklearn's ndcg_score uses the given relevance as the gain, so pass 2^rel - 1 to it."""
    from sklearn.metrics import ndcg_score

    rng = random.Random(3)
    for _ in range(25):
        grades = [rng.choice([0, 0, 1, 2, 3]) for _ in range(rng.randint(2, 30))]
        if not any(grades):
            continue
        scores = rng.sample(range(1000), len(grades))  # distinct, so no tie averaging
        ranked = [g for _, g in sorted(zip(scores, grades), reverse=True)]
        gains = [[2.0**g - 1 for g in grades]]
        for k in (1, 3, 10, None):
            ours = ndcg_at_k(ranked, k)
            assert ours == pytest.approx(ndcg_score(gains, [scores], k=k), abs=1e-12)


grades = st.lists(st.integers(0, 3), max_size=30)


@given(ranked=grades, k=st.integers(1, 35))
def test_bounds_and_monotonicity(ranked: list[int], k: int) -> None:
    for value in (
        ndcg_at_k(ranked, k),
        recall_at_k(ranked, k),
        precision_at_k(ranked, k),
        average_precision(ranked),
        reciprocal_rank(ranked),
    ):
        assert 0.0 <= value <= 1.0 + 1e-12
    assert recall_at_k(ranked, k + 1) >= recall_at_k(ranked, k)
    assert dcg_at_k(ranked, k + 1) >= dcg_at_k(ranked, k)
    # The ideal ordering scores NDCG 1 whenever anything is relevant.
    if any(ranked):
        assert ndcg_at_k(sorted(ranked, reverse=True), k) == pytest.approx(1.0)
    # Moving a relevant item up never lowers AP or RR.
    if 0 in ranked and any(ranked):
        first_zero = ranked.index(0)
        later = [i for i in range(first_zero + 1, len(ranked)) if ranked[i] >= 1]
        if later:
            swapped = list(ranked)
            swapped[first_zero], swapped[later[0]] = swapped[later[0]], swapped[first_zero]
            assert average_precision(swapped) >= average_precision(ranked) - 1e-12
            assert reciprocal_rank(swapped) >= reciprocal_rank(ranked)
