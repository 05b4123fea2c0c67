"""``compare --batch``: both orders of every pair in one submission, comparisons on collection.

Each pair becomes the same two items a live comparison judges (`judgecards.pairwise.compare`,
A shown first, then B), submitted as one batch submission; the pairs are stored with it. Once
both orders of a pair have a stored result (from the batch, a re-submission or a live run), the
pair's comparison row is decided by the live rule and written (`write_comparisons`), so
``judgecards rank`` and the compare report read batch comparisons like live ones.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from judgecards.batch.repository import BatchRepository
from judgecards.batch.submit import BatchJob, submit_batch
from judgecards.judging import Judge
from judgecards.pairwise.compare import ComparisonResult, combine_orders, pair_orders
from judgecards.pairwise.stored import save_comparisons

__all__ = ["submit_pairs", "write_comparisons"]


def submit_pairs(
    judge: Judge, pairs: Iterable[Mapping[str, Any]], **options: Any
) -> tuple[BatchJob, list[ComparisonResult]]:
    """Submit both orders of every pair (``options`` as for `submit_batch`); returns the job
    and the comparisons already decidable (both orders stored before anything was sent)."""
    listed = [dict(pair) for pair in pairs]
    items = [order for pair in listed for order in pair_orders(pair)]
    job = submit_batch(judge, items, **options)
    # Nothing sent (every order stored, cached or already waiting): the pairs still wait here
    # for the orders that are in other batches.
    submission = job.submission or f"jcs-{uuid.uuid4().hex[:12]}"
    BatchRepository(judge.store).add_pairs(submission, listed)
    return job, write_comparisons(judge, [submission])


def write_comparisons(
    judge: Judge, submissions: Iterable[str] | None = None
) -> list[ComparisonResult]:
    """Decide and store the comparison of every waiting pair (of ``submissions``, or all) whose
    two orders this judge has stored results for; other judges' pairs are left alone."""
    repo = BatchRepository(judge.store)
    decided: list[ComparisonResult] = []
    done: list[tuple[str, int]] = []
    waiting = list(repo.waiting_pairs(submissions))
    orders = judge.prepare(order for _, _, pair in waiting for order in pair_orders(pair))
    for index, (submission, position, pair) in enumerate(waiting):
        first, second = orders[2 * index], orders[2 * index + 1]
        if first.state == "refused" or second.state == "refused":
            continue  # another card's pair
        found = [judge.store.get(order.key) for order in (first, second)]
        if found[0] is None or found[1] is None:
            continue  # an order still waits (or was left by its batch)
        decided.append(combine_orders(judge, pair, found[0][0], found[1][0], None, None))
        done.append((submission, position))
    save_comparisons(judge.store, decided)
    repo.pairs_written(done)
    return decided
