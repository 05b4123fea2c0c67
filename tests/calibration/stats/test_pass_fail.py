"""`audit report` reads a two-valued judge as TPR/TNR, a readiness line and a corrected share.

A pass-fail judge on the real OpenAI SDK over a scripted transport judges 200 answers; each
answer's text says what the judge replies and what people say, so every rate is known.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from calibration import Audit, judge_rates, rogan_gladen
from calibration.stats.pass_fail import NOT_MATCH, binary_labels
from judgecards.cli import cli
from judgecards.storage import Store
from tests.builders import pass_fail_judged as judged


def test_audit_report_shows_tpr_tnr_readiness_and_the_corrected_share(tmp_path: Path) -> None:
    db, human = judged(tmp_path)
    with Store(db) as store, Audit(store) as audit:
        drawn = audit.sample(
            card="pass-fail@1", model="openai:judge", n=100, seed=4, sheet=tmp_path / "s.jsonl"
        )
        rows = [json.loads(line) for line in (tmp_path / "s.jsonl").read_text().splitlines()]
        (tmp_path / "s.jsonl").write_text(
            "".join(json.dumps({**r, "verdict": human[r["result_id"]]}) + "\n" for r in rows)
        )
        audit.ingest(tmp_path / "s.jsonl", labeler="ann")
        report = audit.report(card="pass-fail", min_tpr=0.6, min_tnr=0.95)
        unknown = audit.report(card="pass-fail", positive="maybe")
        items = audit.repository.audit_items(drawn.audit.id)
        labelled = {item.result_id for item in items}
        stored = {r.id: r.verdict for r, _ in store.results(card="pass-fail@1")}
    assert unknown.audits[0].pass_fail is None
    assert any("positive 'maybe' is not a value" in note for note in unknown.notes)
    view = report.audits[0].pass_fail
    assert view is not None and view.field == "verdict" and view.rule == "two-valued"
    people = [human[rid] for rid in sorted(labelled)]
    said = [stored[rid] for rid in sorted(labelled)]
    expected = judge_rates(people, said, positive="fail")
    assert view.rates.tpr == expected.tpr and view.rates.tnr == expected.tnr
    rest = [v for rid, v in stored.items() if rid not in labelled]
    assert view.corrected == rogan_gladen(people, said, rest, positive="fail")
    assert view.ppi is not None and view.corrected is not None and view.corrected.n == 200
    # The truth (60 of 200 failed) is inside both intervals.
    assert view.corrected.low <= 0.3 <= view.corrected.high
    text = report.as_text()
    assert "pass/fail view of verdict (two-valued; positive fail)" in text
    assert "of the answers people failed, the judge failed" in text
    assert "TNR ≥ 95%" in text and "not ready" in text  # TNR 0.9 cannot show ≥ 95%
    data = report.to_dict()["audits"][0]["pass_fail"]
    assert data["positive"] == "fail" and data["ready"] is False
    assert data["tpr"]["n"] == sum(p == "fail" for p in people)
    assert data["rogan_gladen"]["value"] == pytest.approx(view.corrected.value)

    # The command line: thresholds as options, the same view in --json.
    out = CliRunner().invoke(
        cli, ["audit", "report", "--card", "pass-fail", "--min-tpr", "0.6", "--json",
              "--db", str(db)],
    )  # fmt: skip
    assert out.exit_code in (0, 1), out.output  # the kappa gate decides the exit code
    shown = json.loads(out.stdout)["audits"][0]["pass_fail"]
    assert shown["min_tpr"] == 0.6 and shown["readiness"].startswith("of the answers people")


def test_how_verdicts_become_two() -> None:
    rule, positive, to_binary = binary_labels("verdict", ("match", "partial_match", "mismatch"))  # type: ignore[misc]
    assert positive == NOT_MATCH and "partial_match" in rule
    assert [to_binary(v) for v in ("match", "partial_match", "mismatch")] == [
        "match",
        NOT_MATCH,
        NOT_MATCH,
    ]
    _, positive, to_binary = binary_labels("winner", ("A", "B", "tie"))  # type: ignore[misc]
    assert positive == "A" and to_binary("tie") is None
    assert binary_labels("verdict", ("pass", "fail"))[1] == "fail"  # type: ignore[index]
    assert binary_labels("score", ()) is None
    assert binary_labels("verdict", ("good", "ok", "bad")) is None
