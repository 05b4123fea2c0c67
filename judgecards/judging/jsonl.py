"""Reading JSON Lines input files so that every bad line can be reported at once.

Input files are untrusted: a line that is not UTF-8, not JSON, nested deeper than the parser
can follow, not an object, or holding a lone surrogate (``"\ud800"``: valid JSON, not valid
text; `judgecards.cards.unicode_text`) is reported with its file, line and field, never as a
traceback.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from judgecards.cards import lone_surrogate
from judgecards.errors import InputError
from judgecards.judging.duplicate_ids import SeenIds
from judgecards.judging.prepared import item_id_of

__all__ = [
    "CheckedItems",
    "ItemCheck",
    "check_items",
    "problems_error",
    "read_items",
    "read_jsonl",
]

E = TypeVar("E", bound=InputError)

ItemCheck = Callable[[Mapping[str, Any]], Iterable[tuple[str, str]]]
"""An extra check of one item: its problems as ``(field, message)`` pairs."""


def read_jsonl(
    path: Path,
    *,
    error: type[E] = InputError,  # type: ignore[assignment]
) -> Iterator[tuple[int, dict[str, Any] | E]]:
    """(line number, object) for each non-blank line, or an ``error`` naming a bad line.

    Errors are yielded, not raised, so a caller can validate a whole file before acting on it.
    A UTF-8 byte-order mark (as spreadsheet exports write) is accepted.

    Raises:
        error: the file cannot be opened or read at all (named, without a line).
    """
    try:
        handle = path.open("rb")
    except OSError as problem:
        raise error(f"cannot read: {problem.strerror or problem}", file=path) from None
    with handle:
        for number, raw in enumerate(handle, start=1):
            if number == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8) :]
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as problem:
                yield (
                    number,
                    error(
                        f"not UTF-8 (byte 0x{raw[problem.start]:02x} at column {problem.start + 1}); "
                        "save the file as UTF-8",
                        file=path,
                        line=number,
                    ),
                )
                continue
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
            except RecursionError:
                yield number, error("JSON nested too deeply to read", file=path, line=number)
                continue
            if not isinstance(value, dict):
                yield number, error("each line must be a JSON object", file=path, line=number)
                continue
            if (found := lone_surrogate(value)) is not None:
                where, escaped = found
                message = (
                    f"a lone surrogate {escaped}: valid JSON, but not text; remove it or write "
                    "the character it was meant to be"
                )
                yield number, error(message, file=path, line=number, field=where)
                continue
            yield number, value


def problems_error(
    problems: Sequence[InputError],
    path: Path | None,
    *,
    action: str = "nothing was judged",
    shown: int = 20,
) -> InputError:
    """One error listing up to ``shown`` problems, counted as problems on so many lines.

    A line can have several problems (a missing id and a missing input), so the headline says
    both numbers: ``3 problem(s) on 2 line(s), nothing was judged:``.
    """
    lines = {(p.file, p.line) for p in problems if p.line is not None}
    on = f" on {len(lines)} line(s)" if lines else ""
    listed = "\n".join(f"  {p}" for p in problems[:shown])
    more = f"\n  … and {len(problems) - shown} more" if len(problems) > shown else ""
    return InputError(f"{len(problems)} problem(s){on}, {action}:\n{listed}{more}", file=path)


def _checked(
    path: Path,
    problems: list[InputError],
    *,
    required: Sequence[str],
    required_by: str,
    check: ItemCheck | None,
) -> Iterator[dict[str, Any]]:
    """Every object of the file, its problems (a bad line, a missing or repeated id, a missing
    input, ``check``'s) appended to ``problems``; ids are remembered on disk (`SeenIds`)."""
    with SeenIds() as seen:
        for number, item in read_jsonl(path):
            if isinstance(item, InputError):
                problems.append(item)
                continue
            item_id = item_id_of(item)
            if item_id is None or item_id == "":
                problems.append(InputError("missing 'id'", file=path, line=number, field="id"))
            elif (first := seen.first_line(item_id, number)) is not None:
                problems.append(
                    InputError(
                        f"duplicate id (first on line {first})", file=path, line=number, field="id"
                    )
                )
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
            for field, message in check(item) if check is not None else ():
                problems.append(InputError(message, file=path, line=number, field=field))
            yield item


def read_items(
    path: Path,
    *,
    required: Sequence[str] = (),
    required_by: str = "",
    action: str = "nothing was judged",
    shown: int = 20,
    check: ItemCheck | None = None,
) -> list[dict[str, Any]]:
    """Every item of a JSONL file, checked before anything is done with any of them.

    Each line must be a JSON object with a non-empty ``id`` unique in the file and every input in
    ``required``, and pass ``check`` (e.g. the per-input size limit). All bad lines are reported
    together, each with its line and field.

    Raises:
        InputError: naming the file and listing up to ``shown`` problems; nothing has been done.
    """
    problems: list[InputError] = []
    items = list(_checked(path, problems, required=required, required_by=required_by, check=check))
    if problems:
        raise problems_error(problems, path, action=action, shown=shown)
    if not items:
        raise InputError("no items", file=path)
    return items


class CheckedItems:
    """A JSONL file whose every line has been checked (`check_items`), read again one item at a
    time each time it is iterated; ``len()`` is its number of items. Nothing is held in memory,
    except for a file that cannot be read twice (``held``: its items, read once).
    """

    def __init__(
        self, path: Path, count: int, *, held: Sequence[dict[str, Any]] | None = None
    ) -> None:
        self.path = path
        self.count = count
        self.held = held

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[dict[str, Any]]:
        if self.held is not None:
            yield from self.held
            return
        for _, item in read_jsonl(self.path):
            if isinstance(item, InputError):
                # Checked a moment ago: the file was changed while it was being judged.
                raise InputError(f"changed while being read: {item}", file=self.path)
            yield item


def check_items(
    path: Path,
    *,
    required: Sequence[str] = (),
    required_by: str = "",
    action: str = "nothing was judged",
    shown: int = 20,
    check: ItemCheck | None = None,
) -> CheckedItems:
    """`read_items`' checks in one streaming pass that keeps no item, for files too large to
    hold: every line is checked before anything is done with any of them, then the returned
    `CheckedItems` reads them again as they are needed.

    A path that is not a regular file (a pipe, ``/dev/stdin``) cannot be read twice: its items
    are read once and held.

    Raises:
        InputError: as `read_items`; nothing has been done.
    """
    if not path.is_file():
        held = read_items(
            path,
            required=required,
            required_by=required_by,
            action=action,
            shown=shown,
            check=check,
        )
        return CheckedItems(path, len(held), held=held)
    problems: list[InputError] = []
    count = 0
    for _ in _checked(path, problems, required=required, required_by=required_by, check=check):
        count += 1
    if problems:
        raise problems_error(problems, path, action=action, shown=shown)
    if not count:
        raise InputError("no items", file=path)
    return CheckedItems(path, count)
