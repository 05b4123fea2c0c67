"""Importing a ``module:Model`` named in an untrusted file, without running untrusted code.

A card's ``output.schema`` and a tiered eval's JSON check may name a pydantic model as
``module:Model``. Importing a module runs it, and the files that name one come from card
directories and configs that may have been downloaded. Under ``python -m judgecards`` the working
directory is first on ``sys.path``, so a plain ``importlib.import_module`` would run a
``module.py`` that came with the card. The rule, decided before anything is imported:

- the modules in `ALLOWED_MODULES` (judgecards' own schemas) are imported as usual;
- any other module must come from an installed package: its top-level package is located with
  ``importlib.util.find_spec`` (which reads the file system and runs nothing) and must live in
  the interpreter's standard library or a site-packages directory. A module in the working
  directory, in a card directory or on a ``''`` ``sys.path`` entry is refused, and so is an
  editable install's source tree (install it normally, or list the module in
  ``JUDGECARDS_SCHEMA_MODULES``);
- ``JUDGECARDS_SCHEMA_MODULES`` (comma-separated module names) extends the allow-list: set by the
  user, never by a card.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import site
import sysconfig
from importlib.machinery import ModuleSpec
from pathlib import Path
from typing import Any

from pydantic import BaseModel

__all__ = ["ALLOWED_MODULES", "SCHEMA_MODULES_ENV", "import_schema_model"]

ALLOWED_MODULES = frozenset({"judgecards.schemas"})
SCHEMA_MODULES_ENV = "JUDGECARDS_SCHEMA_MODULES"


def import_schema_model(reference: str) -> type[BaseModel]:
    """The pydantic model named by ``module:Model``, imported only if the module is trusted.

    Raises:
        ValueError: the reference is malformed, the module is not trusted (the message says
            where it was found and why that is refused), it cannot be imported, or the
            attribute is not a pydantic model. Callers add the file and field.
    """
    module_name, _, attribute = reference.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"{reference!r} is not of the form module:Model")
    if not all(part.isidentifier() for part in module_name.split(".")):
        raise ValueError(f"{module_name!r} is not an absolute module name")
    if module_name not in _allowed():
        _check_installed(module_name)
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


def _check_installed(module_name: str) -> None:
    top = module_name.split(".")[0]
    spec = _find_spec(top)
    _require_installed(module_name, top, spec)
    if top != module_name:
        # Finding a submodule imports its parents: the top-level package, now known to be
        # installed. The submodule is checked too, since a package can extend its __path__.
        _require_installed(module_name, module_name, _find_spec(module_name))


def _find_spec(name: str) -> ModuleSpec:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError) as error:
        raise ValueError(f"cannot import {name!r}: {error}") from None
    if spec is None:
        raise ValueError(f"no module named {name!r}")
    return spec


def _require_installed(requested: str, name: str, spec: ModuleSpec) -> None:
    if spec.origin in ("built-in", "frozen"):
        return
    locations = [spec.origin] if spec.has_location and spec.origin else []
    locations += list(spec.submodule_search_locations or [])
    if not locations:
        raise ValueError(f"refusing to import {requested!r}: {name!r} has no location on disk")
    for location in locations:
        path = Path(location).resolve()
        if not any(path.is_relative_to(root) for root in _installed_roots()):
            raise ValueError(
                f"refusing to import {requested!r}: {name!r} is at {path}, which is not an "
                "installed package (schema modules must come from site-packages or the "
                f"standard library; list trusted modules in {SCHEMA_MODULES_ENV})"
            )


def _installed_roots() -> tuple[Path, ...]:
    """The directories installed packages live in, never the working directory."""
    candidates: list[Any] = [
        sysconfig.get_paths().get(key) for key in ("stdlib", "platstdlib", "purelib", "platlib")
    ]
    candidates += site.getsitepackages() if hasattr(site, "getsitepackages") else []
    if site.ENABLE_USER_SITE:
        candidates.append(site.getusersitepackages())
    roots: list[Path] = []
    cwd = Path.cwd().resolve()
    for candidate in candidates:
        if not candidate:
            continue
        root = Path(candidate).resolve()
        # A root that holds the working directory (a prefix of "/" or "$HOME") would trust it.
        if root not in roots and not cwd.is_relative_to(root):
            roots.append(root)
    return tuple(roots)
