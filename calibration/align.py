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
import random
import re
import tempfile
import warnings
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from calibration._core import SmallSampleWarning
from calibration.agreement import kappa
from calibration.align_cards import aligned_system, card_file_text, card_path, write_card
from calibration.audit_analysis import primary_order
from calibration.label_fields import LabelField, judge_labels, label_fields
from calibration.migrations import opened
from calibration.records import AlignmentRun, Label
from calibration.repository import CalibrationRepository
from judgecards.cards import Card, CardLibrary, user_card_dirs
from judgecards.errors import AlignmentError
from judgecards.metrics.stats import Estimate
from judgecards.store import Store

__all__ = [
    "AlignItem",
    "AlignSplit",
    "AlignmentResult",
    "CandidateScore",
    "align",
    "alignment_runs",
    "split_labelled",
]

MIN_DEV = 10
"""Fewest dev (and test) items: below this a kappa says nothing about which candidate is best."""
POOL_SHARE = 0.4
DEV_SHARE = 0.3
AS_IS = "as-is"
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class AlignItem:
    """One human-labelled item.

    Attributes:
        result_id: the stored result the labels are on.
        item_id: the caller's item id.
        inputs: the card inputs, as stored with the result.
        human: the people's reference label on the aligned field.
        judged: what the stored result said on that field (``None``: an error record).
        key: sha256 of the inputs, the unit the leakage guard keeps apart.
    """

    result_id: str
    item_id: str | None
    inputs: dict[str, Any]
    human: Any
    judged: Any
    key: str


@dataclass(frozen=True)
class AlignSplit:
    """Example pool, dev and test; built only if no item is in two of them."""

    pool: tuple[AlignItem, ...]
    dev: tuple[AlignItem, ...]
    test: tuple[AlignItem, ...]

    def __post_init__(self) -> None:
        parts = {"pool": self.pool, "dev": self.dev, "test": self.test}
        seen: dict[str, str] = {}
        for part, items in parts.items():
            for item in items:
                for key in (item.key, item.result_id):
                    if seen.setdefault(key, part) != part:
                        raise AlignmentError(
                            f"leakage guard: result {item.result_id} is in both {seen[key]} and "
                            f"{part}; nothing was judged"
                        )


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


# --------------------------------------------------------------------------- items and split


def _inputs_key(inputs: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()


def _primary_field(fields: Mapping[str, LabelField], labels: Sequence[Label]) -> str:
    labelled = {label.field for label in labels}
    for name in primary_order(fields):
        if name in labelled and fields[name].kind != "winner":
            return name
    raise AlignmentError(
        f"none of the human labels is on a field of the card ({', '.join(fields) or 'none'})"
    )


def _labelled_items(
    store: Store, card: Card, labels: Sequence[Label]
) -> tuple[str, list[AlignItem], list[Label]]:
    """The aligned field, one item per distinct inputs, and the labels they rest on."""
    fields = label_fields(card)
    name = _primary_field(fields, labels)
    by_result: dict[str, dict[str, Any]] = defaultdict(dict)
    for label in labels:
        if label.field == name:
            by_result[label.result_id][label.labeler] = label.value  # the newest label wins
    items: list[AlignItem] = []
    seen: set[str] = set()
    for result_id, by_labeler in by_result.items():
        ranked = Counter(json.dumps(v) for v in by_labeler.values()).most_common()
        if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
            continue  # the labelers tie: no reference
        stored = store.get(result_id)
        if stored is None:
            continue
        result, stored_inputs = stored
        inputs = {k: v for k, v in stored_inputs.items() if k in card.spec.inputs}
        key = _inputs_key(inputs)
        if key in seen:
            continue
        seen.add(key)
        judged = judge_labels(fields, result).get(name) if result.ok else None
        items.append(
            AlignItem(result_id, result.item_id, inputs, json.loads(ranked[0][0]), judged, key)
        )
    used = {item.result_id for item in items}
    return (
        name,
        items,
        [label for label in labels if label.field == name and label.result_id in used],
    )


def split_labelled(items: Sequence[AlignItem], *, seed: int, k: int) -> AlignSplit:
    """Stratified, seeded split into pool (40%), dev (30%) and test (the rest).

    Items with the same inputs count once (the first is kept), so no item can be in two parts.

    Raises:
        AlignmentError: fewer than ``k`` pool items or `MIN_DEV` dev or test items.
    """
    unique = list({item.key: item for item in reversed(items)}.values())[::-1]
    strata: dict[str, list[AlignItem]] = defaultdict(list)
    for item in sorted(unique, key=lambda i: i.key):
        strata[json.dumps(item.human, sort_keys=True)].append(item)
    rng = random.Random(seed)
    pool: list[AlignItem] = []
    dev: list[AlignItem] = []
    test: list[AlignItem] = []
    for label in sorted(strata):
        members = strata[label]
        rng.shuffle(members)
        n_pool = round(len(members) * POOL_SHARE)
        n_dev = round(len(members) * DEV_SHARE)
        pool += members[:n_pool]
        dev += members[n_pool : n_pool + n_dev]
        test += members[n_pool + n_dev :]
    if len(pool) < k or len(dev) < MIN_DEV or len(test) < MIN_DEV:
        need = math.ceil(
            max(k / POOL_SHARE, MIN_DEV / DEV_SHARE, MIN_DEV / (1 - POOL_SHARE - DEV_SHARE))
        )
        raise AlignmentError(
            f"{len(unique)} labelled item(s) split into {len(pool)} example pool, {len(dev)} dev "
            f"and {len(test)} test; alignment needs at least {k} in the pool and {MIN_DEV} in "
            f"dev and test (about {need} labelled items): label more items and retry"
        )
    return AlignSplit(tuple(pool), tuple(dev), tuple(test))


# --------------------------------------------------------------------------- candidates


def _words(item: AlignItem) -> frozenset[str]:
    text = " ".join(v if isinstance(v, str) else json.dumps(v) for v in item.inputs.values())
    return frozenset(_WORD.findall(text.lower()))


def _similarity(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def _pick(pool: Sequence[AlignItem], targets: Sequence[AlignItem], k: int) -> tuple[AlignItem, ...]:
    """The ``k`` pool items nearest to ``targets`` on average, taking human labels in turn."""
    target_words = [_words(t) for t in targets]
    closeness: dict[str, float] = {}
    for item in pool:
        words = _words(item)
        closeness[item.key] = sum(_similarity(words, w) for w in target_words) / len(targets)
    by_label: dict[str, list[AlignItem]] = defaultdict(list)
    for item in sorted(pool, key=lambda i: (-closeness[i.key], i.key)):
        by_label[json.dumps(item.human, sort_keys=True)].append(item)
    queues = sorted(by_label.values(), key=lambda q: (-closeness[q[0].key], q[0].key))
    chosen: list[AlignItem] = []
    while len(chosen) < k and any(queues):
        for queue in queues:
            if queue and len(chosen) < k:
                chosen.append(queue.pop(0))
    return tuple(chosen)


def _candidates(
    card: Card, split: AlignSplit, field: str, *, k: int, guidelines: str | None
) -> list[_Candidate]:
    def system(examples: Sequence[AlignItem], with_guidelines: bool) -> str | None:
        shown = [(item.inputs, {field: item.human}) for item in examples]
        return aligned_system(
            card, examples=shown, guidelines=guidelines if with_guidelines else None
        )

    nearest = _pick(split.pool, split.dev, k)
    candidates = [
        _Candidate(AS_IS, card.spec.system),
        _Candidate("examples", system(nearest, False), nearest),
    ]
    missed = [item for item in split.pool if item.judged is not None and item.judged != item.human]
    if missed:
        chosen = _pick(missed, split.dev, k)
        candidates.append(_Candidate("disagreements", system(chosen, False), chosen))
    if guidelines is not None:
        candidates.append(_Candidate("guidelines", system((), True)))
        candidates.append(_Candidate("guidelines+examples", system(nearest, True), nearest))
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
        field_name, items, used = _labelled_items(store, source, labels)
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
            dev = [scorer.score(candidate, split.dev) for candidate in candidates]
            chosen = candidates[_best(dev)]
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
