"""Provider-native structured output, output modes, extraction records and truncation.

The projection is checked as a pure function; everything a provider sees is checked at the HTTP
level with the real SDKs over a scripted transport (`tests.fakes.http`): the body sent, the
prompt, the requests counted, what is stored.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any, Literal

import httpx2
import pytest
from pydantic import BaseModel, Field

from judgecards import Judge, ProviderConfigError, Store
from judgecards.judging.requests import TRUNCATION_CEILING
from judgecards.providers.mock import MockProvider
from judgecards.replies.structured_output import drop_optional_nulls, guards_schema, strict_schema
from judgecards.schemas import DEFAULT_CRITERIA, ReferenceJudgment, rubric_schema
from tests.builders import GUARDED_CARD
from tests.builders import GUARDED_INPUTS as INPUTS
from tests.builders import schema_objects as walk
from tests.fakes.http import (
    Script,
    anthropic_message,
    bad_request,
    openai_chat,
    reference_judgment,
    truncated,
)
from tests.fakes.judges import anthropic_judge, openai_judge

GOOD = reference_judgment()


class Verdict(BaseModel):
    """A reply with an optional field whose default is not null (for the strict projection)."""

    verdict: Literal["good", "bad"]
    confidence: int = Field(default=3, ge=1, le=5)


VERDICT_CARD = """---
name: verdict
version: 1
description: A verdict with an optional confidence.
inputs:
  answer: {description: The answer judged.}
output:
  format: json
  schema: tests.replies.test_structured_output:Verdict
verdict: {field: verdict}
---
Is the answer in <answer> good?
{% if output_schema %}{{ output_schema }}{% endif %}
<answer>
{{ answer }}
</answer>
"""


@pytest.fixture
def cards(tmp_path: Path) -> Path:
    directory = tmp_path / "cards" / "guarded"
    directory.mkdir(parents=True)
    (directory / "v1.md.j2").write_text(GUARDED_CARD, "utf-8")
    return tmp_path / "cards"


def items(n: int) -> list[dict[str, Any]]:
    return [{"id": f"q{i}", **INPUTS, "model_output": f"Answer {i}: 100 °C."} for i in range(n)]


def user_text(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"])


def stored(db: Path, column: str) -> list[Any]:
    with closing(sqlite3.connect(db)) as connection:
        return [row[0] for row in connection.execute(f"SELECT {column} FROM results ORDER BY id")]


# ---------------------------------------------------------------- the strict projection


def test_strict_schema_requires_every_property_closes_objects_and_drops_bounds() -> None:
    original = ReferenceJudgment.model_json_schema()
    projected = strict_schema(original)

    objects = [n for n in walk(projected) if n.get("type") == "object"]
    assert objects, "the judgment and its scores are objects"
    for node in objects:
        assert node["additionalProperties"] is False
        assert node["required"] == list(node["properties"])
    assert not any(k in n for n in walk(projected) for k in ("minimum", "maximum", "maxLength"))
    # A bounded integer scale becomes an enum, which strict mode and grammars enforce.
    # (ReferenceScores is used once: written in place of its $ref, no $defs left.)
    assert "$defs" not in projected
    scores = projected["properties"]["scores"]["properties"]
    assert scores["correctness"]["enum"] == [1, 2, 3, 4, 5]
    assert original["$defs"]["ReferenceScores"]["properties"]["correctness"]["minimum"] == 1


def test_optional_properties_become_nullable_and_their_nulls_are_dropped_before_validation() -> (
    None
):
    class Inner(BaseModel):
        label: str = Field(description="A label.")

    class Reply(BaseModel):
        verdict: str
        confidence: int = Field(default=3, ge=1, le=5, description="How sure.")
        inner: Inner | None = None
        note: str = Field(default="none", pattern="^[a-z]+$")

    schema = Reply.model_json_schema()
    projected = strict_schema(schema)

    assert projected["required"] == ["verdict", "confidence", "inner", "note"]
    confidence = projected["properties"]["confidence"]
    assert {"type": "null"} in confidence["anyOf"] and confidence["description"] == "How sure."
    assert "pattern" not in json.dumps(projected)
    # What a strict server writes for the unset optional fields validates after the drop.
    written = {"verdict": "ok", "confidence": None, "inner": None, "note": None}
    cleaned = drop_optional_nulls(written, schema)
    assert cleaned == {"verdict": "ok", "inner": None}  # inner allows null: kept
    assert Reply.model_validate(cleaned).confidence == 3
    untouched = {"verdict": "ok", "confidence": 2, "inner": {"label": "x"}, "note": "a"}
    assert drop_optional_nulls(untouched, schema) is untouched


def test_a_ref_with_siblings_is_inlined_and_a_bare_ref_kept() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "a": {"$ref": "#/$defs/Point", "description": "where"},
            "b": {"$ref": "#/$defs/Point"},
            "c": {"$ref": "#/$defs/Point"},
        },
        "required": ["a", "b", "c"],
        "$defs": {
            "Point": {"type": "object", "properties": {"x": {"type": "integer", "minimum": 0}}}
        },
    }
    projected = strict_schema(schema)

    a = projected["properties"]["a"]
    assert "$ref" not in a and a["description"] == "where" and a["additionalProperties"] is False
    # x was optional in Point: required now, but nullable; its bound is gone.
    assert a["properties"]["x"] == {"anyOf": [{"type": "integer"}, {"type": "null"}]}
    assert projected["properties"]["b"] == {"$ref": "#/$defs/Point"}  # used twice: kept
    assert projected["$defs"]["Point"]["required"] == ["x"]
    assert schema["$defs"]["Point"]["properties"]["x"]["minimum"] == 0  # input unchanged
    # Used once, the definition is written in place; the projection validates the same.
    del schema["properties"]["c"]
    schema["required"] = ["a", "b"]
    single = strict_schema(schema)
    assert "$defs" not in single and single["properties"]["b"] == projected["$defs"]["Point"]


def test_a_recursive_definition_keeps_its_ref() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/Node"}},
        "required": ["root"],
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
                "required": ["children"],
            }
        },
    }
    projected = strict_schema(schema)

    assert projected["properties"]["root"] == {"$ref": "#/$defs/Node"}
    assert projected["$defs"]["Node"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}


def test_a_rubric_schema_keeps_its_enums_and_loses_its_item_counts() -> None:
    projected = strict_schema(rubric_schema(DEFAULT_CRITERIA))
    scores = projected["properties"]["scores"]

    assert "minItems" not in scores and "maxItems" not in scores
    names = [entry["properties"]["name"]["enum"] for entry in scores["items"]["anyOf"]]
    assert names == [[c.name] for c in DEFAULT_CRITERIA]


def test_only_a_guarded_schema_section_is_dropped() -> None:
    assert guards_schema("x {% if output_schema %}{{ output_schema }}{% endif %}")
    assert guards_schema("x {%- if output_schema -%}")
    assert not guards_schema("Reply with JSON:\n{{ output_schema }}")


# ---------------------------------------------------------------- OpenAI: what is sent


def test_openai_sends_the_strict_schema_and_a_v1_card_keeps_its_released_prompt(
    tmp_path: Path,
) -> None:
    script = Script(openai_chat(GOOD), openai_chat(GOOD))
    native = openai_judge(script, db=tmp_path / "n.db").score(**INPUTS)
    prompt = openai_judge(script, db=tmp_path / "p.db", output_mode="prompt").score(**INPUTS)

    sent_native, sent_prompt = script.bodies()
    response_format = sent_native["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["strict"] is True
    # reference@1 shows its whole schema in the prompt: the native copy has no descriptions.
    assert response_format["json_schema"]["schema"] == strict_schema(
        ReferenceJudgment.model_json_schema(), descriptions=False
    )
    assert "response_format" not in sent_prompt
    # reference@1 prints its schema unguarded: its released text is sent either way.
    assert user_text(sent_native) == user_text(sent_prompt)
    assert '"properties"' in user_text(sent_native)
    assert (native.extraction, prompt.extraction) == ("native", "prompt_json")
    assert stored(tmp_path / "n.db", "extraction") == ["native"]
    assert stored(tmp_path / "p.db", "extraction") == ["prompt_json"]


def test_a_guarded_card_sent_natively_has_no_schema_in_its_prompt(
    tmp_path: Path, cards: Path
) -> None:
    script = Script(openai_chat(GOOD), openai_chat(GOOD))
    openai_judge(script, "guarded", cards_dir=cards, db=tmp_path / "a.db").score(**INPUTS)
    openai_judge(
        script, "guarded", cards_dir=cards, db=tmp_path / "b.db", output_mode="prompt"
    ).score(**INPUTS)

    native, prompt = script.bodies()
    assert "JSON Schema" not in user_text(native) and '"properties"' not in user_text(native)
    assert "JSON Schema" in user_text(prompt) and '"properties"' in user_text(prompt)
    assert "<model_output>" in user_text(native)


# ---------------------------------------------------------------- auto: one fallback per run


def refuses_json_schema(request: httpx2.Request) -> httpx2.Response:
    """An older model: 400 naming response_format when it is sent, else a judgment."""
    if "response_format" in json.loads(request.content):
        return bad_request(
            "Invalid parameter: 'response_format' of type 'json_schema' is not supported with "
            "this model.",
            param="response_format",
        )
    return openai_chat(GOOD)


def test_auto_falls_back_once_for_eight_concurrent_items(tmp_path: Path, cards: Path) -> None:
    script = Script(default=refuses_json_schema)
    judge = openai_judge(script, "guarded", cards_dir=cards, db=tmp_path / "j.db")

    results = judge.score_many(items(8), concurrency=8)

    assert [r.status for r in results] == ["ok"] * 8
    bodies = script.bodies()
    # One refused native request; every item then judged in the prompt form, once.
    assert len(bodies) == 9
    assert ["response_format" in b for b in bodies].count(True) == 1
    assert all('"properties"' in user_text(b) for b in bodies if "response_format" not in b)
    assert {r.extraction for r in results} == {"prompt_json"}
    assert judge.transport_counters.rejected_parameters == 1
    # Later items of the judge are built in the prompt form at once.
    later = judge.score(**{**INPUTS, "model_output": "Water boils at 100 °C."})
    assert later.extraction == "prompt_json" and "response_format" not in script.bodies()[-1]


def test_llama_cpp_500_on_json_schema_falls_back_instead_of_retrying(tmp_path: Path) -> None:
    # llama-cpp-python answers a json_schema response format with HTTP 500 (STYLE.md §1.6).
    refusal = httpx2.Response(
        500,
        json={"error": {"message": "1 validation error: response_format.json_schema: "
                        "Extra inputs are not permitted", "type": "internal_server_error"}},
    )  # fmt: skip
    script = Script(refusal, openai_chat(GOOD))
    result = openai_judge(script, db=tmp_path / "j.db").score(**INPUTS)

    assert result.status == "ok" and result.extraction == "prompt_json"
    assert len(script.requests) == 2
    assert "response_format" not in script.bodies()[1]


# llama-cpp-python 0.3.36's answer to {"type": "json_schema", ...}, as its server sent it
# (SmolLM2-135M, `python -m llama_cpp.server`): a 500 whose validation error offers json_object.
LLAMA_CPP_REFUSAL = {
    "error": {
        "message": "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', "
        "'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", "
        "'input': 'json_schema', 'ctx': {'expected': \"'text' or 'json_object'\"}}\n\n  File "
        '"/srv/llama_cpp/server/app.py", line 376, in create_chat_completion\n    POST '
        "/v1/chat/completions",
        "type": "internal_server_error",
        "param": None,
        "code": None,
    }
}


def llama_cpp_server(request: httpx2.Request) -> httpx2.Response:
    """llama-cpp-python's server: a 500 for json_schema; json_object with a schema works."""
    response_format = json.loads(request.content).get("response_format")
    if response_format is not None and response_format["type"] == "json_schema":
        return httpx2.Response(500, json=LLAMA_CPP_REFUSAL)
    return openai_chat(GOOD)


@pytest.mark.parametrize("mode", ["auto", "native"])
def test_llama_cpp_keeps_native_output_in_its_json_object_form(
    tmp_path: Path, cards: Path, mode: Literal["auto", "native"]
) -> None:
    script = Script(default=llama_cpp_server)
    judge = openai_judge(script, "guarded", cards_dir=cards, db=tmp_path / "j.db", output_mode=mode)

    results = judge.score_many(items(8), concurrency=8)

    assert [r.status for r in results] == ["ok"] * 8
    assert {r.extraction for r in results} == {"native"}  # was prompt_json, or a stop in native
    bodies = script.bodies()
    assert len(bodies) == 9  # one refused json_schema request, then each item once
    assert bodies[0]["response_format"]["type"] == "json_schema"
    for body in bodies[1:]:
        assert body["response_format"] == {
            "type": "json_object",
            "schema": bodies[0]["response_format"]["json_schema"]["schema"],
        }
        assert '"properties"' not in user_text(body)  # the schema is not repeated in the prompt
    assert judge.transport_counters.rejected_parameters == 1


def test_a_refused_json_object_form_falls_back_to_the_prompt_under_auto(tmp_path: Path) -> None:
    refused_again = bad_request("'schema' is not supported", param="response_format")
    script = Script(httpx2.Response(500, json=LLAMA_CPP_REFUSAL), refused_again, openai_chat(GOOD))

    result = openai_judge(script, db=tmp_path / "j.db").score(**INPUTS)

    assert result.status == "ok" and result.extraction == "prompt_json"
    kinds = [b.get("response_format", {}).get("type") for b in script.bodies()]
    assert kinds == ["json_schema", "json_object", None]


def test_native_mode_fails_clearly_when_the_server_refuses(tmp_path: Path) -> None:
    script = Script(default=refuses_json_schema)
    judge = openai_judge(script, db=tmp_path / "j.db", output_mode="native")

    with pytest.raises(ProviderConfigError) as caught:
        judge.score_many(items(3), concurrency=1)

    assert "output_mode 'native'" in str(caught.value) and "'auto'" in str(caught.value)
    assert len(script.requests) == 1


def test_native_needs_a_provider_that_has_it(tmp_path: Path) -> None:
    class Plain(MockProvider):
        native_output = False

    judge = Judge("reference@1", "mock:judge", provider=Plain(), db=tmp_path / "j.db")
    assert judge.native is False  # auto with a provider that cannot: the prompt form
    assert judge.score(**INPUTS).extraction == "prompt_json"
    with pytest.raises(ValueError, match="no native structured output"):
        Judge("reference@1", "mock:judge", provider=Plain(), output_mode="native", db=judge.store)
    with pytest.raises(ValueError, match="output_mode must be one of"):
        Judge("reference@1", "mock:judge", output_mode="json", db=judge.store)  # type: ignore[arg-type]


def test_a_card_sets_its_output_mode_and_a_judge_overrides_it(tmp_path: Path) -> None:
    directory = tmp_path / "cards" / "prompted"
    directory.mkdir(parents=True)
    text = GUARDED_CARD.replace("name: guarded", "name: prompted").replace(
        "defaults:", "output_mode: prompt\ndefaults:"
    )
    (directory / "v1.md.j2").write_text(text, "utf-8")
    script = Script(openai_chat(GOOD), openai_chat(GOOD))

    by_card = openai_judge(script, "prompted", cards_dir=tmp_path / "cards", db=tmp_path / "a.db")
    by_judge = openai_judge(
        script, "prompted", cards_dir=tmp_path / "cards", db=tmp_path / "b.db", output_mode="auto"
    )
    by_card.score(**INPUTS)
    by_judge.score(**INPUTS)

    assert by_card.output_mode == "prompt" and by_judge.output_mode == "auto"
    assert ["response_format" in b for b in script.bodies()] == [False, True]


def test_the_response_cache_keys_on_the_output_mode_sent(tmp_path: Path) -> None:
    script = Script(openai_chat(GOOD), openai_chat(GOOD))
    with Store(tmp_path / "j.db") as store:
        openai_judge(script, db=store).score_many([{"id": "a", **INPUTS}])
        # The same request in the prompt form (another item id: no stored result) is sent...
        prompted = openai_judge(script, db=store, output_mode="prompt")
        assert not prompted.score_many([{"id": "b", **INPUTS}])[0].cached
        assert len(script.requests) == 2
        # ...while a native judge is served the cached native reply without a call.
        native = openai_judge(script, db=store).score_many([{"id": "c", **INPUTS}])[0]
        assert native.cached and native.extraction == "native"
        assert len(script.requests) == 2


# ---------------------------------------------------------------- Anthropic


def test_anthropic_sends_output_config_and_falls_back_to_a_forced_tool(tmp_path: Path) -> None:
    tool_reply = httpx2.Response(
        200,
        json={
            "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-3-5-haiku",
            "content": [{"type": "tool_use", "id": "toolu_01", "name": "record_judgment",
                         "input": json.loads(GOOD)}],
            "stop_reason": "tool_use", "stop_sequence": None,
            "usage": {"input_tokens": 700, "output_tokens": 90},
        },
    )  # fmt: skip
    script = Script(
        bad_request(
            "output_config.format: structured outputs are not supported for this model",
            provider="anthropic",
        ),
        tool_reply,
    )
    result = anthropic_judge(script, db=tmp_path / "j.db").score(**INPUTS)

    first, second = script.bodies()
    assert first["output_config"]["format"]["type"] == "json_schema"
    assert first["output_config"]["format"]["schema"]["additionalProperties"] is False
    assert "output_config" not in second
    assert second["tool_choice"] == {"type": "tool", "name": "record_judgment"}
    assert second["tools"][0]["input_schema"] == first["output_config"]["format"]["schema"]
    assert second["tools"][0]["strict"] is True
    assert result.status == "ok" and result.extraction == "native"
    assert result.scores == {"correctness": 5, "completeness": 4, "style_fidelity": 5}


# ---------------------------------------------------------------- truncation


def test_a_reply_cut_twice_is_a_truncated_error_after_one_larger_retry(tmp_path: Path) -> None:
    script = Script(truncated('{"scores": {"correctness": 5'), truncated('{"scores": {'))
    judge = openai_judge(script, db=tmp_path / "j.db", max_attempts=3)

    result = judge.score(**INPUTS)

    assert result.status == "error" and result.error_kind == "truncated"
    assert "max_tokens" in (result.error or "")
    budgets = [b["max_completion_tokens"] for b in script.bodies()]
    assert budgets == [800, 1600]  # reference@1's 800, then twice that; no re-ask spiral
    assert stored(tmp_path / "j.db", "error_kind") == ["truncated"]
    with closing(sqlite3.connect(tmp_path / "j.db")) as connection:
        assert connection.execute("SELECT count(*) FROM response_cache").fetchone() == (0,)


def test_no_larger_retry_beyond_the_ceiling(tmp_path: Path) -> None:
    script = Script(truncated('{"scores": {'))
    result = openai_judge(script, db=tmp_path / "j.db", max_tokens=TRUNCATION_CEILING).score(
        **INPUTS
    )

    assert result.error_kind == "truncated" and len(script.requests) == 1


def test_a_larger_retry_is_sent_even_with_one_attempt(tmp_path: Path) -> None:
    script = Script(truncated('{"scores": {'), openai_chat(GOOD))
    result = openai_judge(script, db=tmp_path / "j.db", max_attempts=1, max_tokens=3000).score(
        **INPUTS
    )

    assert result.status == "ok" and result.attempts == 2
    assert [b["max_completion_tokens"] for b in script.bodies()] == [3000, 6000]


# ---------------------------------------------------------------- extraction of other cards


def test_final_token_and_mock_results_record_their_extraction(tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    rating = Judge("single", "mock:judge", db=db).score(question="2+2?", answer="4")
    reference = Judge("reference@1", "mock:judge", db=db).score(**INPUTS)

    assert rating.extraction == "final_token"
    assert reference.extraction == "native"  # the mock takes native requests
    with Store(db) as store:
        assert {r.extraction for r in store.finished([rating.id, reference.id]).values()} == {
            "final_token",
            "native",
        }


def test_an_async_batch_on_anthropic_records_native_extraction(tmp_path: Path) -> None:
    script = Script(default=anthropic_message(GOOD))
    judge = anthropic_judge(script, db=tmp_path / "j.db")

    results = asyncio.run(judge.ascore_many(items(3), concurrency=3))

    assert {r.extraction for r in results} == {"native"}
    assert all("output_config" in b for b in script.bodies())


# ---------------------------------------------------------------- re-asks and optional fields


def test_a_native_reask_names_the_required_schema_and_its_fallback_the_one_shown(
    tmp_path: Path, cards: Path
) -> None:
    invalid = reference_judgment(verdict="great")
    script = Script(openai_chat(invalid), refuses_json_schema, openai_chat(GOOD))
    result = openai_judge(script, "guarded", cards_dir=cards, db=tmp_path / "j.db").score(**INPUTS)

    first, refused, fallback = script.bodies()
    assert result.status == "ok" and result.attempts == 2
    assert "response_format" in refused and "response_format" not in fallback
    asked = refused["messages"][-1]["content"]
    assert "verdict" in asked and asked.endswith("matches the required schema.")
    # Sent in the prompt form, the whole conversation is the prompt form's: schema shown.
    assert '"properties"' in fallback["messages"][-3]["content"]
    assert fallback["messages"][-2]["content"] == invalid
    assert fallback["messages"][-1]["content"].endswith("matches the JSON Schema given above.")
    assert '"properties"' not in first["messages"][-1]["content"]


def test_a_null_for_an_optional_field_takes_its_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUDGECARDS_SCHEMA_MODULES", "tests.replies.test_structured_output")
    directory = tmp_path / "cards" / "verdict"
    directory.mkdir(parents=True)
    (directory / "v1.md.j2").write_text(VERDICT_CARD, "utf-8")
    script = Script(openai_chat('{"verdict": "good", "confidence": null}'))

    judge = openai_judge(script, "verdict", cards_dir=tmp_path / "cards", db=tmp_path / "j.db")
    result = judge.score(answer="42")

    assert result.status == "ok" and result.attempts == 1
    assert result.output is not None and result.output["confidence"] == 3
    sent = script.bodies()[0]["response_format"]["json_schema"]["schema"]
    assert sent["required"] == ["verdict", "confidence"]
    assert {"type": "null"} in sent["properties"]["confidence"]["anyOf"]


def test_exports_carry_the_extraction_and_older_rows_read_as_unknown(tmp_path: Path) -> None:
    import io

    from judgecards.storage import results_table, write_table

    db = tmp_path / "j.db"
    Judge("reference@1", "mock:judge", db=db).score(**INPUTS)
    with closing(sqlite3.connect(db)) as connection:  # a row from before m006
        connection.execute(
            "INSERT INTO results (id, card, card_hash, model, status, created_at, scores) "
            "VALUES ('old', 'reference@1', 'sha256:x', 'mock:judge', 'ok', "
            "'2020-01-01T00:00:00+00:00', '{}')"
        )
        connection.commit()
    with Store(db) as store:
        handle = io.StringIO()
        write_table(results_table(store), handle, "jsonl")
        assert store.finished(["old"])["old"].extraction is None
    rows = [json.loads(line) for line in handle.getvalue().splitlines()]
    assert [row["extraction"] for row in rows] == [None, "native"]
