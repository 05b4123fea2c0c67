"""``eval CONFIG --plan`` / `TieredEval.plan` and ``eval --max-cost`` (the judge tier under
``Judge(max_cost=)``), through the real OpenAI SDK against the loopback fake server: the plan
runs no tier and makes no call, projecting the judge tier on every item (an upper bound, said so);
items the cap leaves are ``not_judged`` (not errors, exit 1) and a re-run with a higher cap
judges exactly them; an unpriced judge model is refused before anything."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from judgecards import Judge, TieredEval
from judgecards.tiered import JudgeCheck, LengthCheck
from tests.builders import PRICED_MODEL, run_cli, skipped_cases
from tests.fakes.server import FakeServer

MODEL = PRICED_MODEL
ITEMS = [
    {"id": "empty", "question": "Capital of Australia?", "gold_answer": "Canberra",
     "model_output": ""},
    {"id": "j1", "question": "Capital of Australia?", "gold_answer": "Canberra",
     "model_output": "It is Canberra."},
    {"id": "j2", "question": "Capital of Austria?", "gold_answer": "Vienna",
     "model_output": "It is Vienna."},
]  # fmt: skip
SURVIVORS = ["j1", "j2"]  # "empty" fails the length tier
CONFIG = """\
items: items.jsonl
tiers:
  - name: format
    checks:
      - {type: length, field: model_output, min: 1}
  - name: judge
    judge:
      card: reference@1
      model: MODEL
      pass_verdicts: [match, partial_match, mismatch]
      concurrency: 4
"""


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeServer]:
    server = FakeServer(latency=0.05).serve_in_thread()
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    yield server
    server.stop()


def config(tmp_path: Path, model: str = MODEL) -> Path:
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(item) + "\n" for item in ITEMS))
    path = tmp_path / "eval.yaml"
    path.write_text(CONFIG.replace("MODEL", model))
    return path


def projection(prices: Path, tmp_path: Path, item_id: str) -> float:
    """One item's most (its reply at the cap), as the judge tier would project it."""
    with Judge("reference@1", MODEL, db=tmp_path / "plan.db", prices=prices) as planner:
        live = planner.plan([item for item in ITEMS if item["id"] == item_id]).live_cost()
    assert live is not None
    return live[1]


def test_the_plan_projects_the_judge_tier_on_every_item_and_says_it_is_an_upper_bound(
    server: FakeServer, prices: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")  # a plan needs no key: nothing can be called
    path, db = config(tmp_path), tmp_path / "runs.db"
    result = run_cli("eval", path, "--db", db, "--prices", prices, "--plan")
    assert result.exit_code == 0, result.output
    assert "'format' deterministic: no calls, no cost" in result.output
    assert (
        "an upper bound: every item is projected as if it reached the judge tier" in result.output
    )
    assert "3 items on openai:fake-judge: 3 to judge" in result.output
    assert server.requests == 0 and not db.exists()  # a plan creates no database

    data = json.loads(
        run_cli("eval", path, "--db", db, "--prices", prices, "--plan", "--json").stdout
    )
    most = sum(projection(prices, tmp_path, str(item["id"])) for item in ITEMS)
    assert data["upper_bound"] is True and data["free_tiers"] == ["format"]
    assert data["judge"]["live_cost_usd"][1] == pytest.approx(most)

    # The run itself stays under the bound: it judges the survivors only.
    real = run_cli("eval", path, "--db", db, "--prices", prices, "--json")
    assert real.exit_code == 0, real.output
    assert server.requests == len(SURVIVORS) and json.loads(real.stdout)["cost_usd"] < most
    # A plan on the database now reads what it holds (stored items are free) and changes nothing.
    before = db.read_bytes()
    again = json.loads(
        run_cli("eval", path, "--db", db, "--prices", prices, "--plan", "--json").stdout
    )
    assert again["judge"]["stored"] == len(SURVIVORS) and db.read_bytes() == before


def test_tiered_eval_plan_without_a_judge_tier_costs_nothing() -> None:
    plan = TieredEval([LengthCheck("model_output", min=1)]).plan(ITEMS)
    assert plan.judge is None and plan.live_cost() == (0.0, 0.0)
    assert "none: the 3 items cost nothing" in plan.as_text()


def test_tiered_eval_plan_counts_stored_items_as_free(
    server: FakeServer, prices: Path, tmp_path: Path
) -> None:
    db = tmp_path / "runs.db"
    with Judge("reference@1", MODEL, db=db, prices=prices) as judge:
        pipeline = TieredEval([LengthCheck("model_output", min=1), JudgeCheck(judge, pass_verdicts=["match"])])  # fmt: skip
        pipeline.run(ITEMS)
        plan = pipeline.plan(ITEMS)
    # The survivors are stored; the item the length tier fails is still projected (the bound).
    assert plan.judge is not None
    assert (plan.judge.stored, plan.judge.to_judge) == (2, 1)


def test_eval_max_cost_leaves_survivors_not_judged_with_exit_1_and_a_rerun_continues(
    server: FakeServer, prices: Path, tmp_path: Path
) -> None:
    path, db, output = config(tmp_path), tmp_path / "runs.db", tmp_path / "out.jsonl"
    # Room for one survivor's projection, not for a second beside what the first spent (a
    # second waits for the first to settle, then still does not fit).
    cap = 1.001 * max(projection(prices, tmp_path, item_id) for item_id in SURVIVORS)
    args = ["eval", path, "--db", db, "--prices", prices, "--output", output]
    junit = tmp_path / "report.xml"
    result = run_cli(*args, "--max-cost", cap, "--ci", f"junit={junit}")
    assert result.exit_code == 1, result.output
    rows = {row["id"]: row for row in map(json.loads, output.read_text().splitlines())}
    left = [item_id for item_id in SURVIVORS if rows[item_id]["outcome"] == "not_judged"]
    assert skipped_cases(junit) == left  # in CI output neither passed nor an error
    assert rows["empty"]["outcome"] == "fail"  # the free tiers ran as ever
    outcomes = sorted(rows[item_id]["outcome"] for item_id in SURVIVORS)
    assert outcomes == ["not_judged", "pass"] and server.requests == 1
    assert "0 errors, 1 not judged (--max-cost)" in result.output
    assert "errors  not judged" in result.output  # the tier table's column
    assert "spent of $" in result.output and "1 item(s) not judged" in result.output
    assert "not judged: their projected cost would pass --max-cost" in result.output

    again = run_cli(*args, "--max-cost", 100 * cap, "--json")
    assert again.exit_code == 0, again.output
    data = json.loads(again.stdout)
    assert data["not_judged"] == 0 and data["budget"]["cap_usd"] == pytest.approx(100 * cap)
    assert 0 < data["budget"]["spent_usd"] < cap  # this run paid for the one survivor left
    assert server.requests == 2  # just the survivor left; the other came from the store


def test_eval_max_cost_on_an_unpriced_judge_exits_2_before_the_database(
    server: FakeServer, tmp_path: Path
) -> None:
    db = tmp_path / "runs.db"
    result = run_cli("eval", config(tmp_path, "openai:local"), "--db", db, "--max-cost", 1)
    assert result.exit_code == 2, result.output
    assert "--max-cost needs a price for openai:local" in result.output
    assert not db.exists() and server.requests == 0
