"""The tiered pipeline: `Tier` groups of checks, the `JudgeCheck` tier, and `TieredEval`.

Each item goes through tier 1, and on to tier 2 only if it passed tier 1, and so on; the judge
(a `JudgeCheck`, always the last tier) sees only the survivors, so every item an earlier tier
decides is a judge call saved. A tier with several checks applies all of them to each item and
combines them: any ``fail`` → fail, else any ``error`` → error, else any ``accept`` → accept,
else pass.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from judgecards.judging import item_id_of
from judgecards.tiered.checks import (
    Check,
    CheckArgumentError,
    CheckResult,
    CheckStatus,
    MetricCheck,
    format_number,
)
from judgecards.tiered.plan import EvalPlan
from judgecards.tiered.report import ItemOutcome, Outcome, TieredReport, TierStats

if TYPE_CHECKING:
    from judgecards.judging import Judge, Progress
    from judgecards.storage import JudgeResult

__all__ = ["JudgeCheck", "Tier", "TieredEval"]


class JudgeCheck:
    """The judge tier: a `judgecards.Judge` run on the items that passed every earlier tier.

    Survivors are judged together with ``Judge.ascore_many`` (at most ``concurrency`` calls in
    flight, results stored and cached as usual). An item passes when the judge's verdict is in
    ``pass_verdicts`` (if given) and every named score is within ``min_scores``/``max_scores``
    (inclusive). A judge error record (invalid output after re-asks, a failed call, a missing
    input) makes the item an ``error``; an item a judge's ``max_cost`` left unstarted is
    ``not_judged`` (not an error: a re-run with a higher cap judges it).

    Args:
        judge: the judge (card + model) to run.
        inputs: card input name → item field; card inputs not named here are read from the item
            field of the same name. The item's ``id`` is passed on as the judge's item id.
        pass_verdicts: verdicts that pass, e.g. ``["match", "partial_match"]``.
        min_scores / max_scores: score axis → inclusive bound, e.g. ``{"correctness": 4}``.
        concurrency: judge calls in flight.
        name: the tier's name in reports; default ``judge``.

    Raises:
        ValueError: no pass criterion; an input, verdict or score axis the card does not have.
    """

    def __init__(
        self,
        judge: Judge,
        *,
        inputs: Mapping[str, str] | None = None,
        pass_verdicts: Iterable[str] | None = None,
        min_scores: Mapping[str, float] | None = None,
        max_scores: Mapping[str, float] | None = None,
        concurrency: int = 8,
        name: str = "judge",
    ) -> None:
        card = judge.card
        self.judge = judge
        self.inputs = dict(inputs or {})
        self.pass_verdicts = None if pass_verdicts is None else tuple(pass_verdicts)
        self.min_scores = dict(min_scores or {})
        self.max_scores = dict(max_scores or {})
        self.concurrency = concurrency
        self.name = name
        if concurrency < 1:
            raise CheckArgumentError("must be at least 1", "concurrency")
        for key in self.inputs:
            if key not in card.spec.inputs:
                raise CheckArgumentError(
                    f"{card.ref} has no input {key!r} (inputs: {', '.join(card.spec.inputs)})",
                    "inputs",
                    key,
                )
        if self.pass_verdicts is None and not self.min_scores and not self.max_scores:
            raise CheckArgumentError(
                "say what passes: 'pass_verdicts', 'min_scores' or 'max_scores'", "pass_verdicts"
            )
        verdicts = _card_verdicts(judge)
        if self.pass_verdicts is not None:
            if not self.pass_verdicts:
                raise CheckArgumentError("must list at least one verdict", "pass_verdicts")
            for index, verdict in enumerate(self.pass_verdicts):
                if verdicts is not None and verdict not in verdicts:
                    raise CheckArgumentError(
                        f"{card.ref} never gives {verdict!r} (verdicts: {', '.join(verdicts)})",
                        "pass_verdicts",
                        index,
                    )
        axes = card.score_axes
        for key, bounds in (("min_scores", self.min_scores), ("max_scores", self.max_scores)):
            for axis in bounds:
                if axes and axis not in axes:
                    raise CheckArgumentError(
                        f"{card.ref} has no score {axis!r} (scores: {', '.join(axes)})", key, axis
                    )

    def __repr__(self) -> str:
        return f"JudgeCheck({self.judge!r}, name={self.name!r})"

    def judge_item(self, item: Mapping[str, Any]) -> dict[str, Any]:
        """The mapping sent to the judge for one item: its ``id`` and the card's inputs.

        Args:
            item: one input mapping.

        Returns:
            ``{"id": …, card input: item[field], …}``; missing fields are left out, and the judge
            records them as an input error.
        """
        mapped: dict[str, Any] = {"id": item.get("id")}
        for name in self.judge.card.spec.inputs:
            source = self.inputs.get(name, name)
            if item.get(source) is not None:
                mapped[name] = item[source]
        return mapped

    def decide(self, result: JudgeResult) -> CheckResult:
        """Whether one judge result passes.

        Args:
            result: the judge's record for one item.

        Returns:
            ``error`` for an error record or a missing score axis, else ``pass`` or ``fail``
            with every unmet criterion in the reason.
        """
        if result.status != "ok":
            return CheckResult("error", f"judge error ({result.error_kind}): {result.error}")
        reasons = []
        if self.pass_verdicts is not None and result.verdict not in self.pass_verdicts:
            reasons.append(f"verdict {result.verdict!r} is not in {list(self.pass_verdicts)}")
        for axis, bound in self.min_scores.items():
            if axis not in result.scores:
                return CheckResult("error", f"the judge gave no {axis!r} score")
            if result.scores[axis] < bound:
                reasons.append(
                    f"{axis} {format_number(result.scores[axis])} < min {format_number(bound)}"
                )
        for axis, bound in self.max_scores.items():
            if axis not in result.scores:
                return CheckResult("error", f"the judge gave no {axis!r} score")
            if result.scores[axis] > bound:
                reasons.append(
                    f"{axis} {format_number(result.scores[axis])} > max {format_number(bound)}"
                )
        if reasons:
            return CheckResult("fail", "; ".join(reasons))
        return CheckResult(
            "pass", f"verdict {result.verdict!r}" if result.verdict is not None else None
        )


def _card_verdicts(judge: Judge) -> list[str] | None:
    """Every verdict the card's rules can give, or None when the judge's own verdict is kept."""
    spec = judge.card.spec.verdict
    if spec is None or not spec.rules:
        return None
    verdicts = [rule.then for rule in spec.rules]
    if spec.otherwise is not None:
        verdicts.append(spec.otherwise)
    return list(dict.fromkeys(verdicts))


@dataclass(frozen=True)
class Tier:
    """A named group of deterministic checks; an item must pass all of them.

    Args:
        name: the tier's name in reports (unique within a `TieredEval`).
        checks: the checks, each applied to every item that reaches the tier.
    """

    name: str
    checks: Sequence[Check]

    def __post_init__(self) -> None:
        object.__setattr__(self, "checks", tuple(self.checks))
        if not self.checks:
            raise ValueError(f"tier {self.name!r} has no checks")


_Stage = Tier | JudgeCheck
_PRECEDENCE: tuple[CheckStatus, ...] = ("fail", "error", "accept")
_OUTCOMES: dict[str, Outcome] = {
    "pass": "pass",
    "accept": "pass",
    "fail": "fail",
    "error": "error",
    "not_judged": "not_judged",
}


class TieredEval:
    """Run tiers of checks in order; each tier sees only the items the earlier tiers passed on.

    Example::

        from judgecards import Judge
        from judgecards.tiered import JudgeCheck, LengthCheck, MetricCheck, RegexCheck, Tier, TieredEval

        pipeline = TieredEval([
            Tier("format", [RegexCheck("model_output", forbid=r"(?i)\\bas an ai\\b"), LengthCheck("model_output", max=2000)]),
            Tier("metric", [MetricCheck("exact_match", accept_min=1), MetricCheck("token_f1", min=0.1)]),
            JudgeCheck(Judge("reference", "openai:gpt-4o"), pass_verdicts=["match", "partial_match"]),
        ])
        report = pipeline.run(items)
        print(report.as_text())

    Args:
        tiers: in order. Each is a `Tier`, a single check (a one-check tier named after it), or a
            `JudgeCheck`, which must be the last and only judge tier.

    Raises:
        ValueError: no tiers, a judge tier that is not last, duplicate tier names, or two metric
            checks with the same name.
    """

    def __init__(self, tiers: Sequence[Tier | Check | JudgeCheck]) -> None:
        stages = [_stage(tier) for tier in tiers]
        _check_stages(stages)
        self.tiers: tuple[_Stage, ...] = tuple(stages)

    @property
    def judge(self) -> JudgeCheck | None:
        """The judge tier, if there is one."""
        last = self.tiers[-1]
        return last if isinstance(last, JudgeCheck) else None

    def plan(self, items: Iterable[Mapping[str, Any]]) -> EvalPlan:
        """The projected cost of `run` with no call (`judgecards.tiered.plan`): the deterministic
        tiers are free, and the judge tier is projected on every item, an upper bound, since
        which items survive the earlier tiers is known only once they run."""
        rows = list(items)
        judge_check = self.judge
        free = tuple(stage.name for stage in self.tiers if stage is not judge_check)
        if judge_check is None:
            return EvalPlan(len(rows), free, None, None)
        run = judge_check.judge.plan(judge_check.judge_item(row) for row in rows)
        return EvalPlan(len(rows), free, judge_check.name, run)

    def run(
        self, items: Iterable[Mapping[str, Any]], *, progress: Progress | None = None
    ) -> TieredReport:
        """Evaluate every item; the judge is called only for the survivors of the earlier tiers.

        Args:
            items: input mappings (e.g. parsed JSONL lines); an ``id`` field is optional and is
                reported and passed to the judge.
            progress: called as ``progress(done, total, result)`` after each judged item.

        Returns:
            A `TieredReport` with one outcome per item, in input order.

        Raises:
            RuntimeError: called inside a running event loop; use `arun` there.
            TransportError: the judge's credentials were refused or its URL does not answer
                (every item would fail; `TransportError.stops_batch`).
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.arun(items, progress=progress))
        raise RuntimeError(
            "TieredEval.run() cannot run inside an event loop; use `await pipeline.arun(...)`"
        )

    async def arun(
        self, items: Iterable[Mapping[str, Any]], *, progress: Progress | None = None
    ) -> TieredReport:
        """Async twin of `run`.

        Args:
            items: input mappings.
            progress: as in `run`.

        Returns:
            A `TieredReport`.
        """
        rows = list(items)
        values: list[dict[str, float]] = [{} for _ in rows]
        final: dict[int, ItemOutcome] = {}
        stats: list[TierStats] = []
        judged: list[JudgeResult] = []
        last = len(self.tiers)
        for number, stage in enumerate(self.tiers, start=1):
            alive = [index for index in range(len(rows)) if index not in final]
            decisions: list[tuple[str, list[str]]] = []
            judge_results: list[JudgeResult | None] = [None] * len(alive)
            if isinstance(stage, JudgeCheck):
                batch = [stage.judge_item(rows[index]) for index in alive]
                if batch:
                    judged = await stage.judge.ascore_many(
                        batch, concurrency=stage.concurrency, progress=progress
                    )
                judge_results = list(judged)
                for judgment in judged:
                    if judgment.status == "not_judged":  # left by the judge's max_cost
                        decisions.append(("not_judged", [judgment.error or "not judged"]))
                        continue
                    decision = stage.decide(judgment)
                    decisions.append(
                        (decision.status, [decision.reason] if decision.reason else [])
                    )
            else:
                for index in alive:
                    decisions.append(_apply_tier(stage, rows[index], values[index]))
            counts = {"pass": 0, "accept": 0, "fail": 0, "error": 0, "not_judged": 0}
            for index, (status, reasons), result in zip(alive, decisions, judge_results):
                counts[status] += 1
                if status == "pass" and number < last:
                    continue
                final[index] = ItemOutcome(
                    index=index,
                    id=item_id_of(rows[index]),
                    outcome=_OUTCOMES[status],
                    tier=stage.name,
                    tier_number=number,
                    accepted=status == "accept",
                    reasons=tuple(reasons),
                    values=values[index],
                    judge=result,
                )
            stats.append(
                TierStats(
                    name=stage.name,
                    number=number,
                    kind="judge" if isinstance(stage, JudgeCheck) else "checks",
                    items_in=len(alive),
                    passed=counts["pass"],
                    accepted=counts["accept"],
                    failed=counts["fail"],
                    errors=counts["error"],
                    not_judged=counts["not_judged"],
                )
            )
        outcomes = tuple(final[index] for index in range(len(rows)))
        judge_tier = self.judge
        if judge_tier is None:
            return TieredReport(items=outcomes, tiers=tuple(stats))
        saved = len(rows) - stats[-1].items_in
        called = [
            r for r in judged if not r.cached and r.usage.input_tokens + r.usage.output_tokens > 0
        ]
        estimate = None
        if called:
            mean = sum(r.usage.input_tokens + r.usage.output_tokens for r in called) / len(called)
            estimate = round(mean * saved)
        return TieredReport(
            items=outcomes,
            tiers=tuple(stats),
            judge_card=judge_tier.judge.card.ref,
            judge_model=judge_tier.judge.model,
            judged=stats[-1].items_in - stats[-1].not_judged,
            judge_calls_saved=saved,
            served_from_cache=sum(1 for r in judged if r.cached),
            estimated_tokens_avoided=estimate,
        )


def _apply_tier(
    tier: Tier, item: Mapping[str, Any], values: dict[str, float]
) -> tuple[CheckStatus, list[str]]:
    """Every check of the tier on one item, combined: fail > error > accept > pass."""
    results: list[CheckResult] = []
    for check in tier.checks:
        try:
            result = check.check(item)
        except Exception as error:
            result = CheckResult("error", f"{check.name} raised {type(error).__name__}: {error}")
        results.append(result)
        if isinstance(check, MetricCheck) and result.value is not None:
            values[check.name] = result.value
    for status in _PRECEDENCE:
        chosen = [r.reason or status for r in results if r.status == status]
        if chosen:
            return status, list(dict.fromkeys(chosen))
    return "pass", []


def _stage(tier: Tier | Check | JudgeCheck) -> _Stage:
    """A tier as given; a lone check becomes a tier of its own."""
    if isinstance(tier, (Tier, JudgeCheck)):
        return tier
    if isinstance(tier, Check):
        return Tier(tier.name, [tier])
    raise TypeError(f"a tier must be a Tier, a check or a JudgeCheck, not {type(tier).__name__}")


def _check_stages(stages: Sequence[_Stage]) -> None:
    """The rules of a pipeline: at least one tier, the judge last, names unique (tiers, and
    metric checks, whose names are their report columns)."""
    if not stages:
        raise ValueError("a TieredEval needs at least one tier")
    for position, stage in enumerate(stages):
        if isinstance(stage, JudgeCheck) and position != len(stages) - 1:
            raise CheckArgumentError("the judge tier must be the last tier", position)
    names = [stage.name for stage in stages]
    for position, name in enumerate(names):
        if name in names[:position]:
            raise CheckArgumentError(f"two tiers are named {name!r}", position, "name")
    seen: set[str] = set()
    for stage in stages:
        for check in stage.checks if isinstance(stage, Tier) else ():
            if isinstance(check, MetricCheck):
                if check.name in seen:
                    raise ValueError(
                        f"two metric checks are named {check.name!r}; give one a distinct name"
                    )
                seen.add(check.name)
