"""Uncertainty sampling: exact inclusion probabilities, weighted agreement and kappa, and the
inverse-probability estimates checked for unbiasedness on MT-Bench (the full human votes as the
population).

Measured on MT-Bench (1,814 comparisons; confidence = GPT-4's both-order consistency, 1.0 when
its two orders agree, 0.5 when not; floor 0.2, so the 290 inconsistent comparisons are drawn 3×
as often), mean 95% interval width over 300 draws of n labels, uniform vs uncertainty sampling:

* agreement of GPT-4 with the human majority (all 1,814): n=100 0.178 vs 0.189; n=200 0.127 vs
  0.136;
* corrected (PPI++) win rate of gpt-3.5-turbo (678 comparisons): n=100 0.131 vs 0.157; n=200
  0.094 vs 0.115; coverage 0.96–0.99 for both.

Both stay unbiased, but on MT-Bench oversampling the inconsistent verdicts *widens* the
intervals: where GPT-4 contradicts itself it says "tie", and its error there is predictable
(about ±0.5 whichever way the humans went), while the consistent verdicts carry as much of the
variance. The test below re-measures the widths on fewer draws and prints them.
"""

from __future__ import annotations

import csv
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from calibration import agreement, corrected_mean, kappa
from calibration.audits.audit import Audit, AuditError
from calibration.stats import draw_pps, inclusion_probabilities
from judgecards.cards import load_card
from judgecards.storage import JudgeResult, Store
from tests.builders import mt_bench


def test_probabilities_sum_to_n_favour_unsure_items_and_keep_a_floor() -> None:
    confidence = np.array([1.0, 1.0, 0.5, 0.0, 0.9, 0.2])
    pi = inclusion_probabilities(confidence, 3, floor=0.2)
    assert pi.sum() == pytest.approx(3.0)
    assert pi[3] == pytest.approx(5 * pi[0])  # fully unsure vs fully sure: 1 / floor
    assert np.all(pi > 0) and np.all(pi <= 1)
    assert list(np.argsort(-pi, kind="stable")[:2]) == [3, 5]
    uniform = inclusion_probabilities(np.full(10, 0.7), 4)
    assert np.allclose(uniform, 0.4)


def test_probabilities_above_one_are_capped_and_the_rest_rescaled() -> None:
    pi = inclusion_probabilities([0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], 2, floor=0.1)
    assert pi[0] == 1.0  # 2·1/(1 + 7·0.1) > 1: taken for certain
    assert pi[1:] == pytest.approx(np.full(7, 1 / 7))
    assert pi.sum() == pytest.approx(2.0)
    assert np.all(inclusion_probabilities([0.3, 0.9], 5) == 1.0)


@pytest.mark.parametrize("bad", [{"n": 0}, {"floor": 0.0}, {"floor": 1.5}])
def test_bad_arguments_are_refused(bad: dict[str, float]) -> None:
    arguments = {"n": 2, "floor": 0.2, **bad}
    with pytest.raises(ValueError):
        inclusion_probabilities([0.5, 0.5, 0.5], int(arguments["n"]), floor=arguments["floor"])
    with pytest.raises(ValueError, match="NaN"):
        inclusion_probabilities([0.5, float("nan")], 1)


def test_draws_have_exactly_n_items_drawn_at_their_probabilities() -> None:
    pi = inclusion_probabilities(np.linspace(0.0, 1.0, 12), 4, floor=0.2)
    counts = np.zeros(12)
    draws = 20000
    for seed in range(draws):
        chosen = draw_pps(pi, seed=seed)
        assert len(chosen) == 4 and len(set(chosen)) == 4
        counts[chosen] += 1
    standard_error = np.sqrt(pi * (1 - pi) / draws)
    assert np.all(np.abs(counts / draws - pi) < 4 * standard_error)
    assert draw_pps(pi, seed=7) == draw_pps(pi, seed=7)
    with pytest.raises(ValueError, match="whole number"):
        draw_pps([0.5, 0.2], seed=0)


def test_weighted_agreement_and_kappa_match_the_weighted_definitions() -> None:
    rng = np.random.default_rng(3)
    judge = rng.choice(["a", "b", "c"], 80)
    human = np.where(rng.random(80) < 0.6, judge, rng.choice(["a", "b", "c"], 80))
    weight = rng.uniform(0.5, 4.0, 80)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        weighted = agreement(judge, human, sample_weight=weight, n_resamples=200)
        unweighted = agreement(judge, human, n_resamples=200)
        k = kappa(judge, human, sample_weight=weight, n_resamples=200)
        quadratic = kappa(judge, human, weights="quadratic", sample_weight=weight, n_resamples=200)
    assert weighted.value == pytest.approx(np.average(judge == human, weights=weight))
    assert weighted.value != pytest.approx(unweighted.value)
    assert weighted.low <= weighted.value <= weighted.high
    assert k.value == pytest.approx(cohen_kappa_score(judge, human, sample_weight=weight))
    assert quadratic.value == pytest.approx(
        cohen_kappa_score(judge, human, weights="quadratic", sample_weight=weight)
    )
    with pytest.raises(ValueError, match="one weight per item"):
        agreement(judge, human, sample_weight=weight[:5])
    with pytest.raises(ValueError, match="finite and > 0"):
        kappa(judge, human, sample_weight=np.zeros(80))


def _within(draws: list[float], target: float, *, sigmas: float = 4.0) -> bool:
    spread = float(np.std(draws)) / np.sqrt(len(draws))
    return bool(abs(float(np.mean(draws)) - target) < sigmas * spread)


def test_inverse_probability_estimates_are_unbiased_on_mt_bench() -> None:
    data = mt_bench()
    agrees = (data.gpt4 == data.human).astype(float)
    confidence = np.where(data.inconsistent, 0.5, 1.0)
    pi = inclusion_probabilities(confidence, 100)
    horvitz_thompson, hajek, naive = [], [], []
    for seed in range(1000):
        s = np.array(draw_pps(pi, seed=seed))
        horvitz_thompson.append(float(np.sum(agrees[s] / pi[s]) / len(agrees)))
        hajek.append(float(np.average(agrees[s], weights=1 / pi[s])))
        naive.append(float(agrees[s].mean()))
    population = float(agrees.mean())
    assert _within(horvitz_thompson, population)
    assert _within(hajek, population)
    # without the weights the oversampled inconsistent verdicts (mostly "tie", rarely the
    # humans' choice) drag the agreement down: the weights are what makes it unbiased
    assert not _within(naive, population, sigmas=10.0)
    assert np.mean(naive) < population


def test_corrected_win_rate_is_unbiased_and_its_width_is_reported(
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = mt_bench()
    model = "gpt-3.5-turbo"
    keep = (data.model_a == model) | (data.model_b == model)
    human, judge = data.win_scores(model)
    confidence = np.where(data.inconsistent[keep], 0.5, 1.0)
    everything = np.arange(len(human))
    widths: dict[str, list[float]] = {}
    for name, floor in (("uniform", 1.0), ("uncertainty", 0.2)):
        pi = inclusion_probabilities(confidence, 100, floor=floor)
        values, width = [], []
        for seed in range(150):
            s = np.array(draw_pps(pi, seed=seed))
            rest = np.setdiff1d(everything, s)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                estimate = corrected_mean(
                    human[s], judge[s], judge[rest], weights=1 / pi[s],
                    unlabeled_weights=1 / (1 - pi[rest]), seed=seed,
                )  # fmt: skip
            values.append(estimate.value)
            width.append(estimate.high - estimate.low)
        assert _within(values, float(human.mean())), name
        widths[name] = width
    with capsys.disabled():
        print(
            f"\nMT-Bench {model} corrected win rate, n=100, mean 95% width: uniform "
            f"{np.mean(widths['uniform']):.3f}, uncertainty {np.mean(widths['uncertainty']):.3f}"
        )
    assert 0.05 < np.mean(widths["uncertainty"]) < 0.3


# --------------------------------------------------------------------------- in an audit

MODEL = "openai:gpt-4o"


def _save_judged(store: Store, count: int, unsure: set[int]) -> None:
    """``reference`` results all judged "match"; on the ``unsure`` items the G-Eval
    distribution put 0.5 on the written score of every axis (confidence 0.125), else 1.0."""
    card = load_card("reference")
    for i in range(count):
        p = 0.5 if i in unsure else 1.0
        scoring = {
            axis: {"method": "geval", "distribution": {"5": p, "4": 1 - p}}
            for axis in ("correctness", "completeness", "style_fidelity")
        }
        result = JudgeResult(
            id=f"r{i:03d}", item_id=f"i{i}", status="ok", verdict="match", model_verdict="match",
            scores={"correctness": 5, "completeness": 5, "style_fidelity": 5},
            output={"scoring": scoring}, card=card.ref, card_hash=card.hash, model=MODEL,
        )  # fmt: skip
        answer = "wrong" if i in unsure else "right"
        store.save(
            result,
            inputs={"question": f"Q{i}?", "gold_answer": "A", "model_output": f"{answer} {i}"},
            params={},
        )


def test_an_uncertainty_audit_stores_its_probabilities_and_weights_agreement_back(
    tmp_path: Path,
) -> None:
    unsure = set(range(0, 40, 4))  # 10 of 40 results, where the judge is in fact wrong
    with Audit(tmp_path / "audit.db", n_resamples=200) as audit:
        _save_judged(audit.store, 40, unsure)
        with pytest.raises(AuditError, match="strategy must be"):
            audit.sample(card="reference", model=MODEL, n=12, strategy="random")  # type: ignore[arg-type]
        with pytest.raises(AuditError, match="contradicts"):
            audit.sample(
                card="reference", model=MODEL, n=12, stratify="verdict", strategy="uncertainty"
            )
        drawn = audit.sample(card="reference", model=MODEL, n=12, seed=3, strategy="uncertainty")
        items = audit.repository.audit_items(drawn.audit.id)
        assert len(items) == 12
        confidence = [0.125 if i in unsure else 1.0 for i in range(40)]
        expected = inclusion_probabilities(confidence, 12)
        for item in items:
            index = int(item.result_id[1:])
            assert item.confidence == pytest.approx(confidence[index])
            assert item.inclusion_probability == pytest.approx(expected[index])
        drawn_unsure = sum(int(item.result_id[1:]) in unsure for item in items)
        assert drawn_unsure > 12 * len(unsure) / 40  # oversampled (expected 12·0.25 = 3 if uniform)

        sheet = audit.write_sheet(drawn.audit.id, tmp_path / "sheet.csv")
        with sheet.open(newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        for row in rows:
            row["verdict"] = "mismatch" if row["model_output"].startswith("wrong") else "match"
        with sheet.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
        audit.ingest(sheet, labeler="ann")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            summary = audit.summary(drawn.audit.id)
        report = summary.fields["verdict"].report
        assert report is not None
        right = np.array([int(item.result_id[1:]) not in unsure for item in items], dtype=float)
        weight = np.array([1 / (item.inclusion_probability or 1.0) for item in items])
        # the weighted share is the population's 0.75 estimated without bias, not the sample's
        assert report.agreement.value == pytest.approx(np.average(right, weights=weight))
        assert report.agreement.value != pytest.approx(right.mean())


def test_audit_sample_strategy_uncertainty_on_the_command_line(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from judgecards.cli import cli

    db = tmp_path / "audit.db"
    with Audit(db) as audit:
        _save_judged(audit.store, 20, {0, 5, 10})
    runner = CliRunner()
    sheet = tmp_path / "sheet.csv"
    base = ["audit", "sample", "--card", "reference", "--model", MODEL, "--n", "6", "--db", str(db)]
    result = runner.invoke(
        cli, [*base, "--strategy", "uncertainty", "--seed", "1", "--sheet", str(sheet)]
    )
    assert result.exit_code == 0, result.output
    assert "inclusion probabilities" in result.output and "1/probability" in result.output
    assert sheet.is_file()
    clash = runner.invoke(cli, [*base, "--strategy", "uncertainty", "--stratify", "verdict"])
    assert clash.exit_code == 2 and "contradicts" in clash.output
