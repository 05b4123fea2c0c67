"""The public surface stays deliberate: sorted, importable, documented, and light to import."""

from __future__ import annotations

import inspect
import subprocess
import sys

import judgecards


def test_all_is_sorted_and_unique() -> None:
    # ruff's RUF022 order (CONSTANTS, Classes, functions), derived from the face's table.
    names = judgecards.__all__
    assert len(names) == len(set(names))
    kinds = [0 if n.isupper() else 1 if n[0].isupper() else 2 for n in names]
    assert names == [n for _, n in sorted(zip(kinds, names, strict=True))]


def test_every_public_name_imports_and_is_documented() -> None:
    undocumented = []
    for name in judgecards.__all__:
        value = getattr(judgecards, name)
        if (inspect.isclass(value) or inspect.isfunction(value)) and not inspect.getdoc(value):
            undocumented.append(name)
    assert undocumented == []


def test_importing_the_package_loads_no_sdk_or_numpy() -> None:
    # `judgecards --help` must stay fast: names are imported on first use.
    code = "import sys, judgecards, judgecards.cli; print(sorted(m for m in ('openai', 'anthropic', 'numpy', 'pydantic', 'jinja2') if m in sys.modules))"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == "[]"


def test_exported_functions_are_not_shadowed_by_submodules() -> None:
    # A submodule named like an exported function (judgecards.compare) would replace the function
    # on the package once imported; exported names and module names must differ.
    code = (
        "import importlib, pkgutil, judgecards\n"
        "mods = {m.name for m in pkgutil.iter_modules(judgecards.__path__)}\n"
        "print(sorted(mods & set(judgecards.__all__)))"
    )
    clash = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert clash == "[]"
