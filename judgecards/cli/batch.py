"""``judgecards batch submit | list | status | collect | cancel``: provider batches stored in
the database.

Batches are submitted by ``judgecards batch submit ITEMS`` or ``batch submit A B --card
pairwise`` (or the old ``score --batch`` and ``compare --batch``, or
`judgecards.batch.submit_batch`); each is stored with the judge it was built for, so these commands rebuild
that judge (card version, model, call parameters, base URL; the API key from the environment)
and refuse when the card has changed since. ``collect --wait`` blocks with a progress line per
poll; killed, it resumes where it stopped on the next run and never submits again (only
``--resubmit`` creates a batch, for the items a batch left unanswered).
"""

from __future__ import annotations

import inspect
from collections import Counter, defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from judgecards.cli._common import (
    EXIT_ERRORS,
    ErrorBudget,
    cards_dir_option,
    command_judge,
    connection_options,
    db_option,
    finish_run,
    max_errors_option,
    max_input_chars_option,
    prices_option,
)
from judgecards.cli._judge_output import judge_output_options
from judgecards.cli._units import units_argument

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from judgecards.batch.collect import Retry
    from judgecards.batch.repository import JobRow
    from judgecards.batch.submit import BatchJob
    from judgecards.cards import Card
    from judgecards.cli._units import JoinedPairs
    from judgecards.judging import CheckedItems, Judge
    from judgecards.storage import Store

__all__ = ["batch", "judge_for", "submit_items", "submit_units", "submitted_text"]


def _base_url_option(function: Any) -> Any:
    return click.option(
        "--base-url",
        default=None,
        help="Server URL (else the one the batch was submitted to, else the provider's).",
    )(function)


def submitted_text(job: BatchJob, db: Path) -> str:
    """What a submission did and the commands that come next."""
    lines = [job.as_text()]
    if job.submission:
        lines.append(
            f"next: judgecards batch collect {job.submission} --db {db} --wait\n"
            "then: judgecards score (or compare) on the same items, card and model writes "
            "--output from the stored results (no new call)"
        )
    else:
        lines.append(
            "nothing to submit: judgecards score (or compare) on the same items, card and model "
            "writes --output"
        )
    return "\n".join(lines)


@click.group()
def batch() -> None:
    """Provider batches (OpenAI Batch API, Anthropic Message Batches): submit, list, status,
    collect, cancel."""


def submit_items(  # noqa: PLR0913  keyword-only options of the command
    paths: Sequence[Path],
    card_ref: str,
    model: str,
    *,
    cards_dirs: tuple[Path, ...],
    db: Path,
    max_attempts: int,
    no_cache: bool,
    base_url: str | None,
    timeout: float,
    settings: dict[str, Any],
    max_input_chars: int,
    prices: Any,
) -> None:
    """Check the card and every line of ITEMS (or of A and B), then submit them and say what
    comes next (``batch submit``, and the old ``score --batch``)."""
    from judgecards.cli._score_run import judge_options
    from judgecards.cli._units import card_and_units

    card, units = card_and_units(card_ref, cards_dirs, paths, max_input_chars)
    options = judge_options(
        card,
        no_cache=no_cache,
        max_attempts=max_attempts,
        max_input_chars=max_input_chars,
        base_url=base_url,
        timeout=timeout,
        settings=settings,
        prices=prices,
    )
    submit_units(card, model, units, db=db, cards_dirs=cards_dirs, options=options)


def submit_units(
    card: Card,
    model: str,
    units: CheckedItems | JoinedPairs,
    *,
    db: Path,
    cards_dirs: tuple[Path, ...],
    options: Mapping[str, Any],
) -> None:
    """Submit checked items, or both orders of every pair, to the batch API of ``model`` and say
    what comes next (``batch submit``, and the old ``compare --batch``)."""
    from judgecards.batch.pairs import submit_pairs
    from judgecards.batch.submit import submit_batch
    from judgecards.cli._units import JoinedPairs

    dirs = [str(path) for path in cards_dirs]
    decided = None
    with command_judge(card, model, db=db, plan=False, **options) as judge:
        if isinstance(units, JoinedPairs):
            units.warn_unmatched()
            job, decided = submit_pairs(judge, units.pairs, cards_dirs=dirs)
        else:
            job = submit_batch(judge, units, cards_dirs=dirs)
    click.echo(submitted_text(job, db))
    if decided is not None:
        click.echo(f"comparisons already decidable and written: {len(decided)}")


@batch.command("submit")
@units_argument
@click.option("--card", "card_ref", required=True, help="Card as NAME or NAME@VERSION.")
@click.option(
    "--model",
    required=True,
    help="Judge model as provider:model (openai: or anthropic:, whose batch APIs are used).",
)
@click.option(
    "--max-attempts",
    default=3,
    show_default=True,
    type=click.IntRange(1, 20),
    help="Judge replies per item, re-asks included.",
)
@click.option("--no-cache", is_flag=True, help="Submit even the items already judged or cached.")
@connection_options
@judge_output_options
@max_input_chars_option
@prices_option
@db_option
@cards_dir_option
def submit(  # noqa: PLR0913, PLR0917  click passes one parameter per option
    paths: tuple[Path, ...],
    card_ref: str,
    model: str,
    max_attempts: int,
    no_cache: bool,
    base_url: str | None,
    timeout: float,
    settings: dict[str, Any],
    max_input_chars: int,
    prices: Any,
    db: Path,
    cards_dirs: tuple[Path, ...],
) -> None:
    """Submit every item of ITEMS, or both orders of every pair of A B, to the provider's batch
    API (OpenAI Batch, Anthropic Message Batches: half price, results within 24 h) instead of
    judging them now.

    ITEMS is a JSONL file of items; A B are two outputs files joined on 'id' as `judgecards
    compare` joins them, for a pairwise card (--card pairwise). The card and every line are
    checked first; what is already stored is not sent. Prints the batch ids and the commands
    that collect them and write the results (`batch collect` writes each pair's comparison once
    both its orders are stored).
    """
    submit_items(
        paths,
        card_ref,
        model,
        cards_dirs=cards_dirs,
        db=db,
        max_attempts=max_attempts,
        no_cache=no_cache,
        base_url=base_url,
        timeout=timeout,
        settings=settings,
        max_input_chars=max_input_chars,
        prices=prices,
    )


def _open(db: Path) -> Store:
    from judgecards.errors import StoreError
    from judgecards.storage import Store

    if not db.exists():
        raise StoreError(f"no database at {db}: nothing was submitted there", path=db)
    return Store(db)


def judge_for(store: Store, job: JobRow, base_url: str | None = None) -> Judge:
    """A judge like the one that submitted ``job`` (same card version, model and parameters)."""
    from judgecards.batch.collect import job_matches
    from judgecards.judging import Judge
    from judgecards.providers.batch_api import BatchError

    settings = job.settings
    accepted = inspect.signature(Judge).parameters
    options: dict[str, Any] = {
        name: value for name, value in job.params.items() if name in accepted and name != "rubric"
    }
    for name in ("max_attempts", "max_input_chars", "timeout", "output_mode"):
        if settings.get(name) is not None or name == "max_input_chars":
            options[name] = settings.get(name)
    url = base_url or settings.get("base_url")
    if url:
        options["base_url"] = url
    judge = Judge(
        job.card, job.model, db=store, cards_dir=settings.get("cards_dirs") or None, **options
    )
    if not job_matches(judge, job):
        judge.close()
        raise BatchError(
            f"batch {job.id} was built with {job.card} ({job.card_hash[:19]}) on {job.model} "
            f"and {job.params}; the card or its settings differ now ({judge.card.hash[:19]}, "
            f"{judge.params}): restore that card version (--cards-dir as when submitted) to "
            "collect it"
        )
    return judge


def _groups(jobs: list[JobRow]) -> list[list[JobRow]]:
    """Batches that one judge can serve together."""
    groups: dict[str, list[JobRow]] = defaultdict(list)
    for job in jobs:
        groups[repr((job.card, job.card_hash, job.model, job.params))].append(job)
    return list(groups.values())


def _selected(store: Store, selector: str | None, *, open_only: bool) -> list[JobRow]:
    from judgecards.batch.repository import BatchRepository
    from judgecards.providers.batch_api import BatchError

    jobs = BatchRepository(store).jobs(selector)
    if selector and not jobs:
        raise BatchError(f"no batch or submission {selector!r} in {store.path}")
    if open_only:
        jobs = [job for job in jobs if job.state not in ("collected", "canceled", "failed")]
    return jobs


@batch.command("list")
@db_option
def list_command(db: Path) -> None:
    """Every stored batch, oldest first, with its items' states. Makes no call."""
    from judgecards.batch.repository import BatchRepository

    with _open(db) as store:
        repo = BatchRepository(store)
        jobs = repo.jobs()
        if not jobs:
            click.echo(f"no batches in {db}")
        for job in jobs:
            states = ", ".join(f"{s} {n}" for s, n in sorted(repo.item_states(job.id).items()))
            click.echo(
                f"{job.id}  {job.provider_batch_id or '-'}  {job.card} on {job.model}  "
                f"{job.state} ({job.provider_status or 'not retrieved'})  items: {states}  "
                f"{job.created_at[:19]}"
            )
            if job.note:
                click.echo(f"    note: {job.note}")


@batch.command()
@click.argument("selector", required=False, metavar="[ID]")
@_base_url_option
@db_option
def status(selector: str | None, base_url: str | None, db: Path) -> None:
    """Ask the provider how batches not yet collected are doing (all, or submission/batch ID).

    A batch stored as 'submitting' has no provider id: the process that created it stopped
    before the create call returned. Its provider batch is looked for (OpenAI: by our id in
    the batch's metadata; Anthropic: by creation time and request count) and adopted when
    exactly one matches.
    """
    from judgecards.batch.claims import claim_in_force, describe_holder
    from judgecards.batch.collect import progress_line, refresh
    from judgecards.batch.repository import BatchRepository
    from judgecards.providers.batch_adapters import batch_api_for

    with _open(db) as store:
        jobs = _selected(store, selector, open_only=True)
        if not jobs:
            click.echo("no batch is waiting to be collected")
            return
        repo = BatchRepository(store)
        rows = []
        for group in _groups(jobs):
            with judge_for(store, group[0], base_url) as judge:
                api = batch_api_for(judge.provider)
                rows += [refresh(api, repo, job) for job in group]
        click.echo(progress_line(rows))
        for job in rows:
            if job.state == "submitting" and claim_in_force(job.owner, job.claimed_at):
                click.echo(f"{job.id}: {describe_holder(str(job.owner))} is making its create call")
            elif job.state == "submitting":
                click.echo(f"{job.id}: {job.note or 'the create call has not reported back'}")
            elif job.state == "ended":
                click.echo(f"{job.id}: ended; `judgecards batch collect {job.id}` stores it")


@batch.command()
@click.argument("selector", required=False, metavar="[ID]")
@click.option("--wait", is_flag=True, help="Poll until every batch has ended (with backoff).")
@click.option(
    "--resubmit",
    "retry",
    flag_value="resubmit",
    default=None,
    help="Send items a batch left unanswered (errored, expired, canceled) in a new batch.",
)
@click.option(
    "--live",
    "retry",
    flag_value="live",
    help="Judge items a batch left unanswered now, with ordinary calls.",
)
@click.option(
    "--poll",
    default=5.0,
    show_default=True,
    type=click.FloatRange(0.01, 3600),
    help="Seconds before the first re-poll; each next wait is 1.5 times longer (at most 300).",
)
@click.option("--concurrency", default=8, show_default=True, type=click.IntRange(1, 1024))
@max_errors_option
@_base_url_option
@db_option
def collect(  # noqa: PLR0917  click passes one parameter per option
    selector: str | None,
    wait: bool,
    retry: Retry | None,
    poll: float,
    concurrency: int,
    max_errors: ErrorBudget,
    base_url: str | None,
    db: Path,
) -> None:
    """Store what batches (all, or submission/batch ID) have answered, as live results are.

    Invalid replies are re-asked live, as in a live run. Afterwards, the same ``judgecards
    score`` command without --batch writes the output file with no new call.

    Another collector may run at once (another process, or the server): items it is working on
    are left to it and named on a line (with --wait: waited for), so nothing is paid for twice.

    A submission whose create call never reported back (its process stopped) and for which the
    provider lists no batch is reported, not awaited: it would never end.

    Exit status: 0 the results stored have no error records (or within --max-errors); 1 more
    error records than that, or a batch the provider never created (see above); 2 a usage, database or provider error; 130 interrupted (what was
    stored stays stored: collect again).
    """
    from judgecards.batch.collect import BatchCollection, collect_batch

    with _open(db) as store:
        jobs = _selected(store, selector, open_only=retry is None)
        if not jobs:
            click.echo("no batch is waiting to be collected")
            return
        total = BatchCollection()
        for group in _groups(jobs):
            with judge_for(store, group[0], base_url) as judge:
                found = collect_batch(
                    judge,
                    selector,
                    wait=wait,
                    retry=retry,
                    poll=poll,
                    concurrency=concurrency,
                    progress=lambda line: click.echo(line, err=True),
                )
            total.jobs += found.jobs
            total.results += found.results
            total.waiting += found.waiting
            total.live += found.live
            total.comparisons += found.comparisons
            total.resubmitted = found.resubmitted or total.resubmitted
            total.unsent.update(found.unsent)
            for holder, n in found.busy.items():  # left to another collector running now
                total.busy[holder] = total.busy.get(holder, 0) + n
            for state, n in found.left.items():
                total.left[state] = total.left.get(state, 0) + n
        click.echo(total.as_text())
    errors = Counter(str(r.error_kind) for r in total.results if r.status == "error")
    finish_run(errors, len(total.results), max_errors)
    if total.unsent:  # batches that will never end: said above, and not a success
        raise click.exceptions.Exit(EXIT_ERRORS)


@batch.command()
@click.argument("selector", metavar="ID")
@_base_url_option
@db_option
def cancel(selector: str, base_url: str | None, db: Path) -> None:
    """Ask the provider to stop the batches of submission/batch ID. Requests already answered
    stay answered: collect them afterwards."""
    from judgecards.batch.collect import refresh
    from judgecards.batch.repository import BatchRepository
    from judgecards.providers.batch_adapters import batch_api_for

    with _open(db) as store:
        jobs = _selected(store, selector, open_only=True)
        repo = BatchRepository(store)
        for group in _groups(jobs):
            with judge_for(store, group[0], base_url) as judge:
                api = batch_api_for(judge.provider)
                for job in group:
                    if job.provider_batch_id is None:
                        job = refresh(api, repo, job)  # one more look for its provider batch
                    if job.provider_batch_id is None:
                        # Nothing at the provider to stop: give its items back.
                        repo.update_job(
                            job.id,
                            state="canceled",
                            note="no provider batch "
                            "found; canceled here, its items may be submitted again",
                        )
                        click.echo(f"{job.id}: no provider batch found; canceled here")
                        continue
                    state = api.cancel(str(job.provider_batch_id))
                    repo.update_job(job.id, provider_status=state.status, counts=state.counts)
                    click.echo(f"{job.id} ({job.provider_batch_id}): {state.status}")
        if not jobs:
            click.echo("no batch is waiting: nothing to cancel")
