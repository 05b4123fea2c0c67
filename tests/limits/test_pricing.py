"""The price table: lookups, the snapshot rule, unknown models, and located errors in user files."""

from __future__ import annotations

from pathlib import Path

import pytest

from judgecards import Judge
from judgecards.errors import InputError
from judgecards.limits.pricing import MOCK_SOURCE, PRICES_ENV, format_cost, load_prices
from tests.fakes.http import Script, openai_chat, reference_judgment
from tests.fakes.judges import openai_judge


def test_every_shipped_entry_is_dated_and_sourced() -> None:
    table = load_prices()
    assert len(table.prices) >= 10
    for key, price in table.prices.items():
        assert key.split(":", 1)[0] in {"openai", "anthropic"}
        assert price.as_of[:2] == "20" and price.source.startswith("https://")
        assert price.output >= price.input > 0


def test_cost_is_tokens_times_the_per_million_rates() -> None:
    table = load_prices()
    price = table.lookup("openai:gpt-4o")
    assert price is not None
    expected = (1_000 * price.input + 500 * price.output) / 1_000_000
    assert table.cost("openai:gpt-4o", 1_000, 500) == pytest.approx(expected)


def test_dated_snapshots_fall_back_to_the_undated_entry_and_nothing_else_does() -> None:
    table = load_prices()
    assert table.lookup("openai:gpt-4o-2024-08-06") == table.lookup("openai:gpt-4o")
    assert table.lookup("anthropic:claude-sonnet-4-5-20250929") == table.lookup(
        "anthropic:claude-sonnet-4-5"
    )
    # Not a prefix rule: a different model sharing a prefix is not priced as gpt-4o.
    assert table.lookup("openai:gpt-4o-mini") != table.lookup("openai:gpt-4o")
    assert table.lookup("openai:gpt-4o-audio") is None
    # The provider is part of the key: the same name through another server is not priced.
    assert table.lookup("anthropic:gpt-4o") is None


def test_unknown_models_cost_unknown_never_zero() -> None:
    table = load_prices()
    assert table.cost("openai:my-local-llama", 100, 10) is None
    assert format_cost(table.cost("openai:my-local-llama", 100, 10)) == "unknown"
    # Nothing billed is nothing spent, priced or not.
    assert table.cost("openai:my-local-llama", 0, 0) == 0.0


def test_mock_models_are_free_and_say_so() -> None:
    table = load_prices()
    assert table.cost("mock:judge", 1_000, 1_000) == 0.0
    price = table.lookup("mock:judge")
    assert price is not None and price.source == MOCK_SOURCE


def test_a_user_file_overrides_and_adds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prices = tmp_path / "prices.yml"
    prices.write_text(
        "models:\n"
        "  openai:gpt-4o:\n"
        "    {input: 1.0, output: 2.0, as_of: '2026-11-01', source: our contract}\n"
        "  openai:local-llama:\n"
        "    {input: 0, output: 0, as_of: '2026-11-01', source: our own GPUs}\n"
    )
    table = load_prices(prices)
    assert table.cost("openai:gpt-4o", 1_000_000, 1_000_000) == pytest.approx(3.0)
    assert table.cost("openai:local-llama", 500, 500) == 0.0
    assert table.lookup("anthropic:claude-sonnet-4-5") is not None  # the rest stays
    assert table.files[-1] == str(prices)
    monkeypatch.setenv(PRICES_ENV, str(prices))
    assert load_prices().cost("openai:gpt-4o", 1_000_000, 0) == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("text", "line", "field", "reason"),
    [
        (
            "models:\n  openai:x:\n    input: 1\n    output: -2\n    as_of: '2026'\n    source: s\n",
            4,
            "openai:x.output",
            "greater than or equal to 0",
        ),
        (
            "models:\n  openai:x:\n    input: 1\n    output: 2\n    source: s\n",
            2,
            "openai:x.as_of",
            "Field required",
        ),
        (
            "models:\n  openai:x:\n    input: 1\n    output: 2\n    as_of: d\n    source: s\n"
            "    inptu_cached: 3\n",
            7,
            "openai:x.inptu_cached",
            "Extra inputs",
        ),
        ("models:\n  gpt-4o:\n    input: 1\n", 2, "gpt-4o", "provider:model"),
        ("prices:\n  openai:x: {}\n", 1, "models", "'models' mapping"),
    ],
)
def test_a_bad_user_file_is_refused_with_file_line_and_field(
    tmp_path: Path, text: str, line: int, field: str, reason: str
) -> None:
    prices = tmp_path / "prices.yml"
    prices.write_text(text)
    with pytest.raises(InputError) as caught:
        load_prices(prices)
    error = caught.value
    assert (error.file, error.line, error.field) == (str(prices), line, field)
    assert reason in str(error)


def test_a_syntax_error_and_a_missing_file_are_located(tmp_path: Path) -> None:
    prices = tmp_path / "prices.yml"
    prices.write_text("models:\n  openai:x: {input: 1,\n")
    with pytest.raises(InputError, match="invalid price file") as caught:
        load_prices(prices)
    assert caught.value.file == str(prices) and caught.value.line is not None
    with pytest.raises(InputError, match="cannot read price file") as missing:
        load_prices(tmp_path / "absent.yml")
    assert missing.value.file == str(tmp_path / "absent.yml")


# ---------------------------------------------------------------- results carry their cost

INPUTS = {
    "question": "What is the boiling point of water at sea level?",
    "gold_answer": "100 degrees Celsius (212 degrees Fahrenheit).",
    "model_output": "At sea level water boils at 100 °C.",
}


def test_a_result_costs_its_billed_tokens_re_asks_included_and_a_cached_one_nothing() -> None:
    # The first reply is unparseable, so the judge re-asks: both replies are billed.
    script = Script(
        openai_chat("I cannot decide.", prompt_tokens=900, completion_tokens=80),
        openai_chat(reference_judgment(), prompt_tokens=1_000, completion_tokens=100),
    )
    judge = openai_judge(script)
    result = judge.score(**INPUTS)
    assert result.ok and result.attempts == 2
    assert result.cost_usd == pytest.approx((1_900 * 2.50 + 180 * 10.00) / 1_000_000)

    again = judge.score(**INPUTS)  # served from the store: no call, nothing spent this time
    assert again.cached and again.cost_usd == 0.0 and len(script.requests) == 2
    stored = judge.store.get(result.id)
    assert stored is not None and stored[0].cost_usd == pytest.approx(result.cost_usd)


def test_an_unpriced_model_costs_unknown_and_a_price_file_prices_it(tmp_path: Path) -> None:
    script = Script(openai_chat(reference_judgment(), prompt_tokens=2_000, completion_tokens=500))
    result = openai_judge(script, model="local-llama").score(**INPUTS)
    assert result.ok and result.cost_usd is None

    prices = tmp_path / "prices.yml"
    prices.write_text(
        "models:\n  openai:local-llama: {input: 1, output: 4, as_of: '2026-11-01', source: us}\n"
    )
    script = Script(openai_chat(reference_judgment(), prompt_tokens=2_000, completion_tokens=500))
    judge = openai_judge(script, model="local-llama", prices=prices, cache=False)
    assert judge.score(**INPUTS).cost_usd == pytest.approx((2_000 + 500 * 4) / 1_000_000)


def test_mock_judgments_cost_nothing() -> None:
    result = Judge("reference@1", "mock:judge").score(**INPUTS)
    assert result.usage.input_tokens > 0 and result.cost_usd == 0.0
