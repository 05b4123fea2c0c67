"""Where each key of a TOML text is, by key path: a best-effort scan for error lines.

``tomllib`` gives the parsed data but no positions, so an invalid value in a TOML config would
otherwise be reported without a line. This scanner maps table headers and ``key =`` lines to
their line numbers; keys inside inline tables and multi-line arrays are not mapped, and their
errors point at the enclosing key. It only locates; it never decides what the data is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

__all__ = ["toml_key_lines"]

_TOML_KEY = r'(?:[A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*"|\'[^\']*\')'
_TOML_DOTTED = re.compile(rf"\s*({_TOML_KEY}(?:\s*\.\s*{_TOML_KEY})*)\s*")
_TOML_PART = re.compile(_TOML_KEY)


def toml_key_lines(text: str) -> dict[tuple[str, ...], int]:
    """Best effort: the line of each table header and key in a TOML text, by key path.

    Arrays of tables get indexes (``("tiers", "1", "checks", "0")``); keys inside inline tables
    and multi-line arrays are not mapped, so their errors point at the enclosing key.
    """
    lines: dict[tuple[str, ...], int] = {}
    arrays: dict[tuple[str, ...], int] = {}
    prefix: tuple[str, ...] = ()
    depth = 0
    open_string: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        rest = line
        if depth == 0 and open_string is None:
            stripped = line.strip()
            header = re.match(r"(\[\[?)" + _TOML_DOTTED.pattern + r"(\]\]?)", stripped)
            if header and len(header.group(1)) == len(header.group(3)):
                names = [_unquote(p) for p in _TOML_PART.findall(header.group(2))]
                path = _resolve(names[:-1], arrays)
                path = (*path, names[-1])
                if header.group(1) == "[[":
                    arrays[path] = arrays.get(path, 0) + 1
                    path = (*path, str(arrays[path] - 1))
                prefix = path
                lines.setdefault(path, number)
                continue
            key = re.match(_TOML_DOTTED.pattern + "=", line)
            if key is None:
                continue
            parts = [_unquote(p) for p in _TOML_PART.findall(key.group(1))]
            for end in range(1, len(parts) + 1):
                lines.setdefault((*prefix, *parts[:end]), number)
            rest = line[key.end() :]
        depth, open_string = _scan_toml_value(rest, depth, open_string)
    return lines


def _resolve(names: Sequence[str], arrays: Mapping[tuple[str, ...], int]) -> tuple[str, ...]:
    path: tuple[str, ...] = ()
    for name in names:
        path = (*path, name)
        if path in arrays:
            path = (*path, str(arrays[path] - 1))
    return path


def _unquote(part: str) -> str:
    return part[1:-1] if part[:1] in ("'", '"') else part


def _scan_toml_value(text: str, depth: int, open_string: str | None) -> tuple[int, str | None]:
    """Bracket depth and any open multi-line string after one line of a value."""
    i = 0
    while i < len(text):
        if open_string is not None:
            end = text.find(open_string, i)
            if end == -1:
                return depth, open_string
            i = end + 3
            open_string = None
            continue
        char = text[i]
        if char == "#":
            break
        if text.startswith(('"""', "'''"), i):
            open_string = text[i : i + 3]
            i += 3
        elif char in "\"'":
            i += 1
            while i < len(text) and text[i] != char:
                i += 2 if char == '"' and text[i] == "\\" else 1
            i += 1
        else:
            depth += {"[": 1, "{": 1, "]": -1, "}": -1}.get(char, 0)
            i += 1
    return depth, open_string
