"""Provider-native structured output: the strict schema sent, and how a judgment was extracted.

A JSON card's reply can be constrained by the server instead of asked for in the prompt: OpenAI
(and vLLM, llama.cpp, Ollama) take ``response_format`` with a ``json_schema``, Anthropic takes
``output_config.format`` or a forced tool. Servers only accept a *strict subset* of JSON Schema,
so `strict_schema` projects a card's schema onto it; what the projection drops (word limits,
cross-field rules, patterns) is still checked, because every reply is validated by the card's
pydantic model afterwards and re-asked when invalid. Strict mode is not honoured everywhere.

``output_mode`` (card front matter, ``Judge(output_mode=)``, ``--set output_mode=``):

- ``prompt``: the schema is written in the prompt, as in released v1 cards;
- ``native``: the schema is sent natively; a server that rejects it fails the run clearly;
- ``auto`` (default): native, falling back to ``prompt`` once per run when the server rejects it.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, get_args

from judgecards.errors import ProviderConfigError, TransportError
from judgecards.providers.http_errors import refuses_structured_output
from judgecards.replies.parse import unique_keys

if TYPE_CHECKING:
    from judgecards.cards import Card
    from judgecards.providers.base import CompletionRequest, Provider

_T = TypeVar("_T")

__all__ = [
    "EXTRACTIONS",
    "OUTPUT_MODES",
    "Extraction",
    "OutputMode",
    "NativeMethod",
    "NativeProbe",
    "drop_optional_nulls",
    "extraction_of",
    "guards_schema",
    "native_method_of",
    "native_refused",
    "reply_text",
    "restates_fields",
    "sends_natively",
    "strict_schema",
]

OutputMode = Literal["auto", "native", "prompt"]
"""How a JSON card's schema reaches the judge: see the module docstring."""

OUTPUT_MODES: tuple[str, ...] = get_args(OutputMode)

Extraction = Literal["native", "prompt_json", "final_token", "geval"]
"""How a result's judgment was read: a natively constrained JSON reply, JSON asked for in the
prompt, a final ``Rating: [[N]]`` line, or scores weighted by token probabilities (G-Eval)."""

EXTRACTIONS: tuple[str, ...] = get_args(Extraction)

NativeMethod = Literal["json_schema", "json_object", "tool"]
"""Which native form carried a ``native`` result's schema: a JSON-schema output (OpenAI's
``response_format`` ``json_schema``, Anthropic's ``output_config``), a ``json_object`` response
format holding the schema (llama-cpp-python's server), or a forced tool (Anthropic)."""

_NATIVE_METHODS: dict[str, NativeMethod] = {
    "schema": "json_schema",
    "json_object": "json_object",
    "tool": "tool",
}

# Keywords outside OpenAI's strict subset (and often refused by grammar-constrained servers).
# They constrain values the pydantic validation checks anyway.
_BOUND_KEYWORDS = frozenset(
    {
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minLength",
        "maxLength",
        "pattern",
        "format",
        "minItems",
        "maxItems",
        "uniqueItems",
        "contains",
        "minContains",
        "maxContains",
        "minProperties",
        "maxProperties",
        "patternProperties",
        "propertyNames",
        "unevaluatedProperties",
        "unevaluatedItems",
        "dependentRequired",
        "dependentSchemas",
        "default",
        "examples",
        "if",
        "then",
        "else",
        "not",
    }
)
_MAX_ENUM_SCALE = 101  # as `judgecards.schemas.MAX_ENUM_SCALE`: 0-100 becomes an enum
_GUARD = re.compile(r"\{%-?\s*if\s+output_schema\s*-?%\}")
_PRINTS_SCHEMA = re.compile(r"\{\{-?\s*output_schema\s*-?\}\}")
# Annotations every projection leaves out (`strict_schema`).
_ANNOTATIONS = frozenset({"title", "$comment"})


def guards_schema(body: str) -> bool:
    """Whether a card body shows its schema only ``{% if output_schema %}``.

    Only such cards drop the schema from the prompt when it is sent natively; a body that
    prints ``{{ output_schema }}`` unguarded (every released v1 card) keeps its text exactly.
    """
    return _GUARD.search(body) is not None


def sends_natively(card: Card, mode: str, provider: Any) -> bool:
    """Whether a judge's requests carry the schema natively: a JSON card, a mode other than
    ``prompt``, and a provider that declares ``native_output`` (a custom provider without it
    would silently drop the schema, so it gets the prompt form).

    Raises:
        ValueError: an unknown mode, or ``native`` asked of a provider without native output.
    """
    if mode not in OUTPUT_MODES:
        raise ValueError(f"output_mode must be one of {', '.join(OUTPUT_MODES)}, not {mode!r}")
    able = bool(getattr(provider, "native_output", False))
    output_format = card.spec.output.format
    if mode == "native" and not able and output_format == "json":
        raise ValueError(
            f"output_mode 'native': provider {getattr(provider, 'name', '?')!r} has no native "
            "structured output; use output_mode 'auto' or 'prompt'"
        )
    return output_format == "json" and mode != "prompt" and able


def strict_schema(schema: Mapping[str, Any], *, descriptions: bool = True) -> dict[str, Any]:
    """``schema`` projected onto the strict subset OpenAI's ``strict: true`` accepts.

    - every object lists all its properties in ``required``; a property that was optional is
      made nullable (``anyOf [..., {"type": "null"}]``), and `drop_optional_nulls` removes such
      nulls from the reply before validation so the model's default applies;
    - every object has ``additionalProperties: false``;
    - bound keywords (``minimum``, ``maxLength``, ``pattern``…) are removed, except that an
      integer with both bounds and at most 101 values becomes an ``enum``, which strict mode and
      grammars enforce;
    - ``$defs`` are projected too; a ``$ref`` with sibling keywords is replaced by its target
      (strict mode refuses siblings), a bare ``$ref`` is kept (recursion stays possible)
      unless its definition is used once and refers to nothing, when it is written in place;
      ``oneOf`` becomes ``anyOf`` and a one-entry ``allOf`` is merged;
    - ``title``s are removed: pydantic writes one per field and model, restating its name, and
      a provider bills the schema it is sent as input tokens; with ``descriptions=False`` the
      ``description``s go too, for a card whose prompt already says what each field holds
      (`restates_fields`). Neither constrains a reply.

    The input is not changed.
    """
    root: dict[str, Any] = json.loads(json.dumps(schema))  # a private deep copy
    found = root.get("$defs")
    definitions: dict[str, Any] = found if isinstance(found, dict) else {}
    dropped = _ANNOTATIONS if descriptions else _ANNOTATIONS | {"description"}
    projected: dict[str, Any] = _project(root, definitions, dropped, depth=0)
    if definitions:
        projected["$defs"] = {
            name: _project(value, definitions, dropped, depth=0)
            for name, value in definitions.items()
        }
        _inline_single_use(projected)
    return projected


def _inline_single_use(projected: dict[str, Any]) -> None:
    """Replace, in place, each bare ``$ref`` to a definition that is used once and refers to
    nothing itself by that definition (same schema, fewer tokens); drop ``$defs`` if emptied."""
    definitions: dict[str, Any] = projected["$defs"]
    uses: dict[str, int] = {}
    for node in _objects(projected):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            uses[ref[len("#/$defs/") :]] = uses.get(ref[len("#/$defs/") :], 0) + 1
    single = {
        name
        for name, body in definitions.items()
        if uses.get(name) == 1 and not any("$ref" in node for node in _objects(body))
    }

    def inline(node: Any) -> Any:
        if isinstance(node, list):
            return [inline(value) for value in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if len(node) == 1 and isinstance(ref, str) and ref[len("#/$defs/") :] in single:
            return definitions[ref[len("#/$defs/") :]]
        return {key: inline(value) for key, value in node.items() if key != "$defs"}

    kept = {name: inline(body) for name, body in definitions.items() if name not in single}
    inlined = inline(projected)
    projected.clear()
    projected.update(inlined)
    if kept:
        projected["$defs"] = kept


def _objects(node: Any) -> list[dict[str, Any]]:
    """Every JSON object inside ``node``, itself included."""
    found: list[dict[str, Any]] = []
    pending = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, dict):
            found.append(current)
            pending.extend(current.values())
        elif isinstance(current, list):
            pending.extend(current)
    return found


def restates_fields(body: str, schema: Mapping[str, Any]) -> bool:
    """Whether a card's prompt already says what every field of its reply holds, so that the
    schema sent natively can leave its ``description``s out (`strict_schema`).

    True when the body prints the schema itself unguarded (every released v1 card: the
    descriptions are in the prompt already), or names every property of the schema (at any
    depth, ``$defs`` included) as a word of its instructions, as the built-in v2 cards do. A
    card that does neither keeps its descriptions: they may be all the judge is told.
    """
    if _PRINTS_SCHEMA.search(body) and not guards_schema(body):
        return True
    return all(
        re.search(rf"(?<!\w){re.escape(name)}(?!\w)", body) for name in _property_names(schema)
    )


def _property_names(node: Any) -> set[str]:
    return {
        name
        for found in _objects(node)
        if isinstance(found.get("properties"), dict)
        for name in found["properties"]
    }


def _project(  # noqa: PLR0912  one branch per JSON Schema keyword
    node: Any, definitions: Mapping[str, Any], dropped: frozenset[str], *, depth: int
) -> Any:
    if not isinstance(node, dict):
        return node
    if depth > 64:
        raise ValueError("schema nests more than 64 levels of $ref")
    node = {key: value for key, value in node.items() if key != "$defs"}
    ref = node.get("$ref")
    if isinstance(ref, str) and len(node) > 1:
        target = _resolve(ref, definitions)
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return _project(merged, definitions, dropped, depth=depth + 1)
    if "oneOf" in node:
        node["anyOf"] = node.pop("oneOf")
    all_of = node.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
        del node["allOf"]
        node = {**all_of[0], **node}
        return _project(node, definitions, dropped, depth=depth + 1)
    if node.get("type") == "integer" and "enum" not in node:
        low, high = node.get("minimum"), node.get("maximum")
        if isinstance(low, int) and isinstance(high, int) and 0 < high - low + 1 <= _MAX_ENUM_SCALE:
            node["enum"] = list(range(low, high + 1))
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _BOUND_KEYWORDS or key in dropped:
            continue
        if key == "properties" and isinstance(value, dict):
            required = set(node.get("required") or ())
            out[key] = {
                name: _project(sub, definitions, dropped, depth=depth)
                if name in required
                else _nullable(_project(sub, definitions, dropped, depth=depth))
                for name, sub in value.items()
            }
        elif key in ("items", "additionalItems") and isinstance(value, dict):
            out[key] = _project(value, definitions, dropped, depth=depth)
        elif key in ("anyOf", "allOf", "prefixItems") and isinstance(value, list):
            out[key] = [_project(sub, definitions, dropped, depth=depth) for sub in value]
        elif key not in ("required", "additionalProperties"):
            out[key] = value
    if node.get("type") == "object" or "properties" in node:
        out.setdefault("properties", {})
        out["required"] = list(out["properties"])
        out["additionalProperties"] = False
    return out


def _nullable(node: dict[str, Any]) -> dict[str, Any]:
    if _allows_null(node):
        return node
    description = node.get("description")
    inner = {k: v for k, v in node.items() if k not in ("description", "title")}
    wrapped: dict[str, Any] = {"anyOf": [inner, {"type": "null"}]}
    if description is not None:
        wrapped["description"] = description
    return wrapped


def _allows_null(node: Mapping[str, Any]) -> bool:
    kind = node.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    variants = node.get("anyOf")
    return isinstance(variants, list) and any(
        isinstance(v, Mapping) and _allows_null(v) for v in variants
    )


def _resolve(ref: str, definitions: Mapping[str, Any]) -> dict[str, Any]:
    prefix = "#/$defs/"
    target = definitions.get(ref[len(prefix) :]) if ref.startswith(prefix) else None
    if not isinstance(target, dict):
        raise ValueError(f"cannot resolve $ref {ref!r} (only #/$defs/<name> is supported)")
    return target


def drop_optional_nulls(value: Any, schema: Mapping[str, Any]) -> Any:
    """``value`` without the nulls a strict schema forced into properties that were optional.

    Strict mode makes the model write every property; where the card's schema did not require
    one and does not allow null, a ``null`` means "not given", so the key is removed and the
    card model's default applies. Everything else is returned as is (same object when nothing
    changes).
    """
    found = schema.get("$defs")
    definitions: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    return _drop(value, schema, definitions, depth=0)


def reply_text(text: str, request: CompletionRequest) -> str:
    """A reply's text as it is parsed: for a native reply, `drop_optional_nulls` applied when
    it is one JSON object holding such nulls; else ``text`` unchanged (the usual case)."""
    schema = request.response_schema
    if request.native is None or schema is None or "null" not in text:
        return text
    try:
        # A repeated key is left for the parser to refuse (re-encoding would keep one of them);
        # control characters in strings are accepted, as `judgecards.replies.parse` reads them.
        value = json.loads(text, object_pairs_hook=unique_keys, strict=False)
    except ValueError:
        return text
    cleaned = drop_optional_nulls(value, schema)
    return text if cleaned is value else json.dumps(cleaned)


def _drop(value: Any, node: Any, definitions: Mapping[str, Any], *, depth: int) -> Any:
    if not isinstance(node, Mapping) or depth > 64:
        return value
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        node = {**definitions.get(ref[len("#/$defs/") :], {}), **node}
    if isinstance(value, dict) and isinstance(node.get("properties"), Mapping):
        required = set(node.get("required") or ())
        properties = node["properties"]
        changed = False
        out: dict[str, Any] = {}
        for key, item in value.items():
            sub = properties.get(key)
            if item is None and key not in required and not _allows_null(sub or {}):
                changed = True
                continue
            new = _drop(item, sub, definitions, depth=depth + 1)
            changed = changed or new is not item
            out[key] = new
        return out if changed else value
    if isinstance(value, list) and isinstance(node.get("items"), Mapping):
        items = [_drop(v, node["items"], definitions, depth=depth + 1) for v in value]
        return items if any(a is not b for a, b in zip(items, value)) else value
    return value


def extraction_of(request: CompletionRequest, annotations: Mapping[str, Any]) -> Extraction:
    """How a successful judgment was read (`JudgeResult.extraction`): ``geval`` when any score
    is probability-weighted, else ``final_token`` for a request with no schema (final-line
    cards), else ``native`` or ``prompt_json`` by how the request carried the schema."""
    scoring = annotations.get("scoring")
    if isinstance(scoring, Mapping) and any(
        isinstance(record, Mapping) and record.get("method") == "geval"
        for record in scoring.values()
    ):
        return "geval"
    if request.response_schema is None:
        return "final_token"
    return "native" if request.native is not None else "prompt_json"


def native_method_of(request: CompletionRequest) -> NativeMethod | None:
    """The native form ``request`` was sent in (`JudgeResult.native_method`); None for a
    request that wrote its schema in the prompt, or had none. Servers differ in what they
    enforce (llama.cpp's ``json_object`` grammar lets raw newlines into strings), so which
    form a result came from is kept with it."""
    return None if request.native is None else _NATIVE_METHODS[request.native]


class NativeProbe:
    """A judge's gate for native output: its first native request goes alone.

    Until one native request has come back (answered, refused or given up), the other requests
    wait; a refusal is then already known (`judgecards.judging.retry.TransportState` builds every later
    request without what was refused: the prompt form under ``auto``, Anthropic's forced tool,
    llama-cpp-python's ``json_object`` form), so a server without the standard form costs one
    refused request per judge, not one per item in flight; under ``native`` a server with no
    form at all stops the run after that one request. The price is one request's latency at the
    start of a judge's first batch. It holds no provider state, and its lock is only used
    before it settles (in the event loop of that first batch).
    """

    def __init__(self) -> None:
        self.settled = False
        self._lock = asyncio.Lock()

    async def send(self, needs_probe: bool, call: Callable[[], Awaitable[_T]]) -> _T:
        """Run ``call`` (which prepares its request when it runs), alone while unsettled."""
        if not self.settled and needs_probe:
            async with self._lock:
                if not self.settled:
                    try:
                        return await call()
                    finally:
                        self.settled = True
        return await call()


def native_refused(
    provider: Provider, request: CompletionRequest, error: TransportError
) -> ProviderConfigError | None:
    """The error that stops a run whose native request (output mode ``native``, no fallback)
    the server refused, saying what to use instead; None for any other failure."""
    if request.native is None or request.can_fall_back:
        return None
    if not refuses_structured_output(error.status or 0, str(error), None):
        return None
    return ProviderConfigError(
        f"{provider.name}:{provider.model} refuses native structured output, which output_mode "
        f"'native' needs ({error}); use output_mode 'auto' (falls back to the schema in the "
        "prompt) or 'prompt'",
        provider=provider.name,
        model=provider.model,
    )
