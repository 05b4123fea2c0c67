"""Aligning a judge to its people: pick, on held-out human labels, the version of a card that
agrees with them best, and write it as a new card version.

`align` (``judgecards align``) works on the human labels stored for one card and judge model:

1. **Items.** Each labelled result is an item: its inputs (from the results table) and its
   reference label on one field — the verdict, else the first score axis — the labelers'
   majority (an item whose labelers tie is left out). Items with the same inputs are one item.
2. **Split.** Stratified by reference label and seeded, into an example pool (40%), dev (30%)
   and test (the rest). The **leakage guard**: no item (by a hash of its inputs) is in two
   parts, and no candidate is ever scored on an item it shows as an example; either would raise
   `AlignmentError` before a call.
3. **Candidates.** The card as is; the card with ``k`` pool examples nearest to the items judged
   (mean word-set Jaccard similarity to the dev items, taking labels in turn so one label cannot
   fill every slot); the card with ``k`` pool items the stored judge got wrong (past
   disagreements), when there are any; given written guidelines, the card with them, and with
   them and the nearest examples. Examples and guidelines go in the card's system text, the
   static prefix before every item (`calibration.alignment.cards`).
4. **Dev.** Each candidate judges the dev items with a real `judgecards.Judge` (results kept in a
   scratch in-memory store, so the results database only gains the run's record), and is
   measured by Cohen's kappa against the people (quadratic-weighted on a score axis) with its
   bootstrap interval (`calibration.kappa`). The highest kappa wins; a tie goes to the simpler
   candidate, listed first.
5. **Test.** The winner judges the test items once; that kappa is the honest estimate.
6. **Write.** Unless the card as is won, the winner becomes version ``newest + 1`` of the card in
   the first user card directory, loaded back before the run is stored. The run (card and
   label-set hashes, model, every candidate's dev kappa, the test kappa, the card written) is
   stored in ``alignment_runs``; `alignment_runs` lists them.

**Pairwise cards** (a ``winner`` field) go the same way on pairs of answers
(`calibration.alignment.pairwise`): the items are labelled pairs, the split keeps pairs sharing an
answer to the same prompt in one part, examples show both answers and the people's winner, and
each candidate judges every dev and test pair in both orders; the stored run's field is
``winner`` and its counts are pairs. The steps both kinds share are in `calibration.alignment.run`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from calibration.alignment.cards import card_path
from calibration.alignment.pair_split import ANSWERS
from calibration.alignment.pairwise import pair_plan
from calibration.alignment.run import AlignmentResult, CandidateScore, Plan, run_plan
from calibration.alignment.split import AlignItem, labelled_items, split_labelled
from calibration.labels import (
    AlignmentRun,
    CalibrationRepository,
    Label,
    judge_labels,
    label_fields,
    opened,
)
from judgecards.cards import Card, CardLibrary, user_card_dirs
from judgecards.errors import AlignmentError
from judgecards.storage import Store

__all__ = ["AlignmentResult", "CandidateScore", "align", "alignment_runs"]


def single_plan(
    store: Store,
    source: Card,
    model: str,
    labels: Sequence[Label],
    *,
    seed: int,
    k: int,
    concurrency: int,
    judge_options: dict[str, Any],
) -> Plan:
    """The `calibration.alignment.run.Plan` of a card that judges one item at a time."""
    field_name, items, used = labelled_items(store, source, labels)
    field = label_fields(source)[field_name]
    split = split_labelled(items, seed=seed, k=k)

    def judge_items(card: Card, scored: Sequence[AlignItem]) -> tuple[list[tuple[Any, Any]], int]:
        from judgecards.judging import Judge

        # A scratch store: the results database only gains the run's record.
        with (
            Store(":memory:") as scratch,
            Judge(card, model, db=scratch, cache=False, **judge_options) as judge,
        ):
            results = judge.score_many(
                [{**item.inputs, "id": item.result_id} for item in scored], concurrency=concurrency
            )
        fields = {field.name: field}
        found = [
            (judge_labels(fields, result).get(field.name), item.human)
            for item, result in zip(scored, results)
            if result.ok
        ]
        pairs = [(judged, human) for judged, human in found if judged is not None]
        return pairs, len(scored) - len(pairs)

    return Plan(field, split.pool, split.dev, split.test, tuple(used), judge_items, same_inputs)


def same_inputs(examples: Sequence[AlignItem], items: Sequence[AlignItem]) -> list[str]:
    """Result ids of ``items`` with the same inputs as an example (single items' leak)."""
    shown = {example.key for example in examples}
    return [item.result_id for item in items if item.key in shown]


def _target_dir(
    write_to: str | Path | None, cards_dir: str | Path | Sequence[str | Path] | None
) -> Path:
    if write_to is not None:
        target = Path(write_to)
    else:
        user_dirs = user_card_dirs(cards_dir)
        if not user_dirs:
            raise AlignmentError(
                "no card directory to write the aligned card to: pass --cards-dir DIR "
                "(or set JUDGECARDS_CARDS_DIR)"
            )
        target = user_dirs[0]
    if not target.is_dir():
        raise AlignmentError(f"card directory {target} does not exist")
    if not os.access(target, os.W_OK | os.X_OK):
        raise AlignmentError(f"card directory {target} is not writable")
    return target


def align(
    card: str,
    model: str,
    *,
    db: Store | str | Path | None = None,
    k: int = 4,
    guidelines: str | None = None,
    seed: int = 7,
    cards_dir: str | Path | Sequence[str | Path] | None = None,
    write_to: str | Path | None = None,
    concurrency: int = 8,
    announce: Callable[[str], None] | None = None,
    level: float = 0.95,
    n_resamples: int = 2000,
    **judge_options: Any,
) -> AlignmentResult:
    """Align ``card`` to the human labels stored for it and ``model`` (see the module docstring).

    Args:
        card: ``name`` (its newest version; labels of every version count) or ``name@version``;
            a single-item or a pairwise card.
        model: the judge model, ``provider:model``; its labelled results are the items.
        db: the results database with the labels (a path, a `Store`, or ``JUDGECARDS_DB``).
        k: examples per example candidate.
        guidelines: written guidelines to try (``None``: no guideline candidates).
        seed: the split's seed (also the bootstrap seed).
        cards_dir: user card directories; the first is where the new version is written.
        write_to: write the new version here instead.
        concurrency: calls in flight per candidate.
        announce: told, in a sentence, before each candidate is scored (the command line
            prints it, so a long run shows where it is).
        level: confidence level of the kappa intervals.
        n_resamples: bootstrap resamples per interval.
        **judge_options: passed to each `judgecards.Judge` (``base_url``, ``timeout``,
            ``api_key``, ``provider``, ``max_attempts``, ...).

    Returns:
        An `AlignmentResult`: the stored run, every candidate's dev kappa, the chosen one's
        test kappa and the card version written (``None`` when the card as is was best).

    Raises:
        AlignmentError: no labels, too few to split, no directory to write to, or a leak of
            examples into the items scored (all before any call).
        OutputError: the new card file cannot be written (it is never half-written).
    """
    if k < 1:
        raise AlignmentError(f"k must be at least 1, got {k}")
    library = CardLibrary(cards_dir)
    source = library.get(card)
    # A pairwise card: a winner to label and two answers to put in both orders.
    pairwise = "winner" in label_fields(source) and set(ANSWERS) <= set(source.spec.inputs)
    target = _target_dir(write_to, cards_dir)
    if guidelines is not None and not guidelines.strip():
        raise AlignmentError("the guidelines are empty")
    with opened(db) as store:
        repository = CalibrationRepository(store)
        labels = repository.labels(card=card, model=model)
        if not labels:
            raise AlignmentError(
                f"no human labels of {card} judged by {model}: import some with "
                "`judgecards labels import` or an audit, then align"
            )
        make_plan = pair_plan if pairwise else single_plan
        plan = make_plan(
            store,
            source,
            model,
            labels,
            seed=seed,
            k=k,
            concurrency=concurrency,
            judge_options=judge_options,
        )
        version = max(c.version for c in library.cards() if c.name == source.name) + 1
        destination = card_path(target, source.name, version)
        if destination.exists():
            raise AlignmentError(f"{destination} already exists; nothing was judged")
        return run_plan(
            source,
            model,
            plan,
            repository=repository,
            version=version,
            destination=destination,
            guidelines=guidelines,
            seed=seed,
            k=k,
            level=level,
            n_resamples=n_resamples,
            announce=announce,
            unit="pairs" if pairwise else "items",
        )


def alignment_runs(
    *, db: Store | str | Path | None = None, card: str | None = None, model: str | None = None
) -> list[AlignmentRun]:
    """The alignment runs stored in a results database, oldest first.

    Args:
        db: the results database (a path, a `Store`, or ``JUDGECARDS_DB``).
        card: only runs that aligned this card, ``name`` or ``name@version``.
        model: only runs with this judge model.

    Returns:
        Every matching `AlignmentRun` (empty when none was stored).
    """
    with opened(db) as store:
        return CalibrationRepository(store).alignment_runs(card=card, model=model)
