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
(`judgecards.metrics.stats.bootstrap_ci`, seed 0 unless told otherwise); the measures are
computed in `calibration.audits.analysis`, the sample drawn in `calibration.audits.sampling`, and
every row read or written through `calibration.labels.repository`.

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
live in `calibration.audits.report`, the stored records (`AuditRecord`, `AnchorSet`) in
`calibration.labels.records`; they are importable from here too.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any, cast

from calibration.audits import sampling as audit_sampling
from calibration.audits.analysis import AuditMeasures, finite, humans_by_result
from calibration.audits.report import (
    AnchorDrift,
    AuditReport,
    AuditSummary,
    Disagreement,
    FieldAgreement,
    Flip,
    GateCheck,
    gate_check,
)
from calibration.audits.sampling import AuditSample, Stratify, draw, since_timestamp
from calibration.estimates import audit_estimates
from calibration.labels import (
    AnchorItem,
    AnchorSet,
    AuditItem,
    AuditRecord,
    AuditScope,
    CalibrationRepository,
    Format,
    Label,
    LabelField,
    LabelImportReport,
    LabelKind,
    NewLabel,
    format_of,
    import_labels,
    judge_labels,
    label_fields,
    open_store,
    sheet_audit_id,
    write_rows,
)
from calibration.stats import PassFailView, judgment_confidence, pass_fail_view
from judgecards.cards import Card, load_card
from judgecards.errors import AuditError, JudgecardsError
from judgecards.metrics.stats import Estimate
from judgecards.storage import Store

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

CardsDir = str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


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
        self.repository = CalibrationRepository(self.store)
        self.cards_dir = cards_dir
        self.n_resamples = n_resamples
        self.level = level
        self._cards: dict[str, Card] = {}
        self._measures = AuditMeasures(
            self.repository,
            fields_of=self._fields,
            anchor_of=self.anchor,
            level=level,
            n_resamples=n_resamples,
        )

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
        return self.repository.audits(card=card, model=model)

    def get(self, audit_id: int) -> AuditRecord:
        """One audit; `AuditError` if there is none with that id."""
        record = self.repository.audit(audit_id)
        if record is None:
            raise AuditError(f"no audit #{audit_id} in {self.store.path}")
        return record

    def anchors(self) -> list[AnchorSet]:
        """Every anchor set, oldest first."""
        return self.repository.anchor_sets()

    def anchor(self, name: str) -> AnchorSet:
        """One anchor set; `AuditError` if unknown."""
        anchors = self.anchors()
        for anchor in anchors:
            if anchor.name == name:
                return anchor
        known = ", ".join(a.name for a in anchors) or "none"
        raise AuditError(f"no anchor set {name!r} (known: {known})")

    # ------------------------------------------------------------------ sample and sheet

    def sample(  # noqa: PLR0913  public API: keyword-only options
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
        strategy: audit_sampling.Strategy | None = None,
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

        With ``strategy="uncertainty"`` results the judge was less sure of (G-Eval probability,
        `calibration.stats.confidence`) are drawn more often, with a known inclusion probability π
        stored per item; the measures weight by ``1/π`` (`calibration.stats.uncertainty_sampling`).

        Args:
            card: ``name@version``, or ``name`` for its newest version with results by ``model``.
            model: the judge model, ``provider:model``.
            n: sample size (all eligible results when fewer).
            since: only results created at or after this time (a date means its midnight UTC).
            stratify: ``"verdict"``: the same as ``strategy="stratified"``.
            seed: sampling seed.
            sheet: write the labelling sheet here (see `write_sheet`).
            format: the sheet's format (else from its extension).
            strategy: ``"uniform"`` (the default), ``"stratified"`` (by verdict) or
                ``"uncertainty"`` (oversample where the judge was least sure, weighted back).

        Raises:
            AuditError: no eligible results, or a bad ``n``, ``since`` or ``strategy``.
        """
        if n < 1:
            raise AuditError(f"n must be at least 1, got {n}")
        stratify = audit_sampling.checked_stratify(stratify, strategy)
        ref = self._card_ref(card, model)
        since_text = since_timestamp(since)
        candidates = [
            result
            for result, _ in self.store.results(
                card=ref, model=model, status="ok", since=since_text
            )
        ]
        where = f" since {since_text}" if since_text else ""
        if not candidates:
            raise AuditError(f"no successful results of {ref} judged by {model}{where} to sample")
        card_obj = self._card(ref)
        fields = label_fields(card_obj)
        if stratify == "verdict" and "verdict" not in fields:
            raise AuditError(f"{ref} has no verdict to stratify by")
        if seed is None:
            seed = secrets.randbelow(2**31)
        sure = judgment_confidence if strategy == "uncertainty" else None
        drawn = draw(
            candidates, n=n, seed=seed, stratify=stratify, ref=ref, where=where, confidence=sure
        )
        notes = list(drawn.notes)
        if card_obj.hash != drawn.card_hash:
            notes.insert(
                1 if len(candidates) > drawn.population else 0,
                f"the card file of {ref} changed since these results were judged ({drawn.card_hash})",
            )
        audit_id = self.repository.add_audit(
            {
                "kind": "sample",
                "card": ref,
                "card_hash": drawn.card_hash,
                "model": model,
                "seed": seed,
                "n_requested": n,
                "n": len(drawn.chosen),
                "since": since_text,
                "stratify": stratify,
                "created_at": _now(),
            },
            drawn.audit_items(fields, stratified=stratify is not None),
        )
        path = None if sheet is None else self.write_sheet(audit_id, sheet, format=format)
        return AuditSample(
            self.get(audit_id), drawn.population, drawn.strata, path, fields, tuple(notes)
        )

    def write_sheet(
        self, audit_id: int, path: str | os.PathLike[str], *, format: Format | None = None
    ) -> Path:
        """Write (or rewrite) an audit's labelling sheet and record where it is.

        One row per item, in the audit's (shuffled) order: ``audit_id``, ``result_id``,
        ``item_id``, the card's inputs, an empty column per label field (``verdict``, each axis,
        ``winner``) and ``note``. The judge's verdict and scores are never written. In CSV,
        every cell a spreadsheet would run as a formula (item ids and inputs are untrusted text)
        is prefixed with ``'``, which ingest strips (`calibration.labels.files`); JSONL is
        verbatim.
        """
        record = self.get(audit_id)
        target = Path(path)
        chosen = format or format_of(target)
        card = self._card(record.card)
        fields = label_fields(card)
        inputs = list(card.spec.inputs)
        rows = []
        for item in self.repository.audit_items(audit_id):
            stored = self.store.get(item.result_id)
            values = stored[1] if stored else {}
            row: dict[str, Any] = {
                "audit_id": audit_id,
                "result_id": item.result_id,
                "item_id": item.item_id,
            }
            for name in inputs:
                row[name] = values.get(name)
            for name in fields:
                row[name] = None
            row["note"] = None
            rows.append(row)
        columns = ["audit_id", "result_id", "item_id", *inputs, *fields, "note"]
        write_rows(target, rows, columns, chosen)
        self.repository.set_sheet(audit_id, str(target))
        return target

    # ------------------------------------------------------------------ ingest

    def ingest(
        self,
        sheet: str | os.PathLike[str],
        *,
        labeler: str | None,
        audit_id: int | None = None,
        skip_invalid: bool = False,
        replace: bool = False,
        format: Format | None = None,
    ) -> LabelImportReport:
        """Store a filled sheet's labels under its audit, then refresh the audit's headline.

        The audit comes from the sheet's ``audit_id`` column (or ``audit_id``). Rows left
        empty are skipped as not labelled; everything else is validated as by
        `calibration.labels.import_labels`, and any invalid row means nothing is stored
        unless ``skip_invalid``. With ``replace``, a labeler's corrected sheet replaces the
        labels they gave in this audit before.

        Raises:
            LabelImportError: a bad sheet or row (nothing stored).
            AuditError: the sheet names no audit, several, or one that does not exist.
        """
        path = Path(sheet)
        chosen = format or format_of(path)
        if audit_id is None:
            audit_id = sheet_audit_id(path, chosen)
        self.get(audit_id)
        scope = AuditScope(
            audit_id,
            {item.result_id: item.item_id for item in self.repository.audit_items(audit_id)},
        )
        report = import_labels(
            path,
            labeler=labeler,
            db=self.store,
            skip_invalid=skip_invalid,
            replace=replace,
            format=chosen,
            cards_dir=self.cards_dir,
            scope=scope,
        )
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
        summary, _ = self._measures.summaries([self.get(audit_id)], seed=0, primary_only=True)
        only = summary[0]
        kappa = only.kappa
        agreement = only.agreement
        self.repository.set_headline(
            audit_id,
            {
                "field": only.primary,
                "n_labeled": kappa.n if kappa is not None else 0,
                "kappa": finite(kappa.value if kappa else None),
                "kappa_low": finite(kappa.low if kappa else None),
                "kappa_high": finite(kappa.high if kappa else None),
                "agreement": finite(agreement.value if agreement else None),
                "calibrated_at": _now(),
            },
        )
        return only

    # ------------------------------------------------------------------ report

    def summary(self, audit_id: int) -> AuditSummary:
        """One audit's measures (no baseline comparison)."""
        summaries, _ = self._measures.summaries([self.get(audit_id)], seed=0)
        return summaries[0]

    def report(  # noqa: PLR0913  public API: keyword-only options
        self,
        *,
        card: str | None = None,
        model: str | None = None,
        min_kappa: float = 0.6,
        baseline: int | None = None,
        seed: int | None = 0,
        positive: str | None = None,
        min_tpr: float | None = None,
        min_tnr: float | None = None,
        revisions: bool = False,
    ) -> AuditReport:
        """Every audit (of ``card`` / ``model``) over time, with the gate; see the module docs.

        Args:
            card: ``name`` (every version) or ``name@version``.
            model: only audits of this judge model.
            min_kappa: the gate's threshold on the newest audit's kappa.
            baseline: the audit to compare the newest with (default: the first labelled audit
                of each series).
            seed: bootstrap seed.
            positive: the positive value of a two-valued primary field's pass/fail view
                (default: ``fail``, else see `calibration.stats.pass_fail`).
            min_tpr / min_tnr: thresholds the pass/fail view's readiness line checks the
                lower bounds of TPR and TNR against (``None``: not checked).
            revisions: use the corrections labelers made after the judge's answer was shown
                instead of their blind labels (default: never; the blind label is the
                measurement).

        Raises:
            AuditError: no audits match, or ``baseline`` is unknown.
        """
        records = self.audits(card=card, model=model)
        if not records:
            scope = " ".join(part for part in (card, model) if part)
            raise AuditError(f"no audits{' of ' + scope if scope else ''} in {self.store.path}")
        if baseline is not None and all(r.id != baseline for r in records):
            raise AuditError(f"baseline audit #{baseline} is not among the audits reported")
        summaries, notes = self._measures.summaries(records, seed=seed, revisions=revisions)
        if revisions:
            notes.append(
                "labels corrected after the judge's answer was shown are used (--with-revisions)"
            )
        series: dict[tuple[str, str], list[int]] = defaultdict(list)
        for index, s in enumerate(summaries):
            # A cascade's escalated items were chosen for being hard: not the judge's kappa.
            if s.audit.kind != "escalated":
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
                    delta = self._measures.delta_vs(current, base, seed=seed)
                summaries[i] = replace(current, baseline_id=base.audit.id, vs_baseline=delta)
            checks.append(gate_check(summaries[labelled[-1]], summaries[base_index], min_kappa))
        judges = [(s.audit.card, s.audit.model) for s in summaries if s.n_labeled]
        estimates, more = audit_estimates(self.store, judges, seed=seed)
        for i, s in enumerate(summaries):
            shares = {
                (row.field, row.name): row.result.corrected
                for report in estimates
                if (report.card, report.model) == (s.audit.card, s.audit.model)
                for row in report.rows
                if row.kind == "verdict"
            }
            view = self._pass_fail(
                s,
                positive=positive,
                min_tpr=min_tpr,
                min_tnr=min_tnr,
                ppi=partial(_share, shares, s.primary),
            )
            if view is not None:
                summaries[i] = replace(s, pass_fail=view)
        if positive is not None and all(s.pass_fail is None for s in summaries if s.n_labeled):
            more.append(
                f"no pass/fail view: positive {positive!r} is not a value of any labelled "
                "audit's two-valued primary field"
            )
        return AuditReport(
            tuple(summaries), tuple(checks), min_kappa, (*notes, *more), tuple(estimates)
        )

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
        humans = humans_by_result(self.repository.labels(audit_id=from_audit))
        rows: list[AnchorItem] = []
        seen: set[str] = set()
        for item in self.repository.audit_items(from_audit):
            if item.result_id not in humans:
                continue
            stored = self.store.get(item.result_id)
            if stored is None:
                raise AuditError(
                    f"result {item.result_id} of audit #{from_audit} is no longer stored"
                )
            inputs = stored[1]
            key = json.dumps([item.item_id, inputs], sort_keys=True)
            if key in seen:
                continue
            seen.add(key)
            rows.append(
                AnchorItem(
                    len(rows) + 1,
                    item.item_id,
                    item.result_id,
                    inputs,
                    item.judge,
                    humans[item.result_id],
                )
            )
        if not rows:
            raise AuditError(
                f"audit #{from_audit} has no human labels yet: ingest a labelled sheet first"
            )
        self.repository.add_anchor_set(
            {
                "name": name,
                "card": record.card_name,
                "source_audit": from_audit,
                "description": description,
                "created_at": _now(),
            },
            rows,
        )
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
        from judgecards.judging import Judge

        anchor = self.anchor(anchor_set)
        items = self.repository.anchor_items(anchor_set)
        # No uncalibrated-judge warning here: this run is the calibration it asks for.
        judge = Judge(
            card or anchor.card,
            model,
            cards_dir=self.cards_dir,
            db=self.store,
            cache=False,
            **judge_options,
        )
        results = judge.score_many(
            [{**item.inputs, "id": item.item_id} for item in items], concurrency=concurrency
        )
        fields = label_fields(judge.card)
        audit_items: list[AuditItem] = []
        labels: list[NewLabel] = []
        now = _now()
        used: set[str] = set()
        for item, result in zip(items, results):
            if result.id in used:  # two anchor items the card now sees as one
                continue
            used.add(result.id)
            judged = judge_labels(fields, result) if result.ok else {}
            audit_items.append(
                AuditItem(
                    len(audit_items) + 1,
                    result.id,
                    result.item_id,
                    judged,
                    anchor_position=item.position,
                )
            )
            for labeler, values in item.labels.items():
                labels += [
                    NewLabel(
                        result_id=result.id,
                        item_id=result.item_id,
                        card=judge.card.ref,
                        model=model,
                        labeler=labeler,
                        field=name,
                        kind=fields[name].kind,
                        value=value,
                        note=None,
                        created_at=now,
                        source=f"anchor:{anchor_set}",
                    )
                    for name, value in values.items()
                    if name in fields
                ]
        audit_id = self.repository.add_audit(
            {
                "kind": "rerun",
                "card": judge.card.ref,
                "card_hash": judge.card.hash,
                "model": model,
                "n_requested": len(items),
                "n": len(audit_items),
                "anchor_set": anchor_set,
                "created_at": now,
            },
            audit_items,
            labels,
        )
        self.refresh(audit_id)
        summaries, _ = self._measures.summaries([self.get(audit_id)], seed=seed)
        return summaries[0]

    # ------------------------------------------------------------------ internals

    def _pass_fail(
        self,
        summary: AuditSummary,
        *,
        positive: str | None,
        min_tpr: float | None,
        min_tnr: float | None,
        ppi: Callable[[Hashable], Estimate | None],
    ) -> PassFailView | None:
        """The primary field's pass/fail view; the corrected share only for a uniform sample
        of stored single-item results (its unlabelled items are the other stored results)."""
        if summary.primary is None:
            return None
        agreement = summary.fields[summary.primary]
        audit = summary.audit
        items = self.repository.audit_items(audit.id)
        unlabeled: list[Any] | None = None
        uniform = all(item.inclusion_probability is None for item in items)
        if audit.kind == "sample" and uniform and agreement.kind == "verdict":
            labelled = {item.result_id for item in items}
            fields = self._fields(audit.card, [])
            unlabeled = [
                judge_labels(fields, result).get(summary.primary)
                for result, _ in self.store.results(card=audit.card, model=audit.model, status="ok")
                if result.id not in labelled and result.card_hash == audit.card_hash
            ]
            unlabeled = [value for value in unlabeled if value is not None]
        return pass_fail_view(
            summary.primary,
            agreement.kind,
            agreement.scale or (),
            agreement.pairs,
            unlabeled=unlabeled,
            positive=positive,
            min_tpr=min_tpr,
            min_tnr=min_tnr,
            ppi=ppi,
        )

    def _fields(self, ref: str, labels: Sequence[Label]) -> dict[str, LabelField]:
        """The card's label fields; if the card cannot be loaded, those seen in the labels."""
        try:
            return label_fields(self._card(ref))
        except JudgecardsError:
            return {
                label.field: LabelField(label.field, cast(LabelKind, label.kind))
                for label in labels
            }

    def _card(self, ref: str) -> Card:
        if ref not in self._cards:
            self._cards[ref] = load_card(ref, cards_dir=self.cards_dir)
        return self._cards[ref]

    def _card_ref(self, card: str, model: str) -> str:
        """``name@version`` as given, or a name's newest version with results by ``model``."""
        if "@" in card:
            return card
        versions = [
            ref
            for ref in self.store.card_refs(card, model=model)
            if ref.partition("@")[2].isdigit()
        ]
        if not versions:
            raise AuditError(f"no successful results of card {card!r} judged by {model} to sample")
        return max(versions, key=lambda ref: int(ref.partition("@")[2]))


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def _share(
    shares: Mapping[tuple[str, str], Estimate], field: str | None, value: Hashable
) -> Estimate | None:
    """The corrected share of ``value`` on ``field`` among the estimates (``None``: none)."""
    return None if field is None else shares.get((field, f"share {value}"))
