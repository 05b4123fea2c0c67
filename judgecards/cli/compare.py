"""``judgecards compare``: A/B comparison of two output files, every pair judged in both orders."""

from __future__ import annotations

import functools
import json
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import click

from judgecards.cli._cascade import cascade_models, guarantee_options
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
    oversized_inputs,
    prices_option,
    warn_if_uncalibrated,
)
from judgecards.cli._compare_cascade import refuse_with_cascade
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
from judgecards.errors import InputError, WrongCardKind
from judgecards.judging import item_id_of, problems_error, read_jsonl

_SHOWN_UNMATCHED = 20

F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class _Side:
    """One output file, by id: (line number, answer, line object)."""

    path: Path
    rows: dict[str, tuple[int, str, dict[str, Any]]] = field(default_factory=dict)


@dataclass
class _Joined:
    pairs: list[dict[str, Any]]
    only_in_a: list[str]
    only_in_b: list[str]


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
    "mock:judge; repeat it, cheapest first, to judge down a cascade (with --guarantee).",
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
@click.option(
    "--batch",
    "use_batch",
    is_flag=True,
    help="Submit both orders of every pair to the provider's batch API (half price, results "
    "within 24 h) instead of judging now; `judgecards batch collect` writes the comparisons.",
)
@guarantee_options("pair", required=False)
@click.option("--cascade", "deprecated_cascade", hidden=True, help="Now repeated --model.")
@max_input_chars_option
@prices_option
@rate_limit_options
@compare_cost_options
@judge_output_options
@max_errors_option
@ci_output_options
@db_option
@cards_dir_option
def compare(  # noqa: PLR0913, PLR0915, PLR0917  click passes one parameter per option; modes: item 5
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
    use_batch: bool,
    guarantee: float | None,
    delta: float,
    deprecated_cascade: str | None,
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
) -> None:
    """Compare two models' outputs with a pairwise judge, each pair judged in both orders.

    A wins a pair only if it wins with A shown first and with B shown first; likewise B; anything
    else is a tie. Lines are joined on 'id' and every line is checked before any call; ids found
    in one file only are reported, not dropped silently. Prints wins, losses, ties, win-rates with
    bootstrap intervals, a sign test, position consistency and bias checks.

    A and B are JSONL files of each model's outputs: {id, question?, answer|output, reference?,
    model?} per line, joined on 'id'.

    With --guarantee T, each pair is decided by the first --model (cheapest first) whose agreement with people on the winner is guaranteed to be at least T
    on it, from the labels stored for it; the rest become an audit for people.

    Exit status: 0 every pair was judged in both orders (or the failed pairs are within
    --max-errors); 1 more failed pairs than that, or pairs not judged under --max-cost; 2 a
    usage or input error (or a --max-cost on a model with no price), nothing judged;
    130 interrupted (what was saved is printed).
    """
    from judgecards.cards import load_card
    from judgecards.pairwise.compare import compare_many
    from judgecards.pairwise.report import comparison_report
    from judgecards.pairwise.rules import is_pairwise

    # Cheap checks first: nothing below opens the database or calls the provider.
    card = load_card(card_ref, cards_dir=list(cards_dirs) or None)
    if not is_pairwise(card):
        raise WrongCardKind(
            f"{card.ref} is not a pairwise card (it has no answer_a/answer_b inputs)",
            file=card.path,
            field="inputs",
        )
    check_cost_options(plan=plan, max_cost=max_cost, use_batch=use_batch)
    chosen = cascade_models(models, deprecated_cascade, guarantee)
    if guarantee is not None:
        refuse_with_cascade(batch=use_batch, plan=plan, max_cost=max_cost is not None)
    limit = input_limit(max_input_chars)
    joined = _join(_read_side(a_path, limit), _read_side(b_path, limit), model_a, model_b)
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
    if guarantee is not None:
        from judgecards.cli._compare_cascade import compare_cascade

        _warn_unmatched(joined, a_path, b_path)
        compare_cascade(
            card,
            chosen,
            joined.pairs,
            target=guarantee,
            delta=delta,
            db=db,
            concurrency=concurrency,
            output=output,
            as_json=as_json,
            ci=ci,
            max_errors=max_errors,
            judge_options={
                "cache": not no_cache,
                "max_attempts": max_attempts,
                "max_input_chars": limit,
                **options,
            },
        )
        return
    model = chosen[0]
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
            print_compare_plan(judge, joined.pairs, as_json=as_json)
            return
        if use_batch:
            from judgecards.batch.pairs import submit_pairs
            from judgecards.cli.batch import submitted_text

            _warn_unmatched(joined, a_path, b_path)
            job, decided = submit_pairs(
                judge, joined.pairs, cards_dirs=[str(d) for d in cards_dirs]
            )
            click.echo(submitted_text(job, db))
            click.echo(f"comparisons already decidable and written: {len(decided)}")
            return
        mock_banner(model)
        warn_if_uncalibrated(judge)
        _warn_unmatched(joined, a_path, b_path)
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

    from judgecards.limits import run_cost, run_cost_text

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
    ci.emit(compare_run(comparisons, subject=f"{judge.card.ref} on {model}", seconds=elapsed))
    mock_banner(model)
    finish_run(
        Counter(str(c.first_order.error_kind or c.second_order.error_kind) for c in failed),
        len(comparisons),
        max_errors,
        unit="pairs",
    )
    finish_pairs_budget(comparisons)


# A line's fields and the pairwise card inputs they become (the answer: answer_a or answer_b).
_SIDE_INPUTS = {
    "answer": "answer",
    "output": "answer",
    "question": "question",
    "reference": "reference",
}


def _read_side(path: Path, limit: int | None) -> _Side:
    """Every line of one outputs file, checked; all problems are reported at once."""
    side = _Side(path)
    problems: list[InputError] = []
    too_long = oversized_inputs(_SIDE_INPUTS, limit)
    for number, line in read_jsonl(path):
        if isinstance(line, InputError):
            problems.append(line)
            continue
        key = item_id_of(line)
        if key is None or key == "":
            problems.append(InputError("missing 'id'", file=path, line=number, field="id"))
            continue
        if key in side.rows:
            problems.append(
                InputError(
                    f"duplicate id (first on line {side.rows[key][0]})",
                    file=path,
                    line=number,
                    field="id",
                )
            )
            continue
        answer_field = "answer" if "answer" in line else "output"
        answer = line.get(answer_field)
        if not isinstance(answer, str):
            problems.append(
                InputError(
                    "missing answer: give 'answer' (or 'output') as a string",
                    file=path,
                    line=number,
                    field=answer_field,
                )
            )
            continue
        for name in ("question", "reference", "model"):
            if line.get(name) is not None and not isinstance(line[name], str):
                problems.append(InputError("must be a string", file=path, line=number, field=name))
        for name, message in too_long(line):
            problems.append(InputError(message, file=path, line=number, field=name))
        side.rows[key] = (number, answer, line)
    _raise(problems, path)
    if not side.rows:
        raise InputError("no outputs", file=path)
    return side


def _join(a: _Side, b: _Side, model_a: str | None, model_b: str | None) -> _Joined:
    """Pairs for the ids in both files, in A's order; question and reference may come from either."""
    problems: list[InputError] = []
    pairs: list[dict[str, Any]] = []
    for key, (line_a, answer_a, row_a) in a.rows.items():
        if key not in b.rows:
            continue
        line_b, answer_b, row_b = b.rows[key]
        pair: dict[str, Any] = {"id": key, "answer_a": answer_a, "answer_b": answer_b}
        for name, required in (("question", True), ("reference", False)):
            value, problem = _shared_field(
                name, row_a, row_b, a.path, line_a, b.path, line_b, required=required
            )
            if problem is not None:
                problems.append(problem)
            elif value is not None:
                pair[name] = value
        pair["model_a"] = model_a or row_a.get("model")
        pair["model_b"] = model_b or row_b.get("model")
        pairs.append(pair)
    _raise(problems, None)
    only_in_a = [key for key in a.rows if key not in b.rows]
    only_in_b = [key for key in b.rows if key not in a.rows]
    if not pairs:
        raise InputError(
            f"no id appears in both files ({len(a.rows)} ids in {a.path}, {len(b.rows)} in {b.path})",
            field="id",
        )
    return _Joined(pairs, only_in_a, only_in_b)


def _shared_field(  # noqa: PLR0917  two rows and where each came from
    name: str,
    row_a: Mapping[str, Any],
    row_b: Mapping[str, Any],
    path_a: Path,
    line_a: int,
    path_b: Path,
    line_b: int,
    *,
    required: bool,
) -> tuple[str | None, InputError | None]:
    value_a, value_b = row_a.get(name), row_b.get(name)
    if value_a is not None and value_b is not None and value_a != value_b:
        return None, InputError(
            f"differs from {path_b}:{line_b} for the same id; A and B must answer the same {name}",
            file=path_a,
            line=line_a,
            field=name,
        )
    value = value_a if value_a is not None else value_b
    if value is None and required:
        return None, InputError(
            f"missing in both files (also {path_b}:{line_b})", file=path_a, line=line_a, field=name
        )
    return value, None


def _raise(problems: list[InputError], path: Path | None) -> None:
    if problems:
        raise problems_error(problems, path)


def _warn_unmatched(joined: _Joined, a_path: Path, b_path: Path) -> None:
    for ids, here, there in (
        (joined.only_in_a, a_path, b_path),
        (joined.only_in_b, b_path, a_path),
    ):
        if ids:
            listed = ", ".join(ids[:_SHOWN_UNMATCHED]) + (
                " …" if len(ids) > _SHOWN_UNMATCHED else ""
            )
            click.secho(
                f"warning: {len(ids)} id(s) in {here} have no line in {there} and are not judged: {listed}",
                fg="yellow",
                err=True,
            )
