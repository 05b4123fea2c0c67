"""Cascades of judges: per-judge thresholds from stored labels, escalation, the human queue.

The judges are real `Judge` objects on the real OpenAI SDK over a scripted transport: each
item's answer text says what each judge replies (``cheap=6@0.55``: rating 6, probability 0.55
on the rating token), so the G-Eval confidence each judge reports is known.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner, Result
from numpy.typing import NDArray

from calibration import (
    Audit,
    cascade_thresholds,
    latest_calibration,
)
from calibration.cascades.cascade import Cascade, minimum_labels
from calibration.cascades.repository import cascade_result_decisions
from calibration.stats import judgment_confidence, order_consistency, sample_agreement
from judgecards.cli import cli
from judgecards.errors import AuditError
from judgecards.storage import Store
from tests.builders import CASCADE_HUMAN as HUMAN
from tests.builders import cascade_calibrated as calibrated
from tests.builders import cascade_calibration_items as calibration_items
from tests.builders import cascade_item as item
from tests.builders import cascade_judges as judges
from tests.builders import cascade_label as label
from tests.builders import llmbar
from tests.fakes.http import Script
from tests.fakes.judges import openai_judge
from tests.fakes.server import FakeServer


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "cascade.db") as opened:
        yield opened


# ---------------------------------------------------------------- confidence


def test_confidence_is_the_probability_of_the_written_score(store: Store) -> None:
    cheap, _, _, _ = judges(store)
    result = cheap.score(**{k: v for k, v in item("x", cheap=(7, 0.8)).items() if k != "id"})
    assert result.scores == {"rating": 7}
    assert judgment_confidence(result, "rating") == pytest.approx(0.8)
    # A verdict's confidence is the product over the axes: one axis here.
    assert judgment_confidence(result) == pytest.approx(0.8)
    sampled = result.model_copy(update={"output": {"scoring": {"rating": {"method": "sampled"}}}})
    assert judgment_confidence(sampled, "rating") == 0.0
    failed = result.model_copy(update={"status": "error"})
    assert judgment_confidence(failed, "rating") == 0.0


def test_order_consistency_and_sample_agreement() -> None:
    assert order_consistency("A", "A") == 1.0 and order_consistency("A", "tie") == 0.5
    assert sample_agreement(["A", "A", "B", None]) == 0.5
    assert sample_agreement([None, None]) == 0.0
    with pytest.raises(ValueError):
        sample_agreement([])


# ---------------------------------------------------------------- the cascade end to end


def test_items_go_to_the_first_judge_trusted_on_them_and_the_rest_to_people(
    store: Store, tmp_path: Path
) -> None:
    cheap, strong, cheap_script, strong_script = calibrated(store, tmp_path)
    cascade = Cascade([cheap, strong], target=0.85, delta=0.1)
    stages = cascade.calibrate()
    # cheap: 25 sure items, none wrong: bound 0.1 ** (1/25) = 0.912 ≥ 0.85 passes at 0.95;
    # adding the 35 unsure wrong ones fails. strong is calibrated only on the 35 items cheap
    # leaves it: 30 sure right ones pass at 0.99 (0.1 ** (1/30) = 0.926); all 35 with 5 wrong
    # (bound 0.75) fail. (On all 60 labels, 55 right, it would pass at 0.6 too, bound 0.851,
    # and decide t3 below: on the items it actually decides it would agree 30 of 35.)
    assert stages[0].threshold == pytest.approx(0.95) and stages[0].n_labels == 60
    assert stages[1].threshold == pytest.approx(0.99) and stages[1].n_labels == 35
    assert stages[0].selective.coverage == pytest.approx(25 / 60)
    assert stages[1].selective.coverage == pytest.approx(30 / 35)

    before = len(cheap_script.requests), len(strong_script.requests)
    run = cascade.run([
        item("t1", cheap=(HUMAN, 0.95), strong=(HUMAN, 0.99)),
        item("t2", cheap=(HUMAN + 1, 0.55), strong=(HUMAN, 0.99)),
        item("t3", cheap=(HUMAN + 1, 0.55), strong=(HUMAN + 2, 0.6)),
        item("t4", cheap=(HUMAN, 0.95), strong=(HUMAN, 0.99)),
    ])  # fmt: skip
    # The strong judge only saw the two items the cheap one was not trusted on.
    assert len(cheap_script.requests) - before[0] == 4
    assert len(strong_script.requests) - before[1] == 2
    assert [d.decided_by for d in run.decisions] == [
        "openai:cheap",
        "openai:strong",
        None,
        "openai:cheap",
    ]
    assert [s.sent for s in run.stages] == [4, 2] and [s.decided for s in run.stages] == [2, 1]
    assert [s.calls for s in run.stages] == [4, 2]
    assert run.coverage == pytest.approx(0.75) and run.escalated == 1

    # Each result records who decided it and at what threshold.
    t2 = run.decisions[1].annotated()
    assert t2 is not None and t2.output is not None
    assert t2.output["cascade"]["decided_by"] == "openai:strong"
    assert t2.output["cascade"]["threshold"] == pytest.approx(0.99)
    assert t2.scores == {"rating": HUMAN}

    # The item nobody was trusted on is an audit for people, with the strong judge's result.
    t3 = run.decisions[2]
    assert t3.escalated and t3.audit_id == run.audit_id is not None
    queued_result = t3.annotated()
    assert queued_result is not None and queued_result.output is not None
    assert queued_result.output["cascade"]["decided_by"] == "human"
    with Audit(store) as audit:
        record = audit.get(run.audit_id)
        assert (record.kind, record.model, record.n, record.card) == (
            "escalated",
            "openai:strong",
            1,
            "single@1",
        )
        queued = audit.repository.audit_items(run.audit_id)
        assert [(q.item_id, q.result_id) for q in queued] == [("t3", t3.result.id)]  # type: ignore[union-attr]
    assert "coverage:  75% decided by a judge, 1 to people (audit #" in run.summary()


def test_every_result_the_cascade_made_is_stored_with_who_decided_its_item(
    store: Store, tmp_path: Path
) -> None:
    cheap, strong, _, _ = calibrated(store, tmp_path)
    cascade = Cascade([cheap, strong], target=0.85, delta=0.1)
    items = [
        item("t1", cheap=(HUMAN, 0.95), strong=(HUMAN, 0.99)),
        item("t2", cheap=(HUMAN + 1, 0.55), strong=(HUMAN, 0.99)),
        item("t3", cheap=(HUMAN + 1, 0.55), strong=(HUMAN + 2, 0.6)),
    ]
    run = cascade.run(items)
    rows = cascade_result_decisions(store, card="single@1")
    # One row per result made: t1 by cheap; t2 and t3 by both judges.
    assert sorted((r["item_id"], r["model"], r["trusted"], r["decided_by"]) for r in rows) == [
        ("t1", "openai:cheap", 1, "openai:cheap"),
        ("t2", "openai:cheap", 0, "openai:strong"),
        ("t2", "openai:strong", 1, "openai:strong"),
        ("t3", "openai:cheap", 0, "human"),
        ("t3", "openai:strong", 0, "human"),
    ]
    by_result = {r["result_id"]: r for r in rows}
    for decision in run.decisions:
        assert decision.result is not None
        row = by_result[decision.result.id]
        assert row["stage"] == (1 if decision.item_id != "t1" else 0)
        assert row["threshold"] == pytest.approx(run.stages[row["stage"]].threshold)
        assert row["confidence"] == pytest.approx(decision.confidence)
        assert row["audit_id"] == decision.audit_id
        assert (row["card_hash"], row["target"], row["delta"]) == (cheap.card.hash, 0.85, 0.1)
    assert by_result[run.decisions[2].result.id]["audit_id"] == run.audit_id is not None  # type: ignore[union-attr]
    assert cascade_result_decisions(store, model="openai:strong", card="single") == [
        r for r in rows if r["model"] == "openai:strong"
    ]


def test_an_item_run_reads_as_plain_data_as_a_pair_run_does(store: Store, tmp_path: Path) -> None:
    """One run record for both units: the item run's data names its items where a pair run's
    names its pairs, beside the same guarantee, coverage and stages."""
    cheap, strong, _, _ = calibrated(store, tmp_path)
    run = Cascade([cheap, strong], target=0.85, delta=0.1).run(
        [
            item("t1", cheap=(HUMAN, 0.95), strong=(HUMAN, 0.99)),
            item("t3", cheap=(HUMAN + 1, 0.55), strong=(HUMAN + 2, 0.6)),
        ]
    )
    data = run.to_dict()
    assert (data["items"], data["escalated"], data["coverage"]) == (2, 1, 0.5)
    assert (data["field"], data["target"], data["audit_id"]) == (run.field, 0.85, run.audit_id)
    assert [s["model"] for s in data["stages"]] == ["openai:cheap", "openai:strong"]
    assert [s["decided"] for s in data["stages"]] == [1, 0]


def test_a_rerun_does_not_queue_an_item_already_waiting_or_labelled_for_people(
    store: Store, tmp_path: Path
) -> None:
    cheap, strong, _, _ = calibrated(store, tmp_path)
    cascade = Cascade([cheap, strong], target=0.85, delta=0.1)
    hard = [item(f"h{i}", cheap=(HUMAN, 0.55), strong=(HUMAN + 1, 0.6)) for i in range(2)]
    first = cascade.run(hard)
    assert first.audit_id is not None and first.escalated == 2
    # Again with one new hard item: the two still wait in the first audit; only h2 is queued.
    again = cascade.run([*hard, item("h2", cheap=(HUMAN, 0.55), strong=(HUMAN + 1, 0.6))])
    assert again.audit_id is not None and again.audit_id != first.audit_id
    assert [d.audit_id for d in again.decisions] == [first.audit_id, first.audit_id, again.audit_id]
    assert [(q.audit_id, q.waiting, q.labelled) for q in again.earlier] == [(first.audit_id, 2, 0)]
    assert f"2 items already in audit #{first.audit_id} (2 waiting, 0 labelled)" in again.summary()
    with Audit(store) as audit:
        assert [q.item_id for q in audit.repository.audit_items(again.audit_id)] == ["h2"]
        sheet = tmp_path / "sheet.jsonl"
        audit.write_sheet(first.audit_id, sheet)
        row = json.loads(sheet.read_text().splitlines()[0])
        sheet.write_text(json.dumps({**row, "rating": HUMAN}) + "\n")
        assert audit.ingest(sheet, labeler="ann").labels_written == 1
    # One labelled there, one still waiting: neither is queued again, and no new audit is made.
    third = cascade.run(hard)
    assert third.audit_id is None
    assert [(q.audit_id, q.waiting, q.labelled) for q in third.earlier] == [(first.audit_id, 1, 1)]
    assert [d.audit_id for d in third.decisions] == [first.audit_id, first.audit_id]
    with Audit(store) as audit:
        escalated = [a.id for a in audit.repository.audits() if a.kind == "escalated"]
    assert escalated == [first.audit_id, again.audit_id]
    stored = {r["item_id"]: r["audit_id"] for r in cascade_result_decisions(store)}
    assert stored["h0"] == stored["h1"] == first.audit_id and stored["h2"] == again.audit_id


def test_labels_given_to_escalated_items_do_not_move_the_thresholds(
    store: Store, tmp_path: Path
) -> None:
    # Escalated items were picked for being hard; counting their labels would bias calibration.
    cheap, strong, _, _ = calibrated(store, tmp_path)
    cascade = Cascade([cheap, strong], target=0.85, delta=0.1)
    before = [stage.threshold for stage in cascade.calibrate()]
    run = cascade.run(
        [item(f"h{i}", cheap=(HUMAN, 0.55), strong=(HUMAN + 1, 0.6)) for i in range(20)]
    )
    assert run.escalated == 20 and run.audit_id is not None
    sheet = tmp_path / "sheet.jsonl"
    with Audit(store) as audit:
        audit.write_sheet(run.audit_id, sheet)
        rows = [json.loads(line) for line in sheet.read_text().splitlines()]
        sheet.write_text("".join(json.dumps({**row, "rating": HUMAN}) + "\n" for row in rows))
        assert audit.ingest(sheet, labeler="ann").labels_written == 20
        # Nor are they the judge's calibration status, nor gated as a drift audit.
        assert audit.summary(run.audit_id).n_labeled == 20
        assert latest_calibration(store, card="single@1", model="openai:strong") is None
        assert audit.report(card="single@1").checks == ()
    again = Cascade([cheap, strong], target=0.85, delta=0.1).calibrate()
    assert [stage.threshold for stage in again] == before
    assert [stage.n_labels for stage in again] == [60, 35]


def test_labels_of_an_uncertainty_sample_are_left_out_of_calibration(
    store: Store, tmp_path: Path
) -> None:
    # An uncertainty sample draws unsure items more often: unweighted, its labels would bias
    # the thresholds. Here it draws from the strong judge's 60 labelled results plus 20 more.
    cheap, strong, _, _ = calibrated(store, tmp_path)
    cascade = Cascade([cheap, strong], target=0.85, delta=0.1)
    before = [stage.threshold for stage in cascade.calibrate()]
    extra = strong.score_many([item(f"u{i}", strong=(HUMAN + 1, 0.6)) for i in range(20)])
    sheet = tmp_path / "uncertain.jsonl"
    with Audit(store) as audit:
        drawn = audit.sample(
            card="single@1", model="openai:strong", n=20, seed=1, strategy="uncertainty",
            sheet=sheet,
        )  # fmt: skip
        rows = [json.loads(line) for line in sheet.read_text().splitlines()]
        sheet.write_text("".join(json.dumps({**row, "rating": HUMAN}) + "\n" for row in rows))
        assert audit.ingest(sheet, labeler="bob").labels_written == drawn.audit.n
    assert any(row["result_id"] in {r.id for r in extra} for row in rows)
    again = Cascade([cheap, strong], target=0.85, delta=0.1).calibrate()
    assert [stage.threshold for stage in again] == before
    assert [stage.n_labels for stage in again] == [60, 35]


def test_a_judge_without_a_threshold_decides_nothing_and_is_never_called(
    store: Store, tmp_path: Path
) -> None:
    cheap, strong, cheap_script, strong_script = calibrated(store, tmp_path)
    # At 0.92 (28 labels needed) the cheap judge's 25 sure items are too few, and all 60
    # have 35 wrong; the strong judge, left all 60, passes on its 55 (0.1 ** (1/55) = 0.959).
    cascade = Cascade([cheap, strong], target=0.92, delta=0.1)
    stages = cascade.calibrate()
    assert stages[0].threshold is None and stages[1].threshold == pytest.approx(0.99)
    before = len(cheap_script.requests), len(strong_script.requests)
    run = cascade.run([item("t1", cheap=(HUMAN, 0.95), strong=(HUMAN, 0.99))])
    assert len(cheap_script.requests) == before[0]  # not paid for
    assert len(strong_script.requests) == before[1] + 1
    assert run.decisions[0].decided_by == "openai:strong"
    assert run.stages[0].sent == 0 and "decides nothing, not called" in run.summary()


def test_labels_on_one_judges_results_calibrate_every_judge_of_the_item(
    store: Store, tmp_path: Path
) -> None:
    # People labelled the cheap judge's results only; the strong judge judged the same items
    # (matched by id), so those labels are its reference too.
    cheap, strong, _, _ = judges(store)
    items = calibration_items()
    label(store, tmp_path, cheap.score_many(items), "cheap")
    strong.score_many(items)
    stages = Cascade([cheap, strong], target=0.85, delta=0.1).calibrate()
    assert [s.threshold for s in stages] == [pytest.approx(0.95), pytest.approx(0.99)]
    assert [s.n_labels for s in stages] == [60, 35]


def test_too_few_labels_is_an_error_naming_what_to_label_before_any_call(
    store: Store, tmp_path: Path
) -> None:
    cheap, strong, cheap_script, strong_script = judges(store)
    items = calibration_items()
    label(store, tmp_path, cheap.score_many(items), "cheap")
    label(store, tmp_path, strong.score_many(items[:10]), "strong")  # 10 < 15 needed
    sent = len(cheap_script.requests), len(strong_script.requests)
    cascade = Cascade([cheap, strong], target=0.85, delta=0.1)
    with pytest.raises(AuditError) as caught:
        cascade.run([item("t1", cheap=(HUMAN, 0.95), strong=(HUMAN, 0.99))])
    message = str(caught.value)
    assert "at least 15 human labels of 'rating'" in message and "openai:strong" in message
    assert (
        "it has 10" in message and "audit sample --card single@1 --model openai:strong" in message
    )
    assert (len(cheap_script.requests), len(strong_script.requests)) == sent


def test_no_judge_able_to_meet_the_target_is_an_error(store: Store, tmp_path: Path) -> None:
    cheap, strong, cheap_script, _ = calibrated(store, tmp_path)
    # At 0.96 (57 labels needed) neither judge's sure items are enough, and all 60 have errors.
    sent = len(cheap_script.requests)
    with pytest.raises(AuditError, match="no judge of the cascade can guarantee agreement ≥ 96%"):
        Cascade([cheap, strong], target=0.96, delta=0.1).run([item("t", cheap=(5, 0.9))])
    assert len(cheap_script.requests) == sent


def test_judges_of_different_cards_are_refused(store: Store) -> None:
    cheap, _, _, _ = judges(store)
    other = openai_judge(Script(), "reference", model="strong", db=store)
    with pytest.raises(ValueError, match="must use one card"):
        Cascade([cheap, other], target=0.85)
    with pytest.raises(ValueError, match="no field 'verdict'"):
        Cascade([cheap], target=0.85, field="verdict")


def test_minimum_labels_is_the_smallest_sample_that_can_pass() -> None:
    # 0.85 ** 14 = 0.103 > 0.1 (cannot pass), 0.85 ** 15 = 0.087 ≤ 0.1.
    assert minimum_labels(0.85, 0.1) == 15
    assert minimum_labels(0.9, 0.1) == 22


# ---------------------------------------------------------------- the guarantee, simulated


def test_a_two_judge_cascade_keeps_the_target_on_decided_items() -> None:
    """200 calibration/test splits of a population where a cheap judge is right with
    probability 0.5 + 0.5·conf and a strong one with 0.7 + 0.3·conf: on the test items the
    cascade decides, agreement must reach the target in at least 1 − δ of the splits."""
    rng = np.random.default_rng(12)
    target, delta, splits = 0.85, 0.1, 200
    size = 6000
    conf = rng.uniform(size=(2, size))
    right = np.stack([
        rng.uniform(size=size) < 0.5 + 0.5 * conf[0],
        rng.uniform(size=size) < 0.7 + 0.3 * conf[1],
    ])  # fmt: skip
    held, per_judge, coverage, cheap_share = 0, [0, 0], [], []
    for _ in range(splits):
        order = rng.permutation(size)
        cal, test = order[:400], order[400:]
        thresholds = cascade_thresholds(
            list(conf[:, cal]), list(right[:, cal]), target=target, delta=delta
        )
        trusted = [
            np.zeros(len(test), dtype=bool) if t is None else conf[j, test] >= t
            for j, t in enumerate(thresholds)
        ]
        by_cheap = trusted[0]
        by_strong = ~by_cheap & trusted[1]
        decided = by_cheap | by_strong
        correct = np.where(by_cheap, right[0, test], right[1, test])[decided]
        held += bool(decided.sum() == 0 or correct.mean() >= target)
        for j, mine in enumerate((by_cheap, by_strong)):
            per_judge[j] += bool(mine.sum() == 0 or right[j, test][mine].mean() >= target)
        coverage.append(decided.mean())
        cheap_share.append(by_cheap.sum() / max(decided.sum(), 1))
    assert held / splits >= 1 - delta
    # Each judge keeps it on the items it decides, too (what the per-judge guarantee says).
    assert min(per_judge) / splits >= 1 - delta
    # It is not vacuous: most items are decided, and the cheap judge takes a real share.
    assert np.mean(coverage) > 0.5 and np.mean(cheap_share) > 0.1


# ---------------------------------------------------------------- the command line


def test_score_with_a_guarantee_on_the_command_line(
    tmp_path: Path, serve: Callable[..., FakeServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``cascade --guarantee 0.85 --model openai:cheap --model openai:strong`` on a loopback server
    that returns no logprobs (every confidence is 0.0): the cheap judge, which disagrees with
    its labels, decides nothing and is never called; the strong one, which agrees on all 40,
    is trusted on everything (the bound 0.1 ** (1/40) = 0.944 clears 0.85)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-4f9a7c2e1b3d5f60718293a4b5c6d7e8")
    server = serve()
    db = tmp_path / "cli.db"

    def cli_run(*args: Any) -> Result:
        return CliRunner().invoke(cli, [*map(str, args), "--db", str(db)])

    def score(items: Path, output: Path, *models: str, guarantee: bool = False) -> Result:
        which = [arg for m in models for arg in (("--model", m) if ":" in m else (m,))]
        command = ["cascade", "--guarantee", "0.85"] if guarantee else ["score"]
        return cli_run(*command, "--card", "single@1", *which, items,
                       "--output", output, "--base-url", server.base_url)  # fmt: skip

    cal = tmp_path / "cal.jsonl"
    cal.write_text("".join(
        json.dumps({"id": f"c{i}", "question": f"Question {i}?", "answer": f"Answer {i}."}) + "\n"
        for i in range(40)
    ))  # fmt: skip
    rows = []
    for model, agree in (("openai:cheap", False), ("openai:strong", True)):
        out = tmp_path / f"{model[7:]}.jsonl"
        assert score(cal, out, model).exit_code == 0
        for line in out.read_text().splitlines():
            result = json.loads(line)
            rating = result["scores"]["rating"]
            human = rating if agree else (rating % 10) + 1
            rows.append({"result_id": result["id"], "rating": human})
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert cli_run("labels", "import", labels, "--labeler", "ann").exit_code == 0

    items = tmp_path / "items.jsonl"
    items.write_text("".join(
        json.dumps({"id": f"t{i}", "question": f"New question {i}?", "answer": f"New {i}."}) + "\n"
        for i in range(5)
    ))  # fmt: skip
    before = server.requests
    out = tmp_path / "out.jsonl"
    result = score(items, out, "openai:cheap", "openai:strong", guarantee=True)
    assert result.exit_code == 0, result.output
    assert server.requests == before + 5  # the strong judge only
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["item_id"] for r in written] == [f"t{i}" for i in range(5)]
    assert {r["output"]["cascade"]["decided_by"] for r in written} == {"openai:strong"}
    assert {r["output"]["cascade"]["threshold"] for r in written} == {0.0}
    assert "coverage:  100% decided by a judge, 0 to people" in result.output
    assert "no threshold (40 labels left to it): decides nothing, not called" in result.output
    assert (
        "threshold 0 (40 labels left to it: trusted on 100%, agreement 1.000 ≥ 0.944): "
        "5 sent, 5 calls, 5 decided" in result.output
    )
    # Each result's decision is stored beside it, as the report reads it.
    with Store(db) as opened:
        stored = cascade_result_decisions(opened, card="single@1")
    assert sorted((r["result_id"], r["decided_by"], r["threshold"]) for r in stored) == sorted(
        (r["id"], "openai:strong", 0.0) for r in written
    )

    # Again with --json: nothing called, the same decisions as data.
    again = score(items, out, "openai:cheap", "openai:strong", "--json", guarantee=True)
    assert again.exit_code == 0, again.output
    data = json.loads(again.stdout[again.stdout.index("{") :])
    assert server.requests == before + 5 and data["results_served_without_call"] == 5
    assert data["decided_by"] == {"openai:strong": 5} and data["coverage"] == 1.0
    assert data["models"] == ["openai:cheap", "openai:strong"] and data["errors"] == 0
    assert [s["decided"] for s in data["stages"]] == [0, 5] and data["items"] == 5

    # Too few labels for a judge: exit 2, naming what to label, and nothing called.
    before = server.requests
    short = score(items, out, "openai:strong", "openai:new", guarantee=True)
    assert short.exit_code == 2
    assert "needs at least 15 human labels of 'rating'" in short.output
    assert "audit sample --card single@1 --model openai:new" in short.output
    assert server.requests == before

    usage = cli_run("score", "--card", "single@1", "--cascade", "openai:a,openai:b",
                    items, "--output", out)  # fmt: skip
    assert usage.exit_code == 2 and "--cascade needs --guarantee" in usage.output  # old spelling


# ---------------------------------------------------------------- the guarantee on LLMBar

CHEAP_TO_STRONG = ("LLaMA2", "Falcon", "ChatGPT-0301", "ChatGPT", "PaLM2", "GPT-4")


def llmbar_cascade(
    keep: NDArray[np.bool_], target: float, delta: float = 0.1, splits: int = 200
) -> tuple[float, float, NDArray[np.float64], NDArray[np.float64]]:
    """Half the items calibrate the judges (`cascade_thresholds`: each only on what the earlier
    ones leave), the other half go down the cascade, 200 times.

    Confidence is both-order consistency; an inconsistent verdict is a tie, which never
    matches LLMBar's gold. Returns the share of splits in which every stage's agreement with
    the gold on what it decides of the whole subset (the population the guarantee is about) is
    at least ``target``, the mean coverage of the test half, and per judge the mean share of
    test items sent to it and decided by it.
    """
    data = llmbar()
    gold = data.gold[keep]
    confidence, agrees = [], []
    for name in CHEAP_TO_STRONG:
        verdicts = data.judge(name)[keep]
        confidence.append(
            np.array([order_consistency(str(a), str(b)) for a, b in verdicts], dtype=float)
        )
        agrees.append((verdicts[:, 0] == verdicts[:, 1]) & (verdicts[:, 0] == gold))
    rng = np.random.default_rng(0)
    n = len(gold)
    held, coverage = 0, []
    sent, decided = np.zeros(len(CHEAP_TO_STRONG)), np.zeros(len(CHEAP_TO_STRONG))
    for _ in range(splits):
        order = rng.permutation(n)
        cal, test = order[: n // 2], order[n // 2 :]
        thresholds = cascade_thresholds(
            [c[cal] for c in confidence], [a[cal] for a in agrees], target=target, delta=delta
        )
        in_test = np.zeros(n, dtype=bool)
        in_test[test] = True
        remaining = np.ones(n, dtype=bool)
        kept = True
        for j, threshold in enumerate(thresholds):
            if threshold is None:
                continue  # decides nothing, is not called
            sent[j] += remaining[in_test].mean()
            trusted = (confidence[j] >= threshold) & remaining
            decided[j] += trusted[in_test].mean()
            kept &= not trusted.any() or float(agrees[j][trusted].mean()) >= target
            remaining &= ~trusted
        held += kept
        coverage.append(1 - remaining[in_test].mean())
    return held / splits, float(np.mean(coverage)), sent / splits, decided / splits


def test_llmbar_cascade_keeps_the_guarantee_and_leaves_gpt4_less_to_do() -> None:
    data = llmbar()
    # All 419 items: on the adversarial sets the weak judges' consistent verdicts are mostly
    # wrong, so none of them earns a threshold; GPT-4 alone decides, as it would without them.
    held, coverage, sent, decided = llmbar_cascade(np.ones(len(data.gold), dtype=bool), 0.8)
    assert held >= 0.9
    # (In 2.5% of the splits GPT-4's half of the items cannot show 0.8 either: all to people.)
    assert sent[:-1].sum() == 0.0 and sent[-1] > 0.95 and coverage > 0.85
    # Natural items only: the cheap judges are trusted on most of them and GPT-4 is asked
    # about less than 40% of the items (100% alone), with the target kept by every stage.
    natural = data.subsets == "LLMBar/Natural"
    held, coverage, sent, decided = llmbar_cascade(natural, 0.85)
    # Calibrated only on what PaLM2 and ChatGPT leave it, GPT-4 cannot always show 85% there
    # (0.96 coverage when it was calibrated on all its labels, but then its agreement on what
    # it decided fell below 85% in 16% of splits: bench/cascade_stages.py).
    assert held >= 0.9 and coverage > 0.75
    assert sent[-1] < 0.4 and decided[:-1].sum() > 0.45  # 0.53 (0.6 with the old rule)


def test_top_logprobs_on_the_command_line(
    tmp_path: Path, serve: Callable[..., FakeServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without logprobs a cascade has no confidence to rank by: --top-logprobs asks for them
    # with cards that do not by default (and 0 turns the rubric card's default off).
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-4f9a7c2e1b3d5f60718293a4b5c6d7e8")
    sent: list[dict[str, Any]] = []

    def record(request: Any) -> None:
        sent.append(request.body)

    server = serve(fault=record)
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps({"id": "a", "question": "Q?", "answer": "A."}) + "\n")
    for value, expected in (("5", 5), ("0", None)):
        result = CliRunner().invoke(cli, [
            "score", "--card", "single@1", "--model", "openai:m", str(items),
            "--output", str(tmp_path / f"out{value}.jsonl"), "--base-url", server.base_url,
            "--top-logprobs", value, "--db", str(tmp_path / f"db{value}.db"),
        ])  # fmt: skip
        assert result.exit_code == 0, result.output
        assert sent[-1].get("top_logprobs") == expected
        assert sent[-1].get("logprobs") is (True if expected else None)
