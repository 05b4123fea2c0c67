"""Reading JSON Lines input files so that every bad line can be reported at once."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

from judgecards.errors import InputError

__all__ = ["read_jsonl"]

E = TypeVar("E", bound=InputError)


def read_jsonl(path: Path, *, error: type[E] = InputError) -> Iterator[tuple[int, dict[str, Any] | E]]:  # type: ignore[assignment]
    """(line number, object) for each non-blank line, or an ``error`` naming a bad line.

    Errors are yielded, not raised, so a caller can validate a whole file before acting on it.
    A UTF-8 byte-order mark (as spreadsheet exports write) is accepted.
    """
    with path.open(encoding="utf-8-sig") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as problem:
                yield number, error(f"invalid JSON ({problem.msg} at column {problem.colno})", file=path, line=number)
                continue
            if not isinstance(value, dict):
                yield number, error("each line must be a JSON object", file=path, line=number)
                continue
            yield number, value
