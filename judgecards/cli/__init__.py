"""The ``judgecards`` command. Subcommands live in their own modules and are imported only when
run, so ``judgecards --help`` starts fast (no SDK, pydantic or numpy import).

Errors are handled here, once: a `JudgecardsError` from any command (a bad input line, an unknown
card, a missing API key, an unusable database or output path) prints ``Error: ...`` and exits 2;
Ctrl-C exits 130 (batch commands first say what was saved). Commands raise, they do not exit.
Warnings print as one line, ``Warning: ...``, not as Python source lines.
"""

from __future__ import annotations

import gc
import importlib
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from judgecards.errors import JudgecardsError
from judgecards.storage import import_without_dataframe_libraries

__all__ = ["main"]

# name -> (module, attribute, one-line help shown by --help without importing the module)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "align": (
        "judgecards.cli.align",
        "align",
        "Align a judge card to its human labels: try examples and guidelines, write the best.",
    ),
    "audit": (
        "judgecards.cli.audit",
        "audit",
        "Spot-check judge drift against human labels: sample, ingest, report, rerun.",
    ),
    "batch": (
        "judgecards.cli.batch",
        "batch",
        "Provider batches (half price): submit, list, status, collect and cancel them.",
    ),
    "cards": ("judgecards.cli.cards", "cards", "List, show and lock judge cards."),
    "cascade": (
        "judgecards.cli.score",
        "cascade",
        "Judge a JSONL file down several models, each trusted only where people agree with it.",
    ),
    "compare": (
        "judgecards.cli.compare",
        "compare",
        "A/B-compare two output files with a pairwise judge, both orders.",
    ),
    "cost": (
        "judgecards.cli.cost",
        "cost",
        "What stored results cost, totalled by card, judge model or day.",
    ),
    "demo": (
        "judgecards.cli.demo",
        "demo",
        "Real judges against real human labels, offline: what judgecards tells a team.",
    ),
    "estimate": (
        "judgecards.cli.estimate",
        "estimate",
        "A judge's scores, verdict shares and win rates corrected with human labels (PPI++).",
    ),
    "eval": (
        "judgecards.cli.eval",
        "eval_command",
        "Tiered evaluation: format checks, then metrics, then a judge on survivors only.",
    ),
    "export": (
        "judgecards.cli.export",
        "export",
        "Write stored results, comparisons or labels as JSONL, CSV or Parquet.",
    ),
    "rank": (
        "judgecards.cli.rank",
        "rank",
        "Bradley–Terry or Elo ratings over stored pairwise comparisons.",
    ),
    "import": (
        "judgecards.cli.import_",
        "import_group",
        "Turn OpenAI Evals graders or a promptfoo config into judge cards and eval configs.",
    ),
    "labels": ("judgecards.cli.labels", "labels", "Import and export human labels (CSV or JSONL)."),
    "report": (
        "judgecards.cli.report",
        "report",
        "Write the judge report (plots and tables) as one self-contained HTML file.",
    ),
    "score": (
        "judgecards.cli.score",
        "score",
        "Judge every item of a JSONL file with one card and model.",
    ),
    "serve": (
        "judgecards.cli.serve",
        "serve",
        "Serve labeling queues, reports and the JSON API over the database; manage its tokens.",
    ),
}


EXIT_USAGE = 2
"""Usage or input error: nothing was judged (click's own usage errors exit 2 as well)."""
EXIT_INTERRUPTED = 130
"""Interrupted (SIGINT / Ctrl-C), as a shell reports 128 + 2."""


def _one_line_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    line: str | None = None,
) -> str:
    return f"Warning: {message}\n"


@contextmanager
def _one_line_warnings() -> Iterator[None]:
    # formatwarning, not showwarning: pytest's and the user's warning capture keep working.
    previous = warnings.formatwarning
    warnings.formatwarning = _one_line_warning
    try:
        yield
    finally:
        warnings.formatwarning = previous


@contextmanager
def _collector_paused() -> Iterator[None]:
    """No garbage collection while a command's modules are imported, and what they made frozen
    afterwards (`freeze_heap`): an import allocates objects that live as long as the process and
    no garbage, and the collector re-scanned them some twenty times during a run's start-up
    (~30 ms)."""
    from judgecards.cli._common import freeze_heap

    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        freeze_heap()
        if collecting:
            gc.enable()


class LazyGroup(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        with _one_line_warnings():
            try:
                return super().invoke(ctx)
            except JudgecardsError as error:
                click.echo(f"Error: {error}", err=True)
                ctx.exit(EXIT_USAGE)
            except KeyboardInterrupt:
                click.echo("\nInterrupted.", err=True)
                ctx.exit(EXIT_INTERRUPTED)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module, attribute, _ = COMMANDS[name]
        with _collector_paused():
            # The process is ours: sqlite-utils without the pandas/numpy it would import (~0.7 s).
            import_without_dataframe_libraries()
            command: click.Command = getattr(importlib.import_module(module), attribute)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][2]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup)
@click.version_option(package_name="judgecards")
def cli() -> None:
    """judgecards: LLM-as-a-judge with versioned judge cards and calibration.

    Results, the response cache and human labels live in one SQLite file: --db, else
    $JUDGECARDS_DB, else ./judgecards.db.
    """


def main(argv: list[str] | None = None) -> Any:
    """The ``judgecards`` program (`python -m judgecards`, the console script): without ``argv``
    the process is the command's, and ends with it."""
    if argv is None:
        from judgecards.cli._common import claim_process

        claim_process()
    return cli.main(args=argv, prog_name="judgecards")
