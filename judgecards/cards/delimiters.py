"""Neutralising a card's delimiter tags inside input values.

A card wraps each input in tags (``<model_output>…</model_output>``) and tells the judge that
text inside them is data. An input that contains the closing tag could end its own block and pose
as instructions, so every tag name the card body uses is neutralised inside input values by
inserting ``_`` after the name (``</model_output>`` → ``</model_output_>``).

Whether text is such a tag is decided on a normalised view of it, because a model reads
``< /model_output>``, ``</model_output foo=1>``, ``</MODEL_OUTPUT>`` and the full-width
``＜／model_output＞`` the same way:

- each character is NFKC-normalised (full-width and small forms become ASCII), and a few
  look-alikes NFKC keeps (``‹ › 〈 〉 ⟨ ⟩``, the fraction and division slashes, ``\\``) count as
  ``<``, ``>`` and ``/``;
- invisible format characters (zero-width spaces and joiners, soft hyphens, BOMs) are ignored;
- case is ignored, and so is whitespace between ``<``, ``/`` and the name;
- a tag is ``<``, any slashes and a card tag name followed by anything that ends a name
  (whitespace, ``>``, ``/``, attributes, or the end of the value): no ``>`` is needed.

The ``_`` is inserted into the original text, so everything else in the value is kept exactly.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

__all__ = ["card_tags", "neutralise", "neutralise_text"]

_BODY_TAG = re.compile(r"</?\s*([A-Za-z_][\w.-]*)[^<>]*>")
_LOOKALIKES = str.maketrans(
    {
        "‹": "<",
        "›": ">",
        "〈": "<",
        "〉": ">",
        "⟨": "<",
        "⟩": ">",
        "˂": "<",
        "˃": ">",
        "⁄": "/",
        "∕": "/",
        "⧸": "/",
        "\\": "/",
    }
)
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")


def card_tags(body: str) -> frozenset[str]:
    """The tag names a card body writes (``<question>``, ``</answer_a>``…), lower-cased."""
    return frozenset(match.group(1).lower() for match in _BODY_TAG.finditer(body))


@lru_cache(maxsize=64)
def _pattern(tags: frozenset[str]) -> re.Pattern[str]:
    names = "|".join(re.escape(tag) for tag in sorted(tags, key=len, reverse=True))
    return re.compile(rf"<[\s/]*({names})(?![\w.-])", re.IGNORECASE)


@lru_cache(maxsize=1)
def _openers() -> frozenset[str]:
    """Every character that reads as ``<`` in the detection view (computed once, ~30 ms)."""
    return frozenset(
        char
        for char in map(chr, range(0x10000))
        if "<" in unicodedata.normalize("NFKC", char).translate(_LOOKALIKES)
    )


def _normalised(text: str) -> tuple[str, list[int] | None]:
    """The detection view of ``text`` and, for each of its characters, the original index
    (``None`` when they are the same: ASCII text keeps its length)."""
    if text.isascii():
        return text.replace("\\", "/"), None
    view: list[str] = []
    origin: list[int] = []
    start = 0
    for run in _NON_ASCII.finditer(text):
        view.append(text[start : run.start()].translate(_LOOKALIKES))
        origin.extend(range(start, run.start()))
        for index in range(run.start(), run.end()):
            char = text[index]
            if unicodedata.category(char) == "Cf":
                continue  # zero-width and other invisible format characters
            folded = unicodedata.normalize("NFKC", char).translate(_LOOKALIKES)
            view.append(folded)
            origin.extend([index] * len(folded))
        start = run.end()
    view.append(text[start:].translate(_LOOKALIKES))
    origin.extend(range(start, len(text)))
    return "".join(view), origin


def neutralise_text(text: str, tags: frozenset[str]) -> str:
    """``text`` with every occurrence of one of ``tags`` made into a different name."""
    if not tags or ("<" not in text if text.isascii() else _openers().isdisjoint(text)):
        return text
    pattern = _pattern(tags)
    # Inserting "_" can turn one tag name into another ("answer" → "answer_" when the card also
    # has <answer_>); each pass lengthens the names, so len(tags) + 1 passes reach a fixed point.
    for _ in range(len(tags) + 1):
        view, origin = _normalised(text)
        ends = [match.end(1) for match in pattern.finditer(view)]
        cuts = ends if origin is None else [origin[end - 1] + 1 for end in ends]
        if not cuts:
            break
        pieces: list[str] = []
        start = 0
        for cut in cuts:
            pieces += [text[start:cut], "_"]
            start = cut
        text = "".join(pieces) + text[start:]
    return text


def neutralise(value: Any, tags: frozenset[str]) -> Any:
    """``value`` with `neutralise_text` applied to every string inside it (lists, mappings)."""
    if isinstance(value, str):
        return neutralise_text(value, tags)
    if isinstance(value, Mapping):
        return {key: neutralise(item, tags) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [neutralise(item, tags) for item in value]
    return value
