"""Claims on batch items: two collectors of the same batches never pay twice for one item.

Collecting can cost money: an invalid batch reply is re-asked live, an item a batch left is
judged live or sent in a new batch. Two collectors may run at once (two ``batch collect
--wait`` processes, a server and the CLI, two threads), so before doing any of that for an item
a collector claims it in the database (`BatchRepository.claim_items`, one ``BEGIN IMMEDIATE``
transaction: one of them gets it). An item claimed by another running collector is left to it
and reported (`Claims.busy`); ``wait`` looks again after the next poll.

A batch row is claimed the same way by the process making its create call (`submit_batch`),
so that a collector running meanwhile does not take the row for a create call that never
reported back.

A claim names its holder as ``host:pid:token`` (a token per collection or submission, so two
threads of one process are two holders) and is renewed every quarter of the lease by a
background thread while the holder runs. It ends with the item's next state, or when its holder
stops (released on the way out, even on an error). A holder killed without releasing (SIGKILL,
power loss) strands nothing: its claims are taken over at once when it ran on this host and its
process is gone (or a zombie), else once they are older than the lease. On Windows, and across
hosts, only the lease applies.

The time claims are stamped with and measured against comes from one ``clock`` (Unix seconds,
``time.time`` by default), injectable so a test can age a claim without waiting for it.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType

from judgecards.batch.repository import BatchRepository, ItemRow
from judgecards.errors import StoreError

__all__ = [
    "CLAIM_LEASE",
    "Claims",
    "claim_in_force",
    "claim_stamp",
    "describe_holder",
    "holder_gone",
]

CLAIM_LEASE = 120.0  # seconds a claim outlives its holder's last sign of life
_log = logging.getLogger(__name__)


def holder_gone(owner: str) -> bool:
    """Whether the collector named ``owner`` certainly stopped: it ran on this host and no
    process has its pid any more. Unknown (another host, Windows, unreadable): not gone."""
    parts = owner.split(":")
    if len(parts) < 3 or os.name == "nt" or ":".join(parts[:-2]) != socket.gethostname():
        return False
    try:
        pid = int(parts[-2])
    except ValueError:
        return False
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return True
    except OSError:  # exists, owned by someone else
        return False
    try:  # killed but not yet reaped by its parent: a zombie (Linux) is gone too
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


def claim_stamp(seconds: float) -> str:
    """A ``claimed_at`` value for the instant ``seconds`` (Unix time): ISO 8601 in UTC, to the
    microsecond, so stamps compare as text in the database."""
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="microseconds")


def claim_in_force(
    owner: str | None,
    claimed_at: str | None,
    lease: float = CLAIM_LEASE,
    clock: Callable[[], float] = time.time,
) -> bool:
    """Whether a claim still binds others: its holder is neither gone nor silent for ``lease``
    seconds of ``clock``."""
    if owner is None or claimed_at is None:
        return False
    return claimed_at >= claim_stamp(clock() - lease) and not holder_gone(owner)


def describe_holder(owner: str) -> str:
    """A claim's holder, for a person: "pid 123 on host-name"."""
    parts = owner.split(":")
    return f"pid {parts[-2]} on {':'.join(parts[:-2])}" if len(parts) >= 3 else owner


class Claims:
    """One collection's claims: taken per batch and state, renewed while it runs, released
    when it ends (use as a context manager). ``clock`` stamps and ages them; the renewals
    themselves come every quarter of ``lease`` in real seconds."""

    def __init__(
        self,
        repo: BatchRepository,
        lease: float = CLAIM_LEASE,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if lease <= 0:
            raise ValueError("claim_lease must be positive")
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.lease = lease
        self.clock = clock
        self.busy: Counter[str] = Counter()  # items `take` left to other holders
        self._repo = repo
        self._stop = threading.Event()
        self._beat = threading.Thread(target=self._renew, name="batch-claims", daemon=True)

    def __enter__(self) -> Claims:
        self._beat.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._beat.join()
        try:
            self._repo.release_claims(self.owner)
        except StoreError:
            if error is None:
                raise
            # The error that ended the collection is the one to report; the claims lapse
            # with the lease.
            _log.warning("could not release batch claims of %s", self.owner)

    def _renew(self) -> None:
        while not self._stop.wait(self.lease / 4):
            try:
                self._repo.renew_claims(self.owner, claimed_at=claim_stamp(self.clock()))
            except StoreError as error:  # the next beat tries again; the lease is 4 beats
                _log.warning("could not renew batch item claims: %s", error)

    def take(self, job_id: str, states: Sequence[str]) -> list[ItemRow]:
        """Claim the items of one batch in ``states`` that no running collector holds; those
        it holds are counted in `busy`."""
        now = self.clock()
        mine, others = self._repo.claim_items(
            job_id,
            states,
            self.owner,
            claimed_at=claim_stamp(now),
            stale_before=claim_stamp(now - self.lease),
            gone=holder_gone,
        )
        for owner, (count, _) in others.items():
            self.busy[owner] += count
        return mine
