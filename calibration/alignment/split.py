"""The items `calibration.alignment` works on: human-labelled results, their stratified split into
example pool, dev and test with its leakage guard, and the choice of examples from the pool.

An item is one stored result with a reference label (the labelers' majority on one field) and
the card inputs it was judged on; results with the same inputs are one item, identified by a
hash of the inputs. `AlignSplit` refuses to exist with an item in two parts. A pair
(`calibration.alignment.pair_split.AlignPair`) is an item that keeps more apart (each of its answers
under its prompt); the split, its guard and the leak check are the same code for both, linking
items that share anything they keep apart (`AlignItem.kept_apart`).
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from calibration.audits import primary_order
from calibration.labels import WINNERS, Label, LabelField, judge_labels, label_fields
from judgecards.cards import Card
from judgecards.errors import AlignmentError
from judgecards.storage import Store

__all__ = [
    "DEV_SHARE",
    "MIN_DEV",
    "POOL_SHARE",
    "AlignItem",
    "AlignSplit",
    "labelled_items",
    "nearest",
    "shared_units",
    "split_labelled",
]

MIN_DEV = 10
"""Fewest dev (and test) items: below this a kappa says nothing about which candidate is best."""
POOL_SHARE = 0.4
DEV_SHARE = 0.3
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

    def kept_apart(self) -> tuple[str, ...]:
        """What no two parts of a split may share, and what an example may not show of an
        item scored: its inputs' hash (and its result)."""
        return (self.key, self.result_id)

    def leak(self, part: str, other: str) -> str:
        """The leakage guard's message for this item, in ``part``, sharing with ``other``."""
        return f"leakage guard: result {self.result_id} is in both {other} and {part}"


@dataclass(frozen=True)
class AlignSplit:
    """Example pool, dev and test; built only if no item (or pair) shares what it keeps apart
    (`AlignItem.kept_apart`) with one in another part."""

    pool: tuple[AlignItem, ...]
    dev: tuple[AlignItem, ...]
    test: tuple[AlignItem, ...]

    def __post_init__(self) -> None:
        parts = {"pool": self.pool, "dev": self.dev, "test": self.test}
        seen: dict[str, str] = {}
        for part, items in parts.items():
            for item in items:
                for key in item.kept_apart():
                    if seen.setdefault(key, part) != part:
                        raise AlignmentError(f"{item.leak(part, seen[key])}; nothing was judged")


def shared_units(examples: Sequence[AlignItem], items: Sequence[AlignItem]) -> list[str]:
    """Result ids of ``items`` that share what they keep apart with an example: the same inputs
    (an item), the same answer to the same prompt (a pair)."""
    shown = {unit for example in examples for unit in example.kept_apart()}
    return [item.result_id for item in items if shown.intersection(item.kept_apart())]


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


def labelled_items(
    store: Store, card: Card, labels: Sequence[Label]
) -> tuple[str, list[AlignItem], list[Label]]:
    """The aligned field, one item per distinct inputs, and the labels they rest on."""
    fields = label_fields(card)
    name = _primary_field(fields, labels)
    by_result: dict[str, dict[str, Any]] = defaultdict(dict)
    for label in labels:
        if label.field == name:
            by_result[label.result_id][label.labeler] = label.value  # the newest label wins
    _refuse_errored(store, card, by_result)
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


def _refuse_errored(store: Store, card: Card, by_result: Mapping[str, Any]) -> None:
    """Labels on results that errored: refuse before the first call.

    Such a result has no judge verdict to compare the people with, and its stored inputs are
    the ones the judge already failed on; aligning on them re-judged every dev item into an
    error and stored a run with κ = None, saying nothing (issue 21).
    """
    errored: list[tuple[str, str]] = []
    for result_id in by_result:
        stored = store.get(result_id)
        if stored is not None and not stored[0].ok:
            errored.append((result_id, stored[0].error_kind or "error"))
    if errored:
        first = ", ".join(f"{rid} ({kind})" for rid, kind in errored[:3])
        raise AlignmentError(
            f"{len(errored)} of {len(by_result)} labelled results of {card.ref} are errors, "
            f"not verdicts (first: {first}): there is no judge verdict to align with. Re-judge "
            "those items until they succeed, or label successful results, then align"
        )


def _components(items: Sequence[AlignItem]) -> list[list[AlignItem]]:
    """Items linked by something they keep apart, transitively (union-find), each sorted by key;
    single items (their keys distinct) are each their own."""
    parent = list(range(len(items)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    for index, item in enumerate(items):
        for unit in item.kept_apart():
            other = owner.setdefault(unit, index)
            parent[root(index)] = root(other)
    groups: dict[int, list[AlignItem]] = defaultdict(list)
    for index, item in enumerate(items):
        groups[root(index)].append(item)
    return sorted((sorted(g, key=lambda i: i.key) for g in groups.values()), key=lambda g: g[0].key)


def _stratum(component: Sequence[AlignItem]) -> str:
    """A component's reference: its most common human label (a tie goes A, B, tie, other)."""
    counts = Counter(json.dumps(item.human, sort_keys=True) for item in component)

    def rank(label: str) -> tuple[int, int]:
        value = json.loads(label)
        return -counts[label], WINNERS.index(value) if value in WINNERS else 9

    return min(counts, key=rank)


def split_labelled(
    items: Sequence[AlignItem], *, seed: int, k: int, noun: str = "item", note: str = ""
) -> AlignSplit:
    """Stratified, seeded split into pool (40%), dev (30%) and test (the rest).

    Items with the same inputs count once (the first is kept), so no item can be in two parts;
    items linked by what they keep apart (pairs sharing an answer to a prompt) go to one part
    together, stratified by their majority reference. ``noun`` and ``note`` word the error.

    Raises:
        AlignmentError: fewer than ``k`` pool items or `MIN_DEV` dev or test items.
    """
    unique = list({item.key: item for item in reversed(items)}.values())[::-1]
    strata: dict[str, list[list[AlignItem]]] = defaultdict(list)
    for component in _components(unique):
        strata[_stratum(component)].append(component)
    rng = random.Random(seed)
    pool: list[AlignItem] = []
    dev: list[AlignItem] = []
    test: list[AlignItem] = []
    for label in sorted(strata):
        components = strata[label]
        rng.shuffle(components)
        total = sum(len(component) for component in components)
        n_pool, n_dev = round(total * POOL_SHARE), round(total * DEV_SHARE)
        taken = [0, 0]
        for component in components:
            if taken[0] < n_pool:
                pool += component
                taken[0] += len(component)
            elif taken[1] < n_dev:
                dev += component
                taken[1] += len(component)
            else:
                test += component
    if len(pool) < k or len(dev) < MIN_DEV or len(test) < MIN_DEV:
        need = math.ceil(
            max(k / POOL_SHARE, MIN_DEV / DEV_SHARE, MIN_DEV / (1 - POOL_SHARE - DEV_SHARE))
        )
        raise AlignmentError(
            f"{len(unique)} labelled {noun}(s) split into {len(pool)} example pool, {len(dev)} "
            f"dev and {len(test)} test{note}; alignment needs at least {k} in the pool and "
            f"{MIN_DEV} in dev and test (about {need} labelled {noun}s): label more {noun}s "
            "and retry"
        )
    return AlignSplit(tuple(pool), tuple(dev), tuple(test))


def _words(item: AlignItem) -> frozenset[str]:
    text = " ".join(v if isinstance(v, str) else json.dumps(v) for v in item.inputs.values())
    return frozenset(_WORD.findall(text.lower()))


def _similarity(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def nearest(
    pool: Sequence[AlignItem], targets: Sequence[AlignItem], k: int
) -> tuple[AlignItem, ...]:
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
