"""Accuracy, per-class P/R/F1, macro/micro F1 and the class-balance table."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from judgecards.metrics import accuracy, classification_report

# Hand example (3 classes, 8 items):
#   true: a a a a b b c c
#   pred: a a b c b b a c
# correct: a,a,b,b,c -> accuracy 5/8 = 0.625
# class a: TP 2, predicted 3 (items 1,2,7) -> P 2/3; support 4 -> R 1/2;
#          F1 = 2*(2/3)(1/2)/(7/6) = 4/7
# class b: TP 2, predicted 3 (items 3,5,6) -> P 2/3; support 2 -> R 1;   F1 = 2*(2/3)/(5/3) = 4/5
# class c: TP 1, predicted 2 (items 4,8)   -> P 1/2; support 2 -> R 1/2; F1 = 1/2
# macro F1 = (4/7 + 4/5 + 1/2) / 3 = (0.571429 + 0.8 + 0.5) / 3 = 0.623810
# micro F1 = accuracy = 0.625 (every label is reported); majority baseline = 4/8.
TRUE = list("aaaabbcc")
PRED = list("aabcbbac")


def test_hand_example() -> None:
    report = classification_report(TRUE, PRED)
    assert report.accuracy.value == pytest.approx(0.625)
    assert report.macro_f1 == pytest.approx((4 / 7 + 4 / 5 + 1 / 2) / 3)
    assert report.micro_f1 == pytest.approx(0.625)
    assert report.majority_baseline == 0.5
    rows = {row.label: row for row in report.classes}
    assert [row.label for row in report.classes] == ["a", "b", "c"]
    assert (rows["a"].precision, rows["a"].recall, rows["a"].f1) == pytest.approx(
        (2 / 3, 1 / 2, 4 / 7)
    )
    assert (rows["b"].support, rows["b"].predicted) == (2, 3)
    assert (rows["b"].support_share, rows["b"].predicted_share) == (0.25, 0.375)
    assert rows["c"].f1 == pytest.approx(0.5)


def test_table_is_printed_next_to_the_headline() -> None:
    text = str(classification_report(TRUE, PRED))
    headline, header, *rows = text.splitlines()
    assert headline.startswith("accuracy 0.625 [") and "macro-F1 0.624" in headline
    assert "majority baseline 0.500" in headline
    assert header.split() == [
        "class",
        "support",
        "share",
        "predicted",
        "share",
        "precision",
        "recall",
        "F1",
    ]
    assert rows[0].split() == ["a", "4", "0.500", "3", "0.375", "0.667", "0.500", "0.571"]


def test_never_predicted_class_scores_zero_without_warning() -> None:
    # pytest runs with warnings as errors, so sklearn's UndefinedMetricWarning would fail here.
    report = classification_report(["x", "y", "y"], ["y", "y", "y"])
    rows = {row.label: row for row in report.classes}
    assert (rows["x"].precision, rows["x"].recall, rows["x"].f1) == (0.0, 0.0, 0.0)
    assert rows["x"].predicted == 0


def test_labels_restrict_macro_and_micro() -> None:
    # An off-menu prediction (-1 = unparseable) is wrong; with labels=[0, 1] it gets no row and
    # micro F1 no longer equals accuracy.
    report = classification_report([0, 1, 1, 0], [0, 1, -1, 1], labels=[0, 1])
    assert report.accuracy.value == 0.5
    assert [row.label for row in report.classes] == [0, 1]
    # pooled over classes 0 and 1: TP 2, FP 1 (the 1 predicted for a 0), FN 2 -> P 2/3, R 2/4.
    assert report.micro_f1 == pytest.approx(2 * (2 / 3) * 0.5 / (2 / 3 + 0.5))
    full = classification_report([0, 1, 1, 0], [0, 1, -1, 1])
    assert [row.label for row in full.classes] == [-1, 0, 1]
    assert type(full.classes[0].label) is int


def test_input_checks() -> None:
    with pytest.raises(ValueError, match="at least one item"):
        classification_report([], [])
    with pytest.raises(ValueError, match="predictions"):
        accuracy([1, 2], [1])
    with pytest.raises(TypeError):
        accuracy("ab", "ab")


def test_reproduces_pandalm_numbers_from_the_data_readme(shared_data: Path) -> None:
    """Data README 4a: majority human label vs GPT-3.5 (acc 0.698, macro-F1 0.527, 25 "garbage"
    counted wrong) and vs PandaLM-7B (acc 0.668, macro-F1 0.574); majority labels 0:105 1:422
    2:472."""
    folder = shared_data / "pandalm"
    items = json.loads((folder / "testset-v1.json").read_text(encoding="utf-8"))
    gpt = {
        r["idx"]: r["gpt_result"]
        for r in json.loads((folder / "gpt-3.5-turbo-testset-v1.json").read_text(encoding="utf-8"))
    }
    panda = {
        r["idx"]: r["pandalm_result"]
        for r in json.loads((folder / "pandalm-7b-testset-v1.json").read_text(encoding="utf-8"))
    }
    gold = [
        Counter([r["annotator1"], r["annotator2"], r["annotator3"]]).most_common(1)[0][0]
        for r in items
    ]
    assert Counter(gold) == {0: 105, 1: 422, 2: 472}

    gpt_labels = [{"1": 1, "2": 2, "Tie": 0}.get(gpt[r["idx"]], -1) for r in items]
    assert gpt_labels.count(-1) == 25
    report = classification_report(gold, gpt_labels, labels=[0, 1, 2])
    assert (round(report.accuracy.value, 3), round(report.macro_f1, 3)) == (0.698, 0.527)
    report = classification_report(gold, [panda[r["idx"]] for r in items])
    assert (round(report.accuracy.value, 3), round(report.macro_f1, 3)) == (0.668, 0.574)
    assert report.majority_baseline == pytest.approx(472 / 999)


labels = st.lists(
    st.tuples(st.sampled_from("xyz"), st.sampled_from("xyz")), min_size=1, max_size=40
)


@given(pairs=labels)
def test_bounds_and_micro_equals_accuracy(pairs: list[tuple[str, str]]) -> None:
    truth, predicted = [t for t, _ in pairs], [p for _, p in pairs]
    report = classification_report(truth, predicted, n_resamples=50)
    assert 0.0 <= report.accuracy.value <= 1.0
    assert 0.0 <= report.macro_f1 <= 1.0
    assert report.micro_f1 == pytest.approx(report.accuracy.value)
    assert sum(row.support for row in report.classes) == len(pairs)
    assert sum(row.predicted for row in report.classes) == len(pairs)
    assert report.majority_baseline >= 1 / 3
