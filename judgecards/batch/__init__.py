"""Provider batch APIs: judge many items at the batch price, with results within a day.

``submit_batch(judge, items)`` sends the items' first requests (the same ones a live run sends)
through the OpenAI Batch API or Anthropic Message Batches and stores every batch and item
before returning; ``collect_batch(judge)`` (or ``judgecards batch collect``) stores what the
batches answered through the live code path, so results, the response cache and a later live
run cannot tell them apart, except for ``via="batch"`` and the lower cost.
"""

from __future__ import annotations

from judgecards.batch.collect import BatchCollection, collect_batch
from judgecards.batch.submit import BatchJob, SubmittedBatch, submit_batch
from judgecards.providers.batch_api import BatchError, BatchStatus

__all__ = [
    "BatchCollection",
    "BatchError",
    "BatchJob",
    "BatchStatus",
    "SubmittedBatch",
    "collect_batch",
    "submit_batch",
]
