"""What a run tells a CI system: JUnit XML, a Markdown step summary and GitHub annotations.

``score``, ``compare``, ``eval`` and ``audit report`` describe their run as a `CiRun`: one
`CiCase` per item, pair or gate. A case is an *error* when the item ended as an error record and
a *failure* only where the command itself has a pass/fail notion: an item a tier of ``eval``
failed, or an audit gate that failed. An item or pair a ``--max-cost`` cap left unstarted is
*skipped* (JUnit ``<skipped>``): it was never judged, so it neither passed nor erred, and a
re-run with a higher cap judges it. A verdict of ``score`` or a winner of ``compare`` is a
measurement, not a test outcome; a run that should fail on verdicts is an ``eval`` with a judge
tier. The exit status stays the CLI's (README, "Exit status"): these files only describe the run.

Everything shown comes from untrusted text (item ids, judge replies, error messages), so each
format escapes it its own way: XML through `xml.etree` with the characters XML 1.0 forbids
removed, Markdown with every ASCII punctuation character backslash-escaped (no HTML, no links,
no broken tables), annotations with GitHub's workflow-command escaping.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal, TypeVar

import click

from judgecards.cli._common import deprecated
from judgecards.cli._output import OutputFile
from judgecards.errors import OutputError

__all__ = [
    "CiCase",
    "CiOutputs",
    "CiRun",
    "Outcome",
    "ci_output_options",
    "github_annotations",
    "junit_xml",
    "markdown_summary",
]

F = TypeVar("F", bound=Callable[..., Any])

Outcome = Literal["passed", "failure", "error", "skipped"]

# Patterns, compiled (and cached by `re`) when first used: every run imports this module, few
# write CI outputs, and compiling these ranges was a tenth of the module's import.
# XML 1.0 allows tab, LF, CR and these ranges only; anything else (NUL, ESC, lone surrogates
# from a JSON "\ud800") would make the file unreadable, so it is dropped.
_NOT_XML = "[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
# Control characters other than tab, LF and CR: kept out of Markdown and terminal annotations.
_CONTROL = "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]"
_PUNCTUATION = r"([!-/:-@\[-`{-~])"

_DETAILS_CHARS = 4000
_CELL_CHARS = 200
_TABLE_ROWS = 50
# GitHub shows at most 10 annotations of each level per step; the last one says what was cut.
_ANNOTATIONS_PER_LEVEL = 10


@dataclass(frozen=True)
class CiCase:
    """One item, pair or gate of a run, as a CI system sees it.

    Attributes:
        name: the item's id (or its position when it has none).
        outcome: ``passed``, ``failure``, ``error`` or ``skipped`` (not judged under a cap).
        kind: why, in one word (an ``error_kind``, the deciding tier): the JUnit ``type``.
        message: one line saying what happened.
        details: longer text (an error, the judge's raw reply), cut to a few thousand characters.
        seconds: time spent on it, when known.
        properties: facts worth a column (verdict, scores, deciding tier, result id).
    """

    name: str
    outcome: Outcome = "passed"
    kind: str = ""
    message: str = ""
    details: str = ""
    seconds: float = 0.0
    properties: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class CiRun:
    """A finished run of one command.

    Attributes:
        command: ``score``, ``compare``, ``eval`` or ``audit report``.
        subject: what was run, e.g. ``reference@1 on openai:gpt-4o``.
        cases: one per item, pair or gate, in input order.
        seconds: the run's wall time.
        facts: headline numbers for the Markdown summary, as (label, value).
        failure_level: the annotation a failure gets: ``error`` where a failure sets the exit
            status (an audit gate), ``warning`` where it is an outcome (an ``eval`` item).
    """

    command: str
    subject: str
    cases: tuple[CiCase, ...]
    seconds: float = 0.0
    facts: tuple[tuple[str, str], ...] = ()
    failure_level: Literal["error", "warning"] = "warning"

    def count(self, outcome: Outcome) -> int:
        return sum(1 for case in self.cases if case.outcome == outcome)


# --------------------------------------------------------------------------- JUnit XML


def _xml_text(text: str, limit: int | None = None) -> str:
    clean = re.sub(_NOT_XML, "", text)
    if limit is not None and len(clean) > limit:
        clean = clean[:limit] + f" … ({len(clean) - limit} more characters)"
    return clean


def _one_line(text: str) -> str:
    return " ".join(text.split())


def junit_xml(run: CiRun, *, timestamp: datetime | None = None) -> str:
    """The run as JUnit XML, in the shape pytest's ``--junitxml`` writes.

    ``<testsuites>`` holds one ``<testsuite>`` with ``tests``, ``failures``, ``errors``,
    ``skipped``, ``time``, ``timestamp`` and ``hostname``; each case is a ``<testcase>`` with
    ``classname``, ``name`` and ``time``, its facts as ``<properties>``, and an ``<error>``,
    ``<failure>`` or ``<skipped>`` (``message`` and ``type`` attributes, details as text) when it
    did not pass.
    """
    import platform
    import xml.etree.ElementTree as ET

    when = timestamp or datetime.now(timezone.utc)
    classname = "judgecards." + run.command.replace(" ", ".")
    root = ET.Element("testsuites", {"name": "judgecards"})
    suite = ET.SubElement(
        root,
        "testsuite",
        {
            "name": _xml_text(f"judgecards {run.command}: {run.subject}"),
            "errors": str(run.count("error")),
            "failures": str(run.count("failure")),
            "skipped": str(run.count("skipped")),
            "tests": str(len(run.cases)),
            "time": f"{run.seconds:.3f}",
            "timestamp": when.isoformat(),
            "hostname": _xml_text(platform.node()),
        },
    )
    for case in run.cases:
        element = ET.SubElement(
            suite,
            "testcase",
            {"classname": classname, "name": _xml_text(case.name), "time": f"{case.seconds:.3f}"},
        )
        if case.properties:
            properties = ET.SubElement(element, "properties")
            for name, value in case.properties:
                ET.SubElement(
                    properties, "property", {"name": _xml_text(name), "value": _xml_text(value)}
                )
        if case.outcome != "passed":
            problem = ET.SubElement(
                element,
                case.outcome,
                {"message": _xml_text(_one_line(case.message)), "type": _xml_text(case.kind)},
            )
            problem.text = _xml_text(case.details or case.message, _DETAILS_CHARS)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode")


# --------------------------------------------------------------------------- Markdown


def _md(text: str, limit: int = _CELL_CHARS) -> str:
    """Literal text in a Markdown table cell: one line, no HTML, no markup, no ``|``."""
    clean = _one_line(re.sub(_CONTROL, " ", text))
    if len(clean) > limit:
        clean = clean[:limit] + "…"
    return re.sub(_PUNCTUATION, r"\\\1", clean)


def markdown_summary(run: CiRun) -> str:
    """A GitHub step summary: a headline, the run's numbers and the cases that did not pass."""
    errors, failures = run.count("error"), run.count("failure")
    status = "passed" if not (errors or failures) else f"{errors} error(s), {failures} failure(s)"
    if run.count("skipped"):
        status += f", {run.count('skipped')} not judged"
    lines = [
        f"### judgecards {run.command}: {_md(run.subject)}",
        "",
        f"**{_md(status)}** in {len(run.cases)} case(s), {run.seconds:.1f} s",
        "",
        "| | |",
        "|---|---|",
    ]
    lines += [f"| {_md(label)} | {_md(value)} |" for label, value in run.facts]
    problems = [case for case in run.cases if case.outcome != "passed"]
    if problems:
        lines += ["", "| case | outcome | kind | message |", "|---|---|---|---|"]
        for case in problems[:_TABLE_ROWS]:
            lines.append(
                f"| {_md(case.name)} | {case.outcome} | {_md(case.kind)} | {_md(case.message)} |"
            )
        if len(problems) > _TABLE_ROWS:
            lines.append(f"\n{len(problems) - _TABLE_ROWS} more not listed (see the JUnit file).")
    return "\n".join(lines) + "\n\n"


# --------------------------------------------------------------------------- annotations


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _annotation(level: str, title: str, message: str) -> str:
    title, message = (re.sub(_CONTROL, " ", text) for text in (title, message))
    return f"::{level} title={_escape_property(title)}::{_escape_data(message)}"


def github_annotations(run: CiRun) -> list[str]:
    """GitHub workflow commands: ``::error`` for error records and failed gates, ``::warning``
    for items a tier of ``eval`` failed (an outcome that does not change the exit status) and for
    items a cost cap left unjudged.

    At most ten of each level, GitHub's limit per step; the tenth then says how many were cut.
    """
    levels: dict[str, list[CiCase]] = {"error": [], "warning": []}
    for case in run.cases:
        if case.outcome == "error":
            levels["error"].append(case)
        elif case.outcome == "failure":
            levels[run.failure_level].append(case)
        elif case.outcome == "skipped":
            levels["warning"].append(case)
    lines: list[str] = []
    for level, cases in levels.items():
        shown = cases
        if len(cases) > _ANNOTATIONS_PER_LEVEL:
            shown = cases[: _ANNOTATIONS_PER_LEVEL - 1]
        for case in shown:
            title = f"judgecards {run.command}: {case.name}" + (
                f" ({case.kind})" if case.kind else ""
            )
            lines.append(_annotation(level, title, case.message or case.outcome))
        if len(shown) < len(cases):
            more = len(cases) - len(shown)
            lines.append(
                _annotation(
                    level,
                    f"judgecards {run.command}: {more} more",
                    f"{more} more case(s) at this level are not annotated; see the run's output.",
                )
            )
    return lines


# --------------------------------------------------------------------------- the options


_CI_KINDS = {"junit": "FILE", "summary": "FILE", "github": None}
_CI_HELP = (
    "A CI output of the run (repeatable): junit=FILE writes JUnit XML, one test case per item "
    "(pair, gate); summary=FILE appends a Markdown summary (e.g. "
    '"summary=$GITHUB_STEP_SUMMARY"); github prints ::error / ::warning annotations for '
    "GitHub Actions."
)


def _ci_values(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> dict[str, Path | None]:
    """``--ci`` values as ``{kind: path}`` (checked while parsing: exit 2 before any work)."""
    chosen: dict[str, Path | None] = {}
    for value in values:
        kind, sep, path = value.partition("=")
        if kind not in _CI_KINDS:
            raise click.BadParameter(
                f"{value!r}: give junit=FILE, summary=FILE or github", ctx, param
            )
        if (_CI_KINDS[kind] is None) != (not sep) or (sep and not path):
            form = f"{kind}=FILE" if _CI_KINDS[kind] else kind
            raise click.BadParameter(f"{value!r}: write it as {form}", ctx, param)
        if kind in chosen:
            raise click.BadParameter(f"{kind} given more than once", ctx, param)
        chosen[kind] = Path(path) if sep else None
    return chosen


def ci_output_options(function: F) -> F:
    """``--ci KIND[=FILE]`` (repeatable) for a command that ends with a `CiRun`: the command
    receives keyword arguments ``junit``, ``summary_md`` and ``output_format``, as it did from
    the old ``--junit``, ``--summary-md`` and ``--format``, which still work for one release
    (hidden, with a deprecation line)."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        chosen: dict[str, Path | None] = kwargs.pop("ci")
        old = {
            "junit": ("--junit", kwargs.pop("deprecated_junit"), "junit=FILE"),
            "summary": ("--summary-md", kwargs.pop("deprecated_summary_md"), "summary=FILE"),
            "github": ("--format", kwargs.pop("deprecated_format"), "github"),
        }
        for kind, (option, value, new) in old.items():
            if value is None:
                continue
            deprecated(option, f"--ci {new}")
            if kind in chosen:
                raise click.UsageError(f"{option} is the old spelling of --ci {new}: give one")
            if kind != "github":
                chosen[kind] = value
            elif value == "github":
                chosen[kind] = None
        kwargs["junit"] = chosen.get("junit")
        kwargs["summary_md"] = chosen.get("summary")
        kwargs["output_format"] = "github" if "github" in chosen else "text"
        return function(*args, **kwargs)

    path = click.Path(dir_okay=False, path_type=Path)
    options = [
        click.option(
            "--ci", "ci", multiple=True, metavar="KIND[=FILE]", callback=_ci_values, help=_CI_HELP
        ),
        click.option("--junit", "deprecated_junit", type=path, hidden=True, help="Now --ci."),
        click.option(
            "--summary-md", "deprecated_summary_md", type=path, hidden=True, help="Now --ci."
        ),
        click.option(
            "--format",
            "deprecated_format",
            type=click.Choice(["text", "github"]),
            hidden=True,
            help="Now --ci github.",
        ),
    ]
    decorated: Any = wrapper
    for option in reversed(options):
        decorated = option(decorated)
    return decorated  # type: ignore[no-any-return]


class CiOutputs:
    """The CI outputs one run asked for, checked before any call and written after the run.

    Args:
        junit: ``--ci junit=FILE``, replaced atomically.
        summary_md: ``--ci summary=FILE``, appended to (GitHub collects a step's summary that
            way).
        output_format: ``github`` (``--ci github``) prints annotations to stdout.
    """

    def __init__(self, junit: Path | None, summary_md: Path | None, output_format: str) -> None:
        self.junit = OutputFile(junit, option="--ci junit") if junit is not None else None
        self.summary = (
            OutputFile(summary_md, option="--ci summary") if summary_md is not None else None
        )
        self.github = output_format == "github"

    def check(self, *, as_json: bool = False, others: Sequence[Path | None] = ()) -> None:
        """Refuse unusable paths and combinations before anything is opened or called.

        Args:
            as_json: the command prints JSON, which annotation lines would break.
            others: the command's other output paths, which these must not overwrite.

        Raises:
            click.UsageError: ``--ci github`` with ``--json``.
            OutputError: a path cannot be written, or two outputs are the same file.
        """
        if as_json and self.github:
            raise click.UsageError("--ci github prints annotations, which would break --json")
        seen = {os.path.abspath(path) for path in others if path is not None}
        for output in (self.junit, self.summary):
            if output is None:
                continue
            where = os.path.abspath(output.path)
            if where in seen:
                raise OutputError(
                    f"{output.option} is also another output of this run", file=output.path
                )
            seen.add(where)
            output.check()

    def emit(self, run: CiRun) -> None:
        """Write the JUnit file, append the summary and print the annotations."""
        if self.junit is not None:
            self.junit.write_lines([junit_xml(run)])
        if self.summary is not None:
            _append(self.summary, markdown_summary(run))
        if self.github:
            for line in github_annotations(run):
                click.echo(line)


def _append(output: OutputFile, text: str) -> None:
    # One write of the whole section: a summary is never interleaved with another step's.
    try:
        with output.path.open("a", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as error:
        raise OutputError(f"cannot append: {error.strerror or error}", file=output.path) from None
