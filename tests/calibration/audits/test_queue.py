"""Blind labelling queues: reservations, timeouts, N labels per item, undo, skip, blindness,
pairwise side mapping, concurrency, and labels that `audit report` reads unchanged.

Results are written through the real `Store`; every queue decision runs through the real
`LabelQueue` on SQLite (several connections for the concurrency test). Time is a clock passed
in, so reservations lapse without sleeping.
"""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from calibration.audits import Audit, LabelQueue, LabelQueueError, QueueItem
from calibration.labels import open_store, read_labels
from judgecards.cards import load_card
from judgecards.storage import JudgeResult, Store
from tests.builders import REPO, SECRET_REASON, pairwise_results

MODEL = "openai:gpt-4o"
T0 = datetime(2025, 5, 1, tzinfo=timezone.utc)
SCORES = {"match": (5, 5), "partial_match": (3, 3), "mismatch": (1, 1)}
# A verdict and reason text no labeler may ever be sent.


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def reference_results(store: Store, verdicts: list[str]) -> None:
    card = load_card("reference@1")
    for i, verdict in enumerate(verdicts):
        correctness, completeness = SCORES[verdict]
        result = JudgeResult(
            id=f"r{i:03d}", item_id=f"i{i}", status="ok", verdict=verdict, model_verdict=verdict,
            scores={"correctness": correctness, "completeness": completeness, "style_fidelity": 5},
            output={"delta": SECRET_REASON, "decision_basis": SECRET_REASON},
            raw_reply=SECRET_REASON, card=card.ref, card_hash=card.hash, model=MODEL,
            created_at=T0 + timedelta(seconds=i),
        )  # fmt: skip
        inputs = {"question": f"Q{i}?", "gold_answer": f"G{i}", "model_output": f"answer {i}"}
        store.save(result, inputs=inputs, params={})


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "q.db"
    with open_store(path) as store:
        reference_results(store, ["match", "partial_match", "mismatch", "match", "mismatch"])
    return path


def new_audit(db: Path, card: str = "reference@1", n: int = 5) -> int:
    with Audit(db) as audit:
        return audit.sample(card=card, model=MODEL, n=n, seed=1).audit.id


def label_of(item: QueueItem, verdict: str = "match") -> dict[str, Any]:
    correctness, completeness = SCORES[verdict]
    return {
        "verdict": verdict, "correctness": correctness, "completeness": completeness,
        "style_fidelity": 5,
    }  # fmt: skip


def test_an_item_is_held_for_its_labeler_and_others_get_the_next(db: Path) -> None:
    audit_id = new_audit(db)
    with LabelQueue(db, clock=Clock()) as queue:
        alice = queue.next(audit_id, "alice")
        bob = queue.next(audit_id, "bob")
        assert alice is not None and bob is not None
        assert (alice.position, bob.position) == (1, 2)
        # A reload (or a resume) gives the same item back, not a new one.
        again = queue.next(audit_id, "alice")
        assert again is not None and again.position == 1
        assert alice.progress.total == 5  # when served: all five were open to her
        progress = queue.progress(audit_id, "alice")
        assert (progress.done, progress.remaining) == (0, 4)  # bob now holds one


def test_a_lapsed_reservation_releases_the_item(db: Path) -> None:
    audit_id = new_audit(db, n=1)
    clock = Clock()
    with LabelQueue(db, clock=clock) as queue:
        queue.open(audit_id, reserve_seconds=60)
        assert queue.next(audit_id, "alice") is not None
        assert queue.next(audit_id, "bob") is None  # the only item is held
        clock.now += 61
        taken = queue.next(audit_id, "bob")
        assert taken is not None and taken.position == 1
        # Alice's hold lapsed: she is not served the item bob now holds...
        assert queue.next(audit_id, "alice") is None
        # ...nor may she label it: it asks for one label and is bob's now (issue 22 item 2).
        with pytest.raises(LabelQueueError, match="went to another labeler") as late:
            queue.submit(audit_id, "alice", 1, label_of(taken))
        assert late.value.code == "conflict"
        queue.submit(audit_id, "bob", 1, label_of(taken))
        labels = read_labels(queue.store, audit_id=audit_id)
        assert {label.labeler for label in labels} == {"bob"}


def test_a_lapsed_hold_nobody_took_may_still_be_labelled(db: Path) -> None:
    audit_id = new_audit(db, n=2)
    clock = Clock()
    with LabelQueue(db, clock=clock) as queue:
        queue.open(audit_id, reserve_seconds=60)
        served = queue.next(audit_id, "alice")
        assert served is not None and queue.next(audit_id, "bob") is not None  # bob: item 2
        clock.now += 61
        queue.want(audit_id, [served.position], 2)
        # Dave is served alice's item (it asks for two labels); her lapsed hold stays...
        dave = queue.next(audit_id, "dave")
        assert dave is not None and dave.position == served.position
        # ...and there is room for her label beside his.
        queue.submit(audit_id, "alice", served.position, label_of(served))
        with pytest.raises(LabelQueueError, match="not served"):
            queue.submit(audit_id, "carol", 2, label_of(served))


def test_undo_is_refused_once_the_judges_answer_was_shown(db: Path) -> None:
    """Issue 22 item 1 at the queue: the blind label is the measurement."""
    audit_id = new_audit(db, n=2)
    with LabelQueue(db, clock=Clock()) as queue:
        item = queue.next(audit_id, "alice")
        assert item is not None
        queue.submit(audit_id, "alice", item.position, label_of(item, "mismatch"))
        answer = queue.judge_answer(audit_id, "alice", item.position)
        with pytest.raises(LabelQueueError, match="was shown") as refused:
            queue.undo(audit_id, "alice")
        assert refused.value.code == "conflict"
        assert (
            queue.revise(audit_id, "alice", item.position, {**label_of(item), **answer.judge}) == 4
        )
        blind = read_labels(queue.store, audit_id=audit_id)
        assert {label.value for label in blind if label.field == "verdict"} == {"mismatch"}
        revised = queue.calibration.labels(audit_id=audit_id, revisions=True)
        [verdict] = [label for label in revised if label.field == "verdict"]
        assert verdict.value == answer.judge["verdict"]
        assert verdict.note is not None and "after the judge's answer was shown" in verdict.note


def test_each_item_gets_n_labels_from_different_labelers(db: Path) -> None:
    audit_id = new_audit(db, n=2)
    with LabelQueue(db, clock=Clock()) as queue:
        queue.open(audit_id, labels_wanted=2)
        a, b, c = (queue.next(audit_id, who) for who in ("alice", "bob", "carol"))
        assert a is not None and b is not None and c is not None
        assert (a.position, b.position, c.position) == (1, 1, 2)
        queue.submit(audit_id, "alice", 1, label_of(a))
        queue.submit(audit_id, "bob", 1, label_of(b))
        queue.submit(audit_id, "carol", 2, label_of(c))
        # Item 1 has its two labels; item 2 waits for one more, never from carol again.
        assert queue.next(audit_id, "dave") is not None
        assert queue.next(audit_id, "dave").position == 2  # type: ignore[union-attr]
        assert queue.next(audit_id, "carol") is None
        # Item 2's second slot is dave's while he holds it.
        assert queue.next(audit_id, "alice") is None
        with pytest.raises(LabelQueueError) as twice:
            queue.submit(audit_id, "alice", 1, label_of(a))
        assert twice.value.code == "conflict"
        queue.want(audit_id, [1], 3)
        erin = queue.next(audit_id, "erin")
        assert erin is not None and erin.position == 1  # item 1 now asks for a third label


def test_undo_removes_the_newest_served_label_and_serves_it_again(db: Path) -> None:
    audit_id = new_audit(db)
    with LabelQueue(db, clock=Clock()) as queue:
        with pytest.raises(LabelQueueError) as nothing:
            queue.undo(audit_id, "alice")
        assert nothing.value.code == "conflict"
        first = queue.next(audit_id, "alice")
        assert first is not None
        queue.submit(audit_id, "alice", first.position, label_of(first, "mismatch"))
        second = queue.next(audit_id, "alice")
        assert second is not None and second.position != first.position
        queue.submit(audit_id, "alice", second.position, label_of(second))
        assert queue.progress(audit_id, "alice").done == 2
        assert queue.undo(audit_id, "alice") == second.position
        back = queue.next(audit_id, "alice")
        assert back is not None and back.position == second.position
        assert queue.progress(audit_id, "alice").done == 1
        stored = read_labels(queue.store, audit_id=audit_id)
        assert {label.value for label in stored if label.field == "verdict"} == {"mismatch"}


def test_undo_never_touches_an_imported_sheets_labels(db: Path, tmp_path: Path) -> None:
    audit_id = new_audit(db, n=1)
    with Audit(db) as audit:
        sheet = tmp_path / "sheet.csv"
        audit.write_sheet(audit_id, sheet)
        text = sheet.read_text().splitlines()
        header = text[0].split(",")
        row = dict(zip(header, text[1].split(",")))
        row.update(verdict="match", correctness="5", completeness="5", style_fidelity="5")
        sheet.write_text(",".join(header) + "\n" + ",".join(row[h] for h in header) + "\n")
        audit.ingest(sheet, labeler="alice")
    with LabelQueue(db, clock=Clock()) as queue:
        assert queue.next(audit_id, "alice") is None  # labelled through the sheet already
        with pytest.raises(LabelQueueError):
            queue.undo(audit_id, "alice")
        assert len(read_labels(queue.store, audit_id=audit_id)) == 4


def test_skip_hands_the_item_to_others_and_never_back(db: Path) -> None:
    audit_id = new_audit(db, n=2)
    with LabelQueue(db, clock=Clock()) as queue:
        first = queue.next(audit_id, "alice")
        assert first is not None
        progress = queue.skip(audit_id, "alice", first.position)
        assert (progress.done, progress.remaining, progress.skipped) == (0, 1, 1)
        assert queue.next(audit_id, "bob").position == first.position  # type: ignore[union-attr]
        nxt = queue.next(audit_id, "alice")
        assert nxt is not None and nxt.position != first.position


def test_a_labeler_is_sent_inputs_and_form_never_the_judge(db: Path) -> None:
    audit_id = new_audit(db)
    with LabelQueue(db, clock=Clock()) as queue:
        item = queue.next(audit_id, "alice")
        assert item is not None
        assert set(item.inputs) == {"question", "gold_answer", "model_output"}
        assert [f.name for f in item.fields] == [
            "verdict", "correctness", "completeness", "style_fidelity",
        ]  # fmt: skip
        assert SECRET_REASON not in repr(item)
        with pytest.raises(LabelQueueError) as early:
            queue.judge_answer(audit_id, "alice", item.position)
        assert early.value.code == "not_found"
        judge = queue.store.get(queue.calibration.audit_items(audit_id)[0].result_id)
        assert judge is not None
        queue.submit(audit_id, "alice", item.position, label_of(item, "mismatch"))
        answer = queue.judge_answer(audit_id, "alice", item.position)
        truth = queue.calibration.audit_items(audit_id)[item.position - 1].judge
        assert answer.judge == truth and answer.yours["verdict"] == "mismatch"
        assert ("verdict" in answer.differs) == (truth["verdict"] != "mismatch")
        # Bob has not labelled it: he cannot read the judge's answer nor alice's label.
        with pytest.raises(LabelQueueError):
            queue.judge_answer(audit_id, "bob", item.position)
        queue.explain(audit_id, "alice", item.position, "i_slipped", note="misread")
        reveals = queue.repository.reveals(audit_id)
        assert [(r[1], r[4], r[5]) for r in reveals] == [("alice", "i_slipped", "misread")]
        with pytest.raises(LabelQueueError) as bad:
            queue.explain(audit_id, "alice", item.position, "because")
        assert bad.value.field == "reason"
        # A queue that does not reveal never shows the judge, labelled or not.
        queue.open(audit_id, reveal=False)
        with pytest.raises(LabelQueueError) as closed:
            queue.judge_answer(audit_id, "alice", item.position)
        assert closed.value.code == "not_found"


def test_bad_values_store_nothing_and_name_the_field(db: Path) -> None:
    audit_id = new_audit(db)
    with LabelQueue(db, clock=Clock()) as queue:
        item = queue.next(audit_id, "alice")
        assert item is not None
        cases = [
            ({**label_of(item), "correctness": 9}, "values.correctness", "invalid"),
            ({**label_of(item), "verdict": "great"}, "values.verdict", "invalid"),
            ({**label_of(item), "mood": 3}, "values.mood", "invalid"),
            ({k: v for k, v in label_of(item).items() if k != "completeness"},
             "values.completeness", "missing"),
            ({**label_of(item), "correctness": "5"}, "values.correctness", "invalid"),
        ]  # fmt: skip
        for values, where, code in cases:
            with pytest.raises(LabelQueueError) as error:
                queue.submit(audit_id, "alice", item.position, values)
            assert (error.value.field, error.value.code) == (where, code)
        with pytest.raises(LabelQueueError) as missing:
            queue.submit(audit_id, "alice", 99, label_of(item))
        assert missing.value.code == "not_found"
        assert read_labels(queue.store, audit_id=audit_id) == []


def test_a_queue_for_named_labelers_does_not_exist_for_others(db: Path) -> None:
    audit_id = new_audit(db)
    with LabelQueue(db, clock=Clock()) as queue:
        queue.open(audit_id, labelers=["alice"])
        assert queue.next(audit_id, "alice") is not None
        with pytest.raises(LabelQueueError) as other:
            queue.next(audit_id, "bob")
        assert other.value.code == "not_found"
        assert [s.audit.id for s in queue.queues("bob")] == []
        assert [s.audit.id for s in queue.queues("alice")] == [audit_id]


def test_pairwise_sides_are_shuffled_per_labeler_and_mapped_back(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    with open_store(path) as store:
        pairwise_results(store, ["A"] * 12)
    audit_id = new_audit(path, card="pairwise@1", n=12)
    with LabelQueue(path, clock=Clock()) as queue:
        queue.open(audit_id, labels_wanted=4)
        seen: dict[tuple[str, int], bool] = {}
        for labeler in ("alice", "bob", "carol", "dave"):
            while (item := queue.next(audit_id, labeler)) is not None:
                assert [f.name for f in item.fields] == ["winner"]
                swapped = item.inputs["answer_a"].startswith("right")
                seen[(labeler, item.position)] = swapped
                # Every labeler prefers the "left" answer (the result's A), wherever it is shown.
                queue.submit(audit_id, labeler, item.position, {"winner": "B" if swapped else "A"})
        assert 0 < sum(seen.values()) < len(seen)  # some swapped, some not
        stored = queue.repository.sides(audit_id)
        assert stored == {(position, who): s for (who, position), s in seen.items()}
        labels = read_labels(queue.store, audit_id=audit_id)
        assert len(labels) == 48 and {label.value for label in labels} == {"A"}
        preference = queue.position_preference(audit_id)
        assert preference.first + preference.second == 48
        assert preference.second == sum(seen.values())
        # The same labeler and item always get the same order (deterministic, stored).
        queue.undo(audit_id, "alice")
        back = queue.next(audit_id, "alice")
        assert back is not None
        assert back.inputs["answer_a"].startswith("right") == seen[("alice", back.position)]


def test_concurrent_labelers_never_share_the_last_slot(db: Path) -> None:
    audit_id = new_audit(db)
    got: list[int | None] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def labeler(name: str) -> None:
        try:
            with LabelQueue(db) as queue:  # one connection per thread, as separate processes
                barrier.wait()
                item = queue.next(audit_id, name)
                got.append(None if item is None else item.position)
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=labeler, args=(f"l{i}",)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    served = sorted(p for p in got if p is not None)
    assert served == [1, 2, 3, 4, 5] and got.count(None) == 3


def test_served_labels_are_what_audit_report_reads(db: Path) -> None:
    audit_id = new_audit(db)
    with LabelQueue(db, clock=Clock()) as queue:
        truth = {item.position: item.judge for item in queue.calibration.audit_items(audit_id)}
        while (item := queue.next(audit_id, "alice")) is not None:
            queue.submit(
                audit_id, "alice", item.position, label_of(item, truth[item.position]["verdict"])
            )
    with Audit(db) as audit:
        summary = audit.summary(audit_id)
    kappa = summary.fields["verdict"].kappa
    assert summary.n_labeled == 5 and kappa is not None and kappa.value == pytest.approx(1.0)
    with open_store(db) as store:
        assert {label.labeler for label in read_labels(store)} == {"alice"}


def test_a_rubric_item_is_labelled_on_its_own_criteria(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    card = load_card("rubric@1")
    criteria = [
        {"name": "accuracy", "description": "Facts are right.", "scale_min": 1, "scale_max": 3},
        {"name": "tone", "description": "Polite and clear.", "scale_min": 0, "scale_max": 10},
    ]
    with open_store(path) as store:
        result = JudgeResult(
            id="q000", item_id="q0", status="ok", scores={"accuracy": 2, "tone": 7},
            card=card.ref, card_hash=card.hash, model=MODEL, created_at=T0,
        )  # fmt: skip
        inputs = {"question": "Q?", "answer": "A.", "criteria": criteria}
        store.save(result, inputs=inputs, params={})
    audit_id = new_audit(path, card="rubric@1", n=1)
    with LabelQueue(path, clock=Clock()) as queue:
        item = queue.next(audit_id, "alice")
        assert item is not None
        assert set(item.inputs) == {"question", "answer"}  # the criteria are the form
        assert [(f.name, f.minimum, f.maximum) for f in item.fields] == [
            ("accuracy", 1, 3), ("tone", 0, 10),
        ]  # fmt: skip
        assert item.hints == {"accuracy": "Facts are right.", "tone": "Polite and clear."}
        with pytest.raises(LabelQueueError) as bad:
            queue.submit(audit_id, "alice", 1, {"accuracy": 4, "tone": 7})
        assert bad.value.field == "values.accuracy"
        queue.submit(audit_id, "alice", 1, {"accuracy": 3, "tone": 0})
        stored = {label.field: label.value for label in read_labels(queue.store)}
    assert stored == {"accuracy": 3, "tone": 0}


def test_an_audit_whose_card_is_gone_is_refused_not_crashed(tmp_path: Path) -> None:
    cards = tmp_path / "cards"
    (cards / "mine").mkdir(parents=True)
    source = REPO / "prompts" / "reference" / "v1.md.j2"
    text = source.read_text(encoding="utf-8").replace("name: reference", "name: mine", 1)
    (cards / "mine" / "v1.md.j2").write_text(text, encoding="utf-8")
    card = load_card("mine@1", cards_dir=cards)
    path = tmp_path / "m.db"
    with open_store(path) as store:
        result = JudgeResult(
            id="m000", item_id="m0", status="ok", verdict="match", card=card.ref,
            card_hash=card.hash, model=MODEL, created_at=T0,
        )  # fmt: skip
        store.save(
            result, inputs={"question": "Q", "gold_answer": "G", "model_output": "A"}, params={}
        )
    with Audit(path, cards_dir=cards) as audit:
        audit_id = audit.sample(card="mine@1", model=MODEL, n=1, seed=1).audit.id
    with LabelQueue(path, cards_dir=cards) as queue:
        assert queue.next(audit_id, "alice") is not None
    with LabelQueue(path) as queue, pytest.raises(LabelQueueError) as gone:
        queue.next(audit_id, "alice")  # her held item, whose card is now missing
    assert gone.value.code == "invalid" and "mine@1" in str(gone.value)
