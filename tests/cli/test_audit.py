"""A whole audit cycle through the ``judgecards`` command, end to end.

``judgecards score`` judges items with the real openai SDK against a loopback fake server whose
judge reads each answer's kind; then ``audit sample`` writes a sheet, a "human" fills it in
programmatically, ``audit ingest`` stores it, and ``audit report`` gates on it: exit 0 for the
honest judge, exit 1 once the provider silently swaps in a worse model under the same name.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from judgecards.errors import UncalibratedJudgeWarning
from tests.builders import (
    KIND,
    MODEL,
    SCORES,
    TRUTH,
    fill_sheet,
    read_sheet,
    run_cli,
    truthful,
    write_jsonl,
)
from tests.fakes.http import reference_judgment
from tests.fakes.server import FakeServer, tagged

RESAMPLES = ["--resamples", "500"]


def judge_reply(seen_as: Callable[[str], str] = lambda kind: kind) -> Callable[[str], str]:
    """The fake judge: scores an answer by its kind (``right: ...``), as ``seen_as`` sees it."""

    def reply(prompt: str) -> str:
        kind = (tagged(prompt, "model_output") or "").split(":")[0]
        verdict = TRUTH[seen_as(kind)]
        correctness, completeness = SCORES[verdict]
        return reference_judgment(correctness, completeness, verdict=verdict)

    return reply


HONEST = judge_reply()
# The provider's silent update: right and wrong answers now look the other way round.
DRIFTED = judge_reply(lambda kind: {"right": "wrong", "wrong": "right"}.get(kind, kind))


@pytest.fixture
def server(serve: Callable[..., FakeServer]) -> FakeServer:
    return serve(reply=HONEST)


class Cli:
    """``judgecards ... --db DB`` through click's runner."""

    def __init__(self, db: Path) -> None:
        self.db = db

    def __call__(self, *args: Any) -> Result:
        return run_cli(*args, "--db", self.db)


def audit_items(n: int = 60) -> list[dict[str, str]]:
    kinds = list(KIND.values())
    return [
        {"id": f"q{i}", "question": f"Question {i}?", "gold_answer": f"Gold {i}",
         "model_output": f"{kinds[i % 3]}: answer {i}"}
        for i in range(n)
    ]  # fmt: skip


def test_a_whole_audit_cycle_gates_on_judge_drift(tmp_path: Path, server: FakeServer) -> None:
    run = Cli(tmp_path / "cycle.db")
    items = write_jsonl(tmp_path / "items.jsonl", audit_items())
    score = ["score", "--card", "reference@1", "--model", MODEL, items,
             "--output", tmp_path / "out.jsonl", "--base-url", server.base_url]  # fmt: skip

    # 1. Score with a judge that was never calibrated: Judge says so.
    with pytest.warns(UncalibratedJudgeWarning, match="never been calibrated"):
        result = run(*score)
    assert result.exit_code == 0, result.output
    assert server.requests == 60

    # 2. Draw a stratified spot-check and its labelling sheet.
    sheet = tmp_path / "audit-1.csv"
    result = run("audit", "sample", "--card", "reference", "--model", MODEL, "--n", 45, "--stratify", "verdict",
                 "--seed", 7, "--sheet", sheet)  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "Audit #1: 45 of 60 results of reference@1" in result.output
    assert "match 15/20  mismatch 15/20  partial_match 15/20" in result.output
    assert (
        "verdict (one of match, partial_match, mismatch); correctness (an integer from 1 to 5)"
        in result.output
    )
    rows = read_sheet(sheet)
    assert len(rows) == 45 and not any(row["verdict"] or row["correctness"] for row in rows)
    assert "decision_basis" not in sheet.read_text() and "match" not in sheet.read_text()

    # 3. A careful human fills it in; 4. it is ingested.
    fill_sheet(sheet, truthful)
    result = run("audit", "ingest", sheet, "--labeler", "alice")
    assert result.exit_code == 0, result.output
    assert "Audit #1: stored 180 label(s) by alice from 45 of 45 row(s)" in result.output
    # It says what it is doing while it works (issue 22 item 23), on stderr.
    assert "audit ingest: reading and storing the labels of audit-1.csv..." in result.stderr
    assert "audit ingest: measuring agreement on audit #1: done in " in result.stderr

    # 5. The report passes the gate.
    result = run("audit", "report", "--card", "reference", *RESAMPLES)
    assert result.exit_code == 0, result.output
    assert "PASS  reference · openai:gpt-4o" in result.output
    assert "audit report: measuring agreement and kappa per audit (" in result.stderr
    assert "1.000 [1.000, 1.000]" in result.output

    # The card version now carries its calibration, and Judge stops warning about it.
    result = run("cards", "list")
    assert result.exit_code == 0, result.output
    assert (
        "openai:gpt-4o: calibrated, kappa 1.000 [1.000, 1.000] n=45" in result.output
        and "(audit #1)" in result.output
    )

    # 6. The provider silently updates the model behind the same name; results are re-judged.
    server.reply = DRIFTED
    with warnings.catch_warnings():
        warnings.simplefilter("error", UncalibratedJudgeWarning)
        result = run(*score, "--no-cache")
    assert result.exit_code == 0, result.output

    # 7. The next spot-check, labelled by someone else, catches it.
    sheet = tmp_path / "audit-2.csv"
    result = run(
        "audit",
        "sample",
        "--card",
        "reference@1",
        "--model",
        MODEL,
        "--n",
        45,
        "--seed",
        8,
        "--sheet",
        sheet,
    )
    assert result.exit_code == 0, result.output
    fill_sheet(sheet, truthful)
    assert run("audit", "ingest", sheet, "--labeler", "bob").exit_code == 0

    result = run("audit", "report", *RESAMPLES)
    assert result.exit_code == 1, result.output
    assert "FAIL  reference · openai:gpt-4o: audit #2" in result.output
    assert "significantly below baseline #1" in result.output
    assert "disagreements on verdict" in result.output

    result = run("audit", "report", "--json", *RESAMPLES)
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["passed"] is False
    assert [a["id"] for a in report["audits"]] == [1, 2]
    # Drift flips right and wrong but keeps partial, so the drifted judge's kappa is near 0 (about
    # -0.05 to 0.1 depending on the sample, and the sample depends on the result ids, which name
    # the fake server's port): far below the gate, and significantly below the baseline.
    assert (
        report["audits"][1]["kappa"]["value"] < 0.2
        and report["audits"][1]["vs_baseline"]["high"] < 0
    )
    # Audit #1's results were overwritten by the --no-cache run, but it keeps what the judge said then.
    assert report["audits"][0]["kappa"]["value"] == 1.0
    assert report["gate"][0]["audit_id"] == 2 and report["gate"][0]["baseline_id"] == 1
    # Every disagreement the humans should read is listed, judge verdict vs human.
    disagreements = report["audits"][1]["disagreements"]
    assert disagreements and all(d["judge"] != d["human"]["bob"] for d in disagreements)

    result = run("audit", "list")
    assert (
        result.exit_code == 0 and "#2" in result.output and "(latest calibration)" in result.output
    )


def test_anchor_set_reruns_catch_a_silent_model_update(tmp_path: Path, server: FakeServer) -> None:
    run = Cli(tmp_path / "anchor.db")
    items = write_jsonl(tmp_path / "items.jsonl", audit_items(30))
    with pytest.warns(UncalibratedJudgeWarning):
        result = run("score", "--card", "reference@1", "--model", MODEL, items,
                     "--output", tmp_path / "out.jsonl", "--base-url", server.base_url)  # fmt: skip
    assert result.exit_code == 0, result.output
    sheet = tmp_path / "a.jsonl"
    assert (
        run(
            "audit",
            "sample",
            "--card",
            "reference",
            "--model",
            MODEL,
            "--n",
            30,
            "--seed",
            1,
            "--sheet",
            sheet,
        ).exit_code
        == 0
    )
    rows = [json.loads(line) for line in sheet.read_text().splitlines()]
    assert all(row["verdict"] is None for row in rows)
    for row in rows:  # a human filling a JSONL sheet
        row.update({k: v for k, v in truthful(row).items() if k == "verdict"})
    sheet.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    assert run("audit", "ingest", sheet, "--labeler", "alice").exit_code == 0

    result = run(
        "audit", "anchor", "create", "core", "--from-audit", 1, "--description", "hand-checked"
    )
    assert result.exit_code == 0, result.output
    assert "Anchor set core: 30 items of reference from audit #1" in result.output
    assert "core" in run("audit", "anchor", "list").output

    rerun = [
        "audit",
        "rerun",
        "--anchor-set",
        "core",
        "--model",
        MODEL,
        "--base-url",
        server.base_url,
        *RESAMPLES,
    ]
    before = server.requests
    result = run(*rerun, "--max-flip-rate", 0.1)
    assert result.exit_code == 0, result.output
    assert server.requests == before + 30  # asked again, not served from the cache
    assert "flip rate 0.000" in result.output and "PASS" in result.output

    server.reply = DRIFTED
    result = run(*rerun, "--max-flip-rate", 0.1, "--json")
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    assert data["kind"] == "rerun" and data["anchor_set"] == "core" and data["passed"] is False
    assert data["drift"]["previous_audit"] == 2
    assert data["drift"]["flip_rate"]["value"] == pytest.approx(20 / 30)  # right and wrong swapped
    assert data["drift"]["delta_kappa"]["value"] < 0
    assert any("flip rate" in failure for failure in data["failures"])


def test_cli_errors_name_the_place_and_exit_2(tmp_path: Path, server: FakeServer) -> None:
    run = Cli(tmp_path / "errors.db")
    for command in (("audit", "report"), ("audit", "list"), ("audit", "anchor", "list")):
        result = run(*command)  # no database yet: an error, and none is created
        assert result.exit_code == 2 and "errors.db: no such file" in result.output
    assert not (tmp_path / "errors.db").exists()

    items = write_jsonl(tmp_path / "items.jsonl", audit_items(6))
    with pytest.warns(UncalibratedJudgeWarning):
        run("score", "--card", "reference@1", "--model", MODEL, items,
            "--output", tmp_path / "out.jsonl", "--base-url", server.base_url)  # fmt: skip
    result = run("audit", "report")
    assert result.exit_code == 2 and "no audits" in result.output
    result = run("audit", "sample", "--card", "reference", "--model", "openai:nobody")
    assert result.exit_code == 2 and "no successful results" in result.output
    sheet = tmp_path / "s.csv"
    assert (
        run(
            "audit",
            "sample",
            "--card",
            "reference",
            "--model",
            MODEL,
            "--n",
            6,
            "--seed",
            0,
            "--sheet",
            sheet,
        ).exit_code
        == 0
    )
    first = read_sheet(sheet)[0]["result_id"]
    fill_sheet(
        sheet,
        lambda row: (
            {"verdict": "maybe", "correctness": 7} if row["result_id"] == first else truthful(row)
        ),
    )
    result = run("audit", "ingest", sheet, "--labeler", "alice")
    assert result.exit_code == 2
    assert (
        f"{sheet}:2, field 'verdict': must be one of match, partial_match, mismatch; got 'maybe'"
        in result.output
    )
    assert f"{sheet}:2, field 'correctness': out of range" in result.output
    result = run("audit", "ingest", sheet, "--labeler", "alice", "--skip-invalid")
    assert result.exit_code == 0
    assert "from 5 of 6 row(s)" in result.output and "Skipped 2 problem(s)" in result.output


def test_a_sheet_round_trips_a_lone_carriage_return_and_an_id_starting_with_tab(
    tmp_path: Path,
) -> None:
    """Issue 22 item 4: a lone ``\\r`` in a value was written unquoted (10 items read back as
    13 records, ingest refused the sheet), and an item id starting with TAB came back
    stripped (exit 2, nothing imported)."""
    import csv
    from datetime import datetime, timedelta, timezone

    from calibration.labels import open_store
    from judgecards.cards import load_card
    from judgecards.storage import JudgeResult

    run = Cli(tmp_path / "cr.db")
    card = load_card("reference@1")
    with open_store(run.db) as store:
        for i in range(10):
            result = JudgeResult(
                id=f"r{i:03d}",
                item_id="\tid0" if i == 0 else f"=i{i}",
                status="ok",
                verdict="match",
                model_verdict="match",
                scores={"correctness": 5, "completeness": 5, "style_fidelity": 5},
                output={"delta": "d", "decision_basis": "b"},
                card=card.ref,
                card_hash=card.hash,
                model=MODEL,
                created_at=datetime(2025, 5, 1, tzinfo=timezone.utc) + timedelta(seconds=i),
            )
            inputs = {
                "question": f"Q{i}?\rsecond line",
                "gold_answer": "\rG",
                "model_output": f"a\r\n{i}\r",
            }
            store.save(result, inputs=inputs, params={})
    sheet = tmp_path / "sheet.csv"
    sampled = run(
        "audit",
        "sample",
        "--card",
        "reference@1",
        "--model",
        MODEL,
        "--n",
        10,
        "--seed",
        1,
        "--sheet",
        sheet,
    )
    assert sampled.exit_code == 0, sampled.output
    with sheet.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, strict=True))
    assert len(rows) == 10
    assert {row["question"] for row in rows} == {f"Q{i}?\rsecond line" for i in range(10)}
    assert {row["gold_answer"] for row in rows} == {"'\rG"}  # a formula start, escaped
    assert "'\tid0" in {row["item_id"] for row in rows}
    # A spreadsheet saves it back with CRLF line ends and every cell quoted.
    for row in rows:
        row.update(verdict="match", correctness="5", completeness="5", style_fidelity="4")
    with sheet.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), quoting=csv.QUOTE_ALL)
        writer.writeheader()
        writer.writerows(rows)
    ingested = run("audit", "ingest", sheet, "--labeler", "al")
    assert ingested.exit_code == 0, ingested.output
    assert "stored 40 label(s) by al from 10 of 10 row(s)" in ingested.output
    with open_store(run.db) as store:
        stored = store.query("SELECT item_id, count(*) FROM labels GROUP BY item_id")
    assert dict(stored)["\tid0"] == 4 and len(stored) == 10
