"""The OpenAI Batch API (and compatible servers): a JSONL file of chat requests, then a batch.

A batch is an uploaded file (purpose ``batch``) of at most 50,000 request lines and 200 MB,
run on ``/v1/chat/completions`` within a 24 h window. Its replies come back in an output file
and its failed lines (including ``batch_expired`` / ``batch_cancelled`` ones) in an error file,
both matched to items by ``custom_id``. Each batch carries our own batch id in its metadata,
which is how a batch created by a process that died before storing the id is found again.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from judgecards.providers.base import CompletionRequest
from judgecards.providers.batch_api import BatchStatus, Outcome, OutcomeState
from judgecards.providers.openai import OpenAIProvider

__all__ = ["OpenAIBatches"]

ENDPOINT = "/v1/chat/completions"
METADATA_KEY = "judgecards_batch"
# A line's error code when the batch ended before the request ran.
_UNRUN: dict[str, OutcomeState] = {"batch_expired": "expired", "batch_cancelled": "canceled"}
_ENDED = {"completed", "failed", "expired", "cancelled"}


class OpenAIBatches:
    """Files + batches through the judge's own OpenAI client (its key, URL and transport)."""

    max_requests = 50_000
    max_bytes = 200 * 1024 * 1024

    def __init__(self, provider: OpenAIProvider) -> None:
        self._provider = provider
        self._client: Any = provider.sync_client()

    def entry(self, custom_id: str, request: CompletionRequest) -> bytes:
        body = self._provider.request_body(request)
        line = {"custom_id": custom_id, "method": "POST", "url": ENDPOINT, "body": body}
        return json.dumps(line, ensure_ascii=False).encode() + b"\n"

    def create(
        self, entries: Sequence[bytes], *, job_id: str, uploaded: Callable[[str], None]
    ) -> str:
        data = b"".join(entries)
        file = self._client.files.create(file=(f"{job_id}.jsonl", data), purpose="batch")
        uploaded(file.id)
        batch = self._client.batches.create(
            input_file_id=file.id,
            endpoint=ENDPOINT,
            completion_window="24h",
            metadata={METADATA_KEY: job_id},
        )
        return str(batch.id)

    def retrieve(self, batch_id: str) -> BatchStatus:
        return _status(self._client.batches.retrieve(batch_id))

    def cancel(self, batch_id: str) -> BatchStatus:
        return _status(self._client.batches.cancel(batch_id))

    def results(self, batch_id: str, status: BatchStatus) -> Iterator[Outcome]:
        for file_id in (status.output_file_id, status.error_file_id):
            if not file_id:
                continue
            # Read line by line: a batch's output file may be hundreds of megabytes.
            with self._client.files.with_streaming_response.content(file_id) as response:
                for number, line in enumerate(response.iter_lines(), start=1):
                    if line.strip():
                        yield self._outcome(json.loads(line), file_id, number)

    def _outcome(self, line: dict[str, Any], file_id: str, number: int) -> Outcome:
        custom_id = str(line.get("custom_id"))
        response = line.get("response") or {}
        error = line.get("error")
        if error:
            code = str(error.get("code") or "")
            said = f"{code}: {error.get('message') or ''}".strip(": ")
            return Outcome(custom_id, _UNRUN.get(code, "errored"), error=said)
        if response.get("status_code") == 200:
            body = response.get("body")
            try:
                completion = self._provider.completion_from_body(body)
            except ValueError as problem:  # pydantic's ValidationError is a ValueError
                where = f"line {number} of file {file_id}"
                return Outcome(
                    custom_id, "errored", error=f"unreadable reply at {where}: {problem}"
                )
            return Outcome(custom_id, "succeeded", completion=completion)
        body = response.get("body") or {}
        detail = body.get("error", body) if isinstance(body, dict) else body
        message = detail.get("message") if isinstance(detail, dict) else detail
        return Outcome(custom_id, "errored", error=f"HTTP {response.get('status_code')}: {message}")

    def find(self, job_id: str, *, created_after: float, requests: int) -> list[str]:
        """Batches whose metadata names ``job_id`` (newest first, as the API lists them)."""
        found = []
        for batch in self._client.batches.list(limit=100):
            if (batch.metadata or {}).get(METADATA_KEY) == job_id:
                found.append(str(batch.id))
            if batch.created_at < created_after:
                break  # listed newest first: older batches cannot be ours
        return found


def _status(batch: Any) -> BatchStatus:
    counts = batch.request_counts
    failure = None
    if batch.status == "failed" and batch.errors and batch.errors.data:
        failure = "; ".join(
            f"line {e.line}: {e.code}: {e.message}" if e.line else f"{e.code}: {e.message}"
            for e in batch.errors.data[:5]
        )
    return BatchStatus(
        status=str(batch.status),
        ended=batch.status in _ENDED,
        counts={
            "total": counts.total,
            "completed": counts.completed,
            "failed": counts.failed,
        }
        if counts
        else {},
        output_file_id=batch.output_file_id,
        error_file_id=batch.error_file_id,
        failure=failure,
    )
