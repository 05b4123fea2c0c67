"""What tests build their inputs from: the CLI runner, item and JSONL writers, stored results and
labelled audits, the judges and labels of the cascade tests, the shared public data sets, and a
running server.

One module so that a helper exists once and no test module imports another (tests/test_layers.py
checks it): a test imports from here, from ``tests.fakes`` (fake providers and people) and gets
fixtures from conftest.py files. Everything here goes through the real code paths (the real
store, the real CLI, real `Judge` objects over scripted transports).
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import cache
from pathlib import Path
from typing import Any

import httpx2
import numpy as np
import pytest
import yaml
from click.testing import CliRunner, Result
from numpy.typing import NDArray

import calibration
from calibration import import_labels
from calibration.audits import Audit
from calibration.labels import open_store
from judgecards import Judge, compare_many
from judgecards.cards import load_card
from judgecards.cli import cli
from judgecards.pairwise.compare import ComparisonResult
from judgecards.storage import JudgeResult, Store
from judgecards.storage.export import DATASETTE_METADATA
from tests.fakes.batch_server import BatchFake
from tests.fakes.http import Script, openai_chat, reference_judgment, token_logprobs
from tests.fakes.judges import openai_judge
from tests.fakes.server import tagged

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"
"""Hand-written inputs: cards (good, bad, a user's), provider replies, importer files."""

PRICED_MODEL = "openai:fake-judge"
"""A model the `prices` fixture gives a price: the fake server answers for any model name."""


def shared_data_dir() -> Path:
    """The public evaluation data: JUDGECARDS_SHARED_DATA, else ``../shared/data`` beside the
    checkout (see its README)."""
    configured = os.environ.get("JUDGECARDS_SHARED_DATA")
    return Path(configured) if configured else REPO.parent / "shared" / "data"


# ---------------------------------------------------------------- the CLI and its files


def run_cli(
    *args: object,
    env: dict[str, str | None] | None = None,
    input: str | None = None,
    catch_exceptions: bool = True,
) -> Result:
    """``judgecards ARGS`` in-process (Click's runner); arguments may be paths or numbers.

    ``result.stdout`` is stdout alone and ``result.output`` stdout and stderr interleaved, as a
    terminal shows them.
    """
    runner = CliRunner(env=env)
    return runner.invoke(
        cli, [str(a) for a in args], input=input, catch_exceptions=catch_exceptions
    )


def cli_json(
    *args: object, env: dict[str, str | None] | None = None, exit_codes: tuple[int, ...] = (0,)
) -> Any:
    """Run ``judgecards ARGS`` (which should include ``--json``), require one of ``exit_codes``
    (a gate that fails exits 1 with its report), and parse stdout only: warnings and progress on
    stderr must not break the document."""
    result = run_cli(*args, env=env)
    assert result.exit_code in exit_codes, result.output
    return json.loads(result.stdout)


def write_jsonl(path: Path, rows: Sequence[dict[str, Any] | str]) -> Path:
    """One JSON object per line; a string row is written as it is (for malformed lines)."""
    text = "".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows)
    path.write_text(text, encoding="utf-8")
    return path


def write_items(path: Path, n: int, prefix: str = "i") -> Path:
    """``n`` reference items (`qa_items`) as JSONL."""
    return write_jsonl(path, qa_items(n, prefix))


def from_confusion(
    confusion: list[list[int]], labels: list[object]
) -> tuple[list[object], list[object]]:
    """(judge, human) label lists with confusion[i][j] items human=labels[i], judge=labels[j],
    so hand-worked examples stay readable."""
    judge: list[object] = []
    human: list[object] = []
    for i, row in enumerate(confusion):
        for j, count in enumerate(row):
            human += [labels[i]] * count
            judge += [labels[j]] * count
    return judge, human


# ---------------------------------------------------------------- waiting on a readiness signal

SAFETY_CAP = 600.0
"""Seconds after which a wait for a signal gives up. Only a hang gets there (a busy 2-core
machine with a second test run beside it answers in seconds): no test waits on it normally."""


def wait_for(
    condition: Callable[[], object],
    *,
    alive: Callable[[], bool] | None = None,
    what: str = "the condition",
    poll: float = 0.02,
) -> None:
    """Return once ``condition()`` holds: a readiness signal (rows stored, a request seen, a line
    printed), never a time limit a loaded machine could miss.

    It fails at once when ``alive()`` turns false without the condition (the process or thread
    that would have made it hold has ended), and after `SAFETY_CAP` seconds (a hang).
    """
    give_up = time.monotonic() + SAFETY_CAP
    while not condition():
        if alive is not None and not alive():
            assert condition(), f"{what}: never happened (what would make it happen has ended)"
            return
        assert time.monotonic() < give_up, f"{what}: not after {SAFETY_CAP:g} s (a hang)"
        time.sleep(poll)


# ---------------------------------------------------------------- stored reference results, audit sheets and labelled audits

MODEL = "openai:gpt-4o"


VERDICTS = ("match", "partial_match", "mismatch")


SCORES = {"match": (5, 5), "partial_match": (3, 3), "mismatch": (1, 1)}


KIND = {"match": "right", "partial_match": "partly", "mismatch": "wrong"}
TRUTH = {kind: verdict for verdict, kind in KIND.items()}
"""The verdict an answer of each kind deserves (``"partly: ..."`` is a partial match)."""


T0 = datetime(2025, 5, 1, tzinfo=timezone.utc)


def save_results(
    store: Store,
    verdicts: list[str],
    *,
    model: str = MODEL,
    prefix: str = "i",
    created_at: datetime = T0,
    order: list[int] | None = None,
) -> list[JudgeResult]:
    """Judged ``reference`` results with these verdicts, written through the real store.

    Item ``i``'s answer is ``"<right|partly|wrong>: answer i"``, the kind that matches its
    verdict, so a fake judge (and a fake human) can tell the truth from the inputs.
    """
    card = load_card("reference@1")
    results = []
    for i in order if order is not None else range(len(verdicts)):
        verdict = verdicts[i]
        correctness, completeness = SCORES[verdict]
        result = JudgeResult(
            id=f"{prefix}{i:03d}",
            item_id=f"{prefix}{i}",
            status="ok",
            verdict=verdict,
            model_verdict=verdict,
            scores={"correctness": correctness, "completeness": completeness, "style_fidelity": 5},
            card=card.ref,
            card_hash=card.hash,
            model=model,
            created_at=created_at + timedelta(seconds=i),
        )
        inputs = {
            "question": f"Question {i}?",
            "gold_answer": f"Gold {i}",
            "model_output": f"{KIND[verdict]}: answer {i}",
        }
        store.save(result, inputs=inputs, params={})
        results.append(result)
    return results


def truthful(row: dict[str, str]) -> dict[str, Any]:
    """A careful human: labels the answer by what it is."""
    verdict = TRUTH[row["model_output"].split(":")[0]]
    correctness, completeness = SCORES[verdict]
    return {
        "verdict": verdict,
        "correctness": correctness,
        "completeness": completeness,
        "style_fidelity": 5,
    }


def read_sheet(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def fill_sheet(path: Path, label: Callable[[dict[str, str]], dict[str, Any]]) -> None:
    """Fill a CSV sheet as a human would: ``label(row)`` gives the cells to fill in."""
    rows = read_sheet(path)
    for row in rows:
        row.update({key: str(value) for key, value in label(row).items()})
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def labelled_audit(
    api: Audit,
    tmp_path: Path,
    verdicts: list[str],
    human: dict[str, str],
    *,
    prefix: str,
    created_at: datetime,
    labeler: str = "alice",
) -> int:
    """Store results, sample all of them, and ingest a sheet with these human verdicts."""
    save_results(api.store, verdicts, prefix=prefix, created_at=created_at)
    drawn = api.sample(
        card="reference@1",
        model=MODEL,
        n=len(verdicts),
        seed=1,
        since=created_at,
        sheet=tmp_path / f"{prefix}-{labeler}.csv",
    )
    assert drawn.sheet is not None

    def label(row: dict[str, str]) -> dict[str, Any]:
        verdict = human[row["result_id"]]
        correctness, completeness = SCORES[verdict]
        return {"verdict": verdict, "correctness": correctness, "completeness": completeness}

    fill_sheet(drawn.sheet, label)
    api.ingest(drawn.sheet, labeler=labeler)
    return drawn.audit.id


# ---------------------------------------------------------------- more stored results


def stored_results(
    store: Store, n: int = 6, *, model: str = MODEL, prefix: str = "q"
) -> list[JudgeResult]:
    """``n`` judged ``reference`` results written through the real store (ids r0, r1, ...)."""
    card = load_card("reference@1")
    results = []
    for i in range(n):
        result = JudgeResult(
            id=f"{prefix}-r{i}",
            item_id=f"{prefix}{i}",
            status="ok",
            verdict="match",
            scores={"correctness": 5, "completeness": 4, "style_fidelity": 5},
            card=card.ref,
            card_hash=card.hash,
            model=model,
        )
        store.save(
            result,
            inputs={"question": f"Q{i}?", "gold_answer": f"G{i}", "model_output": f"A{i}"},
            params={},
        )
        results.append(result)
    return results


# ---------------------------------------------------------------- stored pairwise results

SECRET_REASON = "JUDGE-REASON-7f3a"


def pairwise_results(store: Store, winners: list[str]) -> None:
    card = load_card("pairwise@1")
    for i, winner in enumerate(winners):
        result = JudgeResult(
            id=f"p{i:03d}",
            item_id=f"pair{i}",
            status="ok",
            verdict=winner,
            model_verdict=winner,
            output={"winner": winner},
            card=card.ref,
            card_hash=card.hash,
            model=MODEL,
            created_at=T0 + timedelta(seconds=i),
        )
        inputs = {"question": f"Q{i}?", "answer_a": f"left {i}", "answer_b": f"right {i}"}
        store.save(result, inputs=inputs, params={})


# ---------------------------------------------------------------- results to label in the browser (some inputs hostile HTML)

LABELING_HOSTILE = [
    '<script>window.__pwned = 1; alert("script")</script>',
    "<img src=x onerror=\"window.__pwned = 2; alert('img')\">",
    "<a href=\"javascript:alert('link')\">click me</a>",
    "</textarea><script>alert('textarea')</script><textarea>",
    '<img src="http://evil.example/pixel.png"><link rel="stylesheet" href="http://evil.example/x.css">',
    "<style>body { display: none }</style>" + "W" * 5000,
]


LABELING_JUDGE = [
    "match",
    "match",
    "partial_match",
    "mismatch",
    "mismatch",
    "match",
    "partial_match",
    "mismatch",
    "match",
    "partial_match",
]


def seed_labeling_results(db: Path) -> None:
    card = load_card("reference@1")
    with open_store(db) as store:
        for i, verdict in enumerate(LABELING_JUDGE):
            correctness, completeness = SCORES[verdict]
            result = JudgeResult(
                id=f"r{i:03d}",
                item_id=f"i{i}",
                status="ok",
                verdict=verdict,
                model_verdict=verdict,
                raw_reply=SECRET_REASON,
                scores={
                    "correctness": correctness,
                    "completeness": completeness,
                    "style_fidelity": 5,
                },
                output={"delta": SECRET_REASON, "decision_basis": SECRET_REASON},
                card=card.ref,
                card_hash=card.hash,
                model=MODEL,
                created_at=T0 + timedelta(seconds=i),
            )
            output = LABELING_HOSTILE[i] if i < len(LABELING_HOSTILE) else f"answer {i}"
            inputs = {
                "question": f"Question {i}?",
                "gold_answer": f"Gold {i}",
                "model_output": output,
            }
            store.save(result, inputs=inputs, params={})


# ---------------------------------------------------------------- a pass/fail judge's 200 judgments


def pass_fail_reply(request: httpx2.Request) -> httpx2.Response:
    prompt = json.loads(request.content)["messages"][-1]["content"]
    match = re.search(r"judge=(pass|fail)", prompt)
    assert match, prompt
    verdict = match.group(1)
    return openai_chat(json.dumps({"critique": "Checked.", "verdict": verdict}))


def pass_fail_answers() -> list[dict[str, Any]]:
    """200 pass_fail_answers; people fail 60. The judge fails 51 of those (TPR 0.85) and 14 of the 140
    people pass (TNR 0.9)."""
    rows = []
    for i in range(200):
        human = "fail" if i < 60 else "pass"
        judge = ("fail" if i < 51 else "pass") if i < 60 else ("fail" if i < 74 else "pass")
        rows.append(
            {
                "id": f"a{i}",
                "criterion": "No made-up citations.",
                "question": f"Q{i}?",
                "answer": f"Answer {i} human={human} judge={judge}",
            }
        )
    return rows


def pass_fail_judged(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The database with the 200 judgments, and people's verdict per result id."""
    db = tmp_path / "pf.db"
    people = {
        a["id"]: "fail" if "human=fail" in a["answer"] else "pass" for a in pass_fail_answers()
    }
    with Store(db) as store:
        judge = openai_judge(
            Script(default=pass_fail_reply), "pass-fail@1", model="judge", db=store
        )
        results = judge.score_many(pass_fail_answers())
    return db, {r.id: people[str(r.item_id)] for r in results}


# ---------------------------------------------------------------- a results database for the report (how a user builds one)

ANSWER_KINDS = ("right", "partly", "wrong")


REPORT_HOSTILE = (
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


def report_items(n: int) -> list[dict[str, Any]]:
    return [
        {
            "id": f"q{i}",
            "question": f"Question {i}? {REPORT_HOSTILE if i % 3 == 1 else ''}",
            "gold_answer": f"Gold {i}",
            "model_output": f"{ANSWER_KINDS[i % 3]}: answer {i}",
        }
        for i in range(n)
    ]


def _report_person(slips: set[int]) -> Any:
    def label(row: dict[str, str]) -> dict[str, Any]:
        kind = row["model_output"].split(":")[0]
        verdict = TRUTH[kind]
        if int(row["item_id"][1:]) in slips:
            verdict = "match"
        correctness, completeness = SCORES[verdict]
        return {"verdict": verdict, "correctness": correctness, "completeness": completeness}

    return label


def report_judged(db: Path, *, n: int = 45) -> None:
    """Only results: no labels, no comparisons (the empty states)."""
    openai_judge(Script(default=lenient), "reference@1", db=db).score_many(
        report_items(n), concurrency=4
    )


def report_database(db: Path, work: Path) -> None:
    """A results database for report tests, built the way a user builds one.

    Reference items are judged through the real OpenAI SDK against a scripted transport by a
    lenient judge (it reads a partly right answer as right); two audits are sampled through
    `calibration.audits.audit.Audit` and their sheets filled in by "people" (alice on both, bob on the
    second, slipping on a few items so there is a human ceiling); a pairwise judge that prefers
    long answers compares three models, and some comparisons get winner labels through
    `calibration.import_labels`. Some inputs and one model label are hostile HTML.
    """
    report_judged(db)
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
                fill_sheet(sheet, _report_person(slips))
                audit.ingest(sheet, labeler=labeler)
    pairs = []
    models = ["big", "mid", HOSTILE_MODEL]
    for i in range(36):
        a, b = models[i % 3], models[(i + 1) % 3]
        pairs.append(
            {
                "id": f"p{i}",
                "question": f"Capital of France? {i}",
                "answer_a": "Paris" + " indeed" * (3 - i % 3),
                "answer_b": "Paris" + " indeed" * ((i + 1) % 3),
                "model_a": a,
                "model_b": b,
            }
        )
    compared = compare_many(openai_judge(Script(default=prefers_long), "pairwise@1", db=db), pairs)
    labels = work / "winners.csv"
    with labels.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["result_id", "winner"])
        for i, c in enumerate(compared):
            if i % 2 == 0:
                writer.writerow([c.first_order.result_id, "A" if i % 4 == 0 else "B"])
    calibration.import_labels(labels, labeler="dana", db=db)


# ---------------------------------------------------------------- judged items and their true labels (estimates)


def kind_items(n: int) -> list[dict[str, Any]]:
    return [
        {
            "id": f"q{i}",
            "question": f"Question {i}?",
            "gold_answer": f"Gold {i}",
            "model_output": f"{ANSWER_KINDS[i % 3]}: answer {i}",
        }
        for i in range(n)
    ]


def true_verdict(item_id: str) -> str:
    return TRUTH[ANSWER_KINDS[int(item_id[1:]) % 3]]


def write_labels(path: Path, item_ids: list[str]) -> Path:
    """A labels CSV as a careful human fills it: true verdict and correctness, by item id."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item_id", "card", "model", "verdict", "correctness"])
        for item_id in item_ids:
            writer.writerow(
                [
                    item_id,
                    "reference@1",
                    MODEL,
                    true_verdict(item_id),
                    SCORES[true_verdict(item_id)][0],
                ]
            )
    return path


def judged_db(tmp_path: Path, n: int = 90) -> tuple[Path, list[str]]:
    """Judge ``n`` items with the lenient judge; the store's order of item ids."""
    judge = openai_judge(Script(default=lenient))
    judge.score_many(kind_items(n), concurrency=4)
    db = Path(judge.store.path)
    with Store(db, read_only=True) as store:
        order = [r.item_id or "" for r, _ in store.results(card="reference@1", model=MODEL)]
    return db, order


# ---------------------------------------------------------------- a single-item cascade: judges, items and labels

CASCADE_HUMAN = 5  # every item's human rating


def cascade_reply_for(model: str) -> Any:
    """A reply function: the rating and its probability this model gives, read from the cascade_item."""

    def reply(request: httpx2.Request) -> httpx2.Response:
        prompt = json.loads(request.content)["messages"][-1]["content"]
        match = re.search(rf"{model}=(\d)@([0-9.]+)", prompt)
        assert match, prompt
        rating, p = match.group(1), float(match.group(2))
        text = f"Fine.\nRating: [[{rating}]]"
        other = "3" if rating != "3" else "4"
        alternatives = {text.index(rating, 8): [(rating, math.log(p)), (other, math.log(1 - p))]}
        return openai_chat(text, logprobs=token_logprobs(text, alternatives))

    return reply


def cascade_item(item_id: str, **said: tuple[int, float]) -> dict[str, Any]:
    # The id in the text keeps the prompts apart (identical prompts share one cached reply).
    answer = " ".join([item_id, *(f"{model}={rating}@{p}" for model, (rating, p) in said.items())])
    return {"id": item_id, "question": "Rate it.", "answer": answer}


def cascade_judges(store: Store) -> tuple[Judge, Judge, Script, Script]:
    cheap_script, strong_script = (
        Script(default=cascade_reply_for("cheap")),
        Script(default=cascade_reply_for("strong")),
    )
    cheap = openai_judge(cheap_script, "single@1", model="cheap", db=store, top_logprobs=5)
    strong = openai_judge(strong_script, "single@1", model="strong", db=store, top_logprobs=5)
    return cheap, strong, cheap_script, strong_script


def cascade_calibration_items() -> list[dict[str, Any]]:
    """60 items. cheap: right and sure (0.95) on 25, wrong and unsure (0.55) on 35.
    strong: right and sure (0.99) on 55; wrong and unsure (0.6) on 5."""
    items = []
    for i in range(60):
        cheap = (CASCADE_HUMAN, 0.95) if i < 25 else (CASCADE_HUMAN + 1, 0.55)
        strong = (CASCADE_HUMAN, 0.99) if i < 55 else (CASCADE_HUMAN + 1, 0.6)
        items.append(cascade_item(f"c{i}", cheap=cheap, strong=strong))
    return items


def cascade_label(store: Store, tmp_path: Path, results: list[JudgeResult], name: str) -> None:
    """Import a human rating for each result, as a labels file would bring them in."""
    path = tmp_path / f"{name}.jsonl"
    path.write_text(
        "".join(json.dumps({"result_id": r.id, "rating": CASCADE_HUMAN}) + "\n" for r in results)
    )
    report = import_labels(path, labeler="ann", db=store)
    assert report.labels_written == len(results)


def cascade_calibrated(store: Store, tmp_path: Path) -> tuple[Judge, Judge, Script, Script]:
    cheap, strong, cheap_script, strong_script = cascade_judges(store)
    items = cascade_calibration_items()
    cascade_label(store, tmp_path, cheap.score_many(items), "cheap")
    cascade_label(store, tmp_path, strong.score_many(items), "strong")
    return cheap, strong, cheap_script, strong_script


# ---------------------------------------------------------------- a pairwise cascade: judges, pairs and labels

PAIR_CASCADE_CARD = "pairwise@2"


_SWAP = {"A": "B", "B": "A", "tie": "tie"}


def pair_cascade_position_verdict(prompt: str, model: str) -> str:
    """The position this model names for the rendered prompt (see the module docstring)."""
    question = tagged(prompt, "question") or ""
    match = re.search(rf"{model}=([AB])([AB])", question)
    assert match, question
    a_first = (tagged(prompt, "answer_a") or "").startswith("left")
    said = match.group(1) if a_first else match.group(2)  # in A/B naming
    return said if a_first else _SWAP[said]  # with B shown first, B is in position A


def pair_cascade_verdict(winner: str) -> str:
    return json.dumps({"reasoning": "Compared both answers.", "winner": winner})


def pair_cascade_reply_for(model: str) -> Callable[[httpx2.Request], httpx2.Response]:
    def reply(request: httpx2.Request) -> httpx2.Response:
        prompt = json.loads(request.content)["messages"][-1]["content"]
        return openai_chat(pair_cascade_verdict(pair_cascade_position_verdict(prompt, model)))

    return reply


def cascade_pair(pair_id: str, **said: str) -> dict[str, Any]:
    spec = " ".join(f"{model}={orders}" for model, orders in said.items())
    return {
        "id": pair_id,
        "question": f"Which is better? ({pair_id}) {spec}",
        "answer_a": f"left answer of {pair_id}",
        "answer_b": f"right answer of {pair_id}",
    }


def pair_cascade_judges(store: Store) -> tuple[Judge, Judge, Script, Script]:
    cheap_script, strong_script = (
        Script(default=pair_cascade_reply_for("cheap")),
        Script(default=pair_cascade_reply_for("strong")),
    )
    cheap = openai_judge(cheap_script, PAIR_CASCADE_CARD, model="cheap", db=store)
    strong = openai_judge(strong_script, PAIR_CASCADE_CARD, model="strong", db=store)
    return cheap, strong, cheap_script, strong_script


def pair_cascade_calibration_pairs() -> list[dict[str, Any]]:
    """60 pairs, people prefer A on all. cheap: consistent and right on 25, inconsistent (a
    tie, wrong) on 35. strong: consistent and right on 55, inconsistent on 5."""
    return [
        cascade_pair(f"c{i}", cheap="AA" if i < 25 else "AB", strong="AA" if i < 55 else "BA")
        for i in range(60)
    ]


def pair_cascade_label(
    store: Store, tmp_path: Path, comparisons: list[ComparisonResult], name: str, *, order: int
) -> None:
    """People prefer A; labelled on the A-first results (``order`` 0) or on the B-first ones
    (1), where A is shown second, so they name position B."""
    path = tmp_path / f"{name}.jsonl"
    rows = [
        {"result_id": c.first_order.result_id, "winner": "A"}
        if order == 0
        else {"result_id": c.second_order.result_id, "winner": "B"}
        for c in comparisons
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert import_labels(path, labeler="ann", db=store).labels_written == len(rows)


def pair_cascade_calibrated(store: Store, tmp_path: Path) -> tuple[Judge, Judge, Script, Script]:
    cheap, strong, cheap_script, strong_script = pair_cascade_judges(store)
    items = pair_cascade_calibration_pairs()
    pair_cascade_label(store, tmp_path, compare_many(cheap, items), "cheap", order=0)
    pair_cascade_label(store, tmp_path, compare_many(strong, items), "strong", order=1)
    return cheap, strong, cheap_script, strong_script


# ---------------------------------------------------------------- batch jobs

BATCH_PROVIDERS = {"openai": "openai:gpt-4o-mini", "anthropic": "anthropic:claude-sonnet-5"}


def qa_items(n: int, prefix: str = "i") -> list[dict[str, Any]]:
    return [
        {
            "id": f"{prefix}{k}",
            "question": f"What is {k}+{k}?",
            "gold_answer": str(2 * k),
            "model_output": f"It is {2 * k}.",
        }
        for k in range(n)
    ]


def batch_judge_on(fake: BatchFake, provider: str, db: Path, **options: Any) -> Judge:
    url = fake.openai_url if provider == "openai" else fake.base_url
    return Judge(
        "reference", BATCH_PROVIDERS[provider], db=db, api_key="sk-test", base_url=url, **options
    )


def submitted_entries(fake: BatchFake) -> list[dict[str, Any]]:
    """Every request the fake received in a batch, as ``{custom_id, body}``."""
    return [request for batch in fake.batches.values() for request in batch.requests]


def sql_rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(db)) as conn:
        return conn.execute(sql).fetchall()


# ---------------------------------------------------------------- JUnit output


def skipped_cases(junit: Path) -> list[str]:
    """Names of the JUnit cases a cap left unjudged (``<skipped>``), after the suite's count."""
    import xml.etree.ElementTree as ET

    (suite,) = ET.parse(junit).getroot()
    names = [c.attrib["name"] for c in suite.iter("testcase") if c.find("skipped") is not None]
    assert suite.attrib["skipped"] == str(len(names)) and suite.attrib["errors"] == "0"
    return names


# ---------------------------------------------------------------- compare runs


def cost_pairs(n: int) -> list[dict[str, str]]:
    # Same lengths, so every pair's projection is the same.
    return [
        {
            "id": f"p{i:02d}",
            "question": f"Capital of land {i:02d}?",
            "answer_a": f"It is C{i:02d}.",
            "answer_b": f"Surely D{i:02d}.",
        }
        for i in range(n)
    ]


def compare_sides(tmp_path: Path, n: int) -> tuple[Path, Path]:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(
        "".join(
            json.dumps({"id": p["id"], "question": p["question"], "answer": p["answer_a"]}) + "\n"
            for p in cost_pairs(n)
        )
    )
    b.write_text(
        "".join(json.dumps({"id": p["id"], "answer": p["answer_b"]}) + "\n" for p in cost_pairs(n))
    )
    return a, b


def compare_args(tmp_path: Path, n: int, *extra: Any, model: str = PRICED_MODEL) -> list[Any]:
    a, b = compare_sides(tmp_path, n)
    return [
        "compare",
        "--model",
        model,
        "--a",
        a,
        "--b",
        b,
        "--output",
        tmp_path / "out.jsonl",
        "--db",
        tmp_path / "runs.db",
        "--base-url",
        "SERVER",
        *extra,
    ]


# ---------------------------------------------------------------- eval configurations

EVAL_ITEMS = [
    {
        "id": "exact",
        "question": "Capital of Australia?",
        "gold_answer": "Canberra",
        "model_output": "Canberra.",
    },
    {
        "id": "empty",
        "question": "Capital of Australia?",
        "gold_answer": "Canberra",
        "model_output": "",
    },
    {
        "id": "refusal",
        "question": "Capital of Australia?",
        "gold_answer": "Canberra",
        "model_output": "As an AI, I can't.",
    },
    {
        "id": "offtopic",
        "question": "Capital of Australia?",
        "gold_answer": "Canberra",
        "model_output": "Bananas.",
    },
    {
        "id": "j1",
        "question": "Capital of Australia?",
        "gold_answer": "Canberra",
        "model_output": "It is Canberra.",
    },
    {
        "id": "j2",
        "question": "River through Vienna?",
        "gold_answer": "The Danube",
        "model_output": "The Danube, I believe.",
    },
]


EVAL_SURVIVORS = 2  # j1, j2: every other item is decided before the judge


EVAL_YAML = """\
items: items.jsonl
tiers:
  - name: format
    checks:
      - type: length
        field: model_output
        min: 1
      - type: regex
        field: model_output
        forbid: '(?i)\\bas an ai\\b'
  - name: metric
    checks:
      - {type: metric, metric: exact_match, accept_min: 1}
      - {type: metric, metric: token_f1, min: 0.05}
  - name: judge
    judge:
      card: reference@1
      model: MODEL
      inputs: {model_output: model_output}
      pass_verdicts: [match, partial_match, mismatch]
      concurrency: 4
"""


def eval_setup(
    tmp_path: Path,
    config: str,
    name: str = "eval.yaml",
    model: str = "mock:judge",
    items: list[Any] | None = None,
) -> Path:
    rows = EVAL_ITEMS if items is None else items
    (tmp_path / "items.jsonl").write_text(
        "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8"
    )
    path = tmp_path / name
    path.write_text(config.replace("MODEL", model), encoding="utf-8")
    return path


# ---------------------------------------------------------------- the Datasette canned queries


def canned_queries() -> dict[str, dict[str, Any]]:
    metadata = yaml.safe_load(DATASETTE_METADATA.read_text(encoding="utf-8"))
    queries: dict[str, dict[str, Any]] = metadata["databases"]["judgecards"]["queries"]
    return queries


def canned_query(db: Path, name: str) -> list[dict[str, Any]]:
    connection = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    connection.row_factory = sqlite3.Row
    try:
        return [dict(row) for row in connection.execute(canned_queries()[name]["sql"])]
    finally:
        connection.close()


# ---------------------------------------------------------------- a card that shows its schema only when it is not sent natively

GUARDED_INPUTS = {
    "question": "What is the boiling point of water at sea level?",
    "gold_answer": "100 degrees Celsius (212 degrees Fahrenheit).",
    "model_output": "At sea level water boils at 100 °C.",
}


GUARDED_CARD = """---
name: guarded
version: 1
description: The reference judgment with its schema shown only when it is not sent natively.
inputs:
  question: {description: The question.}
  gold_answer: {description: The gold answer.}
  model_output: {description: The answer judged.}
output:
  format: json
  schema: judgecards.schemas:ReferenceJudgment
  scores: [scores.correctness, scores.completeness, scores.style_fidelity]
verdict: {field: verdict}
defaults: {temperature: 0.0, max_tokens: 400}
---
Judge the answer in <model_output> against <gold_answer> for <question>.
{% if output_schema %}
Reply with only a JSON object matching this JSON Schema:
{{ output_schema }}
{% endif %}
<question>
{{ question }}
</question>

<gold_answer>
{{ gold_answer }}
</gold_answer>

<model_output>
{{ model_output }}
</model_output>
"""


def schema_objects(node: Any) -> list[dict[str, Any]]:
    """Every schema object inside ``node``."""
    found: list[dict[str, Any]] = []
    pending = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, dict):
            found.append(current)
            pending.extend(current.values())
        elif isinstance(current, list):
            pending.extend(current)
    return found


# ---------------------------------------------------------------- YAML

YAML_BOMB = """laughs:
  a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]
  b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
  c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
  d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
  e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
  f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
  g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
  h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
  i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]
"""


# ---------------------------------------------------------------- the public data sets in ../shared/data

# The same place as conftest's ``shared_data`` fixture.
DATA = shared_data_dir()

LLMBAR_SUBSETS = (
    "LLMBar/Natural",
    "LLMBar/Adversarial/Neighbor",
    "LLMBar/Adversarial/GPTInst",
    "LLMBar/Adversarial/GPTOut",
    "LLMBar/Adversarial/Manual",
)
SUMMEVAL_DIMENSIONS = ("coherence", "consistency", "fluency", "relevance")


def data_file(relative: str) -> Path:
    """The path of a shared data file, or skip the test saying where it was looked for."""
    path = DATA / relative
    if not path.is_file():
        pytest.skip(f"public data not found at {path} (see ../shared/data/README.md)")
    return path


@dataclass(frozen=True)
class MTBench:
    """MT-Bench comparisons: human plurality vs GPT-4 (both orders resolved), 1,814 rows."""

    model_a: NDArray[np.str_]
    model_b: NDArray[np.str_]
    human: NDArray[np.str_]  # "A" | "B" | "tie"
    gpt4: NDArray[np.str_]  # "A" | "B" | "tie" (an order-inconsistent verdict is a tie)
    inconsistent: NDArray[np.bool_]  # GPT-4 disagreed with itself across the two orders

    def win_scores(self, model: str) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Human and GPT-4 scores of ``model`` in its comparisons: win 1, tie 0.5, loss 0."""
        points = {"A": 1.0, "tie": 0.5, "B": 0.0}
        as_a, as_b = self.model_a == model, self.model_b == model
        keep = as_a | as_b
        human = np.array([points[v] for v in self.human[keep]])
        gpt4 = np.array([points[v] for v in self.gpt4[keep]])
        flip = as_b[keep]
        return np.where(flip, 1.0 - human, human), np.where(flip, 1.0 - gpt4, gpt4)

    @property
    def models(self) -> list[str]:
        """The six models compared."""
        return sorted({str(m) for m in (*self.model_a, *self.model_b)})


@cache
def mt_bench() -> MTBench:
    """MT-Bench human votes vs the GPT-4 pairwise judge."""
    with data_file("mt_bench/human_vs_gpt4_pair_labels_judgecal.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    return MTBench(
        model_a=np.array([r["model_a"] for r in rows]),
        model_b=np.array([r["model_b"] for r in rows]),
        human=np.array([r["human_winner"] for r in rows]),
        gpt4=np.array([r["gpt4_winner"] for r in rows]),
        inconsistent=np.array([r["gpt4_inconsistent_order"] == "True" for r in rows]),
    )


@cache
def summeval() -> dict[str, tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.str_]]]:
    """Per dimension: (mean of 3 expert scores, GPT-4 reason-then-score, system) per summary.

    1,200 summaries: 12 systems (``model_id``) × 100 source documents.

    GPT-4's score is the last standalone digit 1–5 of its reply ("… Final score: 5."); one reply
    without one (consistency) is dropped.
    """
    experts: dict[tuple[str, str], dict[str, float]] = {}
    with data_file("summeval/annotations_abstractive_12systems.jsonl").open() as handle:
        for line in handle:
            row = json.loads(line)
            experts[(row["model_id"], row["id"])] = {
                d: float(np.mean([a[d] for a in row["expert_annotations"]]))
                for d in SUMMEVAL_DIMENSIONS
            }
    gpt4: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    with data_file("summeval/llm_judgments_shen2023.jsonl").open() as handle:
        for line in handle:
            row = json.loads(line)
            if row["evaluator"] != "gpt-4-0314" or row["method"] != "rts":
                continue
            digits = re.findall(r"(?<!\d)([1-5])(?!\d)", row["resp"])
            if digits:
                gpt4[(row["model_id"], row["id"])][row["dimension"]] = float(digits[-1])
    result = {}
    for dimension in SUMMEVAL_DIMENSIONS:
        keys = sorted(k for k in experts if dimension in gpt4.get(k, {}))
        result[dimension] = (
            np.array([experts[k][dimension] for k in keys]),
            np.array([gpt4[k][dimension] for k in keys]),
            np.array([system for system, _ in keys]),
        )
    return result


@dataclass(frozen=True)
class LLMBar:
    """LLMBar's 419 Natural + Adversarial items, Vanilla strategy, six judges' recorded verdicts.

    ``verdicts[i, 2*j + o]`` is judge ``j``'s verdict on item ``i`` in order ``o`` (0 = as
    given, 1 = swapped, mapped back): 1 or 2, or 0 when the reply could not be parsed.
    """

    judges: tuple[str, ...]
    subsets: NDArray[np.str_]
    gold: NDArray[np.int64]
    verdicts: NDArray[np.int64]

    def judge(self, name: str) -> NDArray[np.int64]:
        """The (items × 2) verdicts of one judge, both orders."""
        j = self.judges.index(name)
        return self.verdicts[:, 2 * j : 2 * j + 2]


@cache
def llmbar() -> LLMBar:
    """The LLMBar verdict matrix (see `LLMBar`)."""
    return llmbar_set(LLMBAR_SUBSETS, "Vanilla")


@cache
def llmbar_set(subsets: tuple[str, ...], strategy: str) -> LLMBar:
    """The verdict matrix of any LLMBar subsets (e.g. ``("Processed/MT-Bench",)``, which has
    only ``Metrics_Reference``) for one strategy, with every judge that has verdicts there."""
    rows = []
    with data_file("llmbar/evaluator_verdicts.jsonl").open() as handle:
        for line in handle:
            row = json.loads(line)
            if row["strategy"] == strategy and row["subset"] in subsets:
                rows.append(row)
    judges = tuple(sorted({r["evaluator"] for r in rows}))
    items = sorted({(subsets.index(r["subset"]), r["index"]) for r in rows})
    position = {item: i for i, item in enumerate(items)}
    gold = np.zeros(len(items), dtype=np.int64)
    verdicts = np.zeros((len(items), 2 * len(judges)), dtype=np.int64)
    for r in rows:
        i = position[(subsets.index(r["subset"]), r["index"])]
        gold[i] = r["label"]
        j = judges.index(r["evaluator"])
        for o, key in enumerate(("winner_swap_false", "winner_swap_true")):
            verdicts[i, 2 * j + o] = {"1": 1, "2": 2}.get(r[key] or "", 0)
    return LLMBar(judges, np.array([subsets[s] for s, _ in items]), gold, verdicts)


# ---------------------------------------------------------------- a running server


@dataclass
class ServedApp:
    """A running server: its base ``url``, database, the app, and a way to mint tokens."""

    url: str
    db_path: Path
    app: Any
    server: Any
    thread: threading.Thread
    sock: socket.socket
    issued: list[str] = field(default_factory=list)

    def token(self, role: str = "admin", name: str | None = None) -> str:
        """A new token of ``role`` held by ``name`` (default: the role and a counter)."""
        issued = self.app.state.tokens.create(role, name or f"{role}-{len(self.issued) + 1}")
        self.issued.append(issued.secret)
        return str(issued.secret)

    def login_url(self, token: str) -> str:
        """The personal login link for ``token`` on this server."""
        from judgecards.serve.pages import login_link

        return login_link(self.url, token)

    def headers(self, token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join()  # uvicorn's own graceful-shutdown limit (5 s) bounds this
        self.sock.close()
        self.app.state.store.close()  # lifespan closed it already unless startup failed


def start_server(db_path: Path, **settings: Any) -> ServedApp:
    """`create_app` on ``db_path`` under uvicorn in a daemon thread, listening when this returns.

    The server says when it is up (an Event set after uvicorn's startup, or when its thread ends
    because startup failed): no polling against a deadline, which a loaded machine can miss.
    uvicorn and the app are imported here so that tests that never serve do not pay for them.
    """
    import uvicorn

    from judgecards.serve.app import create_app

    app = create_app(db_path, **settings)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        log_level="warning",
        ws="none",
        lifespan="on",
        access_log=False,
        timeout_graceful_shutdown=5,
    )
    ready = threading.Event()

    class _SignallingServer(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            ready.set()

    server = _SignallingServer(config)

    def run() -> None:
        try:
            server.run(sockets=[sock])
        finally:
            ready.set()  # a server that failed to start wakes the caller too

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    ready.wait()
    if not server.started:
        raise RuntimeError("uvicorn did not start")
    return ServedApp(
        url=f"http://127.0.0.1:{port}",
        db_path=db_path,
        app=app,
        server=server,
        thread=thread,
        sock=sock,
    )


LISTENING = re.compile(r"Listening on port (\d+);")
"""The line ``judgecards serve`` prints once it listens (after uvicorn's startup)."""


class ServeProcess:
    """``python -m judgecards serve --port 0`` as a process; ready when constructed.

    Its output (stdout and stderr) is copied to ``log`` line by line by a thread, which also
    reads the port from the server's "Listening on port N" line: that line is the readiness
    signal (no free-port race, no polling against a deadline).
    """

    def __init__(self, db: Path, log: Path, *options: str) -> None:
        self.log = log
        self.port = 0
        self._listening = threading.Event()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "judgecards", "serve", "--db", str(db), "--port", "0", *options],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            # faulthandler: SIGABRT dumps every thread's stack into the log (a hung server).
            env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONFAULTHANDLER": "1"},
        )
        self._copier = threading.Thread(target=self._copy, name="serve-log", daemon=True)
        self._copier.start()
        self._listening.wait()
        if not self.port:
            self.stop()
            raise RuntimeError(f"judgecards serve did not start: {self.output}")
        self.url = f"http://127.0.0.1:{self.port}"

    def _copy(self) -> None:
        assert self.process.stdout is not None
        with self.log.open("w", encoding="utf-8") as sink:
            for line in self.process.stdout:
                sink.write(line)
                sink.flush()
                found = LISTENING.match(line)
                if found and not self.port:
                    self.port = int(found.group(1))
                    self._listening.set()
        self._listening.set()  # the output ended: the server exited, listening or not

    @property
    def output(self) -> str:
        """Everything the server printed so far (all of it once `stop` returned)."""
        return self.log.read_text(encoding="utf-8")

    def stop(self) -> int:
        """SIGTERM, then its exit code (SIGKILL only if it has not stopped in 30 s)."""
        if self.process.poll() is None:
            self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._copier.join()
        if self.process.stdout is not None:
            self.process.stdout.close()
        return int(self.process.returncode)
