"""CSV cells a spreadsheet would run as a formula, written so that it shows them as text.

Item ids, inputs, judge replies, labels and notes are untrusted text, and a spreadsheet runs a
cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return as a formula (CSV
injection). Every CSV judgecards writes (results and comparison exports, labels, audit sheets)
passes its cells through `spreadsheet_cell`; the labels reader undoes it with
`from_spreadsheet_cell`, so an export reads back to exactly what was stored. It lives in the core
because both the core's exports and the calibration package write CSV.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["from_spreadsheet_cell", "spreadsheet_cell"]

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def _runs_as_formula(text: str) -> bool:
    bare = text.lstrip("'")
    return bare.startswith(_FORMULA_START) and not _NUMBER.match(bare)


def spreadsheet_cell(value: Any) -> Any:
    """A CSV cell value a spreadsheet shows as text: ``'`` before a would-be formula.

    Cells starting (after any ``'``) with ``= + - @``, a tab or a carriage return get one more
    leading ``'``, unless they are a plain number (``-1``, ``+2.5``); other values are returned
    unchanged. `from_spreadsheet_cell` undoes it exactly.
    """
    if isinstance(value, str) and _runs_as_formula(value):
        return "'" + value
    return value


def from_spreadsheet_cell(text: str) -> str:
    """The value a `spreadsheet_cell` was made from (one leading ``'`` before a formula dropped)."""
    return text[1:] if text.startswith("'") and _runs_as_formula(text) else text
