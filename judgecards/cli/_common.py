"""Options and helpers shared by subcommands: the database and cards options, the error budget
behind the exit status of a run, and the warnings a run prints once."""

from __future__ import annotations

import functools
import gc
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from judgecards.cards import Card

__all__ = [
    "ErrorBudget",
    "cards_dir_option",
    "claim_process",
    "connection_options",
    "db_option",
    "deprecated",
    "finish_run",
    "freeze_heap",
    "input_limit",
    "items_argument",
    "judge_run_options",
    "max_errors_option",
    "max_input_chars_option",
    "mock_banner",
    "oversized_inputs",
    "plan_database",
    "prices_option",
    "renamed_option",
    "warn_if_uncalibrated",
]

F = TypeVar("F", bound=Callable[..., Any])

EXIT_ERRORS = 1
"""A run finished, but more items than ``--max-errors`` allows are error records."""


@contextmanager
def plan_database(db: Path, plan: bool) -> Iterator[Any]:
    """What a command passes as its ``db``: ``db`` itself for a run; for a ``--plan``, which only
    reads what is already judged (free), the database opened read-only, or an empty one in
    memory when it does not exist yet, so a plan never creates or changes a database."""
    if not plan:
        yield db
        return
    from judgecards.storage import Store

    with Store(db, read_only=True) if db.is_file() else Store(":memory:") as store:
        yield store


@contextmanager
def command_judge(
    card: str | Card, model: str, *, db: Path, plan: bool, **options: Any
) -> Iterator[Any]:
    """The `Judge` a ``score`` or ``compare`` run uses, closed when done. A ``--plan`` makes no
    call, so it needs no API key: the offline stand-in has the same keys (as a provider, not
    ``offline=True``, which ``--no-cache`` would contradict), and the database is
    `plan_database`'s."""
    from judgecards.judging import Judge, replay_stand_in

    stand_in = replay_stand_in(model) if plan else None
    with plan_database(db, plan) as database:
        with Judge(card, model, db=database, provider=stand_in, **options) as judge:
            yield judge


def _check_db_directory(ctx: click.Context, param: click.Parameter, value: Path) -> Path:
    # Checked while parsing, so a typo in --db fails before anything is read, judged or created.
    parent = value.parent
    if not parent.is_dir():
        what = "is not a directory" if parent.exists() else "does not exist"
        raise click.BadParameter(f"the directory {str(parent)!r} {what}", ctx, param)
    return value


def deprecated(old: str, new: str) -> None:
    """One line on stderr for an old spelling that still works for one release.

    Not a `DeprecationWarning`: Python hides those outside ``__main__``, and a person running a
    script needs to see which line of it to change.
    """
    click.echo(
        f"Warning: {old} is deprecated and will be removed in the next release: use {new}",
        err=True,
    )


def renamed_option(old: str, new: str) -> Callable[[F], F]:
    """A hidden option spelled ``old`` that sets the command's option ``new`` (same value type),
    after a `deprecated` line: scripts written for the old name keep working for one release.

    Apply it below the ``new`` option (closer to the function). Both given with different values
    is a usage error rather than a silent choice.
    """
    new_name = new.lstrip("-").replace("-", "_")
    old_name = "deprecated_" + old.lstrip("-").replace("-", "_")

    def decorator(function: F) -> F:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            value = kwargs.pop(old_name)
            if value is not None:
                deprecated(old, new)
                if kwargs.get(new_name) not in (None, value):
                    raise click.UsageError(f"{old} is the old spelling of {new}: give {new} only")
                kwargs[new_name] = value
            return function(*args, **kwargs)

        option = click.option(old, old_name, hidden=True, default=None, help=f"Now {new}.")
        return option(wrapper)  # type: ignore[return-value]

    return decorator


def connection_options(function: F) -> F:
    """``--base-url`` and ``--timeout``: where the provider is and how long a request may take
    (keyword arguments ``base_url`` and ``timeout``), for every command that calls a judge."""
    function = click.option(
        "--timeout", default=60.0, show_default=True, type=float, help="Seconds per request."
    )(function)
    return click.option(
        "--base-url", default=None, help="Server URL (else OPENAI_BASE_URL / ANTHROPIC_BASE_URL)."
    )(function)


def judge_run_options(unit: str) -> Callable[[F], F]:
    """``--concurrency``, ``--max-attempts`` and ``--no-cache`` for a run that judges ``unit``s
    (keyword arguments ``concurrency``, ``max_attempts``, ``no_cache``)."""

    def decorator(function: F) -> F:
        function = click.option(
            "--no-cache",
            is_flag=True,
            help=f"Call the provider even for {unit}s already judged or cached.",
        )(function)
        function = click.option(
            "--max-attempts",
            default=3,
            show_default=True,
            type=click.IntRange(1, 20),
            help=f"Judge replies per {unit}, re-asks included.",
        )(function)
        return click.option(
            "--concurrency",
            default=8,
            show_default=True,
            type=click.IntRange(1, 1024),
            help="Calls in flight at once.",
        )(function)

    return decorator


def items_argument(function: F) -> F:
    """The ``ITEMS`` file every command that judges items takes, as its one positional argument
    (keyword argument ``items_path``), as ``eval CONFIG`` and ``labels import FILE`` take theirs.
    ``--input ITEMS``, the old spelling, still works for one release (hidden, one deprecation
    line)."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        old = kwargs.pop("deprecated_input")
        if old is not None:
            deprecated("--input ITEMS", "ITEMS (the file as the argument)")
            if kwargs["items_path"] is not None:
                raise click.UsageError(
                    "--input is the old spelling of the ITEMS argument: give one"
                )
            kwargs["items_path"] = old
        if kwargs["items_path"] is None:
            raise click.UsageError("Missing argument 'ITEMS': the JSONL file of items to judge")
        return function(*args, **kwargs)

    existing = click.Path(dir_okay=False, exists=True, path_type=Path)
    decorated: Any = click.option(
        "--input", "deprecated_input", type=existing, hidden=True, help="Now the ITEMS argument."
    )(wrapper)
    argument = click.argument("items_path", metavar="ITEMS", required=False, type=existing)
    return argument(decorated)  # type: ignore[no-any-return]


def db_option(function: F) -> F:
    return click.option(
        "--db",
        type=click.Path(dir_okay=False, path_type=Path),
        envvar="JUDGECARDS_DB",
        default="judgecards.db",
        show_default=True,
        callback=_check_db_directory,
        help="SQLite database for results, cache and labels (env JUDGECARDS_DB).",
    )(function)


def cards_dir_option(function: F) -> F:
    return click.option(
        "--cards-dir",
        "cards_dirs",
        multiple=True,
        type=click.Path(file_okay=False, exists=True, path_type=Path),
        help="Extra directory of judge cards (repeatable; env JUDGECARDS_CARDS_DIR).",
    )(function)


@dataclass(frozen=True)
class ErrorBudget:
    """How many error records a run may end with and still exit 0: a count or a share.

    ``ErrorBudget()`` tolerates none. ``count=3`` tolerates three; ``percent=5`` tolerates up
    to 5% of the items (rounded down: 5% of 30 items tolerates 1).
    """

    count: int = 0
    percent: float | None = None

    def allows(self, errors: int, total: int) -> bool:
        if self.percent is not None:
            return errors * 100 <= self.percent * total
        return errors <= self.count

    def __str__(self) -> str:
        if self.percent is not None:
            return f"{self.percent:g}%"
        return str(self.count)


class _ErrorBudgetType(click.ParamType[ErrorBudget]):
    name = "N|P%"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> ErrorBudget:
        if isinstance(value, ErrorBudget):
            return value
        text = str(value).strip()
        match = re.fullmatch(r"(\d+(?:\.\d+)?)%|(\d+)", text)
        if match is None:
            self.fail(f"{value!r} is not a count (e.g. 3) or a percentage (e.g. 5%)", param, ctx)
        if match.group(2) is not None:
            return ErrorBudget(count=int(match.group(2)))
        percent = float(match.group(1))
        if percent > 100:
            self.fail(f"{value!r} is more than 100%", param, ctx)
        return ErrorBudget(percent=percent)


def max_errors_option(function: F) -> F:
    return click.option(
        "--max-errors",
        "max_errors",
        type=_ErrorBudgetType(),
        default="0",
        show_default=True,
        help="Error records tolerated before the exit status is 1: a count (3) or a share (5%).",
    )(function)


def max_input_chars_option(function: F) -> F:
    from judgecards.cards import DEFAULT_MAX_INPUT_CHARS

    return click.option(
        "--max-input-chars",
        "max_input_chars",
        type=click.IntRange(0),
        default=DEFAULT_MAX_INPUT_CHARS,
        show_default=True,
        help="Longest input accepted, in characters (0: no limit). Longer inputs are refused "
        "before any call.",
    )(function)


def _load_prices(ctx: click.Context, param: click.Parameter, value: Path | None) -> Any:
    # Read and validated while parsing: a bad price file fails (exit 2) before any call.
    from judgecards.limits import load_prices

    return load_prices(value) if value is not None else None


def prices_option(function: F) -> F:
    return click.option(
        "--prices",
        type=click.Path(dir_okay=False, path_type=Path),
        callback=_load_prices,
        help="YAML price file over the shipped table (env JUDGECARDS_PRICES); models with no "
        "price cost 'unknown'.",
    )(function)


def input_limit(max_input_chars: int) -> int | None:
    """The option's value as `judgecards.Judge` takes it (``None``: no limit)."""
    return max_input_chars or None


def oversized_inputs(
    fields: Mapping[str, str], limit: int | None
) -> Callable[[Mapping[str, Any]], list[tuple[str, str]]]:
    """An item check (`judgecards.judging.jsonl.read_items`) naming every input over ``limit``.

    Args:
        fields: line field -> the card input it becomes (for messages).
        limit: characters; ``None`` checks nothing.
    """
    from judgecards.cards import input_size

    def check(item: Mapping[str, Any]) -> list[tuple[str, str]]:
        if limit is None:
            return []
        problems = []
        for field, name in fields.items():
            value = item.get(field)
            if value is not None and (size := input_size(value)) > limit:
                target = "" if name == field else f" (input {name!r})"
                problems.append(
                    (field, f"{size:,} characters{target}, over --max-input-chars {limit:,}")
                )
        return problems

    return check


def finish_run(
    kinds: Mapping[str, int], total: int, budget: ErrorBudget, *, unit: str = "items"
) -> None:
    """Say how many error records a run left and exit 1 unless ``budget`` tolerates them.

    Exit statuses (README, "Exit status"): 0 every item has a valid result, or the error records
    are within ``--max-errors``; 1 too many error records; 2 usage or input errors (raised
    before anything runs); 130 interrupted.
    """
    errors = sum(kinds.values())
    if errors == 0:
        return
    listed = ", ".join(f"{kind} {n}" for kind, n in sorted(kinds.items(), key=lambda kv: -kv[1]))
    headline = f"{errors} of {total} {unit} ended as error records ({listed})"
    if budget.allows(errors, total):
        click.echo(f"{headline}; within --max-errors {budget}.", err=True)
        return
    click.echo(
        f"{headline}; exit status 1 (--max-errors {budget} tolerates fewer). "
        "Run again to retry them: finished items are not judged again.",
        err=True,
    )
    raise click.exceptions.Exit(EXIT_ERRORS)


def warn_if_uncalibrated(judge: Any) -> None:
    """Once per run: warn when the judge's card version was never calibrated for its model."""
    from calibration.audits import warn_if_uncalibrated as warn

    warn(judge, stacklevel=2)


def mock_banner(model: str) -> None:
    if model.startswith("mock:"):
        from judgecards.providers.mock import MOCK_BANNER

        line = "=" * len(MOCK_BANNER)
        click.secho(f"{line}\n{MOCK_BANNER}\n{line}", fg="yellow", bold=True, err=True)


@dataclass
class _Process:
    """Whether this process ends when the command does (the ``judgecards`` entry point)."""

    owned: bool = False


_PROCESS = _Process()


def claim_process() -> None:
    """Called by the entry point: the process ends with the command it runs."""
    _PROCESS.owned = True


def freeze_heap() -> None:
    """Hide what was allocated so far from the collector (`gc.freeze`), when the process ends
    with the command: imports build hundreds of thousands of objects that live until exit, and
    the collector re-scanned them over and over. Frozen objects are never freed, which a caller
    running the CLI inside its own process (tests, a service) could not afford: there it does
    nothing."""
    if _PROCESS.owned:
        gc.freeze()
