"""judgecards: LLM-as-a-judge with versioned judge cards, durable results and calibration.

The public surface is what ``__all__`` lists; everything else may change between versions.
Names are imported on first use (PEP 562), so ``judgecards --help`` does not pay for pydantic,
Jinja or the provider SDKs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgecards._lazy import lazy_exports

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "BatchCollection": "judgecards.batch.collect",
    "BatchError": "judgecards.batch.api",
    "BatchJob": "judgecards.batch.submit",
    "bradley_terry": "judgecards.pairwise.ratings",
    "Card": "judgecards.cards",
    "CardError": "judgecards.errors",
    "CardLockMismatch": "judgecards.errors",
    "CardNotFound": "judgecards.errors",
    "CardValidationError": "judgecards.errors",
    "acompare_many": "judgecards.pairwise.compare",
    "compare": "judgecards.pairwise.compare",
    "compare_many": "judgecards.pairwise.compare",
    "ComparePlan": "judgecards.pairwise.budget",
    "plan_comparisons": "judgecards.pairwise.compare",
    "comparison_report": "judgecards.pairwise.report",
    "ComparisonResult": "judgecards.pairwise.compare",
    "comparisons_table": "judgecards.export",
    "Criterion": "judgecards.schemas",
    "elo": "judgecards.pairwise.ratings",
    "import_openai_graders": "judgecards.importers.openai_graders",
    "import_promptfoo": "judgecards.importers.promptfoo",
    "ImportResult": "judgecards.importers._output",
    "InputError": "judgecards.errors",
    "InputTooLarge": "judgecards.errors",
    "InvalidInput": "judgecards.errors",
    "Judge": "judgecards.judge",
    "JudgecardsError": "judgecards.errors",
    "JudgeOutputError": "judgecards.errors",
    "JudgeCheck": "judgecards.tiered.pipeline",
    "JudgeResult": "judgecards.results",
    "LengthCorrelation": "judgecards.bias",
    "list_cards": "judgecards.cards",
    "load_card": "judgecards.cards",
    "load_prices": "judgecards.pricing",
    "MissingExtra": "judgecards.errors",
    "MissingInput": "judgecards.errors",
    "MOCK_BANNER": "judgecards.providers.mock",
    "model_family": "judgecards.bias",
    "ModelPrice": "judgecards.pricing",
    "ModelRating": "judgecards.pairwise.ratings",
    "PairOutcome": "judgecards.pairwise.rules",
    "pairwise_report": "judgecards.pairwise.report",
    "PairwiseReport": "judgecards.pairwise.report",
    "PairwiseVerbosity": "judgecards.bias",
    "NotRecorded": "judgecards.errors",
    "OutputError": "judgecards.errors",
    "PriceTable": "judgecards.pricing",
    "ProviderConfigError": "judgecards.errors",
    "ProviderError": "judgecards.errors",
    "rank_stored": "judgecards.pairwise.stored",
    "Ratings": "judgecards.pairwise.ratings",
    "RankingError": "judgecards.errors",
    "RenderError": "judgecards.errors",
    "resolve_pair": "judgecards.pairwise.rules",
    "results_table": "judgecards.export",
    "RetryPolicy": "judgecards.retry",
    "RubricPolicy": "judgecards.schemas",
    "RunPlan": "judgecards.plan",
    "self_preference_warning": "judgecards.bias",
    "OutputMode": "judgecards.structured_output",
    "strict_schema": "judgecards.structured_output",
    "Store": "judgecards.store",
    "StoreError": "judgecards.errors",
    "Tier": "judgecards.tiered.pipeline",
    "TieredEval": "judgecards.tiered.pipeline",
    "EvalPlan": "judgecards.tiered.plan",
    "TieredReport": "judgecards.tiered.report",
    "TokenUsage": "judgecards.results",
    "TransportCounters": "judgecards.retry",
    "TransportError": "judgecards.errors",
    "UncalibratedJudgeWarning": "judgecards.errors",
    "verbosity_bias_pairwise": "judgecards.bias",
    "verbosity_bias_single": "judgecards.bias",
    "weighted_scores": "judgecards.geval",
    "write_table": "judgecards.export",
    "WrongCardKind": "judgecards.errors",
    "AdaptiveLimiter": "judgecards.rate",
    "LimiterStats": "judgecards.rate",
    "Refusal": "judgecards.rate",
    "CostCap": "judgecards.budget",
    "BudgetStats": "judgecards.budget",
    "BudgetError": "judgecards.errors",
}

__all__ = [
    "acompare_many",
    "AdaptiveLimiter",
    "BatchCollection",
    "BatchError",
    "BatchJob",
    "bradley_terry",
    "BudgetError",
    "BudgetStats",
    "Card",
    "CardError",
    "CardLockMismatch",
    "CardNotFound",
    "CardValidationError",
    "compare",
    "compare_many",
    "ComparePlan",
    "comparison_report",
    "ComparisonResult",
    "comparisons_table",
    "CostCap",
    "Criterion",
    "elo",
    "EvalPlan",
    "import_openai_graders",
    "import_promptfoo",
    "ImportResult",
    "InputError",
    "InputTooLarge",
    "InvalidInput",
    "Judge",
    "JudgecardsError",
    "JudgeCheck",
    "JudgeOutputError",
    "JudgeResult",
    "LengthCorrelation",
    "LimiterStats",
    "list_cards",
    "load_card",
    "load_prices",
    "MissingExtra",
    "MissingInput",
    "MOCK_BANNER",
    "model_family",
    "ModelPrice",
    "ModelRating",
    "NotRecorded",
    "OutputError",
    "OutputMode",
    "PairOutcome",
    "pairwise_report",
    "PairwiseReport",
    "PairwiseVerbosity",
    "plan_comparisons",
    "PriceTable",
    "ProviderConfigError",
    "ProviderError",
    "rank_stored",
    "RankingError",
    "Ratings",
    "Refusal",
    "RenderError",
    "resolve_pair",
    "results_table",
    "RetryPolicy",
    "RubricPolicy",
    "RunPlan",
    "self_preference_warning",
    "Store",
    "StoreError",
    "strict_schema",
    "Tier",
    "TieredEval",
    "TieredReport",
    "TokenUsage",
    "TransportCounters",
    "TransportError",
    "UncalibratedJudgeWarning",
    "verbosity_bias_pairwise",
    "verbosity_bias_single",
    "weighted_scores",
    "write_table",
    "WrongCardKind",
]


__getattr__, __dir__ = lazy_exports("judgecards", globals(), _EXPORTS, __all__)


if TYPE_CHECKING:
    from judgecards.batch.api import BatchError
    from judgecards.batch.collect import BatchCollection
    from judgecards.batch.submit import BatchJob
    from judgecards.bias import (
        LengthCorrelation,
        PairwiseVerbosity,
        model_family,
        self_preference_warning,
        verbosity_bias_pairwise,
        verbosity_bias_single,
    )
    from judgecards.budget import (
        BudgetStats,
        CostCap,
    )
    from judgecards.cards import (
        Card,
        list_cards,
        load_card,
    )
    from judgecards.errors import (
        BudgetError,
        CardError,
        CardLockMismatch,
        CardNotFound,
        CardValidationError,
        InputError,
        InputTooLarge,
        InvalidInput,
        JudgecardsError,
        JudgeOutputError,
        MissingExtra,
        MissingInput,
        NotRecorded,
        OutputError,
        ProviderConfigError,
        ProviderError,
        RankingError,
        RenderError,
        StoreError,
        TransportError,
        UncalibratedJudgeWarning,
        WrongCardKind,
    )
    from judgecards.export import (
        comparisons_table,
        results_table,
        write_table,
    )
    from judgecards.geval import (
        weighted_scores,
    )
    from judgecards.importers._output import (
        ImportResult,
    )
    from judgecards.importers.openai_graders import (
        import_openai_graders,
    )
    from judgecards.importers.promptfoo import (
        import_promptfoo,
    )
    from judgecards.judge import (
        Judge,
    )
    from judgecards.pairwise.budget import (
        ComparePlan,
    )
    from judgecards.pairwise.compare import (
        ComparisonResult,
        acompare_many,
        compare,
        compare_many,
        plan_comparisons,
    )
    from judgecards.pairwise.ratings import (
        ModelRating,
        Ratings,
        bradley_terry,
        elo,
    )
    from judgecards.pairwise.report import (
        PairwiseReport,
        comparison_report,
        pairwise_report,
    )
    from judgecards.pairwise.rules import (
        PairOutcome,
        resolve_pair,
    )
    from judgecards.pairwise.stored import (
        rank_stored,
    )
    from judgecards.plan import (
        RunPlan,
    )
    from judgecards.pricing import (
        ModelPrice,
        PriceTable,
        load_prices,
    )
    from judgecards.providers.mock import (
        MOCK_BANNER,
    )
    from judgecards.rate import (
        AdaptiveLimiter,
        LimiterStats,
        Refusal,
    )
    from judgecards.results import (
        JudgeResult,
        TokenUsage,
    )
    from judgecards.retry import (
        RetryPolicy,
        TransportCounters,
    )
    from judgecards.schemas import (
        Criterion,
        RubricPolicy,
    )
    from judgecards.store import (
        Store,
    )
    from judgecards.structured_output import (
        OutputMode,
        strict_schema,
    )
    from judgecards.tiered.pipeline import (
        JudgeCheck,
        Tier,
        TieredEval,
    )
    from judgecards.tiered.plan import (
        EvalPlan,
    )
    from judgecards.tiered.report import (
        TieredReport,
    )
