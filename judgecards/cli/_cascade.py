"""``judgecards cascade ITEMS | A B --guarantee T --model M1 --model M2``: judge items, or
pairs, down a calibrated cascade of models. Every judge is built and the cascade
calibrated from the stored labels before any call, so a judge without enough labels stops the
run (exit 2) with nothing paid for; see `calibration.cascades.cascade`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import click

from judgecards.cli._common import deprecated, mock_banner
from judgecards.cli._progress import StagedProgress, reporting

if TYPE_CHECKING:
    from calibration.cascades import CascadeRun
    from judgecards.cards import Card
    from judgecards.judging import Judge
    from judgecards.storage import JudgeResult

__all__ = [
    "CascadeRunner",
    "cascade_judges",
    "cascade_models",
    "guarantee_options",
    "judge_down",
    "score_cascade",
]

F = TypeVar("F", bound=Callable[..., Any])

R = TypeVar("R", covariant=True)


class CascadeRunner(Protocol[R]):
    """A calibrated cascade of either unit (`calibration.Cascade`, `calibration.PairwiseCascade`)
    as the command line drives it."""

    def calibrate(self) -> Sequence[Any]: ...

    def run(
        self,
        units: Sequence[Mapping[str, Any]],
        *,
        concurrency: int = ...,
        progress: Any = ...,
    ) -> R: ...


def guarantee_options(function: F) -> F:
    """``--guarantee`` and ``--delta`` for a run that judges items or pairs down a calibrated
    cascade (keyword arguments of the same names); the judges are the command's ``--model``s."""
    function = click.option(
        "--delta",
        type=click.FloatRange(0, 1, min_open=True, max_open=True),
        default=0.1,
        show_default=True,
        help="Allowed probability, per judge, that its guarantee fails.",
    )(function)
    return click.option(
        "--guarantee",
        type=click.FloatRange(0, 1, min_open=True, max_open=True),
        required=True,
        metavar="T",
        help="Let a judge decide an item (or pair) only where its agreement with people is "
        "guaranteed to be at least T (e.g. 0.85), from the labels stored for it; an item goes "
        "to the next --model when the current one is not trusted on it, and the rest go to "
        "people (an audit).",
    )(function)


def cascade_models(
    models: Sequence[str], cascade: str | None = None, guarantee: float | None = None
) -> list[str]:
    """The judge models of a run, cheapest first: the ``--model``s given, or the deprecated
    ``--cascade M1,M2`` split on commas.

    Raises:
        click.UsageError: none given, both spellings, an empty name, a model listed twice, or
            several models without ``--guarantee``.
    """
    if cascade is not None:
        deprecated("--cascade M1,M2", "--model M1 --model M2")
        if models:
            raise click.UsageError("--cascade is the old spelling of repeated --model: give one")
        if guarantee is None:
            raise click.UsageError(
                "--cascade needs --guarantee TARGET: the agreement with people each judge must keep"
            )
        models = [name.strip() for name in cascade.split(",")]
        if any(not name for name in models):
            raise click.UsageError(f"--cascade {cascade!r} has an empty model name")
    if not models:
        raise click.UsageError("give --model (several, cheapest first, with --guarantee)")
    repeated = sorted({name for name in models if list(models).count(name) > 1})
    if repeated:
        raise click.UsageError(f"--model lists {', '.join(repeated)} more than once")
    if len(models) > 1 and guarantee is None:
        raise click.UsageError(
            "several --model judge down a cascade: give --guarantee TARGET, the agreement with "
            "people each judge must keep"
        )
    return list(models)


@contextmanager
def cascade_judges(
    card: Card, models: Sequence[str], db: Path, judge_options: Mapping[str, Any]
) -> Iterator[list[Judge]]:
    """One judge per model of a cascade, cheapest first, all on one store of ``db``; the mock
    banner once per mock model. Both cascades (of items and of pairs) build theirs here."""
    from judgecards.judging import Judge
    from judgecards.storage import Store

    with ExitStack() as stack:
        store = stack.enter_context(Store(db))
        judges = [
            stack.enter_context(Judge(card, model, db=store, **judge_options)) for model in models
        ]
        for model in dict.fromkeys(m for m in models if m.startswith("mock:")):
            mock_banner(model)
        yield judges


def judge_down(  # noqa: PLR0913  the run settings both cascades pass by name
    make: Callable[[list[Judge]], CascadeRunner[R]],
    card: Card,
    models: Sequence[str],
    units: Sequence[Mapping[str, Any]],
    *,
    heading: str,
    db: Path,
    concurrency: int,
    judge_options: Mapping[str, Any],
    reporter: Callable[[list[Judge]], StagedProgress] = StagedProgress,
) -> tuple[R, float]:
    """Build the judges and the cascade (``make``), calibrate it, print each stage and
    ``heading``, then send ``units`` down it with one progress line per judge; both cascades
    (of items and of pairs) run here.

    Returns:
        The run and the seconds spent judging.

    Raises:
        AuditError: a judge lacks labels, or no judge can meet the target (nothing called).
    """
    with cascade_judges(card, models, db, judge_options) as judges:
        cascade = make(judges)
        for stage in cascade.calibrate():
            click.echo(f"{stage.model}: {stage.selective}", err=True)
        click.echo(heading, err=True)
        started = time.perf_counter()
        with reporting(reporter(judges), where=str(db)) as progress:
            run = cascade.run(units, concurrency=concurrency, progress=progress)
        return run, time.perf_counter() - started


def score_cascade(
    card: Card,
    models: Sequence[str],
    items: Sequence[Mapping[str, Any]],
    *,
    target: float,
    delta: float,
    db: Path,
    concurrency: int,
    judge_options: Mapping[str, Any],
) -> tuple[list[JudgeResult], CascadeRun, float]:
    """Calibrate, then judge ``items`` down the cascade; escalated items become an audit.

    Returns:
        The results in input order (each with ``output["cascade"]``: who decided it, at what
        threshold), the run, and the seconds spent judging.

    Raises:
        AuditError: a judge lacks labels, or no judge can meet ``target`` (nothing called).
    """
    from calibration.cascades import Cascade

    run, elapsed = judge_down(
        lambda judges: Cascade(judges, target=target, delta=delta),
        card,
        models,
        items,
        heading=f"Judging {len(items)} items with {card.ref} down {' -> '.join(models)} (db {db})",
        db=db,
        concurrency=concurrency,
        judge_options=judge_options,
    )
    results = [decision.annotated() for decision in run.decisions]
    # The first judge with a threshold sees every item, so every decision has a result.
    return [result for result in results if result is not None], run, elapsed
