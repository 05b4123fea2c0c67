"""The mock provider: a reply queue, a request history, and synthetic replies written from
structured descriptions (a final line's template and range, the request's JSON Schema), never
from a card's wording."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from judgecards import Judge
from judgecards.providers.base import CompletionRequest, Message
from judgecards.providers.mock import FinalLine, MockProvider

SCHEMA = {
    "type": "object",
    "properties": {
        "relevant": {"type": "boolean"},
        "score": {"type": "integer", "enum": [1, 2, 3, 4, 5]},
        "why": {"type": "string"},
    },
}


def request(text: str = "Judge this.", schema: Any = None) -> CompletionRequest:
    return CompletionRequest(
        model="judge", messages=(Message("user", text),), response_schema=schema
    )


def test_queued_replies_come_first_then_synthetic_ones_and_every_request_is_recorded() -> None:
    mock = MockProvider(
        replies=["first", RuntimeError("boom")], final_line=FinalLine("[[{value}]]", 1, 3)
    )
    assert mock.complete(request()).text == "first"
    try:
        mock.complete(request())
    except RuntimeError as error:
        assert str(error) == "boom"
    else:  # pragma: no cover
        raise AssertionError("the queued exception was not raised")
    synthetic = mock.complete(request())
    assert re.fullmatch(r"Mock reasoning: .*\n\[\[[123]\]\]", synthetic.text)
    assert synthetic.model == "mock:judge"  # labelled as the mock's, always
    assert len(mock.history) == 3


def test_a_final_line_is_written_from_its_template_and_range() -> None:
    mock = MockProvider(final_line=FinalLine("Score: <{value}> of 4", 3, 4))
    values = {mock.complete(request(f"item {i}")).text.splitlines()[-1] for i in range(30)}
    assert values == {"Score: <3> of 4", "Score: <4> of 4"}


def test_json_replies_follow_the_requests_schema_and_the_acceptance_check() -> None:
    # A rule no JSON Schema states: a score above 2 needs relevant = true.
    def accept(data: Any) -> bool:
        return bool(data["relevant"]) or data["score"] <= 2

    mock = MockProvider(accept=accept)
    replies = [json.loads(mock.complete(request(f"item {i}", SCHEMA)).text) for i in range(40)]
    assert all(
        set(r) == {"relevant", "score", "why"} and r["score"] in range(1, 6) for r in replies
    )
    assert all(accept(r) for r in replies)
    assert {r["relevant"] for r in replies} == {True, False}
    # The same conversation always gets the same reply.
    assert mock.complete(request("item 3", SCHEMA)).text == json.dumps(replies[3])


def test_without_a_schema_or_a_final_line_the_reply_is_a_placeholder() -> None:
    assert MockProvider().complete(request()).text == '{"mock": true}'


def test_reference_items_are_valid_at_the_first_attempt() -> None:
    # The reference card's cross-field rule (style 5 when style is not relevant) is enforced by
    # the judge's validator passed to the mock, so no item needs a re-ask.
    items = [
        {"id": str(i), "question": f"Q{i}?", "gold_answer": "G.", "model_output": f"O{i}."}
        for i in range(25)
    ]
    results = Judge("reference@1", "mock:judge").score_many(items)
    assert {(r.status, r.attempts, r.model) for r in results} == {("ok", 1, "mock:judge")}
    assert len({r.verdict for r in results}) > 1


CARD = """---
name: graded
version: 1
description: A criteria card worded nothing like rubric@1.
inputs:
  answer: {description: The answer.}
  criteria: {description: The criteria.}
output:
  format: json
  schema: judgecards.schemas:RubricJudgment
---
Grade <answer> on these aspects:
{% for c in criteria %}
* {{ c.description }} -> key "{{ c.name }}", range {{ c.scale_min }}..{{ c.scale_max }}
{% endfor %}

<answer>
{{ answer }}
</answer>

Schema:
{{ output_schema }}
"""


def test_the_mock_needs_no_particular_card_wording(tmp_path: Path) -> None:
    # The old mock read criteria with a regex over rubric@1's "- name (scale a to b):" lines, so
    # any other criteria card got an empty, invalid reply.
    (tmp_path / "graded").mkdir()
    (tmp_path / "graded" / "v1.md.j2").write_text(CARD, encoding="utf-8")
    judge = Judge("graded", "mock:judge", cards_dir=tmp_path)
    result = judge.score(
        answer="Fine.",
        criteria=[
            {"name": "clarity", "description": "Clear.", "scale": [0, 3]},
            {"name": "grammar", "description": "Correct.", "scale": [1, 7]},
        ],
    )
    assert result.status == "ok" and result.attempts == 1
    assert 0 <= result.scores["clarity"] <= 3 and 1 <= result.scores["grammar"] <= 7
