"""``judgecards score ITEMS`` and ``judgecards cascade ITEMS | A B``: judge a JSONL file of
items (a cascade also the pairs of two outputs files), with progress and a closing summary.

One command per way of deciding who judges, each with only the options that mean something for
it, so no mix of options has to be refused by hand: ``score`` judges with one model (or, with
``--plan``, prices that run without making it); ``cascade`` judges down several models, each
trusted only where its stored labels guarantee agreement with people; ``batch submit`` sends the
items to a provider's batch API. They share their option groups (`judgecards.cli._common`,
`_rate`, `_judge_output`, `_rubric`, `_ci_output`). ``score --guarantee/--cascade/--batch``, the
old spellings, still work for one release, hidden, with a deprecation line.
"""

from __future__ import annotations

import functools
import json
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from judgecards.cli._cascade import cascade_models, guarantee_options, score_cascade
from judgecards.cli._ci_output import CiOutputs, ci_output_options
from judgecards.cli._ci_runs import score_run
from judgecards.cli._common import (
    ErrorBudget,
    cards_dir_option,
    command_judge,
    connection_options,
    db_option,
    deprecated,
    finish_run,
    items_argument,
    judge_run_options,
    max_errors_option,
    max_input_chars_option,
    mock_banner,
    prices_option,
    warn_if_uncalibrated,
)
from judgecards.cli._compare_cascade import compare_cascade
from judgecards.cli._judge_output import judge_output_options
from judgecards.cli._output import OutputFile
from judgecards.cli._progress import for_judge, reporting
from judgecards.cli._rate import budget_lines, finish_budget, rate_limit_options, rate_options
from judgecards.cli._rubric import RubricChoice, rubric_options
from judgecards.cli._score_run import ScoreTally, card_and_items, judge_options, stream_to_file
from judgecards.cli._units import JoinedPairs, card_and_units, units_argument

__all__ = ["cascade", "score"]

F = TypeVar("F", bound=Callable[..., Any])

_NOTE = "; the results are stored in {db}: run the same command again to write the file without new calls"


def _card_option(function: F) -> F:
    return click.option("--card", "card_ref", required=True, help="Card as NAME or NAME@VERSION.")(
        function
    )


def _output_option(function: F) -> F:
    return click.option(
        "--output",
        "output_path",
        required=True,
        type=click.Path(dir_okay=False, path_type=Path),
        help="JSONL of results, in input order.",
    )(function)


def _old_modes(function: F) -> F:
    """``score --guarantee/--cascade/--delta/--batch``, hidden: keyword argument ``old_mode``,
    what they asked for (None: none given), after one deprecation line each."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        given = {name: kwargs.pop(f"deprecated_{name}") for name in ("guarantee", "delta", "batch")}
        mode: dict[str, Any] | None = None
        if given["guarantee"] is not None or kwargs["deprecated_cascade"] is not None:
            if given["guarantee"] is not None:
                deprecated("score --guarantee", "judgecards cascade ITEMS --guarantee T")
            mode = {"guarantee": given["guarantee"], "delta": given["delta"] or 0.1}
        elif given["delta"] is not None:
            deprecated("score --delta", "judgecards cascade ITEMS --delta")
        if given["batch"]:
            deprecated("score --batch", "judgecards batch submit ITEMS")
            if mode is not None or kwargs["plan"]:
                raise click.UsageError(
                    "--batch submits one model's run: leave out --plan/--guarantee"
                )
            mode = {"batch": True}
        kwargs["old_mode"] = mode
        return function(*args, **kwargs)

    unit = click.FloatRange(0, 1, min_open=True, max_open=True)
    options = [
        click.option("--guarantee", "deprecated_guarantee", type=unit, hidden=True),
        click.option("--cascade", "deprecated_cascade", hidden=True),
        click.option("--delta", "deprecated_delta", type=unit, hidden=True),
        click.option("--batch", "deprecated_batch", is_flag=True, hidden=True),
    ]
    decorated: Any = wrapper
    for option in reversed(options):
        decorated = option(decorated)
    return decorated  # type: ignore[no-any-return]


@click.command()
@items_argument
@_card_option
@click.option(
    "--model",
    "models",
    multiple=True,
    help="Judge model as provider:model, e.g. openai:gpt-4o, anthropic:claude-sonnet-5-5, "
    "mock:judge.",
)
@_output_option
@click.option(
    "--plan",
    is_flag=True,
    help="Render every prompt, estimate its tokens and print the projected cost (live and "
    "batch), then stop: no call is made and nothing is judged.",
)
@judge_run_options("item")
@connection_options
@judge_output_options
@rubric_options
@max_input_chars_option
@prices_option
@rate_options
@max_errors_option
@ci_output_options
@db_option
@cards_dir_option
@_old_modes
def score(  # noqa: PLR0913, PLR0917  click passes one parameter per option
    items_path: Path,
    card_ref: str,
    models: tuple[str, ...],
    output_path: Path,
    plan: bool,
    concurrency: int,
    max_attempts: int,
    no_cache: bool,
    base_url: str | None,
    timeout: float,
    settings: dict[str, Any],
    rubric: RubricChoice | None,
    max_input_chars: int,
    prices: Any,
    rpm: float | None,
    tpm: float | None,
    max_cost: float | None,
    max_errors: ErrorBudget,
    junit: Path | None,
    summary_md: Path | None,
    output_format: str,
    db: Path,
    cards_dirs: tuple[Path, ...],
    deprecated_cascade: str | None,
    old_mode: dict[str, Any] | None,
) -> None:
    """Judge every item of ITEMS (JSONL: one object per line with 'id' and the card's inputs)
    with one card and model.

    The card, every line of ITEMS and the output path are checked before the database is
    opened or any call is made. Results are stored as each item finishes, so an interrupted run
    picks up where it stopped when started again. To judge down several models, each trusted
    only where people agree with it, see `judgecards cascade`; to judge at half price within
    24 h, `judgecards batch submit`.

    Exit status: 0 every item has a valid judgment (or the error records are within
    --max-errors); 1 more error records than that, or items not judged under --max-cost;
    2 a usage or input error (or a --max-cost on a model with no price), nothing judged;
    130 interrupted (what was saved is printed).
    """
    if old_mode is not None and "guarantee" in old_mode:
        if plan or max_cost is not None:
            raise click.UsageError(
                "--guarantee judges live down a cascade of models: leave out --plan/--max-cost"
            )
        target: float = old_mode["guarantee"]  # None only with --cascade: cascade_models refuses it
        _cascade_run(
            cascade_models(models, deprecated_cascade, target),
            guarantee=target,
            delta=old_mode["delta"],
            paths=(items_path,),
            card_ref=card_ref,
            output_path=output_path,
            as_json=False,
            concurrency=concurrency,
            max_attempts=max_attempts,
            no_cache=no_cache,
            base_url=base_url,
            timeout=timeout,
            settings=settings,
            rubric=rubric,
            max_input_chars=max_input_chars,
            prices=prices,
            rpm=rpm,
            tpm=tpm,
            max_errors=max_errors,
            junit=junit,
            summary_md=summary_md,
            output_format=output_format,
            db=db,
            cards_dirs=cards_dirs,
        )
        return
    if len(models) > 1:  # the spelling of a cascade elsewhere: never the last one silently
        raise click.UsageError(
            "score judges with one --model; to judge down several, cheapest first: "
            "judgecards cascade ITEMS --model M1 --model M2 --guarantee T"
        )
    (model,) = cascade_models(models, deprecated_cascade)
    if old_mode is not None:  # the old --batch
        from judgecards.cli.batch import submit_items

        if max_cost is not None or rubric is not None:
            raise click.UsageError(
                "judgecards batch submit takes no --max-cost or --rubric: a batch is paid for "
                "once sent, and its collector judges with the card's default rubric policy"
            )
        OutputFile(output_path).check()
        submit_items(
            (items_path,),
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
        return

    # Cheap checks first: nothing below opens the database or calls the provider.
    card, items = card_and_items(card_ref, cards_dirs, items_path, max_input_chars)
    output = OutputFile(output_path)
    output.check()
    ci = CiOutputs(junit, summary_md, output_format)
    ci.check(others=[output_path, db])
    options = judge_options(
        card,
        no_cache=no_cache,
        max_attempts=max_attempts,
        max_input_chars=max_input_chars,
        base_url=base_url,
        timeout=timeout,
        settings=settings,
        prices=prices,
        rubric=rubric,
        rpm=rpm,
        tpm=tpm,
        max_cost=max_cost,
    )
    with command_judge(card, model, db=db, plan=plan, **options) as judge:
        if plan:
            click.echo(judge.plan(items).as_text())
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
                note=_NOTE.format(db=db),
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


@click.command()
@units_argument
@_card_option
@click.option(
    "--model",
    "models",
    multiple=True,
    required=True,
    help="A judge model as provider:model; repeat it, cheapest first (an item goes to the next "
    "one when the current one is not trusted on it).",
)
@guarantee_options
@_output_option
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the summary as JSON (the guarantee, coverage, every stage, who decided what) "
    "instead of text.",
)
@judge_run_options("item")
@connection_options
@judge_output_options
@rubric_options
@max_input_chars_option
@prices_option
@rate_limit_options
@max_errors_option
@ci_output_options
@db_option
@cards_dir_option
def cascade(models: tuple[str, ...], guarantee: float, **run: Any) -> None:
    """Judge every item of ITEMS, or every pair of A B, down a cascade of models, each trusted
    only where people agree with it.

    ITEMS is a JSONL file of items; A B are two outputs files joined on 'id' as `judgecards
    compare` joins them, for a pairwise card (--card pairwise), each pair judged in both orders.
    Each item (or pair) is decided by the first --model (cheapest first) whose agreement with people is
    guaranteed to be at least --guarantee on it, from the labels stored for that card version
    and model; a model that cannot meet it is not called, and items no model is trusted on
    become an audit for people. A model without enough labels stops the run before any call
    (exit 2), naming what to label.

    Exit status: as `judgecards score` (0, 1 too many error records, 2 usage or input error or
    too few labels, 130 interrupted).
    """
    _cascade_run(cascade_models(models, None, guarantee), guarantee=guarantee, **run)


def _cascade_run(  # noqa: PLR0913  keyword-only options of the command
    models: list[str],
    *,
    paths: tuple[Path, ...],
    card_ref: str,
    output_path: Path,
    as_json: bool,
    guarantee: float,
    delta: float,
    concurrency: int,
    max_attempts: int,
    no_cache: bool,
    base_url: str | None,
    timeout: float,
    settings: dict[str, Any],
    rubric: RubricChoice | None,
    max_input_chars: int,
    prices: Any,
    rpm: float | None,
    tpm: float | None,
    max_errors: ErrorBudget,
    junit: Path | None,
    summary_md: Path | None,
    output_format: str,
    db: Path,
    cards_dirs: tuple[Path, ...],
) -> None:
    # Cheap checks first: nothing below opens the database or calls the provider.
    card, items = card_and_units(card_ref, cards_dirs, paths, max_input_chars)
    output = OutputFile(output_path)
    output.check()
    ci = CiOutputs(junit, summary_md, output_format)
    ci.check(as_json=as_json, others=[output_path, db])
    options = judge_options(
        card,
        no_cache=no_cache,
        max_attempts=max_attempts,
        max_input_chars=max_input_chars,
        base_url=base_url,
        timeout=timeout,
        settings=settings,
        prices=prices,
        rubric=rubric,
        rpm=rpm,
        tpm=tpm,
    )
    if isinstance(items, JoinedPairs):
        items.warn_unmatched()
        compare_cascade(
            card,
            models,
            items.pairs,
            target=guarantee,
            delta=delta,
            db=db,
            concurrency=concurrency,
            judge_options=options,
            output=output,
            as_json=as_json,
            ci=ci,
            max_errors=max_errors,
        )
        return
    results, run, elapsed = score_cascade(
        card,
        models,
        list(items),
        target=guarantee,
        delta=delta,
        db=db,
        concurrency=concurrency,
        judge_options=options,
    )
    output.write_lines((result.model_dump_json() for result in results), note=_NOTE.format(db=db))
    tally = ScoreTally.of(results)
    if as_json:
        data = run.to_dict()
        data.update(
            {
                "card": card.ref,
                "models": list(models),
                "decided_by": dict(
                    Counter(d.decided_by or "human" for d in run.decisions).most_common()
                ),
                "errors": sum(tally.errors.values()),
                "error_kinds": dict(tally.error_kinds),
                "results_served_without_call": tally.cached,
                "output": str(output_path),
                "elapsed_s": round(elapsed, 3),
                "mock": any(model.startswith("mock:") for model in models),
            }
        )
        click.echo(json.dumps(data, indent=2))
    else:
        click.echo(tally.summary(elapsed, output_path))
        click.echo(run.summary())
    ci.emit(score_run(results, subject=f"{card.ref} on {' -> '.join(models)}", seconds=elapsed))
    errors = Counter(str(r.error_kind) for r in results if r.status == "error")
    finish_run(errors, len(results), max_errors)
