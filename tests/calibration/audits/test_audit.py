"""The `Audit` API: reproducible sampling, sheets, ingest, the report's numbers and gate, re-runs.

Stored results are written through the real `Store`; re-runs judge through the real openai SDK
against a scripted httpx2 transport (`tests.fakes.http`). Nothing of ours is patched.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx2
import pytest

from calibration import kappa
from calibration.audits import latest_calibration
from calibration.audits.audit import Audit, AuditError
from calibration.audits.sampling import largest_remainder
from calibration.labels import open_store
from calibration.labels.transfer import LabelImportError, read_labels
from judgecards.cards import load_card
from judgecards.storage import JudgeResult, Store
from tests.builders import (
    MODEL,
    SCORES,
    T0,
    TRUTH,
    VERDICTS,
    fill_sheet,
    labelled_audit,
    read_sheet,
    save_results,
    truthful,
)
from tests.fakes.http import Script, openai_chat, reference_judgment
from tests.fakes.server import tagged

# What a correct judge of the reference card says about each kind of answer, and the verdict
# its rule then decides: (correctness, completeness) -> verdict.


# --------------------------------------------------------------------------- helpers


def judge_script(kind_seen_as: Callable[[str, str], str] = lambda kind, answer: kind) -> Script:
    """A fake OpenAI server whose judge reads the answer's kind (optionally distorted) and scores it."""

    def reply(request: httpx2.Request) -> httpx2.Response:
        prompt = "\n".join(str(m["content"]) for m in json.loads(request.content)["messages"])
        answer = tagged(prompt, "model_output") or ""
        verdict = TRUTH[kind_seen_as(answer.split(":")[0], answer)]
        correctness, completeness = SCORES[verdict]
        return openai_chat(reference_judgment(correctness, completeness, verdict=verdict))

    return Script(default=reply)


def http(script: Script) -> dict[str, Any]:
    return {
        "api_key": "sk-test",
        "http_client": script.client(),
        "async_http_client": script.async_client(),
    }


@pytest.fixture
def audit(tmp_path: Path) -> Iterator[Audit]:
    api = Audit(tmp_path / "audit.db", n_resamples=400)
    yield api
    api.close()


# --------------------------------------------------------------------------- sampling


def test_same_seed_and_same_results_give_the_same_sample(tmp_path: Path) -> None:
    verdicts = [VERDICTS[i % 3] for i in range(40)]
    forward, backward = Audit(tmp_path / "a.db"), Audit(tmp_path / "b.db")
    save_results(forward.store, verdicts)
    # Same results, written in the opposite order and at other times.
    save_results(
        backward.store, verdicts, order=list(reversed(range(40))), created_at=T0 + timedelta(days=3)
    )
    drawn = [
        api.sample(card="reference@1", model=MODEL, n=12, seed=42)
        for api in (forward, backward, forward)
    ]
    ids = [
        [item.result_id for item in api.repository.audit_items(d.audit.id)]
        for api, d in zip((forward, backward, forward), drawn)
    ]
    assert ids[0] == ids[1] == ids[2]
    assert len(set(ids[0])) == 12
    other = forward.sample(card="reference@1", model=MODEL, n=12, seed=43)
    assert [item.result_id for item in forward.repository.audit_items(other.audit.id)] != ids[0]
    unseeded = forward.sample(card="reference@1", model=MODEL, n=12)
    assert unseeded.audit.seed is not None  # chosen, and recorded so the audit can be redrawn
    forward.close()
    backward.close()


def test_stratified_sample_is_proportional_bylargest_remainder(audit: Audit) -> None:
    verdicts = ["match"] * 50 + ["partial_match"] * 30 + ["mismatch"] * 20
    save_results(audit.store, verdicts)
    drawn = audit.sample(card="reference@1", model=MODEL, n=15, stratify="verdict", seed=5)
    # 15 * (50, 30, 20) / 100 = (7.5, 4.5, 3.0): floors (7, 4, 3) leave 1, which goes to the
    # largest remainder; match and partial_match tie at .5 and match sorts first.
    assert drawn.strata == {"match": (50, 8), "mismatch": (20, 3), "partial_match": (30, 4)}
    stored = Counter(item.judge["verdict"] for item in audit.repository.audit_items(drawn.audit.id))
    assert stored == {"match": 8, "partial_match": 4, "mismatch": 3}
    # The sheet order is shuffled, not grouped by verdict.
    order = [item.judge["verdict"] for item in audit.repository.audit_items(drawn.audit.id)]
    assert order != sorted(order, key=VERDICTS.index)


def testlargest_remainder() -> None:
    assert largest_remainder({"a": 1, "b": 1, "c": 1}, 2) == {"a": 1, "b": 1, "c": 0}
    assert largest_remainder({"a": 98, "b": 1, "c": 1}, 10) == {"a": 10, "b": 0, "c": 0}
    assert sum(largest_remainder({"a": 7, "b": 5, "c": 3, "d": 1}, 9).values()) == 9


def test_since_and_model_limit_the_population(audit: Audit) -> None:
    save_results(audit.store, ["match"] * 10, prefix="old", created_at=T0)
    save_results(audit.store, ["mismatch"] * 5, prefix="new", created_at=T0 + timedelta(days=30))
    save_results(
        audit.store,
        ["match"] * 5,
        prefix="other",
        model="openai:gpt-4o-mini",
        created_at=T0 + timedelta(days=30),
    )
    drawn = audit.sample(card="reference@1", model=MODEL, n=50, since="2025-05-15", seed=0)
    assert drawn.population == 5 and drawn.audit.n == 5
    assert {item.result_id[:3] for item in audit.repository.audit_items(drawn.audit.id)} == {"new"}
    assert any("only 5 eligible" in note for note in drawn.notes)
    assert drawn.audit.since == "2025-05-15T00:00:00+00:00"
    with pytest.raises(AuditError, match="no successful results"):
        audit.sample(card="reference@1", model="openai:nobody", n=5)
    with pytest.raises(AuditError, match="ISO date"):
        audit.sample(card="reference@1", model=MODEL, since="last tuesday")


@pytest.mark.parametrize("suffix", ["csv", "jsonl"])
def test_the_sheet_hides_the_judge_and_the_audit_records_its_provenance(
    audit: Audit, tmp_path: Path, suffix: str
) -> None:
    results = save_results(audit.store, ["match", "mismatch", "partial_match"] * 4)
    audit.store.save(
        results[0].model_copy(update={"id": "formula", "item_id": "f"}),
        inputs={"question": "Sum?", "gold_answer": "3", "model_output": "=1+2"}, params={},
    )  # fmt: skip
    sheet = tmp_path / f"sheet.{suffix}"
    drawn = audit.sample(card="reference@1", model=MODEL, n=13, seed=3, sheet=sheet)
    text = sheet.read_text(encoding="utf-8")
    if suffix == "csv":
        rows = read_sheet(sheet)
        assert list(rows[0]) == ["audit_id", "result_id", "item_id", "question", "gold_answer", "model_output",
                                 "verdict", "correctness", "completeness", "style_fidelity", "note"]  # fmt: skip
        assert {row["model_output"] for row in rows if row["result_id"] == "formula"} == {"'=1+2"}
    else:
        rows = [json.loads(line) for line in text.splitlines()]
        assert all(row["verdict"] is None and row["correctness"] is None for row in rows)
        assert {row["model_output"] for row in rows if row["result_id"] == "formula"} == {"=1+2"}
    assert len(rows) == 13
    assert all(not row["verdict"] and not row["correctness"] for row in rows)
    for hidden in ("match", "mismatch", "partial_match", "The output states"):
        assert hidden not in text  # no verdict, scores, or judge reasoning anywhere
    record = audit.get(drawn.audit.id)
    card = load_card("reference@1")
    assert (record.card, record.card_hash, record.model, record.seed, record.n, record.sheet) == (
        "reference@1",
        card.hash,
        MODEL,
        3,
        13,
        str(sheet),
    )
    assert record.created_at.tzinfo is not None


# --------------------------------------------------------------------------- ingest


def test_ingest_stores_labels_under_the_audit(audit: Audit, tmp_path: Path) -> None:
    save_results(audit.store, [VERDICTS[i % 3] for i in range(9)])
    drawn = audit.sample(card="reference@1", model=MODEL, n=6, seed=0, sheet=tmp_path / "s.csv")
    assert drawn.sheet is not None
    # The labeler does the odd items and leaves the others blank.
    fill_sheet(drawn.sheet, lambda row: truthful(row) if int(row["item_id"][1:]) % 2 else {})
    report = audit.ingest(drawn.sheet, labeler="alice")
    labelled = [row for row in read_sheet(drawn.sheet) if row["verdict"]]
    assert report.audit_id == drawn.audit.id
    assert (report.rows, report.rows_written, report.unlabeled) == (
        6,
        len(labelled),
        6 - len(labelled),
    )
    labels = read_labels(audit.store, audit_id=drawn.audit.id)
    assert len(labels) == 4 * len(labelled) and {label.labeler for label in labels} == {"alice"}
    with pytest.raises(LabelImportError, match="already labelled"):
        audit.ingest(drawn.sheet, labeler="alice")  # the same sheet twice


def test_ingest_rejects_rows_outside_the_audit(audit: Audit, tmp_path: Path) -> None:
    save_results(audit.store, ["match"] * 6)
    first = audit.sample(card="reference@1", model=MODEL, n=3, seed=0, sheet=tmp_path / "a.csv")
    second = audit.sample(card="reference@1", model=MODEL, n=3, seed=9, sheet=tmp_path / "b.csv")
    outside = {item.result_id for item in audit.repository.audit_items(second.audit.id)} - {
        item.result_id for item in audit.repository.audit_items(first.audit.id)
    }
    sheet = tmp_path / "a.csv"
    rows = read_sheet(sheet)
    rows.append({**rows[0], "result_id": min(outside)})
    rows.append({**rows[0], "audit_id": str(second.audit.id)})
    with sheet.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows([{**row, "verdict": "match"} for row in rows])
    with pytest.raises(AuditError, match="mixes audits"):
        audit.ingest(sheet, labeler="alice")
    with pytest.raises(LabelImportError) as caught:
        audit.ingest(sheet, labeler="alice", audit_id=first.audit.id)
    assert {(p.line, p.field) for p in caught.value.errors} == {(5, "result_id"), (6, "audit_id")}
    assert "not part of audit" in str(caught.value)
    assert read_labels(audit.store) == []


def test_sheet_item_ids_are_escaped_and_a_corrected_sheet_replaces_with_replace(
    audit: Audit, tmp_path: Path
) -> None:
    card = load_card("reference@1")
    for i, item_id in enumerate(["=cmd|' /C calc'!A0", "@SUM(1)", "+A1", "plain"]):
        audit.store.save(
            JudgeResult(id=f"x{i}", item_id=item_id, status="ok", verdict="match",
                        model_verdict="match", card=card.ref, card_hash=card.hash, model=MODEL),
            inputs={"question": "Q?", "gold_answer": "G", "model_output": "right: it"}, params={},
        )  # fmt: skip
    drawn = audit.sample(card="reference@1", model=MODEL, n=4, seed=0, sheet=tmp_path / "s.csv")
    assert drawn.sheet is not None
    item_ids = {row["result_id"]: row["item_id"] for row in read_sheet(drawn.sheet)}
    assert item_ids == {"x0": "'=cmd|' /C calc'!A0", "x1": "'@SUM(1)", "x2": "'+A1", "x3": "plain"}

    fill_sheet(drawn.sheet, lambda row: {"verdict": "match"})
    assert audit.ingest(drawn.sheet, labeler="alice").labels_written == 4  # ids read back exactly
    stored = {label.result_id: label.item_id for label in read_labels(audit.store)}
    assert stored["x0"] == "=cmd|' /C calc'!A0"

    fill_sheet(drawn.sheet, lambda row: {"verdict": "mismatch" if row["result_id"] == "x0" else ""})
    with pytest.raises(LabelImportError, match="--replace"):
        audit.ingest(drawn.sheet, labeler="alice")
    report = audit.ingest(drawn.sheet, labeler="alice", replace=True)
    assert (report.labels_written, report.labels_replaced) == (1, 1)
    verdicts = {label.result_id: label.value for label in read_labels(audit.store)}
    assert verdicts == {"x0": "mismatch", "x1": "match", "x2": "match", "x3": "match"}
    assert audit.get(drawn.audit.id).n_labeled == 4  # the headline was refreshed


# --------------------------------------------------------------------------- the report


def _confusion_items() -> tuple[list[str], list[str]]:
    """(judge, human) verdicts of 40 items from this confusion (rows human, columns judge):

                 judge match  partial  mismatch | human
    match              12        2        0     |  14
    partial_match       1        8        1     |  10
    mismatch            1        1       14     |  16
    judge              14       11       15     |  40
    """
    cells = {("match", "match"): 12, ("match", "partial_match"): 2, ("partial_match", "match"): 1,
             ("partial_match", "partial_match"): 8, ("partial_match", "mismatch"): 1, ("mismatch", "match"): 1,
             ("mismatch", "partial_match"): 1, ("mismatch", "mismatch"): 14}  # fmt: skip
    judge: list[str] = []
    human: list[str] = []
    for (h, j), count in cells.items():
        human += [h] * count
        judge += [j] * count
    return judge, human


def test_report_numbers_match_a_hand_calculation(audit: Audit, tmp_path: Path) -> None:
    judge, human = _confusion_items()
    audit_id = labelled_audit(
        audit,
        tmp_path,
        judge,
        {f"i{i:03d}": v for i, v in enumerate(human)},
        prefix="i",
        created_at=T0,
    )
    report = audit.report()
    (summary,) = report.audits
    assert (
        summary.primary == "verdict" and summary.n_labeled == 40 and summary.labelers == ("alice",)
    )
    # p_o = (12 + 8 + 14) / 40 = 0.85
    # p_e = (14*14 + 11*10 + 15*16) / 40**2 = 546 / 1600 = 0.34125
    # kappa = (0.85 - 0.34125) / (1 - 0.34125) = 0.50875 / 0.65875 = 0.77230
    assert summary.agreement is not None and summary.agreement.value == pytest.approx(0.85)
    assert summary.kappa is not None and summary.kappa.value == pytest.approx(0.77230, abs=1e-5)
    assert summary.kappa.low < summary.kappa.value < summary.kappa.high
    assert summary.kappa.value == pytest.approx(kappa(judge, human).value)
    # Score axes use quadratic-weighted kappa on the card's 1-5 scale.
    correctness = summary.fields["correctness"]
    assert correctness.weights == "quadratic" and correctness.kappa is not None
    expected = kappa(
        [SCORES[v][0] for v in judge],
        [SCORES[v][0] for v in human],
        weights="quadratic",
        labels=range(1, 6),
    )
    assert correctness.kappa.value == pytest.approx(expected.value)
    assert "style_fidelity" not in summary.fields  # the human left it empty
    # The disagreements to read: 6 off-diagonal items, judge vs human.
    assert len(summary.disagreements) == 6
    assert {(d.judge, d.human["alice"]) for d in summary.disagreements} == {
        ("partial_match", "match"), ("match", "partial_match"), ("mismatch", "partial_match"),
        ("match", "mismatch"), ("partial_match", "mismatch"),
    }  # fmt: skip
    assert report.passed and report.checks[0].audit_id == audit_id
    # The headline is cached for the cheap status query.
    status = latest_calibration(audit.store, card="reference@1", model=MODEL)
    assert status is not None and status.audit_id == audit_id and status.n == 40
    assert status.kappa == pytest.approx(summary.kappa.value)
    text = report.as_text()
    assert "0.772" in text and "PASS" in text and "disagreements on verdict (6)" in text
    data = json.loads(json.dumps(report.to_dict()))  # JSON-ready: no nan, no tuples
    assert data["passed"] is True and data["audits"][0]["kappa"]["n"] == 40


def test_two_labelers_give_the_human_ceiling_and_ties_have_no_reference(
    audit: Audit, tmp_path: Path
) -> None:
    verdicts = [VERDICTS[i % 3] for i in range(12)]
    save_results(audit.store, verdicts)
    drawn = audit.sample(
        card="reference@1", model=MODEL, n=12, seed=0, sheet=tmp_path / "alice.csv"
    )
    bob = audit.write_sheet(drawn.audit.id, tmp_path / "bob.csv")
    fill_sheet(
        tmp_path / "alice.csv", lambda row: {"verdict": TRUTH[row["model_output"].split(":")[0]]}
    )
    # Bob disagrees with Alice (and the judge) on items 0-2.
    fill_sheet(bob, lambda row: {"verdict": "mismatch" if int(row["item_id"][1:]) < 3 and
                                 TRUTH[row["model_output"].split(":")[0]] != "mismatch" else TRUTH[row["model_output"].split(":")[0]]})  # fmt: skip
    audit.ingest(tmp_path / "alice.csv", labeler="alice")
    audit.ingest(bob, labeler="bob")
    summary = audit.summary(drawn.audit.id)
    verdict = summary.fields["verdict"]
    # Items 0 and 1 (match, partial_match) are 1-1 ties between Alice and Bob: no reference.
    assert verdict.ties == 2 and verdict.report is not None and verdict.report.n == 10
    assert verdict.ceiling is not None and verdict.ceiling.raters == ("alice", "bob")
    assert verdict.ceiling.n_items == 12  # the ceiling keeps the tied items
    assert verdict.ceiling.pairs[0].agreement.value == pytest.approx(10 / 12)
    assert summary.labelers == ("alice", "bob")
    assert "human ceiling" in summary.as_text()


def test_gate_fails_below_min_kappa(audit: Audit, tmp_path: Path) -> None:
    verdicts = [VERDICTS[i % 3] for i in range(30)]
    inverted = {f"i{i:03d}": VERDICTS[(i + 1) % 3] for i in range(30)}  # humans never agree
    labelled_audit(audit, tmp_path, verdicts, inverted, prefix="i", created_at=T0)
    report = audit.report(min_kappa=0.6)
    assert not report.passed
    assert "< 0.60" in report.checks[0].reasons[0]


def test_gate_fails_when_significantly_below_the_baseline_even_above_min_kappa(
    audit: Audit, tmp_path: Path
) -> None:
    verdicts = [VERDICTS[i % 3] for i in range(60)]
    first = labelled_audit(
        audit,
        tmp_path,
        verdicts,
        {f"a{i:03d}": v for i, v in enumerate(verdicts)},
        prefix="a",
        created_at=T0,
    )
    # Later: humans disagree with the judge on 12 of 60 items: kappa = (0.8 - 1/3) / (2/3) = 0.7.
    human = {f"b{i:03d}": (VERDICTS[(i + 1) % 3] if i < 12 else v) for i, v in enumerate(verdicts)}
    newest = labelled_audit(
        audit, tmp_path, verdicts, human, prefix="b", created_at=T0 + timedelta(days=7)
    )
    report = audit.report(min_kappa=0.6)
    summaries = {s.audit.id: s for s in report.audits}
    assert summaries[first].kappa is not None and summaries[first].kappa.value == pytest.approx(1.0)
    latest = summaries[newest]
    assert latest.kappa is not None and latest.kappa.value == pytest.approx(0.7)
    assert latest.baseline_id == first and latest.vs_baseline is not None
    assert latest.vs_baseline.value == pytest.approx(-0.3) and latest.vs_baseline.high < 0
    (check,) = report.checks
    assert not check.passed and check.audit_id == newest and check.baseline_id == first
    assert "kappa 0.700 >= 0.60" in check.reasons[0]
    assert "significantly below baseline" in check.reasons[1]
    # Compared with itself as the baseline, the newest audit passes.
    assert audit.report(min_kappa=0.6, baseline=newest).passed
    with pytest.raises(AuditError, match="baseline audit #99"):
        audit.report(baseline=99)


def test_unlabelled_audits_are_noted_and_fail_the_gate(audit: Audit) -> None:
    save_results(audit.store, ["match"] * 3)
    drawn = audit.sample(card="reference@1", model=MODEL, n=3, seed=0)
    report = audit.report()
    assert not report.passed and report.checks == ()
    assert any(f"audit #{drawn.audit.id} has no human labels yet" in note for note in report.notes)
    assert latest_calibration(audit.store, card="reference@1", model=MODEL) is None
    with pytest.raises(AuditError, match="no audits of pairwise"):
        audit.report(card="pairwise@1")


# --------------------------------------------------------------------------- anchors and re-runs


def test_rerun_reports_flips_and_the_change_in_kappa(audit: Audit, tmp_path: Path) -> None:
    verdicts = [VERDICTS[i % 3] for i in range(30)]
    source = labelled_audit(
        audit,
        tmp_path,
        verdicts,
        {f"i{i:03d}": v for i, v in enumerate(verdicts)},
        prefix="i",
        created_at=T0,
    )
    anchor = audit.create_anchor("core", from_audit=source, description="30 hand-checked answers")
    assert (anchor.name, anchor.card, anchor.n, anchor.source_audit) == (
        "core",
        "reference",
        30,
        source,
    )

    honest = judge_script()
    first = audit.rerun("core", model=MODEL, card="reference@1", **http(honest))
    assert len(honest.requests) == 30  # cache=False: every item is asked again
    assert first.audit.kind == "rerun" and first.audit.anchor_set == "core"
    assert first.drift is not None and first.drift.previous_audit == source
    assert first.drift.flip_rate.value == 0 and first.drift.flips == ()
    assert first.kappa is not None and first.kappa.value == pytest.approx(1.0)
    assert (
        len(read_labels(audit.store, audit_id=first.audit.id)) == 30 * 3
    )  # the anchor's labels, copied

    again = audit.rerun("core", model=MODEL, card="reference@1", **http(honest))
    assert len(honest.requests) == 60

    # The provider silently changes the model: "partly" right answers now look right.
    drifted = judge_script(lambda kind, answer: "right" if kind == "partly" else kind)
    third = audit.rerun("core", model=MODEL, card="reference@1", **http(drifted))
    drift = third.drift
    assert drift is not None and drift.previous_audit == again.audit.id
    assert drift.flip_rate.value == pytest.approx(10 / 30) and len(drift.flips) == 10
    assert {(f.before, f.after) for f in drift.flips} == {("partial_match", "match")}
    assert drift.previous_kappa is not None and drift.previous_kappa.value == pytest.approx(1.0)
    # 10 of 30 now disagree: p_o = 2/3; judge marginals (20, 0, 10), human (10, 10, 10):
    # p_e = (20*10 + 0 + 10*10) / 900 = 1/3, kappa = (2/3 - 1/3) / (2/3) = 0.5; delta = -0.5.
    assert third.kappa is not None and third.kappa.value == pytest.approx(0.5)
    assert drift.delta_kappa is not None and drift.delta_kappa.value == pytest.approx(-0.5)
    assert drift.delta_kappa.high < 0
    assert "flip rate" in third.as_text()

    status = latest_calibration(audit.store, card="reference@1", model=MODEL)
    assert (
        status is not None
        and status.audit_id == third.audit.id
        and status.kappa == pytest.approx(0.5)
    )
    report = audit.report(min_kappa=0.6)
    assert [s.audit.kind for s in report.audits] == ["sample", "rerun", "rerun", "rerun"]
    assert not report.passed


def test_anchor_sets_need_labels_and_unique_names(audit: Audit, tmp_path: Path) -> None:
    save_results(audit.store, ["match"] * 3)
    unlabelled = audit.sample(card="reference@1", model=MODEL, n=3, seed=0)
    with pytest.raises(AuditError, match="no human labels yet"):
        audit.create_anchor("core", from_audit=unlabelled.audit.id)
    with pytest.raises(AuditError, match="letters, digits"):
        audit.create_anchor("no spaces", from_audit=unlabelled.audit.id)
    with pytest.raises(AuditError, match="no audit #42"):
        audit.create_anchor("core", from_audit=42)
    labelled = labelled_audit(audit, tmp_path, ["match"] * 3, {f"j{i:03d}": "match" for i in range(3)}, prefix="j",
                              created_at=T0 + timedelta(days=1))  # fmt: skip
    audit.create_anchor("core", from_audit=labelled)
    with pytest.raises(AuditError, match="already exists"):
        audit.create_anchor("core", from_audit=labelled)
    with pytest.raises(AuditError, match="no anchor set 'nope'"):
        audit.rerun("nope", model=MODEL)


def test_the_calibration_tables_are_created_by_migration(tmp_path: Path) -> None:
    store = Store(tmp_path / "plain.db")
    assert "labels" not in store.tables()
    open_store(store)
    assert {"labels", "audits", "audit_items", "anchor_sets", "anchor_items"} <= store.tables()
    applied = store.query("SELECT name FROM _sqlite_migrations WHERE migration_set = 'calibration'")
    assert applied == [
        ("m001_labels_audits_anchors",),
        ("m002_alignment_runs",),
        ("m003_audit_inclusion_probabilities",),
        ("m004_label_queues",),
        ("m005_cascade_decisions",),
        ("m006_cascade_results",),
        ("m007_label_revisions",),
    ]
    open_store(store)  # idempotent
    index_names = {
        row[0]
        for row in store.query(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'labels'"
        )
    }
    assert {"labels_unique", "labels_card_model_time", "labels_audit"} <= index_names
