"""``--max-cost`` / ``Judge(max_cost=)`` (`judgecards.limits.budget`), through the real OpenAI SDK
against the loopback fake server: items whose projected spend would pass the cap never start,
are reported as not judged (not errors, never stored), and a re-run with a higher cap judges
exactly them. A model with no price cannot be capped."""

from __future__ import annotations

import json
import math
import random
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from judgecards import Judge
from judgecards.errors import BudgetError
from tests.builders import PRICED_MODEL, run_cli, skipped_cases, write_jsonl
from tests.fakes.server import FakeServer, card_reply

MODEL = PRICED_MODEL


@pytest.fixture
def server() -> Iterator[FakeServer]:
    server = FakeServer(latency=0.05).serve_in_thread()
    yield server
    server.stop()


def items(n: int) -> list[dict[str, str]]:
    # Same lengths, so every item's projection is the same.
    return [
        {"id": f"i{i:02d}", "question": f"Capital of land {i:02d}?", "gold_answer": f"C{i:02d}",
         "model_output": f"It is C{i:02d}."}
        for i in range(n)
    ]  # fmt: skip


def judge(server: FakeServer, db: Path, prices: Path, **options: Any) -> Judge:
    return Judge(
        "reference", MODEL, db=db, base_url=server.base_url, api_key="sk-test", prices=prices,
        **options,
    )  # fmt: skip


def per_item(server: FakeServer, db: Path, prices: Path, **options: Any) -> float:
    """The projection of one item's first call: the plan's most (every reply at its cap)."""
    with judge(server, db, prices, **options) as planner:
        plan = planner.plan(items(1))
    live = plan.live_cost()
    assert live is not None
    return live[1]


def stored_results(db: Path) -> int:
    with closing(sqlite3.connect(db)) as connection:
        return int(connection.execute("select count(*) from results").fetchone()[0])


def actual_per_item(server: FakeServer, db: Path, prices: Path) -> float:
    """What one item costs when judged (every item of `items` costs the same)."""
    with judge(server, db, prices) as uncapped:
        (result,) = uncapped.score_many(items(1))
    assert result.cost_usd
    return result.cost_usd


def test_items_past_the_cap_never_start_and_a_higher_cap_judges_exactly_them(
    server: FakeServer, prices: Path, tmp_path: Path
) -> None:
    db = tmp_path / "runs.db"
    worst, actual = per_item(server, db, prices), actual_per_item(server, tmp_path / "a.db", prices)
    assert worst > 5 * actual  # replies far below their caps: projections give room back
    server.requests = 0
    # Room for the projection of one item on top of 3.5 items' actual spend: the 4th item fits
    # once the 3rd has settled, the 5th never does.
    cap = worst + 3.5 * actual
    with judge(server, db, prices, max_cost=cap) as capped:
        results = capped.score_many(items(10), concurrency=8)
        stats = capped.budget.stats() if capped.budget else None
    ok = [r for r in results if r.status == "ok"]
    left = [r for r in results if r.status == "not_judged"]
    assert len(ok) == 4 and len(left) == 6
    # All 8 slots were free at once, yet no two projections fitted under the cap together.
    assert server.peak == 1
    assert server.requests == len(ok)  # a not-judged item sends nothing
    assert stats is not None and stats.not_judged == len(left) and stats.in_flight == 0
    assert stats.spent == pytest.approx(sum(r.cost_usd or 0 for r in ok)) and stats.spent <= cap
    assert all(r.error_kind is None and r.cost_usd == 0.0 for r in left)
    assert stored_results(db) == len(ok)  # not stored, so not an error record either

    with judge(server, db, prices, max_cost=100 * worst) as rerun:
        again = rerun.score_many(items(10), concurrency=8)
    assert all(r.status == "ok" for r in again)
    assert server.requests == 10  # only the items left were called; the rest came from the store


@pytest.mark.parametrize("concurrency", [1, 8, 16, 64])
def test_items_refused_while_others_are_in_flight_are_reconsidered_at_any_concurrency(
    server: FakeServer, prices: Path, tmp_path: Path, concurrency: int
) -> None:
    """Before, an item that did not fit beside the projections in flight was refused for good:
    the more concurrency, the less of the budget was spent. Now it waits for them to settle, so
    every concurrency judges what one item at a time does: until the next cannot fit."""
    options: dict[str, Any] = {"max_tokens": 60}  # a projection near a cost
    worst = per_item(server, tmp_path / "p.db", prices, **options)
    with judge(server, tmp_path / "a.db", prices, **options) as uncapped:
        actual = uncapped.score_many(items(1))[0].cost_usd or 0.0
    cap = 2 * worst + 15.5 * actual
    fits = math.floor((cap - worst) / actual) + 1  # the most n with (n - 1) * actual + worst <= cap
    n = fits + 5
    with judge(server, tmp_path / "runs.db", prices, max_cost=cap, **options) as capped:
        results = capped.score_many(items(n), concurrency=concurrency)
        stats = capped.budget.stats() if capped.budget else None
    judged = sum(r.status == "ok" for r in results)
    assert judged == fits and stats is not None and stats.not_judged == n - fits
    assert stats.spent <= cap and stats.in_flight == 0
    assert cap - stats.spent < worst  # stopped only because the next item could not fit


def malformed_mostly(share: float, seed: int = 7) -> Callable[[str], str]:
    """A judge whose replies are not JSON ``share`` of the time (so each item is re-asked)."""
    rng = random.Random(seed)
    return lambda prompt: "I think it is fine." if rng.random() < share else card_reply(prompt)


@pytest.mark.parametrize("concurrency", [1, 8, 16, 64])
def test_the_provider_bill_never_passes_the_cap_with_many_re_asks(
    prices: Path, tmp_path: Path, concurrency: int
) -> None:
    """90% malformed replies and 20 attempts an item: every re-ask reserves its projection
    before it is sent, so what the provider bills (its own usage totals at the price) stays
    under the cap. Before, in-flight items re-asked past it (1.8x at concurrency 64)."""
    server = FakeServer(latency=0.01, reply=malformed_mostly(0.9)).serve_in_thread()
    try:
        options: dict[str, Any] = {"max_tokens": 80, "max_attempts": 20}
        with judge(server, tmp_path / "p.db", prices, **options) as planner:
            plan = planner.plan(items(1))
        first = plan.live_cost()
        assert plan.price is not None and first is not None
        cap = 40 * first[1]  # room for a few items' first calls, not for their re-asks
        with judge(server, tmp_path / "runs.db", prices, max_cost=cap, **options) as capped:
            results = capped.score_many(items(20), concurrency=concurrency)
            stats = capped.budget.stats() if capped.budget else None
        bill = plan.price.cost(server.prompt_tokens, server.completion_tokens)
        assert server.requests > 20  # re-asks were made
        assert bill <= cap
        assert stats is not None and stats.spent == pytest.approx(bill) and stats.in_flight == 0
        # Every item is accounted for: judged, stopped before a re-ask that could not fit (its
        # spend counted), or never started.
        kinds = {r.error_kind or r.status for r in results}
        assert kinds <= {"ok", "invalid_output", "max_cost", "not_judged"} and "max_cost" in kinds
    finally:
        server.stop()


def test_a_cap_below_one_item_judges_nothing_and_calls_nothing(
    server: FakeServer, prices: Path, tmp_path: Path
) -> None:
    with judge(server, tmp_path / "runs.db", prices, max_cost=0.0) as capped:
        single = capped.score(**{k: v for k, v in items(1)[0].items() if k != "id"})
    assert single.status == "not_judged" and "--max-cost" in (single.error or "")
    assert server.requests == 0


def test_an_unpriced_model_refuses_a_cap_before_anything(
    server: FakeServer, tmp_path: Path
) -> None:
    db = tmp_path / "runs.db"
    with pytest.raises(BudgetError, match=r"openai:local-llama.*never counted as 0"):
        Judge(
            "reference", "openai:local-llama", db=db, base_url=server.base_url,
            api_key="sk-test", max_cost=1.0,
        )  # fmt: skip
    assert not db.exists() and server.requests == 0


def test_score_max_cost_reports_not_judged_spend_and_exit_1(
    server: FakeServer, prices: Path, tmp_path: Path
) -> None:
    db, output = tmp_path / "runs.db", tmp_path / "out.jsonl"
    worst = per_item(server, tmp_path / "plan.db", prices)
    cap = worst + 2.5 * actual_per_item(server, tmp_path / "a.db", prices)
    junit = tmp_path / "report.xml"
    result = run_cli(
        "score", "--card", "reference", "--model", MODEL, write_jsonl(tmp_path / "items.jsonl", items(6)), "--output", output, "--db", db,
        "--base-url", server.base_url, "--prices", prices, "--max-cost", cap,
        "--concurrency", 8, "--ci", f"junit={junit}",
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    lines = [json.loads(line) for line in output.read_text().splitlines()]
    statuses = [line["status"] for line in lines]
    assert len(lines) == 6 and "not_judged" in statuses and "error" not in statuses
    assert "errors:    0 (none)" in result.output
    assert f"cap; {statuses.count('not_judged')} item(s) not judged" in result.output
    assert "rate: concurrency 8 asked" in result.output
    assert "not judged: their projected cost would pass --max-cost" in result.output
    # In CI output an item left by the cap is skipped: neither passed nor an error.
    left = [line["item_id"] for line in lines if line["status"] == "not_judged"]
    assert sorted(skipped_cases(junit)) == sorted(left)


def test_score_max_cost_on_an_unpriced_model_exits_2_before_the_database(
    server: FakeServer, tmp_path: Path
) -> None:
    db = tmp_path / "runs.db"
    result = run_cli(
        "score", "--card", "reference", "--model", "openai:local-llama", write_jsonl(tmp_path / "items.jsonl", items(2)), "--output", tmp_path / "out.jsonl",
        "--db", db, "--base-url", server.base_url, "--max-cost", 1,
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "--max-cost needs a price for openai:local-llama" in result.output
    assert not db.exists() and server.requests == 0


def test_a_single_score_stops_before_a_re_ask_that_would_pass_the_cap(
    prices: Path, tmp_path: Path
) -> None:
    # The synchronous path reserves its re-asks too: every reply is malformed, and the cap
    # leaves room for the first call and a little more, never for all 20 attempts.
    server = FakeServer(reply=malformed_mostly(1.0)).serve_in_thread()
    try:
        options: dict[str, Any] = {"max_tokens": 80, "max_attempts": 20}
        first = per_item(server, tmp_path / "p.db", prices, **options)
        cap = 3 * first
        with judge(server, tmp_path / "runs.db", prices, max_cost=cap, **options) as capped:
            result = capped.score(**{k: v for k, v in items(1)[0].items() if k != "id"})
            price = capped.prices.lookup(MODEL)
        assert price is not None
        bill = price.cost(server.prompt_tokens, server.completion_tokens)
    finally:
        server.stop()
    assert result.status == "error" and result.error_kind == "max_cost"
    assert "--max-cost" in (result.error or "") and result.attempts == server.requests >= 2
    assert result.cost_usd == pytest.approx(bill) and bill <= cap
