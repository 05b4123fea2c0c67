"""A results database for report tests, built the way a user builds one.

Reference items are judged through the real OpenAI SDK against a scripted transport by a
lenient judge (it reads a partly right answer as right); two audits are sampled through
`calibration.audits.audit.Audit` and their sheets filled in by "people" (alice on both, bob on the
second, slipping on a few items so there is a human ceiling); a pairwise judge that prefers long
answers compares three models, and some comparisons get winner labels through
`calibration.import_labels`. Some inputs and one model label are hostile HTML.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import httpx2

import calibration
from calibration.audits import Audit
from judgecards import compare_many
from tests.calibration.test_audit import fill_sheet
from tests.fakes.http import Script, openai_chat, reference_judgment
from tests.fakes.judges import openai_judge
from tests.fakes.server import tagged

MODEL = "openai:gpt-4o"
KINDS = ("right", "partly", "wrong")
TRUTH = {"right": "match", "partly": "partial_match", "wrong": "mismatch"}
SCORES = {"match": (5, 5), "partial_match": (3, 3), "mismatch": (1, 1)}
HOSTILE = (
    '<script>document.title="pwned"</script><img src=x onerror="document.title=1">'
    '<a href="javascript:alert(1)">click</a></textarea><iframe src="https://evil.example/">'
)
HOSTILE_MODEL = "<img src=x onerror=alert(1)>$x$"


def lenient(request: httpx2.Request) -> httpx2.Response:
    prompt = "\n".join(str(m["content"]) for m in json.loads(request.content)["messages"])
    kind = (tagged(prompt, "model_output") or "").split(":")[0]
    verdict = TRUTH["right" if kind == "partly" else kind]
    return openai_chat(reference_judgment(*SCORES[verdict], verdict=verdict))


def prefers_long(request: httpx2.Request) -> httpx2.Response:
    prompt = "\n".join(str(m["content"]) for m in json.loads(request.content)["messages"])
    a, b = tagged(prompt, "answer_a") or "", tagged(prompt, "answer_b") or ""
    winner = "tie" if len(a) == len(b) else ("A" if len(a) > len(b) else "B")
    return openai_chat(json.dumps({"reasoning": "Longer is better.", "winner": winner}))


def items(n: int) -> list[dict[str, Any]]:
    return [
        {"id": f"q{i}", "question": f"Question {i}? {HOSTILE if i % 3 == 1 else ''}",
         "gold_answer": f"Gold {i}", "model_output": f"{KINDS[i % 3]}: answer {i}"}
        for i in range(n)
    ]  # fmt: skip


def _person(slips: set[int]) -> Any:
    def label(row: dict[str, str]) -> dict[str, Any]:
        kind = row["model_output"].split(":")[0]
        verdict = TRUTH[kind]
        if int(row["item_id"][1:]) in slips:
            verdict = "match"
        correctness, completeness = SCORES[verdict]
        return {"verdict": verdict, "correctness": correctness, "completeness": completeness}

    return label


def judged(db: Path, *, n: int = 45) -> None:
    """Only results: no labels, no comparisons (the empty states)."""
    openai_judge(Script(default=lenient), "reference@1", db=db).score_many(items(n), concurrency=4)


def build(db: Path, work: Path) -> None:
    """The full database (see the module docstring)."""
    judged(db)
    with Audit(db, n_resamples=200) as audit:
        for audit_no, (n, seed, people) in enumerate(
            [(20, 1, {"alice": set()}), (45, 2, {"alice": set(), "bob": {2, 5, 8}})], start=1
        ):
            for labeler, slips in people.items():
                sheet = work / f"audit-{audit_no}-{labeler}.csv"
                drawn = (
                    audit.sample(card="reference@1", model=MODEL, n=n, seed=seed, sheet=sheet)
                    if labeler == "alice"
                    else None
                )
                if drawn is None:
                    audit.write_sheet(audit_no, sheet)
                fill_sheet(sheet, _person(slips))
                audit.ingest(sheet, labeler=labeler)
    pairs = []
    models = ["big", "mid", HOSTILE_MODEL]
    for i in range(36):
        a, b = models[i % 3], models[(i + 1) % 3]
        pairs.append({
            "id": f"p{i}", "question": f"Capital of France? {i}",
            "answer_a": "Paris" + " indeed" * (3 - i % 3), "answer_b": "Paris" + " indeed" * ((i + 1) % 3),
            "model_a": a, "model_b": b,
        })  # fmt: skip
    compared = compare_many(openai_judge(Script(default=prefers_long), "pairwise@1", db=db), pairs)
    labels = work / "winners.csv"
    with labels.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["result_id", "winner"])
        for i, c in enumerate(compared):
            if i % 2 == 0:
                writer.writerow([c.first_order.result_id, "A" if i % 4 == 0 else "B"])
    calibration.import_labels(labels, labeler="dana", db=db)
