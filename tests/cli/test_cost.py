"""``judgecards cost`` and the run summaries' cost line, over results judged through the real
OpenAI SDK (scripted HTTP) so the tokens and prices are the ones a real run records."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from judgecards.cli import cli
from judgecards.limits import counter_for
from judgecards.storage import Store
from tests.builders import EVAL_SURVIVORS, EVAL_YAML, canned_query, cli_json, eval_setup, run_cli
from tests.fakes.http import Script, openai_chat, reference_judgment
from tests.fakes.judges import openai_judge
from tests.fakes.server import FakeServer, card_reply

pytest_plugins = ["pytester"]

QUESTION = {"question": "Boiling point of water at sea level?", "gold_answer": "100 °C"}
GPT4O = (2.50, 10.00)  # the shipped list price per million tokens (input, output)


def judge_items(db: Path, model: str, n: int, tokens: tuple[int, int]) -> None:
    replies = [
        openai_chat(reference_judgment(), prompt_tokens=tokens[0], completion_tokens=tokens[1])
        for _ in range(n)
    ]
    with openai_judge(Script(*replies), model=model, db=db) as judge:
        for i in range(n):
            output = f"{model} answer {i} ({tokens[0]} tokens)"
            assert judge.score(**QUESTION, model_output=output).ok


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "runs.db"
    judge_items(path, "gpt-4o-2024-08-06", 3, (1_000, 200))  # priced through its snapshot
    judge_items(path, "local-llama", 2, (500, 50))  # no price: unknown
    return path


def test_totals_by_model_price_what_was_billed_and_keep_unknown_apart(db: Path) -> None:
    result = run_cli("cost", "--db", db, "--by", "model", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    groups = {group["group"]: group for group in report["groups"]}
    priced = groups["openai:gpt-4o-2024-08-06"]
    assert (priced["results"], priced["input_tokens"], priced["output_tokens"]) == (3, 3_000, 600)
    assert priced["cost_usd"] == pytest.approx((3_000 * GPT4O[0] + 600 * GPT4O[1]) / 1e6)
    unpriced = groups["openai:local-llama"]
    assert unpriced["cost_usd"] is None and unpriced["unknown_cost_results"] == 2
    total = report["total"]
    # A total with unknown parts is not a total: null, with the known part beside it.
    assert total["cost_usd"] is None and total["unknown_cost_results"] == 2
    assert total["known_cost_usd"] == pytest.approx(priced["cost_usd"])
    assert total["results"] == 5


def test_the_table_says_unknown_and_filters_narrow_it(db: Path) -> None:
    table = run_cli("cost", "--db", db)
    assert table.exit_code == 0, table.output
    assert "unknown (2 results)" in table.output and "$0.0135" in table.output
    only = run_cli("cost", "--db", db, "--model", "openai:gpt-4o-2024-08-06", "--by", "card")
    assert "reference@1" in only.output and "unknown" not in only.output
    future = run_cli("cost", "--db", db, "--since", "2999-01-01", "--json")
    assert json.loads(future.stdout)["groups"] == []
    assert run_cli("cost", "--db", db, "--since", "2999-01-01").output.strip() == (
        "no stored results match"
    )


def test_by_day_groups_on_the_utc_date(db: Path) -> None:
    report = cli_json("cost", "--db", db, "--by", "day", "--json")
    [day] = report["groups"]
    with Store(db) as store:
        first = next(store.results())[0]
    assert day["group"] == first.created_at.date().isoformat() and day["results"] == 5


def test_a_re_run_from_cache_costs_nothing_and_adds_nothing(db: Path) -> None:
    before = cli_json("cost", "--db", db, "--json")["total"]
    with openai_judge(Script(), model="gpt-4o-2024-08-06", db=db) as judge:
        again = judge.score(**QUESTION, model_output="gpt-4o-2024-08-06 answer 0 (1000 tokens)")
    assert again.cached and again.cost_usd == 0.0
    assert cli_json("cost", "--db", db, "--json")["total"] == before


def test_rows_from_before_costs_were_recorded_read_as_unknown(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    judge_items(path, "gpt-4o", 1, (1_000, 100))
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("UPDATE results SET cost_usd = NULL")  # as m005 leaves a billed old row
    total = cli_json("cost", "--db", path, "--json")["total"]
    assert total["cost_usd"] is None and total["unknown_cost_results"] == 1


def test_bad_arguments_fail_before_anything_is_read(tmp_path: Path) -> None:
    missing = run_cli("cost", "--db", tmp_path / "absent.db")
    assert missing.exit_code == 2 and "no such file" in missing.output
    assert not (tmp_path / "absent.db").exists()
    bad_date = run_cli("cost", "--db", tmp_path / "absent.db", "--since", "2026-13-01")
    assert bad_date.exit_code == 2 and "--since" in bad_date.output
    assert run_cli("cost", "--by", "week").exit_code == 2


def test_score_summary_reports_this_runs_cost_and_unknown(
    tmp_path: Path, serve: Callable[..., FakeServer]
) -> None:
    server = serve()
    items = tmp_path / "items.jsonl"
    items.write_text(
        "".join(json.dumps({"id": f"q{i}", **QUESTION, "model_output": f"{i} °C"}) + "\n"
                for i in range(3))
    )  # fmt: skip
    runner = CliRunner(env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": None})

    def score(model: str) -> tuple[str, list[dict[str, Any]]]:
        output = tmp_path / "out.jsonl"
        result = runner.invoke(cli, [
            "score", "--card", "reference@1", "--model", model, str(items),
            "--output", str(output), "--db", str(tmp_path / "s.db"),
        ])  # fmt: skip
        assert result.exit_code == 0, result.output
        line = next(x for x in result.stdout.splitlines() if x.startswith("cost:"))
        return line, [json.loads(x) for x in output.read_text().splitlines()]

    line, results = score("openai:gpt-4o")
    tokens_in = sum(r["usage"]["input_tokens"] for r in results)
    tokens_out = sum(r["usage"]["output_tokens"] for r in results)
    assert tokens_in > 0
    expected = (tokens_in * GPT4O[0] + tokens_out * GPT4O[1]) / 1e6
    assert line == f"cost:      ${expected:.4f} this run"
    line, _ = score("openai:gpt-4o")
    assert line == "cost:      $0.0000 this run, 3 served from cache at no cost"
    line, _ = score("openai:local-judge")
    assert line.startswith("cost:      unknown this run (3 result(s) on a model with no price")


def test_compare_summary_and_json_give_this_runs_cost(
    tmp_path: Path, serve: Callable[..., FakeServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = serve(reply=card_reply)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.chdir(tmp_path)
    rows = [{"id": f"q{i}", "question": f"Q{i}?"} for i in range(3)]
    for side in "ab":
        Path(f"{side}.jsonl").write_text(
            "".join(json.dumps({**r, "answer": f"{side} says {i}"}) + "\n" for i, r in enumerate(rows))
        )  # fmt: skip
    args = ["compare", "--model", "openai:gpt-4o", "--a", "a.jsonl", "--b", "b.jsonl",
            "--output", "out.jsonl", "--db", "c.db"]  # fmt: skip

    first = run_cli(*args)
    assert first.exit_code == 0, first.output
    orders = [
        json.loads(line)[order]
        for line in Path("out.jsonl").read_text().splitlines()
        for order in ("first_order", "second_order")
    ]
    costs = [order["cost_usd"] for order in orders]
    assert len(costs) == 6 and all(cost > 0 for cost in costs)
    assert f"cost:      ${sum(costs):.4f} this run" in first.stdout.splitlines()
    with Store(tmp_path / "c.db") as store:  # the same costs are what was stored
        assert sum(r.cost_usd or 0 for r, _ in store.results()) == pytest.approx(sum(costs))

    again = run_cli(*args, "--json")
    assert json.loads(again.stdout)["cost_usd"] == 0.0


def test_eval_reports_the_judge_tiers_cost(
    tmp_path: Path, serve: Callable[..., FakeServer], monkeypatch: pytest.MonkeyPatch
) -> None:

    server = serve()
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    config = eval_setup(tmp_path, EVAL_YAML, model="openai:gpt-4o")
    args = ["eval", str(config), "--db", str(tmp_path / "e.db")]

    report = json.loads(run_cli(*args, "--json").stdout)
    judged = [r["judge"] for r in report["results"] if r["judge"]]
    assert len(judged) == EVAL_SURVIVORS and all(j["cost_usd"] > 0 for j in judged)
    assert report["cost_usd"] == pytest.approx(sum(j["cost_usd"] for j in judged))
    text = run_cli(*args).stdout
    assert "cost:      $0.0000 this run, 2 served from cache at no cost" in text


PLUGIN_SUITE = """
def test_judged(judge):
    j = judge("reference@1", model="openai:local-judge")
    assert j.score(question="Capital of France?", gold_answer="Paris", model_output="Paris").ok
"""


def test_the_pytest_session_table_has_a_cost_row_unknown_until_priced(
    pytester: pytest.Pytester, serve: Callable[..., FakeServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = serve()
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    pytester.makepyfile(test_inner=PLUGIN_SUITE)

    unpriced = pytester.runpytest("--judge-db=unpriced.db", "-p", "no:cacheprovider")
    unpriced.assert_outcomes(passed=1)
    text = unpriced.stdout.str()
    assert re.search(r"^cost\s+unknown$", text, re.M)
    assert "cost: 1 judgment(s) on a model with no price ($0.0000 known)" in text

    prices = pytester.path / "prices.yml"
    prices.write_text(
        "models:\n  openai:local-judge: {input: 1000, output: 1000, as_of: '2026-11', source: t}\n"
    )
    monkeypatch.setenv("JUDGECARDS_PRICES", str(prices))
    priced = pytester.runpytest("--judge-db=priced.db", "-p", "no:cacheprovider")
    priced.assert_outcomes(passed=1)
    [cost] = re.findall(r"^cost\s+\$(\d+\.\d{4})$", priced.stdout.str(), re.M)
    assert float(cost) > 0


def test_datasette_costliest_items_rank_by_cost_then_tokens_unknown_last(tmp_path: Path) -> None:

    path = tmp_path / "ranked.db"
    judge_items(path, "gpt-4o-mini", 1, (9_000, 900))  # $0.00189: most tokens, cheapest model
    judge_items(path, "gpt-4o", 1, (2_000, 200))  # $0.0070
    judge_items(path, "gpt-4o", 1, (1_000, 500))  # $0.0075
    judge_items(path, "gpt-4o", 1, (3_000, 0))  # $0.0075 too: more tokens, so first
    judge_items(path, "local-llama", 1, (50_000, 5_000))  # unknown: after every priced one
    rows = canned_query(path, "costliest_items")
    assert [(row["model"], row["tokens"]) for row in rows] == [
        ("openai:gpt-4o", 3_000),
        ("openai:gpt-4o", 1_500),
        ("openai:gpt-4o", 2_200),
        ("openai:gpt-4o-mini", 9_900),
        ("openai:local-llama", 55_000),
    ]
    assert rows[0]["cost_usd"] == pytest.approx(0.0075) and rows[-1]["cost_usd"] is None


@pytest.mark.parametrize("command", ["score", "compare", "eval"])
def test_a_bad_price_file_stops_a_run_before_anything_is_judged(
    tmp_path: Path, command: str
) -> None:
    prices = tmp_path / "prices.yml"
    prices.write_text("models:\n  openai:x:\n    input: 1\n    output: oops\n")
    db = tmp_path / "never.db"
    result = run_cli(command, "--prices", prices, "--db", db, *{
        "score": ["--card", "reference@1", "--model", "mock:judge", "i.jsonl",
                  "--output", tmp_path / "o.jsonl"],
        "compare": ["--model", "mock:judge", "--a", "a.jsonl", "--b", "b.jsonl",
                    "--output", tmp_path / "o.jsonl"],
        "eval": [tmp_path / "missing.yaml"],
    }[command])  # fmt: skip
    assert result.exit_code == 2
    assert f"{prices}:4, field 'openai:x.output'" in result.output
    assert not db.exists()


def test_score_prices_an_unpriced_model_with_prices(
    tmp_path: Path, serve: Callable[..., FakeServer]
) -> None:
    server = serve()
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps({"id": "q", **QUESTION, "model_output": "100 °C"}) + "\n")
    prices = tmp_path / "prices.yml"
    prices.write_text(
        "models:\n  openai:local-judge: {input: 1000000, output: 0, as_of: '2026-11', source: t}\n"
    )
    result = CliRunner(env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": None}).invoke(
        cli,
        ["score", "--card", "reference@1", "--model", "openai:local-judge", str(items),
         "--output", str(tmp_path / "o.jsonl"), "--db", str(tmp_path / "p.db"),
         "--prices", str(prices)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    [row] = [json.loads(line) for line in (tmp_path / "o.jsonl").read_text().splitlines()]
    # $1 per input token: the cost is the input token count, in dollars.
    assert row["cost_usd"] == pytest.approx(row["usage"]["input_tokens"])
    assert f"cost:      ${row['usage']['input_tokens']:.4f} this run" in result.stdout


def test_a_database_from_before_costs_is_upgraded_not_misread(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    judge_items(path, "gpt-4o", 1, (1_000, 100))
    with closing(sqlite3.connect(path)) as conn, conn:  # as judgecards left it before m005
        conn.execute("ALTER TABLE results DROP COLUMN cost_usd")
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = 'm005_result_cost'")
    # A read-only command cannot add the column: it says so instead of "no such column".
    refused = run_cli("export", "results", "--db", path, "--output", tmp_path / "r.jsonl")
    assert refused.exit_code == 2
    assert "written by an older judgecards (not yet applied: m005_result_cost)" in refused.output
    # `cost` migrates: the billed old row reads as unknown, and then exports work again.
    total = cli_json("cost", "--db", path, "--json")["total"]
    assert total["cost_usd"] is None and total["unknown_cost_results"] == 1
    exported = run_cli("export", "results", "--db", path, "--output", tmp_path / "r.jsonl")
    assert exported.exit_code == 0, exported.output
    [row] = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert row["cost_usd"] is None and row["input_tokens"] == 1_000


# ---------------------------------------------------------------- --plan


def compact(response_format: dict[str, Any]) -> str:
    """The schema of a ``response_format`` as the compact JSON its tokens are counted on."""
    schema = response_format["json_schema"]["schema"]
    return json.dumps(schema, separators=(",", ":"), ensure_ascii=False)


def test_plan_estimates_the_prompts_it_would_send_and_calls_nothing() -> None:
    items = [{"id": f"q{i}", **QUESTION, "model_output": f"{i} °C"} for i in range(3)]
    items.append({"id": "bad", "question": "no gold answer", "model_output": "x"})
    script = Script(
        *(
            openai_chat(reference_judgment(), prompt_tokens=900, completion_tokens=90)
            for _ in range(3)
        )
    )
    judge = openai_judge(script)
    plan = judge.plan(items)
    assert script.requests == []  # planning sends nothing
    assert (plan.items, plan.to_judge, plan.stored, plan.refused) == (4, 3, 0, 1)

    judge.score_many(items, concurrency=1)
    # The count is over exactly what is then sent and billed as input: the messages (the
    # OpenAI body carries the system prompt as the first) and the schema sent natively, each
    # text counted by OpenAI's tokenizer (the `tokens` extra is part of the test install).
    count = counter_for("openai:gpt-4o")
    assert plan.token_method == count.method == "o200k_base (tiktoken)" and count.encode
    texts = [
        [*(m["content"] for m in body["messages"]), compact(body["response_format"])]
        for body in script.bodies()
    ]
    assert plan.input_tokens == sum(count.encode(text) for sent in texts for text in sent)
    schema_tokens = sum(count.encode(sent[-1]) for sent in texts)
    assert schema_tokens > 3 * 100  # the schema is a large share of what is billed
    assert plan.max_output_tokens == 3 * judge.max_tokens
    low, high = plan.live_cost() or (0, 0)
    assert low == pytest.approx(plan.input_tokens * GPT4O[0] / 1e6)
    assert high == pytest.approx(low + 3 * judge.max_tokens * GPT4O[1] / 1e6)
    assert plan.batch_cost() == pytest.approx((low / 2, high / 2))
    assert judge.plan(items).to_judge == 0 and judge.plan(items).stored == 3


def test_score_plan_prints_the_projection_and_judges_nothing(
    tmp_path: Path, serve: Callable[..., FakeServer]
) -> None:
    server = serve()
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps({"id": "q", **QUESTION, "model_output": "100 °C"}) + "\n")
    output = tmp_path / "o.jsonl"
    runner = CliRunner(env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": None})

    def plan(model: str) -> Result:
        return runner.invoke(cli, [
            "score", "--card", "reference@1", "--model", model, str(items),
            "--output", str(output), "--db", str(tmp_path / "p.db"), "--plan",
        ])  # fmt: skip

    priced = plan("openai:gpt-4o")
    assert priced.exit_code == 0, priced.output
    assert "1 to judge, 0 already stored" in priced.stdout
    assert re.search(r"cost live: \$\d\.\d{4} to \$\d\.\d{4}", priced.stdout)
    unpriced = plan("openai:local-judge")
    assert "cost live: unknown (openai:local-judge has no price" in unpriced.stdout
    assert server.requests == 0 and not output.exists()
    assert not (tmp_path / "p.db").exists()  # a plan creates no database
