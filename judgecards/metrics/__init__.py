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

from judgecards.faces import lazy_exports, public_names

# `rouge` is both a submodule and a function: imported here, before anything can import the
# submodule, so that the package attribute is the function (a lazy lookup would find the module).
from judgecards.metrics.rouge import rouge as rouge

# The face: the metrics, their aggregates and the inputs they take. `__all__` is derived from this
# table; result types (`WinRate`, `ClassificationReport`, ...) are imported from their modules.
_EXPORTS: dict[str, str] = {
    "Estimate": "judgecards.metrics.stats",
    "ToolCall": "judgecards.metrics.agent",
    "ToolWeights": "judgecards.metrics.agent",
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
    "paired_bootstrap": "judgecards.metrics.stats",
    "pass_at_k": "judgecards.metrics.sampling",
    "pass_hat_k": "judgecards.metrics.sampling",
    "precision_at_k": "judgecards.metrics.ranking",
    "readiness": "judgecards.metrics.agent",
    "recall_at_k": "judgecards.metrics.ranking",
    "rouge": "judgecards.metrics.rouge",
    "substring_recall": "judgecards.metrics.text",
    "token_f1": "judgecards.metrics.text",
    "tool_correctness": "judgecards.metrics.agent",
    "win_rate": "judgecards.metrics.preference",
}

# Names dropped from the face: they resolve, with a DeprecationWarning naming their new home,
# for one release. Not part of `__all__` and not in the TYPE_CHECKING block.
_MOVED: dict[str, str] = {
    "DEFAULT_READINESS": "judgecards.metrics.agent",
    "ClassStats": "judgecards.metrics.classification",
    "ClassificationReport": "judgecards.metrics.classification",
    "McNemarResult": "judgecards.metrics.stats",
    "PairedComparison": "judgecards.metrics.stats",
    "ReadinessLevel": "judgecards.metrics.agent",
    "Reliability": "judgecards.metrics.agent",
    "RougeScore": "judgecards.metrics.rouge",
    "RougeSummary": "judgecards.metrics.rouge",
    "ToolCorrectness": "judgecards.metrics.agent",
    "ToolCorrectnessSummary": "judgecards.metrics.agent",
    "WinRate": "judgecards.metrics.preference",
    "normalize_answer": "judgecards.metrics.text",
    "ranked_relevances": "judgecards.metrics.ranking",
    "reciprocal_rank": "judgecards.metrics.ranking",
}

__all__ = public_names(_EXPORTS)

__getattr__, __dir__ = lazy_exports("judgecards.metrics", globals(), _EXPORTS, moved=_MOVED)


if TYPE_CHECKING:
    # The same table for type checkers (`X as X` marks a re-export); tests/test_faces.py keeps
    # the two in step.
    from judgecards.metrics.agent import ToolCall as ToolCall
    from judgecards.metrics.agent import ToolWeights as ToolWeights
    from judgecards.metrics.agent import conversation_pass as conversation_pass
    from judgecards.metrics.agent import conversation_reliability as conversation_reliability
    from judgecards.metrics.agent import mean_tool_correctness as mean_tool_correctness
    from judgecards.metrics.agent import readiness as readiness
    from judgecards.metrics.agent import tool_correctness as tool_correctness
    from judgecards.metrics.classification import accuracy as accuracy
    from judgecards.metrics.classification import classification_report as classification_report
    from judgecards.metrics.multiple_choice import mc1 as mc1
    from judgecards.metrics.multiple_choice import mc2 as mc2
    from judgecards.metrics.multiple_choice import mean_mc1 as mean_mc1
    from judgecards.metrics.multiple_choice import mean_mc2 as mean_mc2
    from judgecards.metrics.preference import win_rate as win_rate
    from judgecards.metrics.ranking import average_precision as average_precision
    from judgecards.metrics.ranking import dcg_at_k as dcg_at_k
    from judgecards.metrics.ranking import mean_average_precision as mean_average_precision
    from judgecards.metrics.ranking import mean_ndcg_at_k as mean_ndcg_at_k
    from judgecards.metrics.ranking import mean_precision_at_k as mean_precision_at_k
    from judgecards.metrics.ranking import mean_recall_at_k as mean_recall_at_k
    from judgecards.metrics.ranking import mrr as mrr
    from judgecards.metrics.ranking import ndcg_at_k as ndcg_at_k
    from judgecards.metrics.ranking import precision_at_k as precision_at_k
    from judgecards.metrics.ranking import recall_at_k as recall_at_k
    from judgecards.metrics.rouge import mean_rouge as mean_rouge
    from judgecards.metrics.sampling import mean_pass_at_k as mean_pass_at_k
    from judgecards.metrics.sampling import mean_pass_hat_k as mean_pass_hat_k
    from judgecards.metrics.sampling import pass_at_k as pass_at_k
    from judgecards.metrics.sampling import pass_hat_k as pass_hat_k
    from judgecards.metrics.stats import Estimate as Estimate
    from judgecards.metrics.stats import bootstrap_ci as bootstrap_ci
    from judgecards.metrics.stats import mcnemar as mcnemar
    from judgecards.metrics.stats import paired_bootstrap as paired_bootstrap
    from judgecards.metrics.text import exact_match as exact_match
    from judgecards.metrics.text import mean_exact_match as mean_exact_match
    from judgecards.metrics.text import mean_substring_recall as mean_substring_recall
    from judgecards.metrics.text import mean_token_f1 as mean_token_f1
    from judgecards.metrics.text import substring_recall as substring_recall
    from judgecards.metrics.text import token_f1 as token_f1
