"""Each command's results as a `CiRun`: which items are errors, which are failures, and what
is worth a column. The rules are in `judgecards.cli._ci_output`'s docstring."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from judgecards.cli._ci_output import CiCase, CiRun, Outcome

if TYPE_CHECKING:
    from calibration.audits import AuditReport
    from judgecards.pairwise.compare import ComparisonResult
    from judgecards.storage import JudgeResult
    from judgecards.tiered.report import TieredReport

__all__ = ["audit_run", "compare_run", "eval_run", "score_run"]


def _name(item_id: str | None, index: int) -> str:
    return item_id if item_id else f"item {index + 1}"


def _scores(scores: dict[str, Any]) -> str:
    return json.dumps(scores, sort_keys=True)


def _counted(counter: Counter[str]) -> str:
    return ", ".join(f"{key} {n}" for key, n in counter.most_common()) or "none"


_NOT_JUDGED = (
    "not judged: its projected cost would pass --max-cost (a re-run with a higher cap judges it)"
)


def _judge_case(name: str, result: JudgeResult) -> CiCase:
    properties = [("result_id", result.id), ("cached", str(result.cached).lower())]
    if result.status == "not_judged":
        return CiCase(name, "skipped", "not_judged", _NOT_JUDGED, properties=tuple(properties))
    if result.status == "error":
        kind = result.error_kind or "error"
        details = result.error or ""
        if result.raw_reply:
            details += f"\n\nThe judge's last reply:\n{result.raw_reply}"
        return CiCase(
            name,
            "error",
            kind,
            f"{kind}: {result.error or 'no usable judgment'}",
            details,
            result.latency_s,
            tuple(properties),
        )
    if result.verdict is not None:
        properties.append(("verdict", result.verdict))
    if result.scores:
        properties.append(("scores", _scores(result.scores)))
    return CiCase(name, "passed", seconds=result.latency_s, properties=tuple(properties))


def score_run(results: Sequence[JudgeResult], *, subject: str, seconds: float) -> CiRun:
    """One case per item: an error record is an error, an item a cap left is skipped; every
    verdict passes."""
    cases = tuple(_judge_case(_name(r.item_id, i), r) for i, r in enumerate(results))
    verdicts = Counter(r.verdict for r in results if r.status == "ok" and r.verdict is not None)
    errors = Counter(str(r.error_kind) for r in results if r.status == "error")
    facts = [
        ("items", str(len(results))),
        ("verdicts", _counted(verdicts)),
        ("error records", _counted(errors)),
        ("not judged (--max-cost)", str(sum(1 for r in results if r.status == "not_judged"))),
        ("served without a call", f"{sum(1 for r in results if r.cached)} of {len(results)}"),
    ]
    return CiRun("score", subject, cases, seconds, tuple(facts))


def compare_run(comparisons: Sequence[ComparisonResult], *, subject: str, seconds: float) -> CiRun:
    """One case per pair: a pair without both judgments is an error, a pair a cap left is
    skipped; any winner passes."""
    cases: list[CiCase] = []
    for index, comparison in enumerate(comparisons):
        name = _name(comparison.pair_id, index)
        properties = (("comparison_id", comparison.id),)
        if comparison.ok:
            cases.append(
                CiCase(
                    name,
                    properties=properties
                    + (
                        ("winner", str(comparison.winner)),
                        ("position_consistent", str(comparison.position_consistent).lower()),
                    ),
                )
            )
            continue
        if comparison.status == "not_judged":
            cases.append(CiCase(name, "skipped", "not_judged", _NOT_JUDGED, properties=properties))
            continue
        failed = [o for o in (comparison.first_order, comparison.second_order) if o.status != "ok"]
        kind = next((o.error_kind for o in failed if o.error_kind), None) or "error"
        details = "\n\n".join(
            f"{o.shown_first} shown first: {o.error_kind}: {o.error or ''}"
            + (f"\nThe judge's last reply:\n{o.raw_reply}" if o.raw_reply else "")
            for o in failed
        )
        message = f"{kind}: " + "; ".join(
            f"{o.shown_first} shown first: {o.error or o.error_kind}" for o in failed
        )
        cases.append(CiCase(name, "error", kind, message, details, properties=properties))
    winners = Counter(str(c.winner) for c in comparisons if c.ok)
    facts = [
        ("pairs", str(len(comparisons))),
        ("winners", _counted(winners)),
        ("failed pairs", str(sum(1 for c in comparisons if c.status == "error"))),
        ("not judged (--max-cost)", str(sum(1 for c in comparisons if c.status == "not_judged"))),
    ]
    return CiRun("compare", subject, tuple(cases), seconds, tuple(facts))


def eval_run(report: TieredReport, *, subject: str, seconds: float) -> CiRun:
    """One case per item: the outcome of its deciding tier (pass, fail or error), or skipped when
    the cap left it unjudged."""
    cases: list[CiCase] = []
    for item in report.items:
        name = _name(item.id, item.index)
        properties = [("tier", item.tier), ("tier_number", str(item.tier_number))]
        if item.values:
            properties.append(("values", json.dumps(dict(item.values), sort_keys=True)))
        judge = item.judge
        if judge is not None:
            properties.append(("result_id", judge.id))
            if judge.verdict is not None:
                properties.append(("verdict", judge.verdict))
            if judge.scores:
                properties.append(("scores", _scores(judge.scores)))
        reasons = "; ".join(item.reasons)
        seconds_here = judge.latency_s if judge is not None else 0.0
        if item.outcome == "pass":
            cases.append(CiCase(name, seconds=seconds_here, properties=tuple(properties)))
            continue
        if item.outcome == "not_judged":
            cases.append(
                CiCase(name, "skipped", "not_judged", _NOT_JUDGED, properties=tuple(properties))
            )
            continue
        outcome: Outcome = "failure" if item.outcome == "fail" else "error"
        message = f"tier {item.tier_number} ({item.tier}): {reasons or item.outcome}"
        details = message
        if judge is not None and judge.status == "error":
            details += f"\n\n{judge.error_kind}: {judge.error or ''}"
            if judge.raw_reply:
                details += f"\nThe judge's last reply:\n{judge.raw_reply}"
        cases.append(
            CiCase(name, outcome, item.tier, message, details, seconds_here, tuple(properties))
        )
    facts = [
        ("items", str(len(report.items))),
        ("passed", str(report.count("pass"))),
        ("failed", str(report.count("fail"))),
        ("errors", str(report.count("error"))),
        ("not judged (--max-cost)", str(report.count("not_judged"))),
    ]
    facts += [
        (
            f"tier {tier.number} ({tier.name})",
            f"{tier.items_in} in, {tier.passed} passed, {tier.failed} failed, {tier.errors} errors",
        )
        for tier in report.tiers
    ]
    if report.judge_calls_saved is not None:
        facts.append(("judge calls saved", str(report.judge_calls_saved)))
    return CiRun("eval", subject, tuple(cases), seconds, tuple(facts))


def audit_run(report: AuditReport, *, subject: str) -> CiRun:
    """One case per gate (card and judge model); no gate at all is one failed case."""
    cases: list[CiCase] = []
    for check in report.checks:
        name = f"{check.card} / {check.model}"
        properties = tuple(
            (key, str(value))
            for key, value in (("audit_id", check.audit_id), ("baseline_id", check.baseline_id))
            if value is not None
        )
        reasons = "; ".join(check.reasons)
        if check.passed:
            cases.append(CiCase(name, properties=properties))
        else:
            cases.append(
                CiCase(
                    name,
                    "failure",
                    "gate",
                    reasons or "gate failed",
                    reasons,
                    properties=properties,
                )
            )
    if not cases:
        cases.append(
            CiCase("gate", "failure", "gate", "no labelled audit to check (exit status 1)")
        )
    facts = [("min kappa", f"{report.min_kappa:g}"), ("audits", str(len(report.audits)))]
    facts += [
        (
            f"gate {check.card} / {check.model}",
            ("passed" if check.passed else "failed")
            + (f": {'; '.join(check.reasons)}" if check.reasons else ""),
        )
        for check in report.checks
    ]
    facts += [("note", note) for note in report.notes]
    return CiRun("audit report", subject, tuple(cases), 0.0, tuple(facts), failure_level="error")
