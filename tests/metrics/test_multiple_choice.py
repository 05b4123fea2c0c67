"""MC1 / MC2 (TruthfulQA): the worked example, numerical stability, ties and the real data."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from judgecards.metrics import mc1, mc2, mean_mc1, mean_mc2


def test_mc2_worked_example() -> None:
    # scores (A, B, C, D) = (-2.0, -0.4, -1.1, -0.7), B and D true.
    # exp: A 0.135335, B 0.670320, C 0.332871, D 0.496585; sum 1.635112
    # true mass (B + D) = 1.166905; MC2 = 1.166905 / 1.635112 = 0.713654 (~0.714).
    scores = [-2.0, -0.4, -1.1, -0.7]
    labels = [0, 1, 0, 1]
    expected = (math.exp(-0.4) + math.exp(-0.7)) / sum(math.exp(s) for s in scores)
    assert mc2(scores, labels) == pytest.approx(expected, abs=1e-15)
    assert round(mc2(scores, labels), 3) == 0.714
    # MC1 on the same question: the top score -0.4 (B) is true.
    assert mc1(scores, labels) == 1.0


def test_mc2_is_stable_for_very_negative_log_probs() -> None:
    # Naive exp(-1000) underflows to 0 and gives 0/0; the shifted softmax gives the exact answer.
    assert mc2([-1000.0, -1001.0], [1, 0]) == pytest.approx(1 / (1 + math.exp(-1.0)))
    assert mc2([800.0, 800.0, 800.0], [1, 0, 0]) == pytest.approx(1 / 3)  # no overflow either
    assert mc2([-math.inf, 0.0], [1, 0]) == 0.0
    with pytest.raises(ValueError, match="finite"):
        mc2([-math.inf, -math.inf], [1, 0])


def test_mc1_ties() -> None:
    # TruthfulQA's rule: the best true option must beat every false one strictly.
    assert mc1([-1.0, -1.0, -3.0], [1, 0, 0]) == 0.0
    # Fractional: a uniformly random tie-break picks the true option 1 time in 2.
    assert mc1([-1.0, -1.0, -3.0], [1, 0, 0], ties="fractional") == 0.5
    assert mc1([0.0] * 4, [1, 0, 0, 0], ties="fractional") == 0.25
    assert mc1([-2.0, -1.0], [1, 0], ties="fractional") == 0.0
    with pytest.raises(ValueError, match="ties"):
        mc1([0.0], [1], ties="random")  # type: ignore[arg-type]


def test_input_checks() -> None:
    with pytest.raises(ValueError, match="true option"):
        mc1([0.0, 1.0], [0, 0])
    with pytest.raises(ValueError, match="labels"):
        mc2([0.0, 1.0], [1])
    with pytest.raises(ValueError, match="nan"):
        mc2([math.nan, 1.0], [1, 0])
    assert mc1([0.5], [1]) == 1.0  # a single true option wins by default


def test_truthfulqa_data_only_checks(truthfulqa_v1: list[dict[str, Any]]) -> None:
    """Uniform scores: MC1 (fractional) = mean 1/#choices = 0.2225 and
    MC2 = mean #true/#choices = 0.4641 (data README, section 5)."""
    assert len(truthfulqa_v1) == 817
    mc1_labels = [list(item["mc1_targets"].values()) for item in truthfulqa_v1]
    mc2_labels = [list(item["mc2_targets"].values()) for item in truthfulqa_v1]
    # MC1 has exactly one true answer, listed first (so never show options in file order).
    assert all(labels.count(1) == 1 and labels[0] == 1 for labels in mc1_labels)

    uniform_mc1 = mean_mc1(
        [[0.0] * len(x) for x in mc1_labels], mc1_labels, ties="fractional", n_resamples=200
    )
    assert round(uniform_mc1.value, 4) == 0.2225
    uniform_mc2 = mean_mc2([[0.0] * len(x) for x in mc2_labels], mc2_labels, n_resamples=200)
    assert round(uniform_mc2.value, 4) == 0.4641
    # The strict rule gives 0 to every all-tied question.
    assert mean_mc1([[0.0] * len(x) for x in mc1_labels], mc1_labels, n_resamples=10).value == 0.0
    # A "model" that scores options by file order (first = best) gets MC1 = 1: the data quirk.
    ordered = [[-float(i) for i in range(len(x))] for x in mc1_labels]
    assert mean_mc1(ordered, mc1_labels, n_resamples=10).value == 1.0


options = st.lists(
    st.tuples(st.floats(-50, 0, allow_nan=False), st.booleans()), min_size=1, max_size=8
).filter(lambda xs: any(t for _, t in xs))


@given(question=options)
def test_bounds_and_mc1_mc2_relation(question: list[tuple[float, bool]]) -> None:
    scores, labels = [s for s, _ in question], [t for _, t in question]
    value = mc2(scores, labels)
    assert 0.0 <= value <= 1.0 + 1e-12
    strict, fractional = mc1(scores, labels), mc1(scores, labels, ties="fractional")
    assert strict in (0.0, 1.0) and strict <= fractional <= 1.0
    if all(labels):
        assert value == pytest.approx(1.0)
    # Raising a true option's score never lowers MC2.
    i = labels.index(True)
    raised = [s + 1.0 if j == i else s for j, s in enumerate(scores)]
    assert mc2(raised, labels) >= value - 1e-12
    # MC2 is invariant to adding a constant to every score (it is a softmax).
    assert mc2([s - 7.0 for s in scores], labels) == pytest.approx(value)
