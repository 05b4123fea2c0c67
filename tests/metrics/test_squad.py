"""Reproduce the official SQuAD evaluation script's EM/F1 on the shared SQuAD slice.

`expected_scores_official_v2_script.json` holds the output of the official ``evaluate-v2.0.py``
on ../shared/data/squad: v2.0 leaderboard predictions on all 1,407 questions (705 answerable,
702 unanswerable) and v1.1 leaderboard predictions on the 705 answerable ones. The script's
rules, mirrored here: an unanswerable question's only gold answer is "" (we pass ``[""]``, since
`exact_match` refuses an empty reference list), gold answers that normalise to "" are dropped
(our references rule), and scores are percentages.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from judgecards.metrics import exact_match, mean_exact_match, mean_token_f1, token_f1

EXPECTED = "expected_scores_official_v2_script.json"


def _cases(squad_dir: Path) -> list[str]:
    expected = json.loads((squad_dir / EXPECTED).read_text(encoding="utf-8"))
    return sorted(expected)


def _expected(squad_dir: Path, name: str) -> dict[str, Any]:
    expected = json.loads((squad_dir / EXPECTED).read_text(encoding="utf-8"))
    scores: dict[str, Any] = expected[name]["official_evaluate-v2.0.py_output"]
    return scores


PREDICTION_FILES = [
    "pred_1_1_BERT_ensemble_Google_AI_Language.json",
    "pred_1_1_Logistic_Regression_Baseline_Stanford_University.json",
    "pred_1_1_Match_LSTM_with_Ans_Ptr_Boundary_Ensemble_Singapore_Management_University.json",
    "pred_1_1_SLQA_ensemble_Alibaba_iDST_NLP.json",
    "pred_1_1_r_net_ensemble_Microsoft_Research_Asia.json",
    "pred_v2_0_BERT_single_model_Google_AI_Language.json",
    (
        "pred_v2_0_BiDAF_Self_Attention_ELMo_single_model_Allen_Institute_for_Artificial_"
        "Intelligence_modified_by_Stanford.json"
    ),
    "pred_v2_0_nlnet_single_model_Microsoft_Research_Asia.json",
]


def test_every_expected_file_is_covered(squad_dir: Path) -> None:
    assert _cases(squad_dir) == sorted(PREDICTION_FILES)


@pytest.mark.parametrize(
    "name", PREDICTION_FILES, ids=lambda n: n.split("_")[1] + ":" + n.split("_")[3]
)
def test_reproduces_official_script(
    name: str, squad_dir: Path, squad_questions: list[dict[str, Any]]
) -> None:
    expected = _expected(squad_dir, name)
    predictions: dict[str, str] = json.loads((squad_dir / name).read_text(encoding="utf-8"))
    questions = [qa for qa in squad_questions if qa["id"] in predictions]
    assert len(questions) == expected["total"]

    def references(qa: dict[str, Any]) -> list[str]:
        return [a["text"] for a in qa["answers"]] or [""]

    em = [exact_match(predictions[qa["id"]], references(qa)) for qa in questions]
    f1 = [token_f1(predictions[qa["id"]], references(qa)) for qa in questions]
    has_answer = [bool(qa["answers"]) for qa in questions]

    def pct(values: list[float], keep: list[bool] | None = None) -> float:
        chosen = [v for v, k in zip(values, keep or [True] * len(values)) if k]
        return 100.0 * sum(chosen) / len(chosen)

    assert pct(em) == pytest.approx(expected["exact"], abs=1e-9)
    assert pct(f1) == pytest.approx(expected["f1"], abs=1e-9)
    assert pct(em, has_answer) == pytest.approx(expected["HasAns_exact"], abs=1e-9)
    assert pct(f1, has_answer) == pytest.approx(expected["HasAns_f1"], abs=1e-9)
    if "NoAns_total" in expected:
        no_answer = [not h for h in has_answer]
        assert sum(no_answer) == expected["NoAns_total"]
        assert pct(em, no_answer) == pytest.approx(expected["NoAns_exact"], abs=1e-9)
        assert pct(f1, no_answer) == pytest.approx(expected["NoAns_f1"], abs=1e-9)

    # The aggregates give the same numbers as fractions, with an interval around them.
    golds = [references(qa) for qa in questions]
    answers = [predictions[qa["id"]] for qa in questions]
    aggregate = mean_token_f1(answers, golds, n_resamples=200)
    assert 100 * aggregate.value == pytest.approx(expected["f1"], abs=1e-9)
    assert aggregate.low < aggregate.value < aggregate.high
    assert 100 * mean_exact_match(answers, golds, n_resamples=200).value == pytest.approx(
        expected["exact"], abs=1e-9
    )


def test_published_bert_v2_headline(squad_dir: Path) -> None:
    # The README's rounded figures, as a guard against editing the expected file by mistake.
    bert = _expected(squad_dir, "pred_v2_0_BERT_single_model_Google_AI_Language.json")
    assert round(bert["exact"], 3) == 75.551 and round(bert["f1"], 3) == 78.833
