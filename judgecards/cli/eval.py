"""``judgecards eval CONFIG``: tiered evaluation from a YAML or TOML config.

The config's keys and its loader are in `judgecards.tiered.config`; the pipeline in
`judgecards.tiered`. This module is the command: check everything, run, print and write.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import click

from judgecards.cli._common import db_option, fail, mock_banner
from judgecards.errors import InputError, JudgecardsError


class _LazyBar:
    """A progress bar for the judge tier, opened on the first judged item (its total is known then)."""

    def __init__(self) -> None:
        self.bar: Any = None

    def __call__(self, done: int, total: int, result: Any) -> None:
        if self.bar is None:
            self.bar = click.progressbar(
                length=total, label="judging", file=sys.stderr, show_pos=True
            )
            self.bar.__enter__()
        self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)


@click.command("eval")
@click.argument(
    "config_path", metavar="CONFIG", type=click.Path(dir_okay=False, exists=True, path_type=Path)
)
@click.option(
    "--output",
    "output_path",
    default=None,
    type=click.Path(dir_okay=False, path_type=Path),
    help="JSONL with one row per item, in input order: outcome, deciding tier, reasons, metric values, judge result.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the report (per tier and per item) as JSON instead of a table.",
)
@click.option(
    "--model",
    default=None,
    help="Judge model as provider:model for every judge tier, replacing the config's "
    "(e.g. run a config written for mock:judge on openai:gpt-4o).",
)
@db_option
def eval_command(
    config_path: Path, output_path: Path | None, as_json: bool, model: str | None, db: Path
) -> None:
    """Tiered evaluation: format checks, then metrics, then a judge on the survivors only.

    CONFIG is a YAML or TOML file naming the items (JSONL) and the tiers; see `judgecards.tiered.config`
    or the README for its keys. Each tier sees only the items the earlier tiers passed, so every
    item a cheap check decides is a judge call saved. The config and every item line are checked
    before any call. Exit status: 0 when the run completed, 2 for a bad config or items file.
    """
    from judgecards.tiered.config import build_pipeline, check_fields, load_config, read_items

    try:
        if output_path is not None and not output_path.resolve().parent.is_dir():
            raise InputError("the output's directory does not exist", file=output_path)
        config, source = load_config(config_path)
        items_path = Path(config.items)
        if not items_path.is_absolute():
            items_path = config_path.parent / items_path
        pipeline = build_pipeline(config, source, db=db, model=model)
        items = read_items(items_path, source)
        check_fields(config, source, pipeline, items, items_path)
    except JudgecardsError as error:
        fail(error)
    judge = pipeline.judge
    model = judge.judge.model if judge is not None else None
    if model:
        mock_banner(model)
    stages = " -> ".join(stage.name for stage in pipeline.tiers)
    click.echo(
        f"Evaluating {len(items)} items from {items_path}: {stages}"
        + (f" (db {db})" if judge else ""),
        err=True,
    )

    started = time.perf_counter()
    bar = _LazyBar()
    try:
        report = pipeline.run(items, progress=bar)
    except JudgecardsError as error:
        bar.close()
        fail(error)
    bar.close()
    elapsed = time.perf_counter() - started

    if output_path is not None:
        tmp = output_path.with_name(output_path.name + ".tmp")
        with tmp.open("w", encoding="utf-8") as handle:
            for outcome in report.items:
                handle.write(json.dumps(outcome.to_dict()) + "\n")
        os.replace(tmp, output_path)
    if as_json:
        data = {"config": str(config_path), "items_file": str(items_path), "output": str(output_path) if output_path else None,
                "elapsed_s": round(elapsed, 3), **report.to_dict()}  # fmt: skip
        click.echo(json.dumps(data, indent=2))
    else:
        click.echo(report.as_text())
        where = (
            f" -> {output_path}"
            if output_path is not None
            else " (--output FILE keeps one row per item)"
        )
        click.echo(f"\n{len(items)} items in {elapsed:.1f}s{where}")
    if model:
        mock_banner(model)
