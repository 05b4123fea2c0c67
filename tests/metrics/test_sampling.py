"""pass@k and pass^k: worked examples, exactness at n = 10,000, properties and HumanEval data."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from judgecards.metrics import mean_pass_at_k, mean_pass_hat_k, pass_at_k, pass_hat_k


def _exact_pass_at_k(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def test_pass_at_k_worked_examples() -> None:
    # n=10, c=2, k=5: 1 - C(8,5)/C(10,5) = 1 - 56/252 = 1 - 2/9 = 7/9 = 0.7778.
    assert pass_at_k(10, 2, 5) == pytest.approx(7 / 9, rel=1e-15)
    assert round(pass_at_k(10, 2, 5), 3) == 0.778
    # n=20, c=5, k=10: 1 - C(15,10)/C(20,10) = 1 - 3003/184756 = 0.983746. A public tutorial
    # prints 0.77 for this case; the arithmetic says 0.984.
    assert pass_at_k(20, 5, 10) == pytest.approx(1 - 3003 / 184756, rel=1e-15)
    assert round(pass_at_k(20, 5, 10), 3) == 0.984
    # pass@1 is the plain pass rate c/n.
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3, rel=1e-15)


def test_pass_at_k_edge_cases() -> None:
    assert pass_at_k(10, 0, 5) == 0.0
    assert pass_at_k(10, 6, 5) == 1.0  # n - c = 4 < k = 5: every draw of 5 holds a pass
    assert pass_at_k(10, 10, 1) == 1.0
    for n, c, k in [(0, 0, 1), (5, 6, 1), (5, -1, 1), (5, 2, 0), (5, 2, 6)]:
        with pytest.raises(ValueError):
            pass_at_k(n, c, k)
    with pytest.raises(TypeError):
        pass_at_k(10.0, 2, 5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        pass_at_k(10, True, 5)


@pytest.mark.parametrize(
    ("c", "k"), [(1, 1), (1, 100), (37, 10), (5000, 1), (5000, 5000), (9990, 5), (2, 9000)]
)
def test_pass_at_k_is_exact_at_n_10000(c: int, k: int) -> None:
    n = 10_000
    exact = _exact_pass_at_k(n, c, k)
    # The naive float formula cannot even be evaluated here: C(10000, 5000) has 3,009 digits.
    value = pass_at_k(n, c, k)
    assert value == pytest.approx(float(exact), rel=1e-12, abs=1e-300)


def test_pass_hat_k_worked_example() -> None:
    # n=5, c=4, k=3: C(4,3)/C(5,3) = 4/10 = 0.4, below the plug-in (4/5)^3 = 0.512.
    assert pass_hat_k(5, 4, 3) == pytest.approx(0.4, rel=1e-15)
    assert pass_hat_k(5, 2, 3) == 0.0
    assert pass_hat_k(5, 5, 5) == 1.0
    assert pass_hat_k(10_000, 9_000, 50) == pytest.approx(
        float(Fraction(math.comb(9000, 50), math.comb(10_000, 50))), rel=1e-12
    )


def test_humaneval_per_task_results(humaneval_rows: list[dict[str, str]]) -> None:
    """jamesmurdza/humaneval-results: 'Overall success' = pass@1 = 45.1% / 77.0% / 84.8%
    (published), and the data README's own pass@5 (0.5182 / 0.8374 / 0.8998) and pass@10
    (0.5427 / 0.8598 / 0.9085)."""
    expected = {
        "codellama-34b-instruct": (0.451, 0.5182, 0.5427),
        "gpt-3.5-turbo": (0.770, 0.8374, 0.8598),
        "gpt-4": (0.848, 0.8998, 0.9085),
    }
    assert {row["model"] for row in humaneval_rows} == set(expected)
    for model, (at1, at5, at10) in expected.items():
        rows = [row for row in humaneval_rows if row["model"] == model]
        assert len(rows) == 164
        n = [int(row["n_samples"]) for row in rows]
        c = [int(row["n_correct"]) for row in rows]
        first = mean_pass_at_k(n, c, 1, n_resamples=500)
        assert round(first.value, 3) == at1
        assert first.low < first.value < first.high
        assert round(mean_pass_at_k(10, c, 5, n_resamples=10).value, 4) == at5
        assert round(mean_pass_at_k(10, c, 10, n_resamples=10).value, 4) == at10
        # pass^k falls with k, never above pass@1.
        assert mean_pass_hat_k(n, c, 5, n_resamples=10).value <= first.value


def test_aggregate_checks() -> None:
    with pytest.raises(ValueError, match="sample counts"):
        mean_pass_at_k([10, 10], [1], 1)
    assert math.isnan(mean_pass_at_k(10, [], 1).value)


counts = st.integers(1, 60).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n)))


@given(nc=counts, data=st.data())
def test_bounds_and_monotonicity(nc: tuple[int, int], data: st.DataObject) -> None:
    n, c = nc
    k = data.draw(st.integers(1, n))
    at, hat = pass_at_k(n, c, k), pass_hat_k(n, c, k)
    assert 0.0 <= hat <= c / n + 1e-12 <= at + 2e-12 <= 1.0 + 3e-12
    assert at == pytest.approx(float(_exact_pass_at_k(n, c, k)), rel=1e-12, abs=1e-15)
    assert hat == pytest.approx(float(Fraction(math.comb(c, k), math.comb(n, k))), rel=1e-12)
    if k < n:
        assert pass_at_k(n, c, k + 1) >= at - 1e-12  # more attempts, more chances
        assert pass_hat_k(n, c, k + 1) <= hat + 1e-12  # more attempts, more ways to slip
    if c < n:
        assert pass_at_k(n, c + 1, k) >= at - 1e-12
        assert pass_hat_k(n, c + 1, k) >= hat - 1e-12
