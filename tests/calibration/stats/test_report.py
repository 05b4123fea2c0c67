"""calibrate(): the report's numbers by hand, its rendering, the human ceiling, and PandaLM's
judges against the human majority label."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import pytest
from sklearn.metrics import cohen_kappa_score

from calibration import SmallSampleWarning, calibrate
from calibration.stats import AgreementReport
from tests.builders import from_confusion

# Same table as in test_agreement.py (rows = human, columns = judge), each cell x3 (n = 30):
#            j1  j2  j3 | human
#     h1      3   1   0 |  4
#     h2      1   2   1 |  4
#     h3      1   0   1 |  2
#     judge   5   3   2 | 10
HAND = [[9, 3, 0], [3, 6, 3], [3, 0, 3]]


def test_report_numbers_by_hand() -> None:
    judge, human = from_confusion(HAND, [1, 2, 3])
    report = calibrate(judge, human, ordinal=True)
    assert report.n == 30
    assert report.labels == (1, 2, 3)
    assert report.confusion == ((9, 3, 0), (3, 6, 3), (3, 0, 3))
    assert report.agreement.value == pytest.approx(0.6)
    assert report.kappa.value == pytest.approx(0.375)
    assert report.linear_kappa is not None and report.quadratic_kappa is not None
    assert report.linear_kappa.value == pytest.approx(16 / 41)
    assert report.quadratic_kappa.value == pytest.approx(24 / 59)
    # label 1: the judge said 1 on 5 (x3) items, 3 of them human 1 -> precision 3/5 = 0.6;
    #          humans said 1 on 4, the judge matched 3 -> recall 3/4 = 0.75;
    #          F1 = 2 * 0.6 * 0.75 / 1.35 = 2/3
    # label 2: precision 2/3, recall 2/4 = 0.5, F1 = 2 * (2/3) * (1/2) / (7/6) = 4/7
    # label 3: precision 1/2, recall 1/2, F1 = 1/2;   supports 12, 12, 6
    # macro F1 = (2/3 + 4/7 + 1/2) / 3 = (28 + 24 + 21) / 42 / 3 = 73/126
    got = [(c.label, c.precision, c.recall, c.f1, c.support) for c in report.per_class]
    expected = [(1, 0.6, 0.75, 2 / 3, 12), (2, 2 / 3, 0.5, 4 / 7, 12), (3, 0.5, 0.5, 0.5, 6)]
    for row, want in zip(got, expected, strict=True):
        assert row[0] == want[0] and row[4] == want[4]
        assert row[1:4] == pytest.approx(want[1:4])
    assert report.macro_f1 == pytest.approx(73 / 126)


def test_nominal_report_has_no_weighted_kappa() -> None:
    judge, human = from_confusion(HAND, ["match", "partial_match", "mismatch"])
    report = calibrate(judge, human)
    assert report.linear_kappa is None and report.quadratic_kappa is None
    assert report.labels == ("match", "mismatch", "partial_match")  # sorted


def test_unused_labels_in_the_scale_are_shown_as_undefined() -> None:
    judge, human = from_confusion(HAND, [1, 2, 3])
    report = calibrate(judge, human, ordinal=True, labels=range(1, 6))
    assert report.labels == (1, 2, 3, 4, 5)
    assert report.confusion[3] == (0, 0, 0, 0, 0)
    four = report.per_class[3]
    assert (four.label, four.support) == (4, 0)
    assert math.isnan(four.precision) and math.isnan(four.recall) and math.isnan(four.f1)
    assert report.macro_f1 == pytest.approx(73 / 126)  # unused labels are left out
    # a label only the judge uses: precision 0, recall undefined, F1 0
    report = calibrate(["A", "B", "C"] * 10, ["A", "B", "B"] * 10)
    c = report.per_class[2]
    assert (c.label, c.precision, c.f1, c.support) == ("C", 0.0, 0.0, 0)
    assert math.isnan(c.recall)


def test_small_samples_warn_once_even_with_a_human_ceiling() -> None:
    judge = [1, 2, 3, 3]
    human = [1, 2, 3, 2]
    raters = {"ann": [1, 2, 3, 2], "bob": [1, 2, 2, 2]}
    with pytest.warns(SmallSampleWarning) as record:
        report = calibrate(judge, human, raters=raters, n_resamples=50)
    assert len(record) == 1
    assert report.human_ceiling is not None


def test_human_ceiling_sits_next_to_the_judge(tmp_path: Path) -> None:
    judge, human = from_confusion(HAND, [1, 2, 3])
    raters = {"ann": human, "bob": [h if i % 5 else judge[i] for i, h in enumerate(human)]}
    report = calibrate(judge, human, ordinal=True, raters=raters, n_resamples=200)
    ceiling = report.human_ceiling
    assert ceiling is not None
    assert ceiling.metric == "ordinal"
    assert ceiling.labels == report.labels
    expected = cohen_kappa_score(raters["ann"], raters["bob"])
    assert ceiling.pairs[0].kappa.value == pytest.approx(expected)
    text = report.as_text()
    assert "  human-human kappa         " in text
    assert "(mean over 1 rater pair)" in text
    assert "(Krippendorff, ordinal, 2 raters)" in text
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report.to_dict()))
    assert json.loads(path.read_text())["human_ceiling"]["raters"] == ["ann", "bob"]


def test_raters_must_label_the_same_items() -> None:
    judge, human = from_confusion(HAND, [1, 2, 3])
    with pytest.raises(ValueError, match="rater 'ann' must have one entry per item"):
        calibrate(judge, human, raters={"ann": human[:-1], "bob": human})


def test_as_text_is_a_readable_table() -> None:
    judge, human = from_confusion(HAND, [1, 2, 3])
    text = calibrate(judge, human, ordinal=True, n_resamples=200).as_text()
    lines = text.splitlines()
    assert lines[0] == "Judge vs human: 30 items (95% CI)"
    assert lines[1].startswith("  agreement                 0.600 [")
    assert lines[2].startswith("  Cohen's kappa             0.375 [")
    assert lines[3].startswith("  linear-weighted kappa     0.390 [")
    assert lines[4].startswith("  quadratic-weighted kappa  0.407 [")
    assert "Confusion (rows = human, columns = judge)" in lines
    assert "  1                  9          3          0" in lines
    assert "  label      precision     recall         F1    support" in lines
    assert "  1              0.600      0.750      0.667         12" in lines
    assert lines[-1].strip() == "macro F1                             0.579"


def test_to_dict_round_trips_through_json() -> None:
    judge, human = from_confusion(HAND, ["a", "b", "c"])
    data = json.loads(json.dumps(calibrate(judge, human, n_resamples=100).to_dict()))
    assert data["n"] == 30
    assert data["labels"] == ["a", "b", "c"]
    assert data["kappa"]["value"] == pytest.approx(0.375)
    assert data["linear_kappa"] is None
    assert data["confusion"] == [[9, 3, 0], [3, 6, 3], [3, 0, 3]]
    assert data["per_class"][0] == {
        "label": "a",
        "precision": pytest.approx(0.6),
        "recall": 0.75,
        "f1": pytest.approx(2 / 3),
        "support": 12,
    }


# --- real data: PandaLM judges vs the human majority ----------------------------------------------


def test_pandalm_judges_against_the_human_majority(shared_data: Path) -> None:
    # Gold = majority of the three annotators (always exists here: 0:105, 1:422, 2:472 per the
    # data README). GPT-3.5's "garbage" (25 unparseable replies) stays a label of its own, so it
    # counts as a disagreement. The README's own numbers (not published figures): GPT-3.5
    # accuracy 0.698, macro-F1 0.527 over labels 0/1/2; PandaLM-7B 0.668 / 0.574.
    folder = shared_data / "pandalm"

    def load(name: str) -> list[dict[str, object]]:
        with open(folder / name, encoding="utf-8") as f:
            return json.load(f)  # type: ignore[no-any-return]

    items = load("testset-v1.json")
    majority = []
    for item in items:
        ((label, votes),) = Counter(item[f"annotator{i}"] for i in (1, 2, 3)).most_common(1)
        assert votes >= 2
        majority.append(str(label))
    assert Counter(majority) == {"0": 105, "1": 422, "2": 472}
    gpt = {r["idx"]: r["gpt_result"] for r in load("gpt-3.5-turbo-testset-v1.json")}
    pandalm = {r["idx"]: r["pandalm_result"] for r in load("pandalm-7b-testset-v1.json")}
    gpt_labels = [{"Tie": "0"}.get(str(gpt[item["idx"]]), str(gpt[item["idx"]])) for item in items]
    pandalm_labels = [str(pandalm[item["idx"]]) for item in items]

    raters = {f"annotator{i}": [item[f"annotator{i}"] for item in items] for i in (1, 2, 3)}
    as_text = {name: [str(v) for v in labels] for name, labels in raters.items()}
    report = calibrate(gpt_labels, majority, raters=as_text)
    assert isinstance(report, AgreementReport)
    assert report.labels == ("0", "1", "2", "garbage")
    assert report.agreement.value == pytest.approx(697 / 999)
    assert report.kappa.value == pytest.approx(cohen_kappa_score(gpt_labels, majority))
    gold_classes = [c for c in report.per_class if c.support > 0]
    assert sum(c.f1 for c in gold_classes) / 3 == pytest.approx(0.527, abs=5e-4)
    assert report.human_ceiling is not None
    # the judge (kappa ~0.48) sits well below the human ceiling (pairwise kappas 0.85-0.88)
    assert report.kappa.high < min(p.kappa.low for p in report.human_ceiling.pairs)

    report = calibrate(pandalm_labels, majority, n_resamples=500)
    assert report.agreement.value == pytest.approx(0.668, abs=5e-4)
    assert report.macro_f1 == pytest.approx(0.574, abs=5e-4)
