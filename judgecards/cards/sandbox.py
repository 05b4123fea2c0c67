"""The sandbox card bodies run in: Jinja's immutable sandbox, with budgets.

Jinja's sandbox stops a template from reaching Python internals, but not from running for ever
(``{% for i in range(100000) %}{% for j in range(100000) %}``) or from building a gigabyte
(``{{ 'x' * 1000000000 }}``, a string doubled in a loop, ``|center(1000000000)``). Card bodies
come from card directories that may have been downloaded, so every render runs under a budget:

- **steps**: every loop iteration, call and filter application counts one; past
  `RenderLimits.max_steps` the render stops. The budget also carries a deadline
  (`RenderLimits.max_seconds`), checked at each step.
- **size**: every value the body builds (an operator's result, a call's or a filter's result, a
  ``~`` concatenation) and the text it emits, captured blocks included, is measured; a value
  over the size limit is refused, and so is emitting more than that limit in total. Where a
  value's size is known before it is built (``*``, ``**``, ``%``, ``str.format`` widths, the
  ``center``/``indent``/``join``/``replace``/``wordwrap`` filters, ``str`` methods that pad), it
  is refused before it is built. The limit is `RenderLimits.max_output_chars` plus three times
  the size of the inputs, so inputs never count against the card's own allowance.

Loops, emitted text and concatenations are wrapped at compile time (`compile_body` rewrites the
parsed template), so the checks cannot be skipped by the body. `static_problems` finds, before any
render, what the sandbox would refuse whatever the inputs: underscore and internal attributes,
mutating methods, and ``include``/``import``/``extends``.
"""

from __future__ import annotations

import contextvars
import functools
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, cast

from jinja2 import StrictUndefined, Template, nodes
from jinja2.runtime import Context
from jinja2.sandbox import (
    UNSAFE_ASYNC_GENERATOR_ATTRIBUTES,
    UNSAFE_COROUTINE_ATTRIBUTES,
    UNSAFE_FUNCTION_ATTRIBUTES,
    UNSAFE_GENERATOR_ATTRIBUTES,
    UNSAFE_METHOD_ATTRIBUTES,
    ImmutableSandboxedEnvironment,
    SandboxedFormatter,
)
from jinja2.visitor import NodeTransformer

__all__ = [
    "BoundedEnvironment",
    "Placeholder",
    "RenderLimitExceeded",
    "RenderLimits",
    "compile_body",
    "compile_nodes",
    "environment",
    "render_bounded",
    "static_problems",
    "template_line",
]

MAX_INT_BITS = 100_000  # about 30,000 digits: plenty for arithmetic in a prompt


@dataclass(frozen=True)
class RenderLimits:
    """What one render of a card body may spend (see the module docstring)."""

    max_output_chars: int = 1_000_000
    max_steps: int = 50_000
    max_seconds: float = 2.0


class RenderLimitExceeded(Exception):
    """A render went over its budget; the message says which limit."""


@dataclass
class _Budget:
    limits: RenderLimits
    size_limit: int
    deadline: float
    steps: int = 0
    emitted: int = 0

    def step(self) -> None:
        self.steps += 1
        if self.steps > self.limits.max_steps:
            raise RenderLimitExceeded(
                f"more than {self.limits.max_steps:,} loop iterations and calls"
            )
        if time.monotonic() > self.deadline:
            raise RenderLimitExceeded(f"rendering took over {self.limits.max_seconds:g} s")

    def items(self, iterable: Iterable[Any]) -> Iterator[Any]:
        for item in iterable:
            self.step()
            yield item

    def streamed(self, value: Any, what: str) -> Any:
        """An iterator result (``map``, ``select``…) wrapped so that whoever consumes it pays
        for each item and cannot collect more than the size limit."""
        if not isinstance(value, Iterator):
            return value
        return self._stream(value, what)

    def _stream(self, iterator: Iterator[Any], what: str) -> Iterator[Any]:
        total = 0
        for item in iterator:
            self.step()
            total += weight(item, self.size_limit)
            self.require(total, what)
            yield item

    def require(self, size: int, what: str) -> None:
        if size > self.size_limit:
            raise RenderLimitExceeded(
                f"{what} would build a value of about {size:,} characters "
                f"(limit {self.size_limit:,})"
            )

    def checked(self, value: Any, what: str) -> Any:
        self.require(weight(value, self.size_limit), what)
        return value


_budget: contextvars.ContextVar[_Budget | None] = contextvars.ContextVar(
    "judgecards_render_budget", default=None
)


def _active() -> _Budget:
    budget = _budget.get()
    if budget is None:
        raise RuntimeError("card bodies render through judgecards.cards.sandbox.render_bounded")
    return budget


def weight(value: Any, cap: int) -> int:
    """Characters ``str(value)`` would take, roughly, counted only up to ``cap + 1``.

    Shared references count each time they appear (printing expands them); sub-results are
    memoised per object, so a list holding one list a thousand times costs one pass.
    """
    memo: dict[int, int] = {}

    def measure(item: Any) -> int:
        if isinstance(item, (str, bytes)):
            return len(item) or 1
        if isinstance(item, bool) or item is None:
            return 1
        if isinstance(item, int):
            return 1 + item.bit_length() // 3
        if not isinstance(item, (list, tuple, set, frozenset, dict)):
            return 1
        key = id(item)
        if key in memo:
            return memo[key]
        memo[key] = 1  # a cycle counts once
        total = 2
        children: Iterable[Any] = (
            (part for pair in item.items() for part in pair) if isinstance(item, dict) else item
        )
        for child in children:
            total += measure(child) + 2
            if total > cap:
                break
        memo[key] = min(total, cap + 1)
        return memo[key]

    return measure(value)


# --------------------------------------------------------------------------- growth estimates

_PERCENT = re.compile(r"%(?:\([^)]*\))?[#0\- +]*(\*|\d+)?(?:\.(\*|\d+))?")
_NUMBER = re.compile(r"\d+")


def _percent_size(fmt: Any, args: Any) -> int:
    """Upper bound of ``fmt % args``'s length: the format, the arguments and every width."""
    text = str(fmt)
    values = args if isinstance(args, tuple) else (args,)
    star = max((v for v in values if isinstance(v, int) and not isinstance(v, bool)), default=0)
    widths = 0
    for match in _PERCENT.finditer(text):
        for group in match.groups():
            widths += star if group == "*" else int(group) if group else 0
    return len(text) + widths + weight(args, 10**12)


def _int_bits(value: Any) -> int:
    return value.bit_length() if isinstance(value, int) and not isinstance(value, bool) else 0


def _binop_size(operator: str, left: Any, right: Any, cap: int) -> int:
    if operator == "*":
        if _int_bits(left) + _int_bits(right) > MAX_INT_BITS:
            return cap + 1
        for sequence, times in ((left, right), (right, left)):
            if isinstance(sequence, (str, list, tuple)) and isinstance(times, int):
                return weight(sequence, cap) * max(times, 0)
    if operator == "**" and isinstance(left, int) and isinstance(right, int) and right > 0:
        if abs(left) > 1 and right * abs(left).bit_length() > MAX_INT_BITS:
            return cap + 1
    if operator == "%" and isinstance(left, str):
        return _percent_size(left, right)
    return 0


def _center(value: Any, width: Any = 80, *_: Any, **__: Any) -> int:
    return max(len(str(value)), width if isinstance(width, int) else 0)


def _indent(value: Any, width: Any = 4, *_: Any, **__: Any) -> int:
    text = str(value)
    pad = width if isinstance(width, int) else len(str(width))
    return len(text) + max(pad, 0) * (text.count("\n") + 1)


def _replace(value: Any, old: Any = "", new: Any = "", count: Any = None, *_: Any) -> int:
    text, old, new = str(value), str(old), str(new)
    times = text.count(old) if old else len(text) + 1
    if isinstance(count, int) and count >= 0:
        times = min(times, count)
    return len(text) + times * max(len(new) - len(old), 0)


def _wordwrap(value: Any, width: Any = 79, *_: Any, wrapstring: Any = None, **__: Any) -> int:
    text = str(value)
    return len(text) * (1 + len(str(wrapstring or "\n")))


def _count_arg(value: Any, count: Any = 0, *_: Any, **__: Any) -> int:
    return count if isinstance(count, int) else 0


def _join(value: Any, separator: Any = "", *_: Any, **__: Any) -> int:
    items = value if isinstance(value, (list, tuple)) else ()
    return weight(items, 10**12) + len(str(separator)) * len(items)


_FILTER_SIZES: dict[str, Callable[..., int]] = {
    "center": _center,
    "indent": _indent,
    "format": lambda value, *args, **kwargs: _percent_size(value, args or tuple(kwargs.values())),
    "join": _join,
    "replace": _replace,
    "wordwrap": _wordwrap,
    "batch": _count_arg,
    "slice": _count_arg,
}
_PADDING_METHODS = frozenset({"center", "ljust", "rjust", "zfill"})
_MUTATING_METHODS = frozenset(
    {
        "add",
        "append",
        "appendleft",
        "clear",
        "difference_update",
        "discard",
        "extend",
        "extendleft",
        "insert",
        "pop",
        "popitem",
        "popleft",
        "remove",
        "reverse",
        "rotate",
        "setdefault",
        "sort",
        "symmetric_difference_update",
        "update",
    }
)


def _method_size(method: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> int:
    """Projected size of a call to a ``str`` method that can grow its result."""
    owner = getattr(method, "__self__", None)
    name = getattr(method, "__name__", "")
    if not isinstance(owner, str):
        return 0
    if name in _PADDING_METHODS and args and isinstance(args[0], int):
        return max(len(owner), args[0])
    if name == "expandtabs":
        size = args[0] if args and isinstance(args[0], int) else kwargs.get("tabsize", 8)
        return len(owner) + owner.count("\t") * max(size if isinstance(size, int) else 8, 0)
    if name == "replace":
        return _replace(owner, *args)
    if name == "join" and args:
        return _join(args[0], owner)
    return 0


# --------------------------------------------------------------------------- the environment


class _BoundedFormatter(SandboxedFormatter):
    """``str.format`` in the sandbox, refusing widths and precisions past the size limit."""

    def format_field(self, value: Any, format_spec: str) -> Any:
        budget = _active()
        budget.require(
            sum(int(n) for n in _NUMBER.findall(format_spec)) + weight(value, budget.size_limit),
            "a format field",
        )
        return super().format_field(value, format_spec)


class BoundedEnvironment(ImmutableSandboxedEnvironment):
    """The immutable sandbox with the step and size budgets of the module docstring."""

    intercepted_binops = frozenset({"*", "**", "%", "+"})

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.globals.pop("lipsum", None)  # text generation on demand: nothing a card needs
        self.filters = {
            name: _bounded_filter(name, function) for name, function in self.filters.items()
        }

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        budget = _active()
        budget.require(_binop_size(operator, left, right, budget.size_limit), f"'{operator}'")
        return budget.checked(super().call_binop(context, operator, left, right), f"'{operator}'")

    def call(__self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(__obj, "__func__", None) in _HELPERS:
            return __obj(*args)  # Jinja's _loop_vars/_block_vars are not for the helpers
        budget = _active()
        budget.step()
        given = [value for key, value in kwargs.items() if key not in _JINJA_KWARGS]
        for argument in (*args, *given):
            budget.checked(argument, "a call argument")
        budget.require(_method_size(__obj, args, kwargs), "a call")
        result = super().call(__context, __obj, *args, **kwargs)
        return budget.streamed(budget.checked(result, "a call"), "a call")

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        wrapped = super().wrap_str_format(value)
        if wrapped is None:
            return None
        template: str = value.__self__
        is_format_map = value.__name__ == "format_map"
        formatter = _BoundedFormatter(self)

        def bounded(*args: Any, **kwargs: Any) -> str:
            if is_format_map:
                if kwargs or len(args) != 1:
                    raise TypeError("format_map() takes exactly one positional argument")
                kwargs, args = args[0], ()
            return type(template)(formatter.vformat(template, args, kwargs))

        return functools.update_wrapper(bounded, value)

    # Helpers the rewritten template calls (see `compile_body`).

    def jc_iter(self, iterable: Any) -> Iterator[Any]:
        return _active().items(iterable)

    def jc_emit(self, value: Any) -> str:
        budget = _active()
        if type(value) is str:
            text = value  # its size is counted below
        else:
            budget.checked(value, "emitted text")
            text = str(value)
        budget.emitted += len(text)
        if budget.emitted > budget.size_limit:
            raise RenderLimitExceeded(f"the body emits more than {budget.size_limit:,} characters")
        return text

    def jc_checked(self, value: Any) -> Any:
        return _active().checked(value, "'~'")


_JINJA_KWARGS = frozenset({"_loop_vars", "_block_vars"})
_HELPERS = frozenset(
    {BoundedEnvironment.jc_iter, BoundedEnvironment.jc_emit, BoundedEnvironment.jc_checked}
)


def _bounded_filter(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    skip = 1 if getattr(function, "jinja_pass_arg", None) is not None else 0
    size = _FILTER_SIZES.get(name)

    @functools.wraps(function)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        budget = _active()
        budget.step()
        if name == "join" and len(args) > skip and not isinstance(args[skip], (list, tuple)):
            items = list(budget.streamed(iter(args[skip]), "the join filter's input"))
            args = (*args[:skip], items, *args[skip + 1 :])
        for argument in (*args[skip:], *kwargs.values()):
            budget.checked(argument, f"the {name} filter's input")
        if size is not None:
            budget.require(size(*args[skip:], **kwargs), f"the {name} filter")
        result = budget.checked(function(*args, **kwargs), f"the {name} filter")
        return budget.streamed(result, f"the {name} filter")

    return bounded


@lru_cache(maxsize=1)
def environment() -> BoundedEnvironment:
    """The one environment for card bodies."""
    return BoundedEnvironment(
        undefined=StrictUndefined,
        autoescape=False,
        keep_trailing_newline=False,
        trim_blocks=True,
        lstrip_blocks=True,
    )


# --------------------------------------------------------------------------- compiling

_UNSAFE_NAMES = (
    UNSAFE_FUNCTION_ATTRIBUTES
    | UNSAFE_METHOD_ATTRIBUTES
    | UNSAFE_GENERATOR_ATTRIBUTES
    | UNSAFE_COROUTINE_ATTRIBUTES
    | UNSAFE_ASYNC_GENERATOR_ATTRIBUTES
    | {"mro"}
)
# Filters that look attributes up by a name given as an argument (``attr('__class__')``,
# ``map(attribute='__class__')``, ``selectattr('__x')``, ``map('attr', '__class__')``).
_ATTRIBUTE_FILTERS = frozenset(
    {"attr", "map", "selectattr", "rejectattr", "sort", "groupby", "sum", "unique", "min", "max"}
)


def _unsafe_name(name: Any) -> bool:
    return isinstance(name, str) and any(
        part.startswith("_") or part in _UNSAFE_NAMES for part in name.split(".")
    )


def _filter_problems(parsed: nodes.Template) -> list[tuple[int, str]]:
    """Attribute names passed to filters: the sandbox refuses them at render time too, but
    only as an undefined value that fails per item (or not at all), never at load."""
    problems: list[tuple[int, str]] = []
    for node in parsed.find_all(nodes.Filter):
        if node.name not in _ATTRIBUTE_FILTERS:
            continue
        arguments = [*node.args, *(keyword.value for keyword in node.kwargs)]
        if node.name == "attr" and not (node.args and isinstance(node.args[0], nodes.Const)):
            problems.append((node.lineno, "the sandbox refuses attr() with a computed name"))
        for argument in arguments:
            if isinstance(argument, nodes.Const) and _unsafe_name(argument.value):
                problems.append(
                    (node.lineno, f"the sandbox refuses the attribute {argument.value!r}")
                )
    return problems


def static_problems(parsed: nodes.Template) -> list[tuple[int, str]]:
    """``(line in the body, problem)`` for what the sandbox refuses whatever the inputs are."""
    problems: list[tuple[int, str]] = []
    for node in parsed.find_all((nodes.Getattr, nodes.Getitem)):
        if isinstance(node, nodes.Getattr):
            name: Any = node.attr
        elif isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Const):
            name = node.arg.value
        else:
            continue
        if isinstance(name, str) and (name.startswith("_") or name in _UNSAFE_NAMES):
            problems.append((node.lineno, f"the sandbox refuses the attribute {name!r}"))
    problems += _filter_problems(parsed)
    for call in parsed.find_all(nodes.Call):
        if isinstance(call.node, nodes.Getattr) and call.node.attr in _MUTATING_METHODS:
            problems.append(
                (call.lineno, f"card bodies cannot change values (.{call.node.attr}() is refused)")
            )
    for statement in parsed.find_all(
        (nodes.Extends, nodes.Include, nodes.Import, nodes.FromImport)
    ):
        problems.append(
            (statement.lineno, "card bodies cannot include, import or extend templates")
        )
    return sorted(problems)


def _helper(name: str, value: nodes.Expr) -> nodes.Expr:
    return nodes.Call(
        nodes.EnvironmentAttribute(name, lineno=value.lineno),
        [value],
        [],
        None,
        None,
        lineno=value.lineno,
    )


class _Budgeted(NodeTransformer):
    """Route loops, emitted text and concatenations through the budget helpers."""

    def visit_For(self, node: nodes.For) -> nodes.Node:
        self.generic_visit(node)
        node.iter = _helper("jc_iter", cast(nodes.Expr, node.iter))
        return node

    def visit_Output(self, node: nodes.Output) -> nodes.Node:
        self.generic_visit(node)
        node.nodes = [_helper("jc_emit", child) for child in node.nodes]
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)
        node.nodes = [_helper("jc_checked", child) for child in node.nodes]
        return _helper("jc_checked", node)


@lru_cache(maxsize=256)
def compile_body(body: str) -> Template:
    """The card body as a template whose loops, output and concatenations are budgeted.

    Raises:
        jinja2.TemplateSyntaxError: the body is not valid Jinja.
    """
    return compile_nodes(environment().parse(body))


def compile_nodes(parsed: nodes.Template) -> Template:
    """A parsed body (or a part of one, e.g. `judgecards.cards.prompt_cache`'s static prefix) as a
    budgeted template, like `compile_body`."""
    budgeted = _Budgeted().visit(parsed)
    return environment().from_string(budgeted)


def render_bounded(
    template: Template,
    variables: Mapping[str, Any],
    *,
    input_chars: int = 0,
    limits: RenderLimits | None = None,
) -> str:
    """Render a template from `compile_body` under a fresh budget.

    Args:
        input_chars: the size of the inputs; the size limit is ``limits.max_output_chars``
            plus three times this.

    Raises:
        RenderLimitExceeded: the body went over a limit; the output is discarded.
        jinja2.exceptions.SecurityError: the body broke the sandbox.
        Exception: whatever the body raised (an undefined variable, a type error…).
    """
    limits = limits or RenderLimits()
    budget = _Budget(
        limits=limits,
        size_limit=limits.max_output_chars + 3 * input_chars,
        deadline=time.monotonic() + limits.max_seconds,
    )
    token = _budget.set(budget)
    try:
        parts: list[str] = []
        produced = 0
        for chunk in template.generate(dict(variables)):
            produced += len(chunk)
            if produced > budget.size_limit:
                raise RenderLimitExceeded(
                    f"the rendered prompt exceeds {budget.size_limit:,} characters"
                )
            parts.append(chunk)
        return "".join(parts)
    finally:
        _budget.reset(token)


class Placeholder(str):
    """Stands for an input in a trial render, whatever shape the real input has.

    It prints as ``[name]``; any attribute, item or call gives another placeholder and it
    iterates as one item, so ``{% for c in criteria %}{{ c.name }}`` renders without data.
    """

    def __new__(cls, name: str) -> Placeholder:
        return super().__new__(cls, f"[{name}]")

    def __getattr__(self, name: str) -> Placeholder:
        if name.startswith("_"):
            raise AttributeError(name)
        return Placeholder(f"{self._name()}.{name}")

    def __getitem__(self, key: Any) -> Placeholder:
        return Placeholder(f"{self._name()}[{key!r}]")

    def __iter__(self) -> Iterator[Placeholder]:
        return iter([Placeholder(f"{self._name()}[0]")])

    def __call__(self, *args: Any, **kwargs: Any) -> Placeholder:
        return self

    def _name(self) -> str:
        return str.__str__(self)[1:-1]


def template_line(error: BaseException) -> int | None:
    """The body line (1-based) where a render error was raised, from Jinja's traceback."""
    line = None
    traceback = error.__traceback__
    while traceback is not None:
        if traceback.tb_frame.f_code.co_filename == "<template>":
            line = traceback.tb_lineno
        traceback = traceback.tb_next
    return line
