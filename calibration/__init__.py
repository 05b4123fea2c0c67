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
module that defines them (``from calibration.stats import AgreementReport``). Importing one from
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
    "Audit": "calibration.audits",
    "Cascade": "calibration.cascades",
    "Jury": "calibration.juries",
    "LabelQueue": "calibration.audits",
    "PairwiseCascade": "calibration.cascades",
    "SmallSampleWarning": "calibration.stats",
    "agreement": "calibration.stats",
    "align": "calibration.alignment",
    "alignment_runs": "calibration.alignment",
    "calibrate": "calibration.stats",
    "cascade_thresholds": "calibration.stats",
    "comparison_confidence": "calibration.cascades",
    "corrected_estimate": "calibration.stats",
    "corrected_mean": "calibration.stats",
    "corrected_rate": "calibration.stats",
    "dawid_skene": "calibration.juries",
    "draw_pps": "calibration.stats",
    "estimate": "calibration.estimates",
    "evaluate_jury": "calibration.juries",
    "export_labels": "calibration.labels",
    "fit_jury": "calibration.juries",
    "fleiss_kappa": "calibration.stats",
    "import_labels": "calibration.labels",
    "inclusion_probabilities": "calibration.stats",
    "inter_annotator": "calibration.stats",
    "judge_rates": "calibration.stats",
    "judgment_confidence": "calibration.stats",
    "kappa": "calibration.stats",
    "krippendorff_alpha": "calibration.stats",
    "latest_calibration": "calibration.audits",
    "majority_vote": "calibration.juries",
    "order_consistency": "calibration.stats",
    "pairwise_agreement": "calibration.stats",
    "pairwise_human_agreement": "calibration.stats",
    "read_labels": "calibration.labels",
    "rogan_gladen": "calibration.stats",
    "sample_agreement": "calibration.stats",
    "selective_threshold": "calibration.stats",
    "stored_cascade_runs": "calibration.cascades",
    "stratified_corrected_mean": "calibration.stats",
    "stratified_corrected_rate": "calibration.stats",
    "warn_if_uncalibrated": "calibration.audits",
}

# Names dropped from the face: they resolve, with a DeprecationWarning naming their new home,
# for one release. Not part of `__all__` and not in the TYPE_CHECKING block.
_MOVED: dict[str, str] = {
    "AgreementReport": "calibration.stats",
    "AlignmentError": "judgecards.errors",
    "AlignmentResult": "calibration.alignment",
    "AlignmentRun": "calibration.labels",
    "AnchorSet": "calibration.labels",
    "AuditError": "judgecards.errors",
    "AuditReport": "calibration.audits",
    "AuditSummary": "calibration.audits",
    "CalibrationStatus": "calibration.audits",
    "CandidateScore": "calibration.alignment",
    "CascadeDecision": "calibration.cascades",
    "CascadeJudge": "calibration.cascades",
    "CascadeRun": "calibration.cascades",
    "CascadeStage": "calibration.cascades",
    "ClassScores": "calibration.stats",
    "CorrectedEstimate": "calibration.stats",
    "DawidSkeneResult": "calibration.juries",
    "EarlierQueue": "calibration.cascades",
    "EstimateError": "judgecards.errors",
    "EstimateRow": "calibration.estimates",
    "EstimatesReport": "calibration.estimates",
    "FittedJury": "calibration.juries",
    "InterAnnotatorReport": "calibration.stats",
    "JudgeRates": "calibration.stats",
    "JudgeReliability": "calibration.juries",
    "JurorReliability": "calibration.juries",
    "JuryEvaluation": "calibration.juries",
    "JuryRun": "calibration.juries",
    "JuryVerdict": "calibration.juries",
    "LabelImportError": "judgecards.errors",
    "LabelImportReport": "calibration.labels",
    "LabelQueueError": "calibration.audits",
    "MajorityVote": "calibration.juries",
    "PairDecision": "calibration.cascades",
    "PairwiseAgreement": "calibration.stats",
    "PairwiseCascadeRun": "calibration.cascades",
    "PositionPreference": "calibration.audits",
    "QueueItem": "calibration.audits",
    "QueueSettings": "calibration.audits",
    "RaterPair": "calibration.stats",
    "SelectiveThreshold": "calibration.stats",
    "StoredCascadeRun": "calibration.cascades",
    "ThresholdTest": "calibration.stats",
}

__all__ = public_names(_EXPORTS)

__getattr__, __dir__ = lazy_exports("calibration", globals(), _EXPORTS, moved=_MOVED)


if TYPE_CHECKING:
    # The same table for type checkers (`X as X` marks a re-export); tests/test_faces.py keeps
    # the two in step.
    from calibration.alignment import align as align
    from calibration.alignment import alignment_runs as alignment_runs
    from calibration.audits import Audit as Audit
    from calibration.audits import LabelQueue as LabelQueue
    from calibration.audits import latest_calibration as latest_calibration
    from calibration.audits import warn_if_uncalibrated as warn_if_uncalibrated
    from calibration.cascades import Cascade as Cascade
    from calibration.cascades import PairwiseCascade as PairwiseCascade
    from calibration.cascades import comparison_confidence as comparison_confidence
    from calibration.cascades import stored_cascade_runs as stored_cascade_runs
    from calibration.estimates import estimate as estimate
    from calibration.juries import Jury as Jury
    from calibration.juries import dawid_skene as dawid_skene
    from calibration.juries import evaluate_jury as evaluate_jury
    from calibration.juries import fit_jury as fit_jury
    from calibration.juries import majority_vote as majority_vote
    from calibration.labels import export_labels as export_labels
    from calibration.labels import import_labels as import_labels
    from calibration.labels import read_labels as read_labels
    from calibration.stats import SmallSampleWarning as SmallSampleWarning
    from calibration.stats import agreement as agreement
    from calibration.stats import calibrate as calibrate
    from calibration.stats import cascade_thresholds as cascade_thresholds
    from calibration.stats import corrected_estimate as corrected_estimate
    from calibration.stats import corrected_mean as corrected_mean
    from calibration.stats import corrected_rate as corrected_rate
    from calibration.stats import draw_pps as draw_pps
    from calibration.stats import fleiss_kappa as fleiss_kappa
    from calibration.stats import (
        inclusion_probabilities as inclusion_probabilities,
    )
    from calibration.stats import inter_annotator as inter_annotator
    from calibration.stats import judge_rates as judge_rates
    from calibration.stats import judgment_confidence as judgment_confidence
    from calibration.stats import kappa as kappa
    from calibration.stats import krippendorff_alpha as krippendorff_alpha
    from calibration.stats import order_consistency as order_consistency
    from calibration.stats import pairwise_agreement as pairwise_agreement
    from calibration.stats import pairwise_human_agreement as pairwise_human_agreement
    from calibration.stats import rogan_gladen as rogan_gladen
    from calibration.stats import sample_agreement as sample_agreement
    from calibration.stats import selective_threshold as selective_threshold
    from calibration.stats import (
        stratified_corrected_mean as stratified_corrected_mean,
    )
    from calibration.stats import (
        stratified_corrected_rate as stratified_corrected_rate,
    )
