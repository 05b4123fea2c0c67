"""Import sqlite-utils without pulling in pandas and numpy, for the ``judgecards`` command only.

When pandas and numpy are installed, importing sqlite-utils imports them too (about 0.7 s), only
to map their scalar types to column types for tables it creates from Python values. judgecards
creates every table with explicit types and writes rows through its own SQL, so it never uses
that mapping, yet every command that opens a database paid for it.

Hiding modules changes what sqlite-utils can do in the whole process, so it is done only where
the process is ours: the CLI calls `import_without_dataframe_libraries` before it loads a
command. A program that imports judgecards as a library gets sqlite-utils as it always is.
"""

from __future__ import annotations

import importlib
import sys

__all__ = ["import_without_dataframe_libraries"]

_HIDDEN = ("pandas", "numpy")


def import_without_dataframe_libraries() -> None:
    """Import sqlite-utils with pandas and numpy hidden (unless already imported); both stay
    importable afterwards. Does nothing once sqlite-utils is imported."""
    if "sqlite_utils" in sys.modules:
        return
    hidden = [name for name in _HIDDEN if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]  # `import name` now fails
    try:
        importlib.import_module("sqlite_utils")
    finally:
        for name in hidden:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]
