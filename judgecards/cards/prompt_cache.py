"""Prompt caching: which part of a prompt is the same for every item, and when to mark it.

Providers bill a prompt prefix they have seen recently at a fraction of the input price
(Anthropic: 0.1x to read, 1.25x to write; OpenAI: cached input at its own rate, no write
charge). A judge sends the same card to thousands of items, so the card's static part (system
text, instructions, rubric, the schema when shown, examples) is that prefix, provided it comes
first and never varies with the item.

Where the static part ends is read from the card's body, not declared: it is the body's text
up to the first place that uses an input (`static_text`). By construction it cannot vary per
item; the cards' v2 versions put everything static before the item so that this part is long.
Anthropic caches only what a request marks with ``cache_control`` and only from a minimum
length per model family (`CacheMinimums`, the dated table ``judgecards/cache_minimums.yml``, a
user file over it); OpenAI caches prefixes of 1,024 tokens or more by itself. Lengths are
estimated as characters / 4, rounded up, as `judgecards.limits.plan` estimates them.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from jinja2 import nodes

from judgecards.cards.sandbox import compile_nodes, environment, render_bounded
from judgecards.errors import InputError
from judgecards.safe_yaml import load_yaml

__all__ = [
    "CACHE_MINIMUMS_ENV",
    "CacheMinimums",
    "estimated_tokens",
    "load_cache_minimums",
    "static_text",
]

CACHE_MINIMUMS_ENV = "JUDGECARDS_CACHE_MINIMUMS"
_SHIPPED = "judgecards/cache_minimums.yml"
_MAX_FILE_BYTES = 1_000_000


def estimated_tokens(chars: int) -> int:
    """Tokens in ``chars`` characters of text: characters / 4, rounded up (`judgecards.limits.plan`)."""
    return math.ceil(chars / 4)


# --------------------------------------------------------------------------- the static part


def static_text(body: str, inputs: Iterable[str], output_schema: str | None) -> str | None:
    """The text every rendering of a card body starts with, whatever the item.

    It is the body up to the first node that uses one of ``inputs`` (inside a line of output,
    up to that expression), rendered with ``output_schema``; ``None`` for the schema means it
    varies per item (a rubric's criteria), so its first use also ends the static part. ``None``
    when nothing comes before the item or the prefix cannot be rendered on its own.
    """
    return _static_text(body, frozenset(inputs), output_schema)


@lru_cache(maxsize=256)
def _static_text(body: str, inputs: frozenset[str], output_schema: str | None) -> str | None:
    varying = inputs if output_schema is not None else inputs | {"output_schema"}
    try:
        parsed = environment().parse(body)
        kept = _static_nodes(parsed, varying)
        if not kept:
            return None
        template = compile_nodes(nodes.Template(kept, lineno=1))
        text = render_bounded(template, {"output_schema": output_schema or ""})
    except Exception:  # a prefix that needs more than the schema: no static part to offer
        return None
    return text or None


def _static_nodes(parsed: nodes.Template, varying: frozenset[str]) -> list[nodes.Node]:
    kept: list[nodes.Node] = []
    for node in parsed.body:
        if not _uses(node, varying):
            kept.append(node)
            continue
        if isinstance(node, nodes.Output):
            head: list[nodes.Expr] = []
            for child in node.nodes:
                if _uses(child, varying):
                    break
                head.append(child)
            if head:
                kept.append(nodes.Output(head, lineno=node.lineno))
        return kept
    return []  # no node uses an input: nothing is the item, so nothing to split off


def _uses(node: nodes.Node, names: frozenset[str]) -> bool:
    found = [node] if isinstance(node, nodes.Name) else []
    return any(name.name in names for name in [*found, *node.find_all(nodes.Name)])


# --------------------------------------------------------------------------- minimum lengths


@dataclass(frozen=True)
class CacheMinimums:
    """The shortest cacheable prefix, in tokens, by ``provider:model-prefix``.

    Attributes:
        minimums: tokens by key; a model takes the key with the longest matching prefix.
        default: for a model no key matches.
        files: the files read, shipped table first.
    """

    minimums: Mapping[str, int]
    default: int
    files: tuple[str, ...]

    def minimum(self, provider: str, model: str) -> int:
        """The minimum for ``model`` of ``provider`` (e.g. ``"anthropic"``, ``"claude-opus-4-5"``)."""
        name = f"{provider}:{model}"
        matches = [key for key in self.minimums if name.startswith(key)]
        return self.minimums[max(matches, key=len)] if matches else self.default


def load_cache_minimums(path: str | os.PathLike[str] | None = None) -> CacheMinimums:
    """The shipped table, overridden entry by entry by ``path`` (else ``$JUDGECARDS_CACHE_MINIMUMS``).

    Raises:
        InputError: the user file is missing, unreadable or invalid (naming file, line and field).
    """
    shipped = resources.files("judgecards").joinpath("cache_minimums.yml")
    default, minimums = _parse(shipped.read_text(encoding="utf-8"), file=_SHIPPED)
    files = [_SHIPPED]
    user = path if path is not None else os.environ.get(CACHE_MINIMUMS_ENV) or None
    if user is not None:
        file = Path(user)
        try:
            if file.stat().st_size > _MAX_FILE_BYTES:
                raise InputError(
                    f"cache minimums file is over {_MAX_FILE_BYTES:,} bytes", file=file
                )
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            reason = getattr(error, "strerror", None) or str(error)
            raise InputError(f"cannot read cache minimums file: {reason}", file=file) from None
        user_default, user_minimums = _parse(text, file=file)
        default = user_default if user_default is not None else default
        minimums.update(user_minimums)
        files.append(str(file))
    assert default is not None  # the shipped table has one
    return CacheMinimums(minimums=minimums, default=default, files=tuple(files))


def _parse(text: str, *, file: str | Path) -> tuple[int | None, dict[str, int]]:
    document = load_yaml(text, file=file, error=InputError, what="cache minimums file")
    data: Any = document.data
    if not isinstance(data, dict) or not isinstance(data.get("minimums", {}), dict):
        raise InputError(
            "a cache minimums file is a mapping with a 'minimums' mapping of "
            "provider:model-prefix to tokens",
            file=file,
            line=document.line_of(["minimums"]),
            field="minimums",
        )
    allowed = {"as_of", "source", "default", "minimums"}
    if extra := sorted(str(key) for key in data if key not in allowed):
        raise InputError(
            f"unknown top-level key {extra[0]!r} (allowed: {', '.join(sorted(allowed))})",
            file=file,
            line=document.line_of([extra[0]]),
            field=extra[0],
        )
    default = data.get("default")
    if default is not None and not _is_tokens(default):
        raise InputError(
            f"default must be a whole number of tokens, got {default!r}",
            file=file,
            line=document.line_of(["default"]),
            field="default",
        )
    minimums: dict[str, int] = {}
    for key, tokens in (data.get("minimums") or {}).items():
        line = document.line_of(["minimums", str(key)])
        if not isinstance(key, str) or ":" not in key or key.startswith(":"):
            raise InputError(
                f"key {key!r} must be written provider:model-prefix (e.g. anthropic:claude-opus-4)",
                file=file,
                line=line,
                field=str(key),
            )
        if not _is_tokens(tokens):
            raise InputError(
                f"{key}: must be a whole number of tokens, got {tokens!r}",
                file=file,
                line=line,
                field=key,
            )
        minimums[key] = tokens
    return default, minimums


def _is_tokens(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
