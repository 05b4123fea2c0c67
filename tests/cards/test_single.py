"""``single@1`` and ``single-multi-turn@1`` (MT-Bench style 1–10 ratings) through the real SDKs.

The rating line ``Rating: [[N]]`` is parsed strictly: the last one counts, and a missing, decimal
or out-of-range rating is a validation failure that is re-asked with the problem stated.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from judgecards import Judge, MissingInput
from judgecards.cards import load_card, render
from tests.fakes.http import Script, anthropic_message, openai_chat
from tests.fakes.judges import anthropic_judge, openai_judge
from tests.fakes.server import tagged

ITEM = {
    "question": "Explain why the sky is blue.",
    "answer": "Rayleigh scattering favours short wavelengths.",
}


def judge_on(script: Script, card: str = "single@1", **options: Any) -> Judge:
    return openai_judge(script, card, **options)


def sent(script: Script, index: int = 0) -> list[dict[str, str]]:
    return list(json.loads(script.requests[index].content)["messages"])


def test_cards_are_released_with_strict_final_line() -> None:
    for ref in ("single", "single-multi-turn"):
        card = load_card(ref)
        assert card.released
        output = card.spec.output
        assert (output.format, output.line, output.min, output.max) == (
            "final_token",
            "Rating: [[{value}]]",
            1,
            10,
        )
        assert list(card.score_axes) == ["rating"]


def test_rating_is_parsed_from_the_last_line() -> None:
    reply = (
        'The instructions ask for "Rating: [[3]]"-style output.\n'
        "The answer is correct but brief; it names the mechanism without explaining it.\n"
        "Rating: [[6]]"
    )
    script = Script(openai_chat(reply))
    result = judge_on(script).score(**ITEM)
    assert result.status == "ok" and result.scores == {"rating": 6}
    assert result.output is not None and result.output["rating"] == 6
    assert "correct but brief" in result.output["reasoning"]
    body = json.loads(script.requests[0].content)
    assert body["temperature"] == 0 and "logprobs" not in body  # sampled rating unless asked
    user = sent(script)[-1]["content"]
    assert tagged(user, "answer") == ITEM["answer"] and "Rating: [[N]]" in user
    assert "<reference>" not in user


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        ("Good answer overall.", "no final line of the form 'Rating: [[N]]' found"),
        ("Superb.\nRating: [[11]]", "rating: Input should be less than or equal to 10"),
        ("Weak.\nRating: [[0]]", "rating: Input should be greater than or equal to 1"),
        ("Decent.\nRating: [[7.5]]", "rating: must be a whole number, got 7.5"),
    ],
)
def test_missing_or_out_of_range_rating_is_re_asked(bad: str, problem: str) -> None:
    script = Script(openai_chat(bad), openai_chat("Accurate and clear.\nRating: [[8]]"))
    result = judge_on(script).score(**ITEM)
    assert result.status == "ok" and result.scores == {"rating": 8} and result.attempts == 2
    reask = sent(script, 1)
    assert reask[-2] == {"role": "assistant", "content": bad}
    assert problem in reask[-1]["content"]
    assert "whole number from 1 to 10" in reask[-1]["content"]


def test_exhausted_re_asks_become_an_error_record() -> None:
    script = Script(openai_chat("No rating here."), openai_chat("Still none."))
    result = judge_on(script, max_attempts=2).score(**ITEM)
    assert result.status == "error" and result.error_kind == "invalid_output"
    assert result.raw_reply == "Still none." and result.attempts == 2


def test_reference_is_optional_and_shown_when_given() -> None:
    script = Script(openai_chat("Wrong by a factor of two.\nRating: [[2]]"))
    result = judge_on(script).score(question="What is 6 x 7?", answer="84", reference="42")
    assert result.scores == {"rating": 2}
    assert tagged(sent(script)[-1]["content"], "reference") == "42"


def test_multi_turn_rates_the_second_answer_given_the_first_turn() -> None:
    item = {
        "question": "Name a prime number.",
        "answer_1": "7 is prime.",
        "follow_up": "Now name an even one.",
        "answer_2": "2 is the only even prime.",
    }
    text = render(load_card("single-multi-turn@1"), item).user
    for name, value in item.items():
        assert tagged(text, name) == value
    assert text.index("<answer_1>\n") < text.index("<follow_up>\n") < text.index("<answer_2>\n")
    script = Script(openai_chat("Correct and builds on the first answer.\nRating: [[9]]"))
    result = judge_on(script, "single-multi-turn@1").score(**item)
    assert (
        result.status == "ok"
        and result.scores == {"rating": 9}
        and result.card == "single-multi-turn@1"
    )
    with pytest.raises(MissingInput, match="follow_up"):
        judge_on(Script(), "single-multi-turn").score(question="q", answer_1="a", answer_2="b")


def test_batch_through_the_async_client_and_the_anthropic_sdk() -> None:
    script = Script(default=lambda request: anthropic_message("Helpful.\nRating: [[7]]"))
    judge = anthropic_judge(script, "single@1")
    results = judge.score_many(
        [{"id": i, **ITEM, "answer": f"{ITEM['answer']} ({i})"} for i in range(4)]
    )
    assert [r.scores for r in results] == [{"rating": 7}] * 4
    assert {r.url.path for r in script.requests} == {"/v1/messages"}
