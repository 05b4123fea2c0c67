"""The pydantic model a card's reply must satisfy, from its ``output`` front-matter.

``final_token`` cards get a small model for the number on the final line; ``json`` cards name a
model as ``module:Model`` (imported only from trusted places: `judgecards.cards.schema_import`) or give
a small inline JSON Schema, turned into a model here.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from judgecards.cards.schema_import import import_schema_model
from judgecards.cards.spec import OutputSpec
from judgecards.errors import CardValidationError

__all__ = ["resolve_output_model"]


def resolve_output_model(output: OutputSpec, path: Path) -> type[BaseModel]:
    if output.format == "final_token":
        assert output.min is not None and output.max is not None
        model: type[BaseModel] = create_model(
            "FinalTokenJudgment",
            __config__=ConfigDict(extra="ignore"),
            reasoning=(
                str,
                Field(default="", description="The judge's reasoning before the final line."),
            ),
            **{output.field: (int, Field(ge=output.min, le=output.max))},  # type: ignore[call-overload]
        )
        return model
    schema = output.schema_
    if isinstance(schema, str):
        try:
            return import_schema_model(schema)
        except ValueError as error:
            raise CardValidationError(
                f"output schema {schema!r}: {error}", file=path, field="output.schema"
            ) from None
    if isinstance(schema, dict):
        return _model_from_json_schema(schema, "Judgment", path, "output.schema")
    raise CardValidationError("output.schema is missing", file=path, field="output.schema")


_JSON_TYPES: dict[str, type] = {"integer": int, "number": float, "string": str, "boolean": bool}


def _model_from_json_schema(
    schema: Mapping[str, Any], name: str, path: Path, where: str
) -> type[BaseModel]:
    """A pydantic model for a small inline JSON Schema (objects, scalars, enums, ranges, arrays).

    Enough for user cards written without Python; anything richer belongs in a pydantic model
    referenced as ``module:Model``.
    """
    if schema.get("type") != "object":
        raise CardValidationError("inline schema must be an object schema", file=path, field=where)
    required = set(schema.get("required", ()))
    fields: dict[str, Any] = {}
    for key, sub in (schema.get("properties") or {}).items():
        annotation = _annotation(sub, f"{name}_{key}", path, f"{where}.properties.{key}")
        constraints = {
            "ge": sub.get("minimum"),
            "le": sub.get("maximum"),
            "min_length": sub.get("minLength"),
            "max_length": sub.get("maxLength"),
            "description": sub.get("description"),
        }
        given = {k: v for k, v in constraints.items() if v is not None}
        if key in required:
            fields[key] = (annotation, Field(**given))
        else:
            fields[key] = (annotation | None, Field(default=None, **given))
    model: type[BaseModel] = create_model(name, __config__=ConfigDict(extra="ignore"), **fields)
    return model


def _annotation(sub: Mapping[str, Any], name: str, path: Path, where: str) -> Any:
    if "enum" in sub:
        return Literal[tuple(sub["enum"])]
    kind = sub.get("type")
    if kind in _JSON_TYPES:
        return _JSON_TYPES[kind]
    if kind == "object":
        return _model_from_json_schema(sub, name, path, where)
    if kind == "array":
        return list[_annotation(sub.get("items", {"type": "string"}), name, path, f"{where}.items")]  # type: ignore[misc]
    raise CardValidationError(f"unsupported schema type {kind!r}", file=path, field=where)
