"""Submit items to a provider's batch API: the same first request as live, half the price.

Every item is prepared exactly as `Judge.score_many` prepares it (same key, same first request,
same refusals), and nothing is uploaded until every request line of the submission has been
built and sized, so a bad input costs nothing. Items the store already holds are not sent;
items whose first reply is in the response cache are judged from it at once (no call); items
waiting in a batch not yet collected are not sent twice.

Each provider batch is written to the database as ``submitting`` (with all its items) before
the create call and gets the provider's id right after: `submit_batch` never returns a batch
that is not stored. While the create call runs, the row names this process (a claim,
`judgecards.batch.claims`), so a collector running meanwhile does not take it for a create
call that never reported back. Submissions over a provider's per-batch limits (requests,
bytes) are split.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from judgecards.batch.claims import Claims
from judgecards.batch.repository import BatchRepository
from judgecards.judging import Judge, PreparedItem
from judgecards.providers.batch_adapters import batch_api_for
from judgecards.providers.batch_api import BatchAPI, BatchError
from judgecards.redaction import redact

__all__ = ["BatchJob", "SubmittedBatch", "judge_settings", "submit_batch"]


@dataclass(frozen=True)
class SubmittedBatch:
    """One provider batch of a submission: our id, the provider's, and its request count."""

    id: str
    provider_batch_id: str
    requests: int


@dataclass(frozen=True)
class BatchJob:
    """What one `submit_batch` call did.

    Attributes:
        submission: the id naming all of its batches (``judgecards batch collect ID``); None
            when nothing needed sending.
        batches: the provider batches created (one unless the limits split it).
        items: items given.
        submitted: sent in ``batches``.
        stored: already judged (no call).
        cached: judged now from the response cache (no call).
        waiting: already in a batch not yet collected (not sent again).
        refused: inputs that cannot be judged, stored as ``input`` error records as a live
            run stores them.
    """

    submission: str | None
    card: str
    model: str
    batches: tuple[SubmittedBatch, ...]
    items: int
    submitted: int
    stored: int
    cached: int
    waiting: int
    refused: int

    def as_text(self) -> str:
        """A short report: what was sent where, and what was not sent and why."""
        lines = [
            f"{self.items} item(s) for {self.card} on {self.model}: {self.submitted} submitted, "
            f"{self.stored} already stored, {self.cached} judged from the response cache, "
            f"{self.waiting} already waiting in a batch, {self.refused} refused (input errors)"
        ]
        for batch in self.batches:
            lines.append(
                f"  batch {batch.id} = {batch.provider_batch_id} ({batch.requests} request(s))"
            )
        if self.submission:
            lines.append(f"submission {self.submission}")
        return "\n".join(lines)


def judge_settings(judge: Judge, cards_dirs: Sequence[str] = ()) -> dict[str, Any]:
    """What rebuilds an equivalent judge later (``judgecards batch collect``): never a key."""
    provider: Any = judge.provider
    return {
        "max_attempts": judge.max_attempts,
        "max_input_chars": judge.max_input_chars,
        "cards_dirs": [str(path) for path in cards_dirs],
        "base_url": getattr(provider, "base_url", None),
        "timeout": getattr(provider, "timeout", None),
        "output_mode": judge.output_mode,  # how replies are asked for: re-asks ask the same way
    }


def submit_batch(
    judge: Judge,
    items: Iterable[Mapping[str, Any]],
    *,
    max_requests: int | None = None,
    max_bytes: int | None = None,
    cards_dirs: Sequence[str] = (),
) -> BatchJob:
    """Send ``items`` through ``judge``'s provider's batch API; see the module docstring.

    ``max_requests`` / ``max_bytes`` lower the provider's per-batch limits (OpenAI 50,000
    lines or 200 MB, Anthropic 100,000 requests or 256 MB). ``cards_dirs`` is stored so that
    ``judgecards batch collect`` can load the card again.

    Raises:
        BatchError: a single request is over the byte limit (nothing sent), or a create call
            failed (the batches created before it stay stored and collectable).
        ProviderConfigError: the judge's provider has no batch API (mock, offline).
    """
    if judge.offline:
        raise BatchError("an offline judge cannot submit a batch: it makes no calls")
    if judge.budget is not None:
        # A cap stops items before they start; a batch is paid for as a whole once sent.
        raise BatchError("max_cost caps live runs: submit batches with a judge without one")
    api = batch_api_for(judge.provider, max_requests=max_requests, max_bytes=max_bytes)
    repo = BatchRepository(judge.store)
    given = refused = 0
    prepared: dict[str, PreparedItem] = {}
    stored: set[str] = set()
    for item in judge.prepare(items, record_refusals=True):  # refusals stored as live
        given += 1
        if item.state == "refused":
            refused += 1
        elif item.state == "stored":
            stored.add(item.key)
        else:
            prepared.setdefault(item.key, item)
    waiting = repo.in_open_batches(prepared)
    entries, from_cache, refused = _entries(judge, api, prepared, waiting, refused)
    parts = _split(entries, api)  # raises before anything is sent
    if from_cache:
        judge.score_many(from_cache)  # answered from the response cache: no call
    submission = f"jcs-{uuid.uuid4().hex[:12]}" if parts else None
    batches: list[SubmittedBatch] = []
    if submission is not None:
        with Claims(repo) as claims:  # each row names this process while its create call runs
            batches = [
                _create(judge, api, repo, submission, number, part, cards_dirs, claims.owner)
                for number, part in enumerate(parts, start=1)
            ]
    return BatchJob(
        submission=submission,
        card=judge.card.ref,
        model=judge.model,
        batches=tuple(batches),
        items=given,
        submitted=sum(b.requests for b in batches),
        stored=len(stored),
        cached=len(from_cache),
        waiting=len(waiting),
        refused=refused,
    )


_Entry = tuple[PreparedItem, bytes]


def _entries(
    judge: Judge,
    api: BatchAPI,
    prepared: Mapping[str, PreparedItem],
    waiting: Mapping[str, str],
    refused: int,
) -> tuple[list[_Entry], list[Mapping[str, Any]], int]:
    entries: list[_Entry] = []
    from_cache: list[Mapping[str, Any]] = []
    for key, item in prepared.items():
        if key in waiting:
            continue
        # The item's data may break the card: then the live path's error record is stored
        # for it (no call is made: the run stops before its first request).
        item = judge.classify(item, record_refusal=True)
        if item.state == "refused":
            refused += 1
        elif item.state == "cached":
            from_cache.append(item.source)
        else:
            assert item.request is not None
            entries.append((item, api.entry(key, item.request)))
    return entries, from_cache, refused


def _split(entries: Sequence[_Entry], api: BatchAPI) -> list[list[_Entry]]:
    """Consecutive parts within the per-batch request and byte limits."""
    parts: list[list[_Entry]] = []
    current: list[_Entry] = []
    size = 0
    for item, entry in entries:
        if len(entry) > api.max_bytes:
            raise BatchError(
                f"item {item.item_id or item.key}: its request is {len(entry):,} bytes, over "
                f"the batch limit of {api.max_bytes:,}; nothing was submitted"
            )
        if current and (len(current) >= api.max_requests or size + len(entry) > api.max_bytes):
            parts.append(current)
            current, size = [], 0
        current.append((item, entry))
        size += len(entry)
    if current:
        parts.append(current)
    return parts


def _create(  # noqa: PLR0917  one batch of a submission, and who owns it
    judge: Judge,
    api: BatchAPI,
    repo: BatchRepository,
    submission: str,
    number: int,
    part: Sequence[_Entry],
    cards_dirs: Sequence[str],
    owner: str,
) -> SubmittedBatch:
    job_id = f"{submission}-{number}"
    repo.add_job(
        {
            "id": job_id,
            "submission": submission,
            "part": number,
            "provider": judge.provider.name,
            "model": judge.model,
            "card": judge.card.ref,
            "card_hash": judge.card.hash,
            "params": judge.params,
            "settings": judge_settings(judge, cards_dirs),
            "state": "submitting",
            "requests": len(part),
            "owner": owner,
        },
        [
            {"custom_id": item.key, "item_id": item.item_id, "inputs": item.inputs}
            for item, _ in part
        ],
    )
    try:
        batch_id = api.create(
            [entry for _, entry in part],
            job_id=job_id,
            uploaded=lambda file_id: repo.update_job(job_id, input_file_id=file_id),
        )
    except Exception as error:
        decision = judge.provider.classify(error)
        if decision is None:
            raise
        status = decision.status
        # A 4xx (429 included) means no batch was created; no answer, a 408 or a 5xx may have
        # created one, which `collect` looks for.
        created_maybe = status is None or status >= 500 or status == 408
        message = redact(str(error))
        repo.update_job(
            job_id,
            state="submitting" if created_maybe else "failed",
            note=f"create call failed: {message}",
            owner=None,
            claimed_at=None,
        )
        known = "; it may exist: `judgecards batch collect` looks for it" if created_maybe else ""
        raise BatchError(
            f"batch {job_id} of submission {submission}: the provider's create call failed "
            f"({message}){known}"
        ) from None
    repo.update_job(
        job_id, state="submitted", provider_batch_id=batch_id, owner=None, claimed_at=None
    )
    return SubmittedBatch(job_id, batch_id, len(part))
