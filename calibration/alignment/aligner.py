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

**Pairwise cards** (a ``winner`` field and two answers) go the same way on pairs of answers,
through the same code: a pair is one unit (`judgecards.units.PairUnits`). The items are
labelled pairs (`calibration.alignment.pair_split`: people's labels on either order's result mapped
to one A/B naming); the split keeps pairs sharing an answer to the same prompt in one part, and
a candidate is refused, before any call, if an example pair shares an answer to the same prompt
with a pair it would be scored on; examples show both answers under the card's own tags and the
people's winner; each candidate judges every dev and test pair in both orders
(`judgecards.compare_many`), its winner (A only if A won both orders, B only if B won both, else
a tie) compared with the people's by unweighted kappa over A / B / tie; a pair either of whose
orders failed is an error. The stored run's field is ``winner`` and its counts are pairs. The
steps both kinds share are in `calibration.alignment.run`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from calibration.alignment.cards import card_path
from calibration.alignment.pair_split import PAIR_EXAMPLES_INTRO, labelled_pairs, split_pairs
from calibration.alignment.run import AlignmentResult, CandidateScore, Plan, run_plan
from calibration.alignment.split import AlignItem, labelled_items, shared_units, split_labelled
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
from judgecards.units import ITEMS, PairUnits, Units, is_pairwise

__all__ = ["AlignmentResult", "CandidateScore", "align", "alignment_runs"]


def unit_plan(  # noqa: PLR0913  keyword options a caller names, as align passes them
    store: Store,
    source: Card,
    model: str,
    labels: Sequence[Label],
    *,
    pairwise: bool,
    seed: int,
    k: int,
    concurrency: int,
    judge_options: dict[str, Any],
) -> Plan:
    """The `calibration.alignment.run.Plan` of a card: its labelled items (or pairs), their split,
    and how a candidate judges them (one judgment each, or both orders of each pair).

    Raises:
        AlignmentError: no label on the field aligned, or too few items (pairs) to split.
    """
    kind: Units[Any] = PairUnits() if pairwise else ITEMS
    if pairwise:
        field_name, pairs, used = labelled_pairs(store, source, model, labels)
        split = split_pairs(pairs, seed=seed, k=k)
    else:
        field_name, items, used = labelled_items(store, source, labels)
        split = split_labelled(items, seed=seed, k=k)
    field = label_fields(source)[field_name]
    fields = {field.name: field}

    def said(judged: Any) -> Any:
        """What one judged unit said on the field: a pair's two-order winner."""
        return judged.winner if pairwise else judge_labels(fields, judged).get(field.name)

    def judge_items(card: Card, scored: Sequence[AlignItem]) -> tuple[list[tuple[Any, Any]], int]:
        from judgecards.judging import Judge

        # A scratch store: the results database only gains the run's record.
        with (
            Store(":memory:") as scratch,
            Judge(card, model, db=scratch, cache=False, **judge_options) as judge,
        ):
            judged = kind.judge_many(
                judge,
                [{**item.inputs, "id": item.result_id} for item in scored],
                concurrency=concurrency,
            )
        found = [(said(j), item.human) for item, j in zip(scored, judged) if kind.usable(j)]
        said_human = [(verdict, human) for verdict, human in found if verdict is not None]
        return said_human, len(scored) - len(said_human)

    return Plan(
        field,
        split.pool,
        split.dev,
        split.test,
        tuple(used),
        judge_items,
        shared_units,
        examples_intro=PAIR_EXAMPLES_INTRO if pairwise else None,
    )


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


def align(  # noqa: PLR0913  public API: keyword-only options
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
    pairwise = "winner" in label_fields(source) and is_pairwise(source)
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
        plan = unit_plan(
            store,
            source,
            model,
            labels,
            pairwise=pairwise,
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
