"""``compare --plan`` and ``compare --max-cost``: the options, the plan printed instead of a run,
and the spend and pairs-left lines and exit status of a capped run
(`judgecards.pairwise.budget` holds the rules)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click

from judgecards.cli._rate import exit_not_judged, max_cost_option

if TYPE_CHECKING:
    from judgecards.judging import Judge
    from judgecards.pairwise.compare import ComparisonResult

__all__ = [
    "check_cost_options",
    "compare_cost_options",
    "finish_pairs_budget",
    "pairs_budget_data",
    "pairs_budget_lines",
    "print_compare_plan",
]

F = TypeVar("F", bound=Callable[..., Any])


def compare_cost_options(function: F) -> F:
    """``--plan`` and ``--max-cost``: keyword arguments ``plan`` and ``max_cost``."""
    function = max_cost_option("a pair", "pairs", "both orders, the --plan estimate at max_tokens")(
        function
    )
    return click.option(
        "--plan",
        is_flag=True,
        help="Render both orders of every pair, estimate their tokens and print the projected "
        "cost (live and batch), then stop: no call is made and nothing is judged.",
    )(function)


def check_cost_options(*, plan: bool, max_cost: float | None, use_batch: bool) -> None:
    """Combinations that cannot mean anything, refused before the database or any call."""
    if use_batch and plan:
        raise click.UsageError("--batch submits the pairs and --plan only projects them: pick one")
    if use_batch and max_cost is not None:
        raise click.UsageError(
            "--max-cost caps a live run (pairs are stopped before they start); a batch is paid "
            "for once sent: leave out --batch or --max-cost"
        )


def print_compare_plan(judge: Judge, pairs: Sequence[Mapping[str, Any]], *, as_json: bool) -> None:
    """The plan of comparing ``pairs``, as text or JSON; no call is made."""
    from judgecards.pairwise.compare import plan_comparisons

    plan = plan_comparisons(judge, pairs)
    click.echo(json.dumps(plan.to_dict(), indent=2) if as_json else plan.as_text())


def _left(comparisons: Sequence[ComparisonResult]) -> int:
    return sum(1 for c in comparisons if c.status == "not_judged")


def pairs_budget_lines(judge: Judge, comparisons: Sequence[ComparisonResult]) -> list[str]:
    """The summary's ``budget:`` line when the judge was capped (else none)."""
    if judge.budget is None:
        return []
    text = judge.budget.stats().as_text(
        not_judged=_left(comparisons),
        unit="pair",
        finished="judgments",
        over="re-asks and token counts beyond the projection",
    )
    return [f"budget:    {text}"]


def pairs_budget_data(judge: Judge, comparisons: Sequence[ComparisonResult]) -> dict[str, Any]:
    """The JSON summary's budget fields: null without a cap."""
    if judge.budget is None:
        return {"budget": None}
    stats = judge.budget.stats()
    return {
        "budget": {
            "cap_usd": stats.cap,
            "spent_usd": stats.spent,
            "pairs_not_judged": _left(comparisons),
        }
    }


def finish_pairs_budget(comparisons: Sequence[ComparisonResult]) -> None:
    """Exit 1 when ``--max-cost`` left pairs not judged (after the failed pairs were counted)."""
    exit_not_judged(
        _left(comparisons), unit="pair", projected=" (both orders)", finished="judgments"
    )
