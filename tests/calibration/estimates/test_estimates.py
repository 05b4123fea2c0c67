"""Corrected estimates from stored data: ``calibration.estimate`` and ``judgecards estimate``.

Items are judged through the real OpenAI SDK against a scripted transport (`tests.fakes`); labels
go in through `calibration.import_labels` or an audit's sheet; the expected numbers are the
array-level functions (`calibration.corrected_mean`, ...) on arrays this test builds itself from
what it judged and what its "humans" said.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import numpy as np
import pytest
from click.testing import CliRunner

import calibration
from calibration import corrected_estimate, corrected_mean, corrected_rate
from calibration.audits import Audit
from calibration.estimates import EstimatesReport
from calibration.estimates.scales import score_scales
from calibration.labels import CalibrationRepository, NewLabel
from judgecards import Store, compare_many
from judgecards.cards import load_card
from judgecards.cli import cli
from judgecards.errors import EstimateError, JudgecardsError, UncalibratedJudgeWarning
from judgecards.storage import JudgeResult
from tests.builders import MODEL, SCORES, TRUTH, judged_db, write_labels
from tests.builders import kind_items as items
from tests.builders import true_verdict as truth
from tests.fakes.http import Script, openai_chat, reference_judgment
from tests.fakes.judges import openai_judge
from tests.fakes.server import FakeServer, tagged


def row(report: EstimatesReport, name: str) -> Any:
    return next(r for r in report.rows if r.name == name)


def test_stored_estimates_are_the_array_estimates_on_the_stored_arrays(tmp_path: Path) -> None:
    db, order = judged_db(tmp_path)
    labelled = [i for i in order if int(i[1:]) % 2 == 0]  # 45 of 90, every kind among them
    calibration.import_labels(
        write_labels(tmp_path / "labels.csv", labelled), labeler="alice", db=db
    )

    report = calibration.estimate(db, card="reference", model=MODEL)

    assert (report.card, report.n_judged, report.n_labeled, report.labelers) == (
        "reference@1",
        90,
        45,
        ("alice",),
    )
    rest = [i for i in order if i not in labelled]
    # The lenient judge calls a partial match a match.
    judge_verdict = {i: "match" if truth(i) == "partial_match" else truth(i) for i in order}
    human = [SCORES[truth(i)][0] for i in labelled]
    judge_l = [SCORES[judge_verdict[i]][0] for i in labelled]
    judge_u = [SCORES[judge_verdict[i]][0] for i in rest]
    mean = row(report, "mean correctness").result
    # The judged items are the population the labels were drawn from (without replacement),
    # and the card's schema puts correctness on 1–5: the bounded interval.
    finite = {"finite_population": True, "bounds": (1, 5)}
    assert mean.corrected == corrected_mean(human, judge_l, judge_u, **finite)  # type: ignore[arg-type]
    assert mean.corrected != corrected_mean(human, judge_l, judge_u)
    assert mean.human_only.value == pytest.approx(np.mean(human))  # 3.0: a third of each kind
    assert mean.judge_only.value == pytest.approx(np.mean(judge_l + judge_u))  # 3.67: biased up
    assert mean.judge_only.n == 90 and mean.corrected.n == mean.human_only.n == 45
    # The judge's bias is removed: the corrected mean is the people's, not the judge's.
    assert abs(mean.corrected.value - 3.0) < abs(mean.judge_only.value - 3.0)

    share = row(report, "share match").result
    human_v = [truth(i) for i in labelled]
    expected = corrected_rate(human_v, [judge_verdict[i] for i in labelled],
                              [judge_verdict[i] for i in rest], category="match",
                              finite_population=True, bounds=(0, 1))  # fmt: skip
    assert share.corrected == expected
    # The judge is right on every labelled mismatch: the t interval over a finite population
    # shrinks to almost nothing; a share's interval is the bounded one, which does not.
    mismatch = row(report, "share mismatch").result.corrected
    assert mismatch.high - mismatch.low > 0.05
    assert mismatch.low <= 1 / 3 <= mismatch.high
    assert share.judge_only.value == pytest.approx(60 / 90)  # match and partial_match both "match"
    assert share.human_only.value == pytest.approx(15 / 45)
    assert row(report, "share partial_match").result.judge_only.value == 0.0
    assert {r.design.kind for r in report.rows} == {"assumed uniform"}  # labels import: no design
    assert "ASSUMPTION" in report.as_text()

    runner = CliRunner()
    args = ["estimate", "--card", "reference@1", "--model", MODEL, "--db", str(db)]
    as_json = runner.invoke(cli, [*args, "--json"])
    assert as_json.exit_code == 0, as_json.output
    data = json.loads(as_json.stdout)
    by_name = {e["name"]: e for e in data["estimates"]}
    assert by_name["mean correctness"]["corrected"]["value"] == mean.corrected.value
    assert by_name["mean correctness"]["judge_only"]["n"] == 90
    assert data["estimates"][0]["design"] == "assumed uniform"
    text = runner.invoke(cli, args)
    assert text.exit_code == 0
    first_lines = text.output.splitlines()[:4]
    assert first_lines[0].startswith("Corrected estimates: reference@1 judged by openai:gpt-4o")
    assert "UNCORRECTED" in first_lines[1]
    header = first_lines[2]
    assert header.index("corrected") < header.index("human only") < header.index("judge only")
    assert "mean correctness" in text.output and "share match" in text.output


def test_nothing_to_correct_with_is_a_clear_error_and_exit_2(tmp_path: Path) -> None:
    db, order = judged_db(tmp_path, n=12)
    with pytest.raises(
        EstimateError, match="no human labels of reference@1 judged by openai:gpt-4o"
    ):
        calibration.estimate(db, card="reference", model=MODEL)
    assert issubclass(EstimateError, JudgecardsError)
    with pytest.raises(
        EstimateError, match="no successful results of card 'reference' judged by openai:other"
    ):
        calibration.estimate(db, card="reference", model="openai:other")
    runner = CliRunner()
    result = runner.invoke(
        cli, ["estimate", "--card", "reference", "--model", MODEL, "--db", str(db)]
    )
    assert result.exit_code == 2
    assert "Error: no human labels of reference@1" in result.output
    # One label is not enough to estimate anything: said, with why.
    calibration.import_labels(write_labels(tmp_path / "one.csv", order[:1]), labeler="alice", db=db)
    with pytest.raises(EstimateError, match=r"too few human labels.*1 labelled item"):
        calibration.estimate(db, card="reference", model=MODEL)
    missing = tmp_path / "missing.db"
    result = runner.invoke(
        cli, ["estimate", "--card", "reference", "--model", MODEL, "--db", str(missing)]
    )
    assert result.exit_code == 2 and "Error:" in result.output
    assert not missing.exists()  # read-only: never creates a database
    bad = runner.invoke(
        cli, ["estimate", "--card", "reference", "--model", MODEL, "--alpha", "1.5"]
    )
    assert bad.exit_code == 2


def test_a_stratified_audit_is_weighted_and_the_audit_report_leads_with_corrected_numbers(
    tmp_path: Path,
) -> None:
    db, _ = judged_db(tmp_path, n=150)
    with Audit(db, n_resamples=200) as audit:
        drawn = audit.sample(card="reference", model=MODEL, n=40, stratify="verdict", seed=3,
                             sheet=tmp_path / "sheet.csv")  # fmt: skip
        assert drawn.sheet is not None
        with drawn.sheet.open(newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        for line in rows:
            line["verdict"] = truth(line["item_id"])
            line["correctness"] = str(SCORES[truth(line["item_id"])][0])
        with drawn.sheet.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
        audit.ingest(drawn.sheet, labeler="bob")
        report = audit.report(card="reference")

    with Store(db, read_only=True) as store:
        results = [r for r, _ in store.results(card="reference@1", model=MODEL)]
    sampled = {line["item_id"] for line in rows}
    labelled = [r for r in results if r.item_id in sampled]
    rest = [r for r in results if r.item_id not in sampled]
    # Inverse inclusion probability within each verdict stratum: judged / labelled there.
    judged = {v: sum(r.verdict == v for r in results) for v in ("match", "mismatch")}
    drawn_n = {v: sum(r.verdict == v for r in labelled) for v in ("match", "mismatch")}
    weights = [judged[r.verdict or ""] / drawn_n[r.verdict or ""] for r in labelled]
    assert len(set(weights)) == 2  # rounding makes the strata's rates differ, so weights matter
    # With weighted labels the judge's mean is over every judged item (the unlabelled rest
    # over-represents the strata the audit drew least from).
    expected = corrected_estimate(
        [SCORES[truth(r.item_id or "")][0] for r in labelled],
        [r.scores["correctness"] for r in labelled],
        [r.scores["correctness"] for r in results],
        weights=weights,
    )
    biased = corrected_estimate(
        [SCORES[truth(r.item_id or "")][0] for r in labelled],
        [r.scores["correctness"] for r in labelled],
        [r.scores["correctness"] for r in rest],
        weights=weights,
    )
    assert expected.corrected.value != pytest.approx(biased.corrected.value)
    estimates = report.estimates[0]
    mean = row(estimates, "mean correctness")
    assert (mean.design.kind, mean.weighted) == ("stratified", True)
    assert mean.result.corrected == expected.corrected
    assert mean.result.corrected != corrected_mean(
        [SCORES[truth(r.item_id or "")][0] for r in labelled],
        [r.scores["correctness"] for r in labelled],
        [r.scores["correctness"] for r in rest],
    )  # unweighted would differ
    # The judge's own number is over every judged item, unweighted.
    assert mean.result.judge_only.value == pytest.approx(
        np.mean([r.scores["correctness"] for r in results])
    )

    text = report.as_text()
    assert text.startswith("Corrected estimates: reference@1 judged by openai:gpt-4o")
    assert text.index("Corrected estimates") < text.index("Audits, oldest first")
    assert "judge only is UNCORRECTED" in text
    assert "stratified by verdict" in text
    data = report.to_dict()
    assert data["estimates"][0]["estimates"][0]["weighted"] is True

    cli_report = CliRunner().invoke(
        cli, ["audit", "report", "--card", "reference", "--db", str(db), "--resamples", "200"]
    )
    assert cli_report.stdout.startswith("Corrected estimates")


def test_labels_from_an_escalation_audit_are_not_a_random_sample(tmp_path: Path) -> None:
    db, order = judged_db(tmp_path, n=60)
    calibration.import_labels(write_labels(tmp_path / "l.csv", order[::2]), labeler="alice", db=db)
    before = calibration.estimate(db, card="reference", model=MODEL)
    with Store(db) as store:
        results = {r.item_id: r for r, _ in store.results(card="reference@1", model=MODEL)}
        escalated = [results[i] for i in order[1::2][:10]]
        repository = CalibrationRepository(store)
        audit_id = repository.add_audit(
            {"kind": "escalated", "card": "reference@1", "card_hash": escalated[0].card_hash,
             "model": MODEL, "n": len(escalated), "created_at": "2026-01-01T00:00:00+00:00"},
            [],
        )  # fmt: skip
        repository.add_labels(
            [
                NewLabel(r.id, r.item_id, r.card, r.model, "carol", "verdict", "verdict",
                         truth(r.item_id or ""), None, "2026-01-01T00:00:00+00:00")
                for r in escalated
            ],
            audit_id=audit_id,
        )  # fmt: skip
    after = calibration.estimate(db, card="reference", model=MODEL)
    assert row(after, "share match").result == row(before, "share match").result
    assert any("10 result(s) labelled only in escalation audits" in note for note in after.notes)


def prefers_long(request: httpx2.Request) -> httpx2.Response:
    """A biased pairwise judge: the longer answer wins, in either order."""
    prompt = "\n".join(str(m["content"]) for m in json.loads(request.content)["messages"])
    a, b = tagged(prompt, "answer_a") or "", tagged(prompt, "answer_b") or ""
    winner = "tie" if len(a) == len(b) else ("A" if len(a) > len(b) else "B")
    return openai_chat(
        json.dumps({"reasoning": "The longer answer is more complete.", "winner": winner})
    )


def test_win_rates_per_model_pair_use_either_orders_labels(tmp_path: Path) -> None:
    # "big" answers are long; people prefer the right one, which is "big"'s on two thirds of items.
    pairs = []
    for i in range(60):
        big_right = i % 3 != 0
        big = (
            f"Paris, the capital of France ({i}), a long and detailed answer."
            if big_right
            else f"Lyon ({i}), wrong but long and very detailed."
        )
        small = "Lyon." if big_right else "Paris."
        swap = i % 2 == 1  # big is model B on odd items
        pairs.append({"id": f"p{i}", "question": "Capital of France?", "answer_a": small if swap else big,
                      "answer_b": big if swap else small, "model_a": "small" if swap else "big",
                      "model_b": "big" if swap else "small"})  # fmt: skip
    judge = openai_judge(Script(default=prefers_long), "pairwise@1")
    compared = compare_many(judge, pairs, concurrency=4)
    db = Path(judge.store.path)
    people = {p["id"]: ("A" if "Paris" in p["answer_a"] else "B") for p in pairs}
    labels = tmp_path / "winners.csv"
    labelled: list[str] = []
    with labels.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["result_id", "winner"])
        for i, c in enumerate(compared):
            if i % 4 == 0:  # labelled on the first order: A is model_a
                writer.writerow([c.first_order.result_id, people[f"p{i}"]])
            elif i % 4 == 1:  # labelled on the second order, where model_a's answer shows as B
                writer.writerow([c.second_order.result_id, {"A": "B", "B": "A"}[people[f"p{i}"]]])
            else:
                continue
            labelled.append(f"p{i}")
    calibration.import_labels(labels, labeler="dana", db=db)

    report = calibration.estimate(db, card="pairwise@1", model=MODEL)
    (win,) = report.rows
    assert (win.kind, win.name) == ("win_rate", "big vs small")
    assert (report.n_comparisons, report.n_judged) == (60, 120)
    assert "60 comparisons judged in both orders (120 results)" in report.as_text()

    def points(winner: str | None, pair: dict[str, Any]) -> float:
        big_won = (winner == "A") == (pair["model_a"] == "big")
        return 0.5 if winner == "tie" else float(big_won)

    by_id = {p["id"]: p for p in pairs}
    order = [c.pair_id for c in compared]
    assert order == [p["id"] for p in pairs]
    human = [points(people[i], by_id[i]) for i in labelled]
    judge_l = [points(c.winner, by_id[str(c.pair_id)]) for c in compared if c.pair_id in labelled]
    judge_u = [
        points(c.winner, by_id[str(c.pair_id)]) for c in compared if c.pair_id not in labelled
    ]
    assert win.result.human_only.value == pytest.approx(np.mean(human))  # 2/3: big is right
    assert win.result.judge_only.value == 1.0  # the judge always picks the long answer
    expected = corrected_mean(human, judge_l, judge_u, finite_population=True)
    assert win.result.corrected.value == pytest.approx(expected.value)
    assert win.result.corrected.high <= 1.0


def sample_and_label(audit: Audit, tmp_path: Path, name: str, **options: Any) -> int:
    """Draw an audit sample, fill its sheet truthfully, ingest it; returns the audit id."""
    drawn = audit.sample(card="reference", model=MODEL, sheet=tmp_path / f"{name}.csv", **options)
    assert drawn.sheet is not None
    with drawn.sheet.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    for line in rows:
        line["verdict"] = truth(line["item_id"])
        line["correctness"] = str(SCORES[truth(line["item_id"])][0])
    with drawn.sheet.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    audit.ingest(drawn.sheet, labeler="erin")
    return drawn.audit.id


def test_one_audits_labels_keep_its_design_when_other_labels_have_none(tmp_path: Path) -> None:
    db, _ = judged_db(tmp_path, n=90)
    with Audit(db, n_resamples=200) as audit:
        audit_id = sample_and_label(audit, tmp_path, "uniform", n=40, seed=11)
        in_audit = {item.result_id for item in audit.repository.audit_items(audit_id)}
    with Store(db, read_only=True) as store:
        results = [r for r, _ in store.results(card="reference@1", model=MODEL)]
    outside = [r.item_id or "" for r in results if r.id not in in_audit][:20]
    calibration.import_labels(write_labels(tmp_path / "more.csv", outside), labeler="alice", db=db)

    every = calibration.estimate(db, card="reference", model=MODEL)
    assert every.n_labeled == 60
    assert {r.design.kind for r in every.rows} == {"assumed uniform"}

    one = calibration.estimate(db, card="reference", model=MODEL, audit=audit_id)
    assert one.n_labeled == 40
    assert {r.design.kind for r in one.rows} == {"uniform"}
    labelled = [r for r in results if r.id in in_audit]
    rest = [r for r in results if r.id not in in_audit]
    expected = corrected_mean(
        [SCORES[truth(r.item_id or "")][0] for r in labelled],
        [r.scores["correctness"] for r in labelled],
        [r.scores["correctness"] for r in rest],
        finite_population=True,
        bounds=(1, 5),
    )
    assert row(one, "mean correctness").result.corrected == expected
    result = CliRunner().invoke(
        cli,
        ["estimate", "--card", "reference", "--model", MODEL, "--audit", str(audit_id),
         "--json", "--db", str(db)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["n_labeled"] == 40
    with pytest.raises(EstimateError, match=r"no human labels of reference@1 .* in audit #99"):
        calibration.estimate(db, card="reference", model=MODEL, audit=99)


def test_an_uncertainty_sample_weights_each_label_by_its_inverse_inclusion_probability(
    tmp_path: Path,
) -> None:
    # Every result is judged "match"; on every fourth the judge was unsure (G-Eval put 0.5 on
    # its scores) and in fact wrong. An uncertainty audit oversamples those, so the people's
    # share of matches among the labelled items is too low unless each is weighted by 1/π.
    card = load_card("reference")
    unsure = set(range(0, 120, 4))
    with Audit(tmp_path / "u.db", n_resamples=200) as audit:
        for i in range(120):
            p = 0.5 if i in unsure else 1.0
            scoring = {axis: {"method": "geval", "distribution": {"5": p, "4": 1 - p}}
                       for axis in ("correctness", "completeness", "style_fidelity")}  # fmt: skip
            result = JudgeResult(
                id=f"r{i:03d}", item_id=f"i{i}", status="ok", verdict="match",
                scores={"correctness": 5, "completeness": 5, "style_fidelity": 5},
                output={"scoring": scoring}, card=card.ref, card_hash=card.hash, model=MODEL,
            )  # fmt: skip
            answer = "wrong" if i in unsure else "right"
            audit.store.save(result, inputs={"question": f"Q{i}?", "gold_answer": "A",
                                             "model_output": f"{answer} {i}"}, params={})  # fmt: skip
        drawn = audit.sample(card="reference", model=MODEL, n=40, seed=5, strategy="uncertainty",
                             sheet=tmp_path / "u.csv")  # fmt: skip
        assert drawn.sheet is not None
        with drawn.sheet.open(newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        for line in rows:
            line["verdict"] = "mismatch" if line["model_output"].startswith("wrong") else "match"
        with drawn.sheet.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
        audit.ingest(drawn.sheet, labeler="ann")
        pi = {
            i.result_id: i.inclusion_probability
            for i in audit.repository.audit_items(drawn.audit.id)
        }
        report = calibration.estimate(audit.store, card="reference", model=MODEL)

    share = row(report, "share match")
    assert (share.design.kind, share.weighted) == ("weighted", True)
    ids = [f"r{i:03d}" for i in range(120)]
    labelled = [r for r in ids if r in pi]
    human = ["mismatch" if int(r[1:]) in unsure else "match" for r in labelled]
    weights = [1 / float(pi[r] or 0) for r in labelled]
    expected = corrected_estimate(human, ["match"] * len(labelled), ["match"] * 120,
                                  category="match", weights=weights)  # fmt: skip
    assert share.result.corrected == expected.corrected
    assert share.result.human_only == expected.human_only
    assert share.result.judge_only.value == 1.0
    # Weighted back, the people's share is near the truth (0.75); unweighted it is far below.
    assert abs(share.result.human_only.value - 0.75) < abs(human.count("match") / len(human) - 0.75)
    assert "1/π" in report.as_text()


def test_score_leads_its_summary_with_corrected_numbers_once_labels_exist(
    tmp_path: Path, serve: Callable[..., FakeServer]
) -> None:
    def lenient_reply(prompt: str) -> str:
        kind = (tagged(prompt, "model_output") or "").split(":")[0]
        verdict = TRUTH["right" if kind == "partly" else kind]
        return reference_judgment(*SCORES[verdict], verdict=verdict)

    server = serve(reply=lenient_reply)
    db, source = tmp_path / "score.db", tmp_path / "items.jsonl"
    source.write_text("".join(json.dumps(item) + "\n" for item in items(60)), encoding="utf-8")
    score = ["score", "--card", "reference@1", "--model", MODEL, str(source),
             "--output", str(tmp_path / "out.jsonl"), "--base-url", server.base_url, "--db", str(db)]  # fmt: skip
    runner = CliRunner()
    with pytest.warns(UncalibratedJudgeWarning):
        first = runner.invoke(cli, score)
    assert first.exit_code == 0, first.output
    assert "Corrected estimates" not in first.output  # no labels: nothing to correct with

    calibration.import_labels(
        write_labels(tmp_path / "l.csv", [f"q{i}" for i in range(0, 60, 2)]), labeler="alice", db=db
    )
    again = runner.invoke(cli, score)  # every item is stored: no new call
    assert again.exit_code == 0, again.output
    assert server.requests == 60
    out = again.stdout
    assert out.lstrip().startswith("Corrected estimates: reference@1 judged by openai:gpt-4o")
    assert out.index("judge only (uncorrected)") < out.index("verdicts:")
    assert "The verdict shares and means below are the judge's own: uncorrected." in out


def test_every_judged_item_labelled_is_a_census_reported_exactly(tmp_path: Path) -> None:
    # The judged items are the population: labelling all of them leaves nothing to estimate,
    # so the corrected and human-only numbers are the people's mean with zero width (this
    # field used to be skipped as "every judged item is labelled").
    db, order = judged_db(tmp_path, n=30)
    calibration.import_labels(write_labels(tmp_path / "all.csv", order), labeler="alice", db=db)
    report = calibration.estimate(db, card="reference", model=MODEL)
    mean = row(report, "mean correctness").result
    people = np.mean([SCORES[truth(i)][0] for i in order])  # 3.0: a third of each kind
    for found in (mean.corrected, mean.human_only):
        assert (found.value, found.low, found.high) == pytest.approx((people, people, people))
    assert mean.judge_only.value == pytest.approx(np.mean([5, 5, 1] * 10))  # biased: 3.67
    assert not any("every judged item is labelled" in note for note in report.notes)
    assert "mean correctness" in report.as_text()
    json.dumps(report.to_dict(), allow_nan=False)  # zero width, effective n undefined: still JSON


def test_a_score_axis_scale_comes_only_from_the_card_that_judged() -> None:
    card = load_card("reference@1")
    assert score_scales("reference@1", [card.hash]) == {
        "correctness": (1.0, 5.0),
        "completeness": (1.0, 5.0),
        "style_fidelity": (1.0, 5.0),
    }
    # Edited since (another hash), judged by two versions of the file, or not found: no scale,
    # so the mean keeps the t interval rather than trust a schema that may not apply.
    assert score_scales("reference@1", ["sha256:0"]) == {}
    assert score_scales("reference@1", [card.hash, "sha256:0"]) == {}
    assert score_scales("no-such-card@1", [card.hash]) == {}


def test_the_report_says_which_interval_each_estimate_uses_and_why(tmp_path: Path) -> None:
    """Issue 21 part 1: the t interval where the labels allow (60 labels of an unskewed score),
    the bounded one where they do not (fewer than 50), said in the JSON and the text."""
    db, order = judged_db(tmp_path, n=120)
    labelled = order[:60]
    calibration.import_labels(
        write_labels(tmp_path / "labels.csv", labelled), labeler="alice", db=db
    )
    report = calibration.estimate(db, card="reference", model=MODEL)
    mean = row(report, "mean correctness").result
    assert mean.interval == "t"
    assert "60 labels" in mean.interval_reason and "t interval" in mean.interval_reason
    rest = order[60:]
    judge_verdict = {i: "match" if truth(i) == "partial_match" else truth(i) for i in order}
    arrays = (
        [SCORES[truth(i)][0] for i in labelled],
        [SCORES[judge_verdict[i]][0] for i in labelled],
        [SCORES[judge_verdict[i]][0] for i in rest],
    )
    assert mean.corrected == corrected_mean(*arrays, finite_population=True, bounds=(1, 5))
    # The human-only column is the same interval without the judge (λ = 0).
    same = corrected_mean(*arrays, finite_population=True, interval="t", tuning=0.0, folds=1)
    assert (mean.human_only.low, mean.human_only.high) == (same.low, same.high)
    entry = next(e for e in report.to_dict()["estimates"] if e["name"] == "mean correctness")
    assert entry["interval"] == "t" and entry["interval_reason"] == mean.interval_reason
    text = report.as_text()
    assert "interval (mean correctness" in text and mean.interval_reason in text


def test_fewer_than_50_labels_get_the_bounded_interval_and_say_so(tmp_path: Path) -> None:
    db, order = judged_db(tmp_path, n=60)
    calibration.import_labels(write_labels(tmp_path / "l.csv", order[:30]), labeler="al", db=db)
    mean = row(calibration.estimate(db, card="reference", model=MODEL), "mean correctness")
    assert mean.result.interval == "bounded"
    assert "30 labels (fewer than 50)" in mean.result.interval_reason


def test_two_labelers_who_disagree_both_count_with_the_item_as_the_unit(tmp_path: Path) -> None:
    """Issue 21 part 4: items whose two labelers disagreed were dropped (18 of 40 lost)."""
    db, order = judged_db(tmp_path)
    labelled = order[:60]
    calibration.import_labels(write_labels(tmp_path / "a.csv", labelled), labeler="alice", db=db)
    # Bob reads every partly right answer as a mismatch, with a score of 1: 20 disagreements.
    path = tmp_path / "b.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item_id", "card", "model", "verdict", "correctness"])
        for i in labelled:
            said = "mismatch" if truth(i) == "partial_match" else truth(i)
            writer.writerow([i, "reference@1", MODEL, said, SCORES[said][0]])
    calibration.import_labels(path, labeler="bob", db=db)
    report = calibration.estimate(db, card="reference", model=MODEL)
    assert report.n_labeled == 60
    partial = row(report, "share partial_match").result
    assert partial.n_labeled == 60  # every item kept
    # Each disagreeing item is ½ partial_match, ½ mismatch: a sixth of the items overall.
    halves = sum(0.5 for i in labelled if truth(i) == "partial_match")
    assert partial.human_only.value == pytest.approx(halves / 60)
    mismatch = row(report, "share mismatch").result
    assert mismatch.human_only.value == pytest.approx(0.5)  # 20 wrong + 20 × ½
    mean = row(report, "mean correctness").result
    human = [SCORES[truth(i)][0] if truth(i) != "partial_match" else 2.0 for i in labelled]
    assert mean.human_only.value == pytest.approx(np.mean(human))  # (3 + 1) / 2 for those
    assert any("labelers of 20 item(s) disagree; every label counts" in n for n in report.notes)
