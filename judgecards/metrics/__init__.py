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
=========================  =================================================================

Names are imported on first use (PEP 562): ``from judgecards.metrics import bootstrap_ci`` loads
``stats`` (and the small ``rouge``), not every metric module. Tiered evaluation, which drives a judge, lives in
`judgecards.tiered`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgecards._lazy import lazy_exports

# `rouge` is both a submodule and a function: imported here, before anything can import the
# submodule, so that the package attribute is the function (a lazy lookup would find the module).
from judgecards.metrics.rouge import rouge

_EXPORTS: dict[str, str] = {
    "DEFAULT_READINESS": "judgecards.metrics.agent",
    "ClassStats": "judgecards.metrics.classification",
    "ClassificationReport": "judgecards.metrics.classification",
    "Estimate": "judgecards.metrics.stats",
    "McNemarResult": "judgecards.metrics.stats",
    "PairedComparison": "judgecards.metrics.stats",
    "ReadinessLevel": "judgecards.metrics.agent",
    "Reliability": "judgecards.metrics.agent",
    "RougeScore": "judgecards.metrics.rouge",
    "RougeSummary": "judgecards.metrics.rouge",
    "ToolCall": "judgecards.metrics.agent",
    "ToolCorrectness": "judgecards.metrics.agent",
    "ToolCorrectnessSummary": "judgecards.metrics.agent",
    "ToolWeights": "judgecards.metrics.agent",
    "WinRate": "judgecards.metrics.preference",
    "accuracy": "judgecards.metrics.classification",
    "average_precision": "judgecards.metrics.ranking",
    "bootstrap_ci": "judgecards.metrics.stats",
    "classification_report": "judgecards.metrics.classification",
    "conversation_pass": "judgecards.metrics.agent",
    "conversation_reliability": "judgecards.metrics.agent",
    "dcg_at_k": "judgecards.metrics.ranking",
    "exact_match": "judgecards.metrics.text",
    "mc1": "judgecards.metrics.multiple_choice",
    "mc2": "judgecards.metrics.multiple_choice",
    "mcnemar": "judgecards.metrics.stats",
    "mean_average_precision": "judgecards.metrics.ranking",
    "mean_exact_match": "judgecards.metrics.text",
    "mean_mc1": "judgecards.metrics.multiple_choice",
    "mean_mc2": "judgecards.metrics.multiple_choice",
    "mean_ndcg_at_k": "judgecards.metrics.ranking",
    "mean_pass_at_k": "judgecards.metrics.sampling",
    "mean_pass_hat_k": "judgecards.metrics.sampling",
    "mean_precision_at_k": "judgecards.metrics.ranking",
    "mean_recall_at_k": "judgecards.metrics.ranking",
    "mean_rouge": "judgecards.metrics.rouge",
    "mean_substring_recall": "judgecards.metrics.text",
    "mean_token_f1": "judgecards.metrics.text",
    "mean_tool_correctness": "judgecards.metrics.agent",
    "mrr": "judgecards.metrics.ranking",
    "ndcg_at_k": "judgecards.metrics.ranking",
    "normalize_answer": "judgecards.metrics.text",
    "paired_bootstrap": "judgecards.metrics.stats",
    "pass_at_k": "judgecards.metrics.sampling",
    "pass_hat_k": "judgecards.metrics.sampling",
    "precision_at_k": "judgecards.metrics.ranking",
    "ranked_relevances": "judgecards.metrics.ranking",
    "readiness": "judgecards.metrics.agent",
    "recall_at_k": "judgecards.metrics.ranking",
    "reciprocal_rank": "judgecards.metrics.ranking",
    "substring_recall": "judgecards.metrics.text",
    "token_f1": "judgecards.metrics.text",
    "tool_correctness": "judgecards.metrics.agent",
    "win_rate": "judgecards.metrics.preference",
}

__all__ = [
    "DEFAULT_READINESS",
    "ClassStats",
    "ClassificationReport",
    "Estimate",
    "McNemarResult",
    "PairedComparison",
    "ReadinessLevel",
    "Reliability",
    "RougeScore",
    "RougeSummary",
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


__getattr__, __dir__ = lazy_exports("judgecards.metrics", globals(), _EXPORTS, __all__)


if TYPE_CHECKING:
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
    from judgecards.metrics.multiple_choice import (
        mc1,
        mc2,
        mean_mc1,
        mean_mc2,
    )
    from judgecards.metrics.preference import (
        WinRate,
        win_rate,
    )
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
    from judgecards.metrics.rouge import (
        RougeScore,
        RougeSummary,
        mean_rouge,
    )
    from judgecards.metrics.sampling import (
        mean_pass_at_k,
        mean_pass_hat_k,
        pass_at_k,
        pass_hat_k,
    )
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
