"""Conversation-level agent metrics: pass/fail, reliability (pass@k, pass^k), readiness, tools.

**Conversations.** A conversation passes only if *every* turn's judge score is at least the
threshold ``tau`` (default 0.7): one bad turn fails the whole conversation (`conversation_pass`).
Over ``n`` conversations with ``c`` passes, the success rate is ``p = c / n`` and, treating
attempts as independent with that rate:

* pass@k = ``1 - (1 - p)**k``, the chance that at least one of ``k`` attempts passes;
* pass^k = ``p**k``, the chance that all ``k`` attempts pass.

For p = 2/3: k = 2 gives 0.889 / 0.444, k = 3 gives 0.963 / 0.296, k = 4 gives 0.988 / 0.198,
k = 5 gives 0.996 / 0.132. (When each task was attempted several times, the per-task unbiased
estimators in `judgecards.metrics.sampling` are better.)

`Reliability` computes these in two modes:

* ``"frequentist"``: point estimates from ``p = c/n``; the interval for ``p`` is the Wilson score
  interval, and since pass@k and pass^k are increasing in ``p`` their intervals are the
  transformed endpoints.
* ``"bayesian"``: ``p`` has the posterior ``Beta(c + 1, n - c + 1)`` (uniform prior). Point
  estimates are posterior means (``E[p**k]`` and ``1 - E[(1-p)**k]``, in closed form); the
  equal-tailed credible interval comes from exact Beta quantiles (``method="exact"``) or from
  ``draws`` posterior samples (``method="sampling"``).

**Readiness.** `readiness` maps (pass@1, pass^3) to a deployment-readiness level using a table
of thresholds that is plain data (`ReadinessLevel`, `DEFAULT_READINESS`); see `DEFAULT_READINESS`
for the default table and how it fills the gaps of the commonly published one.

**Tools.** `tool_correctness` scores the tool calls of one turn on selection, parameters,
sequence and utilisation, and combines them with configurable weights (`ToolWeights`).
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from judgecards.metrics.stats import Estimate, bootstrap_ci

__all__ = [
    "DEFAULT_READINESS",
    "ReadinessLevel",
    "Reliability",
    "ToolCall",
    "ToolCorrectness",
    "ToolCorrectnessSummary",
    "ToolWeights",
    "conversation_pass",
    "conversation_reliability",
    "mean_tool_correctness",
    "readiness",
    "tool_correctness",
]

DEFAULT_THRESHOLD = 0.7


def conversation_pass(
    turn_scores: Sequence[float], *, threshold: float = DEFAULT_THRESHOLD
) -> bool:
    """True if every turn's score is at least ``threshold``.

    Args:
        turn_scores: one judge score per turn, on the scale of ``threshold`` (default 0-1).
        threshold: ``tau``; a turn passes when ``score >= threshold``.

    Returns:
        Whether the conversation passes. A ``nan`` score fails its turn.

    Raises:
        ValueError: for a conversation without turns.
    """
    scores = list(turn_scores)
    if not scores:
        raise ValueError("a conversation needs at least one scored turn")
    return all(score >= threshold for score in scores)


@dataclass(frozen=True)
class Reliability:
    """Success rate p = c/n of ``trials`` conversations, and pass@k / pass^k derived from it.

    Build it from counts (``Reliability(successes=8, trials=10)``) or from turn scores with
    `conversation_reliability`. See the module docstring for the two modes.

    Attributes:
        successes: conversations that passed, ``c``.
        trials: conversations run, ``n`` (at least 1).
        mode: ``"frequentist"`` or ``"bayesian"``.
        level: confidence (or credible) level of the intervals.
        method: Bayesian intervals from exact Beta quantiles (``"exact"``) or from posterior
            samples (``"sampling"``); ignored in frequentist mode.
        draws: posterior samples for ``method="sampling"``.
        seed: seed for ``method="sampling"``.
    """

    successes: int
    trials: int
    mode: Literal["frequentist", "bayesian"] = "frequentist"
    level: float = 0.95
    method: Literal["exact", "sampling"] = "exact"
    draws: int = 100_000
    seed: int | None = 0

    def __post_init__(self) -> None:
        if self.trials < 1:
            raise ValueError(f"trials must be at least 1, got {self.trials}")
        if not 0 <= self.successes <= self.trials:
            raise ValueError(f"successes must be between 0 and trials={self.trials}")
        if self.mode not in ("frequentist", "bayesian"):
            raise ValueError(f"mode must be 'frequentist' or 'bayesian', got {self.mode!r}")
        if self.method not in ("exact", "sampling"):
            raise ValueError(f"method must be 'exact' or 'sampling', got {self.method!r}")
        if not 0.0 < self.level < 1.0:
            raise ValueError(f"level must be in (0, 1), got {self.level}")
        if self.draws < 1:
            raise ValueError(f"draws must be positive, got {self.draws}")

    @property
    def success_rate(self) -> Estimate:
        """p with its interval (this is pass@1 and pass^1)."""
        return self.pass_at(1)

    def pass_at(self, k: int) -> Estimate:
        """pass@k = ``1 - (1 - p)**k``: at least one of ``k`` attempts passes.

        Args:
            k: attempts (>= 1).

        Returns:
            An `Estimate` in the chosen mode.
        """
        _check_k(k)
        return self._estimate(lambda p: 1.0 - (1.0 - p) ** k, k, at_least_one=True)

    def pass_hat(self, k: int) -> Estimate:
        """pass^k = ``p**k``: all ``k`` attempts pass.

        Args:
            k: attempts (>= 1).

        Returns:
            An `Estimate` in the chosen mode.
        """
        _check_k(k)
        return self._estimate(lambda p: p**k, k, at_least_one=False)

    def readiness(self, table: Sequence[ReadinessLevel] | None = None) -> ReadinessLevel:
        """The readiness level of the point estimates of pass@1 and pass^3 (see `readiness`)."""
        return readiness(self.pass_at(1).value, self.pass_hat(3).value, table=table)

    def _estimate(self, transform: Callable[[Any], Any], k: int, *, at_least_one: bool) -> Estimate:
        c, n = self.successes, self.trials
        if self.mode == "frequentist":
            low, high = _wilson(c, n, self.level)
            return Estimate(
                float(transform(c / n)),
                float(transform(low)),
                float(transform(high)),
                self.level,
                n,
            )
        a, b = c + 1, n - c + 1
        tail = (1.0 - self.level) / 2
        if self.method == "exact":
            from scipy import stats as scipy_stats

            q_low, q_high = scipy_stats.beta.ppf([tail, 1.0 - tail], a, b)
            # Posterior means in closed form: E[p^k] = prod (a+i)/(a+b+i), and E[(1-p)^k] the
            # same with b in place of a.
            first = a if not at_least_one else b
            moment = math.prod((first + i) / (a + b + i) for i in range(k))
            value = 1.0 - moment if at_least_one else moment
            return Estimate(
                value,
                float(transform(float(q_low))),
                float(transform(float(q_high))),
                self.level,
                n,
            )
        samples = transform(np.random.default_rng(self.seed).beta(a, b, size=self.draws))
        low_s, high_s = np.quantile(samples, [tail, 1.0 - tail])
        return Estimate(float(np.mean(samples)), float(low_s), float(high_s), self.level, n)


def conversation_reliability(
    conversations: Sequence[Sequence[float]],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    mode: Literal["frequentist", "bayesian"] = "frequentist",
    level: float = 0.95,
    method: Literal["exact", "sampling"] = "exact",
    draws: int = 100_000,
    seed: int | None = 0,
) -> Reliability:
    """Reliability of an agent from the per-turn judge scores of its conversations.

    Args:
        conversations: for each conversation, its turn scores.
        threshold: ``tau`` for `conversation_pass`.
        mode: ``"frequentist"`` or ``"bayesian"`` (see `Reliability`).
        level: confidence or credible level.
        method: Bayesian interval method (see `Reliability`).
        draws: posterior samples for ``method="sampling"``.
        seed: seed for ``method="sampling"``.

    Returns:
        A `Reliability` with ``c`` = passing conversations and ``n`` = all conversations.
    """
    passes = [conversation_pass(turns, threshold=threshold) for turns in conversations]
    return Reliability(
        successes=sum(passes),
        trials=len(passes),
        mode=mode,
        level=level,
        method=method,
        draws=draws,
        seed=seed,
    )


@dataclass(frozen=True)
class ReadinessLevel:
    """One row of a readiness table: a level and the minimums that reach it.

    Attributes:
        name: short machine-friendly name, e.g. ``"ready"``.
        min_pass_at_1: pass@1 must be at least this.
        min_pass_hat_3: pass^3 must be at least this.
        description: what the level means for a deployment decision.
    """

    name: str
    min_pass_at_1: float
    min_pass_hat_3: float
    description: str = ""


DEFAULT_READINESS: tuple[ReadinessLevel, ...] = (
    ReadinessLevel(
        "ready",
        0.90,
        0.80,
        "Ship: fails rarely, and three attempts in a row all pass at least 80% of the time.",
    ),
    ReadinessLevel(
        "ready_with_oversight",
        0.80,
        0.60,
        "Ship behind monitoring or human review of failures.",
    ),
    ReadinessLevel(
        "inconsistent",
        0.80,
        0.0,
        "Usually right but flaky: the same task fails on repeats. Fix consistency first.",
    ),
    ReadinessLevel(
        "prototype",
        0.50,
        0.0,
        "Works more often than not; keep iterating before any user sees it.",
    ),
    ReadinessLevel("not_ready", 0.0, 0.0, "Fails at least half of the time."),
)
"""The default readiness table; rows are tried in order and the first whose minimums are met wins.

========================  =========  =========  ========================================
level                     pass@1 >=  pass^3 >=  meaning
========================  =========  =========  ========================================
``ready``                 0.90       0.80       ship
``ready_with_oversight``  0.80       0.60       ship with monitoring / human review
``inconsistent``          0.80       (any)      capable but flaky; fix consistency first
``prototype``             0.50       (any)      keep iterating
``not_ready``             (any)      (any)      fails at least half of the time
========================  =========  =========  ========================================

Readiness tables in circulation give levels for some (pass@1, pass^3) combinations and leave
others unassigned. This table is judgecards' own choice of thresholds and closes every such
gap: the rows are tried in order and the last row has no minimums, so each (pass@1, pass^3) pair
gets exactly one level. In particular a high pass@1 that misses the pass^3 bars is
"ready_with_oversight" or "inconsistent" rather than unclassified, and an impossible pair such as
pass^3 > pass@1 (all three attempts pass more often than one does) is classified by its pass@1.

Why the pass^3 bars sit above pass@1 cubed: if an agent fails at random with success rate p on
every task, pass^3 = p^3 (0.9^3 = 0.729 < 0.80), so "ready" asks either for a higher p (the
conversation-level form p^3 >= 0.80 needs p >= 0.928) or, with per-task pass^3, for failures that
are concentrated on a few tasks instead of spread as random flakiness. Pass a table of your own
to `readiness` to change any of this.
"""


def readiness(
    pass_at_1: float, pass_hat_3: float, *, table: Sequence[ReadinessLevel] | None = None
) -> ReadinessLevel:
    """Classify deployment readiness from pass@1 and pass^3.

    Args:
        pass_at_1: success rate of a single attempt, in [0, 1].
        pass_hat_3: chance that three attempts all pass, in [0, 1].
        table: rows tried in order; the first whose ``min_pass_at_1`` and ``min_pass_hat_3``
            are both met wins. Default `DEFAULT_READINESS`. The last row must have both
            minimums at 0 so that every pair gets a level.

    Returns:
        The matching `ReadinessLevel`.

    Raises:
        ValueError: for values outside [0, 1] (or ``nan``), or a table whose last row is not a
            catch-all.
    """
    rows = DEFAULT_READINESS if table is None else tuple(table)
    if not rows or rows[-1].min_pass_at_1 > 0 or rows[-1].min_pass_hat_3 > 0:
        raise ValueError("the last row of a readiness table must have both minimums at 0")
    for name, value in (("pass_at_1", pass_at_1), ("pass_hat_3", pass_hat_3)):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must be in [0, 1], got {value}")
    for row in rows:
        if pass_at_1 >= row.min_pass_at_1 and pass_hat_3 >= row.min_pass_hat_3:
            return row
    raise AssertionError("unreachable: the last row is a catch-all")


@dataclass(frozen=True)
class ToolCall:
    """One tool call: the tool's name, its arguments and (optionally) what it returned.

    Attributes:
        name: tool name.
        arguments: argument name to value.
        result: the tool's output, any JSON-like value; ``None`` when unknown.
    """

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    result: Any = None

    @classmethod
    def parse(cls, call: ToolCall | Mapping[str, Any]) -> ToolCall:
        """Accept a `ToolCall` or a mapping with ``name``, ``arguments`` and ``result``.

        ``arguments`` may be a JSON object string, as OpenAI-style tool calls carry it.
        """
        if isinstance(call, ToolCall):
            return call
        if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
            raise TypeError(f"a tool call needs a string 'name', got {call!r}")
        arguments = call.get("arguments") or {}
        if isinstance(arguments, str):
            arguments = json.loads(arguments)
        if not isinstance(arguments, Mapping):
            raise TypeError(f"tool call arguments must be an object, got {arguments!r}")
        return cls(call["name"], dict(arguments), call.get("result"))


@dataclass(frozen=True)
class ToolWeights:
    """Weights of the four tool-correctness components; non-negative and summing to 1."""

    selection: float = 0.25
    parameters: float = 0.25
    sequence: float = 0.25
    utilisation: float = 0.25

    def __post_init__(self) -> None:
        values = (self.selection, self.parameters, self.sequence, self.utilisation)
        if any(not w >= 0 for w in values):
            raise ValueError(f"tool weights must be non-negative, got {values}")
        if not math.isclose(math.fsum(values), 1.0, abs_tol=1e-9):
            raise ValueError(f"tool weights must sum to 1, got {math.fsum(values)}")


@dataclass(frozen=True)
class ToolCorrectness:
    """Tool-use scores of one turn, each in [0, 1].

    Attributes:
        selection: multiset Jaccard of expected and called tool names.
        parameters: fraction of expected argument keys given with the expected value.
        sequence: fraction of expected calls made at their expected position (1.0 when order
            does not matter).
        utilisation: fraction of called tools with a result whose result shows up in the final
            answer (1.0 when there is nothing to check).
        score: the weighted sum.
        passed: ``score >= threshold``.
    """

    selection: float
    parameters: float
    sequence: float
    utilisation: float
    score: float
    passed: bool


def tool_correctness(
    expected: Sequence[ToolCall | Mapping[str, Any]],
    called: Sequence[ToolCall | Mapping[str, Any]],
    *,
    final_answer: str | None = None,
    ordered: bool = False,
    utilisation: float | None = None,
    weights: ToolWeights | None = None,
    threshold: float = 1.0,
) -> ToolCorrectness:
    """Score one turn's tool calls against the expected ones.

    Components (each in [0, 1]):

    * **selection**: ``|E ∩ C| / |E ∪ C|`` over the *multisets* of expected (E) and called (C)
      tool names, so both a missing call and a spurious one (including a repeated call) lower it.
      With distinct names this is the plain Jaccard index. 1.0 when both are empty.
    * **parameters**: each expected call is paired with the first not-yet-paired call of the
      same name, in order; the score is the fraction of all expected argument keys whose value
      in the paired call equals (``==``) the expected value. An expected call without a partner
      gets none of its keys. Extra arguments are not penalised. 1.0 when no argument is
      expected.
    * **sequence**: with ``ordered=True``, the fraction of expected calls whose name is at the
      same position in the called list; with ``ordered=False`` (default), 1.0. 1.0 when no call
      is expected.
    * **utilisation**: whether the final answer uses what the tools returned. A deterministic
      heuristic: a called tool's result counts as used when any of its leaf values (strings and
      numbers inside nested lists/dicts; booleans and ``None`` are skipped) occurs in the answer
      as a whole word or phrase, ignoring case and spacing. The score is the fraction of calls
      with a result that were used; 1.0 when no ``final_answer`` is given or no call carries a
      result. Paraphrased use is missed: pass ``utilisation=`` (e.g. from an LLM judge) to
      override.

    Args:
        expected: the calls that should have been made.
        called: the calls that were made (with ``result`` for utilisation).
        final_answer: the agent's final reply for the turn.
        ordered: whether the order of calls matters.
        utilisation: an externally judged utilisation score in [0, 1], replacing the heuristic.
        weights: component weights; default 0.25 each.
        threshold: the turn passes when the weighted score is at least this (default 1.0, i.e.
            every component perfect); compared with a 1e-9 tolerance for rounding.

    Returns:
        A `ToolCorrectness`.
    """
    want = [ToolCall.parse(c) for c in expected]
    got = [ToolCall.parse(c) for c in called]
    weights = weights or ToolWeights()
    selection = _multiset_jaccard([c.name for c in want], [c.name for c in got])
    parameters = _parameter_score(want, got)
    sequence = _sequence_score(want, got) if ordered else 1.0
    if utilisation is None:
        used = _utilisation(got, final_answer)
    elif 0.0 <= utilisation <= 1.0:
        used = float(utilisation)
    else:
        raise ValueError(f"utilisation must be in [0, 1], got {utilisation}")
    score = math.fsum(
        (
            weights.selection * selection,
            weights.parameters * parameters,
            weights.sequence * sequence,
            weights.utilisation * used,
        )
    )
    return ToolCorrectness(selection, parameters, sequence, used, score, score >= threshold - 1e-9)


@dataclass(frozen=True)
class ToolCorrectnessSummary:
    """Means of the tool-correctness components over turns, with bootstrap intervals."""

    selection: Estimate
    parameters: Estimate
    sequence: Estimate
    utilisation: Estimate
    score: Estimate
    pass_rate: Estimate


def mean_tool_correctness(
    results: Sequence[ToolCorrectness],
    *,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int | None = 0,
) -> ToolCorrectnessSummary:
    """Average `tool_correctness` results over turns.

    Args:
        results: one `ToolCorrectness` per turn.
        level: confidence level of the intervals.
        n_resamples: bootstrap resamples.
        seed: bootstrap seed.

    Returns:
        A `ToolCorrectnessSummary`; ``pass_rate`` is the fraction of turns that passed.
    """

    def estimate(values: list[float]) -> Estimate:
        return bootstrap_ci(values, level=level, n_resamples=n_resamples, seed=seed)

    return ToolCorrectnessSummary(
        selection=estimate([r.selection for r in results]),
        parameters=estimate([r.parameters for r in results]),
        sequence=estimate([r.sequence for r in results]),
        utilisation=estimate([r.utilisation for r in results]),
        score=estimate([r.score for r in results]),
        pass_rate=estimate([1.0 if r.passed else 0.0 for r in results]),
    )


def _check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")


def _wilson(c: int, n: int, level: float) -> tuple[float, float]:
    from scipy.stats import binomtest

    interval = binomtest(c, n).proportion_ci(confidence_level=level, method="wilson")
    return float(interval.low), float(interval.high)


def _multiset_jaccard(expected: list[str], called: list[str]) -> float:
    want, got = Counter(expected), Counter(called)
    union = sum((want | got).values())
    return sum((want & got).values()) / union if union else 1.0


def _parameter_score(expected: list[ToolCall], called: list[ToolCall]) -> float:
    total = sum(len(call.arguments) for call in expected)
    if total == 0:
        return 1.0
    free = list(range(len(called)))
    matched = 0
    for want in expected:
        partner = next((i for i in free if called[i].name == want.name), None)
        if partner is None:
            continue
        free.remove(partner)
        given = called[partner].arguments
        matched += sum(
            1 for key, value in want.arguments.items() if key in given and given[key] == value
        )
    return matched / total


def _sequence_score(expected: list[ToolCall], called: list[ToolCall]) -> float:
    if not expected:
        return 1.0
    hits = sum(
        1 for i, want in enumerate(expected) if i < len(called) and called[i].name == want.name
    )
    return hits / len(expected)


def _utilisation(called: list[ToolCall], final_answer: str | None) -> float:
    with_results = [call for call in called if call.result is not None]
    if final_answer is None or not with_results:
        return 1.0
    answer = " ".join(final_answer.casefold().split())
    used = sum(
        1 for call in with_results if any(_mentions(answer, leaf) for leaf in _leaves(call.result))
    )
    return used / len(with_results)


def _leaves(value: Any) -> list[str]:
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, Mapping):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in _leaves(item)]
    if isinstance(value, float) and value.is_integer():
        return [str(value), str(int(value))]
    text = " ".join(str(value).casefold().split())
    return [text] if text else []


def _mentions(answer: str, leaf: str) -> bool:
    return re.search(r"(?<!\w)" + re.escape(leaf) + r"(?!\w)", answer) is not None
