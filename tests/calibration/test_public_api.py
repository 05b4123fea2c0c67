"""The calibration package's public surface: a sorted, documented __all__."""

from __future__ import annotations

import importlib
import inspect

import pytest

import calibration

MODULES = [
    "calibration",
    "calibration.stats.agreement_measures",
    "calibration.juries.dawid_skene_model",
    "calibration.stats.interrater",
    "calibration.juries.jury",
    "calibration.stats.pairwise",
    "calibration.stats.ppi",
    "calibration.stats.ppi_stratified",
    "calibration.stats.report",
    "calibration.stats.selective",
]


@pytest.mark.parametrize("name", MODULES)
def test_all_is_sorted_and_unique(name: str) -> None:
    exported = importlib.import_module(name).__all__
    assert exported == sorted(exported)
    assert len(set(exported)) == len(exported)


@pytest.mark.parametrize("name", calibration.__all__)
def test_every_public_name_is_documented(name: str) -> None:
    obj = getattr(calibration, name)
    doc = inspect.getdoc(obj)
    assert doc and len(doc) > 40, f"{name} needs a docstring"
    if inspect.isfunction(obj):
        for section in ("Args:", "Returns:"):
            assert section in doc, f"{name}'s docstring lacks {section}"
        params = [p for p in inspect.signature(obj).parameters]
        for param in params:
            assert f"{param}:" in doc, f"{name}'s docstring does not describe {param!r}"


def test_public_warning_is_a_user_warning() -> None:
    assert issubclass(calibration.SmallSampleWarning, UserWarning)
    assert calibration.SmallSampleWarning.__module__ == "calibration"


def test_exported_names_are_not_shadowed_by_submodules() -> None:
    # Importing a submodule sets it as an attribute of its package: a module named like an
    # exported function (`calibration.agreement`, once) replaced `calibration.agreement` the
    # function, and code that ran later failed with "'module' object is not callable".
    import pkgutil
    import subprocess
    import sys

    code = (
        "import importlib, pkgutil, types, calibration\n"
        "for m in pkgutil.iter_modules(calibration.__path__):\n"
        "    importlib.import_module(f'calibration.{m.name}')\n"
        "print(sorted(n for n in calibration.__all__"
        " if isinstance(getattr(calibration, n), types.ModuleType)))\n"
    )
    shadowed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert shadowed == "[]"
    modules = {m.name for m in pkgutil.iter_modules(calibration.__path__)}
    assert not modules & set(calibration.__all__)
