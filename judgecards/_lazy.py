"""Names imported on first use (PEP 562), shared by the packages' ``__init__`` modules.

``import judgecards`` must stay cheap (``judgecards --help`` pays for it), so a package lists
where each public name lives and imports that module only when the name is first read.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, namespace: dict[str, Any], exports: Mapping[str, str], public: Sequence[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` a package module assigns to itself.

    Args:
        package: the package's name, for the ``AttributeError`` message.
        namespace: the package module's ``globals()``; a name, once imported, is cached there.
        exports: public name → module that defines it.
        public: the package's ``__all__``.

    Returns:
        ``(__getattr__, __dir__)``.
    """

    def getattr_(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted([*namespace, *public])

    return getattr_, dir_
