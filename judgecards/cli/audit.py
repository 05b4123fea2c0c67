"""``judgecards audit``: spot-check judge drift against human labels, and re-run anchor sets.

Exit codes: 0 ok (gate passed), 1 a gate failed, 2 an error (bad input, unknown audit, ...),
which `judgecards.cli` prints as ``Error: ...`` for every command.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import click

from judgecards.cli._ci_output import CiOutputs, ci_output_options
from judgecards.cli._ci_runs import audit_run
from judgecards.cli._common import cards_dir_option, connection_options, db_option, mock_banner
from judgecards.cli._progress import Stages

_FORMAT = click.Choice(["csv", "jsonl"])
_KAPPA = click.FloatRange(-1.0, 1.0)  # Cohen's kappa is at most 1: a gate above it always fails


def _audit(db: Path, cards_dirs: tuple[Path, ...] = (), resamples: int = 2000) -> Any:
    from calibration.audits import Audit
    from judgecards.errors import StoreError

    if not db.is_file():  # every audit command works on stored results: never start a new file
        raise StoreError(
            f"cannot open database {db}: no such file (pass --db with the judged results)",
            path=db,
            operation="open the database",
        )
    return Audit(db, cards_dir=list(cards_dirs) or None, n_resamples=resamples)


def _resamples_option(function: Any) -> Any:
    return click.option(
        "--resamples",
        default=2000,
        show_default=True,
        type=click.IntRange(100, 100_000),
        help="Bootstrap resamples per confidence interval.",
    )(function)


@click.group()
def audit() -> None:
    """Spot-check a judge against humans over time: sample, ingest, report, rerun.

    \b
    1. judgecards audit sample --card reference --model openai:gpt-4o --n 50 --strategy stratified
    2. (humans fill the sheet's verdict / score columns)
    3. judgecards audit ingest audit-1.csv --labeler alice
    4. judgecards audit report --card reference      # exit 1 when the gate fails
    """


@audit.command("sample")
@click.option("--card", required=True, help="NAME (newest version with results) or NAME@VERSION.")
@click.option("--model", required=True, help="The judge model whose results to spot-check.")
@click.option(
    "--n", "n", default=50, show_default=True, type=click.IntRange(1), help="Sample size."
)
@click.option(
    "--since",
    help="Only results judged at or after this ISO date or date-time (UTC unless it says).",
)
@click.option(
    "--strategy",
    type=click.Choice(["uniform", "stratified", "uncertainty"]),
    help="uniform (default); stratified: keep the verdict mix (largest remainder); uncertainty: "
    "oversample results the judge was less sure of (G-Eval probability), each with a known "
    "inclusion probability that agreement and kappa weight back.",
)
@click.option(
    "--stratify",
    type=click.Choice(["verdict"]),
    help="Same as --strategy stratified.",
)
@click.option(
    "--seed",
    type=int,
    help="Seed of the random sample of results to label (default: a random one, recorded with "
    "the audit).",
)
@click.option(
    "--sheet",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Labelling sheet to write (default: audit-<id>.csv).",
)
@click.option(
    "--format", "format_", type=_FORMAT, help="Sheet format (default: from the extension)."
)
@db_option
@cards_dir_option
def sample_command(  # noqa: PLR0913, PLR0917  click passes one parameter per option
    card: str,
    model: str,
    n: int,
    since: str | None,
    strategy: str | None,
    stratify: str | None,
    seed: int | None,
    sheet: Path | None,
    format_: str | None,
    db: Path,
    cards_dirs: tuple[Path, ...],
) -> None:
    """Draw a reproducible spot-check of stored results and write a labelling sheet.

    The sheet has each item's inputs and empty label columns; it never shows the judge's
    verdict or scores.
    """
    with _audit(db, cards_dirs) as api:
        drawn = api.sample(
            card=card,
            model=model,
            n=n,
            since=since,
            stratify=stratify,
            seed=seed,
            strategy=strategy,
        )
        target = sheet or Path(f"audit-{drawn.audit.id}.{format_ or 'csv'}")
        path = api.write_sheet(drawn.audit.id, target, format=format_)
        record = drawn.audit
        click.echo(
            f"Audit #{record.id}: {record.n} of {drawn.population} results of {record.card} by {record.model} "
            f"(seed {record.seed}{', since ' + record.since if record.since else ''})"
        )
        if drawn.audit.stratify:
            click.echo("  " + "  ".join(f"{k} {d}/{p}" for k, (p, d) in drawn.strata.items()))
        items = api.repository.audit_items(record.id)
        pis = [i.inclusion_probability for i in items if i.inclusion_probability is not None]
        if strategy == "uncertainty" and pis:
            click.echo(
                f"  inclusion probabilities {min(pis):.3g} to {max(pis):.3g} (higher where the judge "
                "was less sure); agreement and kappa weight each item by 1/probability"
            )
        for note in drawn.notes:
            click.echo(f"  note: {note}", err=True)
        click.echo(f"Sheet: {path}")
        click.echo(
            "Fill in, per row: "
            + "; ".join(f"{name} ({spec.describe()})" for name, spec in drawn.fields.items())
            + "; note (optional)."
        )
        click.echo(f"Then: judgecards audit ingest {path} --labeler NAME")


@audit.command("sheet")
@click.argument("audit_id", type=int)
@click.option(
    "--sheet",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Where to write it (default: audit-<id>.csv).",
)
@click.option(
    "--format", "format_", type=_FORMAT, help="Sheet format (default: from the extension)."
)
@db_option
@cards_dir_option
def sheet_command(
    audit_id: int, sheet: Path | None, format_: str | None, db: Path, cards_dirs: tuple[Path, ...]
) -> None:
    """Write an audit's labelling sheet again (e.g. one per labeler)."""
    with _audit(db, cards_dirs) as api:
        path = api.write_sheet(
            audit_id, sheet or Path(f"audit-{audit_id}.{format_ or 'csv'}"), format=format_
        )
        click.echo(f"Sheet: {path}")


@audit.command("ingest")
@click.argument("sheet", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--labeler", required=True, help="Who filled the sheet.")
@click.option(
    "--audit", "audit_id", type=int, help="The audit (default: the sheet's audit_id column)."
)
@click.option(
    "--skip-invalid", is_flag=True, help="Store the valid rows and report the invalid ones."
)
@click.option(
    "--replace",
    is_flag=True,
    help="Replace the labels this labeler gave in this audit before (a corrected sheet).",
)
@click.option(
    "--format", "format_", type=_FORMAT, help="Sheet format (default: from the extension)."
)
@db_option
@cards_dir_option
def ingest_command(  # noqa: PLR0917  click passes one parameter per option
    sheet: Path,
    labeler: str,
    audit_id: int | None,
    skip_invalid: bool,
    replace: bool,
    format_: str | None,
    db: Path,
    cards_dirs: tuple[Path, ...],
) -> None:
    """Store a filled labelling sheet's labels under its audit.

    Rows left empty are skipped; any invalid row stores nothing (exit 2) unless --skip-invalid.
    """
    stages = Stages("audit ingest")
    with _audit(db, cards_dirs) as api:
        with stages.stage(f"reading and storing the labels of {sheet.name}"):
            report = api.ingest(
                sheet,
                labeler=labeler,
                audit_id=audit_id,
                skip_invalid=skip_invalid,
                replace=replace,
                format=format_,
            )
        summary = None
        if report.labels_written:
            with stages.stage(f"measuring agreement on audit #{report.audit_id}"):
                summary = api.summary(report.audit_id)
        replaced = f" ({report.labels_replaced} replaced)" if report.labels_replaced else ""
        click.echo(
            f"Audit #{report.audit_id}: stored {report.labels_written} label(s){replaced} by {labeler} from "
            f"{report.rows_written} of {report.rows} row(s); {report.unlabeled} row(s) left unlabelled"
        )
        if report.errors:
            click.echo(f"Skipped {len(report.errors)} problem(s) (--skip-invalid):", err=True)
            for problem in report.errors:
                click.echo(f"  {problem}", err=True)
        if summary is not None and summary.kappa is not None:
            click.echo(
                f"  {summary.primary}: kappa {summary.kappa}  (judgecards audit report for more)"
            )


@audit.command("report")
@click.option("--card", help="NAME (every version) or NAME@VERSION.")
@click.option("--model", help="Only audits of this judge model.")
@click.option(
    "--min-kappa",
    default=0.6,
    show_default=True,
    type=_KAPPA,
    help="Fail when the newest audit's kappa is below this (-1 to 1).",
)
@click.option(
    "--baseline",
    type=int,
    help="Audit to compare the newest with (default: the first labelled one).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")
@click.option(
    "--show",
    default=10,
    show_default=True,
    type=click.IntRange(0),
    help="Disagreements to list per audit.",
)
@click.option(
    "--positive",
    help="The positive verdict of the pass/fail view (default: fail; not_match for match "
    "scales; A for pairwise).",
)
@click.option(
    "--min-tpr",
    type=click.FloatRange(0.0, 1.0),
    help="Readiness: TPR's lower bound must reach this (e.g. 0.8). Reported, not gated.",
)
@click.option(
    "--min-tnr",
    type=click.FloatRange(0.0, 1.0),
    help="Readiness: TNR's lower bound must reach this (e.g. 0.8). Reported, not gated.",
)
@click.option(
    "--with-revisions",
    is_flag=True,
    help="Use labels people corrected after seeing the judge's answer (default: blind labels).",
)
@_resamples_option
@ci_output_options
@db_option
@cards_dir_option
def report_command(  # noqa: PLR0913, PLR0917  click passes one parameter per option
    card: str | None,
    model: str | None,
    min_kappa: float,
    baseline: int | None,
    as_json: bool,
    show: int,
    positive: str | None,
    min_tpr: float | None,
    min_tnr: float | None,
    with_revisions: bool,
    resamples: int,
    junit: Path | None,
    summary_md: Path | None,
    output_format: str,
    db: Path,
    cards_dirs: tuple[Path, ...],
) -> None:
    """Agreement and kappa per audit over time, and a gate for CI or cron.

    Exits 1 when, for some card and judge model, the newest labelled audit's kappa (on the
    verdict; quadratic-weighted on a score axis for cards without one) is below --min-kappa or
    undefined, or significantly below the baseline audit: the 95% bootstrap interval of the
    difference lies entirely below zero.

    A two-valued primary field (pass/fail, match vs the rest, A/B without ties) is also shown
    as TPR and TNR with Wilson intervals, a readiness line in plain words against --min-tpr and
    --min-tnr, and the judge's positive rate corrected by Rogan–Gladen beside PPI.
    """
    ci = CiOutputs(junit, summary_md, output_format)
    ci.check(as_json=as_json, others=[db])
    what = f"measuring agreement and kappa per audit ({resamples} bootstrap resamples)"
    with _audit(db, cards_dirs, resamples) as api, Stages("audit report").stage(what):
        result = api.report(
            card=card,
            model=model,
            min_kappa=min_kappa,
            baseline=baseline,
            positive=positive,
            min_tpr=min_tpr,
            min_tnr=min_tnr,
            revisions=with_revisions,
        )
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2, default=str))
    else:
        click.echo(result.as_text(max_disagreements=show))
    subject = " ".join(f"--{k} {v}" for k, v in (("card", card), ("model", model)) if v)
    ci.emit(audit_run(result, subject=subject or "every card and model"))
    sys.exit(0 if result.passed else 1)


@audit.command("rerun")
@click.option("--anchor-set", "anchor_set", required=True, help="The anchor set to re-judge.")
@click.option("--model", required=True, help="provider:model to judge with.")
@click.option("--card", help="NAME or NAME@VERSION (default: the set's card, newest version).")
@click.option(
    "--min-kappa",
    default=0.6,
    show_default=True,
    type=_KAPPA,
    help="Fail when this run's kappa is below this (-1 to 1).",
)
@click.option(
    "--max-flip-rate",
    type=click.FloatRange(0, 1),
    help="Fail when more than this share of verdicts flipped.",
)
@click.option("--concurrency", default=8, show_default=True, type=click.IntRange(1, 1024))
@connection_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@_resamples_option
@db_option
@cards_dir_option
def rerun_command(  # noqa: PLR0913, PLR0917  click passes one parameter per option
    anchor_set: str,
    model: str,
    card: str | None,
    min_kappa: float,
    max_flip_rate: float | None,
    concurrency: int,
    base_url: str | None,
    timeout: float,
    as_json: bool,
    resamples: int,
    db: Path,
    cards_dirs: tuple[Path, ...],
) -> None:
    """Re-judge an anchor set with the current card and MODEL, store it as a new audit, and
    report the flip rate and change in kappa against the previous run.

    Exits 1 when kappa is below --min-kappa (or undefined) or, with --max-flip-rate, when more
    verdicts flipped than that.
    """
    options: dict[str, Any] = {"timeout": timeout}
    if base_url:
        options["base_url"] = base_url
    mock_banner(model)
    with _audit(db, cards_dirs, resamples) as api:
        summary = api.rerun(anchor_set, model=model, card=card, concurrency=concurrency, **options)
    failures: list[str] = []
    kappa = summary.kappa
    if kappa is None or math.isnan(kappa.value):
        failures.append("kappa is undefined")
    elif kappa.value < min_kappa:
        failures.append(f"kappa {kappa.value:.3f} < {min_kappa:.2f}")
    drift = summary.drift
    if max_flip_rate is not None and drift is not None and drift.flip_rate.value > max_flip_rate:
        failures.append(f"flip rate {drift.flip_rate.value:.3f} > {max_flip_rate:.2f}")
    if as_json:
        data = {**summary.to_dict(), "passed": not failures, "failures": failures}
        click.echo(json.dumps(data, indent=2, default=str))
    else:
        click.echo(summary.as_text(max_disagreements=20))
        click.echo(("FAIL: " + "; ".join(failures)) if failures else "PASS")
    mock_banner(model)
    sys.exit(1 if failures else 0)


@audit.command("list")
@click.option("--card", help="NAME or NAME@VERSION.")
@click.option("--model", help="Only audits of this judge model.")
@db_option
def list_command(card: str | None, model: str | None, db: Path) -> None:
    """Every audit, oldest first, with its cached headline."""
    from calibration.audits import calibrations

    with _audit(db) as api:
        records = api.audits(card=card, model=model)
        latest_ids = {status.audit_id for status in calibrations(api.store)}
    if not records:
        click.echo("no audits")
        return
    for record in records:
        kappa, n_labeled = record.kappa, record.n_labeled
        headline = (
            f"kappa {kappa:.3f}"
            if kappa is not None
            else ("kappa undefined" if n_labeled else "not labelled")
        )
        latest = "  (latest calibration)" if record.id in latest_ids else ""
        origin = (
            f"anchor {record.anchor_set}"
            if record.kind == "rerun"
            else "cascade"
            if record.kind == "escalated"
            else f"seed {record.seed}"
        )
        click.echo(
            f"#{record.id:<4} {record.created_at:%Y-%m-%d}  {record.kind:<6} {record.card:<14} {record.model:<24} "
            f"n={record.n:<4} {origin:<18} {headline} (n={n_labeled}){latest}"
        )


@audit.group("anchor")
def anchor() -> None:
    """Anchor sets: fixed, human-labelled items re-judged by `audit rerun`."""


@anchor.command("create")
@click.argument("name")
@click.option(
    "--from-audit",
    "from_audit",
    required=True,
    type=int,
    help="The labelled audit whose items to freeze.",
)
@click.option("--description", help="What the set is for.")
@db_option
def anchor_create_command(name: str, from_audit: int, description: str | None, db: Path) -> None:
    """Freeze the human-labelled items of an audit as anchor set NAME."""
    with _audit(db) as api:
        created = api.create_anchor(name, from_audit=from_audit, description=description)
    click.echo(
        f"Anchor set {created.name}: {created.n} items of {created.card} from audit #{created.source_audit}"
    )
    click.echo(
        f"Re-run it with: judgecards audit rerun --anchor-set {created.name} --model PROVIDER:MODEL"
    )


@anchor.command("list")
@db_option
def anchor_list_command(db: Path) -> None:
    """Every anchor set."""
    with _audit(db) as api:
        sets = api.anchors()
    if not sets:
        click.echo("no anchor sets")
    for item in sets:
        click.echo(
            f"{item.name:<20} {item.card:<14} {item.n:>4} items  from audit #{item.source_audit}  {item.description or ''}"
        )
