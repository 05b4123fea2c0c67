"""sqlite-utils, imported without pulling in pandas and numpy.

When pandas and numpy are installed, importing sqlite-utils imports them too (about 0.7 s), only
to map their scalar types to column types for tables it creates from Python values. judgecards
creates every table with explicit types and writes rows through its own SQL, so it never uses
that mapping, yet every command that opens a database paid for it. While sqlite-utils is
imported here, pandas and numpy (unless already imported) are hidden from it; they stay
importable afterwards. A program that imports judgecards first and then lets sqlite-utils create
tables from numpy or pandas values should import numpy or pandas before judgecards.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import TYPE_CHECKING

__all__ = ["Migrations", "sqlite_utils"]

_HIDDEN = ("pandas", "numpy")


def _import() -> ModuleType:
    if "sqlite_utils" in sys.modules:
        return sys.modules["sqlite_utils"]
    hidden = [name for name in _HIDDEN if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]  # `import name` now fails
    try:
        import sqlite_utils as module
    finally:
        for name in hidden:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]
    return module


if TYPE_CHECKING:
    import sqlite_utils
    from sqlite_utils import Migrations
else:
    sqlite_utils = _import()
    Migrations = sqlite_utils.Migrations
