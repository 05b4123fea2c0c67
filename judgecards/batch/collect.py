"""Collect provider batches: poll their status, and store their replies exactly as live ones.

A batch's reply answers its item's first attempt inside the judge's own re-ask loop
(`Judge.afinish` with ``first=``): the same parse, verdict rules, re-asks (live calls),
result row and response-cache entries as a live run, plus ``via="batch"`` and the batch price
(the provider's batch discount on the batch reply's tokens; re-asks at live prices). So a later
live run of the same items finds them stored and makes no call.

Collection is idempotent and resumable: items move ``submitted`` → ``collected`` one by one as
their result is stored, a batch is ``collected`` once all its items are, and nothing here ever
creates a batch except the explicit ``retry="resubmit"``. A process killed while waiting picks
up where it stopped on the next call. A row left ``submitting`` (the process died during the
create call) is reconciled by listing the provider's batches (`BatchAPI.find`).

Several collectors may run at once: each claims the items it stores, re-asks, resubmits or
judges live before paying for anything (`judgecards.batch.claims`), so each item is paid for
once; items another running collector holds are reported (`BatchCollection.busy`) and, with
``wait``, looked at again after the next poll.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal

from judgecards.batch.claims import CLAIM_LEASE, Claims, claim_in_force, describe_holder
from judgecards.batch.pairs import write_comparisons
from judgecards.batch.repository import BatchRepository, ItemRow, JobRow
from judgecards.batch.submit import BatchJob, submit_batch
from judgecards.judging import Judge, PreparedItem
from judgecards.providers.base import Completion
from judgecards.providers.batch_adapters import batch_api_for
from judgecards.providers.batch_api import BatchAPI, BatchError, BatchStatus, Outcome, OutcomeState
from judgecards.redaction import redact
from judgecards.storage import JudgeResult

__all__ = [
    "BatchCollection",
    "busy_line",
    "collect_batch",
    "job_matches",
    "progress_line",
    "refresh",
]

Retry = Literal["resubmit", "live"]
_DONE = ("collected", "canceled", "failed")
_LEFT = ("errored", "expired", "canceled")
# Rounds of ``--wait`` in which the provider's list shows no batch for a row left
# ``submitting`` by a process that is gone, before the row is reported instead of awaited:
# a batch that was never created never ends (issue 22 item 13), and a few looks, with the
# backoff between them, allow for a provider whose list lags its create call.
UNFOUND_ROUNDS = 3
# When a batch ended without a line for a request, the batch's own end says what happened.
_UNANSWERED: dict[str, OutcomeState] = {
    "expired": "expired",
    "cancelled": "canceled",
    "canceled": "canceled",
}


@dataclass
class BatchCollection:
    """What one `collect_batch` call found and stored.

    Attributes:
        jobs: the batches looked at, as stored after this call.
        results: results stored by this call (batch replies, and live ones with ``live``).
        waiting: items still in batches that have not ended.
        left: items a batch did not answer (errored, expired, canceled) and not retried, by
            state; ``retry="resubmit"`` or ``"live"`` takes them.
        resubmitted: the new submission made for them (``retry="resubmit"``).
        live: how many were judged live (``retry="live"``).
        comparisons: comparison rows written for ``compare --batch`` pairs whose two orders
            are now both stored.
        busy: items left to another collector that is working on them right now, by holder
            (``host:pid:token``); counted in ``waiting`` or ``left`` too.
        unsent: batches (``{id: items}``) whose create call never reported back and for which
            the provider lists no batch: the process that submitted them stopped before or
            during the call. They are not awaited (they would never end) and not counted in
            ``waiting``; ``judgecards batch cancel ID`` frees their items to be submitted again.
    """

    jobs: list[JobRow] = field(default_factory=list)
    results: list[JudgeResult] = field(default_factory=list)
    waiting: int = 0
    left: dict[str, int] = field(default_factory=dict)
    resubmitted: BatchJob | None = None
    live: int = 0
    comparisons: int = 0
    busy: dict[str, int] = field(default_factory=dict)
    unsent: dict[str, int] = field(default_factory=dict)

    @property
    def finished(self) -> bool:
        """No item waits in a batch and none is left without a result."""
        return self.waiting == 0 and not self.left and not self.unsent

    def as_text(self) -> str:
        ok = sum(1 for r in self.results if r.ok)
        lines = [progress_line(self.jobs)]
        lines.append(
            f"stored {len(self.results)} result(s) this time ({ok} ok, "
            f"{len(self.results) - ok} error records); {self.waiting} item(s) still waiting"
        )
        if self.left:
            parts = ", ".join(f"{state} {n}" for state, n in sorted(self.left.items()))
            lines.append(
                f"not answered by the provider: {parts}; collect again with --resubmit (a new "
                "batch) or --live (judged now) to judge them"
            )
        if self.live:
            lines.append(f"judged live: {self.live} item(s)")
        if self.comparisons:
            lines.append(f"comparisons written: {self.comparisons} pair(s), both orders stored")
        if self.resubmitted is not None:
            lines.append(self.resubmitted.as_text())
        for job_id, n in sorted(self.unsent.items()):
            lines.append(
                f"{job_id}: not awaited: its create call never reported back and the provider "
                f"lists no batch for it ({n} item(s); the process that submitted it stopped "
                f"before or during the call); `judgecards batch cancel {job_id}` frees its "
                "items to be submitted again"
            )
        if self.busy:
            lines.append(
                busy_line(self.busy) + "; this run left them to it: collect again (or "
                "with --wait) to see them stored"
            )
        return "\n".join(lines)


def busy_line(busy: Mapping[str, int]) -> str:
    """Which other collectors hold how many items."""
    holders = ", ".join(f"{describe_holder(owner)}: {n}" for owner, n in sorted(busy.items()))
    return f"{sum(busy.values())} item(s) are being collected by another collector ({holders})"


def job_matches(judge: Judge, job: JobRow) -> bool:
    """Whether ``job`` was submitted by a judge like this one (card version, model, params)."""
    params = json.loads(json.dumps(judge.params, sort_keys=True, default=str))
    return (job.card_hash, job.model, job.params) == (judge.card.hash, judge.model, params)


def progress_line(jobs: Sequence[JobRow]) -> str:
    """One line per poll: each batch's provider status and counts."""
    parts = []
    for job in jobs:
        counts = ", ".join(f"{name} {n}" for name, n in job.counts.items() if n and name != "total")
        status = job.provider_status or ("no provider id yet" if job.state == "submitting" else "?")
        parts.append(f"{job.id} {status}" + (f" ({counts})" if counts else ""))
    ended = sum(1 for job in jobs if job.state in _DONE or job.state == "ended")
    return f"batches {ended}/{len(jobs)} ended: " + "; ".join(parts)


def refresh(
    api: BatchAPI,
    repo: BatchRepository,
    job: JobRow,
    lease: float = CLAIM_LEASE,
    clock: Callable[[], float] = time.time,
) -> JobRow:
    """Retrieve one batch's status from the provider and store it (reconciling a row left
    ``submitting`` first, unless a running process is still making its create call). Returns
    the row as stored now."""
    if job.provider_batch_id is None:
        if claim_in_force(job.owner, job.claimed_at, lease, clock):
            return job  # its create call is under way: it gets its id when that returns
        job = _reconcile(api, repo, job)
        if job.provider_batch_id is None:
            return job
    status = _call(lambda: api.retrieve(str(job.provider_batch_id)), f"retrieve batch {job.id}")
    repo.update_job(
        job.id,
        provider_status=status.status,
        counts=status.counts,
        output_file_id=status.output_file_id,
        error_file_id=status.error_file_id,
        state="ended" if status.ended else "submitted",
        unless_done=True,
        **({"note": status.failure} if status.failure else {}),
    )
    return repo.jobs(job.id)[0]


def collect_batch(  # noqa: PLR0913  public API: keyword-only options
    judge: Judge,
    job: str | None = None,
    *,
    wait: bool = False,
    retry: Retry | None = None,
    poll: float = 5.0,
    max_poll: float = 300.0,
    concurrency: int = 8,
    progress: Callable[[str], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    claim_lease: float = CLAIM_LEASE,
    clock: Callable[[], float] = time.time,
) -> BatchCollection:
    """Store what ``judge``'s batches (all, or those of submission/batch ``job``) answered.

    ``wait`` polls until every batch has ended, every ``poll`` seconds at first and 1.5 times
    longer each time up to ``max_poll``, calling ``progress`` with a status line each round.
    Items a batch did not answer are left (and counted) unless ``retry`` says ``resubmit``
    (one new batch for them, awaited too when waiting) or ``live`` (judged now, normal calls).
    Items another running collector holds are left to it (``wait``: until it is done or gone);
    a holder silent for ``claim_lease`` seconds (of ``clock``, Unix seconds) is taken to be gone
    (`judgecards.batch.claims`).
    """
    repo = BatchRepository(judge.store)
    selected = repo.jobs(job)
    if job and not selected:
        raise BatchError(f"no batch or submission {job!r} in {judge.store.path}")
    jobs = [j for j in selected if job_matches(judge, j)]
    if job and not jobs:
        other = selected[0]
        raise BatchError(
            f"batch {job} was submitted for {other.card} on {other.model} with other settings "
            f"({other.params}); collect it with a judge like that one"
        )
    api = batch_api_for(judge.provider)
    collection = BatchCollection()
    with Claims(repo, claim_lease, clock) as claims:
        _collect(
            judge,
            api,
            repo,
            jobs,
            collection,
            claims,
            wait,
            retry,
            poll,
            max_poll,
            concurrency,
            progress,
            sleep,
        )
    collection.busy = dict(claims.busy)
    collection.jobs = jobs
    collection.comparisons = len(write_comparisons(judge))  # compare --batch pairs now decided
    collection.waiting = sum(
        n
        for j in jobs
        if j.state not in _DONE and j.id not in collection.unsent
        for s, n in repo.item_states(j.id).items()
        if s == "submitted"
    )
    for j in jobs:
        if j.state in _DONE:
            for state, n in repo.item_states(j.id).items():
                if state in _LEFT:
                    collection.left[state] = collection.left.get(state, 0) + n
    return collection


def _collect(  # noqa: PLR0913, PLR0917  collect_batch's state and options (a collector object is the fix)
    judge: Judge,
    api: BatchAPI,
    repo: BatchRepository,
    jobs: list[JobRow],
    collection: BatchCollection,
    claims: Claims,
    wait: bool,
    retry: Retry | None,
    poll: float,
    max_poll: float,
    concurrency: int,
    progress: Callable[[str], None] | None,
    sleep: Callable[[float], None],
) -> None:
    """The polling loop of `collect_batch` (``jobs`` grows with a re-submission)."""
    delay = poll
    retry_left = retry is not None
    unfound: Counter[str] = Counter()  # consecutive rounds without a provider batch, by row
    while True:
        claims.busy.clear()  # what other collectors hold, as of this round
        for index, row in enumerate(jobs):
            if row.state not in _DONE:
                if row.state != "ended":  # an ended batch (its items held elsewhere) stays so
                    row = refresh(api, repo, row, claims.lease, claims.clock)
                if row.state == "ended":
                    collection.results += _ingest(judge, api, repo, row, concurrency, claims)
                elif row.provider_batch_id is None and claim_in_force(
                    row.owner, row.claimed_at, claims.lease, claims.clock
                ):
                    claims.busy[str(row.owner)] += row.requests  # another process creates it
                    unfound.pop(row.id, None)
                elif row.provider_batch_id is None:  # looked for at the provider: not found
                    unfound[row.id] += 1
                jobs[index] = repo.jobs(row.id)[0]
        rounds = UNFOUND_ROUNDS if wait else 1
        collection.unsent = {
            j.id: j.requests
            for j in jobs
            if j.state == "submitting" and j.provider_batch_id is None and unfound[j.id] >= rounds
        }
        open_jobs = [j for j in jobs if j.state not in _DONE and j.id not in collection.unsent]
        if not open_jobs and retry is not None and retry_left:
            added = _retry(judge, repo, jobs, retry, collection, claims)
            retry_left = bool(claims.busy)  # another collector judges some: look again later
            jobs += added
            if added and wait:
                continue
        if progress is not None:
            line = progress_line(jobs)
            progress(line + ("; " + busy_line(claims.busy) if claims.busy else ""))
        if not wait or (not open_jobs and not retry_left):
            break
        sleep(delay)
        delay = min(delay * 1.5, max_poll)


def _call(action: Callable[[], Any], doing: str) -> Any:
    try:
        return action()
    except Exception as error:
        if type(error).__module__.split(".")[0] not in ("openai", "anthropic"):
            raise
        raise BatchError(f"cannot {doing}: {redact(str(error))}") from None


def _reconcile(api: BatchAPI, repo: BatchRepository, job: JobRow) -> JobRow:
    """A row whose create call never reported back: adopt the one provider batch that is
    certainly or most plausibly it, else say why not (the row stays ``submitting``)."""
    created = datetime.fromisoformat(job.created_at).timestamp()
    known = {j.provider_batch_id for j in repo.jobs() if j.provider_batch_id}
    found = [
        batch_id
        for batch_id in _call(
            lambda: api.find(job.id, created_after=created, requests=job.requests),
            f"list the provider's batches to find {job.id}",
        )
        if batch_id not in known
    ]
    if len(found) == 1:
        repo.update_job(
            job.id,
            provider_batch_id=found[0],
            state="submitted",
            note="provider id found by listing the provider's batches",
        )
    else:
        why = "none matches" if not found else f"{len(found)} match ({', '.join(found)})"
        repo.update_job(job.id, note=f"create call did not report back; provider batches: {why}")
    return repo.jobs(job.id)[0]


def _ingest(  # noqa: PLR0917  the collector's state (a collector object is the fix)
    judge: Judge,
    api: BatchAPI,
    repo: BatchRepository,
    job: JobRow,
    concurrency: int,
    claims: Claims,
) -> list[JudgeResult]:
    """Read an ended batch's outcomes and store the result of each item this collector could
    claim (idempotent); the batch is ``collected`` once no item of it waits."""
    waiting = {item.custom_id: item for item in claims.take(job.id, ("submitted",))}
    status = BatchStatus(
        status=str(job.provider_status),
        ended=True,
        counts=job.counts,
        output_file_id=job.output_file_id,
        error_file_id=job.error_file_id,
    )
    outcomes: dict[str, Outcome] = {}
    if waiting and (job.output_file_id or job.error_file_id or job.provider != "openai"):
        for outcome in _call(
            lambda: list(api.results(str(job.provider_batch_id), status)),
            f"read the results of batch {job.id}",
        ):
            if outcome.custom_id in waiting:
                outcomes[outcome.custom_id] = outcome
    unanswered: OutcomeState = _UNANSWERED.get(str(job.provider_status), "errored")
    reason = job.note if job.provider_status == "failed" and job.note else "no result line"
    answered: list[tuple[str, ItemRow, Completion]] = []
    states: dict[str, tuple[str, str | None]] = {}
    for key, row in waiting.items():
        outcome = outcomes.get(key) or Outcome(key, unanswered, error=f"{unanswered}: {reason}")
        if outcome.completion is None:
            states[key] = (outcome.state, outcome.error)
            continue
        answered.append((key, row, outcome.completion))
    given = [
        {**row.inputs, **({"id": row.item_id} if row.item_id is not None else {})}
        for _, row, _ in answered
    ]
    items: list[tuple[PreparedItem, Completion]] = []
    for (key, row, completion), item in zip(answered, judge.prepare(given), strict=True):
        if item.state != "refused" and key in judge.keys_of(item):
            item = replace(item, key=key)  # the old key: submitted before keys named endpoints
        if item.key != key:
            raise BatchError(
                f"batch {job.id}: item {row.item_id or key} no longer has the key it was "
                "submitted under (card or judge settings changed); nothing was stored for it"
            )
        items.append((item, completion))
    repo.set_item_states(job.id, states)
    already = judge.store.finished(item.key for item, _ in items)
    repo.set_item_states(job.id, {key: ("collected", None) for key in already})
    pending = [(item, reply) for item, reply in items if item.key not in already]
    results = asyncio.run(_store_replies(judge, repo, job, pending, concurrency))
    if "submitted" not in repo.item_states(job.id):
        repo.update_job(job.id, state="collected")
    return results


async def _store_replies(
    judge: Judge,
    repo: BatchRepository,
    job: JobRow,
    pending: Sequence[tuple[PreparedItem, Completion]],
    concurrency: int,
) -> list[JudgeResult]:
    stored: list[JudgeResult] = []

    async def work(entry: tuple[PreparedItem, Completion]) -> JudgeResult:
        item, reply = entry
        result = await judge.afinish(
            item,
            reply,
            revise=lambda result: result.model_copy(
                update={"via": "batch", "cost_usd": _batch_cost(judge, result, reply)}
            ),
        )
        repo.set_item_states(job.id, {item.key: ("collected", None)})
        return result

    slots = asyncio.Semaphore(concurrency)

    async def run(entry: tuple[PreparedItem, Completion]) -> None:
        async with slots:
            stored.append(await work(entry))

    tasks = [asyncio.ensure_future(run(entry)) for entry in pending]
    try:
        if tasks:
            await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:  # an authentication failure stops the rest, as in a live run
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    finally:
        await judge.provider.aclose()
    return stored


def _batch_cost(judge: Judge, result: JudgeResult, reply: Completion) -> float | None:
    """The result's live cost less the batch discount on the batch reply's own tokens (prompt
    cache rates included: both providers apply the discount on top of them)."""
    price = judge.prices.lookup(judge.model)
    if result.cost_usd is None or price is None:
        return result.cost_usd
    usage = reply.usage
    batch_part = judge.prices.cost(
        judge.model,
        usage.input_tokens,
        usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
    )
    return result.cost_usd - (batch_part or 0.0) * price.batch_discount


def _retry(  # noqa: PLR0917  the collector's state (a collector object is the fix)
    judge: Judge,
    repo: BatchRepository,
    jobs: Sequence[JobRow],
    retry: Retry,
    collection: BatchCollection,
    claims: Claims,
) -> list[JobRow]:
    """Judge the items ended batches left unanswered (those this collector could claim): in
    one new batch, or live now."""
    left = [
        (job, item)
        for job in jobs
        if job.state == "collected"
        for item in claims.take(job.id, _LEFT)
    ]
    if not left:
        return []
    raw = [
        {**item.inputs, **({"id": item.item_id} if item.item_id is not None else {})}
        for _, item in left
    ]
    if retry == "live":
        results = judge.score_many(raw, concurrency=8)
        collection.results += results
        collection.live += len(results)
        added: list[JobRow] = []
        new_state = "judged_live"
    else:
        settings = left[0][0].settings
        collection.resubmitted = submit_batch(
            judge, raw, cards_dirs=settings.get("cards_dirs") or ()
        )
        submission = collection.resubmitted.submission
        added = repo.jobs(submission) if submission else []
        new_state = "resubmitted"
    for job in {j.id for j, _ in left}:
        repo.set_item_states(
            job, {item.custom_id: (new_state, item.error) for j, item in left if j.id == job}
        )
    return added
