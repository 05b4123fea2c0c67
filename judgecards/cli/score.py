"""``judgecards score``: judge a JSONL file of items, with progress and a closing summary."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import click

from judgecards.cli._cascade import cascade_models, score_cascade
from judgecards.cli._ci_output import CiOutputs, ci_output_options
from judgecards.cli._ci_runs import score_run
from judgecards.cli._common import (
    ErrorBudget,
    cards_dir_option,
    command_judge,
    db_option,
    finish_run,
    input_limit,
    max_errors_option,
    max_input_chars_option,
    mock_banner,
    oversized_inputs,
    prices_option,
    warn_if_uncalibrated,
)
from judgecards.cli._judge_output import judge_output, judge_output_options
from judgecards.cli._output import OutputFile
from judgecards.cli._progress import for_judge, reporting
from judgecards.cli._rate import budget_lines, finish_budget, rate_judge_options, rate_options
from judgecards.cli._rubric import rubric_options, rubric_policy
from judgecards.cli._score_run import ScoreTally, stream_to_file
from judgecards.judging import check_items


@click.command()
@click.option("--card", "card_ref", required=True, help="Card as NAME or NAME@VERSION.")
@click.option(
    "--model",
    default=None,
    help="provider:model, e.g. openai:gpt-4o, anthropic:claude-sonnet-5-5, mock:judge "
    "(or --cascade).",
)
@click.option(
    "--input",
    "input_path",
    required=True,
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="JSONL: one object per line with 'id' and the card's inputs.",
)
@click.option(
    "--output",
    "output_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="JSONL of results, in input order.",
)
@click.option("--concurrency", default=8, show_default=True, type=click.IntRange(1, 1024))
@click.option(
    "--max-attempts",
    default=3,
    show_default=True,
    type=click.IntRange(1, 20),
    help="Judge replies per item, re-asks included.",
)
@click.option(
    "--no-cache", is_flag=True, help="Call the provider even for items already judged or cached."
)
@click.option(
    "--base-url", default=None, help="Server URL (else OPENAI_BASE_URL / ANTHROPIC_BASE_URL)."
)
@click.option("--timeout", default=60.0, show_default=True, type=float, help="Seconds per request.")
@click.option(
    "--top-logprobs",
    type=click.IntRange(0, 20),
    default=None,
    help="Ask for this many alternatives per token, so scores get G-Eval probabilities (and "
    "--guarantee a confidence per item); 0 turns it off. Default: the card's.",
)
@click.option(
    "--guarantee",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=None,
    help="Let a judge decide an item only where its agreement with people is guaranteed to be "
    "at least this (e.g. 0.85), from the labels stored for it; the rest go to people (an audit).",
)
@click.option(
    "--cascade",
    default=None,
    metavar="M1,M2,...",
    help="Judge models, cheapest first, instead of --model (needs --guarantee): an item goes to "
    "the next one when the current one is not trusted on it.",
)
@click.option(
    "--delta",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.1,
    show_default=True,
    help="With --guarantee: allowed probability, per judge, that its guarantee fails.",
)
@max_input_chars_option
@prices_option
@rate_options
@judge_output_options
@click.option(
    "--plan",
    is_flag=True,
    help="Render every prompt, estimate its tokens and print the projected cost (live and "
    "batch), then stop: no call is made and nothing is judged.",
)
@click.option(
    "--batch",
    "use_batch",
    is_flag=True,
    help="Submit the items to the provider's batch API (OpenAI Batch, Anthropic Message "
    "Batches: half price, results within 24 h) instead of judging them now; prints the batch "
    "ids and the commands that collect them and write --output.",
)
@rubric_options
@max_errors_option
@ci_output_options
@db_option
@cards_dir_option
def score(
    card_ref: str,
    model: str | None,
    input_path: Path,
    output_path: Path,
    concurrency: int,
    max_attempts: int,
    no_cache: bool,
    base_url: str | None,
    timeout: float,
    top_logprobs: int | None,
    guarantee: float | None,
    cascade: str | None,
    delta: float,
    max_input_chars: int,
    prices: Any,
    rpm: float | None,
    tpm: float | None,
    max_cost: float | None,
    output_mode: str | None,
    max_tokens: int | None,
    plan: bool,
    use_batch: bool,
    thresholds: dict[str, float],
    weights: dict[str, float],
    primary: str | None,
    criteria_path: Path | None,
    max_errors: ErrorBudget,
    junit: Path | None,
    summary_md: Path | None,
    output_format: str,
    db: Path,
    cards_dirs: tuple[Path, ...],
) -> None:
    """Judge every item of a JSONL file with one card and model.

    The card, every line of the input and the output path are checked before the database is
    opened or any call is made. Results are stored as each item finishes, so an interrupted run
    picks up where it stopped when started again.

    With --guarantee T, each item is decided by the first model of --cascade (cheapest first;
    else --model alone) whose agreement with people is guaranteed to be at least T on it, from
    the labels stored for that card version and model; a model that cannot meet T is not
    called, and items no model is trusted on become an audit for people. A model without
    enough labels stops the run before any call (exit 2), naming what to label.

    Exit status: 0 every item has a valid judgment (or the error records are within
    --max-errors); 1 more error records than that, or items not judged under --max-cost;
    2 a usage or input error (or a --max-cost on a model with no price), nothing judged;
    130 interrupted (what was saved is printed).
    """
    from judgecards.cards import load_card

    # Cheap checks first: nothing below opens the database or calls the provider.
    models = cascade_models(model, cascade, guarantee)
    card = load_card(card_ref, cards_dir=list(cards_dirs) or None)
    required = [name for name, spec in card.spec.inputs.items() if spec.required]
    limit = input_limit(max_input_chars)
    items = check_items(  # every line checked now; read again, one at a time, when judged
        input_path,
        required=required,
        required_by=card.ref,
        check=oversized_inputs({name: name for name in card.spec.inputs}, limit),
    )
    output = OutputFile(output_path)
    output.check()
    ci = CiOutputs(junit, summary_md, output_format)
    ci.check(others=[output_path, db])

    options: dict[str, Any] = {"timeout": timeout, **judge_output(output_mode, max_tokens)}
    options.update(rate_judge_options(rpm, tpm, max_cost))
    if max_cost is not None and (guarantee is not None or use_batch):
        raise click.UsageError("--max-cost caps one model's live run: no --guarantee/--batch")
    if prices is not None:
        options["prices"] = prices
    if base_url:
        options["base_url"] = base_url
    if top_logprobs is not None:
        options["top_logprobs"] = top_logprobs or None
    rubric = rubric_policy(card, thresholds, weights, primary, criteria_path)
    if rubric is not None:
        if use_batch:  # its collector rebuilds the judge from what was stored, without a policy
            raise click.UsageError(
                "--batch judges with the card's default rubric policy: "
                "leave out --threshold/--weight/--primary/--criteria"
            )
        options["rubric"] = rubric
    if plan and guarantee is not None:
        raise click.UsageError("--plan projects one model's run: leave out --guarantee/--cascade")
    if use_batch and (plan or guarantee is not None):
        raise click.UsageError("--batch submits one model's run: leave out --plan/--guarantee")
    if guarantee is not None:
        results, run, elapsed = score_cascade(
            card,
            models,
            list(items),
            target=guarantee,
            delta=delta,
            db=db,
            concurrency=concurrency,
            judge_options={
                "cache": not no_cache,
                "max_attempts": max_attempts,
                "max_input_chars": limit,
                **options,
            },
        )
        output.write_lines(
            (result.model_dump_json() for result in results),
            note=f"; the results are stored in {db}: run the same command again to write the "
            "file without new calls",
        )
        click.echo(ScoreTally.of(results).summary(elapsed, output_path))
        click.echo(run.summary())
        ci.emit(score_run(results, subject=f"{card.ref} on {' -> '.join(models)}", seconds=elapsed))
        errors = Counter(str(r.error_kind) for r in results if r.status == "error")
        finish_run(errors, len(results), max_errors)
        return
    model = models[0]
    with command_judge(
        card,
        model,
        db=db,
        plan=plan,
        cache=not no_cache,
        max_attempts=max_attempts,
        max_input_chars=limit,
        **options,
    ) as judge:
        if plan:
            click.echo(judge.plan(items).as_text())
            return
        if use_batch:
            from judgecards.batch.submit import submit_batch
            from judgecards.cli.batch import submitted_text

            job = submit_batch(judge, items, cards_dirs=[str(path) for path in cards_dirs])
            click.echo(submitted_text(job, db))
            return
        mock_banner(model)
        warn_if_uncalibrated(judge)
        click.echo(f"Judging {len(items)} items with {card.ref} on {model} (db {db})", err=True)

        started = time.perf_counter()
        # Results go to the output as they come; the tally keeps each one only for CI outputs.
        tally = ScoreTally(keep_results=ci.junit is not None or ci.summary is not None or ci.github)
        with reporting(for_judge(judge, total=len(items)), where=str(db)) as progress:
            stream_to_file(
                judge,
                items,
                output,
                tally,
                total=len(items),
                concurrency=concurrency,
                progress=progress,
                note=f"; the results are stored in {db}: run the same command "
                "again to write the file without new calls",
            )
        elapsed = time.perf_counter() - started

    from judgecards.cli.estimate import corrected_lines  # labels exist: corrected numbers first

    for line in corrected_lines(db, card.ref, model):
        click.echo(line)
    click.echo(tally.summary(elapsed, output_path))
    click.echo("\n".join(budget_lines(judge)))
    click.echo(tally.verbosity())
    if tally.results is not None:
        ci.emit(score_run(tally.results, subject=f"{card.ref} on {model}", seconds=elapsed))
    mock_banner(model)
    finish_run(tally.error_kinds, tally.count, max_errors)
    finish_budget(judge)
