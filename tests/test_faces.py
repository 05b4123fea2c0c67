"""The package faces: one table per face, `__all__` derived from it, moved names still work.

A face (`judgecards`, `calibration`, `judgecards.metrics`) writes each public name once, in its
``_EXPORTS`` table; the ``X as X`` imports type checkers read must list the same names from the
same modules. Names dropped from a face resolve for one release with a one-line warning that
says where to import them from.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import subprocess
import sys
import warnings
from types import ModuleType

import pytest

FACES = ["judgecards", "calibration", "judgecards.metrics"]
# The size a person can hold in their head (issue 19 item 5): a face that grows past this
# should move names to a subpackage, not widen the top.
MOST_NAMES = {"judgecards": 35, "calibration": 45, "judgecards.metrics": 40}


def _face(name: str) -> ModuleType:
    return importlib.import_module(name)


def _reexports(module: ModuleType) -> set[tuple[str, str]]:
    """(name, module) for every ``from module import name as name`` in the face's source."""
    tree = ast.parse(inspect.getsource(module))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                if alias.asname == alias.name:
                    found.add((alias.name, node.module))
    return found


@pytest.mark.parametrize("name", FACES)
def test_all_is_the_table(name: str) -> None:
    face = _face(name)
    assert set(face.__all__) == set(face._EXPORTS)
    assert len(face.__all__) == len(set(face.__all__))
    assert len(face.__all__) <= MOST_NAMES[name]


@pytest.mark.parametrize("name", FACES)
def test_type_checking_imports_match_the_table(name: str) -> None:
    face = _face(name)
    assert _reexports(face) == set(face._EXPORTS.items())


@pytest.mark.parametrize("name", FACES)
def test_moved_names_are_off_the_face(name: str) -> None:
    face = _face(name)
    assert not set(face._MOVED) & set(face._EXPORTS)
    assert not set(face._MOVED) & set(dir(face)) - set(vars(face))


@pytest.mark.parametrize(
    ("face", "name"),
    [(face, name) for face in FACES for name in sorted(_face(face)._MOVED)],
)
def test_a_moved_name_warns_once_per_use_and_names_its_new_import(face: str, name: str) -> None:
    module = _face(face)
    new_home = module._MOVED[name]
    expected = getattr(importlib.import_module(new_home), name)
    for _ in range(2):  # not cached on the face: every use warns
        with pytest.warns(DeprecationWarning) as caught:
            value = getattr(module, name)
        assert value is expected
        (message,) = [str(w.message) for w in caught]
        assert f"from {new_home} import {name}" in message
        assert "\n" not in message


def test_the_warning_points_at_the_caller() -> None:
    # stacklevel: the warning names the line that used the old import, not judgecards/faces.py.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from judgecards import elo  # noqa: F401

    assert [w.filename for w in caught] == [__file__]


def test_public_names_import_without_a_warning() -> None:
    code = (
        "import warnings; warnings.simplefilter('error')\n"
        "import importlib\n"
        f"for face in {FACES!r}:\n"
        "    m = importlib.import_module(face)\n"
        "    for n in m.__all__: getattr(m, n)\n"
        "from judgecards import *\n"
        "from calibration import *\n"
        "from judgecards.metrics import *\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    import judgecards

    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        judgecards.no_such_name  # noqa: B018


# The subpackages by job (issue 19 item 3): each face hands on two tables, `_EXPORTS` (its
# `__all__`, documented under it) and `_SHARED` (what the top face and the other packages take).
SUBPACKAGE_FACES = [
    *(f"calibration.{name}" for name in ("stats", "labels", "estimates", "audits")),
    *(f"calibration.{name}" for name in ("cascades", "juries", "alignment")),
    *(f"judgecards.{name}" for name in ("cards", "replies", "judging", "limits", "storage")),
]


@pytest.mark.parametrize("name", SUBPACKAGE_FACES)
def test_a_subpackage_face_lists_each_name_once_and_for_type_checkers(name: str) -> None:
    face = _face(name)
    assert not set(face._EXPORTS) & set(face._SHARED)
    assert set(face.__all__) == set(face._EXPORTS)
    assert _reexports(face) == {*face._EXPORTS.items(), *face._SHARED.items()}


@pytest.mark.parametrize("name", SUBPACKAGE_FACES)
def test_no_submodule_shadows_a_name_of_its_face(name: str) -> None:
    # Importing a submodule sets it as an attribute of its package: a module named like a name
    # the face hands on (`judgecards.cards.render`, once) would replace that name.
    import pkgutil

    face = _face(name)
    submodules = {info.name for info in pkgutil.iter_modules(face.__path__)}
    assert not submodules & {*face._EXPORTS, *face._SHARED}
    for module in sorted(submodules):
        importlib.import_module(f"{name}.{module}")
    for exported in {*face._EXPORTS, *face._SHARED}:
        assert not isinstance(getattr(face, exported), ModuleType), exported
