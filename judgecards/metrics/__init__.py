"""Deterministic metrics: answer matching, ROUGE, classification, multiple choice, pass@k,
ranking, agent reliability and tool use, and the statistics to compare systems.

Every metric is a small typed function over one example, plus an aggregate over a data set
(named ``mean_*``, or the metric's usual name when it is an average by definition, like `mrr`)
that returns an `Estimate` with a bootstrap interval from `bootstrap_ci`. Each function's
docstring states its normalisation, range and edge cases.

=========================  =================================================================
module                     what it holds
=========================  =================================================================
``text``                   `exact_match`, `token_f1`, `substring_recall`, SQuAD normalisation
``rouge``                  `rouge` (ROUGE-N, ROUGE-L; matches Google's rouge-score)
``classification``         `accuracy`, `classification_report` (with the class balance)
``multiple_choice``        `mc1`, `mc2` (TruthfulQA)
``sampling``               `pass_at_k`, `pass_hat_k` (unbiased, per problem)
``ranking``                `ndcg_at_k`, `mrr`, `recall_at_k`, `average_precision`, ... (trec_eval)
``agent``                  `conversation_pass`, `Reliability`, `readiness`, `tool_correctness`
``preference``             `win_rate`
``stats``                  `bootstrap_ci`, `paired_bootstrap`, `mcnemar`
``tiers``                  `TieredEval`: format checks, then a metric, then a judge on survivors
=========================  =================================================================
"""

from judgecards.metrics.agent import (
    DEFAULT_READINESS,
    ReadinessLevel,
    Reliability,
    ToolCall,
    ToolCorrectness,
    ToolCorrectnessSummary,
    ToolWeights,
    conversation_pass,
    conversation_reliability,
    mean_tool_correctness,
    readiness,
    tool_correctness,
)
from judgecards.metrics.classification import (
    ClassificationReport,
    ClassStats,
    accuracy,
    classification_report,
)
from judgecards.metrics.multiple_choice import mc1, mc2, mean_mc1, mean_mc2
from judgecards.metrics.preference import WinRate, win_rate
from judgecards.metrics.ranking import (
    average_precision,
    dcg_at_k,
    mean_average_precision,
    mean_ndcg_at_k,
    mean_precision_at_k,
    mean_recall_at_k,
    mrr,
    ndcg_at_k,
    precision_at_k,
    ranked_relevances,
    recall_at_k,
    reciprocal_rank,
)
from judgecards.metrics.rouge import RougeScore, RougeSummary, mean_rouge, rouge
from judgecards.metrics.sampling import mean_pass_at_k, mean_pass_hat_k, pass_at_k, pass_hat_k
from judgecards.metrics.stats import (
    Estimate,
    McNemarResult,
    PairedComparison,
    bootstrap_ci,
    mcnemar,
    paired_bootstrap,
)
from judgecards.metrics.text import (
    exact_match,
    mean_exact_match,
    mean_substring_recall,
    mean_token_f1,
    normalize_answer,
    substring_recall,
    token_f1,
)
from judgecards.metrics.tiers import (
    Check,
    CheckResult,
    ItemOutcome,
    JsonCheck,
    JudgeCheck,
    LengthCheck,
    MetricCheck,
    RegexCheck,
    Tier,
    TieredEval,
    TieredReport,
    TierStats,
    metric_check_names,
)

__all__ = [
    "DEFAULT_READINESS",
    "Check",
    "CheckResult",
    "ClassStats",
    "ClassificationReport",
    "Estimate",
    "ItemOutcome",
    "JsonCheck",
    "JudgeCheck",
    "LengthCheck",
    "McNemarResult",
    "MetricCheck",
    "PairedComparison",
    "ReadinessLevel",
    "RegexCheck",
    "Reliability",
    "RougeScore",
    "RougeSummary",
    "Tier",
    "TierStats",
    "TieredEval",
    "TieredReport",
    "ToolCall",
    "ToolCorrectness",
    "ToolCorrectnessSummary",
    "ToolWeights",
    "WinRate",
    "accuracy",
    "average_precision",
    "bootstrap_ci",
    "classification_report",
    "conversation_pass",
    "conversation_reliability",
    "dcg_at_k",
    "exact_match",
    "mc1",
    "mc2",
    "mcnemar",
    "mean_average_precision",
    "mean_exact_match",
    "mean_mc1",
    "mean_mc2",
    "mean_ndcg_at_k",
    "mean_pass_at_k",
    "mean_pass_hat_k",
    "mean_precision_at_k",
    "mean_recall_at_k",
    "mean_rouge",
    "mean_substring_recall",
    "mean_token_f1",
    "mean_tool_correctness",
    "metric_check_names",
    "mrr",
    "ndcg_at_k",
    "normalize_answer",
    "paired_bootstrap",
    "pass_at_k",
    "pass_hat_k",
    "precision_at_k",
    "ranked_relevances",
    "readiness",
    "recall_at_k",
    "reciprocal_rank",
    "rouge",
    "substring_recall",
    "token_f1",
    "tool_correctness",
    "win_rate",
]
