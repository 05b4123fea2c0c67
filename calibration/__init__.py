"""Calibration of LLM judges against human labels.

Measures (this package's public names, all with bootstrap confidence intervals):

* `agreement`, `kappa` — judge vs human on one label field; `kappa` takes
  ``weights="linear"|"quadratic"`` and the full ``labels`` scale for ordinal scores.
* `calibrate` — an `AgreementReport` with agreement, kappa (weighted when ordinal), confusion
  matrix, per-class precision/recall/F1 (`ClassScores`) and, given individual raters, the human
  ceiling.
* `pairwise_agreement`, `pairwise_human_agreement` — A/B/tie verdicts with and without ties, per
  vote, as the MT-Bench paper reports them (`PairwiseAgreement`).
* `inter_annotator`, `fleiss_kappa`, `krippendorff_alpha` — agreement among human raters
  (`InterAnnotatorReport`, `RaterPair`).

Human labels and drift audits:

* `import_labels`, `export_labels`, `read_labels` — human labels of stored results as CSV or
  JSONL, validated row by row (`LabelImportError`, `LabelImportReport`).
* `Audit` — spot-check samples, labelling sheets, ingest, the report with its CI gate
  (`AuditReport`, `AuditSummary`), anchor sets (`AnchorSet`) and their re-runs.
* `align` — a card (single-item or pairwise) aligned to its people: worked examples, past
  disagreements or written guidelines tried on held-out labels, the best written as a new card
  version
  (`AlignmentResult`, `CandidateScore`); `alignment_runs` lists the stored runs (`AlignmentRun`).
* `LabelQueue` — an audit served to people one item at a time, blind (`QueueItem` holds the
  card's inputs and form only), with reservations, N labels per item from different labelers,
  undo, skip, and pairwise sides shuffled per labeler (`PositionPreference`); ``judgecards
  serve`` puts it in the browser (`QueueSettings`, `LabelQueueError`).
* `latest_calibration` — a card version's latest calibration for a judge model
  (`CalibrationStatus`); `warn_if_uncalibrated` warns (`UncalibratedJudgeWarning`) for a judge
  that has none, as the command line does once per run.

Trustworthy numbers once labels exist:

* `corrected_mean`, `corrected_rate`, `corrected_estimate` (`CorrectedEstimate`) and their
  `stratified_corrected_mean`/`stratified_corrected_rate` variants — a judge's mean score or
  verdict rate corrected with human labels on a subset (prediction-powered inference, PPI++).
* `estimate` (`EstimatesReport`, `EstimateRow`; `EstimateError`) — corrected estimates from the
  results database: judge-only, human-only and corrected numbers for a card version and judge
  model (mean score per axis, share of each verdict, win rate per model pair).
* `judge_rates` (`JudgeRates`) and `rogan_gladen` — the pass/fail view of a two-valued judge:
  TPR and TNR with Wilson intervals, a readiness line in plain words, and the judge's positive
  rate corrected for both (Rogan–Gladen) with an interval that carries their error.
* `selective_threshold` (`SelectiveThreshold`, `ThresholdTest`) — the confidence above which a
  judge's agreement with people is guaranteed (fixed-sequence testing); the rest is escalated.
* `cascade_thresholds` — one threshold per judge of a cascade, each calibrated only on the
  items no earlier judge trusts (Trust or Escalate), so every stage keeps its guarantee.
* `Cascade` (`CascadeRun`, `CascadeDecision`, `CascadeStage`) — judges from cheap to strong,
  each deciding only above its own threshold, the rest queued for people; confidence per
  judgment from `judgment_confidence` (G-Eval), `order_consistency` (pairwise),
  `sample_agreement` (k samples) or `MajorityVote.confidence` (juries).
* `PairwiseCascade` (`PairwiseCascadeRun`, `PairDecision`) — the same for pairwise cards: each
  pair judged in both orders, trusted by `comparison_confidence`, the rest an audit for people.
  A re-run does not queue again what an earlier escalated audit holds (`EarlierQueue`);
  `stored_cascade_runs` (`StoredCascadeRun`, `CascadeJudge`) rebuilds each run's guarantee from
  the decisions both cascades store.
* `majority_vote` (`MajorityVote`), `fit_jury` (`FittedJury`, `JudgeReliability`),
  `dawid_skene` (`DawidSkeneResult`), `evaluate_jury` (`JuryEvaluation`) — several judges
  aggregated, and whether the jury beats its best judge.
* `Jury` (`JuryRun`, `JuryVerdict`, `JurorReliability`) — several `judgecards.Judge`s run on the
  same items through one bounded pool and aggregated per item by one of those methods.
* `inclusion_probabilities`, `draw_pps` — audits that sample where the judge is least sure, with
  known inclusion probabilities π; `agreement`, `kappa`, `calibrate` take ``sample_weight=1/π``.

Every measure warns with `SmallSampleWarning` below 30 items. Intervals come from
`judgecards.metrics.stats.bootstrap_ci` and are returned as `judgecards.metrics.stats.Estimate`.
`AuditError`, `AlignmentError` and `LabelImportError` are defined in `judgecards.errors`, in the
one exception tree under `judgecards.JudgecardsError`. The calibration tables' SQL is all in
`calibration.repository`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgecards._lazy import lazy_exports

# Names are imported on first use (PEP 562): the command line imports `calibration.status` on
# every run, and that must not pay for numpy, scipy and scikit-learn. To add a name,
# add it here (and to the TYPE_CHECKING imports below); `__all__` lists the same names, sorted.
_EXPORTS: dict[str, str] = {
    "AgreementReport": "calibration.report",
    "AlignmentError": "judgecards.errors",
    "AlignmentResult": "calibration.align_run",
    "AlignmentRun": "calibration.records",
    "AnchorSet": "calibration.records",
    "Audit": "calibration.audit",
    "AuditError": "judgecards.errors",
    "AuditReport": "calibration.audit_report",
    "AuditSummary": "calibration.audit_report",
    "CalibrationStatus": "calibration.status",
    "CandidateScore": "calibration.align_run",
    "Cascade": "calibration.cascade",
    "CascadeDecision": "calibration.cascade",
    "CascadeJudge": "calibration.cascade_history",
    "CascadeRun": "calibration.cascade",
    "CascadeStage": "calibration.cascade",
    "ClassScores": "calibration.report",
    "CorrectedEstimate": "calibration.ppi",
    "DawidSkeneResult": "calibration.dawid_skene_model",
    "EarlierQueue": "calibration.cascade_stages",
    "EstimateError": "judgecards.errors",
    "EstimateRow": "calibration.estimates",
    "EstimatesReport": "calibration.estimates",
    "FittedJury": "calibration.jury",
    "InterAnnotatorReport": "calibration.interrater",
    "JudgeRates": "calibration.error_rates",
    "JudgeReliability": "calibration.jury",
    "JurorReliability": "calibration.jury_run",
    "Jury": "calibration.jury_run",
    "JuryEvaluation": "calibration.jury",
    "JuryRun": "calibration.jury_run",
    "JuryVerdict": "calibration.jury_run",
    "LabelImportError": "judgecards.errors",
    "LabelImportReport": "calibration.labels",
    "LabelQueue": "calibration.label_queue",
    "LabelQueueError": "calibration.queue_records",
    "MajorityVote": "calibration.jury",
    "PairDecision": "calibration.pairwise_cascade",
    "PairwiseAgreement": "calibration.pairwise",
    "PairwiseCascade": "calibration.pairwise_cascade",
    "PairwiseCascadeRun": "calibration.pairwise_cascade",
    "PositionPreference": "calibration.queue_records",
    "QueueItem": "calibration.queue_records",
    "QueueSettings": "calibration.queue_records",
    "RaterPair": "calibration.interrater",
    "SelectiveThreshold": "calibration.selective",
    "SmallSampleWarning": "calibration._core",
    "StoredCascadeRun": "calibration.cascade_history",
    "ThresholdTest": "calibration.selective",
    "agreement": "calibration.agreement_measures",
    "align": "calibration.alignment",
    "alignment_runs": "calibration.alignment",
    "calibrate": "calibration.report",
    "cascade_thresholds": "calibration.selective",
    "comparison_confidence": "calibration.pairwise_cascade",
    "corrected_estimate": "calibration.ppi",
    "corrected_mean": "calibration.ppi",
    "corrected_rate": "calibration.ppi",
    "dawid_skene": "calibration.dawid_skene_model",
    "draw_pps": "calibration.uncertainty_sampling",
    "estimate": "calibration.estimates",
    "evaluate_jury": "calibration.jury",
    "export_labels": "calibration.labels",
    "fit_jury": "calibration.jury",
    "fleiss_kappa": "calibration.interrater",
    "import_labels": "calibration.labels",
    "inclusion_probabilities": "calibration.uncertainty_sampling",
    "inter_annotator": "calibration.interrater",
    "judge_rates": "calibration.error_rates",
    "judgment_confidence": "calibration.confidence",
    "kappa": "calibration.agreement_measures",
    "krippendorff_alpha": "calibration.interrater",
    "latest_calibration": "calibration.status",
    "majority_vote": "calibration.jury",
    "order_consistency": "calibration.confidence",
    "pairwise_agreement": "calibration.pairwise",
    "pairwise_human_agreement": "calibration.pairwise",
    "read_labels": "calibration.labels",
    "rogan_gladen": "calibration.error_rates",
    "sample_agreement": "calibration.confidence",
    "selective_threshold": "calibration.selective",
    "stored_cascade_runs": "calibration.cascade_history",
    "stratified_corrected_mean": "calibration.ppi_stratified",
    "stratified_corrected_rate": "calibration.ppi_stratified",
    "warn_if_uncalibrated": "calibration.status",
}

__all__ = [
    "AgreementReport",
    "AlignmentError",
    "AlignmentResult",
    "AlignmentRun",
    "AnchorSet",
    "Audit",
    "AuditError",
    "AuditReport",
    "AuditSummary",
    "CalibrationStatus",
    "CandidateScore",
    "Cascade",
    "CascadeDecision",
    "CascadeJudge",
    "CascadeRun",
    "CascadeStage",
    "ClassScores",
    "CorrectedEstimate",
    "DawidSkeneResult",
    "EarlierQueue",
    "EstimateError",
    "EstimateRow",
    "EstimatesReport",
    "FittedJury",
    "InterAnnotatorReport",
    "JudgeRates",
    "JudgeReliability",
    "JurorReliability",
    "Jury",
    "JuryEvaluation",
    "JuryRun",
    "JuryVerdict",
    "LabelImportError",
    "LabelImportReport",
    "LabelQueue",
    "LabelQueueError",
    "MajorityVote",
    "PairDecision",
    "PairwiseAgreement",
    "PairwiseCascade",
    "PairwiseCascadeRun",
    "PositionPreference",
    "QueueItem",
    "QueueSettings",
    "RaterPair",
    "SelectiveThreshold",
    "SmallSampleWarning",
    "StoredCascadeRun",
    "ThresholdTest",
    "agreement",
    "align",
    "alignment_runs",
    "calibrate",
    "cascade_thresholds",
    "comparison_confidence",
    "corrected_estimate",
    "corrected_mean",
    "corrected_rate",
    "dawid_skene",
    "draw_pps",
    "estimate",
    "evaluate_jury",
    "export_labels",
    "fit_jury",
    "fleiss_kappa",
    "import_labels",
    "inclusion_probabilities",
    "inter_annotator",
    "judge_rates",
    "judgment_confidence",
    "kappa",
    "krippendorff_alpha",
    "latest_calibration",
    "majority_vote",
    "order_consistency",
    "pairwise_agreement",
    "pairwise_human_agreement",
    "read_labels",
    "rogan_gladen",
    "sample_agreement",
    "selective_threshold",
    "stored_cascade_runs",
    "stratified_corrected_mean",
    "stratified_corrected_rate",
    "warn_if_uncalibrated",
]


__getattr__, __dir__ = lazy_exports("calibration", globals(), _EXPORTS, __all__)


if TYPE_CHECKING:
    from calibration._core import SmallSampleWarning
    from calibration.agreement_measures import agreement, kappa
    from calibration.align_run import AlignmentResult, CandidateScore
    from calibration.alignment import align, alignment_runs
    from calibration.audit import Audit
    from calibration.audit_report import AuditReport, AuditSummary
    from calibration.cascade import Cascade, CascadeDecision, CascadeRun, CascadeStage
    from calibration.cascade_history import CascadeJudge, StoredCascadeRun, stored_cascade_runs
    from calibration.cascade_stages import EarlierQueue
    from calibration.confidence import judgment_confidence, order_consistency, sample_agreement
    from calibration.dawid_skene_model import DawidSkeneResult, dawid_skene
    from calibration.error_rates import JudgeRates, judge_rates, rogan_gladen
    from calibration.estimates import EstimateRow, EstimatesReport, estimate
    from calibration.interrater import (
        InterAnnotatorReport,
        RaterPair,
        fleiss_kappa,
        inter_annotator,
        krippendorff_alpha,
    )
    from calibration.jury import (
        FittedJury,
        JudgeReliability,
        JuryEvaluation,
        MajorityVote,
        evaluate_jury,
        fit_jury,
        majority_vote,
    )
    from calibration.jury_run import JurorReliability, Jury, JuryRun, JuryVerdict
    from calibration.label_queue import LabelQueue
    from calibration.labels import (
        LabelImportReport,
        export_labels,
        import_labels,
        read_labels,
    )
    from calibration.pairwise import PairwiseAgreement, pairwise_agreement, pairwise_human_agreement
    from calibration.pairwise_cascade import (
        PairDecision,
        PairwiseCascade,
        PairwiseCascadeRun,
        comparison_confidence,
    )
    from calibration.ppi import (
        CorrectedEstimate,
        corrected_estimate,
        corrected_mean,
        corrected_rate,
    )
    from calibration.ppi_stratified import stratified_corrected_mean, stratified_corrected_rate
    from calibration.queue_records import (
        LabelQueueError,
        PositionPreference,
        QueueItem,
        QueueSettings,
    )
    from calibration.records import AlignmentRun, AnchorSet
    from calibration.report import AgreementReport, ClassScores, calibrate
    from calibration.selective import (
        SelectiveThreshold,
        ThresholdTest,
        cascade_thresholds,
        selective_threshold,
    )
    from calibration.status import CalibrationStatus, latest_calibration, warn_if_uncalibrated
    from calibration.uncertainty_sampling import draw_pps, inclusion_probabilities
    from judgecards.errors import AlignmentError, AuditError, EstimateError, LabelImportError
