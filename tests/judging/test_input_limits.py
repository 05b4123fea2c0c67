"""A per-input size limit, checked before any call (issue 9, defect 11: a 50 MB line became a
13.1M-token prompt)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgecards import Judge, RetryPolicy
from judgecards.errors import InputTooLarge
from judgecards.providers.openai import OpenAIProvider
from judgecards.storage import Store
from tests.fakes.http import Script, Waits, openai_chat

REPLY = json.dumps(
    {
        "scores": {"correctness": 5, "completeness": 5, "style_fidelity": 5},
        "style_relevant": False,
        "verdict": "match",
        "delta": "none",
        "decision_basis": "same fact",
    }
)


def judge(tmp_path: Path, script: Script, **options: object) -> Judge:
    waits = Waits()
    provider = OpenAIProvider(
        "gpt-4o",
        api_key="sk-test-limits",
        http_client=script.client(),
        async_http_client=script.async_client(),
    )
    return Judge(
        "reference@1", "openai:gpt-4o", provider=provider, db=Store(tmp_path / "j.db"),
        retry=RetryPolicy(sleep=waits, async_sleep=waits.asleep), **options,
    )  # fmt: skip


def test_score_refuses_a_long_input_before_any_call(tmp_path: Path) -> None:
    script = Script()  # any request would find no reply
    with judge(tmp_path, script, max_input_chars=1000) as j, pytest.raises(InputTooLarge) as caught:
        j.score(question="q", gold_answer="g", model_output="x" * 1001)
    assert caught.value.variable == "model_output" and caught.value.limit == 1000
    assert script.requests == []


def test_score_many_turns_a_long_input_into_an_input_error_record(tmp_path: Path) -> None:
    script = Script(openai_chat(REPLY))
    items = [
        {"id": "long", "question": "q", "gold_answer": "g", "model_output": "x" * 5000},
        {"id": "fine", "question": "q", "gold_answer": "g", "model_output": "y"},
    ]
    with judge(tmp_path, script, max_input_chars=4096) as j:
        long, fine = j.score_many(items, concurrency=1)
    assert (long.status, long.error_kind) == ("error", "input")
    assert "'model_output' has 5,000 characters, over the limit of 4,096" in (long.error or "")
    assert fine.status == "ok"
    assert len(script.requests) == 1  # only the item within the limit was sent
    assert "y" in json.loads(script.requests[0].content)["messages"][-1]["content"]


def test_the_default_limit_applies_and_none_lifts_it(tmp_path: Path) -> None:
    big = "x" * 200_001
    with judge(tmp_path, Script()) as j, pytest.raises(InputTooLarge):
        j.score(question="q", gold_answer="g", model_output=big)
    script = Script(openai_chat(REPLY))
    with judge(tmp_path, script, max_input_chars=None) as j:
        assert j.score(question="q", gold_answer="g", model_output=big).status == "ok"
    with pytest.raises(ValueError, match="max_input_chars"):
        judge(tmp_path, Script(), max_input_chars=0)
