"""The calibration tables: human labels, audits and anchor sets, in the results database.

They live in the same SQLite file as the judged results (labels point at result rows) and are
created by their own ordered, atomic sqlite-utils migration set, ``Migrations("calibration")``,
next to judgecards' ``Migrations("judgecards")``. Nothing creates them by hand: the calibration
API calls `open_store`, which applies whatever is pending. A plain `judgecards.Store` (and so a
`Judge`) never creates them, which is why `calibration.audits.status` must cope with their absence.

Tables::

    labels        one human label of one stored result on one field (verdict, a score axis or
                  a pairwise winner), by one labeler, optionally inside an audit
    audits        a spot-check sample or an anchor-set re-run: card@version, card hash, judge
                  model, seed, n, sheet; plus the cached headline (kappa, n, date) that
                  `latest_calibration` reads without any computation
    audit_items   the results an audit covers, with a snapshot of what the judge said then
                  (a later ``cache=False`` run may overwrite the result row itself) and, in
                  an uncertainty sample, the judge's confidence and the item's inclusion
                  probability (its weight is the inverse)
    anchor_sets   a named, fixed set of human-labelled items to re-judge over time
    anchor_items  its items: inputs, the source run's judge labels, and the human labels
    alignment_runs  one `calibration.alignment` run: card and label-set hashes, judge model, the
                  candidates' dev kappa, the chosen one's test kappa, the card version written
    label_queues  an audit served for labelling (`calibration.audits.queue`): labels wanted per
                  item, reservation timeout, who it is for, the secret of the pairwise sides;
                  with queue_reservations, queue_skips, queue_sides (which labeler saw a
                  pairwise item's answers swapped) and label_reveals (why a labeler differs
                  from the judge, asked after the blind label, never used in kappa)
    cascade_decisions  per comparison a pairwise cascade made (`calibration.cascades.pairwise`):
                  whether it decided its pair, who decided the pair (a model or people), the
                  judge's threshold and the comparison's confidence, the escalated audit
    cascade_results  the same per result a single-item cascade made (`calibration.cascades.cascade`)
    queue_disclosures  when the judge's answer on an item was first shown to a labeler (after
                  their blind label): from then on that label is the measurement and stays
    label_revisions  a labeler's correction of a served label made after the judge's answer
                  was shown: kept apart from ``labels``, marked with when the answer was shown,
                  and used by agreement and kappa only when asked (``revisions=True``)
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import sqlite_utils
from sqlite_utils import Migrations

from judgecards.errors import StoreError
from judgecards.storage import Store

__all__ = ["migrations", "open_store", "opened"]

migrations = Migrations("calibration")


@migrations()
def m001_labels_audits_anchors(db: sqlite_utils.Database) -> None:
    db.table("audits").create(
        {
            "id": int,
            "kind": str,  # "sample" | "rerun"
            "card": str,
            "card_hash": str,
            "model": str,
            "seed": int,
            "n_requested": int,
            "n": int,
            "since": str,
            "stratify": str,
            "sheet": str,
            "anchor_set": str,
            "created_at": str,
            # Cached headline, rewritten after every ingest or re-run (see calibration.audits.status).
            "field": str,
            "n_labeled": int,
            "kappa": float,
            "kappa_low": float,
            "kappa_high": float,
            "agreement": float,
            "calibrated_at": str,
        },
        pk="id",
        not_null={"kind", "card", "card_hash", "model", "n", "created_at"},
    )
    db.table("audits").create_index(
        ["card", "model", "created_at"], index_name="audits_card_model_time"
    )

    db.table("labels").create(
        {
            "id": int,
            "result_id": str,
            "item_id": str,
            "card": str,
            "model": str,
            "labeler": str,
            "field": str,
            "kind": str,  # "verdict" | "score" | "winner"
            "value": str,  # JSON, so 4 stays an int and "match" a string
            "note": str,
            "audit_id": int,
            "source": str,
            "created_at": str,
        },
        pk="id",
        not_null={"result_id", "card", "model", "labeler", "field", "kind", "value", "created_at"},
        foreign_keys=[("audit_id", "audits", "id")],
    )
    # One label per result, labeler and field within one audit (audit ids start at 1, so 0
    # stands for "no audit"). Written in SQL: sqlite-utils has no expression indexes.
    db.execute(
        "CREATE UNIQUE INDEX labels_unique ON labels (result_id, labeler, field, ifnull(audit_id, 0))"
    )
    db.table("labels").create_index(
        ["card", "model", "created_at"], index_name="labels_card_model_time"
    )
    db.table("labels").create_index(["audit_id"], index_name="labels_audit")
    db.table("labels").create_index(["item_id"], index_name="labels_item")

    db.table("audit_items").create(
        {
            "audit_id": int,
            "position": int,
            "result_id": str,
            "item_id": str,
            "stratum": str,
            "anchor_position": int,
            "judge": str,  # JSON {field: value} as judged when the audit was made
        },
        pk=("audit_id", "position"),
        not_null={"result_id"},
        foreign_keys=[("audit_id", "audits", "id")],
    )
    db.table("audit_items").create_index(
        ["audit_id", "result_id"], unique=True, index_name="audit_items_result"
    )

    db.table("anchor_sets").create(
        {"name": str, "card": str, "source_audit": int, "description": str, "created_at": str},
        pk="name",
        not_null={"card", "source_audit", "created_at"},
    )
    db.table("anchor_items").create(
        {
            "anchor_set": str,
            "position": int,
            "item_id": str,
            "source_result_id": str,
            "inputs": str,  # JSON of the card inputs, to re-judge with
            "judge": str,  # JSON {field: value} of the source run
            "labels": str,  # JSON {labeler: {field: value}}
        },
        pk=("anchor_set", "position"),
        foreign_keys=[("anchor_set", "anchor_sets", "name")],
    )


@migrations()
def m002_alignment_runs(db: sqlite_utils.Database) -> None:
    db.table("alignment_runs").create(
        {
            "id": int,
            "card": str,  # the card aligned, name@version
            "card_hash": str,
            "label_set_hash": str,  # sha256 over the human labels the run split
            "model": str,
            "field": str,  # the label field kappa was measured on
            "seed": int,
            "k": int,
            "n_pool": int,
            "n_dev": int,
            "n_test": int,
            "candidates": str,  # JSON [{name, kappa, low, high, n, errors}] on dev
            "chosen": str,
            "dev_kappa": float,
            "dev_low": float,
            "dev_high": float,
            "test_kappa": float,
            "test_low": float,
            "test_high": float,
            "test_n": int,
            "new_card": str,  # name@version written, or null when the card as is was best
            "new_card_hash": str,
            "new_card_path": str,
            "created_at": str,
        },
        pk="id",
        not_null={"card", "card_hash", "label_set_hash", "model", "chosen", "created_at"},
    )
    db.table("alignment_runs").create_index(
        ["card", "model", "created_at"], index_name="alignment_runs_card_model_time"
    )


@migrations()
def m003_audit_inclusion_probabilities(db: sqlite_utils.Database) -> None:
    # Uncertainty samples (calibration.stats.uncertainty_sampling): null for uniform and stratified ones.
    db.table("audit_items").add_column("confidence", float)
    db.table("audit_items").add_column("inclusion_probability", float)


@migrations()
def m004_label_queues(db: sqlite_utils.Database) -> None:
    # Served labelling (calibration.audits.queue): an audit is a queue. Its blind labels go to
    # `labels` like any other; these tables hold only the queue's own state.
    db.table("label_queues").create(
        {
            "audit_id": int,
            "labels_wanted": int,  # labels from different labelers each item asks for
            "reserve_seconds": int,  # how long a served item is held for its labeler
            "labelers": str,  # JSON list of the labelers the queue is for; null: every labeler
            "reveal": int,  # 1: after a blind label, offer the judge's answer and ask why
            "secret": str,  # keys the pairwise side shuffle; never leaves the server
            "created_at": str,
        },
        pk="audit_id",
        not_null={"labels_wanted", "reserve_seconds", "reveal", "secret", "created_at"},
        foreign_keys=[("audit_id", "audits", "id")],
    )
    # Serving asks, for every item of an audit, who labelled it: without this index each
    # question scanned all of the audit's labels (800 items: 26 ms per progress count).
    db.table("labels").create_index(
        ["audit_id", "result_id", "labeler"], index_name="labels_audit_result"
    )
    # An item's own label count, when it asks for more (or fewer) than its queue.
    db.table("audit_items").add_column("labels_wanted", int)
    db.table("queue_reservations").create(
        {"audit_id": int, "position": int, "labeler": str, "until": float},  # epoch seconds
        pk=("audit_id", "position", "labeler"),
        not_null={"until"},
    )
    db.table("queue_skips").create(
        {"audit_id": int, "position": int, "labeler": str, "created_at": str},
        pk=("audit_id", "position", "labeler"),
    )
    db.table("queue_reservations").create_index(
        ["audit_id", "labeler"], index_name="queue_reservations_labeler"
    )
    db.table("queue_sides").create(
        {"audit_id": int, "position": int, "labeler": str, "swapped": int},
        pk=("audit_id", "position", "labeler"),
        not_null={"swapped"},
    )
    db.table("label_reveals").create(
        {
            "audit_id": int,
            "position": int,
            "labeler": str,
            "result_id": str,
            "judge": str,  # JSON {field: value}: what the labeler was shown
            "reason": str,  # "judge_wrong" | "i_slipped" | "rubric_unclear" | null (agreed)
            "note": str,
            "created_at": str,
        },
        pk=("audit_id", "position", "labeler"),
        not_null={"result_id", "judge", "created_at"},
    )


@migrations()
def m005_cascade_decisions(db: sqlite_utils.Database) -> None:
    # A pairwise cascade (calibration.cascades.pairwise): for each comparison it made, whether
    # that comparison decided its pair, who did decide it, and at what threshold.
    db.table("cascade_decisions").create(
        {
            "comparison_id": str,  # comparisons.id
            "pair_id": str,
            "card": str,  # name@version
            "card_hash": str,
            "model": str,  # the judge that made this comparison
            "stage": int,  # its position in the cascade, 0 first
            "threshold": float,  # its calibrated confidence threshold
            "confidence": float,  # this comparison's confidence
            "trusted": int,  # 1: this comparison decided the pair
            "decided_by": str,  # the model that decided the pair, or "human"
            "audit_id": int,  # the escalated audit the pair went to, else null
            "target": float,
            "delta": float,
            "created_at": str,
        },
        pk="comparison_id",
        not_null={"card", "model", "stage", "trusted", "decided_by", "target", "delta"},
    )
    db.table("cascade_decisions").create_index(
        ["card", "model", "created_at"], index_name="cascade_decisions_card_model_time"
    )


@migrations()
def m006_cascade_results(db: sqlite_utils.Database) -> None:
    # A single-item cascade (calibration.cascades.cascade): for each result it made, whether that result
    # decided its item, who did decide it, and at what threshold (cascade_decisions' twin).
    db.table("cascade_results").create(
        {
            "result_id": str,  # results.id
            "item_id": str,
            "card": str,  # name@version
            "card_hash": str,
            "model": str,  # the judge that made this result
            "stage": int,  # its position in the cascade, 0 first
            "threshold": float,  # its calibrated confidence threshold
            "confidence": float,  # this result's confidence
            "trusted": int,  # 1: this result decided the item
            "decided_by": str,  # the model that decided the item, or "human"
            "audit_id": int,  # the escalated audit the item is in, else null
            "target": float,
            "delta": float,
            "created_at": str,
        },
        pk="result_id",
        not_null={"card", "model", "stage", "trusted", "decided_by", "target", "delta"},
    )
    db.table("cascade_results").create_index(
        ["card", "model", "created_at"], index_name="cascade_results_card_model_time"
    )


@migrations()
def m007_label_revisions(db: sqlite_utils.Database) -> None:
    # A blind label given before the judge's answer is shown is the measurement (issue 22
    # item 1): the moment of the showing is recorded, undo may not retract a label after it,
    # and a later correction is a separate, marked revision that kappa does not read.
    db.table("queue_disclosures").create(
        {
            "audit_id": int,
            "position": int,
            "labeler": str,
            "result_id": str,
            "revealed_at": str,  # when the judge's answer was first shown to this labeler
        },
        pk=("audit_id", "position", "labeler"),
        not_null={"result_id", "revealed_at"},
    )
    db.table("label_revisions").create(
        {
            "id": int,
            "audit_id": int,
            "result_id": str,
            "item_id": str,
            "labeler": str,
            "field": str,
            "kind": str,
            "value": str,  # JSON, as in labels
            "note": str,
            "revealed_at": str,  # the judge's answer had been shown since then
            "created_at": str,
        },
        pk="id",
        not_null={
            "audit_id",
            "result_id",
            "labeler",
            "field",
            "kind",
            "value",
            "revealed_at",
            "created_at",
        },
    )
    db.table("label_revisions").create_index(
        ["audit_id", "result_id", "labeler"], index_name="label_revisions_audit_result"
    )


def open_store(db: Store | str | os.PathLike[str] | None = None) -> Store:
    """A `Store` (opened from a path, ``JUDGECARDS_DB`` or the default) with the calibration tables.

    Passing a `Store` migrates it in place and returns it, so a `Judge` and the calibration API
    can share one connection.
    """
    store = db if isinstance(db, Store) else Store(db)
    try:
        store.migrate(migrations)  # under the store's lock and an immediate write lock
    except StoreError:
        if store is not db:
            store.close()
        raise
    return store


@contextmanager
def opened(db: Store | str | os.PathLike[str] | None) -> Iterator[Store]:
    """`open_store` for one operation: a database opened here from a path is closed after it."""
    store = open_store(db)
    try:
        yield store
    finally:
        if store is not db:
            store.close()
