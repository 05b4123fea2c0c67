"""Names imported on first use (PEP 562), shared by the packages' ``__init__`` modules.

``import judgecards`` must stay cheap (``judgecards --help`` pays for it), so a package lists
where each public name lives and imports that module only when the name is first read. One
table per package is the only place a public name is written: ``__all__`` is derived from it.
Names moved off a package's face keep working for one release, with a `DeprecationWarning`
that names the new import path, so existing scripts do not break.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports", "public_names"]


def public_names(exports: Mapping[str, str]) -> list[str]:
    """A face's ``__all__``: its table's names in ruff's RUF022 order (CONSTANTS, Classes, functions).

    Args:
        exports: public name → module that defines it.

    Returns:
        The names, sorted.
    """

    def key(name: str) -> tuple[int, str]:
        return (0 if name.isupper() else 1 if name[0].isupper() else 2), name

    return sorted(exports, key=key)


def lazy_exports(
    package: str,
    namespace: dict[str, Any],
    exports: Mapping[str, str],
    *,
    moved: Mapping[str, str] | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` a package module assigns to itself.

    Args:
        package: the package's name, for the ``AttributeError`` and deprecation messages.
        namespace: the package module's ``globals()``; a public name, once imported, is cached
            there.
        exports: public name → module that defines it (the package's ``__all__``).
        moved: name → module it is now imported from, for names dropped from the face. They
            still resolve, with a one-line `DeprecationWarning` each time, and are never cached
            (a cached name would warn only at its first use).

    Returns:
        ``(__getattr__, __dir__)``.
    """
    moved = moved or {}

    def getattr_(name: str) -> Any:
        module = exports.get(name)
        if module is not None:
            value = getattr(importlib.import_module(module), name)
            namespace[name] = value
            return value
        new_home = moved.get(name)
        if new_home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        if sys._getframe(1).f_code.co_name != "_handle_fromlist":
            # `from package import name` first probes the name with hasattr() inside
            # importlib's `_handle_fromlist`, then reads it: warn at the read, so once per use.
            warnings.warn(
                f"{package}.{name} is deprecated and will be removed from {package!r} in the "
                f"next release: use `from {new_home} import {name}`",
                DeprecationWarning,
                stacklevel=2,
            )
        return getattr(importlib.import_module(new_home), name)

    def dir_() -> list[str]:
        return sorted({*namespace, *exports})

    return getattr_, dir_
