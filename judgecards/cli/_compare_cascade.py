"""``cascade A B --card pairwise --guarantee T --model M1 --model M2`` (and the old
``compare --guarantee``): pairs judged down a calibrated cascade.

Kept apart from ``compare`` so the plain path stays as it is; ``refuse_with_cascade`` serves only
the old spelling, whose options could still be mixed. Every judge is built and the
cascade calibrated from the stored labels before any call, so a judge without enough labels
stops the run (exit 2) with nothing paid for; see `calibration.cascades.pairwise`. The output has
one line per pair: the comparison of the judge that decided it (or of the last judge that saw
it), with ``cascade``: who decided it, at what threshold, the audit it went to.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from judgecards.cli._cascade import judge_down
from judgecards.cli._ci_runs import compare_run
from judgecards.cli._common import ErrorBudget, finish_run, mock_banner
from judgecards.cli._progress import StagedProgress

if TYPE_CHECKING:
    from judgecards.cards import Card
    from judgecards.cli._ci_output import CiOutputs
    from judgecards.cli._output import OutputFile

__all__ = ["compare_cascade", "refuse_with_cascade"]

F = TypeVar("F", bound=Callable[..., Any])


def refuse_with_cascade(**given: bool) -> None:
    """`click.UsageError` naming the options given (``batch=True``...) that a cascade cannot use."""
    named = [f"--{name.replace('_', '-')}" for name, on in given.items() if on]
    if named:
        raise click.UsageError(
            f"--guarantee judges live down a cascade of models: leave out {', '.join(named)}"
        )


def compare_cascade(  # noqa: PLR0913  keyword-only options of the command
    card: Card,
    models: Sequence[str],
    pairs: Sequence[Mapping[str, Any]],
    *,
    target: float,
    delta: float,
    db: Path,
    concurrency: int,
    judge_options: Mapping[str, Any],
    output: OutputFile,
    as_json: bool,
    ci: CiOutputs,
    max_errors: ErrorBudget,
) -> None:
    """Calibrate, judge the pairs down the cascade, write the output and the summary, and exit
    as ``compare`` does (1 when more pairs failed in every judge than ``max_errors`` allows).

    Raises:
        AuditError: a judge lacks labels, or no judge can meet ``target`` (nothing called).
    """
    from calibration.cascades import PairwiseCascade
    from judgecards.limits import run_cost, run_cost_text

    run, elapsed = judge_down(
        lambda judges: PairwiseCascade(judges, target=target, delta=delta),
        card,
        models,
        pairs,
        heading=f"Comparing {len(pairs)} pairs (both orders) with {card.ref} down "
        f"{' -> '.join(models)} (db {db})",
        db=db,
        concurrency=concurrency,
        judge_options=judge_options,
        reporter=lambda judges: StagedProgress(judges, "judging (both orders)", unit="judgments"),
    )

    rows = [row for row in (decision.row() for decision in run.decisions) if row is not None]
    output.write_lines(
        (json.dumps(row) for row in rows),
        note=f"; the judgments are stored in {db}: run the same command again to write the file "
        "without new calls",
    )
    comparisons = [d.comparison for d in run.decisions if d.comparison is not None]
    failed = [c for c in comparisons if c.status == "error"]
    kinds = Counter(str(c.first_order.error_kind or c.second_order.error_kind) for c in failed)
    # Every judgment any judge made, not only the deciding ones': all were paid for.
    orders = [
        order
        for comparison in run.made
        for order in (comparison.first_order, comparison.second_order)
        if order.status != "not_judged"
    ]
    costs = [order.cost_usd for order in orders]
    calls = sum(not order.cached for order in orders)
    mock = any(m.startswith("mock:") for m in models)
    if as_json:
        data = run.to_dict()
        data.update(
            {
                "card": card.ref,
                "models": list(models),
                "decided_by": dict(
                    Counter(d.decided_by or "human" for d in run.decisions).most_common()
                ),
                "errors": len(failed),
                "error_kinds": dict(kinds),
                "calls": calls,
                "judgments_served_without_call": len(orders) - calls,
                "cost_usd": run_cost(costs),
                "output": str(output.path),
                "elapsed_s": round(elapsed, 3),
                "mock": mock,
            }
        )
        click.echo(json.dumps(data, indent=2))
    else:
        lines = [f"{len(rows)} pairs in {elapsed:.1f}s -> {output.path}", run.summary()]
        if failed:
            listed = ", ".join(f"{k} {n}" for k, n in kinds.items())
            lines.append(f"errors:    {len(failed)} pairs failed with every judge ({listed})")
        lines.append(f"cost:      {run_cost_text(costs, cached=len(orders) - calls, mock=mock)}")
        click.echo("\n".join(lines))
    ci.emit(
        compare_run(comparisons, subject=f"{card.ref} on {' -> '.join(models)}", seconds=elapsed)
    )
    for model in dict.fromkeys(m for m in models if m.startswith("mock:")):
        mock_banner(model)
    finish_run(kinds, len(comparisons), max_errors, unit="pairs")
