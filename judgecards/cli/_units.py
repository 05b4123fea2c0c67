"""The units a judging command reads: items from one file (``ITEMS``), or pairs joined on 'id'
from two outputs files (``A B``).

``compare A B`` judges pairs live; ``cascade`` and ``batch submit`` take either shape, so a pair
goes down a cascade or into a batch with the same command as an item. The number of files
decides: two files are joined into pairs and need a pairwise card; one file is items, whatever
the card (a pairwise card's items carry answer_a/answer_b themselves, as ``score`` takes them).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from judgecards.cli._common import deprecated, input_limit, oversized_inputs
from judgecards.errors import InputError, WrongCardKind
from judgecards.judging import item_id_of, problems_error, read_jsonl

if TYPE_CHECKING:
    from judgecards.cards import Card
    from judgecards.judging import CheckedItems

__all__ = [
    "JoinedPairs",
    "card_and_units",
    "check_pairwise",
    "read_pairs",
    "units_argument",
]

F = TypeVar("F", bound=Callable[..., Any])

_SHOWN_UNMATCHED = 20

# A line's fields and the pairwise card inputs they become (the answer: answer_a or answer_b).
_SIDE_INPUTS = {
    "answer": "answer",
    "output": "answer",
    "question": "question",
    "reference": "reference",
}


@dataclass
class _Side:
    """One output file, by id: (line number, answer, line object)."""

    path: Path
    rows: dict[str, tuple[int, str, dict[str, Any]]] = field(default_factory=dict)


@dataclass
class JoinedPairs:
    """The pairs of two outputs files (ids in both, in A's order) and the ids found in one only."""

    a_path: Path
    b_path: Path
    pairs: list[dict[str, Any]]
    only_in_a: list[str]
    only_in_b: list[str]

    def warn_unmatched(self) -> None:
        """One warning line per file with ids the other lacks: reported, not dropped silently."""
        for ids, here, there in (
            (self.only_in_a, self.a_path, self.b_path),
            (self.only_in_b, self.b_path, self.a_path),
        ):
            if ids:
                listed = ", ".join(ids[:_SHOWN_UNMATCHED]) + (
                    " …" if len(ids) > _SHOWN_UNMATCHED else ""
                )
                click.secho(
                    f"warning: {len(ids)} id(s) in {here} have no line in {there} and are not judged: {listed}",
                    fg="yellow",
                    err=True,
                )


def units_argument(function: F) -> F:
    """``ITEMS`` or ``A B`` as positional arguments (keyword argument ``paths``, one or two
    files), for the commands that judge either unit; ``--input ITEMS``, the old spelling, still
    works for one release (hidden, one deprecation line)."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        old = kwargs.pop("deprecated_input")
        paths: tuple[Path, ...] = kwargs["paths"]
        if old is not None:
            deprecated("--input ITEMS", "ITEMS (the file as the argument)")
            if paths:
                raise click.UsageError(
                    "--input is the old spelling of the ITEMS argument: give one"
                )
            paths = (old,)
        if not paths:
            raise click.UsageError(
                "Missing argument 'ITEMS': the JSONL file of items to judge (or A B, two outputs "
                "files to compare with a pairwise card)"
            )
        if len(paths) > 2:  # ITEMS, or A and B
            raise click.UsageError(
                f"{len(paths)} files given: give ITEMS (one file) or A B (two outputs files)"
            )
        kwargs["paths"] = paths
        return function(*args, **kwargs)

    existing = click.Path(dir_okay=False, exists=True, path_type=Path)
    decorated: Any = click.option(
        "--input", "deprecated_input", type=existing, hidden=True, help="Now the ITEMS argument."
    )(wrapper)
    argument = click.argument("paths", metavar="ITEMS | A B", nargs=-1, type=existing)
    return argument(decorated)  # type: ignore[no-any-return]


def check_pairwise(card: Card) -> None:
    """Raises `WrongCardKind` unless ``card`` compares two answers (answer_a/answer_b)."""
    from judgecards.pairwise.rules import is_pairwise

    if not is_pairwise(card):
        raise WrongCardKind(
            f"{card.ref} is not a pairwise card (it has no answer_a/answer_b inputs)",
            file=card.path,
            field="inputs",
        )


def card_and_units(
    card_ref: str, cards_dirs: Sequence[Path], paths: Sequence[Path], max_input_chars: int
) -> tuple[Card, CheckedItems | JoinedPairs]:
    """The card, and what ``paths`` hold for it, every line checked: one file is items, two are
    joined into pairs (a pairwise card only). Nothing here opens the database or calls a
    provider."""
    from judgecards.cards import load_card
    from judgecards.cli._score_run import card_items

    card = load_card(card_ref, cards_dir=list(cards_dirs) or None)
    if len(paths) == 1:
        return card, card_items(card, paths[0], max_input_chars)
    check_pairwise(card)
    a_path, b_path = paths
    return card, read_pairs(a_path, b_path, input_limit(max_input_chars))


def read_pairs(
    a_path: Path,
    b_path: Path,
    limit: int | None,
    model_a: str | None = None,
    model_b: str | None = None,
) -> JoinedPairs:
    """The pairs of two outputs files, each line checked (all problems reported at once);
    ``model_a``/``model_b`` label the models behind the files, else each line's 'model'."""
    return _join(_read_side(a_path, limit), _read_side(b_path, limit), model_a, model_b)


def _read_side(path: Path, limit: int | None) -> _Side:
    """Every line of one outputs file, checked; all problems are reported at once."""
    side = _Side(path)
    problems: list[InputError] = []
    too_long = oversized_inputs(_SIDE_INPUTS, limit)
    for number, line in read_jsonl(path):
        if isinstance(line, InputError):
            problems.append(line)
            continue
        key = item_id_of(line)
        if key is None or key == "":
            problems.append(InputError("missing 'id'", file=path, line=number, field="id"))
            continue
        if key in side.rows:
            problems.append(
                InputError(
                    f"duplicate id (first on line {side.rows[key][0]})",
                    file=path,
                    line=number,
                    field="id",
                )
            )
            continue
        answer_field = "answer" if "answer" in line else "output"
        answer = line.get(answer_field)
        if not isinstance(answer, str):
            problems.append(
                InputError(
                    "missing answer: give 'answer' (or 'output') as a string",
                    file=path,
                    line=number,
                    field=answer_field,
                )
            )
            continue
        for name in ("question", "reference", "model"):
            if line.get(name) is not None and not isinstance(line[name], str):
                problems.append(InputError("must be a string", file=path, line=number, field=name))
        for name, message in too_long(line):
            problems.append(InputError(message, file=path, line=number, field=name))
        side.rows[key] = (number, answer, line)
    _raise(problems, path)
    if not side.rows:
        raise InputError("no outputs", file=path)
    return side


def _join(a: _Side, b: _Side, model_a: str | None, model_b: str | None) -> JoinedPairs:
    """Pairs for the ids in both files, in A's order; question and reference may come from either."""
    problems: list[InputError] = []
    pairs: list[dict[str, Any]] = []
    for key, (line_a, answer_a, row_a) in a.rows.items():
        if key not in b.rows:
            continue
        line_b, answer_b, row_b = b.rows[key]
        pair: dict[str, Any] = {"id": key, "answer_a": answer_a, "answer_b": answer_b}
        for name, required in (("question", True), ("reference", False)):
            value, problem = _shared_field(
                name, row_a, row_b, a.path, line_a, b.path, line_b, required=required
            )
            if problem is not None:
                problems.append(problem)
            elif value is not None:
                pair[name] = value
        pair["model_a"] = model_a or row_a.get("model")
        pair["model_b"] = model_b or row_b.get("model")
        pairs.append(pair)
    _raise(problems, None)
    only_in_a = [key for key in a.rows if key not in b.rows]
    only_in_b = [key for key in b.rows if key not in a.rows]
    if not pairs:
        raise InputError(
            f"no id appears in both files ({len(a.rows)} ids in {a.path}, {len(b.rows)} in {b.path})",
            field="id",
        )
    return JoinedPairs(a.path, b.path, pairs, only_in_a, only_in_b)


def _shared_field(  # noqa: PLR0917  two rows and where each came from
    name: str,
    row_a: Mapping[str, Any],
    row_b: Mapping[str, Any],
    path_a: Path,
    line_a: int,
    path_b: Path,
    line_b: int,
    *,
    required: bool,
) -> tuple[str | None, InputError | None]:
    value_a, value_b = row_a.get(name), row_b.get(name)
    if value_a is not None and value_b is not None and value_a != value_b:
        return None, InputError(
            f"differs from {path_b}:{line_b} for the same id; A and B must answer the same {name}",
            file=path_a,
            line=line_a,
            field=name,
        )
    value = value_a if value_a is not None else value_b
    if value is None and required:
        return None, InputError(
            f"missing in both files (also {path_b}:{line_b})", file=path_a, line=line_a, field=name
        )
    return value, None


def _raise(problems: list[InputError], path: Path | None) -> None:
    if problems:
        raise problems_error(problems, path)
