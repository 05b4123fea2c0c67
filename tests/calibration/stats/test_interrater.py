"""Inter-annotator agreement: Fleiss' kappa and Krippendorff's alpha on hand-worked published
examples, identities between the measures, and PandaLM's three annotators."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from calibration import (
    SmallSampleWarning,
    fleiss_kappa,
    inter_annotator,
    krippendorff_alpha,
)

# --- Fleiss' kappa: Fleiss (1971) / Wikipedia's worked example ------------------------------------

# 10 subjects, 14 raters each, 5 categories; cell = how many raters chose the category.
FLEISS_TABLE = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def _raters_from_table(table: list[list[int]]) -> list[list[int]]:
    """One label list per rater (rater r gives subject i the r-th of its expanded labels)."""
    per_subject = [[c + 1 for c, count in enumerate(row) for _ in range(count)] for row in table]
    return [list(labels) for labels in zip(*per_subject, strict=True)]


def test_fleiss_kappa_on_the_wikipedia_example() -> None:
    # n = 14 raters, n(n-1) = 182. Per subject P_i = (sum_j n_ij^2 - 14) / 182:
    #   1: (196 - 14) = 182 -> 1.000     6: (49+49 - 14) = 84   -> 0.462
    #   2: (4+36+16+4 - 14) = 46 -> 0.253 7: (9+4+36+9 - 14) = 44 -> 0.242
    #   3: (9+25+36 - 14) = 56  -> 0.308  8: (4+25+9+4+4 - 14) = 32 -> 0.176
    #   4: (9+81+4 - 14) = 80   -> 0.440  9: (36+25+4+1 - 14) = 52 -> 0.286
    #   5: (4+4+64+1+1 - 14) = 60 -> 0.330 10: (4+4+9+49 - 14) = 52 -> 0.286
    #   P = (182+46+56+80+60+84+44+32+52+52) / 1820 = 688 / 1820 = 0.378022
    # Column totals 20, 28, 39, 21, 32 (sum 140): p_j = 0.143, 0.200, 0.279, 0.150, 0.229
    #   P_e = (400 + 784 + 1521 + 441 + 1024) / 140^2 = 4170 / 19600 = 0.212755
    # kappa = (688/1820 - 4170/19600) / (1 - 4170/19600) = 4211 / 20059 = 0.209931 (~0.210)
    expected = (Fraction(688, 1820) - Fraction(4170, 19600)) / (1 - Fraction(4170, 19600))
    assert expected == Fraction(4211, 20059)
    with pytest.warns(SmallSampleWarning, match="10 items"):
        result = fleiss_kappa(_raters_from_table(FLEISS_TABLE))
    assert result.value == pytest.approx(float(expected))
    assert round(result.value, 3) == 0.210
    assert result.n == 10


def test_fleiss_kappa_is_nan_when_every_label_is_the_same() -> None:
    assert math.isnan(fleiss_kappa([["x"] * 30] * 3).value)


def test_fleiss_kappa_leaves_out_items_a_rater_skipped() -> None:
    raters = _raters_from_table(FLEISS_TABLE * 3)
    with_gap: list[list[int | None]] = [list(r) for r in raters]
    with_gap[0].append(None)
    for r in with_gap[1:]:
        r.append(1)
    assert fleiss_kappa(with_gap) == fleiss_kappa(raters)


# --- Krippendorff's alpha: Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability" -----

# 4 observers x 12 units, values 1..5, None = not coded. Published: nominal 0.743,
# ordinal 0.815, interval 0.849.
KRIPPENDORFF_DATA = {
    "A": [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    "B": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    "C": [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    "D": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
}
# Unit 12 has one value and is not pairable. Pairable values per unit:
#   u1 {1,1,1}  u2 {2,2,3,2}  u3 {3,3,3,3}  u4 {3,3,3,3}  u5 {2,2,2,2}  u6 {1,2,3,4}
#   u7 {4,4,4,4}  u8 {1,1,2,1}  u9 {2,2,2,2}  u10 {5,5,5}  u11 {1,1}
# n = 3 + 8*4 + 3 + 2 = 40; value totals n_1..n_5 = 9, 13, 10, 5, 3.
# Observed coincidences off the diagonal (each unit's ordered pairs / (m_u - 1)):
#   u2: (2,3) 3*1 twice / 3 -> 2 ;  u6: 12 ordered pairs / 3 -> 4 ;  u8: (1,2) 3*1 twice / 3 -> 2


def test_krippendorff_alpha_nominal_on_the_published_example() -> None:
    # D_o numerator = 2 + 4 + 2 = 8; expected: n^2 - sum n_c^2 = 1600 - (81+169+100+25+9) = 1216
    # alpha = 1 - (n - 1) * 8 / 1216 = 1 - 312/1216 = 113/152 = 0.743421
    with pytest.warns(SmallSampleWarning):
        result = krippendorff_alpha(KRIPPENDORFF_DATA, metric="nominal")
    assert result.value == pytest.approx(113 / 152)
    assert round(result.value, 3) == 0.743
    assert result.n == 11  # pairable units


def test_krippendorff_alpha_interval_on_the_published_example() -> None:
    # delta = (c - k)^2. Observed: u2 (2,3): 6 * 1 / 3 = 2;
    #   u6 ordered pairs of 1,2,3,4: 2 * (1+4+9+1+4+1) = 40, / 3 = 40/3; u8 (1,2): 6 * 1 / 3 = 2
    #   total 4 + 40/3 = 52/3
    # Expected, ordered pairs 2 * sum_{c<k} n_c n_k (c-k)^2:
    #   117 + 360 + 405 + 432 + 130 + 260 + 351 + 50 + 120 + 15 = 2240, doubled 4480
    # alpha = 1 - 39 * (52/3) / 4480 = 1 - 676/4480 = 951/1120 = 0.849107
    with pytest.warns(SmallSampleWarning):
        result = krippendorff_alpha(KRIPPENDORFF_DATA, metric="interval")
    assert result.value == pytest.approx(951 / 1120)
    assert round(result.value, 3) == 0.849


def test_krippendorff_alpha_ordinal_on_the_published_example() -> None:
    # delta(c,k) = (n_c + ... + n_k - (n_c + n_k)/2)^2 with n = 9, 13, 10, 5, 3:
    #   (1,2) (22 - 11)^2 = 121        (1,3) (32 - 9.5)^2 = 506.25   (1,4) (37 - 7)^2 = 900
    #   (1,5) (40 - 6)^2 = 1156        (2,3) (23 - 11.5)^2 = 132.25  (2,4) (28 - 9)^2 = 361
    #   (2,5) (31 - 8)^2 = 529         (3,4) (15 - 7.5)^2 = 56.25    (3,5) (18 - 6.5)^2 = 132.25
    #   (4,5) (8 - 4)^2 = 16
    # Observed: u2 6 * 132.25 / 3 = 264.5; u8 6 * 121 / 3 = 242;
    #   u6 2 * (121 + 506.25 + 900 + 132.25 + 361 + 56.25) / 3 = 2 * 2076.75 / 3 = 1384.5
    #   total 1891
    # Expected, 2 * sum_{c<k} n_c n_k delta: 2 * (14157 + 45562.5 + 40500 + 31212 + 17192.5
    #   + 23465 + 20631 + 2812.5 + 3967.5 + 240) = 2 * 199740 = 399480
    # alpha = 1 - 39 * 1891 / 399480 = 108577/133160 = 0.815388 (published 0.815)
    with pytest.warns(SmallSampleWarning):
        result = krippendorff_alpha(KRIPPENDORFF_DATA, metric="ordinal")
    assert result.value == pytest.approx(108577 / 133160)
    assert round(result.value, 3) == 0.815


def test_krippendorff_alpha_and_fleiss_kappa_agree_on_complete_nominal_data() -> None:
    # With every item labelled by all r raters, nominal alpha's observed disagreement equals
    # Fleiss' 1 - P and its expected one is n/(n-1) * (1 - P_e) for n = items * r values, so
    # 1 - alpha = (1 - kappa_F) * (n - 1) / n exactly.
    rng = np.random.default_rng(11)
    for _ in range(10):
        truth = rng.integers(0, 4, size=40)
        raters = [
            np.where(rng.random(40) < 0.7, truth, rng.integers(0, 4, size=40)) for _ in range(3)
        ]
        alpha = krippendorff_alpha(raters, n_resamples=10).value
        kappa_f = fleiss_kappa(raters, n_resamples=10).value
        n = 40 * 3
        assert 1 - alpha == pytest.approx((1 - kappa_f) * (n - 1) / n)


def test_unused_scale_points_do_not_change_alpha() -> None:
    with pytest.warns(SmallSampleWarning):
        observed = krippendorff_alpha(KRIPPENDORFF_DATA, metric="ordinal")
    with pytest.warns(SmallSampleWarning):
        on_scale = krippendorff_alpha(KRIPPENDORFF_DATA, metric="ordinal", labels=range(8))
    assert on_scale.value == pytest.approx(observed.value)


@pytest.mark.parametrize(
    ("data", "kwargs", "error", "message"),
    [
        ([[1, 2, 3]], {}, ValueError, "at least two raters"),
        ([[1, 2, 3], [1, 2]], {}, ValueError, "one entry per item"),
        ([["a", "b"], ["a", "b"]], {"metric": "interval"}, ValueError, "numeric labels"),
        ([[1, 2], [1, 2]], {"metric": "ratio"}, ValueError, "metric must be"),
    ],
)
def test_bad_input_is_refused(
    data: list[list[object]], kwargs: dict[str, object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        krippendorff_alpha(data, **kwargs)  # type: ignore[arg-type]


# --- inter_annotator ------------------------------------------------------------------------------


def test_two_raters_get_cohens_kappa_and_no_fleiss() -> None:
    rng = np.random.default_rng(5)
    a = rng.integers(1, 4, 60)
    b = np.where(rng.random(60) < 0.6, a, rng.integers(1, 4, 60))
    report = inter_annotator({"ann": a, "bob": b}, n_resamples=200)
    assert report.fleiss_kappa is None
    (pair,) = report.pairs
    assert pair.raters == ("ann", "bob")
    assert pair.kappa.value == pytest.approx(cohen_kappa_score(a, b))
    assert pair.agreement.value == pytest.approx(float(np.mean(a == b)))
    assert report.mean_pairwise_kappa == pytest.approx(pair.kappa.value)


def test_pairs_use_only_the_items_both_raters_labelled() -> None:
    rng = np.random.default_rng(6)
    full = [list(rng.integers(1, 4, 60)) for _ in range(3)]
    gappy: list[list[object]] = [list(r) for r in full]
    gappy[2][:10] = [None] * 10  # rater3 skipped the first ten items
    report = inter_annotator(gappy, n_resamples=50)
    one_two, one_three, two_three = report.pairs
    assert one_two.raters == ("rater1", "rater2")
    assert one_two.kappa.n == 60 and one_three.kappa.n == 50 and two_three.kappa.n == 50
    assert one_three.kappa.value == pytest.approx(cohen_kappa_score(full[0][10:], full[2][10:]))
    assert report.fleiss_kappa is not None and report.fleiss_kappa.n == 50
    assert report.krippendorff_alpha.n == 60
    assert report.n_items == 60


def test_weighted_pairwise_kappa() -> None:
    rng = np.random.default_rng(8)
    a = rng.integers(1, 6, 50)
    b = np.clip(a + rng.integers(-1, 2, 50), 1, 5)
    report = inter_annotator(
        [a, b], metric="ordinal", weights="quadratic", labels=range(1, 6), n_resamples=50
    )
    assert report.pairs[0].kappa.value == pytest.approx(
        cohen_kappa_score(a, b, weights="quadratic", labels=[1, 2, 3, 4, 5])
    )
    assert report.metric == "ordinal"


def test_inter_annotator_warns_once_for_few_items() -> None:
    with pytest.warns(SmallSampleWarning) as record:
        inter_annotator(KRIPPENDORFF_DATA, n_resamples=50)
    assert len(record) == 1


def test_report_to_dict_and_as_text() -> None:
    raters = _raters_from_table(FLEISS_TABLE * 3)[:3]
    report = inter_annotator({"x": raters[0], "y": raters[1], "z": raters[2]}, n_resamples=100)
    data = json.loads(json.dumps(report.to_dict()))
    assert data["raters"] == ["x", "y", "z"]
    assert [p["raters"] for p in data["pairs"]] == [["x", "y"], ["x", "z"], ["y", "z"]]
    assert data["fleiss_kappa"]["n"] == 30
    text = report.as_text()
    assert text.startswith("Inter-annotator agreement: 3 raters, 30 items (95% CI)")
    for line in ("x vs y", "x vs z", "y vs z", "Fleiss kappa", "Krippendorff's alpha (nominal)"):
        assert line in text


# --- real data: PandaLM ---------------------------------------------------------------------------


def test_pandalm_annotators_match_published_kappas(shared_data: Path) -> None:
    # PandaLM's test set (data README section 4a): 999 items, 3 annotators, labels 0 = tie,
    # 1 / 2 = that response is better. The PandaLM README publishes pairwise Cohen's kappa
    # 0.85 (1-2), 0.88 (1-3), 0.86 (2-3).
    with open(shared_data / "pandalm" / "testset-v1.json", encoding="utf-8") as f:
        items = json.load(f)
    raters = {f"annotator{i}": [item[f"annotator{i}"] for item in items] for i in (1, 2, 3)}
    report = inter_annotator(raters)
    assert report.n_items == 999
    kappas = {pair.raters: pair.kappa for pair in report.pairs}
    for (a, b), ours, published in (
        (("annotator1", "annotator2"), 0.852, 0.85),
        (("annotator1", "annotator3"), 0.879, 0.88),
        (("annotator2", "annotator3"), 0.862, 0.86),
    ):
        assert kappas[a, b].value == pytest.approx(ours, abs=5e-4)
        assert kappas[a, b].value == pytest.approx(published, abs=0.005)
        assert kappas[a, b].low < published < kappas[a, b].high
    # Not published; our values for the three annotators together (complete data, so
    # 1 - alpha = (1 - fleiss) * 2996 / 2997):
    assert report.fleiss_kappa is not None
    assert report.fleiss_kappa.value == pytest.approx(0.864175, abs=1e-6)
    assert report.krippendorff_alpha.value == pytest.approx(0.864221, abs=1e-6)
