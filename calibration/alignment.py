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
   static prefix before every item (`calibration.align_cards`).
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
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from calibration._core import SmallSampleWarning
from calibration.agreement_measures import kappa
from calibration.align_cards import aligned_system, card_file_text, card_path, write_card
from calibration.align_split import AlignItem, AlignSplit, labelled_items, nearest, split_labelled
from calibration.label_fields import LabelField, judge_labels, label_fields
from calibration.migrations import opened
from calibration.records import AlignmentRun, Label
from calibration.repository import CalibrationRepository
from judgecards.cards import Card, CardLibrary, user_card_dirs
from judgecards.errors import AlignmentError
from judgecards.metrics.stats import Estimate
from judgecards.store import Store

__all__ = ["AlignmentResult", "CandidateScore", "align", "alignment_runs"]

AS_IS = "as-is"


@dataclass(frozen=True)
class CandidateScore:
    """A candidate card's agreement with the people on dev or test.

    Attributes:
        name: ``as-is``, ``examples``, ``disagreements``, ``guidelines`` or
            ``guidelines+examples``.
        kappa: Cohen's kappa with its bootstrap interval over the items judged without error.
        errors: items the judge returned an error record for (left out of ``kappa``).
    """

    name: str
    kappa: Estimate
    errors: int

    def to_dict(self) -> dict[str, Any]:
        """A strict-JSON dict (``nan`` becomes ``None``)."""
        values = self.kappa.to_dict()
        return {
            "name": self.name, "kappa": values["value"], "low": values["low"],
            "high": values["high"], "n": self.kappa.n, "errors": self.errors,
        }  # fmt: skip


@dataclass(frozen=True)
class AlignmentResult:
    """What `align` did.

    Attributes:
        run: the stored run.
        dev: every candidate's score on dev, in the order tried.
        test: the chosen candidate's score on test.
        card: the new card version written (``None`` when the card as is was best).
        notes: caveats (small samples).
    """

    run: AlignmentRun
    dev: tuple[CandidateScore, ...]
    test: CandidateScore
    card: Card | None
    notes: tuple[str, ...]

    def as_text(self) -> str:
        """The report ``judgecards align`` prints."""
        run = self.run
        lines = [
            f"Alignment run #{run.id}: {run.card} judged by {run.model}, kappa on {run.field!r} "
            f"(seed {run.seed}, k {run.k})",
            f"  split: {run.n_pool} example pool, {run.n_dev} dev, {run.n_test} test "
            "(stratified; pool items are never judged)",
            "  dev:",
        ]
        for score in self.dev:
            mark = "*" if score.name == run.chosen else " "
            lines.append(f"   {mark} {score.name:<20} {_kappa_text(score)}")
        lines.append(f"  test ({run.chosen}): {_kappa_text(self.test)}")
        if self.card is not None:
            lines.append(f"  wrote {self.card.ref} to {self.card.path}")
        else:
            lines.append("  the card as is agreed best: no new version written")
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines)


def _kappa_text(score: CandidateScore) -> str:
    k = score.kappa
    value = "n/a" if math.isnan(k.value) else f"{k.value:.3f}"
    interval = "" if math.isnan(k.low) else f" [{k.low:.3f}, {k.high:.3f}]"
    errors = f", {score.errors} error(s)" if score.errors else ""
    return f"kappa {value}{interval} (n={k.n}{errors})"


@dataclass(frozen=True)
class _Candidate:
    name: str
    system: str | None
    examples: tuple[AlignItem, ...] = ()


# --------------------------------------------------------------------------- candidates


def _candidates(
    card: Card, split: AlignSplit, field: str, *, k: int, guidelines: str | None
) -> list[_Candidate]:
    def system(examples: Sequence[AlignItem], with_guidelines: bool) -> str | None:
        shown = [(item.inputs, {field: item.human}) for item in examples]
        return aligned_system(
            card, examples=shown, guidelines=guidelines if with_guidelines else None
        )

    closest = nearest(split.pool, split.dev, k)
    candidates = [
        _Candidate(AS_IS, card.spec.system),
        _Candidate("examples", system(closest, False), closest),
    ]
    missed = [item for item in split.pool if item.judged is not None and item.judged != item.human]
    if missed:
        chosen = nearest(missed, split.dev, k)
        candidates.append(_Candidate("disagreements", system(chosen, False), chosen))
    if guidelines is not None:
        candidates.append(_Candidate("guidelines", system((), True)))
        candidates.append(_Candidate("guidelines+examples", system(closest, True), closest))
    return candidates


# --------------------------------------------------------------------------- scoring


class _Scorer:
    """Scores candidates with real judges on a scratch store; builds each candidate card once."""

    def __init__(
        self, card: Card, model: str, field: LabelField, version: int, scratch: Path,
        *, concurrency: int, level: float, n_resamples: int, seed: int,
        judge_options: Mapping[str, Any],
    ) -> None:  # fmt: skip
        self.card, self.model, self.field, self.version = card, model, field, version
        self.scratch = scratch
        self.concurrency, self.level, self.n_resamples, self.seed = (
            concurrency, level, n_resamples, seed,
        )  # fmt: skip
        self.judge_options = dict(judge_options)
        self.cards: dict[str, Card] = {}

    def card_of(self, candidate: _Candidate) -> Card:
        if candidate.name == AS_IS:
            return self.card
        if candidate.name not in self.cards:
            path = card_path(self.scratch / candidate.name, self.card.name, self.version)
            text = card_file_text(
                self.card, version=self.version, system=candidate.system,
                description=self.card.spec.description, note=(),
            )  # fmt: skip
            self.cards[candidate.name] = write_card(path, text, expect_system=candidate.system)
        return self.cards[candidate.name]

    def score(self, candidate: _Candidate, items: Sequence[AlignItem]) -> CandidateScore:
        from judgecards.judge import Judge

        shown = {example.key for example in candidate.examples}
        leaked = [item.result_id for item in items if item.key in shown]
        if leaked:  # the guard: an example is never an item the candidate is scored on
            raise AlignmentError(
                f"leakage guard: candidate {candidate.name!r} shows result(s) "
                f"{', '.join(leaked[:3])} as examples and would be scored on them"
            )
        with (
            Store(":memory:") as scratch,
            Judge(
                self.card_of(candidate), self.model, db=scratch, cache=False, **self.judge_options
            ) as judge,
        ):
            results = judge.score_many(
                [{**item.inputs, "id": item.result_id} for item in items],
                concurrency=self.concurrency,
            )
        fields = {self.field.name: self.field}
        pairs = [
            (judge_labels(fields, result).get(self.field.name), item.human)
            for item, result in zip(items, results)
            if result.ok
        ]
        pairs = [(judged, human) for judged, human in pairs if judged is not None]
        errors = len(items) - len(pairs)
        if not pairs:
            return CandidateScore(
                candidate.name, Estimate(math.nan, math.nan, math.nan, self.level, 0), errors
            )
        judged, human = [p[0] for p in pairs], [p[1] for p in pairs]
        scale = self.field.scale
        if scale is not None:
            scale = (*scale, *sorted({v for v in judged + human if v not in scale}, key=str))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SmallSampleWarning)  # said once, in the notes
            estimate = kappa(
                judged, human, weights="quadratic" if self.field.ordinal else None,
                labels=scale, level=self.level, n_resamples=self.n_resamples, seed=self.seed,
            )  # fmt: skip
        return CandidateScore(candidate.name, estimate, errors)


def _best(scores: Sequence[CandidateScore]) -> int:
    best = 0
    for index, score in enumerate(scores):
        value = score.kappa.value
        if not math.isnan(value) and (
            math.isnan(scores[best].kappa.value) or value > scores[best].kappa.value
        ):
            best = index
    return best


# --------------------------------------------------------------------------- the run


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
        card: ``name`` (its newest version; labels of every version count) or ``name@version``.
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
        AlignmentError: no labels, too few to split, no directory to write to, a pairwise card,
            or a leak of examples into the items scored (all before any call).
        OutputError: the new card file cannot be written (it is never half-written).
    """
    if k < 1:
        raise AlignmentError(f"k must be at least 1, got {k}")
    library = CardLibrary(cards_dir)
    source = library.get(card)
    if any(spec.kind == "winner" for spec in label_fields(source).values()):
        raise AlignmentError(
            f"{source.ref} is a pairwise card: only cards judging one item can be aligned yet"
        )
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
        field_name, items, used = labelled_items(store, source, labels)
        field = label_fields(source)[field_name]
        split = split_labelled(items, seed=seed, k=k)
        candidates = _candidates(source, split, field_name, k=k, guidelines=guidelines)
        version = max(c.version for c in library.cards() if c.name == source.name) + 1
        destination = card_path(target, source.name, version)
        if destination.exists():
            raise AlignmentError(f"{destination} already exists; nothing was judged")
        with tempfile.TemporaryDirectory(prefix="judgecards-align-") as scratch:
            scorer = _Scorer(
                source, model, field, version, Path(scratch), concurrency=concurrency,
                level=level, n_resamples=n_resamples, seed=seed, judge_options=judge_options,
            )  # fmt: skip
            for candidate in candidates:  # every candidate card loads before anything is paid for
                scorer.card_of(candidate)
            dev = []
            for candidate in candidates:
                if announce is not None:
                    announce(
                        f"dev: judging {len(split.dev)} items with candidate {candidate.name!r}"
                    )
                dev.append(scorer.score(candidate, split.dev))
            chosen = candidates[_best(dev)]
            if announce is not None:
                announce(f"test: judging {len(split.test)} items with candidate {chosen.name!r}")
            test = scorer.score(chosen, split.test)
        written: Card | None = None
        if chosen.name != AS_IS:
            note = (
                f"Written by `judgecards align` from {source.ref} ({source.hash}):",
                f"candidate {chosen.name!r} judged by {model}, dev "
                f"{_kappa_text(dev[_best(dev)])}, test {_kappa_text(test)}.",
            )
            text = card_file_text(
                source, version=version, system=chosen.system,
                description=source.spec.description, note=note,
            )  # fmt: skip
            written = write_card(destination, text, expect_system=chosen.system)
        best = dev[_best(dev)].to_dict()
        tested = test.to_dict()
        values = {
            "card": source.ref, "card_hash": source.hash, "label_set_hash": _label_set_hash(used),
            "model": model, "field": field_name, "seed": seed, "k": k, "n_pool": len(split.pool),
            "n_dev": len(split.dev), "n_test": len(split.test),
            "candidates": [score.to_dict() for score in dev], "chosen": chosen.name,
            "dev_kappa": best["kappa"], "dev_low": best["low"], "dev_high": best["high"],
            "test_kappa": tested["kappa"], "test_low": tested["low"], "test_high": tested["high"],
            "test_n": test.kappa.n, "new_card": written.ref if written else None,
            "new_card_hash": written.hash if written else None,
            "new_card_path": str(written.path) if written else None,
            "created_at": datetime.now(timezone.utc).isoformat(),
        }  # fmt: skip
        try:
            run_id = repository.add_alignment_run(values)
        except BaseException:
            if written is not None:  # no card without its stored run
                written.path.unlink(missing_ok=True)
            raise
        run = next(r for r in repository.alignment_runs(card=source.ref) if r.id == run_id)
    notes = []
    if len(split.dev) < 30 or len(split.test) < 30:
        notes.append(
            f"{len(split.dev)} dev and {len(split.test)} test items (fewer than 30): the "
            "intervals are wide and the choice between close candidates is noisy"
        )
    return AlignmentResult(run, tuple(dev), test, written, tuple(notes))


def _label_set_hash(labels: Sequence[Label]) -> str:
    rows = sorted(
        json.dumps([label.result_id, label.labeler, label.field, label.value], sort_keys=True)
        for label in labels
    )
    return "sha256:" + hashlib.sha256("\n".join(rows).encode()).hexdigest()


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
