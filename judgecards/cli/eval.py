"""``judgecards eval CONFIG``: tiered evaluation from a YAML or TOML config.

The config's keys and its loader are in `judgecards.tiered.config`; the pipeline in
`judgecards.tiered`. This module is the command: check everything, run, print and write.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import click

from judgecards.cli._ci_output import CiOutputs, ci_output_options
from judgecards.cli._ci_runs import eval_run
from judgecards.cli._common import (
    ErrorBudget,
    db_option,
    finish_run,
    input_limit,
    max_errors_option,
    max_input_chars_option,
    mock_banner,
    plan_database,
    prices_option,
    warn_if_uncalibrated,
)
from judgecards.cli._judge_output import judge_output_options
from judgecards.cli._output import OutputFile
from judgecards.cli._progress import for_judge, reporting
from judgecards.cli._rate import budget_lines, finish_budget, rate_judge_options, rate_options


@click.command("eval")
@click.argument(
    "config_path", metavar="CONFIG", type=click.Path(dir_okay=False, exists=True, path_type=Path)
)
@click.option(
    "--output",
    "output_path",
    default=None,
    type=click.Path(dir_okay=False, path_type=Path),
    help="JSONL with one row per item, in input order: outcome, deciding tier, reasons, metric values, judge result.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the report (per tier and per item) as JSON instead of a table.",
)
@click.option(
    "--model",
    default=None,
    help="Judge model as provider:model for every judge tier, replacing the config's "
    "(e.g. run a config written for mock:judge on openai:gpt-4o).",
)
@max_input_chars_option
@prices_option
@judge_output_options
@rate_options
@click.option(
    "--plan",
    is_flag=True,
    help="Print the judge tier's projected cost (live and batch) as if every item reached it "
    "(an upper bound: survivors are known only once the tiers run), then stop: no tier runs, "
    "no call is made.",
)
@max_errors_option
@ci_output_options
@db_option
def eval_command(  # noqa: PLR0912, PLR0913, PLR0915, PLR0917  click passes one parameter per option; modes: item 5
    config_path: Path,
    output_path: Path | None,
    as_json: bool,
    model: str | None,
    max_input_chars: int,
    prices: Any,
    settings: dict[str, Any],
    rpm: float | None,
    tpm: float | None,
    max_cost: float | None,
    plan: bool,
    max_errors: ErrorBudget,
    junit: Path | None,
    summary_md: Path | None,
    output_format: str,
    db: Path,
) -> None:
    """Tiered evaluation: format checks, then metrics, then a judge on the survivors only.

    CONFIG is a YAML or TOML file naming the items (JSONL) and the tiers; see `judgecards.tiered.config`
    or the README for its keys. Each tier sees only the items the earlier tiers passed, so every
    item a cheap check decides is a judge call saved. The config, every item line and the output
    path are checked before the database is opened or any call is made.

    Exit status: 0 no item ended as an error (failing a tier is an outcome, not an error), or the
    errors are within --max-errors; 1 more errors than that, or items the judge tier did not
    start under --max-cost; 2 a bad config, items file or output path (or a --max-cost on a
    judge model with no price), nothing evaluated; 130 interrupted (what the judge saved is
    printed).
    """
    from judgecards.storage import Store
    from judgecards.tiered.config import build_pipeline, check_fields, load_config, read_items

    config, source = load_config(config_path)
    items_path = Path(config.items)
    if not items_path.is_absolute():
        items_path = config_path.parent / items_path
    items = read_items(items_path, source)
    limit = input_limit(max_input_chars)  # a longer judged input makes that item an error
    output = OutputFile(output_path) if output_path is not None else None
    if output is not None:
        output.check()
    ci = CiOutputs(junit, summary_md, output_format)
    ci.check(as_json=as_json, others=[output_path, db])
    # Every judge tier's settings from the command line (they override the config's).
    overrides = {
        **settings,
        **rate_judge_options(rpm, tpm, max_cost),
    }
    # Every check, card and judge setting is validated by building the pipeline against a
    # scratch in-memory store first: a bad config must not create or migrate the database.
    with Store(":memory:") as scratch:
        trial = build_pipeline(
            config,
            source,
            db=scratch,
            model=model,
            max_input_chars=limit,
            prices=prices,
            judge_output=overrides,
            stand_in=plan,
        )
        try:
            check_fields(config, source, trial, items, items_path)
        finally:
            if trial.judge is not None:
                trial.judge.judge.close()
    if plan:  # the judges' provider is the offline stand-in: nothing can be called
        with plan_database(db, plan) as database:
            pipeline = build_pipeline(
                config,
                source,
                db=database,
                model=model,
                max_input_chars=limit,
                prices=prices,
                judge_output=overrides,
                stand_in=plan,
            )
            try:
                projected = pipeline.plan(items)
                click.echo(
                    json.dumps(projected.to_dict(), indent=2) if as_json else projected.as_text()
                )
            finally:
                if pipeline.judge is not None:
                    pipeline.judge.judge.close()
        return
    pipeline = build_pipeline(
        config,
        source,
        db=db,
        model=model,
        max_input_chars=limit,
        prices=prices,
        judge_output=overrides,
        stand_in=plan,
    )
    judge = pipeline.judge
    model = judge.judge.model if judge is not None else None
    if judge is not None and model:
        mock_banner(model)
        warn_if_uncalibrated(judge.judge)
    stages = " -> ".join(stage.name for stage in pipeline.tiers)
    click.echo(
        f"Evaluating {len(items)} items from {items_path}: {stages}"
        + (f" (db {db})" if judge else ""),
        err=True,
    )

    started = time.perf_counter()
    try:
        if judge is None:
            report = pipeline.run(items)
        else:
            with reporting(for_judge(judge.judge, "judge tier"), where=str(db)) as progress:
                report = pipeline.run(items, progress=progress)
    finally:
        if judge is not None:
            judge.judge.close()
    elapsed = time.perf_counter() - started

    if output is not None:
        output.write_lines(
            (json.dumps(outcome.to_dict()) for outcome in report.items),
            note=f"; the judge's results are stored in {db}: run the same command again to "
            "write the file without new calls",
        )
    from judgecards.limits import run_cost, run_cost_text

    judged = [outcome.judge for outcome in report.items if outcome.judge is not None]
    if as_json:
        data = {
            "config": str(config_path),
            "items_file": str(items_path),
            "output": str(output_path) if output_path else None,
            "elapsed_s": round(elapsed, 3),
            **report.to_dict(),
        }
        if judged:
            # This run's: a batch's result served from the store carries its bill.
            data["cost_usd"] = run_cost(r.cost_usd for r in judged if not r.cached)
        if judge is not None and (cap := judge.judge.budget) is not None:
            spend = cap.stats()
            data["budget"] = {"cap_usd": spend.cap, "spent_usd": spend.spent}
        click.echo(json.dumps(data, indent=2))
    else:
        click.echo(report.as_text())
        where = (
            f" -> {output_path}"
            if output_path is not None
            else " (--output FILE keeps one row per item)"
        )
        click.echo(f"\n{len(items)} items in {elapsed:.1f}s{where}")
        if judged:
            costs = [r.cost_usd for r in judged if not r.cached]
            served = sum(1 for r in judged if r.cached)
            mock = bool(model and model.startswith("mock:"))
            click.echo(f"cost:      {run_cost_text(costs, cached=served, mock=mock)}")
        if judge is not None:
            click.echo("\n".join(budget_lines(judge.judge)))
    ci.emit(eval_run(report, subject=config_path.name, seconds=elapsed))
    if model:
        mock_banner(model)
    errors = Counter(
        f"{outcome.tier}: {outcome.judge.error_kind}"
        if outcome.judge is not None and outcome.judge.error_kind
        else outcome.tier
        for outcome in report.items
        if outcome.outcome == "error"
    )
    finish_run(errors, len(report.items), max_errors)
    if judge is not None:
        finish_budget(judge.judge)
