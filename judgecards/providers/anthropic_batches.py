"""Anthropic Message Batches: up to 100,000 requests or 256 MB per batch, results as JSONL.

Each request is ``{custom_id, params}`` where ``params`` is exactly the body of a live
``messages.create`` call. A batch's ``processing_status`` goes ``in_progress`` → (``canceling``)
→ ``ended``; only then are results readable, each ``succeeded`` (a message), ``errored``,
``canceled`` or ``expired``.

Message batches carry no metadata, so a batch whose create call returned after the process died
can only be recognised by when it was created and how many requests it holds (`find`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from judgecards.providers.anthropic import AnthropicProvider
from judgecards.providers.base import CompletionRequest
from judgecards.providers.batch_api import BatchStatus, Outcome

__all__ = ["AnthropicBatches"]

_CLOCK_SKEW = 120.0  # seconds: the provider's clock against ours, when matching created_at


class AnthropicBatches:
    """Message Batches through the judge's own Anthropic client (its key, URL and transport)."""

    max_requests = 100_000
    max_bytes = 256 * 1024 * 1024

    def __init__(self, provider: AnthropicProvider) -> None:
        self._provider = provider
        self._client: Any = provider.sync_client()

    def entry(self, custom_id: str, request: CompletionRequest) -> bytes:
        body = self._provider.request_body(request)
        return json.dumps({"custom_id": custom_id, "params": body}, ensure_ascii=False).encode()

    def create(
        self, entries: Sequence[bytes], *, job_id: str, uploaded: Callable[[str], None]
    ) -> str:
        requests = [json.loads(entry) for entry in entries]
        batch = self._client.messages.batches.create(requests=requests)
        return str(batch.id)

    def retrieve(self, batch_id: str) -> BatchStatus:
        return _status(self._client.messages.batches.retrieve(batch_id))

    def cancel(self, batch_id: str) -> BatchStatus:
        return _status(self._client.messages.batches.cancel(batch_id))

    def results(self, batch_id: str, status: BatchStatus) -> Iterator[Outcome]:
        for entry in self._client.messages.batches.results(batch_id):
            result = entry.result
            custom_id = str(entry.custom_id)
            if result.type == "succeeded":
                completion = self._provider.completion_from_body(result.message.to_dict())
                yield Outcome(custom_id, "succeeded", completion=completion)
            elif result.type == "errored":
                error = getattr(result.error, "error", result.error)
                kind = getattr(error, "type", "error")
                yield Outcome(
                    custom_id, "errored", error=f"{kind}: {getattr(error, 'message', '')}"
                )
            elif result.type in ("canceled", "expired"):
                yield Outcome(custom_id, result.type, error=f"the batch {result.type} the request")

    def find(self, job_id: str, *, created_after: float, requests: int) -> list[str]:
        """Batches created since the row was written (give or take clock skew) holding exactly
        ``requests`` requests; the caller adopts one only when it is the only candidate."""
        found = []
        for batch in self._client.messages.batches.list(limit=100):
            created = batch.created_at.timestamp()
            if created < created_after - _CLOCK_SKEW:
                break  # listed newest first
            counts = batch.request_counts
            total = (
                counts.processing
                + counts.succeeded
                + counts.errored
                + counts.canceled
                + counts.expired
            )
            if total == requests:
                found.append(str(batch.id))
        return found


def _status(batch: Any) -> BatchStatus:
    counts = batch.request_counts
    return BatchStatus(
        status=str(batch.processing_status),
        ended=batch.processing_status == "ended",
        counts={
            "processing": counts.processing,
            "succeeded": counts.succeeded,
            "errored": counts.errored,
            "canceled": counts.canceled,
            "expired": counts.expired,
        },
    )
