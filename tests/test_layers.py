"""The layers contract (issue 19 item 4), read from the source with `ast`.

Every import of every module of ``judgecards`` and ``calibration`` counts: at module level,
inside functions and under ``TYPE_CHECKING`` (an import moved into a function or behind
``TYPE_CHECKING`` still couples the two modules; hiding it there is how cycles used to pass).
The contract:

- no import cycle between modules;
- no module imports another module's private (``_name``) names, nor uses a private attribute of
  another object (``judge._prepare``): the public seam is the only way in (a package face
  re-exporting its own private modules' names is fine);
- a private module (``pkg._mod``) is imported only from inside ``pkg``;
- a subpackage by job (calibration's: ``calibration.labels``, ``.audits`` ...; the core's:
  ``judgecards.cards``, ``.replies``, ``.judging``, ``.limits``, ``.storage``) is entered only
  through its face, its ``__init__``: from cli, serve and report and from the other packages alike;
- layers only point down: the judgecards core never imports ``calibration``, and nothing below
  the user-facing layers (``judgecards.cli``, ``.serve``, ``.report``, ``.demo``, the
  ``__main__`` entry point) imports them.

Every rule holds with no exception list.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("judgecards", "calibration")
USER_FACING = (
    "judgecards.cli",
    "judgecards.serve",
    "judgecards.report",
    "judgecards.demo",
    "judgecards.__main__",
)
# Attributes that are public API despite the underscore (namedtuple, enum, sys).
PUBLIC_UNDERSCORED = frozenset(
    {"_replace", "_asdict", "_fields", "_make", "_field_defaults", "_getframe", "_exit"}
    | {"_value_", "_name_", "_missing_", "_generate_next_value_", "_member_map_"}
)
STDLIB_OWNERS = frozenset({"sys", "os", "threading", "asyncio", "typing", "gc"})


@dataclass(frozen=True)
class Import:
    """One imported module (and the names taken from it) at one line of one module."""

    importer: str
    target: str
    names: tuple[str, ...]
    line: int


def module_paths(root: Path = ROOT) -> dict[str, Path]:
    """Every module of ``PACKAGES`` by dotted name (a package by its own name)."""
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if "__pycache__" in parts:
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def _resolve(name: str, known: Mapping[str, Path]) -> str | None:
    """The module ``name`` names, or its nearest known parent (``pkg.mod.Class`` → ``pkg.mod``)."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_in(
    module: str, source: str, known: Mapping[str, Path], *, package: bool
) -> Iterator[Import]:
    """Every import of ``module`` into ``PACKAGES``: anywhere in the tree, so inside functions and
    under ``TYPE_CHECKING`` too. ``from pkg import mod`` counts as importing ``pkg.mod``."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _resolve(alias.name, known)
                if target is not None and target != module:
                    yield Import(module, target, (), node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = module.split(".") if package else module.split(".")[:-1]
                kept = here[: len(here) - (node.level - 1)]
                base = ".".join([*kept, *([node.module] if node.module else [])])
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                if submodule in known:
                    if submodule != module:
                        yield Import(module, submodule, (), node.lineno)
                    continue
                target = _resolve(base, known)
                if target is not None and target != module:
                    yield Import(module, target, (alias.name,), node.lineno)


def all_imports(known: Mapping[str, Path]) -> list[Import]:
    return [
        found
        for module, path in known.items()
        for found in imports_in(
            module,
            path.read_text(encoding="utf-8"),
            known,
            package=path.name == "__init__.py",
        )
    ]


def cycles(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(edges.get(node, ())):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return groups


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def private_names_imported(found: list[Import]) -> list[str]:
    """``from x import _name`` across modules, except a package face re-exporting its own."""
    bad = []
    for entry in found:
        for name in entry.names:
            if _private(name) and not _within(entry.target, entry.importer):
                bad.append(f"{entry.importer}:{entry.line} imports {entry.target}.{name}")
    return bad


def private_modules_imported(found: list[Import]) -> set[tuple[str, str]]:
    """(importer, private module) where the importer is outside the private module's package."""
    bad = set()
    for entry in found:
        parts = entry.target.split(".")
        for depth, part in enumerate(parts):
            if _private(part):
                owner = ".".join(parts[:depth])
                if not _within(entry.importer, owner) or owner == "":
                    bad.add((entry.importer, entry.target))
                break
    return bad


def private_attributes_used(module: str, source: str) -> list[str]:
    """``other._name`` for an object other than ``self``/``cls``/``super()``."""
    bad = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Attribute) and _private(node.attr)):
            continue
        if node.attr in PUBLIC_UNDERSCORED:
            continue
        owner = node.value
        if isinstance(owner, ast.Name) and owner.id in {"self", "cls", *STDLIB_OWNERS}:
            continue
        if (
            isinstance(owner, ast.Call)
            and isinstance(owner.func, ast.Name)
            and owner.func.id == "super"
        ):
            continue
        bad.append(f"{module}:{node.lineno} uses .{node.attr}")
    return bad


def faces_bypassed(found: list[Import], guarded: Collection[str]) -> list[str]:
    """Imports of a module inside one of the ``guarded`` subpackages from outside it.

    A subpackage is entered through its face (its ``__init__``): ``calibration.labels``, not
    ``calibration.labels.repository``. Only modules of the same subpackage import each other
    directly; that keeps each face the one list of what the subpackage offers.
    """
    bad = []
    for entry in found:
        for package in guarded:
            if (
                _within(entry.target, package)
                and entry.target != package
                and not _within(entry.importer, package)
            ):
                bad.append(f"{entry.importer}:{entry.line} imports {entry.target}")
    return bad


def subpackages(known: Mapping[str, Path], package: str) -> list[str]:
    """The packages directly inside ``package``."""
    return sorted(
        name
        for name, path in known.items()
        if path.name == "__init__.py" and name.rpartition(".")[0] == package
    )


KNOWN = module_paths()
IMPORTS = all_imports(KNOWN)


# ---------------------------------------------------------------- the checker checks itself


def test_imports_inside_functions_and_under_type_checking_count() -> None:
    known = {name: Path(name) for name in ("pkg", "pkg.a", "pkg.b", "pkg.c", "pkg._d")}
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from pkg.b import Thing\n"
        "def f():\n    import pkg.c\n"
        "from . import _d\n"
        "from pkg.b import _hidden\n"
    )
    found = list(imports_in("pkg.a", source, known, package=False))
    assert {(entry.target, entry.names) for entry in found} == {
        ("pkg.b", ("Thing",)),
        ("pkg.c", ()),
        ("pkg._d", ()),
        ("pkg.b", ("_hidden",)),
    }
    assert private_names_imported(found) == ["pkg.a:7 imports pkg.b._hidden"]
    assert private_modules_imported(found) == set()  # pkg._d is pkg's own
    outside = list(imports_in("other", "import pkg._d\n", known, package=False))
    assert private_modules_imported(outside) == {("other", "pkg._d")}
    assert private_attributes_used("m", "judge._prepare(x)\nself._y\n") == ["m:1 uses ._prepare"]


def test_a_subpackage_module_imported_past_its_face_is_found() -> None:
    known = {
        "pkg": Path("pkg/__init__.py"),
        "pkg.sub": Path("pkg/sub/__init__.py"),
        "pkg.sub.a": Path("pkg/sub/a.py"),
        "pkg.sub.b": Path("pkg/sub/b.py"),
        "pkg.top": Path("pkg/top.py"),
        "app": Path("app.py"),
    }
    found = [
        Import("app", "pkg.sub", ("x",), 1),  # through the face
        Import("pkg.sub.b", "pkg.sub.a", ("x",), 2),  # a sibling
        Import("app", "pkg.top", ("x",), 3),  # a module of the package itself
        Import("app", "pkg.sub.a", ("x",), 4),  # past the face
    ]
    assert subpackages(known, "pkg") == ["pkg.sub"]
    assert faces_bypassed(found, subpackages(known, "pkg")) == ["app:4 imports pkg.sub.a"]


def test_a_cycle_through_a_function_level_import_is_found() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


# ---------------------------------------------------------------- the contract


def test_there_is_no_import_cycle_between_modules() -> None:
    edges: dict[str, set[str]] = {module: set() for module in KNOWN}
    for entry in IMPORTS:
        edges[entry.importer].add(entry.target)
    assert cycles(edges) == []


def test_no_module_imports_another_modules_private_names() -> None:
    assert private_names_imported(IMPORTS) == []


def test_no_module_uses_a_private_attribute_of_another_object() -> None:
    bad = [
        problem
        for module, path in KNOWN.items()
        for problem in private_attributes_used(module, path.read_text(encoding="utf-8"))
    ]
    assert bad == []


def test_private_modules_are_imported_only_inside_their_package() -> None:
    # The allow-list this test once had is gone: judgecards' lazy-face helper and YAML loader are
    # public modules (judgecards.faces, judgecards.safe_yaml), and calibration's private
    # statistics modules are reached through the calibration.stats face.
    assert private_modules_imported(IMPORTS) == set()


# The core's subpackages by job (issue 19 item 3); providers/, batch/, pairwise/, tiered/ and the
# user-facing layers keep their own modules' paths.
CORE_BY_JOB = tuple(
    f"judgecards.{name}" for name in ("cards", "replies", "judging", "limits", "storage")
)


def test_subpackages_by_job_are_entered_through_their_faces() -> None:
    # cli, serve and report, calibration and the other subpackages import `calibration.audits`
    # or `judgecards.storage`, never `calibration.audits.queue` or `judgecards.storage.store`.
    guarded = [*subpackages(KNOWN, "calibration"), *CORE_BY_JOB]
    assert set(CORE_BY_JOB) <= set(KNOWN)
    assert faces_bypassed(IMPORTS, guarded) == []


def test_the_judgecards_core_never_imports_calibration() -> None:
    upward = [
        f"{entry.importer}:{entry.line} imports {entry.target}"
        for entry in IMPORTS
        if _within(entry.importer, "judgecards")
        and not any(_within(entry.importer, top) for top in USER_FACING)
        and _within(entry.target, "calibration")
    ]
    assert upward == []


def test_nothing_below_the_user_facing_layers_imports_them() -> None:
    upward = [
        f"{entry.importer}:{entry.line} imports {entry.target}"
        for entry in IMPORTS
        if not any(_within(entry.importer, top) for top in USER_FACING)
        and any(_within(entry.target, top) for top in USER_FACING)
    ]
    assert upward == []


# ---------------------------------------------------------------- tests/: helpers live in one place

TEST_HELPERS = ("tests.builders", "tests.fakes", "tests.docs.examples")
"""What a test may import from tests/: the builders, the fakes, and the docs tests' reader of the
docs pages. Fixtures come from conftest.py files through pytest, never by import."""


def imports_beyond_helpers(source: str) -> list[str]:
    """``line: module`` for every import of a module under tests/ other than `TEST_HELPERS`,
    anywhere in ``source`` (inside functions too): one test module importing another (or a
    conftest) makes a helper live in two places and ties the tests' layout to it."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            targets = [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level:
            targets = ["tests.<relative>"]
        for target in targets:
            if (target == "tests" or target.startswith("tests.")) and not any(
                target == allowed or target.startswith(allowed + ".") for allowed in TEST_HELPERS
            ):
                found.append(f"{node.lineno}: {target}")
    return sorted(found, key=lambda entry: int(entry.split(":")[0]))


def test_a_test_importing_another_test_module_is_found() -> None:
    source = (
        "from tests.builders import run_cli\nfrom tests.fakes.http import Script\n"
        "from tests import fakes\nfrom tests.calibration.audits.test_audit import MODEL\n"
        "def f():\n    from tests.serve import conftest\n    import tests.conftest\n"
        "from .test_cli import run\n"
    )
    assert imports_beyond_helpers(source) == [
        "4: tests.calibration.audits.test_audit.MODEL",
        "6: tests.serve.conftest",
        "7: tests.conftest",
        "8: tests.<relative>",
    ]


def test_no_test_module_imports_another_test_module() -> None:
    bad = [
        f"{path.relative_to(ROOT)}:{problem}"
        for path in sorted((ROOT / "tests").rglob("*.py"))
        if path.name != "builders.py" and "fakes" not in path.relative_to(ROOT).parts
        for problem in imports_beyond_helpers(path.read_text(encoding="utf-8"))
    ]
    assert bad == [], "import it from tests.builders (or tests.fakes) instead"
