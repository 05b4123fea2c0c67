"""Drift audits: spot-check a judge against humans over time, and re-run fixed anchor sets.

The cycle (each step is an `Audit` method and a ``judgecards audit`` command):

1. **sample** a reproducible spot-check of stored results of one card@version and judge model
   (``--since``, proportional ``--stratify verdict``, ``--seed``) and write a labelling **sheet**
   (CSV or JSONL) with the item's inputs and empty label columns, never the judge's verdict or
   scores. The audit row records card@version, card hash, judge model, seed, n, time and sheet,
   and each item keeps a snapshot of what the judge said, so a later ``cache=False`` run that
   overwrites the result row cannot rewrite history.
2. **ingest** the filled sheet under ``--labeler NAME`` (validated as in `calibration.labels`).
3. **report** per audit, over time: judge–human agreement and Cohen's kappa on the verdict,
   agreement and quadratic-weighted kappa per score axis, the human ceiling when two or more
   labelers labelled the same items, the disagreements to read, and a **gate**.
4. **anchor create / rerun**: freeze a labelled audit's items as a named anchor set; re-judge it
   later with the current card version and a model (``cache=False``, so the provider is really
   asked), store that as a new audit, and report the flip rate against the previous run of the
   set and the change in kappa.

Human reference label: an item's label on a field is the labelers' majority; an item on which
its labelers tie has no reference on that field and is left out of the judge–human numbers (it
still counts in the inter-human ceiling). Intervals are 95% percentile bootstraps over items
(`judgecards.metrics.stats.bootstrap_ci`, seed 0 unless told otherwise).

The gate reads each series of audits — one card name (any version) with one judge model —
from oldest to newest labelled audit. The first labelled audit is the baseline (or the one
passed as ``baseline``). The newest fails when its kappa on the primary field (``verdict``,
else ``winner``, else the first score axis, quadratic-weighted) is below ``min_kappa`` or
undefined, or when it is *significantly below the baseline*: the 95% bootstrap interval of
``kappa(newest) - kappa(baseline)`` lies entirely below zero. Audits are different samples, so
that interval resamples each audit's items independently (resamples where either kappa is
undefined are dropped); for anchor re-runs, which share items, the change against the previous
run is a paired bootstrap.

The report values (`AuditSummary`, `AuditReport`, ...), their rendering and the gate's decision
live in `calibration.audit_report`; they are importable from here too.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import secrets
import sqlite3
import warnings
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

import numpy as np

from calibration._core import (
    MIN_ITEMS,
    SmallSampleWarning,
    kappa_from_codes,
    label_order,
    to_codes,
    weight_matrix,
)
from calibration.audit_report import (
    AnchorDrift,
    AuditReport,
    AuditSummary,
    Disagreement,
    FieldAgreement,
    Flip,
    GateCheck,
    _gate,
)
from calibration.interrater import inter_annotator
from calibration.labels import (
    AuditScope,
    Format,
    LabelField,
    LabelImportError,
    LabelImportReport,
    format_of,
    import_labels,
    judge_labels,
    label_fields,
    read_labels,
    read_rows,
    write_rows,
)
from calibration.migrations import open_store
from calibration.report import calibrate
from judgecards.cards import Card, load_card
from judgecards.errors import JudgecardsError, StoreError
from judgecards.metrics.stats import Estimate, bootstrap_ci
from judgecards.store import Store

__all__ = [
    "AnchorDrift",
    "AnchorSet",
    "Audit",
    "AuditError",
    "AuditRecord",
    "AuditReport",
    "AuditSample",
    "AuditSummary",
    "Disagreement",
    "FieldAgreement",
    "Flip",
    "GateCheck",
]

Stratify = Literal["verdict"]
CardsDir = str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
# Cells a spreadsheet would run as a formula; model outputs are untrusted text.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


class AuditError(JudgecardsError):
    """An audit cannot be made or read: nothing to sample, an unknown audit or anchor set."""


# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class AuditRecord:
    """One audit as stored.

    Attributes:
        id: audit number (1, 2, ...).
        kind: ``sample`` (a spot-check of stored results) or ``rerun`` (an anchor set re-judged).
        card: ``name@version`` judged.
        card_hash: ``sha256:<hex>`` of the card the results were judged with.
        model: the judge model, ``provider:model``.
        seed: sampling seed (``None`` for re-runs).
        n_requested: sample size asked for.
        n: items in the audit.
        since: the lower bound on result time the sample was drawn with, if any.
        stratify: ``verdict`` when the sample was stratified.
        sheet: where the labelling sheet was written.
        anchor_set: the anchor set re-run (re-runs only).
        created_at: when the sample was drawn or the re-run made, UTC.
        n_labeled: cached headline: items with a human reference on the primary field.
        kappa: cached headline: kappa on the primary field (``None``: not labelled, or
            undefined).
    """

    id: int
    kind: Literal["sample", "rerun"]
    card: str
    card_hash: str
    model: str
    seed: int | None
    n_requested: int | None
    n: int
    since: str | None
    stratify: str | None
    sheet: str | None
    anchor_set: str | None
    created_at: datetime
    n_labeled: int = 0
    kappa: float | None = None

    @property
    def card_name(self) -> str:
        return self.card.partition("@")[0]


@dataclass(frozen=True)
class AuditSample:
    """What `Audit.sample` drew.

    Attributes:
        audit: the new audit.
        population: results eligible for the sample.
        strata: per verdict, ``(eligible, drawn)``.
        sheet: the labelling sheet written, if any.
        fields: the label columns the labelers fill in.
        notes: anything the user should know (a short sample, results from an edited card).
    """

    audit: AuditRecord
    population: int
    strata: dict[str, tuple[int, int]]
    sheet: Path | None
    fields: dict[str, LabelField]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class AnchorSet:
    """A named, fixed set of human-labelled items, re-judged by `Audit.rerun`.

    Attributes:
        name: its name.
        card: the card *name*; a re-run uses that card's current version unless told otherwise.
        source_audit: the audit it was frozen from (its judge labels are run 0).
        description: free text.
        created_at: UTC.
        n: number of items.
    """

    name: str
    card: str
    source_audit: int
    description: str | None
    created_at: datetime
    n: int


# --------------------------------------------------------------------------- the API


class Audit:
    """Drift audits on one results database: sample, sheet, ingest, report, anchor sets, rerun.

    Args:
        db: a `Store` or a database path (else ``JUDGECARDS_DB``, else ``./judgecards.db``). The
            calibration tables are created or migrated on open.
        cards_dir: extra card directories (else ``JUDGECARDS_CARDS_DIR``), to read the label
            fields, ranges and inputs of user cards.
        n_resamples: bootstrap resamples for every interval.
        level: confidence level of every interval.
    """

    def __init__(
        self,
        db: Store | str | os.PathLike[str] | None = None,
        *,
        cards_dir: CardsDir = None,
        n_resamples: int = 2000,
        level: float = 0.95,
    ) -> None:
        self._owns_store = not isinstance(db, Store)
        self.store = open_store(db)
        self.cards_dir = cards_dir
        self.n_resamples = n_resamples
        self.level = level
        self._cards: dict[str, Card] = {}

    def __enter__(self) -> Audit:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the database if this object opened it."""
        if self._owns_store:
            self.store.close()

    # ------------------------------------------------------------------ reading

    def audits(self, *, card: str | None = None, model: str | None = None) -> list[AuditRecord]:
        """Stored audits, oldest first; ``card`` may be ``name`` or ``name@version``."""
        clauses, params = _card_model_filter(card, model)
        rows = self._rows(
            f"SELECT {_AUDIT_COLUMNS} FROM audits {clauses} ORDER BY created_at, id", params
        )
        return [_record(row) for row in rows]

    def get(self, audit_id: int) -> AuditRecord:
        """One audit; `AuditError` if there is none with that id."""
        rows = self._rows(f"SELECT {_AUDIT_COLUMNS} FROM audits WHERE id = ?", (audit_id,))
        if not rows:
            raise AuditError(f"no audit #{audit_id} in {self.store.path}")
        return _record(rows[0])

    def anchors(self) -> list[AnchorSet]:
        """Every anchor set, oldest first."""
        rows = self._rows(
            "SELECT s.name, s.card, s.source_audit, s.description, s.created_at, count(i.position) "
            "FROM anchor_sets s LEFT JOIN anchor_items i ON i.anchor_set = s.name "
            "GROUP BY s.name ORDER BY s.created_at, s.name",
            (),
        )
        return [_anchor(row) for row in rows]

    def anchor(self, name: str) -> AnchorSet:
        """One anchor set; `AuditError` if unknown."""
        for anchor in self.anchors():
            if anchor.name == name:
                return anchor
        known = ", ".join(a.name for a in self.anchors()) or "none"
        raise AuditError(f"no anchor set {name!r} (known: {known})")

    # ------------------------------------------------------------------ sample and sheet

    def sample(
        self,
        *,
        card: str,
        model: str,
        n: int = 50,
        since: datetime | str | None = None,
        stratify: Stratify | None = None,
        seed: int | None = None,
        sheet: str | os.PathLike[str] | None = None,
        format: Format | None = None,
    ) -> AuditSample:
        """Draw a reproducible spot-check of stored results and record it as a new audit.

        Eligible: successful results of ``card`` judged by ``model`` (at or after ``since``, and
        judged with the card text of the newest such result, should an unreleased card have
        been edited). They are put in result-id order and drawn with ``random.Random(seed)``,
        so the same seed over the same stored results gives the same sample wherever and
        whenever it is run. Without a seed one is chosen and recorded.

        With ``stratify="verdict"`` each verdict gets ``n * share`` items, rounded by largest
        remainder (floors first, then one more to the strata with the largest fractional
        parts, ties to the verdict that sorts first), so the sample keeps the verdict mix; a
        rare verdict can get none. The drawn items are then shuffled together, so the sheet's
        order gives nothing away.

        Args:
            card: ``name@version``, or ``name`` for its newest version with results by ``model``.
            model: the judge model, ``provider:model``.
            n: sample size (all eligible results when fewer).
            since: only results created at or after this time (a date means its midnight UTC).
            stratify: ``"verdict"`` for a proportional stratified sample.
            seed: sampling seed.
            sheet: write the labelling sheet here (see `write_sheet`).
            format: the sheet's format (else from its extension).

        Raises:
            AuditError: no eligible results, or a bad ``n``, ``since`` or ``stratify``.
        """
        if n < 1:
            raise AuditError(f"n must be at least 1, got {n}")
        if stratify not in (None, "verdict"):
            raise AuditError(f"stratify must be 'verdict', got {stratify!r}")
        ref = self._card_ref(card, model)
        since_text = _since(since)
        candidates = [
            result
            for result, _ in self.store.results(
                card=ref, model=model, status="ok", since=since_text
            )
        ]
        where = f" since {since_text}" if since_text else ""
        if not candidates:
            raise AuditError(f"no successful results of {ref} judged by {model}{where} to sample")
        notes: list[str] = []
        newest_hash = candidates[-1].card_hash
        eligible = sorted((r for r in candidates if r.card_hash == newest_hash), key=lambda r: r.id)
        if len(eligible) < len(candidates):
            notes.append(
                f"{len(candidates) - len(eligible)} result(s) were judged with an earlier text of "
                f"{ref} and were not sampled"
            )
        card_obj = self._card(ref)
        if card_obj.hash != newest_hash:
            notes.append(
                f"the card file of {ref} changed since these results were judged ({newest_hash})"
            )
        if stratify == "verdict" and "verdict" not in label_fields(card_obj):
            raise AuditError(f"{ref} has no verdict to stratify by")
        if seed is None:
            seed = secrets.randbelow(2**31)
        rng = random.Random(seed)
        groups: dict[str, list[Any]] = defaultdict(list)
        for result in eligible:
            groups[result.verdict or "(none)"].append(result)
        if stratify is None:
            chosen = rng.sample(eligible, min(n, len(eligible)))
        else:
            quotas = _largest_remainder(
                {k: len(v) for k, v in groups.items()}, min(n, len(eligible))
            )
            chosen = []
            for stratum in sorted(groups):
                chosen += rng.sample(groups[stratum], quotas[stratum])
            rng.shuffle(chosen)
        drawn = Counter(r.verdict or "(none)" for r in chosen)
        strata = {k: (len(v), drawn.get(k, 0)) for k, v in sorted(groups.items())}
        if len(chosen) < n:
            notes.append(
                f"only {len(chosen)} eligible result(s){where}: the audit has {len(chosen)}, not {n}"
            )
        if len(chosen) < MIN_ITEMS:
            notes.append(
                f"{len(chosen)} items is fewer than {MIN_ITEMS}: kappa's interval will be wide"
            )
        fields = label_fields(card_obj)
        now = _now()
        items = [
            (
                position,
                r.id,
                r.item_id,
                r.verdict if stratify else None,
                None,
                json.dumps(judge_labels(fields, r)),
            )
            for position, r in enumerate(chosen, start=1)
        ]
        audit_id = self._insert_audit(
            {
                "kind": "sample", "card": ref, "card_hash": newest_hash, "model": model, "seed": seed,
                "n_requested": n, "n": len(chosen), "since": since_text, "stratify": stratify,
                "created_at": now,
            },
            items,
        )  # fmt: skip
        path = None if sheet is None else self.write_sheet(audit_id, sheet, format=format)
        return AuditSample(self.get(audit_id), len(eligible), strata, path, fields, tuple(notes))

    def write_sheet(
        self, audit_id: int, path: str | os.PathLike[str], *, format: Format | None = None
    ) -> Path:
        """Write (or rewrite) an audit's labelling sheet and record where it is.

        One row per item, in the audit's (shuffled) order: ``audit_id``, ``result_id``,
        ``item_id``, the card's inputs, an empty column per label field (``verdict``, each axis,
        ``winner``) and ``note``. The judge's verdict and scores are never written. In CSV, an
        input cell that a spreadsheet would run as a formula (starting with ``=``, ``+``, ``-``,
        ``@``) is prefixed with ``'``; JSONL is verbatim.
        """
        record = self.get(audit_id)
        target = Path(path)
        chosen = format or format_of(target)
        card = self._card(record.card)
        fields = label_fields(card)
        inputs = list(card.spec.inputs)
        rows = []
        for _position, result_id, item_id, _ in self._items(audit_id):
            stored = self.store.get(result_id)
            values = stored[1] if stored else {}
            row: dict[str, Any] = {"audit_id": audit_id, "result_id": result_id, "item_id": item_id}
            for name in inputs:
                value = values.get(name)
                if chosen == "csv" and isinstance(value, str) and value.startswith(_FORMULA_START):
                    value = "'" + value
                row[name] = value
            for name in fields:
                row[name] = None
            row["note"] = None
            rows.append(row)
        columns = ["audit_id", "result_id", "item_id", *inputs, *fields, "note"]
        write_rows(target, rows, columns, chosen)
        self._execute("UPDATE audits SET sheet = ? WHERE id = ?", (str(target), audit_id))
        return target

    # ------------------------------------------------------------------ ingest

    def ingest(
        self,
        sheet: str | os.PathLike[str],
        *,
        labeler: str | None,
        audit_id: int | None = None,
        skip_invalid: bool = False,
        format: Format | None = None,
    ) -> LabelImportReport:
        """Store a filled sheet's labels under its audit, then refresh the audit's headline.

        The audit comes from the sheet's ``audit_id`` column (or ``audit_id``). Rows left
        empty are skipped as not labelled; everything else is validated as by
        `calibration.labels.import_labels`, and any invalid row means nothing is stored
        unless ``skip_invalid``.

        Raises:
            LabelImportError: a bad sheet or row (nothing stored).
            AuditError: the sheet names no audit, several, or one that does not exist.
        """
        path = Path(sheet)
        chosen = format or format_of(path)
        if audit_id is None:
            audit_id = _sheet_audit(path, chosen)
        self.get(audit_id)
        scope = AuditScope(
            audit_id, {result_id: item_id for _, result_id, item_id, _ in self._items(audit_id)}
        )
        report = import_labels(
            path, labeler=labeler, db=self.store, skip_invalid=skip_invalid, format=chosen,
            cards_dir=self.cards_dir, scope=scope,
        )  # fmt: skip
        if report.labels_written:
            self.refresh(audit_id)
        return report

    def refresh(self, audit_id: int) -> AuditSummary:
        """Recompute an audit's headline (primary field: kappa, n) and cache it on the audit row.

        `latest_calibration` and ``judgecards cards list`` read that cache, so they never compute.
        Ingest and re-run call this; call it yourself after changing labels by other means.

        Returns:
            The summary of the primary field only (`summary` gives every field).
        """
        summary, _ = self._summaries([self.get(audit_id)], seed=0, primary_only=True)
        only = summary[0]
        kappa = only.kappa
        agreement = only.agreement
        n = kappa.n if kappa is not None else 0
        self._execute(
            "UPDATE audits SET field = ?, n_labeled = ?, kappa = ?, kappa_low = ?, kappa_high = ?, "
            "agreement = ?, calibrated_at = ? WHERE id = ?",
            (
                only.primary, n, _finite(kappa.value if kappa else None), _finite(kappa.low if kappa else None),
                _finite(kappa.high if kappa else None), _finite(agreement.value if agreement else None),
                _now(), audit_id,
            ),
        )  # fmt: skip
        return only

    # ------------------------------------------------------------------ report

    def summary(self, audit_id: int) -> AuditSummary:
        """One audit's measures (no baseline comparison)."""
        summaries, _ = self._summaries([self.get(audit_id)], seed=0)
        return summaries[0]

    def report(
        self,
        *,
        card: str | None = None,
        model: str | None = None,
        min_kappa: float = 0.6,
        baseline: int | None = None,
        seed: int | None = 0,
    ) -> AuditReport:
        """Every audit (of ``card`` / ``model``) over time, with the gate; see the module docs.

        Args:
            card: ``name`` (every version) or ``name@version``.
            model: only audits of this judge model.
            min_kappa: the gate's threshold on the newest audit's kappa.
            baseline: the audit to compare the newest with (default: the first labelled audit
                of each series).
            seed: bootstrap seed.

        Raises:
            AuditError: no audits match, or ``baseline`` is unknown.
        """
        records = self.audits(card=card, model=model)
        if not records:
            scope = " ".join(part for part in (card, model) if part)
            raise AuditError(f"no audits{' of ' + scope if scope else ''} in {self.store.path}")
        if baseline is not None and all(r.id != baseline for r in records):
            raise AuditError(f"baseline audit #{baseline} is not among the audits reported")
        summaries, notes = self._summaries(records, seed=seed)
        series: dict[tuple[str, str], list[int]] = defaultdict(list)
        for index, s in enumerate(summaries):
            series[(s.audit.card_name, s.audit.model)].append(index)
        checks: list[GateCheck] = []
        for (card_name, series_model), indexes in series.items():
            labelled = [i for i in indexes if summaries[i].kappa is not None]
            if not labelled:
                notes.append(
                    f"{card_name} · {series_model}: no labelled audit yet; nothing to gate"
                )
                continue
            chosen = [i for i in labelled if summaries[i].audit.id == baseline]
            base_index = chosen[0] if chosen else labelled[0]
            base = summaries[base_index]
            for i in labelled:
                current = summaries[i]
                delta = None
                if i != base_index:
                    delta = self._delta_vs(current, base, seed=seed)
                summaries[i] = replace(current, baseline_id=base.audit.id, vs_baseline=delta)
            checks.append(_gate(summaries[labelled[-1]], summaries[base_index], min_kappa))
        return AuditReport(tuple(summaries), tuple(checks), min_kappa, tuple(notes))

    # ------------------------------------------------------------------ anchors and rerun

    def create_anchor(
        self, name: str, *, from_audit: int, description: str | None = None
    ) -> AnchorSet:
        """Freeze the human-labelled items of an audit as a named anchor set.

        Each item keeps its inputs (to re-judge with), the audit's judge labels (run 0, the
        first re-run's point of comparison) and every labeler's labels. Items with the same
        item id and inputs are kept once.

        Raises:
            AuditError: a bad or taken name, an unknown audit, or an audit without labels.
        """
        if not _NAME.match(name):
            raise AuditError(
                f"anchor set name must be letters, digits, '.', '_' or '-', got {name!r}"
            )
        if any(a.name == name for a in self.anchors()):
            raise AuditError(f"anchor set {name!r} already exists")
        record = self.get(from_audit)
        humans = _humans(read_labels(self.store, audit_id=from_audit))
        rows: list[tuple[Any, ...]] = []
        seen: set[str] = set()
        for _, result_id, item_id, judge in self._items(from_audit):
            if result_id not in humans:
                continue
            stored = self.store.get(result_id)
            if stored is None:
                raise AuditError(f"result {result_id} of audit #{from_audit} is no longer stored")
            inputs = stored[1]
            key = json.dumps([item_id, inputs], sort_keys=True)
            if key in seen:
                continue
            seen.add(key)
            rows.append((name, len(rows) + 1, item_id, result_id, json.dumps(inputs), json.dumps(judge),
                         json.dumps(humans[result_id], sort_keys=True)))  # fmt: skip
        if not rows:
            raise AuditError(
                f"audit #{from_audit} has no human labels yet: ingest a labelled sheet first"
            )
        now = _now()
        try:
            with self.store.transaction():
                self.store.db.conn.execute(
                    "INSERT INTO anchor_sets (name, card, source_audit, description, created_at) VALUES (?, ?, ?, ?, ?)",
                    (name, record.card_name, from_audit, description, now),
                )
                self.store.db.conn.executemany(
                    "INSERT INTO anchor_items (anchor_set, position, item_id, source_result_id, inputs, judge, labels) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    rows,
                )
        except sqlite3.Error as error:
            raise StoreError(f"cannot store anchor set {name!r}: {error}") from error
        return self.anchor(name)

    def rerun(
        self,
        anchor_set: str,
        *,
        model: str,
        card: str | None = None,
        concurrency: int = 8,
        seed: int | None = 0,
        **judge_options: Any,
    ) -> AuditSummary:
        """Re-judge an anchor set now, store it as a new audit, and compare with the previous run.

        The items are judged by a `judgecards.Judge` with ``cache=False`` (so the provider is
        asked again; the stored result rows of the same card version, model and inputs are
        overwritten, which is why audits keep their own snapshot of the judge's labels), with
        the card's current version unless ``card`` pins one. The anchor's human labels are
        stored under the new audit, so it reports like any other, and ``drift`` holds the flip
        rate and the change in kappa against the previous run of the set (the source audit for
        the first re-run).

        Args:
            anchor_set: the set's name.
            model: the judge model, ``provider:model``.
            card: ``name`` or ``name@version`` (default: the set's card, newest version).
            concurrency: calls in flight.
            seed: bootstrap seed.
            **judge_options: passed to `judgecards.Judge` (``api_key``, ``base_url``, ``timeout``,
                ``http_client``, ``async_http_client``, ``provider``, ``max_attempts``, ...).

        Raises:
            AuditError: unknown anchor set.
        """
        from judgecards.judge import Judge, UncalibratedJudgeWarning

        anchor = self.anchor(anchor_set)
        items = self._anchor_items(anchor_set)
        with warnings.catch_warnings():
            # This run is the calibration the warning asks for.
            warnings.simplefilter("ignore", UncalibratedJudgeWarning)
            judge = Judge(
                card or anchor.card, model, cards_dir=self.cards_dir, db=self.store, cache=False,
                **judge_options,
            )  # fmt: skip
        results = judge.score_many(
            [{**item["inputs"], "id": item["item_id"]} for item in items], concurrency=concurrency
        )
        fields = label_fields(judge.card)
        audit_items: list[tuple[Any, ...]] = []
        labels: list[tuple[Any, ...]] = []
        now = _now()
        used: set[str] = set()
        for item, result in zip(items, results):
            if result.id in used:  # two anchor items the card now sees as one
                continue
            used.add(result.id)
            judged = judge_labels(fields, result) if result.ok else {}
            audit_items.append(
                (
                    len(audit_items) + 1,
                    result.id,
                    result.item_id,
                    None,
                    item["position"],
                    json.dumps(judged),
                )
            )
            for labeler, values in item["labels"].items():
                for name, value in values.items():
                    if name in fields:
                        labels.append((result.id, result.item_id, judge.card.ref, model, labeler, name,
                                       fields[name].kind, json.dumps(value), None, f"anchor:{anchor_set}", now))  # fmt: skip
        audit_id = self._insert_audit(
            {
                "kind": "rerun", "card": judge.card.ref, "card_hash": judge.card.hash, "model": model,
                "n_requested": len(items), "n": len(audit_items), "anchor_set": anchor_set, "created_at": now,
            },
            audit_items,
            labels,
        )  # fmt: skip
        self.refresh(audit_id)
        summaries, _ = self._summaries([self.get(audit_id)], seed=seed)
        return summaries[0]

    # ------------------------------------------------------------------ internals: analysis

    def _summaries(
        self, records: Sequence[AuditRecord], *, seed: int | None, primary_only: bool = False
    ) -> tuple[list[AuditSummary], list[str]]:
        notes: list[str] = []
        summaries = []
        with warnings.catch_warnings():
            # The report states small samples once per audit instead of once per measure.
            warnings.simplefilter("ignore", SmallSampleWarning)
            for record in records:
                summary = self._summarise(record, seed=seed, primary_only=primary_only)
                summaries.append(summary)
                kappa = summary.kappa
                if summary.n_labeled == 0:
                    notes.append(
                        f"audit #{record.id} has no human labels yet (sheet: {record.sheet or 'not written'})"
                    )
                elif kappa is not None and kappa.n < MIN_ITEMS:
                    notes.append(
                        f"audit #{record.id}: {kappa.n} labelled items (fewer than {MIN_ITEMS}); its intervals are wide"
                    )
        return summaries, notes

    def _summarise(
        self, record: AuditRecord, *, seed: int | None, primary_only: bool = False
    ) -> AuditSummary:
        """The audit's measures; ``primary_only`` stops at the primary field (the cached headline)."""
        items = self._items(record.id)
        labels = read_labels(self.store, audit_id=record.id)
        humans = _humans(labels)
        fields = self._fields(record.card, labels)
        results: dict[str, FieldAgreement] = {}
        for name in _primary_order(fields) if primary_only else list(fields):
            spec = fields[name]
            if primary_only and any(f.report is not None for f in results.values()):
                break
            pairs: list[tuple[Any, Any]] = []
            ties = 0
            rated: list[dict[str, Any]] = []
            for _, result_id, _, judge in items:
                by_labeler = {
                    who: values[name]
                    for who, values in humans.get(result_id, {}).items()
                    if name in values
                }
                if len(by_labeler) >= 2:
                    rated.append(by_labeler)
                if not by_labeler or name not in judge:
                    continue
                reference, tied = _majority(by_labeler.values())
                if tied:
                    ties += 1
                    continue
                pairs.append((judge[name], reference))
            scale = _scale(
                spec, [v for pair in pairs for v in pair] + [v for r in rated for v in r.values()]
            )
            report = None
            if pairs:
                report = calibrate(
                    [j for j, _ in pairs], [h for _, h in pairs], ordinal=spec.ordinal, labels=scale,
                    level=self.level, n_resamples=self.n_resamples, seed=seed,
                )  # fmt: skip
            ceiling = None
            raters = sorted({who for r in rated for who in r})
            if len(raters) >= 2 and not primary_only:
                ceiling = inter_annotator(
                    {who: [r.get(who) for r in rated] for who in raters},
                    metric="ordinal" if spec.ordinal else "nominal",
                    labels=scale,
                    weights="quadratic" if spec.ordinal else None,
                    level=self.level, n_resamples=self.n_resamples, seed=seed,
                )  # fmt: skip
            if report is not None or ceiling is not None:
                results[name] = FieldAgreement(
                    name, spec.kind, report, ceiling, ties, tuple(pairs), scale
                )
        primary = next(
            (
                name
                for name in _primary_order(fields)
                if name in results and results[name].report is not None
            ),
            None,
        )
        disagreements = []
        if primary is not None:
            for _, result_id, item_id, judge in items:
                human = {
                    who: values[primary]
                    for who, values in sorted(humans.get(result_id, {}).items())
                    if primary in values
                }
                if human and any(value != judge.get(primary) for value in human.values()):
                    disagreements.append(
                        Disagreement(result_id, item_id, primary, judge.get(primary), human)
                    )
        summary = AuditSummary(
            audit=record,
            n_labeled=sum(1 for _, result_id, _, _ in items if result_id in humans),
            labelers=tuple(sorted({label.labeler for label in labels})),
            primary=primary,
            fields=results,
            disagreements=tuple(disagreements),
            judge_errors=sum(1 for *_, judge in items if not judge)
            if record.kind == "rerun"
            else 0,
        )
        if record.kind == "rerun" and record.anchor_set and not primary_only:
            summary = replace(summary, drift=self._drift(record, summary, seed=seed))
        return summary

    def _drift(
        self, record: AuditRecord, summary: AuditSummary, *, seed: int | None
    ) -> AnchorDrift | None:
        """Flip rate and paired change in kappa against the previous run of the anchor set."""
        assert record.anchor_set is not None
        anchor = self.anchor(record.anchor_set)
        items = {item["position"]: item for item in self._anchor_items(anchor.name)}
        previous_rows = self._rows(
            "SELECT id FROM audits WHERE anchor_set = ? AND kind = 'rerun' AND id < ? ORDER BY id DESC LIMIT 1",
            (anchor.name, record.id),
        )
        if previous_rows:
            previous_id = int(previous_rows[0][0])
            before = {
                anchor_position: judge
                for _, _, judge, anchor_position in self._rerun_items(previous_id)
            }
        else:
            previous_id = anchor.source_audit
            before = {position: item["judge"] for position, item in items.items()}
        after = {
            anchor_position: judge for _, _, judge, anchor_position in self._rerun_items(record.id)
        }
        fields = self._fields(record.card, [])
        name = summary.primary or next(iter(_primary_order(fields)), None)
        if name is None:
            return None
        flips: list[Flip] = []
        changed: list[float] = []
        triples: list[tuple[Any, Any, Any]] = []
        for position in sorted(after):
            old, new = before.get(position, {}).get(name), after[position].get(name)
            if old is None or new is None:
                continue
            changed.append(float(old != new))
            if old != new:
                item_id = items[position]["item_id"] if position in items else None
                flips.append(Flip(position, item_id, old, new))
            votes = {
                who: values[name]
                for who, values in items.get(position, {}).get("labels", {}).items()
                if name in values
            }
            reference, tied = _majority(votes.values()) if votes else (None, True)
            if not tied:
                triples.append((old, new, reference))
        flip_rate = bootstrap_ci(
            np.array(changed), level=self.level, n_resamples=self.n_resamples, seed=seed
        )
        previous_kappa = delta = None
        if triples:
            spec = fields.get(name, LabelField(name, "verdict"))
            weights: Literal["quadratic"] | None = "quadratic" if spec.ordinal else None
            observed = [v for t in triples for v in t]
            order = label_order(observed, _scale(spec, observed))
            old_codes, new_codes, human_codes = (
                to_codes([t[i] for t in triples], order) for i in range(3)
            )
            w = weight_matrix(len(order), weights)
            previous_kappa = bootstrap_ci(
                old_codes, human_codes, statistic=lambda a, b: kappa_from_codes(a, b, w),
                level=self.level, n_resamples=self.n_resamples, seed=seed,
            )  # fmt: skip
            delta = bootstrap_ci(
                new_codes, old_codes, human_codes,
                statistic=lambda a, b, c: kappa_from_codes(a, c, w) - kappa_from_codes(b, c, w),
                level=self.level, n_resamples=self.n_resamples, seed=seed,
            )  # fmt: skip
        return AnchorDrift(
            anchor.name, previous_id, name, flip_rate, tuple(flips), previous_kappa, delta
        )

    def _delta_vs(
        self, current: AuditSummary, base: AuditSummary, *, seed: int | None
    ) -> Estimate | None:
        """``kappa(current) - kappa(base)`` on the primary field, independent bootstrap."""
        if current.primary is None or current.primary != base.primary:
            return None
        new, old = current.fields[current.primary], base.fields[base.primary]
        if not new.pairs or not old.pairs:
            return None
        return _independent_delta(
            new.pairs, old.pairs, scale=new.scale, weights=new.weights,
            level=self.level, n_resamples=self.n_resamples, seed=seed,
        )  # fmt: skip

    def _fields(self, ref: str, labels: Sequence[Any]) -> dict[str, LabelField]:
        """The card's label fields; if the card cannot be loaded, those seen in the labels."""
        try:
            return label_fields(self._card(ref))
        except JudgecardsError:
            return {label.field: LabelField(label.field, label.kind) for label in labels}

    # ------------------------------------------------------------------ internals: storage

    def _card(self, ref: str) -> Card:
        if ref not in self._cards:
            self._cards[ref] = load_card(ref, cards_dir=self.cards_dir)
        return self._cards[ref]

    def _card_ref(self, card: str, model: str) -> str:
        if "@" in card:
            return card
        rows = self._rows(
            "SELECT DISTINCT card FROM results WHERE card LIKE ? AND model = ? AND status = 'ok'",
            (f"{card}@%", model),
        )
        versions = [row[0] for row in rows if row[0].partition("@")[2].isdigit()]
        if not versions:
            raise AuditError(f"no successful results of card {card!r} judged by {model} to sample")
        return str(max(versions, key=lambda ref: int(ref.partition("@")[2])))

    def _items(self, audit_id: int) -> list[tuple[int, str, str | None, dict[str, Any]]]:
        rows = self._rows(
            "SELECT position, result_id, item_id, judge FROM audit_items WHERE audit_id = ? ORDER BY position",
            (audit_id,),
        )
        return [(row[0], row[1], row[2], json.loads(row[3] or "{}")) for row in rows]

    def _rerun_items(self, audit_id: int) -> list[tuple[int, str, dict[str, Any], int]]:
        rows = self._rows(
            "SELECT position, result_id, judge, anchor_position FROM audit_items WHERE audit_id = ? ORDER BY position",
            (audit_id,),
        )
        return [(row[0], row[1], json.loads(row[2] or "{}"), row[3]) for row in rows]

    def _anchor_items(self, name: str) -> list[dict[str, Any]]:
        rows = self._rows(
            "SELECT position, item_id, source_result_id, inputs, judge, labels FROM anchor_items "
            "WHERE anchor_set = ? ORDER BY position",
            (name,),
        )
        return [
            {"position": row[0], "item_id": row[1], "source_result_id": row[2], "inputs": json.loads(row[3]),
             "judge": json.loads(row[4] or "{}"), "labels": json.loads(row[5] or "{}")}
            for row in rows
        ]  # fmt: skip

    def _insert_audit(
        self,
        values: Mapping[str, Any],
        items: Sequence[tuple[Any, ...]],
        labels: Sequence[tuple[Any, ...]] = (),
    ) -> int:
        """The audit row, its items and (re-runs) its labels, in one transaction."""
        columns = ", ".join(values)
        marks = ", ".join("?" for _ in values)
        try:
            with self.store.transaction():
                cursor = self.store.db.conn.execute(
                    f"INSERT INTO audits ({columns}) VALUES ({marks})", tuple(values.values())
                )
                audit_id = int(cursor.lastrowid or 0)
                self.store.db.conn.executemany(
                    "INSERT INTO audit_items (audit_id, position, result_id, item_id, stratum, anchor_position, judge) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [(audit_id, *item) for item in items],
                )
                self.store.db.conn.executemany(
                    "INSERT INTO labels (result_id, item_id, card, model, labeler, field, kind, value, note, "
                    "source, created_at, audit_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [(*label, audit_id) for label in labels],
                )
        except sqlite3.Error as error:
            raise StoreError(f"cannot store the audit in {self.store.path}: {error}") from error
        return audit_id

    def _rows(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return list(self.store.db.conn.execute(sql, tuple(params)).fetchall())

    def _execute(self, sql: str, params: Sequence[Any]) -> None:
        try:
            with self.store.transaction():
                self.store.db.conn.execute(sql, tuple(params))
        except sqlite3.Error as error:
            raise StoreError(f"cannot update audits in {self.store.path}: {error}") from error


# --------------------------------------------------------------------------- helpers

_AUDIT_COLUMNS = (
    "id, kind, card, card_hash, model, seed, n_requested, n, since, stratify, sheet, anchor_set, "
    "created_at, n_labeled, kappa"
)


def _record(row: Sequence[Any]) -> AuditRecord:
    return AuditRecord(
        id=int(row[0]), kind=row[1], card=row[2], card_hash=row[3], model=row[4], seed=row[5],
        n_requested=row[6], n=int(row[7]), since=row[8], stratify=row[9], sheet=row[10],
        anchor_set=row[11], created_at=datetime.fromisoformat(row[12]), n_labeled=int(row[13] or 0),
        kappa=row[14],
    )  # fmt: skip


def _anchor(row: Sequence[Any]) -> AnchorSet:
    return AnchorSet(
        row[0], row[1], int(row[2]), row[3], datetime.fromisoformat(row[4]), int(row[5])
    )


def _card_model_filter(card: str | None, model: str | None) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    if card:
        clauses.append("card = ?" if "@" in card else "card LIKE ?")
        params.append(card if "@" in card else f"{card}@%")
    if model:
        clauses.append("model = ?")
        params.append(model)
    return (f"WHERE {' AND '.join(clauses)}" if clauses else ""), params


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def _since(since: datetime | str | None) -> str | None:
    """A UTC ISO timestamp comparable with stored ``created_at`` (naive means UTC)."""
    if since is None or since == "":
        return None
    if isinstance(since, str):
        try:
            since = datetime.fromisoformat(since.strip())
        except ValueError:
            raise AuditError(
                f"since must be an ISO date or date-time (2025-06-01, 2025-06-01T12:00), got {since!r}"
            ) from None
    if since.tzinfo is None:
        since = since.replace(tzinfo=timezone.utc)
    return since.astimezone(timezone.utc).isoformat()


def _largest_remainder(sizes: Mapping[str, int], n: int) -> dict[str, int]:
    """Split ``n`` over strata in proportion to their sizes (Hamilton's method)."""
    total = sum(sizes.values())
    exact = {k: n * size / total for k, size in sizes.items()}
    quotas = {k: math.floor(v) for k, v in exact.items()}
    left = n - sum(quotas.values())
    for k in sorted(exact, key=lambda k: (-(exact[k] - quotas[k]), k))[:left]:
        quotas[k] += 1
    return quotas


def _sheet_audit(path: Path, format: Format) -> int:
    rows, _ = read_rows(path, format)
    ids = {
        str(row.values.get("audit_id")).strip()
        for row in rows
        if str(row.values.get("audit_id") or "").strip()
    }
    if not ids:
        raise AuditError(f"{path}: the sheet has no audit_id column values; pass --audit ID")
    if len(ids) > 1:
        raise AuditError(
            f"{path}: the sheet mixes audits {', '.join(sorted(ids))}; ingest one audit's sheet at a time"
        )
    value = ids.pop()
    if not value.isdigit():
        raise LabelImportError(
            f"audit_id must be a number, got {value!r}", file=path, field="audit_id"
        )
    return int(value)


def _humans(labels: Iterable[Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """result_id -> labeler -> field -> value."""
    humans: dict[str, dict[str, dict[str, Any]]] = defaultdict(lambda: defaultdict(dict))
    for label in labels:
        humans[label.result_id][label.labeler][label.field] = label.value
    return {k: {who: dict(v) for who, v in by.items()} for k, by in humans.items()}


def _majority(values: Iterable[Any]) -> tuple[Any, bool]:
    """The most common value and whether it is tied with another."""
    ranked = Counter(values).most_common()
    if not ranked:
        return None, True
    tied = len(ranked) > 1 and ranked[0][1] == ranked[1][1]
    return ranked[0][0], tied


def _primary_order(fields: Mapping[str, LabelField]) -> list[str]:
    kinds = {"verdict": 0, "winner": 1, "score": 2}
    return sorted(
        fields, key=lambda name: (kinds.get(fields[name].kind, 3), list(fields).index(name))
    )


def _scale(spec: LabelField, observed: Sequence[Any]) -> tuple[Any, ...] | None:
    """The card's scale, extended by any observed value outside it (e.g. from an older version)."""
    base = spec.scale
    if base is None:
        return None
    extra = [v for v in dict.fromkeys(observed) if v not in base]
    try:
        extra.sort()
    except TypeError:
        pass
    return (*base, *extra)


def _independent_delta(
    new: Sequence[tuple[Any, Any]],
    old: Sequence[tuple[Any, Any]],
    *,
    scale: Sequence[Any] | None,
    weights: Literal["quadratic"] | None,
    level: float,
    n_resamples: int,
    seed: int | None,
) -> Estimate:
    """``kappa(new) - kappa(old)`` for two independent samples, percentile bootstrap."""
    order = label_order([v for pair in (*new, *old) for v in pair], scale)
    w = weight_matrix(len(order), weights)
    nj, nh = to_codes([j for j, _ in new], order), to_codes([h for _, h in new], order)
    oj, oh = to_codes([j for j, _ in old], order), to_codes([h for _, h in old], order)
    value = kappa_from_codes(nj, nh, w) - kappa_from_codes(oj, oh, w)
    rng = np.random.default_rng(seed)
    diffs = np.empty(n_resamples)
    for b in range(n_resamples):
        i = rng.integers(0, len(nj), len(nj))
        k = rng.integers(0, len(oj), len(oj))
        diffs[b] = kappa_from_codes(nj[i], nh[i], w) - kappa_from_codes(oj[k], oh[k], w)
    finite = diffs[np.isfinite(diffs)]
    if finite.size == 0 or math.isnan(value):
        return Estimate(value, math.nan, math.nan, level, len(nj))
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(finite, [tail, 100 - tail])
    return Estimate(value, float(low), float(high), level, len(nj))


def _finite(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else value
