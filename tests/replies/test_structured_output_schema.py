"""The schema sent natively is lean: no titles, and no descriptions the card's prompt restates.

A provider bills the schema it is sent as input tokens, so what does not constrain a reply or
tell the judge something new is left out. These tests check that the lean projection accepts
and refuses exactly the replies the annotated one does (with a JSON Schema validator, on every
built-in JSON card), that the card's pydantic model still catches what no strict schema can
say, and which cards keep their descriptions.
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from pydantic import BaseModel, Field, ValidationError

from judgecards.cards import load_card
from judgecards.judging.requests import first_request
from judgecards.providers.mock import synthesize
from judgecards.replies import restates_fields, strict_schema
from judgecards.schemas import item_schema
from tests.builders import GUARDED_CARD
from tests.builders import GUARDED_INPUTS as INPUTS
from tests.builders import schema_objects as walk
from tests.fakes.http import Script, openai_chat, reference_judgment
from tests.fakes.judges import openai_judge

ITEMS: dict[str, dict[str, Any]] = {
    "reference": INPUTS,
    "pairwise": {"question": "Two plus two?", "answer_a": "Four.", "answer_b": "Five."},
    "rubric": {"question": "Explain tides.", "answer": "The moon pulls the sea."},
}


def card_schema(ref: str) -> dict[str, Any]:
    """The schema a judge sends for the card's item (a rubric's is built for its criteria)."""
    card = load_card(ref)
    inputs = ITEMS[card.name]
    return item_schema(card.output_model, inputs) or json.loads(card.output_schema)


def keywords(schema: Any) -> set[str]:
    """Every keyword used in ``schema``; the names in ``properties`` and ``$defs`` are not."""
    found: set[str] = set()
    pending = [schema]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                found.add(key)
                named = key in ("properties", "$defs") and isinstance(value, dict)
                pending.extend(value.values() if named else [value])
        elif isinstance(node, list):
            pending.extend(node)
    return found


def mutations(reply: dict[str, Any]) -> list[Any]:
    """Replies broken in the ways a strict schema refuses: a key missing, a key added, a value
    of the wrong type, an enum value not listed, a score off its scale, not an object."""
    broken: list[Any] = [[reply], "not json"]
    for key in reply:
        missing = copy.deepcopy(reply)
        del missing[key]
        broken.append(missing)
    broken.append({**copy.deepcopy(reply), "extra": 1})
    for node in walk(reply):
        for key, value in node.items():
            changed = {bool: "yes", int: 99, str: 7, dict: [], list: {}}.get(type(value), None)
            if changed is not None:
                original = node[key]
                node[key] = changed
                broken.append(copy.deepcopy(reply))
                node[key] = original
    return broken


@pytest.mark.parametrize("ref", ["reference@1", "reference@2", "pairwise@2", "rubric@2"])
def test_the_lean_projection_accepts_and_refuses_the_same_replies(ref: str) -> None:
    schema = card_schema(ref)
    annotated = Draft202012Validator(strict_schema(schema))
    lean = Draft202012Validator(strict_schema(schema, descriptions=False))
    rng = random.Random(7)
    valid = [synthesize(strict_schema(schema), rng) for _ in range(20)]

    original = Draft202012Validator(schema)
    model = load_card(ref).output_model
    for reply in valid:
        assert annotated.is_valid(reply) and lean.is_valid(reply)
        if not original.is_valid(reply):  # what the strict subset cannot say (minItems...)
            with pytest.raises(ValidationError):  # the card's model still refuses
                model.model_validate(reply)
        broken = mutations(reply)
        assert sum(not annotated.is_valid(b) for b in broken) >= len(reply) + 2
        assert [annotated.is_valid(b) for b in broken] == [lean.is_valid(b) for b in broken]


def test_titles_go_always_descriptions_on_request_and_property_names_stay() -> None:
    class Entry(BaseModel):
        title: str = Field(description="The entry's heading.")
        description: str = Field(description="What the entry says.")
        score: int = Field(ge=1, le=3, title="Score (1-3)")

    schema = Entry.model_json_schema()
    kept = strict_schema(schema)
    lean = strict_schema(schema, descriptions=False)

    # Fields named title and description are data, not annotations: both stay.
    assert list(lean["properties"]) == ["title", "description", "score"] == lean["required"]
    assert "title" not in keywords(kept) and "title" not in keywords(lean)
    assert kept["properties"]["description"]["description"] == "What the entry says."
    assert "description" not in keywords(lean)
    assert lean["properties"]["score"] == {"type": "integer", "enum": [1, 2, 3]}
    assert schema["properties"]["score"]["title"] == "Score (1-3)"  # the input is unchanged


def test_which_cards_restate_their_fields() -> None:
    for ref in ("reference@1", "pairwise@1", "rubric@1"):  # the schema is printed in the prompt
        assert restates_fields(load_card(ref).body, card_schema(ref)), ref
    for ref in ("reference@2", "pairwise@2", "rubric@2"):  # every field named in the text
        assert restates_fields(load_card(ref).body, card_schema(ref)), ref
    schema = card_schema("reference@2")
    # A guarded card that does not say what its fields hold keeps the descriptions.
    assert not restates_fields(GUARDED_CARD, schema)
    # A name must appear as a word: 'delta' inside 'deltas' does not count.
    named = "correctness completeness style_fidelity style_relevant verdict decision_basis scores"
    assert not restates_fields(named + " deltas {% if output_schema %}{% endif %}", schema)
    assert restates_fields(named + " delta {% if output_schema %}{% endif %}", schema)


def native_schema(card: Any, inputs: dict[str, Any]) -> dict[str, Any]:
    request = first_request(
        card, inputs, model="gpt-4o", temperature=0.0, max_tokens=800, top_logprobs=None,
        max_input_chars=None, native=True,
    )  # fmt: skip
    assert request.native_schema is not None
    return dict(request.native_schema)


def test_the_request_sends_descriptions_only_where_the_prompt_lacks_them(
    tmp_path: Path,
) -> None:
    (tmp_path / "guarded").mkdir()
    (tmp_path / "guarded" / "v1.md.j2").write_text(GUARDED_CARD, "utf-8")
    lean = native_schema(load_card("reference@2"), INPUTS)
    assert "description" not in keywords(lean) and "title" not in keywords(lean)
    guarded = native_schema(load_card("guarded", cards_dir=tmp_path), INPUTS)
    assert "description" in keywords(guarded) and "title" not in keywords(guarded)
    # The lean copy is what a provider bills: well under the annotated projection.
    full = json.dumps(strict_schema(card_schema("reference@2")))
    assert len(json.dumps(lean)) < 0.6 * len(full)


def test_pydantic_still_refuses_a_native_reply_the_lean_schema_lets_through(
    tmp_path: Path,
) -> None:
    """style_fidelity must be 5 when style_relevant is false: no strict schema can say so."""
    cross_field = reference_judgment(style_fidelity=2, style_relevant=False)
    lean = strict_schema(card_schema("reference@2"), descriptions=False)
    assert Draft202012Validator(lean).is_valid(json.loads(cross_field))
    script = Script(openai_chat(cross_field), openai_chat(reference_judgment()))

    result = openai_judge(script, "reference@2", db=tmp_path / "j.db").score(**INPUTS)

    assert result.ok and result.extraction == "native"
    first, again = script.bodies()
    assert first["response_format"]["json_schema"]["schema"] == lean
    assert "style_fidelity must be 5" in again["messages"][-1]["content"]


def test_a_definition_used_once_inside_a_kept_one_is_written_there() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/Pair"}, "b": {"$ref": "#/$defs/Pair"}},
        "required": ["a", "b"],
        "$defs": {
            "Pair": {
                "type": "object",
                "properties": {"left": {"$ref": "#/$defs/Side"}},
                "required": ["left"],
            },
            "Side": {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]},
        },
    }
    projected = strict_schema(schema)

    assert set(projected["$defs"]) == {"Pair"}  # used twice: kept; Side once: written in place
    side = projected["$defs"]["Pair"]["properties"]["left"]
    assert side == {
        "type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"],
        "additionalProperties": False,
    }  # fmt: skip
    validator = Draft202012Validator(projected)
    assert validator.is_valid({"a": {"left": {"x": "1"}}, "b": {"left": {"x": "2"}}})
    assert not validator.is_valid({"a": {"left": {"x": 1}}, "b": {"left": {"x": "2"}}})
