"""Tiered evaluation: each check type by hand, then the pipeline with a judge on the real openai SDK.

The judge tier runs `Judge` on ``OpenAIProvider`` whose HTTP goes to a scripted httpx2 transport,
so counting the transport's requests counts the judge calls the pipeline paid for.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Mapping
from typing import Any

import httpx2
import pytest
from pydantic import BaseModel, ConfigDict

from judgecards import Judge
from judgecards.tiered import (
    Check,
    CheckResult,
    JsonCheck,
    JudgeCheck,
    LengthCheck,
    MetricCheck,
    RegexCheck,
    Tier,
    TieredEval,
    metric_check_names,
)
from tests.fakes.http import Script, openai_chat, reference_judgment
from tests.fakes.judges import openai_judge

# ---------------------------------------------------------------- tier 1: RegexCheck


def test_regex_match_searches_anywhere_unless_anchored() -> None:
    digits = RegexCheck("answer", match=r"\d+")
    assert digits.check({"answer": "It is 391."}).status == "pass"
    only_digits = RegexCheck("answer", match=r"^\d+$")
    result = only_digits.check({"answer": "It is 391."})
    assert result.status == "fail"
    assert result.reason == r"answer does not match /^\d+$/"
    assert only_digits.check({"answer": "391"}).status == "pass"


def test_regex_forbid_quotes_what_it_found_and_inline_flags_work() -> None:
    check = RegexCheck("answer", forbid=r"(?i)as an ai\b")
    result = check.check({"answer": "Sorry. As an AI, I cannot."})
    assert result.status == "fail"
    assert result.reason == r"answer contains 'As an AI', forbidden by /(?i)as an ai\b/"
    assert check.check({"answer": "Canberra"}) == CheckResult("pass")


def test_regex_with_both_patterns_reports_both_failures() -> None:
    check = RegexCheck("answer", match=r"^\d+$", forbid="zero")
    result = check.check({"answer": "zero"})
    assert result.status == "fail"
    assert (
        result.reason is not None
        and "does not match" in result.reason
        and "forbidden" in result.reason
    )


def test_regex_missing_or_non_string_field_is_an_error_not_a_failure() -> None:
    check = RegexCheck("answer", match="x")
    assert check.check({}) == CheckResult("error", "missing field 'answer'")
    assert check.check({"answer": None}).status == "error"
    assert check.check({"answer": 7}) == CheckResult("error", "field 'answer' is int, not a string")


def test_regex_arguments_are_checked_when_built() -> None:
    with pytest.raises(ValueError, match="'match' pattern, a 'forbid' pattern"):
        RegexCheck("answer")
    with pytest.raises(ValueError, match="invalid regular expression"):
        RegexCheck("answer", forbid="(unclosed")
    assert RegexCheck("answer", match="x").name == "regex:answer"


# ---------------------------------------------------------------- tier 1: LengthCheck


def test_length_bounds_are_inclusive_and_count_code_points() -> None:
    check = LengthCheck("answer", min=2, max=5)
    # "héllo" is 5 code points (6 bytes in UTF-8): on the bound, so it passes.
    assert check.check({"answer": "héllo"}) == CheckResult("pass", value=5)
    assert check.check({"answer": "hé"}).status == "pass"
    assert check.check({"answer": "h"}) == CheckResult(
        "fail", "answer is 1 chars, fewer than min 2", 1
    )
    assert check.check({"answer": "hélloo"}) == CheckResult(
        "fail", "answer is 6 chars, more than max 5", 6
    )


def test_length_in_words_splits_on_whitespace() -> None:
    check = LengthCheck("answer", max=3, unit="words")
    assert check.check({"answer": "  one\ttwo\nthree  "}).status == "pass"  # 3 words
    assert (
        check.check({"answer": "one two three four"}).reason == "answer is 4 words, more than max 3"
    )
    assert LengthCheck("answer", min=1).check({"answer": ""}).status == "fail"


def test_length_arguments_are_checked_when_built() -> None:
    with pytest.raises(ValueError, match="'min', 'max' or both"):
        LengthCheck("answer")
    with pytest.raises(ValueError, match="min 5 is greater than max 2"):
        LengthCheck("answer", min=5, max=2)
    with pytest.raises(ValueError, match="negative"):
        LengthCheck("answer", max=-1)
    with pytest.raises(ValueError, match="'chars' or 'words'"):
        LengthCheck("answer", max=1, unit="tokens")  # type: ignore[arg-type]


# ---------------------------------------------------------------- tier 1: JsonCheck


def test_json_parses_the_whole_field_and_nothing_else() -> None:
    check = JsonCheck("out")
    assert check.check({"out": ' {"a": 1} \n'}).status == "pass"
    assert check.check({"out": "[1, 2]"}).status == "pass"
    fenced = check.check({"out": '```json\n{"a": 1}\n```'})
    assert (
        fenced.status == "fail"
        and fenced.reason == "out is not JSON: Expecting value at line 1 column 1"
    )
    trailing = check.check({"out": '{"a": 1} thanks!'})
    assert trailing.reason == "out is not JSON: Extra data at line 1 column 10"
    # json.loads would accept NaN; JSON does not.
    assert check.check({"out": '{"a": NaN}'}).reason == "out is not JSON: NaN is not JSON"
    assert check.check({"out": ""}).status == "fail"


def test_json_field_that_is_already_structured_is_taken_as_parsed() -> None:
    check = JsonCheck("out", schema={"type": "object", "required": ["a"]})
    assert check.check({"out": {"a": 1}}).status == "pass"
    assert (
        check.check({"out": {"b": 1}}).reason
        == "out fails the schema: $: 'a' is a required property"
    )
    assert check.check({}).status == "error"


SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "Answer",
    "type": "object",
    "properties": {
        "answer": {"type": "string", "minLength": 1, "maxLength": 5},
        "confidence": {"type": "number", "minimum": 0, "exclusiveMaximum": 1},
        "rating": {"type": "integer", "enum": [1, 2, 3]},
        "tags": {
            "type": "array",
            "items": {"type": "string", "pattern": "^[a-z]+$"},
            "maxItems": 2,
        },
        "final": {"const": True},
        "note": {"type": ["string", "null"]},
    },
    "required": ["answer", "rating"],
    "additionalProperties": False,
}


def schema_problems(value: Any) -> str | None:
    result = JsonCheck("out", schema=SCHEMA).check({"out": json.dumps(value)})
    return None if result.status == "pass" else result.reason


def failing_paths(value: Any) -> list[str]:
    """The JSON paths the schema check complains about (messages are jsonschema's own)."""
    reason = schema_problems(value)
    if reason is None:
        return []
    body = reason.removeprefix("out fails the schema: ")
    return [problem.split(": ", 1)[0] for problem in body.split("; ")]


def test_inline_schema_hand_checked_cases() -> None:
    assert (
        schema_problems(
            {
                "answer": "Paris",
                "rating": 3,
                "confidence": 0.5,
                "tags": ["geo"],
                "final": True,
                "note": None,
            }
        )
        is None
    )
    # integer accepts 3.0 (JSON has one number type) but not true; enum compares as JSON, so
    # true is not 1 either.
    assert schema_problems({"answer": "x", "rating": 3.0}) is None
    assert failing_paths({"answer": "x", "rating": True}) == ["$.rating", "$.rating"]
    assert failing_paths({"answer": "x", "rating": 4}) == ["$.rating"]
    # const true is not 1 (Python's True == 1 would say it is).
    assert failing_paths({"answer": "x", "rating": 1, "final": 1}) == ["$.final"]
    # exclusiveMaximum: 1 itself fails, 0 (the inclusive minimum) passes.
    assert failing_paths({"answer": "x", "rating": 1, "confidence": 1}) == ["$.confidence"]
    assert schema_problems({"answer": "x", "rating": 1, "confidence": 0}) is None
    # maxLength counts code points: "ééééé" is 5.
    assert schema_problems({"answer": "ééééé", "rating": 1}) is None
    assert failing_paths({"answer": "", "rating": 1}) == ["$.answer"]


def test_inline_schema_reports_every_problem_with_its_path() -> None:
    reason = schema_problems({"rating": 2, "tags": ["ok", "Bad", "x"], "extra": 1})
    assert reason is not None
    assert "$: 'answer' is a required property" in reason
    assert "'extra' was unexpected" in reason
    assert "$.tags: ['ok', 'Bad', 'x'] is too long" in reason
    assert "$.tags[1]: 'Bad' does not match '^[a-z]+$'" in reason


def test_an_invalid_inline_schema_is_refused_when_the_check_is_built() -> None:
    with pytest.raises(ValueError, match=r"\$\.properties\.a\.oneOf: invalid JSON Schema"):
        JsonCheck("out", schema={"type": "object", "properties": {"a": {"oneOf": []}}})
    with pytest.raises(ValueError, match=r"\$\.type: invalid JSON Schema"):
        JsonCheck("out", schema={"type": "strng"})
    with pytest.raises(ValueError, match=r"\$\.minLength: invalid JSON Schema"):
        JsonCheck("out", schema={"minLength": -1})


class Answer(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    answer: str
    rating: int


def test_schema_as_a_pydantic_model_or_its_import_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # A module of this checkout is not an installed package: refused unless trusted by name
    # (judgecards.cards.schema_import), the rule a card's output.schema follows.
    with pytest.raises(ValueError, match=r"refusing to import 'tests\.tiered\.test_tiers'"):
        JsonCheck("out", schema="tests.tiered.test_tiers:Answer")
    monkeypatch.setenv("JUDGECARDS_SCHEMA_MODULES", "tests.tiered.test_tiers")
    for schema in (Answer, "tests.tiered.test_tiers:Answer"):
        check = JsonCheck("out", schema=schema)
        assert check.check({"out": '{"answer": "x", "rating": 2}'}).status == "pass"
        reason = check.check({"out": '{"answer": "x", "rating": "2", "more": 1}'}).reason
        assert reason == (
            "out fails the schema: $.rating: Input should be a valid integer; $.more: Extra inputs are not permitted"
        )
    with pytest.raises(ValueError, match=r"cannot import 'tests.tiered.test_tiers:Nope'"):
        JsonCheck("out", schema="tests.tiered.test_tiers:Nope")
    with pytest.raises(ValueError, match="is not a pydantic model"):
        JsonCheck("out", schema="tests.tiered.test_tiers:schema_problems")


# ---------------------------------------------------------------- tier 2: MetricCheck


def test_token_f1_threshold_is_inclusive() -> None:
    # SQuAD worked example: "cat sat on" vs "the cat sat" -> reference "cat sat"; overlap 2,
    # precision 2/3, recall 2/2, F1 = 2 * (2/3) / (5/3) = 0.8.
    item = {"model_output": "cat sat on", "gold_answer": "the cat sat"}
    passed = MetricCheck("token_f1", min=0.8).check(item)
    assert passed.status == "pass" and passed.value == pytest.approx(0.8)
    result = MetricCheck("token_f1", min=0.81).check(item)
    assert result.status == "fail" and result.reason == "token_f1 0.8 < min 0.81"
    assert MetricCheck("token_f1", max=0.5).check(item).reason == "token_f1 0.8 > max 0.5"


def test_exact_match_accepts_and_the_rest_go_on() -> None:
    check = MetricCheck("exact_match", accept_min=1)
    # SQuAD normalisation: "The Danube." -> "danube".
    accepted = check.check({"model_output": "danube", "gold_answer": "The Danube."})
    assert accepted.status == "accept" and accepted.value == 1.0
    assert accepted.reason == "exact_match 1 within accept_min 1: accepted without later tiers"
    assert check.check({"model_output": "the Rhine", "gold_answer": "The Danube."}) == CheckResult(
        "pass", value=0.0
    )


def test_rouge_l_is_the_f1() -> None:
    # "the cat sat" vs "the cat sat on the mat": LCS 3, P = 3/3, R = 3/6, F1 = 2/3.
    item = {"model_output": "the cat sat", "gold_answer": "the cat sat on the mat"}
    assert MetricCheck("rougeL", min=0.6).check(item).value == pytest.approx(2 / 3)
    # ROUGE-2: bigrams "the cat", "cat sat" overlap; P = 2/2, R = 2/5, F1 = 0.8 / 1.4 = 4/7.
    assert MetricCheck("rouge2", min=0).check(item).value == pytest.approx(4 / 7)


def test_several_references_the_best_counts() -> None:
    check = MetricCheck("exact_match", accept_min=1, prediction="answer", reference="golds")
    assert check.check({"answer": "NYC", "golds": ["New York City", "nyc"]}).status == "accept"
    assert check.check({"answer": "NYC", "golds": ["x", 3]}).status == "error"


def test_a_metric_that_refuses_its_input_is_an_error() -> None:
    check = MetricCheck("substring_recall", min=1)
    result = check.check({"model_output": "It was Paris.", "gold_answer": ["  "]})
    assert result == CheckResult(
        "error", "substring_recall: substring_recall needs at least one non-empty reference"
    )
    assert check.check({"model_output": "It was Paris."}).reason == "missing field 'gold_answer'"
    assert (
        check.check({"model_output": "It was Paris, I think.", "gold_answer": "paris"}).status
        == "pass"
    )


def test_fail_wins_over_accept() -> None:
    # 0.8 is below min 0.9 and inside accept [0.5, 1]: it fails.
    check = MetricCheck("token_f1", min=0.9, accept_min=0.5)
    assert (
        check.check({"model_output": "cat sat on", "gold_answer": "the cat sat"}).status == "fail"
    )


def test_custom_metric_function() -> None:
    def longer(prediction: str, references: Any) -> float:
        return float(len(prediction) > len(references))

    check = MetricCheck(longer, max=0)
    assert check.name == "longer"
    assert check.check({"model_output": "abc", "gold_answer": "ab"}).status == "fail"


def test_metric_arguments_are_checked_when_built() -> None:
    with pytest.raises(ValueError, match=r"unknown metric 'bleu' \(known: exact_match, token_f1"):
        MetricCheck("bleu", min=0.5)
    with pytest.raises(ValueError, match="give a bound"):
        MetricCheck("token_f1")
    with pytest.raises(ValueError, match=r"accept_min 0.9 is greater than accept_max 0.1"):
        MetricCheck("token_f1", accept_min=0.9, accept_max=0.1)
    assert {"exact_match", "token_f1", "substring_recall", "rougeL"} <= set(metric_check_names())
    assert MetricCheck("rouge3", min=0).name == "rouge3"


# ---------------------------------------------------------------- the pipeline without a judge

ITEMS = [
    {"id": "ok", "model_output": "Canberra is the capital.", "gold_answer": "Canberra"},
    {"id": "exact", "model_output": "canberra", "gold_answer": "Canberra"},
    {"id": "empty", "model_output": "", "gold_answer": "Canberra"},
    {"id": "refusal", "model_output": "As an AI I cannot say.", "gold_answer": "Canberra"},
    {"id": "wrong", "model_output": "Sydney", "gold_answer": "Canberra"},
    {"id": "nogold", "model_output": "Canberra"},
]


def deterministic() -> TieredEval:
    return TieredEval([
        Tier("format", [LengthCheck("model_output", min=1), RegexCheck("model_output", forbid="(?i)as an ai")]),
        Tier("metric", [MetricCheck("exact_match", accept_min=1), MetricCheck("token_f1", min=0.1)]),
    ])  # fmt: skip


def test_every_item_is_reported_with_the_tier_that_decided_it() -> None:
    report = deterministic().run(ITEMS)

    decided = [(i.id, i.outcome, i.tier, i.accepted) for i in report.items]
    assert decided == [
        ("ok", "pass", "metric", False),
        ("exact", "pass", "metric", True),
        ("empty", "fail", "format", False),
        ("refusal", "fail", "format", False),
        ("wrong", "fail", "metric", False),
        ("nogold", "error", "metric", False),
    ]
    assert [i.index for i in report.items] == list(range(len(ITEMS)))
    # "Canberra is the capital." vs "Canberra": tokens {canberra, is, capital}; P = 1/3, R = 1, F1 = 0.5.
    assert report.items[0].values == {"exact_match": 0.0, "token_f1": pytest.approx(0.5)}
    assert report.items[4].reasons == ("token_f1 0 < min 0.1",)
    # Both metric checks hit the missing reference; the reason is given once.
    assert report.items[5].reasons == ("missing field 'gold_answer'",)
    assert [
        (s.name, s.items_in, s.passed, s.accepted, s.failed, s.errors) for s in report.tiers
    ] == [
        ("format", 6, 4, 0, 2, 0),
        ("metric", 4, 1, 1, 1, 1),
    ]
    assert (report.count("pass"), report.count("fail"), report.count("error")) == (2, 3, 1)
    assert report.judged is None and report.judge_calls_saved is None


def test_report_as_json_and_text() -> None:
    report = deterministic().run(ITEMS)

    data = json.loads(json.dumps(report.to_dict()))
    assert (data["items"], data["passed"], data["failed"], data["errors"], data["judge"]) == (
        6,
        2,
        3,
        1,
        None,
    )
    assert [r["id"] for r in data["results"]] == [item["id"] for item in ITEMS]
    format_tier = data["tiers"][0]
    assert format_tier["failures"] == [
        {
            "index": 2,
            "id": "empty",
            "outcome": "fail",
            "reasons": ["model_output is 0 chars, fewer than min 1"],
        },
        {
            "index": 3,
            "id": "refusal",
            "outcome": "fail",
            "reasons": ["model_output contains 'As an AI', forbidden by /(?i)as an ai/"],
        },
    ]
    text = report.as_text(max_listed=2)
    assert re.search(r"^1\s+format\s+checks\s+6\s+4\s+0\s+2\s+0$", text, re.MULTILINE)
    assert "6 items: 2 passed, 3 failed, 1 error" in text
    assert "  empty  fail at format: model_output is 0 chars, fewer than min 1" in text
    assert "… and 2 more" in text


def test_tier_combines_checks_fail_then_error_then_accept() -> None:
    class Fixed:
        def __init__(self, name: str, status: Any) -> None:
            self.name = name
            self.status = status

        def check(self, item: Mapping[str, Any]) -> CheckResult:
            return CheckResult(self.status, f"{self.name} says {self.status}")

    def outcome(*statuses: str) -> tuple[str, bool, tuple[str, ...]]:
        tier = Tier("t", [Fixed(f"c{n}", s) for n, s in enumerate(statuses)])
        [item] = TieredEval([tier, LengthCheck("x", max=0)]).run([{"x": ""}]).items
        return item.outcome, item.accepted, item.reasons

    assert isinstance(Fixed("c", "pass"), Check)
    assert outcome("accept", "error", "fail", "fail") == (
        "fail",
        False,
        ("c2 says fail", "c3 says fail"),
    )
    assert outcome("accept", "error", "pass") == ("error", False, ("c1 says error",))
    assert outcome("pass", "accept") == ("pass", True, ("c1 says accept",))
    # All pass: on to the next tier (here a length check that also passes).
    assert outcome("pass", "pass")[0] == "pass"


def test_a_check_that_raises_becomes_an_error_record() -> None:
    class Broken:
        name = "broken"

        def check(self, item: Mapping[str, Any]) -> CheckResult:
            raise KeyError("oops")

    [item] = TieredEval([Broken()]).run([{"id": 1}]).items
    assert (item.outcome, item.tier, item.reasons) == (
        "error",
        "broken",
        ("broken raised KeyError: 'oops'",),
    )


def test_pipeline_shape_is_checked() -> None:
    with pytest.raises(ValueError, match="at least one tier"):
        TieredEval([])
    with pytest.raises(ValueError, match="two tiers are named 'regex:a'"):
        TieredEval([RegexCheck("a", match="x"), RegexCheck("a", forbid="y")])
    with pytest.raises(ValueError, match="two metric checks are named 'token_f1'"):
        TieredEval([MetricCheck("token_f1", min=0), Tier("b", [MetricCheck("token_f1", max=1)])])
    with pytest.raises(TypeError, match="not str"):
        TieredEval(["format"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="has no checks"):
        Tier("empty", [])


# ---------------------------------------------------------------- the judge tier, real SDK


QA = [
    # (id, model_output, gold) — what each tier should do is in the comment.
    ("empty", "", "Canberra"),  # format: fails
    ("refusal", "As an AI, I cannot answer.", "Canberra"),  # format: fails
    ("exact", "Canberra", "Canberra"),  # metric: accepted, no judge
    ("offtopic", "Bananas are yellow.", "The capital is Canberra."),  # metric: F1 0, fails
    ("close", "The capital is Canberra, in the ACT.", "The capital is Canberra."),  # judge: match
    ("partial", "Canberra, I think, or Sydney.", "Canberra"),  # judge: partial_match
    ("wrong", "The capital is Sydney.", "The capital is Canberra."),  # judge: mismatch
]
JUDGMENTS = {
    "The capital is Canberra, in the ACT.": reference_judgment(5, 5),
    "Canberra, I think, or Sydney.": reference_judgment(3, 3, verdict="partial_match"),
    "The capital is Sydney.": reference_judgment(1, 1, verdict="mismatch"),
}


def qa_items() -> list[dict[str, Any]]:
    return [
        {
            "id": i,
            "question": "What is the capital of Australia?",
            "model_output": o,
            "gold_answer": g,
        }
        for i, o, g in QA
    ]


def judge_reply(request: httpx2.Request) -> httpx2.Response:
    """Answer from the model output in the prompt, so the reply fits the item whatever the order."""
    prompt = json.loads(request.content)["messages"][-1]["content"]
    output = re.search(r"<model_output>\n(.*?)\n</model_output>", prompt, re.DOTALL)
    assert output is not None, "no model output in the prompt"
    return openai_chat(JUDGMENTS[output.group(1)], prompt_tokens=700, completion_tokens=100)


def three_tiers(judge: Judge, **judge_options: Any) -> TieredEval:
    return TieredEval([
        Tier("format", [LengthCheck("model_output", min=1), RegexCheck("model_output", forbid=r"(?i)\bas an ai\b")]),
        Tier("metric", [MetricCheck("exact_match", accept_min=1), MetricCheck("token_f1", min=0.05)]),
        JudgeCheck(judge, **({"pass_verdicts": ["match", "partial_match"]} | judge_options)),
    ])  # fmt: skip


def test_the_judge_is_called_exactly_for_the_survivors() -> None:
    script = Script(judge_reply, judge_reply, judge_reply)  # a fourth request would fail the test
    progress: list[tuple[int, int]] = []

    report = three_tiers(openai_judge(script)).run(
        qa_items(), progress=lambda done, total, result: progress.append((done, total))
    )

    assert script.overruns == 0
    sent = sorted(
        re.search(
            r"<model_output>\n(.*?)\n</model_output>",
            json.loads(r.content)["messages"][-1]["content"],
            re.DOTALL,
        ).group(1)  # type: ignore[union-attr]
        for r in script.requests
    )
    assert sent == sorted(JUDGMENTS)  # the three survivors, nothing else
    assert report.judged == 3
    assert report.judge_calls_saved == len(QA) - 3 == 4
    assert report.served_from_cache == 0
    # Each judged item billed 700 + 100 tokens; 4 items skipped: 4 * 800.
    assert report.estimated_tokens_avoided == 3200
    assert sorted(progress) == [(1, 3), (2, 3), (3, 3)]

    outcomes = {i.id: (i.outcome, i.tier) for i in report.items}
    assert outcomes == {
        "empty": ("fail", "format"),
        "refusal": ("fail", "format"),
        "exact": ("pass", "metric"),
        "offtopic": ("fail", "metric"),
        "close": ("pass", "judge"),
        "partial": ("pass", "judge"),
        "wrong": ("fail", "judge"),
    }
    wrong = report.items[6]
    assert wrong.reasons == ("verdict 'mismatch' is not in ['match', 'partial_match']",)
    assert (
        wrong.judge is not None
        and wrong.judge.item_id == "wrong"
        and wrong.judge.scores["correctness"] == 1
    )
    assert report.items[2].judge is None  # accepted before the judge
    assert [(s.items_in, s.passed, s.accepted, s.failed, s.errors) for s in report.tiers] == [
        (7, 5, 0, 2, 0),
        (5, 3, 1, 1, 0),
        (3, 2, 0, 1, 0),
    ]
    judge_section = report.to_dict()["judge"]
    assert judge_section == {
        "card": "reference@1", "model": "openai:gpt-4o", "mock": False, "judged": 3, "calls_saved": 4,
        "served_from_cache": 0, "estimated_tokens_avoided": 3200,
    }  # fmt: skip
    row = report.items[4].to_dict()
    assert row["judge"]["verdict"] == "match" and row["judge"]["usage"] == {
        "input_tokens": 700,
        "output_tokens": 100,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
    }


def test_a_second_run_is_served_from_the_store_without_calls() -> None:
    script = Script(judge_reply, judge_reply, judge_reply)
    judge = openai_judge(script)
    three_tiers(judge).run(qa_items())

    again = three_tiers(judge).run(qa_items())

    assert len(script.requests) == 3 and script.overruns == 0
    assert again.served_from_cache == 3 and again.judge_calls_saved == 4
    assert again.estimated_tokens_avoided is None  # no judged item made a call this time


def test_score_thresholds_and_judge_errors() -> None:
    # min_scores: correctness >= 4 passes "close" (5) and fails "partial" (3); "wrong" gets a reply
    # that never validates, so with one attempt it is an error record, not a verdict.
    def reply(request: httpx2.Request) -> httpx2.Response:
        if "The capital is Sydney." in json.loads(request.content)["messages"][-1]["content"]:
            return openai_chat("I would rather not grade this.")
        return judge_reply(request)

    script = Script(reply, reply, reply)
    report = three_tiers(
        openai_judge(script, max_attempts=1), pass_verdicts=None, min_scores={"correctness": 4}
    ).run(qa_items())

    by_id = {i.id: i for i in report.items}
    assert (by_id["close"].outcome, by_id["close"].reasons) == ("pass", ("verdict 'match'",))
    assert (by_id["partial"].outcome, by_id["partial"].reasons) == (
        "fail",
        ("correctness 3 < min 4",),
    )
    assert by_id["wrong"].outcome == "error" and by_id["wrong"].tier == "judge"
    assert (
        by_id["wrong"]
        .reasons[0]
        .startswith("judge error (invalid_output): no valid judgment after 1 attempt(s)")
    )
    assert report.tiers[-1].errors == 1 and len(script.requests) == 3


def test_inputs_map_card_inputs_to_item_fields() -> None:
    script = Script(openai_chat(reference_judgment()))
    judge = openai_judge(script)
    pipeline = TieredEval(
        [
            JudgeCheck(
                judge,
                inputs={"model_output": "answer", "gold_answer": "gold"},
                pass_verdicts=["match"],
            )
        ]
    )

    report = pipeline.run(
        [{"id": 7, "question": "Capital?", "answer": "It is Canberra.", "gold": "Canberra"}]
    )

    prompt = json.loads(script.requests[0].content)["messages"][-1]["content"]
    assert "<model_output>\nIt is Canberra.\n</model_output>" in prompt
    assert "<gold_answer>\nCanberra\n</gold_answer>" in prompt
    assert report.items[0].outcome == "pass" and report.items[0].id == "7"
    assert report.judge_calls_saved == 0


def test_an_item_missing_a_card_input_is_a_judge_error_without_a_call() -> None:
    script = Script()
    pipeline = TieredEval([JudgeCheck(openai_judge(script), pass_verdicts=["match"])])

    [item] = pipeline.run([{"id": "x", "question": "?", "model_output": "y"}]).items

    assert item.outcome == "error" and item.reasons[0].startswith("judge error (input):")
    assert script.requests == []


def test_async_run_inside_an_event_loop() -> None:
    script = Script(judge_reply, judge_reply, judge_reply)
    pipeline = three_tiers(openai_judge(script))

    async def main() -> None:
        with pytest.raises(RuntimeError, match="arun"):
            pipeline.run(qa_items())
        report = await pipeline.arun(qa_items())
        assert report.judged == 3

    asyncio.run(main())
    assert len(script.requests) == 3


def test_judge_check_arguments_are_checked_against_the_card() -> None:
    judge = openai_judge(Script())
    with pytest.raises(ValueError, match="say what passes"):
        JudgeCheck(judge)
    with pytest.raises(
        ValueError,
        match=r"reference@1 never gives 'matched' \(verdicts: match, partial_match, mismatch\)",
    ):
        JudgeCheck(judge, pass_verdicts=["matched"])
    with pytest.raises(ValueError, match="reference@1 has no score 'accuracy'"):
        JudgeCheck(judge, min_scores={"accuracy": 3})
    with pytest.raises(ValueError, match="reference@1 has no input 'answer'"):
        JudgeCheck(judge, inputs={"answer": "model_output"}, pass_verdicts=["match"])
    with pytest.raises(ValueError, match="the judge tier must be the last tier"):
        TieredEval([JudgeCheck(judge, pass_verdicts=["match"]), LengthCheck("x", max=1)])
