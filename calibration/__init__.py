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
one exception tree under `judgecards.JudgecardsError`, and imported from there.

``__all__`` holds the functions and the classes a caller builds; the result types named in
parentheses above are returned by them and imported, when a caller needs to name one, from the
module that defines them (``from calibration.stats.report import AgreementReport``). Importing one from
``calibration`` itself still works in this release, with a `DeprecationWarning` that names its
module. The calibration tables' SQL is all in
`calibration.labels.repository`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgecards.faces import lazy_exports, public_names

# Names are imported on first use (PEP 562): the command line imports `calibration.audits.status` on
# every run, and that must not pay for numpy, scipy and scikit-learn. This table is the face:
# `__all__` is derived from it. To add a name, add it here and to the TYPE_CHECKING imports below
# (tests/test_faces.py checks they match). Result types stay importable from their modules.
_EXPORTS: dict[str, str] = {
    "Audit": "calibration.audits.audit",
    "Cascade": "calibration.cascades.cascade",
    "Jury": "calibration.juries.run",
    "LabelQueue": "calibration.audits.queue",
    "PairwiseCascade": "calibration.cascades.pairwise",
    "SmallSampleWarning": "calibration.stats._core",
    "agreement": "calibration.stats.agreement_measures",
    "align": "calibration.alignment",
    "alignment_runs": "calibration.alignment",
    "calibrate": "calibration.stats.report",
    "cascade_thresholds": "calibration.stats.selective",
    "comparison_confidence": "calibration.cascades.pairwise",
    "corrected_estimate": "calibration.stats.ppi",
    "corrected_mean": "calibration.stats.ppi",
    "corrected_rate": "calibration.stats.ppi",
    "dawid_skene": "calibration.juries.dawid_skene_model",
    "draw_pps": "calibration.stats.uncertainty_sampling",
    "estimate": "calibration.estimates",
    "evaluate_jury": "calibration.juries.jury",
    "export_labels": "calibration.labels",
    "fit_jury": "calibration.juries.jury",
    "fleiss_kappa": "calibration.stats.interrater",
    "import_labels": "calibration.labels",
    "inclusion_probabilities": "calibration.stats.uncertainty_sampling",
    "inter_annotator": "calibration.stats.interrater",
    "judge_rates": "calibration.stats.error_rates",
    "judgment_confidence": "calibration.stats.confidence",
    "kappa": "calibration.stats.agreement_measures",
    "krippendorff_alpha": "calibration.stats.interrater",
    "latest_calibration": "calibration.audits.status",
    "majority_vote": "calibration.juries.jury",
    "order_consistency": "calibration.stats.confidence",
    "pairwise_agreement": "calibration.stats.pairwise",
    "pairwise_human_agreement": "calibration.stats.pairwise",
    "read_labels": "calibration.labels",
    "rogan_gladen": "calibration.stats.error_rates",
    "sample_agreement": "calibration.stats.confidence",
    "selective_threshold": "calibration.stats.selective",
    "stored_cascade_runs": "calibration.cascades.history",
    "stratified_corrected_mean": "calibration.stats.ppi_stratified",
    "stratified_corrected_rate": "calibration.stats.ppi_stratified",
    "warn_if_uncalibrated": "calibration.audits.status",
}

# Names dropped from the face: they resolve, with a DeprecationWarning naming their new home,
# for one release. Not part of `__all__` and not in the TYPE_CHECKING block.
_MOVED: dict[str, str] = {
    "AgreementReport": "calibration.stats.report",
    "AlignmentError": "judgecards.errors",
    "AlignmentResult": "calibration.alignment.run",
    "AlignmentRun": "calibration.labels.records",
    "AnchorSet": "calibration.labels.records",
    "AuditError": "judgecards.errors",
    "AuditReport": "calibration.audits.report",
    "AuditSummary": "calibration.audits.report",
    "CalibrationStatus": "calibration.audits.status",
    "CandidateScore": "calibration.alignment.run",
    "CascadeDecision": "calibration.cascades.cascade",
    "CascadeJudge": "calibration.cascades.history",
    "CascadeRun": "calibration.cascades.cascade",
    "CascadeStage": "calibration.cascades.cascade",
    "ClassScores": "calibration.stats.report",
    "CorrectedEstimate": "calibration.stats.ppi",
    "DawidSkeneResult": "calibration.juries.dawid_skene_model",
    "EarlierQueue": "calibration.cascades.stages",
    "EstimateError": "judgecards.errors",
    "EstimateRow": "calibration.estimates",
    "EstimatesReport": "calibration.estimates",
    "FittedJury": "calibration.juries.jury",
    "InterAnnotatorReport": "calibration.stats.interrater",
    "JudgeRates": "calibration.stats.error_rates",
    "JudgeReliability": "calibration.juries.jury",
    "JurorReliability": "calibration.juries.run",
    "JuryEvaluation": "calibration.juries.jury",
    "JuryRun": "calibration.juries.run",
    "JuryVerdict": "calibration.juries.run",
    "LabelImportError": "judgecards.errors",
    "LabelImportReport": "calibration.labels",
    "LabelQueueError": "calibration.audits.queue_records",
    "MajorityVote": "calibration.juries.jury",
    "PairDecision": "calibration.cascades.pairwise",
    "PairwiseAgreement": "calibration.stats.pairwise",
    "PairwiseCascadeRun": "calibration.cascades.pairwise",
    "PositionPreference": "calibration.audits.queue_records",
    "QueueItem": "calibration.audits.queue_records",
    "QueueSettings": "calibration.audits.queue_records",
    "RaterPair": "calibration.stats.interrater",
    "SelectiveThreshold": "calibration.stats.selective",
    "StoredCascadeRun": "calibration.cascades.history",
    "ThresholdTest": "calibration.stats.selective",
}

__all__ = public_names(_EXPORTS)

__getattr__, __dir__ = lazy_exports("calibration", globals(), _EXPORTS, moved=_MOVED)


if TYPE_CHECKING:
    # The same table for type checkers (`X as X` marks a re-export); tests/test_faces.py keeps
    # the two in step.
    from calibration.alignment import align as align
    from calibration.alignment import alignment_runs as alignment_runs
    from calibration.audits.audit import Audit as Audit
    from calibration.audits.queue import LabelQueue as LabelQueue
    from calibration.audits.status import latest_calibration as latest_calibration
    from calibration.audits.status import warn_if_uncalibrated as warn_if_uncalibrated
    from calibration.cascades.cascade import Cascade as Cascade
    from calibration.cascades.history import stored_cascade_runs as stored_cascade_runs
    from calibration.cascades.pairwise import PairwiseCascade as PairwiseCascade
    from calibration.cascades.pairwise import comparison_confidence as comparison_confidence
    from calibration.estimates import estimate as estimate
    from calibration.juries.dawid_skene_model import dawid_skene as dawid_skene
    from calibration.juries.jury import evaluate_jury as evaluate_jury
    from calibration.juries.jury import fit_jury as fit_jury
    from calibration.juries.jury import majority_vote as majority_vote
    from calibration.juries.run import Jury as Jury
    from calibration.labels import export_labels as export_labels
    from calibration.labels import import_labels as import_labels
    from calibration.labels import read_labels as read_labels
    from calibration.stats._core import SmallSampleWarning as SmallSampleWarning
    from calibration.stats.agreement_measures import agreement as agreement
    from calibration.stats.agreement_measures import kappa as kappa
    from calibration.stats.confidence import judgment_confidence as judgment_confidence
    from calibration.stats.confidence import order_consistency as order_consistency
    from calibration.stats.confidence import sample_agreement as sample_agreement
    from calibration.stats.error_rates import judge_rates as judge_rates
    from calibration.stats.error_rates import rogan_gladen as rogan_gladen
    from calibration.stats.interrater import fleiss_kappa as fleiss_kappa
    from calibration.stats.interrater import inter_annotator as inter_annotator
    from calibration.stats.interrater import krippendorff_alpha as krippendorff_alpha
    from calibration.stats.pairwise import pairwise_agreement as pairwise_agreement
    from calibration.stats.pairwise import pairwise_human_agreement as pairwise_human_agreement
    from calibration.stats.ppi import corrected_estimate as corrected_estimate
    from calibration.stats.ppi import corrected_mean as corrected_mean
    from calibration.stats.ppi import corrected_rate as corrected_rate
    from calibration.stats.ppi_stratified import (
        stratified_corrected_mean as stratified_corrected_mean,
    )
    from calibration.stats.ppi_stratified import (
        stratified_corrected_rate as stratified_corrected_rate,
    )
    from calibration.stats.report import calibrate as calibrate
    from calibration.stats.selective import cascade_thresholds as cascade_thresholds
    from calibration.stats.selective import selective_threshold as selective_threshold
    from calibration.stats.uncertainty_sampling import draw_pps as draw_pps
    from calibration.stats.uncertainty_sampling import (
        inclusion_probabilities as inclusion_probabilities,
    )
