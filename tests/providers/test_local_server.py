"""What a real local server (llama-cpp-python's, SmolLM2-135M) showed, replayed at the HTTP level.

Each reply below has the shape llama.cpp's OpenAI-compatible server sent (issue 22, items
16-20): an empty ``delta`` for an exact match, raw newlines inside JSON strings (its
``json_object`` grammar lets them through), 2 of 4 rubric criteria under a strict schema, a
404 for a base URL without ``/v1``, and a prompt over the model's context. The real SDKs talk to
a scripted transport (`tests.fakes.http`); nothing of ours is mocked.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx2
import pytest
from pydantic import ValidationError

from judgecards import Judge, Store
from judgecards.errors import TransportError
from judgecards.providers.openai import OpenAIProvider
from judgecards.schemas import DEFAULT_CRITERIA, ReferenceGrade, ReferenceJudgment
from judgecards.storage import results_table
from tests.fakes.http import Script, Waits, anthropic_message, bad_request, openai_chat
from tests.fakes.judges import OPENAI_KEY, anthropic_judge, openai_judge

INPUTS = {
    "question": "What is the capital of France?",
    "gold_answer": "Paris.",
    "model_output": "Paris.",
}
BASIS = "The answer names the same city as the gold answer."
SCORES = {"correctness": 5, "completeness": 5, "style_fidelity": 5}


def items(n: int) -> list[dict[str, Any]]:
    return [{"id": f"q{i}", **INPUTS} for i in range(n)]


def grade(**fields: Any) -> str:
    """A reference@3 reply (``ReferenceGrade``)."""
    return json.dumps({"scores": SCORES, "delta": "", "decision_basis": BASIS, **fields})


def stored(db: Path, column: str) -> list[Any]:
    with closing(sqlite3.connect(db)) as connection:
        return [row[0] for row in connection.execute(f"SELECT {column} FROM results ORDER BY id")]


def reasks(script: Script) -> list[str]:
    """The feedback turns the judge sent after an unusable reply."""
    return [str(body["messages"][-1]["content"]) for body in script.bodies()[1:]]


# ---------------------------------------------------------------- 16: schema and validators agree


def test_an_exact_match_with_an_empty_delta_is_a_judgment(tmp_path: Path) -> None:
    # 18 of 20 llama.cpp replies had "delta": "", which the schema sent allows.
    script = Script(openai_chat(grade()))
    result = openai_judge(script, "reference@3", db=tmp_path / "j.db").score(**INPUTS)

    assert result.status == "ok", result.error
    assert result.verdict == "match" and result.output is not None
    assert result.output["delta"] == ""
    assert len(script.requests) == 1  # not re-asked
    sent = script.bodies()[0]["response_format"]["json_schema"]["schema"]
    assert sent["properties"]["delta"] == {"type": "string"}


@pytest.mark.parametrize("model", [ReferenceGrade, ReferenceJudgment])
def test_every_explanation_rule_is_in_the_schema_and_in_the_validator(model: Any) -> None:
    schema = model.model_json_schema()
    delta, basis = schema["properties"]["delta"], schema["properties"]["decision_basis"]
    assert "minLength" not in delta and "empty when it does not differ" in delta["description"]
    assert basis["minLength"] == 1  # shown to the model where the schema is printed...
    reply = json.loads(grade())
    if model is ReferenceJudgment:
        reply.update(style_relevant=False, verdict="match")
    assert model.model_validate(reply).delta == ""
    for empty in ("", "   "):  # ...and checked here, since strict modes drop minLength
        with pytest.raises(ValidationError, match="decision_basis"):
            model.model_validate({**reply, "decision_basis": empty})
    with pytest.raises(ValidationError, match="at most 30 words"):
        model.model_validate({**reply, "delta": "word " * 31})


# ---------------------------------------------------------------- 17: raw control characters


def test_raw_newlines_inside_json_strings_are_accepted(tmp_path: Path) -> None:
    # 7 of 20 replies: llama.cpp's json_object grammar let a raw newline into a string.
    raw = grade(delta="Same city.\nNothing is missing.", decision_basis="Same\tcity.")
    raw = raw.replace("\\n", "\n").replace("\\t", "\t")  # raw control characters
    with pytest.raises(ValueError):
        json.loads(raw)  # strict JSON refuses it
    script = Script(openai_chat(raw))

    result = openai_judge(script, "reference@3", db=tmp_path / "j.db").score(**INPUTS)

    assert result.status == "ok", result.error
    assert result.output is not None and result.output["delta"] == "Same city.\nNothing is missing."
    assert len(script.requests) == 1


def test_malformed_json_is_reasked_naming_the_real_fault(tmp_path: Path) -> None:
    # A missing comma: the keys are all there, the JSON is broken.
    broken = (
        '{"scores": {"correctness": 5, "completeness": 5, "style_fidelity": 5}, '
        '"delta": "" "decision_basis": "Same city."}'
    )
    script = Script(openai_chat(broken), openai_chat(grade()))

    result = openai_judge(script, "reference@3", db=tmp_path / "j.db").score(**INPUTS)

    assert result.status == "ok" and result.attempts == 2
    [feedback] = reasks(script)
    assert "not valid JSON" in feedback and "line 1 column" in feedback
    assert "Field required" not in feedback  # the keys are present; the JSON is broken


# ---------------------------------------------------------------- 18: the rubric's strict schema

CRITERIA = [c.name for c in DEFAULT_CRITERIA]


def keyed_rubric(names: list[str]) -> str:
    return json.dumps(
        {"scores": {name: {"reason": f"Fine on {name}.", "score": 4} for name in names}}
    )


def test_the_native_rubric_schema_requires_every_criterion(tmp_path: Path) -> None:
    script = Script(openai_chat(keyed_rubric(CRITERIA)))
    judge = openai_judge(script, "rubric@2", db=tmp_path / "j.db", top_logprobs=None)

    result = judge.score(question="Explain tides.", answer="The moon pulls the sea.")

    scores = script.bodies()[0]["response_format"]["json_schema"]["schema"]["properties"]["scores"]
    # Strict mode enforces "required"; it dropped minItems/maxItems, so a list let a
    # schema-following server return 2 of 4 criteria.
    assert scores["type"] == "object" and scores["required"] == CRITERIA
    assert list(scores["properties"]) == CRITERIA and scores["additionalProperties"] is False
    assert result.status == "ok", result.error
    assert result.scores == dict.fromkeys(CRITERIA, 4)
    assert [entry["name"] for entry in (result.output or {})["scores"]] == CRITERIA


def test_a_prompt_mode_rubric_still_shows_and_reads_the_list(tmp_path: Path) -> None:
    listed = json.dumps({"scores": [{"name": n, "reason": "Fine.", "score": 3} for n in CRITERIA]})
    script = Script(openai_chat(listed))
    judge = openai_judge(
        script, "rubric@2", db=tmp_path / "j.db", top_logprobs=None, output_mode="prompt"
    )

    result = judge.score(question="Explain tides.", answer="The moon pulls the sea.")

    assert "response_format" not in script.bodies()[0]
    assert '"maxItems": 4' in str(script.bodies()[0]["messages"][-1]["content"])
    assert result.status == "ok" and result.scores == dict.fromkeys(CRITERIA, 3)


def test_a_keyed_reply_missing_criteria_is_reasked_naming_them(tmp_path: Path) -> None:
    script = Script(openai_chat(keyed_rubric(CRITERIA[:2])), openai_chat(keyed_rubric(CRITERIA)))
    judge = openai_judge(script, "rubric@2", db=tmp_path / "j.db", top_logprobs=None)

    result = judge.score(question="Explain tides.", answer="The moon pulls the sea.")

    assert result.status == "ok" and result.attempts == 2
    assert all(repr(name) in reasks(script)[0] for name in CRITERIA[2:])


# ---------------------------------------------------------------- 19: a base URL without /v1

NOT_FOUND = httpx2.Response(404, json={"detail": "Not Found"})  # llama-cpp-python (FastAPI)


def test_a_base_url_without_v1_stops_the_run_naming_the_url(tmp_path: Path) -> None:
    script = Script(default=NOT_FOUND)
    provider = OpenAIProvider(
        "smollm2", api_key=OPENAI_KEY, base_url="http://127.0.0.1:8000",
        http_client=script.client(), async_http_client=script.async_client(),
    )  # fmt: skip
    db = tmp_path / "j.db"
    judge = Judge("reference@3", "openai:smollm2", provider=provider, db=db, retry=Waits().policy())

    with pytest.raises(TransportError) as caught:
        judge.score_many(items(6), concurrency=3)
    judge.close()

    error = caught.value
    assert error.stops_batch and error.status == 404
    assert error.url == "http://127.0.0.1:8000/chat/completions"
    assert error.url in str(error) and "try http://127.0.0.1:8000/v1" in str(error)
    assert OPENAI_KEY not in str(error)
    assert len(script.requests) <= 3  # the calls already in flight, no retries
    assert stored(db, "id") == []  # no per-item fatal records


def test_a_404_naming_the_model_stays_an_item_error(tmp_path: Path) -> None:
    missing = httpx2.Response(
        404,
        json={"error": {"message": "The model `gpt-9` does not exist or you do not have access "
                        "to it.", "type": "invalid_request_error", "param": None,
                        "code": "model_not_found"}},
    )  # fmt: skip
    result = openai_judge(Script(missing), db=tmp_path / "j.db").score(**INPUTS)
    assert result.status == "error" and result.error_kind == "fatal"


# ---------------------------------------------------------------- 20: over the context; method


LLAMA_CPP_PYTHON = {  # llama_cpp/server/errors.py's context_length_exceeded
    "error": {
        "message": "This model's maximum context length is 2048 tokens. However, you requested "
        "2394 tokens (1594 in the messages, 800 in the completion). Please reduce the length "
        "of the messages or completion.",
        "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded",
    }
}  # fmt: skip
LLAMA_CPP = {  # llama.cpp's own server (tools/server)
    "error": {
        "code": 400, "message": "the request exceeds the available context size, try increasing it",
        "type": "exceed_context_size_error", "n_prompt_tokens": 2394, "n_ctx": 2048,
    }
}  # fmt: skip
OPENAI = {
    "error": {
        "message": "Input tokens exceed the configured limit of 2048 tokens. Your messages "
        "resulted in 2394 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded",
    }
}  # fmt: skip


@pytest.mark.parametrize(
    ("status", "body"),
    [(400, LLAMA_CPP_PYTHON), (400, LLAMA_CPP), (400, OPENAI),
     (500, {"error": {"message": "Requested tokens (2394) exceed context window of 2048",
                      "type": "internal_server_error"}})],
    ids=["llama-cpp-python", "llama.cpp", "openai", "llama-cpp-python-500"],
)  # fmt: skip
def test_a_prompt_over_the_context_is_its_own_error_with_the_numbers(
    tmp_path: Path, status: int, body: dict[str, Any]
) -> None:
    script = Script(httpx2.Response(status, json=body))
    db = tmp_path / "j.db"

    result = openai_judge(script, "reference@3", db=db).score(**INPUTS)

    assert result.status == "error" and result.error_kind == "context_length"
    assert result.error is not None
    assert "2394" in result.error and "2048" in result.error
    assert "--max-input-chars" in result.error and "--max-tokens" in result.error
    assert len(script.requests) == 1  # not retried: the same prompt cannot fit
    assert stored(db, "error_kind") == ["context_length"]


def test_anthropic_over_the_context_is_its_own_error(tmp_path: Path) -> None:
    body = {"type": "error", "error": {"type": "invalid_request_error",
            "message": "prompt is too long: 208310 tokens > 200000 maximum"}}  # fmt: skip
    script = Script(httpx2.Response(400, json=body))
    result = anthropic_judge(script, db=tmp_path / "j.db").score(
        question="q", gold_answer="g", model_output="o"
    )
    assert result.error_kind == "context_length" and result.error is not None
    assert "208310 tokens requested" in result.error and "200000" in result.error


LLAMA_CPP_REFUSAL = {
    "error": {
        "message": "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', "
        "'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", "
        "'input': 'json_schema'}",
        "type": "internal_server_error",
    }
}


def llama_cpp_server(request: httpx2.Request) -> httpx2.Response:
    """llama-cpp-python's server: a 500 for json_schema; json_object with a schema works."""
    response_format = json.loads(request.content).get("response_format")
    if response_format is not None and response_format["type"] == "json_schema":
        return httpx2.Response(500, json=LLAMA_CPP_REFUSAL)
    return openai_chat(grade())


def test_each_result_records_the_native_method_it_was_read_with(tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    llama = openai_judge(Script(default=llama_cpp_server), "reference@3", db=db, model="llama")
    openai = openai_judge(Script(default=openai_chat(grade())), "reference@3", db=db)
    prompt = openai_judge(
        Script(default=openai_chat(grade())), "reference@3", db=db, model="p",
        output_mode="prompt",
    )  # fmt: skip
    # Anthropic without output_config: the forced tool.
    tool_reply = anthropic_message(grade())
    refused = bad_request("output_config: not supported for this model", provider="anthropic")
    claude = anthropic_judge(Script(refused, tool_reply), "reference@3", db=db)

    methods = {
        "llama": [r.native_method for r in llama.score_many(items(3), concurrency=1)],
        "openai": [openai.score(**INPUTS).native_method],
        "prompt": [prompt.score(**INPUTS).native_method],
        "claude": [claude.score(**INPUTS).native_method],
    }

    assert methods == {
        "llama": ["json_object"] * 3, "openai": ["json_schema"], "prompt": [None],
        "claude": ["tool"],
    }  # fmt: skip
    assert sorted(stored(db, "coalesce(native_method, '-')")) == sorted(
        ["json_object"] * 3 + ["json_schema", "-", "tool"]
    )
    with Store(db) as store:  # and it is exported with the other columns
        exported = [row["native_method"] for row in results_table(store).rows]
    assert sorted(m or "-" for m in exported) == sorted(stored(db, "coalesce(native_method, '-')"))


def test_the_cli_stops_at_a_404_base_url_with_exit_2_and_stores_nothing(
    tmp_path: Path, serve: Any
) -> None:
    from click.testing import CliRunner

    from judgecards.cli import cli

    def without_v1(request: Any) -> tuple[int, dict[str, Any]] | None:
        return None if request.path.startswith("/v1/") else (404, {"detail": "Not Found"})

    server = serve(fault=without_v1)
    base = server.base_url.removesuffix("/v1")
    source = tmp_path / "items.jsonl"
    source.write_text("".join(json.dumps(item) + "\n" for item in items(5)))
    db = tmp_path / "j.db"

    result = CliRunner(env={"OPENAI_API_KEY": OPENAI_KEY}).invoke(
        cli,
        ["score", "--card", "reference", "--model", "openai:smollm2", "--base-url", base,
         str(source), "--output", str(tmp_path / "o.jsonl"), "--db", str(db)],
    )  # fmt: skip

    assert result.exit_code == 2, result.output
    assert f"{base}/chat/completions answered HTTP 404" in result.output
    assert f"try {base}/v1" in result.output
    assert server.requests <= 8  # the first calls in flight; no per-item retries
    assert stored(db, "id") == []
