"""The scale of each score axis, from the card that judged the stored results.

A corrected mean's bounded interval (`calibration.corrected_mean`'s ``bounds``) needs the
scale every score lies on. The store keeps a result's card reference and hash, not its schema,
so the card is loaded again and used only if it is byte-for-byte the card that judged (same
hash): a card edited since, or one not found, gives no scale, and the mean keeps its t interval.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from judgecards.cards import load_card
from judgecards.errors import JudgecardsError

__all__ = ["score_scales"]


def score_scales(ref: str, card_hashes: Iterable[str]) -> dict[str, tuple[float, float]]:
    """Axis → ``(minimum, maximum)`` of its score in the output schema of card ``ref``.

    Empty when the card cannot be loaded or is not the card (``card_hashes``) that judged the
    results; an axis whose schema gives no numeric minimum and maximum is left out.
    """
    try:
        card = load_card(ref)
        schema = card.output_model.model_json_schema()
    except (JudgecardsError, OSError, ValueError):
        return {}
    if set(card_hashes) != {card.hash}:
        return {}
    scales = {}
    for axis, path in card.score_axes.items():
        node: Mapping[str, Any] | None = schema
        for part in path.split("."):
            node = _resolved(schema, node).get("properties", {}).get(part)
            if node is None:
                break
        if node is None:
            continue
        bounds = [_resolved(schema, node).get(key) for key in ("minimum", "maximum")]
        numbers = [
            float(b) for b in bounds if isinstance(b, (int, float)) and not isinstance(b, bool)
        ]
        if len(numbers) == 2 and numbers[0] < numbers[1]:
            scales[axis] = (numbers[0], numbers[1])
    return scales


def _resolved(schema: Mapping[str, Any], node: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """``node``, or the ``$defs`` entry its local ``$ref`` names (pydantic's nested models)."""
    if node is None:
        return {}
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        found = schema.get("$defs", {}).get(ref.removeprefix("#/$defs/"))
        return found if isinstance(found, Mapping) else {}
    return node
