"""``judgecards compare``: A/B comparison of two output files, every pair judged in both orders."""

from __future__ import annotations

import functools
import json
import time
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from judgecards.cli._cascade import cascade_models
from judgecards.cli._ci_output import CiOutputs, ci_output_options
from judgecards.cli._ci_runs import compare_run
from judgecards.cli._common import (
    ErrorBudget,
    cards_dir_option,
    command_judge,
    connection_options,
    db_option,
    deprecated,
    finish_run,
    input_limit,
    judge_run_options,
    max_errors_option,
    max_input_chars_option,
    mock_banner,
    prices_option,
    warn_if_uncalibrated,
)
from judgecards.cli._compare_cascade import compare_cascade, refuse_with_cascade
from judgecards.cli._compare_cost import (
    check_cost_options,
    compare_cost_options,
    finish_pairs_budget,
    pairs_budget_data,
    pairs_budget_lines,
    print_compare_plan,
)
from judgecards.cli._judge_output import judge_output_options
from judgecards.cli._output import OutputFile
from judgecards.cli._progress import for_judge, reporting
from judgecards.cli._rate import budget_lines, rate_judge_options, rate_limit_options
from judgecards.cli._units import JoinedPairs, check_pairwise, read_pairs

if TYPE_CHECKING:
    from judgecards.cards import Card
    from judgecards.judging import Judge
    from judgecards.pairwise.compare import ComparisonResult

F = TypeVar("F", bound=Callable[..., Any])


def _old_modes(function: F) -> F:
    """``compare --guarantee/--delta/--batch``, hidden: keyword argument ``old_mode``, what they
    asked for (None: none given), after one deprecation line each; ``--cascade M1,M2`` stays
    keyword argument ``deprecated_cascade`` (`cascade_models` warns about it)."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        given = {name: kwargs.pop(f"deprecated_{name}") for name in ("guarantee", "delta", "batch")}
        mode: dict[str, Any] | None = None
        if given["guarantee"] is not None or kwargs["deprecated_cascade"] is not None:
            if given["guarantee"] is not None:
                deprecated(
                    "compare --guarantee",
                    "judgecards cascade A B --card pairwise --model M1 --model M2 --guarantee T",
                )
            mode = {"guarantee": given["guarantee"], "delta": given["delta"] or 0.1}
        elif given["delta"] is not None:
            deprecated("compare --delta", "judgecards cascade A B --card pairwise --delta")
        if given["batch"]:
            deprecated("compare --batch", "judgecards batch submit A B --card pairwise")
            mode = {**(mode or {}), "batch": True}
        kwargs["old_mode"] = mode
        return function(*args, **kwargs)

    unit = click.FloatRange(0, 1, min_open=True, max_open=True)
    options = [
        click.option("--batch", "deprecated_batch", is_flag=True, hidden=True),
        click.option("--guarantee", "deprecated_guarantee", type=unit, hidden=True),
        click.option("--delta", "deprecated_delta", type=unit, hidden=True),
        click.option("--cascade", "deprecated_cascade", hidden=True),
    ]
    decorated: Any = wrapper
    for option in reversed(options):
        decorated = option(decorated)
    return decorated  # type: ignore[no-any-return]


def _sides_arguments(function: F) -> F:
    """``A B``, the two outputs files, as positional arguments (keyword arguments ``a_path`` and
    ``b_path``), as ``score ITEMS`` takes its file; ``--a``/``--b``, the old spelling, still work
    for one release (hidden, one deprecation line)."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        for side in ("a", "b"):
            old = kwargs.pop(f"deprecated_{side}")
            if old is not None:
                deprecated(f"--{side} FILE", "the files as arguments: compare A B")
                if kwargs[f"{side}_path"] is not None:
                    raise click.UsageError(
                        f"--{side} is the old spelling of the {side.upper()} argument: give one"
                    )
                kwargs[f"{side}_path"] = old
        if kwargs["a_path"] is None or kwargs["b_path"] is None:
            raise click.UsageError("Missing arguments: compare A B (the two outputs files)")
        return function(*args, **kwargs)

    existing = click.Path(dir_okay=False, exists=True, path_type=Path)
    decorated: Any = wrapper
    for side in ("b", "a"):
        decorated = click.option(
            f"--{side}", f"deprecated_{side}", type=existing, hidden=True, help="Now an argument."
        )(decorated)
    for side in ("b", "a"):
        decorated = click.argument(
            f"{side}_path", metavar=side.upper(), required=False, type=existing
        )(decorated)
    return decorated  # type: ignore[no-any-return]


@click.command()
@_sides_arguments
@click.option(
    "--card",
    "card_ref",
    default="pairwise",
    show_default=True,
    help="Pairwise card as NAME or NAME@VERSION.",
)
@click.option(
    "--model",
    "models",
    multiple=True,
    help="Judge model as provider:model, e.g. openai:gpt-4o, anthropic:claude-sonnet-5-5, "
    "mock:judge.",
)
@click.option(
    "--output",
    "output_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="JSONL of comparisons, in A's order.",
)
@click.option(
    "--model-a",
    default=None,
    help="Label of the model behind A (else the lines' 'model' field); stored for `judgecards rank`.",
)
@click.option("--model-b", default=None, help="Label of the model behind B (likewise).")
@click.option(
    "--json", "as_json", is_flag=True, help="Print the report as JSON instead of a table."
)
@judge_run_options("judgment")
@connection_options
@click.option(
    "--seed",
    default=0,
    show_default=True,
    type=int,
    help="Seed of the bootstrap behind the report's intervals (the judge is not seeded).",
)
@max_input_chars_option
@prices_option
@rate_limit_options
@compare_cost_options
@judge_output_options
@max_errors_option
@ci_output_options
@db_option
@cards_dir_option
@_old_modes
def compare(  # noqa: PLR0913, PLR0917  click passes one parameter per option
    a_path: Path,
    b_path: Path,
    card_ref: str,
    models: tuple[str, ...],
    output_path: Path,
    model_a: str | None,
    model_b: str | None,
    as_json: bool,
    concurrency: int,
    max_attempts: int,
    no_cache: bool,
    base_url: str | None,
    timeout: float,
    seed: int,
    max_input_chars: int,
    prices: Any,
    rpm: float | None,
    tpm: float | None,
    plan: bool,
    max_cost: float | None,
    settings: dict[str, Any],
    max_errors: ErrorBudget,
    junit: Path | None,
    summary_md: Path | None,
    output_format: str,
    db: Path,
    cards_dirs: tuple[Path, ...],
    deprecated_cascade: str | None,
    old_mode: dict[str, Any] | None,
) -> None:
    """Compare two models' outputs with a pairwise judge, each pair judged in both orders.

    A wins a pair only if it wins with A shown first and with B shown first; likewise B; anything
    else is a tie. Lines are joined on 'id' and every line is checked before any call; ids found
    in one file only are reported, not dropped silently. Prints wins, losses, ties, win-rates with
    bootstrap intervals, a sign test, position consistency and bias checks.

    A and B are JSONL files of each model's outputs: {id, question?, answer|output, reference?,
    model?} per line, joined on 'id'.

    To judge the pairs down several models, each trusted only where people agree with it, see
    `judgecards cascade A B --card pairwise`; to judge them at half price within 24 h,
    `judgecards batch submit A B --card pairwise`.

    Exit status: 0 every pair was judged in both orders (or the failed pairs are within
    --max-errors); 1 more failed pairs than that, or pairs not judged under --max-cost; 2 a
    usage or input error (or a --max-cost on a model with no price), nothing judged;
    130 interrupted (what was saved is printed).
    """
    from judgecards.cards import load_card
    from judgecards.pairwise.compare import compare_many

    # Cheap checks first: nothing below opens the database or calls the provider.
    card = load_card(card_ref, cards_dir=list(cards_dirs) or None)
    check_pairwise(card)
    guarantee = old_mode.get("guarantee") if old_mode is not None else None
    if old_mode is not None and "guarantee" in old_mode:
        refuse_with_cascade(batch="batch" in old_mode, plan=plan, max_cost=max_cost is not None)
    elif old_mode is not None:  # the old --batch
        check_cost_options(plan=plan, max_cost=max_cost, use_batch=True)
    if len(models) > 1 and guarantee is None and deprecated_cascade is None:
        # The spelling of a cascade elsewhere: never the last one silently.
        raise click.UsageError(
            "compare judges with one --model; to judge down several, cheapest first: "
            "judgecards cascade A B --card pairwise --model M1 --model M2 --guarantee T"
        )
    chosen = cascade_models(models, deprecated_cascade, guarantee)
    limit = input_limit(max_input_chars)
    joined = read_pairs(a_path, b_path, limit, model_a, model_b)
    output = OutputFile(output_path)
    output.check()
    ci = CiOutputs(junit, summary_md, output_format)
    ci.check(as_json=as_json, others=[output_path, db])

    options: dict[str, Any] = {"timeout": timeout, **settings}
    if base_url:
        options["base_url"] = base_url
    if prices is not None:
        options["prices"] = prices
    options.update(rate_judge_options(rpm, tpm, max_cost))
    judge_settings = {
        "cache": not no_cache,
        "max_attempts": max_attempts,
        "max_input_chars": limit,
        **options,
    }
    if old_mode is not None:
        _old_mode_run(
            old_mode,
            card,
            chosen,
            joined,
            judge_settings,
            db=db,
            cards_dirs=cards_dirs,
            concurrency=concurrency,
            output=output,
            as_json=as_json,
            ci=ci,
            max_errors=max_errors,
        )
        return
    model = chosen[0]
    with command_judge(card, model, db=db, plan=plan, **judge_settings) as judge:
        if plan:
            print_compare_plan(judge, joined.pairs, as_json=as_json)
            return
        mock_banner(model)
        warn_if_uncalibrated(judge)
        joined.warn_unmatched()
        total = 2 * len(joined.pairs)
        click.echo(
            f"Comparing {len(joined.pairs)} pairs ({total} judgments, both orders) with {card.ref} on {model} (db {db})",
            err=True,
        )
        started = time.perf_counter()
        reporter = for_judge(judge, "judging (both orders)", unit="judgments", total=total)
        with reporting(reporter, where=str(db)) as progress:
            comparisons = compare_many(
                judge, joined.pairs, concurrency=concurrency, progress=progress
            )
        elapsed = time.perf_counter() - started

    output.write_lines(
        (json.dumps(comparison.to_row()) for comparison in comparisons),
        note=f"; the judgments are stored in {db}: run the same command again to write the file "
        "without new calls",
    )

    failed = [c for c in comparisons if c.status == "error"]
    _print_summary(
        judge,
        comparisons,
        joined,
        seed=seed,
        elapsed=elapsed,
        as_json=as_json,
        output_path=output_path,
    )
    ci.emit(compare_run(comparisons, subject=f"{judge.card.ref} on {model}", seconds=elapsed))
    mock_banner(model)
    finish_run(
        Counter(str(c.first_order.error_kind or c.second_order.error_kind) for c in failed),
        len(comparisons),
        max_errors,
        unit="pairs",
    )
    finish_pairs_budget(comparisons)


def _old_mode_run(  # noqa: PLR0913  the run's settings, by keyword
    old_mode: Mapping[str, Any],
    card: Card,
    models: list[str],
    joined: JoinedPairs,
    judge_options: dict[str, Any],
    *,
    db: Path,
    cards_dirs: tuple[Path, ...],
    concurrency: int,
    output: OutputFile,
    as_json: bool,
    ci: CiOutputs,
    max_errors: ErrorBudget,
) -> None:
    """``compare --guarantee`` and ``compare --batch``, the old spellings: what ``cascade A B``
    and ``batch submit A B`` do, with the pairs as ``compare`` joined them (--model-a/-b)."""
    if "guarantee" in old_mode:
        joined.warn_unmatched()
        compare_cascade(
            card,
            models,
            joined.pairs,
            target=old_mode["guarantee"],
            delta=old_mode["delta"],
            db=db,
            concurrency=concurrency,
            output=output,
            as_json=as_json,
            ci=ci,
            max_errors=max_errors,
            judge_options=judge_options,
        )
        return
    from judgecards.cli.batch import submit_units

    submit_units(card, models[0], joined, db=db, cards_dirs=cards_dirs, options=judge_options)


def _print_summary(
    judge: Judge,
    comparisons: list[ComparisonResult],
    joined: JoinedPairs,
    *,
    seed: int,
    elapsed: float,
    as_json: bool,
    output_path: Path,
) -> None:
    """The report and the run's figures (errors, unmatched ids, cache, cost, budget), as text
    or JSON."""
    from judgecards.limits import run_cost, run_cost_text
    from judgecards.pairwise.report import comparison_report

    model = judge.model
    report = comparison_report(comparisons, judge_model=model, seed=seed)
    failed = [c for c in comparisons if c.status == "error"]
    # Orders a --max-cost left were neither called nor served: not counted as either.
    orders = [
        o for c in comparisons for o in (c.first_order, c.second_order) if o.status != "not_judged"
    ]
    calls = sum(1 for o in orders if not o.cached)
    if as_json:
        data = report.to_dict()
        data.update(
            {
                "judge_model": model,
                "card": judge.card.ref,
                "pairs": len(joined.pairs),
                "errors": len(failed),
                "error_kinds": dict(
                    Counter(c.first_order.error_kind or c.second_order.error_kind for c in failed)
                ),
                "unmatched": {"only_in_a": joined.only_in_a, "only_in_b": joined.only_in_b},
                "judgments_served_without_call": len(orders) - calls,
                # This run's: a batch's judgment served from the store carries its bill.
                "cost_usd": run_cost(o.cost_usd for o in orders if not o.cached),
                **pairs_budget_data(judge, comparisons),
                "output": str(output_path),
                "elapsed_s": round(elapsed, 3),
                "mock": model.startswith("mock:"),
            }
        )
        click.echo(json.dumps(data, indent=2))
    else:
        click.echo(report.as_text())
        lines = [f"\n{len(comparisons)} pairs in {elapsed:.1f}s -> {output_path}"]
        if failed:
            kinds = Counter(c.first_order.error_kind or c.second_order.error_kind for c in failed)
            lines.append(
                f"errors:    {len(failed)} pairs left out of the report ({', '.join(f'{k} {n}' for k, n in kinds.items())})"
            )
        if joined.only_in_a or joined.only_in_b:
            lines.append(
                f"unmatched: {len(joined.only_in_a)} ids only in --a, {len(joined.only_in_b)} only in --b (not judged)"
            )
        lines.append(
            f"cache:     {len(orders) - calls} of {len(orders)} judgments served without a call"
        )
        costs = [o.cost_usd for o in orders if not o.cached]  # this run's (see cost_usd above)
        mock = model.startswith("mock:")
        lines.append(f"cost:      {run_cost_text(costs, cached=len(orders) - calls, mock=mock)}")
        lines.extend(budget_lines(judge, cap=False) + pairs_budget_lines(judge, comparisons))
        click.echo("\n".join(lines))
