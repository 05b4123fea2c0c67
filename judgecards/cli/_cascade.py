"""``score --guarantee T [--cascade M1,M2,...]``: judge down a calibrated cascade of models.

Kept apart from ``score`` so the plain path stays as it is. Every judge is built and the cascade
calibrated from the stored labels before any call, so a judge without enough labels stops the
run (exit 2) with nothing paid for; see `calibration.cascades.cascade`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from judgecards.cli._common import mock_banner
from judgecards.cli._progress import StagedProgress, reporting

if TYPE_CHECKING:
    from calibration.cascades import CascadeRun
    from judgecards.cards import Card
    from judgecards.judging import Judge
    from judgecards.storage import JudgeResult

__all__ = ["cascade_judges", "cascade_models", "score_cascade"]


def cascade_models(model: str | None, cascade: str | None, guarantee: float | None) -> list[str]:
    """The judge models of a run, cheapest first: ``--cascade`` split on commas, else ``--model``.

    Raises:
        click.UsageError: neither or both given, an empty name, a model listed twice, or
            ``--cascade`` without ``--guarantee``.
    """
    if cascade is None:
        if model is None:
            raise click.UsageError("give --model, or --cascade M1,M2 with --guarantee")
        return [model]
    if model is not None:
        raise click.UsageError("give --model or --cascade, not both")
    if guarantee is None:
        raise click.UsageError(
            "--cascade needs --guarantee TARGET: the agreement with people each judge must keep"
        )
    models = [name.strip() for name in cascade.split(",")]
    if any(not name for name in models):
        raise click.UsageError(f"--cascade {cascade!r} has an empty model name")
    repeated = sorted({name for name in models if models.count(name) > 1})
    if repeated:
        raise click.UsageError(f"--cascade lists {', '.join(repeated)} more than once")
    return models


@contextmanager
def cascade_judges(
    card: Card, models: Sequence[str], db: Path, judge_options: Mapping[str, Any]
) -> Iterator[list[Judge]]:
    """One judge per model of a cascade, cheapest first, all on one store of ``db``; the mock
    banner once per mock model. Both cascades (``score`` and ``compare``) build theirs here."""
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

    with cascade_judges(card, models, db, judge_options) as judges:
        cascade = Cascade(judges, target=target, delta=delta)
        for stage in cascade.calibrate():
            click.echo(f"{stage.model}: {stage.selective}", err=True)
        click.echo(
            f"Judging {len(items)} items with {card.ref} down {' -> '.join(models)} (db {db})",
            err=True,
        )
        started = time.perf_counter()
        with reporting(StagedProgress(judges), where=str(db)) as progress:
            run = cascade.run(items, concurrency=concurrency, progress=progress)
        elapsed = time.perf_counter() - started
    results = [decision.annotated() for decision in run.decisions]
    # The first judge with a threshold sees every item, so every decision has a result.
    return [result for result in results if result is not None], run, elapsed
