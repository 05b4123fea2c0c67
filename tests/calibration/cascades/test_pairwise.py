"""A cascade of pairwise judges: thresholds from labelled comparisons, escalation to people.

The judges are real `Judge` objects of the ``pairwise`` card on the real OpenAI SDK over a
scripted transport. Each pair's question says what each judge answers in each order, in A/B
naming (``cheap=AB``: A wins with A shown first, B wins with B shown first, so the two orders
disagree and the pair is a tie); the reply function turns that into the position the judge
names, so `compare_many` maps it back. People always prefer A.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner, Result

from calibration import Audit, selective_threshold
from calibration.cascades import PairwiseCascade, comparison_confidence
from calibration.cascades.repository import cascade_decisions
from judgecards import compare_many
from judgecards.cli import cli
from judgecards.errors import AuditError, WrongCardKind
from judgecards.storage import Store
from tests.builders import PAIR_CASCADE_CARD as CARD
from tests.builders import cascade_pair as pair
from tests.builders import mt_bench
from tests.builders import pair_cascade_calibrated as calibrated
from tests.builders import pair_cascade_calibration_pairs as calibration_pairs
from tests.builders import pair_cascade_judges as judges
from tests.builders import pair_cascade_label as label
from tests.builders import pair_cascade_position_verdict as position_verdict
from tests.builders import pair_cascade_verdict as verdict
from tests.fakes.http import Script
from tests.fakes.judges import openai_judge
from tests.fakes.server import FakeRequest, FakeServer


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "pairs.db") as opened:
        yield opened


# ---------------------------------------------------------------- confidence


def test_comparison_confidence_is_consistency_refined_by_the_cards_own() -> None:
    assert comparison_confidence("A", "A") == 1.0 and comparison_confidence("A", "tie") == 0.5
    assert comparison_confidence("A", None) == 0.0
    # With G-Eval probabilities on both orders, the surer pair ranks higher within its group,
    # and a consistent pair never ranks below an inconsistent one.
    sure, unsure = (
        comparison_confidence("A", "A", (0.9, 0.8)),
        comparison_confidence("A", "A", (0.5, 0.99)),
    )
    assert sure == pytest.approx(0.9) and unsure == pytest.approx(0.75) and sure > unsure
    assert comparison_confidence("A", "B", (1.0, 1.0)) <= comparison_confidence(
        "A", "A", (0.01, 0.5)
    )
    assert comparison_confidence("A", "A", (0.0, 0.9)) == 1.0  # one order without: consistency


# ---------------------------------------------------------------- the cascade end to end


def test_pairs_go_to_the_first_judge_trusted_on_them_and_the_rest_to_people(
    store: Store, tmp_path: Path
) -> None:
    cheap, strong, cheap_script, strong_script = calibrated(store, tmp_path)
    cascade = PairwiseCascade([cheap, strong], target=0.85, delta=0.1)
    stages = cascade.calibrate()
    # cheap: 25 consistent right comparisons pass at 1.0 (0.1 ** (1/25) = 0.912 ≥ 0.85); the
    # 35 ties fail. strong is calibrated on the 35 pairs cheap leaves it: its labels name
    # position B on the B-first results, mapped back to A: 30 consistent right ones pass
    # (mapped wrongly, all 30 would disagree: no threshold); with its 5 ties (30/35) they fail.
    assert [s.threshold for s in stages] == [1.0, 1.0]
    assert [s.n_labels for s in stages] == [60, 35]
    assert stages[0].selective.coverage == pytest.approx(25 / 60)
    assert stages[1].selective.coverage == pytest.approx(30 / 35)

    before = len(cheap_script.requests), len(strong_script.requests)
    run = cascade.run(
        [
            pair("t1", cheap="AA", strong="AA"),
            pair("t2", cheap="AB", strong="BB"),
            pair("t3", cheap="BA", strong="AB"),
            pair("t4", cheap="BB", strong="AA"),
        ],
        model_a="m1",
        model_b="m2",
    )
    # Both orders of every pair to the cheap judge; the strong one sees only its two pairs.
    assert len(cheap_script.requests) - before[0] == 8
    assert len(strong_script.requests) - before[1] == 4
    assert [d.decided_by for d in run.decisions] == [
        "openai:cheap",
        "openai:strong",
        None,
        "openai:cheap",
    ]
    assert [d.comparison.winner for d in run.decisions if d.comparison] == ["A", "B", "tie", "B"]
    assert [s.sent for s in run.stages] == [4, 2] and [s.decided for s in run.stages] == [2, 1]
    assert [s.calls for s in run.stages] == [8, 4]
    assert run.coverage == pytest.approx(0.75) and run.escalated == 1
    assert "coverage:  75% decided by a judge, 1 to people (audit #" in run.summary()
    assert "openai:strong" in run.summary() and "4 calls, 1 decided" in run.summary()

    # Each output row says who decided it and at what threshold.
    t2 = run.decisions[1].row()
    assert t2 is not None and t2["id"] == "t2" and t2["model"] == "openai:strong"
    assert t2["cascade"]["decided_by"] == "openai:strong" and t2["cascade"]["threshold"] == 1.0

    # So does every stored comparison the cascade made.
    stored = {(r["pair_id"], r["model"]): r for r in cascade_decisions(store, card=CARD)}
    assert len(stored) == 6
    assert stored[("t2", "openai:cheap")]["trusted"] == 0
    assert stored[("t2", "openai:cheap")]["decided_by"] == "openai:strong"
    assert stored[("t2", "openai:strong")]["trusted"] == 1
    assert stored[("t2", "openai:strong")]["threshold"] == 1.0
    assert stored[("t3", "openai:strong")]["decided_by"] == "human"
    assert stored[("t3", "openai:strong")]["audit_id"] == run.audit_id is not None
    assert stored[("t3", "openai:strong")]["confidence"] == 0.5

    # The pair nobody was trusted on is an audit for people: its A-first result, the judge's
    # two-order outcome as what it said.
    t3 = run.decisions[2]
    assert t3.escalated and t3.audit_id == run.audit_id and t3.comparison is not None
    with Audit(store) as audit:
        record = audit.get(run.audit_id)
        assert (record.kind, record.model, record.n, record.card) == (
            "escalated",
            "openai:strong",
            1,
            CARD,
        )
        queued = audit.repository.audit_items(run.audit_id)
        assert [(q.result_id, q.item_id, q.judge) for q in queued] == [
            (t3.comparison.first_order.result_id, "t3:AB", {"winner": "tie"})
        ]


def test_escalated_pairs_are_labelled_by_sheet_and_do_not_move_the_thresholds(
    store: Store, tmp_path: Path
) -> None:
    cheap, strong, _, _ = calibrated(store, tmp_path)
    before = [s.threshold for s in PairwiseCascade([cheap, strong], target=0.85).calibrate()]
    run = PairwiseCascade([cheap, strong], target=0.85).run(
        [pair(f"h{i}", cheap="AB", strong="BA") for i in range(20)]
    )
    assert run.escalated == 20 and run.audit_id is not None
    sheet = tmp_path / "sheet.csv"
    with Audit(store) as audit:
        audit.write_sheet(run.audit_id, sheet)
        text = sheet.read_text()
        header = text.splitlines()[0].split(",")
        assert {"question", "answer_a", "answer_b", "winner"} <= set(header)
        assert "left answer of h0" in text  # A shown first, as the label names it
        rows = text.splitlines()
        column = header.index("winner")
        filled = [rows[0]] + [
            ",".join("A" if k == column else cell for k, cell in enumerate(line.split(",")))
            for line in rows[1:]
        ]
        sheet.write_text("\n".join(filled) + "\n")
        assert audit.ingest(sheet, labeler="bob").labels_written == 20
        summary = audit.summary(run.audit_id)
        # The judge called all 20 pairs a tie; people said A: agreement 0 on the pairs.
        assert summary.n_labeled == 20 and summary.primary == "winner"
        assert summary.fields["winner"].report is not None
        assert summary.fields["winner"].report.agreement.value == 0.0
    again = PairwiseCascade([cheap, strong], target=0.85).calibrate()
    assert [s.threshold for s in again] == before and [s.n_labels for s in again] == [60, 35]


def test_a_judge_without_a_threshold_decides_nothing_and_is_never_called(
    store: Store, tmp_path: Path
) -> None:
    cheap, strong, cheap_script, strong_script = calibrated(store, tmp_path)
    # At 0.92 (28 labels needed) the cheap judge's 25 consistent pairs are too few.
    cascade = PairwiseCascade([cheap, strong], target=0.92, delta=0.1)
    assert [s.threshold for s in cascade.calibrate()] == [None, 1.0]
    before = len(cheap_script.requests), len(strong_script.requests)
    run = cascade.run([pair("t1", cheap="AA", strong="AA")])
    assert len(cheap_script.requests) == before[0]
    assert len(strong_script.requests) == before[1] + 2
    assert run.decisions[0].decided_by == "openai:strong"
    assert run.stages[0].sent == 0 and "decides nothing, not called" in run.summary()


def test_too_few_labels_or_no_threshold_is_an_error_before_any_call(
    store: Store, tmp_path: Path
) -> None:
    cheap, strong, cheap_script, strong_script = judges(store)
    items = calibration_pairs()
    label(store, tmp_path, compare_many(cheap, items), "cheap", order=0)
    label(store, tmp_path, compare_many(strong, items[:10]), "strong", order=0)
    sent = len(cheap_script.requests), len(strong_script.requests)
    with pytest.raises(AuditError) as caught:
        PairwiseCascade([cheap, strong], target=0.85).run([pair("t", cheap="AA", strong="AA")])
    message = str(caught.value)
    assert "at least 15 human labels of 'winner' on comparisons of pairwise@2" in message
    assert "openai:strong" in message and "it has 10" in message
    # At 0.94 (38 labels needed) the cheap judge has no threshold: nothing to call at all.
    with pytest.raises(AuditError, match="no judge of the cascade can guarantee agreement ≥ 94%"):
        PairwiseCascade([cheap], target=0.94).run([pair("t", cheap="AA")])
    assert (len(cheap_script.requests), len(strong_script.requests)) == sent


def test_a_cascade_of_single_item_judges_is_refused(store: Store) -> None:
    single = openai_judge(Script(), "single@1", model="cheap", db=store)
    with pytest.raises(WrongCardKind, match="needs a pairwise card"):
        PairwiseCascade([single], target=0.85)
    cheap, _, _, _ = judges(store)
    with pytest.raises(ValueError, match="must use one card"):
        PairwiseCascade([cheap, single], target=0.85)
    with pytest.raises(ValueError, match="target must be in"):
        PairwiseCascade([cheap], target=1.0)


# ---------------------------------------------------------------- the guarantee on MT-Bench


def mt_bench_cascade(
    keep: np.ndarray, target: float, delta: float = 0.1, splits: int = 200
) -> tuple[float, float, float, float]:
    """Half the comparisons calibrate GPT-4's threshold, the other half go down the cascade,
    200 times. Confidence is `comparison_confidence` of its two orders (the data records only
    whether they differed, not how: a differing pair is given as A then B); a comparison agrees
    when GPT-4's two-order outcome equals the people's plurality (A, B or tie).

    Returns the share of splits whose trusted test pairs agree at least ``target``, the mean
    coverage, the mean agreement on trusted pairs, and GPT-4's calls per test pair (two per pair
    sent: both orders).
    """
    data = mt_bench()
    gpt4, human, inconsistent = data.gpt4[keep], data.human[keep], data.inconsistent[keep]
    confidence = np.array(
        [
            comparison_confidence(*(("A", "B") if flip else (v, v)))
            for v, flip in zip(gpt4, inconsistent)
        ]
    )
    agrees = gpt4 == human
    rng = np.random.default_rng(0)
    n = len(agrees)
    held, coverage, agreement, calls = 0, [], [], []
    for _ in range(splits):
        order = rng.permutation(n)
        cal, test = order[: n // 2], order[n // 2 :]
        chosen = selective_threshold(confidence[cal], agrees[cal], target=target, delta=delta)
        trusted = chosen.trusts(confidence[test])
        calls.append(2.0 if chosen.found else 0.0)  # not called without a threshold
        right = agrees[test][trusted]
        held += right.size == 0 or float(right.mean()) >= target
        coverage.append(float(trusted.mean()))
        if right.size:
            agreement.append(float(right.mean()))
    mean_agreement = float(np.mean(agreement)) if agreement else math.nan
    return held / splits, float(np.mean(coverage)), mean_agreement, float(np.mean(calls))


def test_mt_bench_cascade_keeps_the_guarantee() -> None:
    """GPT-4 is MT-Bench's only recorded judge, so the cascade is one stage: its consistent
    verdicts are trusted, its inconsistent ones (290 of 1,814) go to people."""
    data = mt_bench()
    # All 1,814 comparisons, a tie a class of its own: GPT-4 agrees with the plurality on 67%
    # overall, 70% when consistent. At target 0.65 it keeps the target in 97.5% of splits, is
    # trusted on 92% of the test pairs (agreement 68%) and asked about all of them (2 calls a
    # pair: both orders) in the 98.5% of splits where it earns a threshold.
    held, coverage, agreement, calls = mt_bench_cascade(np.ones(len(data.human), dtype=bool), 0.65)
    assert held >= 0.9 and coverage > 0.85 and agreement >= 0.65 and calls > 1.9
    # The 1,262 comparisons where people preferred one answer (as Trust or Escalate's Chatbot
    # Arena subset): target 0.8 is kept in every split, on 88% of the pairs (agreement 85%),
    # the inconsistent ones escalated.
    held, coverage, agreement, calls = mt_bench_cascade(data.human != "tie", 0.8)
    assert held >= 0.9 and coverage > 0.8 and agreement >= 0.8
    # A target above what GPT-4 can show escalates (nearly) everything, never breaks it.
    held, coverage, _, _ = mt_bench_cascade(np.ones(len(data.human), dtype=bool), 0.75)
    assert held >= 0.9 and coverage < 0.05


# ---------------------------------------------------------------- the command line


def test_compare_with_a_guarantee_on_the_command_line(
    tmp_path: Path, serve: Callable[..., FakeServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``cascade A B --card pairwise --model openai:cheap --model openai:strong --guarantee 0.85``
    on a loopback server whose two models answer as each pair's question says (and
    ``compare --guarantee``, the old spelling, to the same rows); then the escalated pairs'
    sheet is written, filled and ingested with the audit commands."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-4f9a7c2e1b3d5f60718293a4b5c6d7e8")

    def answer(request: FakeRequest) -> tuple[int, dict[str, Any]]:
        prompt = request.body["messages"][-1]["content"]
        text = verdict(position_verdict(prompt, request.body["model"]))
        message = {"role": "assistant", "content": text}
        return 200, {
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1741569952,
            "model": request.body["model"],
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
        }  # fmt: skip

    server = serve(fault=answer)
    db = tmp_path / "cli.db"

    def cli_run(*args: Any) -> Result:
        return CliRunner().invoke(cli, [*map(str, args), "--db", str(db)])

    def sides(name: str, items: list[dict[str, Any]]) -> tuple[Path, Path]:
        a, b = tmp_path / f"{name}_a.jsonl", tmp_path / f"{name}_b.jsonl"
        for path, key, model in ((a, "answer_a", "m1"), (b, "answer_b", "m2")):
            path.write_text("".join(
                json.dumps({"id": p["id"], "question": p["question"], "answer": p[key], "model": model}) + "\n"
                for p in items
            ))  # fmt: skip
        return a, b

    def compare(name: str, *which: str, command: str = "compare") -> Result:
        a, b = sides(name, items[name])
        return cli_run(command, a, b, "--card", CARD, *which,
                       "--output", tmp_path / f"{name}.out.jsonl", "--base-url", server.base_url)  # fmt: skip

    def cascade_run(name: str, *which: str) -> Result:
        return compare(name, *which, command="cascade")

    items = {
        "cal": calibration_pairs(),
        "new": [
            pair("t1", cheap="AA", strong="AA"),
            pair("t2", cheap="AB", strong="BB"),
            pair("t3", cheap="BA", strong="AB"),
        ],
    }
    labels = []
    for model in ("openai:cheap", "openai:strong"):
        assert compare("cal", "--model", model).exit_code == 0
        for line in (tmp_path / "cal.out.jsonl").read_text().splitlines():
            labels.append(
                {"result_id": json.loads(line)["first_order"]["result_id"], "winner": "A"}
            )
    (tmp_path / "labels.jsonl").write_text("".join(json.dumps(row) + "\n" for row in labels))
    assert cli_run("labels", "import", tmp_path / "labels.jsonl", "--labeler", "ann").exit_code == 0

    before = server.requests
    cascade = ["--model", "openai:cheap", "--model", "openai:strong", "--guarantee", "0.85"]
    result = cascade_run("new", *cascade)
    assert result.exit_code == 0, result.output
    assert "deprecated" not in result.output
    assert server.requests == before + 6 + 4  # cheap: 3 pairs x 2 orders; strong: 2 x 2
    rows = [json.loads(line) for line in (tmp_path / "new.out.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == ["t1", "t2", "t3"]
    assert [r["cascade"]["decided_by"] for r in rows] == ["openai:cheap", "openai:strong", "human"]
    assert [r["winner"] for r in rows] == ["A", "B", "tie"]
    assert rows[1]["cascade"]["threshold"] == 1.0 and rows[1]["model_a"] == "m1"
    audit_id = rows[2]["cascade"]["audit_id"]
    assert isinstance(audit_id, int)
    assert "coverage:  67% decided by a judge, 1 to people (audit #" in result.output
    # Each stage with what it was calibrated on: the strong judge on the 35 pairs left to it.
    assert (
        "threshold 1 (60 labels left to it: trusted on 42%, agreement 1.000 ≥ 0.912): "
        "3 sent, 6 calls, 1 decided" in result.output
    )
    assert (
        "threshold 1 (35 labels left to it: trusted on 86%, agreement 1.000 ≥ 0.926): "
        "2 sent, 4 calls, 1 decided" in result.output
    )

    # Again: every judgment is stored, so nothing is called, and the decisions are the same.
    first_rows = rows
    again = cascade_run("new", *cascade, "--json")
    assert again.exit_code == 0, again.output
    assert server.requests == before + 10
    data = json.loads(again.output[again.output.index("{") :])
    assert data["coverage"] == pytest.approx(2 / 3) and data["calls"] == 0
    assert data["decided_by"] == {"openai:cheap": 1, "openai:strong": 1, "human": 1}
    assert [s["decided"] for s in data["stages"]] == [1, 1]
    # The escalated pair still waits in the first run's audit: no second audit of it.
    assert data["audit_id"] is None
    assert data["earlier_audits"] == [{"audit_id": audit_id, "waiting": 1, "labelled": 0}]
    rows = [json.loads(line) for line in (tmp_path / "new.out.jsonl").read_text().splitlines()]
    assert rows[2]["cascade"]["audit_id"] == audit_id

    def decided(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        # What the run decided and from which stored judgments (a re-run serves them cached).
        fields = ("id", "winner", "model", "model_a", "model_b", "cascade")
        return [
            (*(r[f] for f in fields), r["first_order"]["result_id"], r["second_order"]["result_id"])
            for r in rows
        ]

    assert decided(rows) == decided(first_rows)

    # The old spelling: the same decisions and summary, and one line saying what to write now.
    old = compare("new", *cascade, "--json")
    assert old.exit_code == 0, old.output
    assert [line for line in old.stderr.splitlines() if "deprecated" in line] == [
        "Warning: compare --guarantee is deprecated and will be removed in the next release: "
        "use judgecards cascade A B --card pairwise --model M1 --model M2 --guarantee T"
    ]
    old_data = json.loads(old.stdout[old.stdout.index("{") :])
    assert {**old_data, "elapsed_s": 0} == {**data, "elapsed_s": 0}
    rows = [json.loads(line) for line in (tmp_path / "new.out.jsonl").read_text().splitlines()]
    assert decided(rows) == decided(first_rows) and server.requests == before + 10

    # The escalated pair goes to people with the audit commands.
    sheet = tmp_path / "escalated.jsonl"
    assert cli_run("audit", "sheet", audit_id, "--sheet", sheet).exit_code == 0
    (row,) = [json.loads(line) for line in sheet.read_text().splitlines()]
    assert row["answer_a"] == "left answer of t3" and row["winner"] is None
    sheet.write_text(json.dumps({**row, "winner": "A"}) + "\n")
    ingested = cli_run("audit", "ingest", sheet, "--labeler", "bob")
    assert ingested.exit_code == 0, ingested.output
    # Labelled there, it is not queued for people again either.
    third = cascade_run("new", *cascade)
    assert third.exit_code == 0, third.output
    assert f"1 pair already in audit #{audit_id} (0 waiting, 1 labelled)" in third.output
    with Audit(db) as audit:
        escalated = [a for a in audit.repository.audits() if a.kind == "escalated"]
    assert [a.id for a in escalated] == [audit_id]

    # Too few labels for a judge: exit 2, naming what to label, and nothing called.
    before = server.requests
    short = cascade_run(
        "new", "--model", "openai:strong", "--model", "openai:new", "--guarantee", "0.85"
    )
    assert short.exit_code == 2
    assert "needs at least 15 human labels of 'winner' on comparisons" in short.output
    assert "audit sample --card pairwise@2 --model openai:new" in short.output
    assert server.requests == before

    usage = compare("new", "--model", "openai:a", "--model", "openai:b")
    assert usage.exit_code == 2 and "compare judges with one --model" in usage.output
    one_file = cli_run(
        "cascade", tmp_path / "new_a.jsonl", "--card", CARD, *cascade, "--output", tmp_path / "x"
    )
    assert one_file.exit_code == 2 and "answer_a" in one_file.output
    old = compare("new", "--cascade", "openai:a,openai:b")
    assert old.exit_code == 2 and "--cascade needs --guarantee" in old.output
    batch = compare("new", *cascade, "--batch")
    assert batch.exit_code == 2 and "leave out --batch" in batch.output
    for extra, named in ((["--plan"], "--plan"), (["--max-cost", "1"], "--max-cost")):
        refused = compare("new", *cascade, *extra)
        assert refused.exit_code == 2 and f"leave out {named}" in refused.output
    neither = compare("new")
    assert neither.exit_code == 2 and "give --model" in neither.output
    assert server.requests == before
