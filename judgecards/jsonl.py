"""Reading JSON Lines input files so that every bad line can be reported at once."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from judgecards.errors import InputError

__all__ = ["read_items", "read_jsonl"]

E = TypeVar("E", bound=InputError)


def read_jsonl(
    path: Path,
    *,
    error: type[E] = InputError,  # type: ignore[assignment]
) -> Iterator[tuple[int, dict[str, Any] | E]]:
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
                yield (
                    number,
                    error(
                        f"invalid JSON ({problem.msg} at column {problem.colno})",
                        file=path,
                        line=number,
                    ),
                )
                continue
            if not isinstance(value, dict):
                yield number, error("each line must be a JSON object", file=path, line=number)
                continue
            yield number, value


def read_items(
    path: Path,
    *,
    required: Sequence[str] = (),
    required_by: str = "",
    action: str = "nothing was judged",
    shown: int = 20,
) -> list[dict[str, Any]]:
    """Every item of a JSONL file, checked before anything is done with any of them.

    Each line must be a JSON object with a non-empty ``id`` unique in the file and every input in
    ``required``. All bad lines are reported together, each with its line and field.

    Raises:
        InputError: naming the file and listing up to ``shown`` problems; nothing has been done.
    """
    problems: list[InputError] = []
    items: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for number, item in read_jsonl(path):
        if isinstance(item, InputError):
            problems.append(item)
            continue
        item_id = item.get("id")
        if item_id is None or item_id == "":
            problems.append(InputError("missing 'id'", file=path, line=number, field="id"))
        elif str(item_id) in seen:
            problems.append(
                InputError(
                    f"duplicate id (first on line {seen[str(item_id)]})",
                    file=path,
                    line=number,
                    field="id",
                )
            )
        else:
            seen[str(item_id)] = number
        for name in required:
            if item.get(name) is None:
                problems.append(
                    InputError(
                        f"missing input required by {required_by}",
                        file=path,
                        line=number,
                        field=name,
                    )
                )
        items.append(item)
    if problems:
        listed = "\n".join(f"  {p}" for p in problems[:shown])
        more = f"\n  … and {len(problems) - shown} more" if len(problems) > shown else ""
        raise InputError(f"{len(problems)} bad line(s), {action}:\n{listed}{more}", file=path)
    if not items:
        raise InputError("no items", file=path)
    return items
