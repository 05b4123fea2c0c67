"""Running the code blocks of the README and the docs pages, so the docs cannot lie.

The conventions a page follows (written up for authors in ``docs/contributing-docs.md``):

- A ```` ```python ```` block runs; the blocks of one page share one namespace, in order, like
  a notebook. A line ``expression  #> expected`` is checked: the expression's value must equal
  the literal ``expected`` (numbers to the digits shown), or its ``repr`` must match ``expected``
  with ``...`` standing for any text. Top-level ``await`` works.
- A ```` ```bash ```` block runs with ``bash -e -o pipefail``; ``judgecards`` is this checkout's
  CLI. It must exit 0 unless a ``<!-- docs: exit N -->`` comment just above it says otherwise.
- A block with ``title="NAME"`` (``yaml``, ``jsonl``, ``python``, ...) is written to the file NAME
  in the page's workspace, for the blocks after it; a python block with a title is not run.
- A ```` ```text title="output" ```` block right after a python or bash block is what that block
  prints (python: stdout; bash: stdout, then stderr), with ``...`` standing for any text.
- ``<!-- docs: no-run REASON -->`` just above a block skips it; the test run counts them.

Every page runs in a fresh workspace (a temporary directory holding ``examples/`` and the files
listed in `WORKSPACE_FILES`) with its own database, the mock provider needing nothing, and the
OpenAI and Anthropic base URLs pointing at the loopback fake server (`tests.fakes.server`), so
blocks written for ``openai:gpt-4o`` or ``anthropic:...`` run with no key and no network.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import doctest
import io
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]

FENCE = re.compile(r"^```([\w-]*)(.*)$")
DIRECTIVE = re.compile(r"^<!-- docs: (no-run|exit) ?(.*?) -->$")
TITLE = re.compile(r'title="([^"]+)"')
EXPECT = re.compile(r"^(?P<code>.*?)\s+#> (?P<expected>.*)$")

RUNNABLE = {"python", "bash"}

# Files every page's workspace starts with (name in the workspace: source in the repository).
WORKSPACE_FILES = {
    "items.jsonl": "examples/reference_items.jsonl",
    "outputs_a.jsonl": "examples/outputs_a.jsonl",
    "outputs_b.jsonl": "examples/outputs_b.jsonl",
    "eval_items.jsonl": "examples/eval_items.jsonl",
}


@dataclass
class Block:
    page: str
    line: int
    lang: str
    text: str
    title: str | None = None
    no_run: str | None = None
    exit_status: int = 0
    output: str | None = None  # the ```text title="output"``` block after it
    is_output: bool = False

    @property
    def runs(self) -> bool:
        return self.lang in RUNNABLE and self.no_run is None and not self.title

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def blocks(path: Path) -> list[Block]:
    """The fenced code blocks of a markdown page, with their directives."""
    page = str(path.relative_to(REPO))
    lines = path.read_text(encoding="utf-8").split("\n")
    found: list[Block] = []
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if match is None:
            i += 1
            continue
        start = i
        i += 1
        body = []
        while not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        title = TITLE.search(match.group(2))
        block = Block(page, start + 1, match.group(1), "\n".join(body) + "\n")
        block.title = title.group(1) if title else None
        above = start - 1
        while above >= 0 and DIRECTIVE.match(lines[above]):
            kind, value = DIRECTIVE.match(lines[above]).groups()  # type: ignore[union-attr]
            if kind == "no-run":
                block.no_run = value or "no reason given"
            else:
                block.exit_status = int(value)
            above -= 1
        if block.title == "output" and found and found[-1].runs:
            found[-1].output = block.text
            block.is_output = True
        found.append(block)
        i += 1
    return found


def _close(actual: Any, expected: Any) -> bool:
    if isinstance(expected, float) and isinstance(actual, (int, float)):
        digits = len(repr(expected).split(".")[1]) if "." in repr(expected) else 0
        return round(float(actual), digits) == expected
    if isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)):
        return len(actual) == len(expected) and all(map(_close, actual, expected))
    if isinstance(expected, dict) and isinstance(actual, Mapping):
        return set(actual) == set(expected) and all(
            _close(actual[k], expected[k]) for k in expected
        )
    return bool(actual == expected)


def matches(actual: Any, expected: str) -> bool:
    """Whether a value is what a ``#> expected`` comment says."""
    try:
        literal = ast.literal_eval(expected)
    except (ValueError, SyntaxError):
        pass
    else:
        if _close(actual, literal):
            return True
    checker = doctest.OutputChecker()
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    return any(checker.check_output(expected, text, flags) for text in (repr(actual), str(actual)))


def output_matches(actual: str, expected: str) -> bool:
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    return doctest.OutputChecker().check_output(expected, actual, flags)


@dataclass
class Workspace:
    """One page's directory, environment and Python namespace."""

    root: Path
    env: dict[str, str]
    namespace: dict[str, Any] = field(default_factory=dict)
    loop: asyncio.AbstractEventLoop = field(default_factory=asyncio.new_event_loop)

    @classmethod
    def create(cls, root: Path, base_url: str) -> Workspace:
        shutil.copytree(REPO / "examples", root / "examples")
        for name, source in WORKSPACE_FILES.items():
            shutil.copy(REPO / source, root / name)
        bin_dir = root / ".bin"
        bin_dir.mkdir()
        shim = bin_dir / "judgecards"
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m judgecards "$@"\n')
        shim.chmod(0o755)
        for name in ("python", "python3"):  # a script, not a symlink: a venv is found by path
            (bin_dir / name).write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
            (bin_dir / name).chmod(0o755)
        env = {
            # The shims first, then the environment's own scripts (datasette, mkdocs, ...).
            "PATH": os.pathsep.join(
                [str(bin_dir), str(Path(sys.executable).parent), os.environ.get("PATH", "")]
            ),
            "PYTHONPATH": str(REPO),
            "JUDGECARDS_DB": str(root / "judgecards.db"),
            "OPENAI_BASE_URL": base_url,
            "OPENAI_API_KEY": "sk-docs-example",
            "ANTHROPIC_BASE_URL": base_url.removesuffix("/v1"),
            "ANTHROPIC_API_KEY": "docs-example",
            "HOME": str(root),
            "NO_COLOR": "1",
        }
        return cls(root, env, {"__name__": "__docs__"})

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """The process's cwd and environment, as the workspace's, for in-process Python."""
        old_cwd, old_env = os.getcwd(), dict(os.environ)
        os.chdir(self.root)
        os.environ.update({k: v for k, v in self.env.items() if k != "PATH"})
        try:
            yield
        finally:
            os.chdir(old_cwd)
            os.environ.clear()
            os.environ.update(old_env)

    def write(self, block: Block) -> None:
        assert block.title is not None
        path = self.root / block.title
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(block.text, encoding="utf-8")

    def run(self, block: Block) -> None:
        if block.lang == "python":
            out = self._python(block)
        else:
            out = self._bash(block)
        if block.output is not None:
            assert output_matches(out, block.output), (
                f"{block.where}: printed\n{out}\nbut the page shows\n{block.output}"
            )

    def _eval(self, code: Any) -> Any:
        result = eval(code, self.namespace)
        if asyncio.iscoroutine(result):
            result = self.loop.run_until_complete(result)
        return result

    def _python(self, block: Block) -> str:
        source = block.text
        tree = ast.parse(source, filename=block.where)
        lines = source.split("\n")
        flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
        printed = io.StringIO()
        with self.active(), contextlib.redirect_stdout(printed):
            for statement in tree.body:
                last = lines[(statement.end_lineno or statement.lineno) - 1]
                expect = EXPECT.match(last)
                where = f"{block.page}:{block.line + statement.lineno}"
                if isinstance(statement, ast.Expr) and expect:
                    code = compile(ast.Expression(statement.value), where, "eval", flags=flags)
                    value = self._eval(code)
                    expected = expect.group("expected")
                    assert matches(value, expected), f"{where}: got {value!r}, page says {expected}"
                else:
                    module = ast.Module(body=[statement], type_ignores=[])
                    self._eval(compile(module, where, "exec", flags=flags))
        return printed.getvalue()

    def _bash(self, block: Block) -> str:
        done = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", block.text],
            cwd=self.root,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode == block.exit_status, (
            f"{block.where}: exit {done.returncode}, expected {block.exit_status}\n"
            f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}"
        )
        return done.stdout + done.stderr

    def close(self) -> None:
        self.loop.close()
