"""Parsing judge replies: fenced, prose-wrapped, repeated, truncated, final-token."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgecards.cards import load_card
from judgecards.errors import JudgeOutputError
from judgecards.parse import extract_json, parse_reply
from judgecards.schemas import ReferenceJudgment
from tests.fakes.http import reference_judgment

USER_CARDS = Path(__file__).parent / "fixtures" / "cards" / "user"


@pytest.fixture(scope="module")
def reference():  # type: ignore[no-untyped-def]
    return load_card("reference@1")


@pytest.fixture(scope="module")
def rating():  # type: ignore[no-untyped-def]
    return load_card("rating@1", cards_dir=USER_CARDS)


# ---------------------------------------------------------------- extract_json


def test_bare_json() -> None:
    assert extract_json('{"a": 1}') == {"a": 1}
    assert extract_json('  \n{"a": 1}\n ') == {"a": 1}


@pytest.mark.parametrize(
    "text",
    [
        '```json\n{"a": 1}\n```',
        '```JSON\n{"a": 1}\n```',
        '```\n{"a": 1}\n```',
        'Here you go:\n```json\n{"a": 1}\n```\nAnything else?',
        '```json{"a": 1}```',
    ],
)
def test_fenced_json(text: str) -> None:
    assert extract_json(text) == {"a": 1}


def test_fenced_block_wins_over_bare_objects_in_the_prose() -> None:
    text = 'The schema says {"type": "object"}.\n```json\n{"a": 1}\n```\nNot {"b": 2} though.'
    assert extract_json(text) == {"a": 1}


def test_last_of_several_fenced_blocks_wins() -> None:
    # A judge that first echoes an example and then gives its answer: the answer is the last block.
    text = 'For example:\n```json\n{"a": 0}\n```\nMy judgment:\n```json\n{"a": 1}\n```'
    assert extract_json(text) == {"a": 1}


def test_prose_around_json() -> None:
    text = 'Let me think step by step. The output is right.\n{"score": 5, "why": "correct"}\nThat is my verdict.'
    assert extract_json(text) == {"score": 5, "why": "correct"}


def test_last_object_wins() -> None:
    text = 'A first draft: {"score": 2}. On reflection, I revise it: {"score": 4}'
    assert extract_json(text) == {"score": 4}


def test_nested_braces_inside_strings() -> None:
    value = {
        "delta": "uses {braces} and a lone } and {",
        "scores": {"x": 1},
        "code": "def f(): return {}",
    }
    text = "Result: " + json.dumps(value) + " done."
    assert extract_json(text) == value


def test_a_stray_open_brace_in_prose_before_the_object() -> None:
    text = 'The set {1, 2 is not closed. Answer: {"a": 1}'
    assert extract_json(text) == {"a": 1}


def test_top_level_array_is_not_an_object() -> None:
    assert extract_json('[1, 2] and then {"a": 1}') == {"a": 1}
    with pytest.raises(JudgeOutputError):
        extract_json("[1, 2, 3]")


def test_no_json_at_all() -> None:
    with pytest.raises(JudgeOutputError) as caught:
        extract_json("I think the answer is fine.")
    assert caught.value.problems == ["reply contains no JSON object"]
    assert caught.value.raw_reply == "I think the answer is fine."


def test_truncated_json_is_reported_as_such() -> None:
    text = '{"scores": {"correctness": 5, "completeness": 4'
    with pytest.raises(JudgeOutputError) as caught:
        extract_json(text)
    assert "no complete JSON object" in caught.value.problems[0]
    assert caught.value.truncated is False


# ---------------------------------------------------------------- parse_reply (json cards)


def test_parse_reply_validates_against_the_card_model(reference) -> None:  # type: ignore[no-untyped-def]
    judgment = parse_reply(
        reference, f"```json\n{reference_judgment(4, 3, verdict='partial_match')}\n```"
    )
    assert isinstance(judgment, ReferenceJudgment)
    assert judgment.scores.correctness == 4 and judgment.verdict == "partial_match"


def test_parse_reply_problems_are_loc_colon_msg(reference) -> None:  # type: ignore[no-untyped-def]
    reply = json.dumps(
        {"scores": {"correctness": 0, "completeness": 4}, "style_relevant": False, "verdict": "yes"}
    )
    with pytest.raises(JudgeOutputError) as caught:
        parse_reply(reference, reply)
    problems = caught.value.problems
    assert "scores.correctness: Input should be greater than or equal to 1" in problems
    assert "scores.style_fidelity: Field required" in problems
    assert "verdict: Input should be 'match', 'partial_match' or 'mismatch'" in problems
    assert "delta: Field required" in problems
    assert all("https://" not in p for p in problems)  # include_url=False
    assert caught.value.raw_reply == reply


def test_parse_reply_model_level_rule(reference) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(JudgeOutputError) as caught:
        parse_reply(reference, reference_judgment(5, 5, 3, style_relevant=False))
    assert caught.value.problems == [
        "(root): Value error, scores.style_fidelity must be 5 when style_relevant is false"
    ]


def test_parse_reply_sentence_length(reference) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(JudgeOutputError) as caught:
        parse_reply(reference, reference_judgment(delta="word " * 31))
    assert caught.value.problems == ["delta: Value error, must be at most 30 words, got 31"]


def test_parse_reply_ignores_extra_keys(reference) -> None:  # type: ignore[no-untyped-def]
    judgment = parse_reply(reference, reference_judgment(confidence="high"))
    assert "confidence" not in judgment.model_dump()


def test_parse_reply_truncated_flag_is_carried(reference) -> None:  # type: ignore[no-untyped-def]
    cut = reference_judgment()[:60]
    with pytest.raises(JudgeOutputError) as caught:
        parse_reply(reference, cut, truncated=True)
    assert caught.value.truncated is True
    assert "the reply was cut off at the token limit" in caught.value.problems
    with pytest.raises(JudgeOutputError) as untruncated:
        parse_reply(reference, cut)
    assert untruncated.value.truncated is False


# ---------------------------------------------------------------- final-token cards


def test_final_token_takes_the_last_match(rating) -> None:  # type: ignore[no-untyped-def]
    text = 'The instructions ask for "Rating: [[5]]" format.\nThe answer is good but thin.\nRating: [[7]]'
    judgment = parse_reply(rating, text)
    assert judgment.model_dump()["rating"] == 7
    assert judgment.model_dump()["reasoning"].endswith("good but thin.")


def test_final_token_tolerates_spaces_inside_the_brackets(rating) -> None:  # type: ignore[no-untyped-def]
    assert parse_reply(rating, "Fine.\nRating: [[ 10 ]]").model_dump()["rating"] == 10


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("Rating: [[11]]", "rating: Input should be less than or equal to 10"),
        ("Rating: [[0]]", "rating: Input should be greater than or equal to 1"),
        ("Rating: [[-3]]", "rating: Input should be greater than or equal to 1"),
        ("Rating: [[7.5]]", "rating: must be a whole number, got 7.5"),
        ("I would give it a seven.", "no final line of the form 'Rating: [[{value}]]' found"),
        (
            "Rating: [[8]] was my first thought, but Rating: [[12]]",
            "rating: Input should be less than or equal to 10",
        ),
    ],
)
def test_final_token_problems(rating, text: str, problem: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(JudgeOutputError) as caught:
        parse_reply(rating, text)
    assert caught.value.problems == [problem]
