"""``--rpm``, ``--tpm`` and ``--max-cost`` for the commands that judge (score, compare, eval):
the options, what they pass to `judgecards.Judge`, the summary lines and the exit status."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

__all__ = [
    "budget_lines",
    "exit_not_judged",
    "finish_budget",
    "max_cost_option",
    "rate_judge_options",
    "rate_limit_options",
    "rate_options",
]

F = TypeVar("F", bound=Callable[..., Any])

EXIT_NOT_JUDGED = 1  # the README's exit table: the run finished, not every item has a result


def rate_options(function: F) -> F:
    """``--rpm``, ``--tpm`` and ``--max-cost``: keyword arguments ``rpm``, ``tpm``, ``max_cost``."""
    function = max_cost_option("an item", "items", "the --plan estimate at its max_tokens")(
        function
    )
    return rate_limit_options(function)


def max_cost_option(one: str, many: str, estimate: str) -> Callable[[F], F]:
    """``--max-cost USD`` (keyword argument ``max_cost``) for a run of ``many`` (``one`` at a
    time), whose projected cost is ``estimate``."""
    return click.option(
        "--max-cost",
        "max_cost",
        type=click.FloatRange(min=0),
        default=None,
        metavar="USD",
        help=f"Never start {one} whose projected cost ({estimate}) would take this run's spend "
        f"past USD; {many} left are 'not judged' (exit 1), and a re-run with a higher cap judges "
        "just them. Needs the model's price.",
    )


def rate_limit_options(function: F) -> F:
    """``--rpm`` and ``--tpm`` alone: keyword arguments ``rpm`` and ``tpm``."""
    function = click.option(
        "--tpm",
        type=click.FloatRange(min=0, min_open=True),
        default=None,
        help="Tokens per minute allowed to the model (estimated input + max_tokens per call, "
        "corrected by reported usage).",
    )(function)
    return click.option(
        "--rpm",
        type=click.FloatRange(min=0, min_open=True),
        default=None,
        help="Requests per minute allowed to the model. Concurrency adapts to 429s either way.",
    )(function)


def rate_judge_options(
    rpm: float | None, tpm: float | None, max_cost: float | None = None
) -> dict[str, Any]:
    """The `judgecards.Judge` keyword arguments for the options given (none when unset)."""
    given = {"rpm": rpm, "tpm": tpm, "max_cost": max_cost}
    return {name: value for name, value in given.items() if value is not None}


def budget_lines(judges: Any, *, cap: bool = True) -> list[str]:
    """Summary lines: what each judge's limiter did, and spend against the cap if one was set
    (``cap=False``: the command prints its own, as compare does in pairs).
    ``judges``: one `judgecards.Judge` or several (a comparison's, an eval's)."""
    judges = judges if isinstance(judges, (list, tuple)) else [judges]
    lines = []
    for judge in judges:
        name = f" {judge.model}" if len(judges) > 1 else ""
        stats = judge.rates.stats()
        if stats is not None:
            lines.append(f"rate{name}: {stats.as_text()}")
        if cap and judge.budget is not None:
            lines.append(f"budget{name}: {judge.budget.stats().as_text()}")
    return lines


def finish_budget(judges: Any) -> None:
    """Exit 1 when ``--max-cost`` left items not judged (after the error records were counted)."""
    judges = judges if isinstance(judges, (list, tuple)) else [judges]
    exit_not_judged(sum(j.budget.stats().not_judged for j in judges if j.budget is not None))


def exit_not_judged(
    left: int, *, unit: str = "item", projected: str = "", finished: str = "items"
) -> None:
    """Exit 1 when ``--max-cost`` left ``left`` units (items, or pairs) not judged; ``projected``
    says what their projection covered, ``finished`` what a re-run does not pay for again."""
    if left:
        click.echo(
            f"{left} {unit}(s) not judged: their projected cost{projected} would pass "
            "--max-cost; exit status 1. Run again with a higher --max-cost to judge them "
            f"(finished {finished} are not paid for again).",
            err=True,
        )
        raise click.exceptions.Exit(EXIT_NOT_JUDGED)
