"""What single-item and pairwise alignment share: the candidates, their cards, kappa against the
people, the choice on dev, the one test score, and the written card version and stored run.

`calibration.alignment` builds one `Plan` for either kind — the labelled items (or pairs) split
into pool, dev and test, and how a candidate card judges them and what its examples leak — and
hands it to `run_plan`, so the two kinds cannot drift apart in how they choose, write or store.
"""

from __future__ import annotations

import hashlib
import json
import math
import tempfile
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from calibration.alignment.cards import aligned_system, card_file_text, card_path, write_card
from calibration.alignment.split import AlignItem, nearest
from calibration.labels import AlignmentRun, CalibrationRepository, Label, LabelField
from calibration.stats import SmallSampleWarning, kappa
from judgecards.cards import Card
from judgecards.errors import AlignmentError
from judgecards.metrics.stats import Estimate

__all__ = [
    "AS_IS",
    "AlignmentResult",
    "Candidate",
    "CandidateScore",
    "Plan",
    "Scorer",
    "candidates",
    "run_plan",
]

AS_IS = "as-is"


@dataclass(frozen=True)
class CandidateScore:
    """A candidate card's agreement with the people on dev or test.

    Attributes:
        name: ``as-is``, ``examples``, ``disagreements``, ``guidelines`` or
            ``guidelines+examples``.
        kappa: Cohen's kappa with its bootstrap interval over the items judged without error
            (for a pairwise card, the winner of both orders against the people's winner).
        errors: items the judge returned an error record for (left out of ``kappa``).
    """

    name: str
    kappa: Estimate
    errors: int

    def to_dict(self) -> dict[str, Any]:
        """A strict-JSON dict (``nan`` becomes ``None``)."""
        values = self.kappa.to_dict()
        return {
            "name": self.name,
            "kappa": values["value"],
            "low": values["low"],
            "high": values["high"],
            "n": self.kappa.n,
            "errors": self.errors,
        }


@dataclass(frozen=True)
class AlignmentResult:
    """What `calibration.align` did.

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
        split = (
            f"  split: {run.n_pool} example pool, {run.n_dev} dev, {run.n_test} test pairs "
            "(stratified; a question's pairs that share an answer stay in one part; pool pairs "
            "are never judged; dev and test pairs are judged in both orders)"
            if run.field == "winner"
            else f"  split: {run.n_pool} example pool, {run.n_dev} dev, {run.n_test} test "
            "(stratified; pool items are never judged)"
        )
        lines = [
            f"Alignment run #{run.id}: {run.card} judged by {run.model}, kappa on {run.field!r} "
            f"(seed {run.seed}, k {run.k})",
            split,
            "  dev:",
        ]
        for score in self.dev:
            mark = "*" if score.name == run.chosen else " "
            lines.append(f"   {mark} {score.name:<20} {kappa_text(score)}")
        lines.append(f"  test ({run.chosen}): {kappa_text(self.test)}")
        if self.card is not None:
            lines.append(f"  wrote {self.card.ref} to {self.card.path}")
        else:
            lines.append("  the card as is agreed best: no new version written")
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines)


def kappa_text(score: CandidateScore) -> str:
    """``kappa 0.712 [0.55, 0.85] (n=30)``: a score as the report and the card's note say it."""
    k = score.kappa
    value = "n/a" if math.isnan(k.value) else f"{k.value:.3f}"
    interval = "" if math.isnan(k.low) else f" [{k.low:.3f}, {k.high:.3f}]"
    errors = f", {score.errors} error(s)" if score.errors else ""
    return f"kappa {value}{interval} (n={k.n}{errors})"


@dataclass(frozen=True)
class Candidate:
    """A version of the card to try: its system text and the pool items it shows as examples."""

    name: str
    system: str | None
    examples: tuple[AlignItem, ...] = ()


def candidates(
    card: Card,
    pool: Sequence[AlignItem],
    dev: Sequence[AlignItem],
    field: str,
    *,
    k: int,
    guidelines: str | None,
    examples_intro: str | None = None,
) -> list[Candidate]:
    """The card as is; with ``k`` pool examples nearest to dev; with ``k`` past disagreements
    (pool items the stored judge got wrong), when there are any; with ``guidelines``, alone and
    with the nearest examples. Simpler candidates come first: a tie on dev goes to them."""

    def system(examples: Sequence[AlignItem], with_guidelines: bool) -> str | None:
        shown = [(item.inputs, {field: item.human}) for item in examples]
        return aligned_system(
            card,
            examples=shown,
            guidelines=guidelines if with_guidelines else None,
            examples_intro=examples_intro,
        )

    closest = nearest(pool, dev, k)
    found = [
        Candidate(AS_IS, card.spec.system),
        Candidate("examples", system(closest, False), closest),
    ]
    missed = [item for item in pool if item.judged is not None and item.judged != item.human]
    if missed:
        chosen = nearest(missed, dev, k)
        found.append(Candidate("disagreements", system(chosen, False), chosen))
    if guidelines is not None:
        found.append(Candidate("guidelines", system((), True)))
        found.append(Candidate("guidelines+examples", system(closest, True), closest))
    return found


JudgeItems = Callable[[Card, Sequence[AlignItem]], tuple[list[tuple[Any, Any]], int]]
"""Judges items with a candidate card: ``(judged, human)`` per usable item, and the number of
items that came back as errors (or without a value on the field)."""


@dataclass(frozen=True)
class Plan:
    """One alignment, ready to be paid for: the split, and how to judge with a candidate.

    Attributes:
        field: the label field kappa is measured on.
        pool, dev, test: the split (already checked by its leakage guard).
        used: the human labels the items rest on (hashed into the stored run).
        judge_items: judges items with a candidate card (see `JudgeItems`).
        leaks: the items (named by result id) that a candidate's examples would leak into, if
            it were scored on them; non-empty refuses the scoring before a call.
        examples_intro: the sentence that introduces the examples in the system text
            (``None``: `calibration.alignment.cards`'s single-item one).
    """

    field: LabelField
    pool: tuple[AlignItem, ...]
    dev: tuple[AlignItem, ...]
    test: tuple[AlignItem, ...]
    used: tuple[Label, ...]
    judge_items: JudgeItems
    leaks: Callable[[Sequence[AlignItem], Sequence[AlignItem]], list[str]]
    examples_intro: str | None = None


class Scorer:
    """Scores candidates of ``card`` on items; writes each candidate's card once, under
    ``scratch``, as version ``version`` (so it loads exactly as the written version would)."""

    def __init__(
        self,
        card: Card,
        plan: Plan,
        version: int,
        scratch: Path,
        *,
        level: float,
        n_resamples: int,
        seed: int,
    ) -> None:
        self.card, self.plan, self.version, self.scratch = card, plan, version, scratch
        self.level, self.n_resamples, self.seed = level, n_resamples, seed
        self.cards: dict[str, Card] = {}

    def card_of(self, candidate: Candidate) -> Card:
        if candidate.name == AS_IS:
            return self.card
        if candidate.name not in self.cards:
            path = card_path(self.scratch / candidate.name, self.card.name, self.version)
            text = card_file_text(
                self.card,
                version=self.version,
                system=candidate.system,
                description=self.card.spec.description,
                note=(),
            )
            self.cards[candidate.name] = write_card(path, text, expect_system=candidate.system)
        return self.cards[candidate.name]

    def guard(self, candidate: Candidate, items: Sequence[AlignItem]) -> None:
        """The leakage guard: a candidate is never scored on what it shows as examples."""
        leaked = self.plan.leaks(candidate.examples, items)
        if leaked:
            raise AlignmentError(
                f"leakage guard: candidate {candidate.name!r} shows result(s) "
                f"{', '.join(leaked[:3])} as examples and would be scored on them"
            )

    def score(self, candidate: Candidate, items: Sequence[AlignItem]) -> CandidateScore:
        self.guard(candidate, items)
        pairs, errors = self.plan.judge_items(self.card_of(candidate), items)
        if not pairs:
            return CandidateScore(
                candidate.name, Estimate(math.nan, math.nan, math.nan, self.level, 0), errors
            )
        judged, human = [p[0] for p in pairs], [p[1] for p in pairs]
        field = self.plan.field
        scale = field.scale
        if scale is not None:
            scale = (*scale, *sorted({v for v in judged + human if v not in scale}, key=str))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SmallSampleWarning)  # said once, in the notes
            estimate = kappa(
                judged,
                human,
                weights="quadratic" if field.ordinal else None,
                labels=scale,
                level=self.level,
                n_resamples=self.n_resamples,
                seed=self.seed,
            )
        return CandidateScore(candidate.name, estimate, errors)


def best_index(scores: Sequence[CandidateScore]) -> int:
    """The highest kappa on dev; the first (simplest) of equals; nan never wins."""
    best = 0
    for index, score in enumerate(scores):
        value = score.kappa.value
        if not math.isnan(value) and (
            math.isnan(scores[best].kappa.value) or value > scores[best].kappa.value
        ):
            best = index
    return best


def label_set_hash(labels: Sequence[Label]) -> str:
    """``sha256:<hex>`` over the labels (result, labeler, field, value), in no particular order."""
    rows = sorted(
        json.dumps([label.result_id, label.labeler, label.field, label.value], sort_keys=True)
        for label in labels
    )
    return "sha256:" + hashlib.sha256("\n".join(rows).encode()).hexdigest()


def run_plan(  # noqa: PLR0913  keyword-only options of one alignment run
    source: Card,
    model: str,
    plan: Plan,
    *,
    repository: CalibrationRepository,
    version: int,
    destination: Path,
    guidelines: str | None,
    seed: int,
    k: int,
    level: float,
    n_resamples: int,
    announce: Callable[[str], None] | None,
    unit: str = "items",
) -> AlignmentResult:
    """Build every candidate card, score each on dev, the best once on test; write the winner
    as ``destination`` (unless the card as is won) and store the run; no card without its run.

    Raises:
        AlignmentError: a candidate would be scored on its own examples, or a candidate card
            does not load (both before any call).
        OutputError: the new card file cannot be written.
    """
    tried = candidates(
        source,
        plan.pool,
        plan.dev,
        plan.field.name,
        k=k,
        guidelines=guidelines,
        examples_intro=plan.examples_intro,
    )
    with tempfile.TemporaryDirectory(prefix="judgecards-align-") as scratch:
        scorer = Scorer(
            source, plan, version, Path(scratch), level=level, n_resamples=n_resamples, seed=seed
        )
        for candidate in tried:  # every candidate leaks nothing and loads before a call
            scorer.guard(candidate, plan.dev)
            scorer.guard(candidate, plan.test)
            scorer.card_of(candidate)
        dev = []
        for candidate in tried:
            if announce is not None:
                announce(f"dev: judging {len(plan.dev)} {unit} with candidate {candidate.name!r}")
            dev.append(scorer.score(candidate, plan.dev))
        best = best_index(dev)
        chosen = tried[best]
        if announce is not None:
            announce(f"test: judging {len(plan.test)} {unit} with candidate {chosen.name!r}")
        test = scorer.score(chosen, plan.test)
    written: Card | None = None
    if chosen.name != AS_IS:
        note = (
            f"Written by `judgecards align` from {source.ref} ({source.hash}):",
            f"candidate {chosen.name!r} judged by {model}, dev {kappa_text(dev[best])}, "
            f"test {kappa_text(test)}.",
        )
        text = card_file_text(
            source,
            version=version,
            system=chosen.system,
            description=source.spec.description,
            note=note,
        )
        written = write_card(destination, text, expect_system=chosen.system)
    run = _store_run(
        repository, source, model, plan, dev[best], test, dev, chosen, written, seed, k
    )
    notes = []
    if len(plan.dev) < 30 or len(plan.test) < 30:
        notes.append(
            f"{len(plan.dev)} dev and {len(plan.test)} test {unit} (fewer than 30): the "
            "intervals are wide and the choice between close candidates is noisy"
        )
    return AlignmentResult(run, tuple(dev), test, written, tuple(notes))


def _store_run(  # noqa: PLR0913, PLR0917  one run's facts, written in one transaction
    repository: CalibrationRepository,
    source: Card,
    model: str,
    plan: Plan,
    best: CandidateScore,
    test: CandidateScore,
    dev: Sequence[CandidateScore],
    chosen: Candidate,
    written: Card | None,
    seed: int,
    k: int,
) -> AlignmentRun:
    values: Mapping[str, Any] = {
        "card": source.ref,
        "card_hash": source.hash,
        "label_set_hash": label_set_hash(plan.used),
        "model": model,
        "field": plan.field.name,
        "seed": seed,
        "k": k,
        "n_pool": len(plan.pool),
        "n_dev": len(plan.dev),
        "n_test": len(plan.test),
        "candidates": [score.to_dict() for score in dev],
        "chosen": chosen.name,
        "dev_kappa": best.to_dict()["kappa"],
        "dev_low": best.to_dict()["low"],
        "dev_high": best.to_dict()["high"],
        "test_kappa": test.to_dict()["kappa"],
        "test_low": test.to_dict()["low"],
        "test_high": test.to_dict()["high"],
        "test_n": test.kappa.n,
        "new_card": written.ref if written else None,
        "new_card_hash": written.hash if written else None,
        "new_card_path": str(written.path) if written else None,
        "created_at": datetime.now(timezone.utc).isoformat(),
    }
    try:
        run_id = repository.add_alignment_run(dict(values))
    except BaseException:
        if written is not None:  # no card without its stored run
            written.path.unlink(missing_ok=True)
        raise
    return next(r for r in repository.alignment_runs(card=source.ref) if r.id == run_id)
