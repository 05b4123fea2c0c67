"""What the batch code needs from a provider's batch API, whichever provider it is.

Two implementations, each over the official SDK's client of the judge's own provider (same key,
base URL and HTTP client): `judgecards.providers.openai_batches` (files + batches) and
`judgecards.providers.anthropic_batches` (Message Batches). Everything else (what to submit, what
is stored, how replies become results) is written once above this seam.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from judgecards.errors import JudgecardsError
from judgecards.providers.base import Completion, CompletionRequest

__all__ = ["BatchAPI", "BatchError", "BatchStatus", "Outcome", "OutcomeState"]


class BatchError(JudgecardsError):
    """A batch could not be submitted, found or collected; the message says which and why."""


OutcomeState = Literal["succeeded", "errored", "expired", "canceled"]


@dataclass(frozen=True)
class BatchStatus:
    """A provider batch as last retrieved.

    Attributes:
        status: the provider's own word (OpenAI ``validating`` ... ``completed``; Anthropic
            ``in_progress`` / ``canceling`` / ``ended``).
        ended: no request of it will change any more (results, if any, can be read).
        counts: the provider's request counts by state.
        output_file_id / error_file_id: OpenAI's result files (None elsewhere or not yet).
        failure: why the whole batch failed, when it did (OpenAI validation errors).
    """

    status: str
    ended: bool
    counts: dict[str, int] = field(default_factory=dict)
    output_file_id: str | None = None
    error_file_id: str | None = None
    failure: str | None = None


@dataclass(frozen=True)
class Outcome:
    """One request's end: a reply (``succeeded``) or why there is none."""

    custom_id: str
    state: OutcomeState
    completion: Completion | None = None
    error: str | None = None


class BatchAPI(Protocol):
    """One provider's batch endpoints. Limits are per batch; larger submissions are split."""

    max_requests: int
    max_bytes: int

    def entry(self, custom_id: str, request: CompletionRequest) -> bytes:
        """One request as the provider's batch wants it, serialised (its size counts): the
        body of the live call for ``request`` (`SDKProvider.request_body`)."""
        ...

    def create(
        self, entries: Sequence[bytes], *, job_id: str, uploaded: Callable[[str], None]
    ) -> str:
        """Send one batch; returns the provider's batch id. ``uploaded(file_id)`` is called
        as soon as an input file exists (OpenAI), so it is stored before the create call."""
        ...

    def retrieve(self, batch_id: str) -> BatchStatus:
        """The batch's current status and counts."""
        ...

    def results(self, batch_id: str, status: BatchStatus) -> Iterator[Outcome]:
        """Every request's outcome once the batch has ended (requests with no line are not
        listed: the caller decides from the batch status)."""
        ...

    def cancel(self, batch_id: str) -> BatchStatus:
        """Ask the provider to stop the batch (requests already answered stay answered)."""
        ...

    def find(self, job_id: str, *, created_after: float, requests: int) -> list[str]:
        """Provider batch ids that may be the one a ``submitting`` row's create call made
        before the process stopped (see each implementation for how it matches)."""
        ...
