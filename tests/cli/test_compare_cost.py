"""``compare --plan`` / `plan_comparisons` and ``compare --max-cost`` / `compare_many` with
``Judge(max_cost=)`` (`judgecards.pairwise.budget`), through the real OpenAI SDK against the
loopback fake server: a plan makes no call, the cap's unit is a pair (both orders start or
neither), pairs left are ``not_judged`` (not errors, not stored), a re-run with a higher cap
judges exactly them, and an unpriced model is refused before anything."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from judgecards import Judge, compare_many
from judgecards.errors import BudgetError
from judgecards.pairwise.compare import plan_comparisons
from tests.builders import PRICED_MODEL, compare_args, run_cli, skipped_cases
from tests.builders import cost_pairs as pairs
from tests.fakes.server import FakeServer

MODEL = PRICED_MODEL


@pytest.fixture
def server() -> Iterator[FakeServer]:
    server = FakeServer(latency=0.05).serve_in_thread()
    yield server
    server.stop()


def judge(server: FakeServer, db: Path, prices: Path, **options: Any) -> Judge:
    return Judge(
        "pairwise", MODEL, db=db, base_url=server.base_url, api_key="sk-test", prices=prices,
        **options,
    )  # fmt: skip


def per_pair(server: FakeServer, db: Path, prices: Path) -> float:
    """The projection of one pair (both orders, every reply at its cap)."""
    with judge(server, db, prices) as planner:
        plan = plan_comparisons(planner, pairs(1))
    assert plan.most_per_pair is not None
    return plan.most_per_pair


def actual_pair(server: FakeServer, db: Path, prices: Path) -> float:
    """What judging one pair (both orders) costs; every pair of `pairs` costs the same."""
    with judge(server, db, prices) as uncapped:
        (comparison,) = compare_many(uncapped, pairs(1))
    orders = (comparison.first_order, comparison.second_order)
    cost = sum(order.cost_usd or 0.0 for order in orders)
    assert cost > 0
    server.requests = 0
    return cost


def count(db: Path, table: str) -> int:
    with closing(sqlite3.connect(db)) as connection:
        return int(connection.execute(f"select count(*) from {table}").fetchone()[0])


def test_the_plan_projects_both_orders_of_every_pair_and_calls_nothing(
    server: FakeServer, prices: Path, tmp_path: Path
) -> None:
    db = tmp_path / "runs.db"
    with judge(server, db, prices) as planner:
        one = plan_comparisons(planner, pairs(1))
        plan = plan_comparisons(planner, pairs(5))
    assert server.requests == 0
    assert (plan.pairs, plan.judgments.items, plan.judgments.to_judge) == (5, 10, 10)
    live, batch, single = plan.live_cost(), plan.batch_cost(), one.live_cost()
    assert live is not None and batch is not None and single is not None
    assert live[1] == pytest.approx(5 * single[1]) and one.most_per_pair == pytest.approx(single[1])
    assert batch[1] == pytest.approx(live[1] / 2) and 0 < live[0] < live[1]
    assert "5 pairs, each judged in both orders: 10 judgments" in plan.as_text()

    with judge(server, db, prices) as runner:  # judge two pairs: they become free
        compare_many(runner, pairs(2))
        after = plan_comparisons(runner, pairs(5))
    assert (after.decided, after.judgments.stored, after.judgments.to_judge) == (2, 4, 6)
    after_live = after.live_cost()
    assert after_live is not None and after_live[1] == pytest.approx(3 * single[1])


def test_a_cap_starts_both_orders_of_a_pair_or_neither_and_a_rerun_continues(
    server: FakeServer, prices: Path, tmp_path: Path
) -> None:
    db = tmp_path / "runs.db"
    projected, actual = (
        per_pair(server, tmp_path / "plan.db", prices),
        actual_pair(server, tmp_path / "a.db", prices),
    )
    # Room for one pair's projection on top of one and a half pairs' actual cost: pairs wait
    # for the one in flight to settle, the second fits then, the third never does (and no pair
    # starts half: one order at a time would start a fifth order).
    cap = projected + 1.5 * actual
    with judge(server, db, prices, max_cost=cap) as capped:
        results = compare_many(capped, pairs(4), concurrency=8)
        stats = capped.budget.stats() if capped.budget else None
    statuses = [c.status for c in results]
    assert statuses == ["ok", "ok", "not_judged", "not_judged"]
    assert server.requests == 4  # both orders of the first two pairs, nothing of the others
    left = results[2]
    assert left.winner is None and left.first_order.status == left.second_order.status
    assert left.first_order.status == "not_judged" and "--max-cost" in (left.error or "")
    assert stats is not None and 0 < stats.spent <= cap and stats.in_flight == 0
    # Pairs left are not errors and not stored: no comparison row, no result row.
    assert count(db, "comparisons") == 2 and count(db, "results") == 4

    with judge(server, db, prices, max_cost=100 * cap) as rerun:
        again = compare_many(rerun, pairs(4), concurrency=8)
    assert [c.status for c in again] == ["ok"] * 4
    assert server.requests == 8  # the two pairs left; the first two came from the store
    assert count(db, "comparisons") == 4


def test_an_order_already_stored_is_projected_at_nothing(
    server: FakeServer, prices: Path, tmp_path: Path
) -> None:
    db = tmp_path / "runs.db"
    single = per_pair(server, tmp_path / "plan.db", prices)
    half, fresh = pairs(2)
    from judgecards.pairwise.compare import pair_orders

    with judge(server, db, prices) as runner:  # pair p00 has its A-first order stored
        runner.score_many([pair_orders(half)[0]])
    assert server.requests == 1
    # Room for one order, not two: only the half-stored pair fits, whatever comes first.
    with judge(server, db, prices, max_cost=0.75 * single) as capped:
        results = compare_many(capped, [fresh, half], concurrency=8)
    assert [c.status for c in results] == ["not_judged", "ok"]
    assert server.requests == 2


def test_a_capped_judge_on_an_unpriced_model_is_refused_before_anything(
    server: FakeServer, tmp_path: Path
) -> None:
    db = tmp_path / "runs.db"
    with pytest.raises(BudgetError, match="openai:local-llama"):
        Judge(
            "pairwise", "openai:local-llama", db=db, base_url=server.base_url,
            api_key="sk-test", max_cost=1.0,
        )  # fmt: skip
    assert not db.exists() and server.requests == 0


# --------------------------------------------------------------------------- the command


def with_server(args: list[Any], server: FakeServer) -> list[Any]:
    return [server.base_url if arg == "SERVER" else arg for arg in args]


def test_compare_plan_prints_the_projection_without_a_key_or_a_call(
    server: FakeServer, prices: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    args = with_server(compare_args(tmp_path, 3, "--prices", prices, "--plan"), server)
    result = run_cli(*args)
    assert result.exit_code == 0, result.output
    assert "3 pairs, each judged in both orders: 6 judgments" in result.output
    assert "6 judgments on openai:fake-judge: 6 to judge" in result.output
    assert "batch:" in result.output and server.requests == 0
    assert not (tmp_path / "out.jsonl").exists()
    assert not (tmp_path / "runs.db").exists()  # a plan creates no database

    data = json.loads(run_cli(*args, "--json").stdout)
    assert data["pairs"] == 3 and data["judgments"]["to_judge"] == 6
    assert data["judgments"]["live_cost_usd"][1] == pytest.approx(3 * data["most_per_pair_usd"])


def test_compare_max_cost_leaves_pairs_not_judged_with_exit_1_and_a_rerun_continues(
    server: FakeServer, prices: Path, tmp_path: Path
) -> None:
    projected = per_pair(server, tmp_path / "plan.db", prices)
    cap = projected + 1.5 * actual_pair(server, tmp_path / "a.db", prices)
    args = with_server(compare_args(tmp_path, 5, "--prices", prices), server)
    junit = tmp_path / "report.xml"
    result = run_cli(*args, "--max-cost", cap, "--concurrency", 8, "--ci", f"junit={junit}")
    assert result.exit_code == 1, result.output
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    statuses = [row["status"] for row in rows]
    assert statuses == ["ok", "ok", "not_judged", "not_judged", "not_judged"]
    assert skipped_cases(junit) == [row["id"] for row in rows[2:]]  # not errors in CI
    assert server.requests == 4
    assert "errors:" not in result.output  # pairs left are not errors
    assert "spent of $" in result.output and "3 pair(s) not judged" in result.output
    assert "their projected cost (both orders) would pass --max-cost" in result.output
    assert "cache:     0 of 4 judgments served without a call" in result.output

    again = run_cli(*args, "--max-cost", 100 * cap, "--json")
    assert again.exit_code == 0, again.output
    data = json.loads(again.stdout)
    assert data["budget"]["pairs_not_judged"] == 0 and data["judgments_served_without_call"] == 4
    assert server.requests == 10  # just the three pairs left


def test_compare_max_cost_on_an_unpriced_model_exits_2_before_the_database(
    server: FakeServer, tmp_path: Path
) -> None:
    args = with_server(compare_args(tmp_path, 2, "--max-cost", 1, model="openai:local"), server)
    result = run_cli(*args)
    assert result.exit_code == 2, result.output
    assert "--max-cost needs a price for openai:local" in result.output
    assert not (tmp_path / "runs.db").exists() and server.requests == 0


def test_compare_max_cost_or_plan_with_batch_is_a_usage_error(
    server: FakeServer, prices: Path, tmp_path: Path
) -> None:
    for extra in (["--max-cost", 1], ["--plan"]):
        args = with_server(compare_args(tmp_path, 2, "--prices", prices, "--batch", *extra), server)
        result = run_cli(*args)
        assert result.exit_code == 2 and "--batch" in result.output, result.output
    assert not (tmp_path / "runs.db").exists() and server.requests == 0
