"""Finding text that is not valid Unicode: lone surrogates.

JSON can spell a UTF-16 surrogate on its own (``"\\ud800"``): the line is valid JSON and Python
decodes it into a string, but no UTF-8 encoder accepts that string, so it fails later and far
away (a ``UnicodeEncodeError`` while the SDK sends the request, or while a line is written).
Inputs are checked for it up front, as any other bad input is, so the error names the file, line
and field (or the request field) and nothing has been sent or paid for.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["lone_surrogate"]


def lone_surrogate(value: Any, path: str = "") -> tuple[str, str] | None:
    """``(where, escaped)`` for the first string in ``value`` (nested lists and mappings, keys
    included) holding a lone surrogate: its dotted path below ``path`` and the surrogate as
    an escape (``\\ud800``); None when every string is valid Unicode."""
    if isinstance(value, str):
        if value.isascii():
            return None
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as error:
            return path, f"\\u{ord(value[error.start]):04x}"
        return None
    if isinstance(value, Mapping):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            found = lone_surrogate(key, where) or lone_surrogate(item, where)
            if found is not None:
                return found
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found = lone_surrogate(item, f"{path}.{index}" if path else str(index))
            if found is not None:
                return found
    return None
