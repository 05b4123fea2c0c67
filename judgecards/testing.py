"""Assertions for judgments in tests, with failure messages that show the judge's own account.

A bare ``assert result.verdict == "match"`` fails with two strings; what a developer needs is
why the judge decided so. These helpers fail with the verdict, the scores, the judge's written
explanation (``delta`` and ``decision_basis`` for the reference card, ``reasoning`` where a
card asks for it) and the stored result id, which finds the full row in the database.

Import-light: nothing heavy is imported, so a test module can import this at collection time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from judgecards.pairwise.compare import ComparisonResult, OrderJudgment
    from judgecards.storage import JudgeResult

__all__ = ["assert_judgment", "assert_prefers"]

# Fields of a judgment in which the judge explains itself, in the order they are shown.
_EXPLANATIONS = ("delta", "decision_basis", "reasoning", "explanation")


def assert_judgment(
    result: JudgeResult,
    verdict: str | Iterable[str] | None = None,
    *,
    min_scores: Mapping[str, float] | None = None,
) -> None:
    """Fail unless ``result`` succeeded with an accepted verdict and high enough scores.

    Args:
        result: a `JudgeResult` (from ``judge.score`` or ``judge.score_many``).
        verdict: the verdict expected, or several that are all acceptable; ``None`` checks none.
        min_scores: the lowest acceptable score per axis, e.g. ``{"correctness": 4}``. An axis
            the judgment lacks is a failure, never a pass.

    Raises:
        AssertionError: an error record, another verdict, a missing or lower score; the
            message gives the verdict, the scores, the judge's explanation and the result id.
    """
    __tracebackhide__ = True
    problems: list[str] = []
    if result.status != "ok":
        problems.append(f"the judgment failed ({result.error_kind}): {result.error}")
    else:
        expected = _expected(verdict)
        if expected is not None and result.verdict not in expected:
            wanted = " or ".join(repr(value) for value in expected)
            problems.append(f"verdict {result.verdict!r}, expected {wanted}")
        for axis, minimum in (min_scores or {}).items():
            score = result.scores.get(axis)
            if score is None:
                problems.append(f"no {axis!r} score (the judgment has {_names(result.scores)})")
            elif score < minimum:
                problems.append(f"{axis} {score} < {minimum}")
    if problems:
        raise AssertionError(_judgment_message(result, problems))


def assert_prefers(comparison: ComparisonResult, expected: str) -> None:
    """Fail unless the judge preferred ``expected`` in both orders of a pairwise comparison.

    Args:
        comparison: a `judgecards.pairwise` ``ComparisonResult`` (from ``compare`` or
            ``compare_many``).
        expected: ``"A"``, ``"B"`` or ``"tie"``, or the label of one of the compared models
            (``model_a`` / ``model_b``), meaning the answer that model wrote.

    Raises:
        AssertionError: the comparison failed, or the winner is another; the message gives
            both orders' verdicts, the judge's reasoning and the result ids.
        ValueError: ``expected`` is neither a verdict nor one of the comparison's model labels.
    """
    __tracebackhide__ = True
    wanted = _side(comparison, expected)
    if comparison.status != "ok":
        problem = f"the comparison failed: {comparison.error}"
    elif comparison.winner != wanted:
        problem = f"winner {comparison.winner!r}, expected {wanted!r}"
        if wanted != expected:
            problem += f" ({expected})"
    else:
        return
    raise AssertionError(_comparison_message(comparison, problem))


def _expected(verdict: str | Iterable[str] | None) -> tuple[str, ...] | None:
    if verdict is None:
        return None
    if isinstance(verdict, str):
        return (verdict,)
    return tuple(verdict)


def _side(comparison: ComparisonResult, expected: str) -> str:
    if expected in ("A", "B", "tie"):
        return expected
    labels = {comparison.model_a: "A", comparison.model_b: "B"}
    labels.pop(None, None)
    if expected in labels:
        return labels[expected]
    known = ", ".join(repr(label) for label in labels) or "none"
    raise ValueError(
        f"assert_prefers: expected 'A', 'B', 'tie' or a model label of this comparison "
        f"(model labels: {known}), got {expected!r}"
    )


def _names(scores: Mapping[str, Any]) -> str:
    return ", ".join(repr(name) for name in scores) or "no scores"


def _judgment_message(result: JudgeResult, problems: list[str]) -> str:
    scores = ", ".join(f"{axis}={value}" for axis, value in result.scores.items()) or "none"
    lines = [
        f"{result.card} with {result.model}: " + "; ".join(problems),
        f"  verdict: {result.verdict!r}",
        f"  scores: {scores}",
        *_explanations(result.output),
        f"  result id: {result.id}" + (f" (item {result.item_id!r})" if result.item_id else ""),
    ]
    return "\n".join(lines)


def _comparison_message(comparison: ComparisonResult, problem: str) -> str:
    lines = [f"{comparison.card} with {comparison.model}: {problem}"]
    if comparison.model_a or comparison.model_b:
        lines.append(f"  A: {comparison.model_a or '?'}, B: {comparison.model_b or '?'}")
    lines.append(f"  position consistent: {comparison.position_consistent}")
    for name, order in (("first", comparison.first_order), ("second", comparison.second_order)):
        lines.extend(_order_lines(name, order))
    lines.append(f"  comparison id: {comparison.id}")
    return "\n".join(lines)


def _order_lines(name: str, order: OrderJudgment) -> list[str]:
    if order.status != "ok":
        outcome = f"failed ({order.error_kind}): {order.error}"
    else:
        outcome = f"verdict {order.verdict!r}"
    lines = [f"  {name} order ({order.shown_first} shown first): {outcome}"]
    if order.reasoning:
        lines.append(f"    reasoning: {_one_line(order.reasoning)}")
    lines.append(f"    result id: {order.result_id}")
    return lines


def _explanations(output: Mapping[str, Any] | None) -> list[str]:
    if not output:
        return []
    return [
        f"  {field}: {_one_line(str(output[field]))}"
        for field in _EXPLANATIONS
        if output.get(field)
    ]


def _one_line(text: str, limit: int = 500) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
