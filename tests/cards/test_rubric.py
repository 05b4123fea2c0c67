"""``rubric@1``: criteria given as data, each scored separately, never collapsed unless asked.

Validation needs the item's criteria (which names, which scales), so it runs after the schema
check and feeds the same re-ask loop: a missing criterion or an out-of-scale score is sent back
to the judge as ``loc: message`` problems.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from pydantic import ValidationError

from judgecards import Judge, MissingInput
from judgecards.cards import load_card
from judgecards.providers.mock import MockProvider
from judgecards.schemas import (
    DEFAULT_CRITERIA,
    Criterion,
    RubricPolicy,
    criteria_from,
    rubric_schema,
)
from tests.fakes.http import Script, anthropic_message, openai_chat
from tests.fakes.judges import anthropic_judge, openai_judge
from tests.fakes.server import card_reply, tagged

NAMES = ["faithfulness", "relevance", "coherence", "conciseness"]
ITEM = {
    "question": "Summarise the memo in one sentence.",
    "answer": "The launch moves to May because testing found two defects.",
    "context": "Memo: testing found two blocking defects; the launch moves from April to May.",
}


def reply(scores: dict[str, int]) -> str:
    return json.dumps(
        {
            "scores": [
                {"name": n, "reason": f"Why {n} got {s}.", "score": s} for n, s in scores.items()
            ]
        }
    )


def judge_on(script: Script, **options: Any) -> Judge:
    """An OpenAI-SDK judge with logprobs off, so these tests see sampled scores."""
    options.setdefault("top_logprobs", None)
    return openai_judge(script, "rubric@1", **options)


def user_turn(script: Script, index: int = 0) -> str:
    return str(json.loads(script.requests[index].content)["messages"][-1]["content"])


def test_default_criteria_are_rendered_and_scored_separately() -> None:
    assert load_card("rubric@1").released
    assert [c.name for c in DEFAULT_CRITERIA] == NAMES
    assert {(c.scale_min, c.scale_max) for c in DEFAULT_CRITERIA} == {(1, 5)}
    script = Script(
        openai_chat(reply({"faithfulness": 5, "relevance": 5, "coherence": 4, "conciseness": 3}))
    )
    result = judge_on(script).score(**ITEM)
    assert result.status == "ok"
    assert result.scores == {"faithfulness": 5, "relevance": 5, "coherence": 4, "conciseness": 3}
    assert (
        result.verdict is None and "aggregate" not in result.scores
    )  # nothing collapsed by default
    assert result.output is not None and "rubric" not in result.output
    assert result.output["scores"][0]["reason"] == "Why faithfulness got 5."
    prompt = user_turn(script)
    for criterion in DEFAULT_CRITERIA:
        assert f"- {criterion.name} (scale 1 to 5): {criterion.description}" in prompt
    assert tagged(prompt, "context") == ITEM["context"]


def test_missing_criterion_and_out_of_scale_score_are_re_asked() -> None:
    bad = reply({"faithfulness": 6, "relevance": 5, "conciseness": 3, "tone": 4})
    good = reply({"faithfulness": 5, "relevance": 5, "coherence": 4, "conciseness": 3})
    script = Script(openai_chat(bad), openai_chat(good))
    result = judge_on(script).score(**ITEM)
    assert result.status == "ok" and result.attempts == 2
    feedback = json.loads(script.requests[1].content)["messages"][-1]["content"]
    assert "scores.0.score: faithfulness must be an integer from 1 to 5, got 6" in feedback
    assert "scores.3.name: 'tone' is not a requested criterion" in feedback
    assert "scores: no score for 'coherence'" in feedback


def test_duplicate_criterion_is_a_problem() -> None:
    doubled = json.dumps({"scores": [{"name": "relevance", "reason": "r", "score": 3}] * 2})
    script = Script(openai_chat(doubled))
    result = judge_on(script, max_attempts=1).score(
        **ITEM, criteria=[{"name": "relevance", "description": "On topic."}]
    )
    assert result.status == "error" and "scored more than once" in (result.error or "")


def test_user_criteria_as_data_with_their_own_scales() -> None:
    criteria = [
        {"name": "accuracy", "description": "Facts match the memo.", "scale": [1, 10]},
        {
            "name": "tone",
            "description": "Neutral, professional tone.",
            "scale_min": 0,
            "scale_max": 2,
        },
    ]
    script = Script(openai_chat(reply({"accuracy": 9, "tone": 0})))
    result = judge_on(script).score(**ITEM, criteria=criteria)
    assert result.scores == {"accuracy": 9, "tone": 0}
    prompt = user_turn(script)
    assert "- accuracy (scale 1 to 10): Facts match the memo." in prompt
    assert "- tone (scale 0 to 2):" in prompt and "faithfulness" not in prompt


def test_thresholds_decide_pass_or_fail_on_the_named_criteria_only() -> None:
    policy = RubricPolicy(primary="faithfulness", thresholds={"faithfulness": 4, "relevance": 3})
    passing = reply({"faithfulness": 4, "relevance": 3, "coherence": 1, "conciseness": 1})
    failing = reply({"faithfulness": 3, "relevance": 5, "coherence": 5, "conciseness": 5})
    script = Script(openai_chat(passing), openai_chat(failing))
    judge = judge_on(script, rubric=policy)
    first = judge.score(**ITEM)
    second = judge.score(**{**ITEM, "answer": "The launch is in April."})
    assert (first.verdict, second.verdict) == ("pass", "fail")
    assert second.output is not None
    record = second.output["rubric"]
    assert record["primary"] == {"name": "faithfulness", "score": 3}
    assert record["failed"] == ["faithfulness"] and record["passed"] is False
    assert "aggregate" not in second.scores


def test_weighted_aggregate_only_when_asked() -> None:
    # (2·5 + 1·3) / (2 + 1) = 13/3; coherence and conciseness carry no weight.
    policy = RubricPolicy(weights={"faithfulness": 2, "relevance": 1})
    script = Script(
        openai_chat(reply({"faithfulness": 5, "relevance": 3, "coherence": 1, "conciseness": 1}))
    )
    result = judge_on(script, rubric=policy).score(**ITEM)
    assert result.scores["aggregate"] == pytest.approx(13 / 3)
    assert result.scores["faithfulness"] == 5  # the criteria stay separate
    assert result.verdict is None


def test_policy_and_criteria_are_validated_before_any_call() -> None:
    with pytest.raises(ValidationError, match="unknown criteria nope"):
        RubricPolicy(thresholds={"nope": 3})
    with pytest.raises(ValidationError, match="scale_min"):
        Criterion(name="x", description="d", scale=[5, 1])
    with pytest.raises(ValueError, match="unique"):
        criteria_from([{"name": "x", "description": "d"}] * 2)
    with pytest.raises(ValueError, match="rubric= applies"):
        Judge("single@1", "mock:judge", rubric=RubricPolicy())
    script = Script()
    judge = judge_on(script, rubric=RubricPolicy(thresholds={"faithfulness": 4}))
    with pytest.raises(MissingInput, match="the rubric policy uses faithfulness"):
        judge.score(**ITEM, criteria=[{"name": "tone", "description": "Neutral."}])
    with pytest.raises(MissingInput, match=r"criteria\[0\]"):
        judge.score(**ITEM, criteria=[{"name": "Bad Name", "description": "x"}])
    # In a batch, a bad item is an error record and the rest are judged.
    script.add(openai_chat(reply(dict.fromkeys(NAMES, 4))))
    results = judge.score_many([{"id": "bad", **ITEM, "criteria": "tone"}, {"id": "ok", **ITEM}])
    assert [r.status for r in results] == ["error", "ok"] and results[0].error_kind == "input"
    assert len(script.requests) == 1


def test_policy_is_part_of_the_result_key_but_not_of_the_request() -> None:
    script = Script(openai_chat(reply(dict.fromkeys(NAMES, 4))))
    plain = judge_on(script).score(**ITEM)
    strict = judge_on(script, rubric=RubricPolicy(thresholds={"coherence": 5})).score(**ITEM)
    assert len(script.requests) == 1  # the second policy re-decided the cached reply
    assert plain.id != strict.id and (plain.verdict, strict.verdict) == (None, "fail")


def test_anthropic_and_mock_providers() -> None:
    script = Script(default=lambda request: anthropic_message(card_reply(user_turn_of(request))))
    result = anthropic_judge(script, "rubric@1").score(**ITEM)
    assert result.scores == dict.fromkeys(NAMES, 3)  # the fake server's mid-scale judge
    mock = Judge("rubric@1", "mock:judge").score(
        **ITEM, criteria=[{"name": "tone", "description": "d", "scale": [1, 3]}]
    )
    assert mock.status == "ok" and list(mock.scores) == ["tone"] and 1 <= mock.scores["tone"] <= 3


def user_turn_of(request: Any) -> str:
    return str(json.loads(request.content)["messages"][-1]["content"])


def test_score_command_fills_default_criteria(tmp_path: Any) -> None:
    from click.testing import CliRunner

    from judgecards.cli import cli

    items = tmp_path / "items.jsonl"
    rows = [
        {"id": "1", **ITEM},
        {"id": "2", **ITEM, "criteria": [{"name": "tone", "description": "d"}]},
    ]
    items.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(
        cli,
        [
            "score",
            "--card",
            "rubric@1",
            "--model",
            "mock:judge",
            str(items),
            "--output",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    scored = [json.loads(line)["scores"] for line in out.read_text().splitlines()]
    assert [list(s) for s in scored] == [NAMES, ["tone"]]


# ---------------------------------------------------------------- the per-request schema (defect 7)

SCALED = [
    {"name": "accuracy", "description": "Facts match the memo.", "scale": [1, 10]},
    {"name": "tone", "description": "Neutral.", "scale_min": 0, "scale_max": 2},
]


def schema_in(prompt: str) -> Any:
    return json.loads(prompt[prompt.rindex("and nothing else:\n") + len("and nothing else:\n") :])


def test_the_schema_names_each_criterion_and_its_scale_as_enums() -> None:
    schema = rubric_schema(criteria_from(SCALED))
    scores = schema["properties"]["scores"]
    assert (scores["minItems"], scores["maxItems"]) == (2, 2)
    entries = {
        tuple(e["properties"]["name"]["enum"]): e["properties"]["score"]["enum"]
        for e in scores["items"]["anyOf"]
    }
    assert entries == {("accuracy",): list(range(1, 11)), ("tone",): [0, 1, 2]}
    # What a schema-following client may and may not write:
    jsonschema.validate(json.loads(reply({"accuracy": 10, "tone": 0})), schema)
    for wrong in (
        reply({"accurate": 9, "tone": 0}),  # an invented name
        reply({"accuracy": 9, "tone": 3}),  # off tone's scale
        reply({"accuracy": 9}),  # a criterion missing
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(json.loads(wrong), schema)


def test_a_wide_scale_falls_back_to_minimum_and_maximum() -> None:
    wide = criteria_from([{"name": "points", "description": "d", "scale": [0, 1000]}])
    score = rubric_schema(wide)["properties"]["scores"]["items"]["anyOf"][0]["properties"]["score"]
    assert score == {"type": "integer", "minimum": 0, "maximum": 1000}


def test_the_prompt_and_the_request_carry_the_items_schema() -> None:
    script = Script(openai_chat(reply({"accuracy": 9, "tone": 0})))
    judge = judge_on(script)
    result = judge.score(**ITEM, criteria=SCALED)
    assert result.status == "ok"
    assert schema_in(user_turn(script)) == rubric_schema(criteria_from(SCALED))
    mock = Judge("rubric@1", "mock:judge")
    mock.score(**ITEM, criteria=SCALED)
    assert isinstance(mock.provider, MockProvider)
    assert mock.provider.history[0].response_schema == rubric_schema(criteria_from(SCALED))


def test_a_schema_following_client_always_writes_valid_criteria() -> None:
    # The mock writes only what the request's schema allows (it never reads the prompt), like a
    # server that enforces the schema with a grammar. Every item must come back valid at once.
    items = [
        {"id": str(i), **ITEM, "answer": f"Answer {i}.", "criteria": SCALED} for i in range(20)
    ]
    results = Judge("rubric@1", "mock:judge").score_many(items)
    assert {(r.status, r.attempts) for r in results} == {("ok", 1)}
    assert all(1 <= r.scores["accuracy"] <= 10 and 0 <= r.scores["tone"] <= 2 for r in results)
    assert len({tuple(r.scores.values()) for r in results}) > 1  # drawn, not constant


def test_score_command_sets_thresholds_weights_and_primary(tmp_path: Any) -> None:
    # Issue 22 item 23: thresholds and weights could not be set from the CLI, so CLI rubric rows
    # never had a verdict.
    from click.testing import CliRunner

    from judgecards.cli import cli

    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps({"id": str(i), **ITEM}) + "\n" for i in range(6)))
    output = tmp_path / "out.jsonl"
    args = ["score", "--card", "rubric@1", "--model", "mock:judge", str(items),
            "--output", str(output), "--db", str(tmp_path / "r.db")]  # fmt: skip
    result = CliRunner().invoke(cli, [
        *args, "--threshold", "relevance=3", "--threshold", "faithfulness=2",
        "--weight", "relevance=2", "--weight", "coherence=1", "--primary", "relevance",
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in output.read_text().splitlines()]
    for row in rows:
        scores = row["scores"]
        passed = scores["relevance"] >= 3 and scores["faithfulness"] >= 2
        assert row["verdict"] == ("pass" if passed else "fail")
        mean = (2 * scores["relevance"] + scores["coherence"]) / 3
        assert scores["aggregate"] == pytest.approx(mean)
        assert row["output"]["rubric"]["primary"]["name"] == "relevance"

    criteria = tmp_path / "criteria.yml"
    criteria.write_text("- {name: tone, description: Polite and plain., scale: [1, 3]}\n")
    own = CliRunner().invoke(cli, [*args, "--criteria", str(criteria), "--threshold", "tone=2"])
    assert own.exit_code == 0, own.output
    rows = [json.loads(line) for line in output.read_text().splitlines()]
    assert all(list(r["scores"]) == ["tone"] and r["verdict"] in ("pass", "fail") for r in rows)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--threshold", "nonsense=3"], "unknown criteria nonsense"),
        (["--threshold", "relevance"], "'relevance' is not NAME=NUMBER"),
        (["--weight", "relevance=-1"], "weights must be non-negative"),
    ],
)
def test_score_command_refuses_a_bad_rubric_policy_before_anything(
    tmp_path: Any, extra: list[str], message: str
) -> None:
    from click.testing import CliRunner

    from judgecards.cli import cli

    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps({"id": "1", **ITEM}) + "\n")
    result = CliRunner().invoke(cli, [
        "score", "--card", "rubric@1", "--model", "mock:judge", str(items),
        "--output", str(tmp_path / "o.jsonl"), "--db", str(tmp_path / "r.db"), *extra,
    ])  # fmt: skip
    assert result.exit_code == 2 and message in result.output
    assert not (tmp_path / "r.db").exists()
