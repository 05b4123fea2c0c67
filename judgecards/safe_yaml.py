"""One YAML loader for untrusted files: card front-matter and eval configs.

PyYAML's safe loader refuses Python tags but not an alias bomb: nine anchors of nine aliases each
are a few hundred bytes that expand to 9**9 nodes. The loaded object shares the aliased parts, so
loading is cheap; whatever walks it afterwards (pydantic, a JSON Schema builder, ``json.dumps``)
expands it and takes gigabytes. So the composer counts, at each alias, how many nodes it stands
for, and refuses a document whose aliases add more than `MAX_ALIAS_NODES` nodes, naming the line
of the alias that crossed the limit. Nesting is bounded too (`MAX_DEPTH`): the composer and the
constructor recurse, and a deep ``[[[[…`` would otherwise end in a ``RecursionError``.

Scanning and parsing are done by libyaml when PyYAML was built with it (ten times faster than
the pure-Python scanner; every card's front-matter is read when a card is looked up); the bounded
composer and the safe constructor are the same Python code either way. A document libyaml
refuses is read again by the pure-Python loader, so errors, and what is refused, read exactly as
they always have.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.events import AliasEvent

from judgecards.errors import CardError, InputError

__all__ = ["MAX_ALIAS_NODES", "MAX_DEPTH", "YamlDocument", "load_yaml"]

MAX_ALIAS_NODES = 10_000
"""Nodes that aliases may add to a document when expanded (anchors reused a few times fit)."""

MAX_DEPTH = 100
"""Deepest nesting of mappings and sequences accepted."""


class _Refused(yaml.MarkedYAMLError):
    """A document the bounded composer will not build (too many alias nodes, too deep)."""


class _Bounded(Composer):
    """PyYAML's composer with the bounds above; mixed into a parser below."""

    peek_event: Callable[[], Any]  # the parser's, mixed in beside this class

    def _start_bounds(self) -> None:
        self._alias_nodes = 0
        self._depth = 0
        self._open_anchors: list[str] = []  # anchors of the nodes being composed
        self._sizes: dict[int, int] = {}

    def compose_node(self, parent: yaml.Node | None, index: Any) -> Any:
        event: Any = self.peek_event()
        mark: Any = event.start_mark
        if type(event) is AliasEvent:
            if event.anchor in self._open_anchors:
                raise _Refused(None, None, "an alias refers to a node that contains it", mark)
            node: Any = super().compose_node(parent, index)
            self._alias_nodes += self._size(node)
            if self._alias_nodes > MAX_ALIAS_NODES:
                raise _Refused(
                    None,
                    None,
                    f"aliases expand to more than {MAX_ALIAS_NODES:,} nodes (an alias bomb?)",
                    mark,
                )
            return node
        if self._depth >= MAX_DEPTH:
            raise _Refused(None, None, f"nested deeper than {MAX_DEPTH} levels", mark)
        anchor = getattr(event, "anchor", None)
        self._depth += 1
        if anchor is not None:
            self._open_anchors.append(anchor)
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
            if anchor is not None:
                self._open_anchors.pop()
        return node

    def _size(self, node: yaml.Node) -> int:
        """Nodes in ``node`` with every alias expanded (memoised: the graph is a DAG)."""
        known = self._sizes.get(id(node))
        if known is not None:
            return known
        if isinstance(node, yaml.SequenceNode):
            size = 1 + sum(self._size(child) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            size = 1 + sum(self._size(k) + self._size(v) for k, v in node.value)
        else:
            size = 1
        self._sizes[id(node)] = size
        return size


class _BoundedLoader(_Bounded, yaml.SafeLoader):
    """The pure-Python loader: the reference for what is accepted and how errors read."""

    def __init__(self, text: str) -> None:
        yaml.SafeLoader.__init__(self, text)
        self._start_bounds()


_CParser: Any
try:
    from yaml._yaml import CParser as _CParser  # libyaml, when PyYAML was built with it
except ImportError:
    _CParser = None

if _CParser is not None:

    class _FastBoundedLoader(
        _Bounded,
        _CParser,  # type: ignore[misc]
        yaml.constructor.SafeConstructor,
        yaml.resolver.Resolver,
    ):
        """libyaml's scanner and parser (the events) under the same composer and constructor:
        the MRO puts `_Bounded` and PyYAML's ``Composer`` before ``CParser`` (whose own
        composer, in C, knows no bounds), as ``CSafeLoader`` is built but for the composer."""

        def __init__(self, text: str) -> None:
            _CParser.__init__(self, text)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)
            Composer.__init__(self)
            self._start_bounds()


@dataclass(frozen=True)
class YamlDocument:
    """A loaded document: the data, and the node tree that says where each key was written."""

    data: Any
    node: yaml.Node | None
    first_line: int  # the file line of the text's first line

    def line_of(self, path: Sequence[str]) -> int | None:
        """The file line of a key path (of the nearest enclosing key when the key is missing)."""
        if self.node is None:
            return None
        current: yaml.Node = self.node
        line: int = current.start_mark.line
        for key in path:
            if isinstance(current, yaml.MappingNode):
                pair = next(
                    ((k, v) for k, v in current.value if getattr(k, "value", None) == key), None
                )
                if pair is None:
                    break  # a missing key: point at the mapping that should hold it
                # The key's line, not the value's: a block mapping value starts on the next line.
                line = pair[0].start_mark.line
                current = pair[1]
            elif (
                isinstance(current, yaml.SequenceNode)
                and key.isdigit()
                and int(key) < len(current.value)
            ):
                current = current.value[int(key)]
                line = current.start_mark.line
            else:
                break
        return line + self.first_line


def load_yaml(
    text: str,
    *,
    file: str | Path,
    error: type[CardError] | type[InputError],
    first_line: int = 1,
    what: str = "YAML",
) -> YamlDocument:
    """Parse one YAML document with PyYAML's safe constructors, bounded as the module says.

    Args:
        text: the document.
        file: named in errors.
        error: the exception to raise (`CardValidationError` for a card, `InputError` for a
            config); it gets the file, the file line and a message starting ``invalid {what}:``.
        first_line: the file line of the text's first line (front-matter starts on line 2).
        what: how the message names the document.
    """
    if _CParser is not None:
        fast = _FastBoundedLoader(text)
        try:
            node = fast.get_single_node()
            data = fast.construct_document(node) if node is not None else None
            return YamlDocument(data=data, node=node, first_line=first_line)
        except (yaml.YAMLError, RecursionError):
            pass  # read again below: what is refused, and how, is the pure-Python loader's
        finally:
            fast.dispose()
    loader = _BoundedLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as problem:
        mark = getattr(problem, "problem_mark", None)
        # PyYAML's own text counts lines from the start of the text, not of the file: say what
        # went wrong and let the error's file:line be the one place numbers appear.
        detail = getattr(problem, "problem", None) or str(problem)
        column = f" at column {mark.column + 1}" if mark is not None else ""
        context = getattr(problem, "context", None)
        raise error(
            f"invalid {what}: {detail}{column}" + (f" ({context})" if context else ""),
            file=file,
            line=mark.line + first_line if mark is not None else None,
        ) from None
    except RecursionError:
        # Merge keys (<<) nest inside the constructor's own recursion; the depth bound makes
        # this unlikely, but it must never escape as a traceback.
        raise error(f"invalid {what}: nested too deeply", file=file) from None
    finally:
        loader.dispose()
    return YamlDocument(data=data, node=node, first_line=first_line)
