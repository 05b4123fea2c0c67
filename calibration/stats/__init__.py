"""The statistics of calibration: agreement, kappa, inter-rater measures, corrected estimates
(PPI/PPI++), error rates, selective thresholds, confidence and PPS sampling.

Pure functions over arrays of labels and scores: nothing here reads the store or runs a judge,
so every other calibration package can build on it. The label-coding helpers other packages
share (``label_order``, ``to_codes``, ``kappa_from_codes`` ...) are handed on here from the
private modules that define them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgecards.faces import lazy_exports, public_names

# Imported on first use, like `calibration`'s face: reading one name loads one module.
# `_EXPORTS` (this face's `__all__`, documented under it): the result types that
# `calibration`'s functions return, imported from here when a caller names one.
_EXPORTS: dict[str, str] = {
    "AgreementReport": "calibration.stats.report",
    "ClassScores": "calibration.stats.report",
    "CorrectedEstimate": "calibration.stats.ppi",
    "InterAnnotatorReport": "calibration.stats.interrater",
    "JudgeRates": "calibration.stats.error_rates",
    "PairwiseAgreement": "calibration.stats.pairwise",
    "RaterPair": "calibration.stats.interrater",
    "SelectiveThreshold": "calibration.stats.selective",
    "ThresholdTest": "calibration.stats.selective",
}
# `_SHARED`: what `calibration`'s face (documented there) and the other calibration
# packages and judgecards' cli, serve and report take from here.
_SHARED: dict[str, str] = {
    "MIN_ITEMS": "calibration.stats._core",
    "PassFailView": "calibration.stats.pass_fail",
    "SmallSampleWarning": "calibration.stats._core",
    "Tuning": "calibration.stats._ppi_core",
    "agreement": "calibration.stats.agreement_measures",
    "as_list": "calibration.stats._core",
    "calibrate": "calibration.stats.report",
    "cascade_stage_thresholds": "calibration.stats.selective",
    "cascade_thresholds": "calibration.stats.selective",
    "clip_share": "calibration.stats._ppi_core",
    "corrected_estimate": "calibration.stats.ppi",
    "corrected_mean": "calibration.stats.ppi",
    "corrected_rate": "calibration.stats.ppi",
    "draw_pps": "calibration.stats.uncertainty_sampling",
    "fleiss_kappa": "calibration.stats.interrater",
    "format_estimate": "calibration.stats._core",
    "inclusion_probabilities": "calibration.stats.uncertainty_sampling",
    "inter_annotator": "calibration.stats.interrater",
    "is_missing": "calibration.stats._core",
    "judge_rates": "calibration.stats.error_rates",
    "judgment_confidence": "calibration.stats.confidence",
    "kappa": "calibration.stats.agreement_measures",
    "kappa_from_codes": "calibration.stats._core",
    "krippendorff_alpha": "calibration.stats.interrater",
    "label_order": "calibration.stats._core",
    "normal_estimate": "calibration.stats._ppi_core",
    "order_consistency": "calibration.stats.confidence",
    "pairwise_agreement": "calibration.stats.pairwise",
    "pairwise_human_agreement": "calibration.stats.pairwise",
    "pass_fail_view": "calibration.stats.pass_fail",
    "rogan_gladen": "calibration.stats.error_rates",
    "sample_agreement": "calibration.stats.confidence",
    "selective_threshold": "calibration.stats.selective",
    "stratified_corrected_mean": "calibration.stats.ppi_stratified",
    "stratified_corrected_rate": "calibration.stats.ppi_stratified",
    "to_codes": "calibration.stats._core",
    "weight_matrix": "calibration.stats._core",
}

__all__ = public_names(_EXPORTS)

__getattr__, __dir__ = lazy_exports("calibration.stats", globals(), {**_EXPORTS, **_SHARED})

if TYPE_CHECKING:
    from calibration.stats._core import MIN_ITEMS as MIN_ITEMS
    from calibration.stats._core import SmallSampleWarning as SmallSampleWarning
    from calibration.stats._core import as_list as as_list
    from calibration.stats._core import format_estimate as format_estimate
    from calibration.stats._core import is_missing as is_missing
    from calibration.stats._core import kappa_from_codes as kappa_from_codes
    from calibration.stats._core import label_order as label_order
    from calibration.stats._core import to_codes as to_codes
    from calibration.stats._core import weight_matrix as weight_matrix
    from calibration.stats._ppi_core import Tuning as Tuning
    from calibration.stats._ppi_core import clip_share as clip_share
    from calibration.stats._ppi_core import normal_estimate as normal_estimate
    from calibration.stats.agreement_measures import agreement as agreement
    from calibration.stats.agreement_measures import kappa as kappa
    from calibration.stats.confidence import judgment_confidence as judgment_confidence
    from calibration.stats.confidence import order_consistency as order_consistency
    from calibration.stats.confidence import sample_agreement as sample_agreement
    from calibration.stats.error_rates import JudgeRates as JudgeRates
    from calibration.stats.error_rates import judge_rates as judge_rates
    from calibration.stats.error_rates import rogan_gladen as rogan_gladen
    from calibration.stats.interrater import InterAnnotatorReport as InterAnnotatorReport
    from calibration.stats.interrater import RaterPair as RaterPair
    from calibration.stats.interrater import fleiss_kappa as fleiss_kappa
    from calibration.stats.interrater import inter_annotator as inter_annotator
    from calibration.stats.interrater import krippendorff_alpha as krippendorff_alpha
    from calibration.stats.pairwise import PairwiseAgreement as PairwiseAgreement
    from calibration.stats.pairwise import pairwise_agreement as pairwise_agreement
    from calibration.stats.pairwise import pairwise_human_agreement as pairwise_human_agreement
    from calibration.stats.pass_fail import PassFailView as PassFailView
    from calibration.stats.pass_fail import pass_fail_view as pass_fail_view
    from calibration.stats.ppi import CorrectedEstimate as CorrectedEstimate
    from calibration.stats.ppi import corrected_estimate as corrected_estimate
    from calibration.stats.ppi import corrected_mean as corrected_mean
    from calibration.stats.ppi import corrected_rate as corrected_rate
    from calibration.stats.ppi_stratified import (
        stratified_corrected_mean as stratified_corrected_mean,
    )
    from calibration.stats.ppi_stratified import (
        stratified_corrected_rate as stratified_corrected_rate,
    )
    from calibration.stats.report import AgreementReport as AgreementReport
    from calibration.stats.report import ClassScores as ClassScores
    from calibration.stats.report import calibrate as calibrate
    from calibration.stats.selective import SelectiveThreshold as SelectiveThreshold
    from calibration.stats.selective import ThresholdTest as ThresholdTest
    from calibration.stats.selective import cascade_stage_thresholds as cascade_stage_thresholds
    from calibration.stats.selective import cascade_thresholds as cascade_thresholds
    from calibration.stats.selective import selective_threshold as selective_threshold
    from calibration.stats.uncertainty_sampling import draw_pps as draw_pps
    from calibration.stats.uncertainty_sampling import (
        inclusion_probabilities as inclusion_probabilities,
    )
