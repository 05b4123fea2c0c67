"""Importing a ``module:Model`` named in an untrusted file, without running untrusted code.

A card's ``output.schema`` and a tiered eval's JSON check may name a pydantic model as
``module:Model``. Importing a module runs it, and the files that name one come from card
directories and configs that may have been downloaded. Under ``python -m judgecards`` the working
directory is first on ``sys.path``, so a plain ``importlib.import_module`` would run a
``module.py`` that came with the card, and even an installed module runs code when imported
(``antigravity`` opens a browser, ``this`` prints). The rule, decided before anything is
imported: only modules named on an explicit allow-list are imported at all:

- `ALLOWED_MODULES`, judgecards' own schema module;
- ``JUDGECARDS_SCHEMA_MODULES`` (comma-separated module names), set by the user, never by a card.

Any other name is refused with a message saying how to allow it; nothing is looked up on disk,
imported or run for it.
"""

from __future__ import annotations

import importlib
import os

from pydantic import BaseModel

__all__ = ["ALLOWED_MODULES", "SCHEMA_MODULES_ENV", "import_schema_model"]

ALLOWED_MODULES = frozenset({"judgecards.schemas"})
SCHEMA_MODULES_ENV = "JUDGECARDS_SCHEMA_MODULES"


def import_schema_model(reference: str) -> type[BaseModel]:
    """The pydantic model named by ``module:Model``, imported only if the module is allowed.

    Raises:
        ValueError: the reference is malformed, the module is not on the allow-list (the
            message says how to allow it), it cannot be imported, or the
            attribute is not a pydantic model. Callers add the file and field.
    """
    module_name, _, attribute = reference.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"{reference!r} is not of the form module:Model")
    if not all(part.isidentifier() for part in module_name.split(".")):
        raise ValueError(f"{module_name!r} is not an absolute module name")
    allowed = _allowed()
    if module_name not in allowed:
        raise ValueError(
            f"refusing to import {module_name!r}: not an allowed schema module (allowed: "
            f"{', '.join(sorted(allowed))}; list trusted modules, comma-separated, in "
            f"{SCHEMA_MODULES_ENV})"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ValueError(f"cannot import {module_name!r}: {error}") from None
    target = getattr(module, attribute, None)
    if target is None:
        raise ValueError(f"module {module_name!r} has no attribute {attribute!r}")
    if not (isinstance(target, type) and issubclass(target, BaseModel)):
        raise ValueError(f"{reference!r} is not a pydantic model")
    return target


def _allowed() -> frozenset[str]:
    extra = os.environ.get(SCHEMA_MODULES_ENV, "")
    return ALLOWED_MODULES | {name.strip() for name in extra.split(",") if name.strip()}
