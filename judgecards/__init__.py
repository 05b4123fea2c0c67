"""judgecards: LLM-as-a-judge with versioned judge cards, durable results and calibration.

The public surface is what ``__all__`` lists: about 35 names to judge, compare, store and catch
errors. Everything else is imported from its subpackage (``from judgecards.batch import BatchJob``,
``from judgecards.errors import CardLockMismatch``); a name that used to be here still works for
one release, with a `DeprecationWarning` naming its new import.
Names are imported on first use (PEP 562), so ``judgecards --help`` does not pay for pydantic,
Jinja or the provider SDKs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgecards.faces import lazy_exports, public_names

__version__ = "0.1.0"

# The face, grouped by job: judging, cards, storage, pairwise, tiered evaluation, and the errors a
# caller catches. `__all__` is derived from this table; everything else is imported from its
# subpackage (`judgecards.errors`, `judgecards.pairwise.*`, `judgecards.batch`, `judgecards.tiered`,
# `judgecards.limits.pricing`, `judgecards.limits.rate`, `judgecards.judging.bias`, `judgecards.storage.export`, ...).
_EXPORTS: dict[str, str] = {
    "BudgetError": "judgecards.errors",
    "Card": "judgecards.cards",
    "CardError": "judgecards.errors",
    "CardNotFound": "judgecards.errors",
    "ComparisonResult": "judgecards.pairwise.compare",
    "Criterion": "judgecards.schemas",
    "InputError": "judgecards.errors",
    "InvalidInput": "judgecards.errors",
    "Judge": "judgecards.judging",
    "JudgeOutputError": "judgecards.errors",
    "JudgeResult": "judgecards.storage",
    "JudgecardsError": "judgecards.errors",
    "MissingExtra": "judgecards.errors",
    "MissingInput": "judgecards.errors",
    "NotRecorded": "judgecards.errors",
    "OutputMode": "judgecards.replies",
    "ProviderConfigError": "judgecards.errors",
    "ProviderError": "judgecards.errors",
    "RetryPolicy": "judgecards.judging",
    "RubricPolicy": "judgecards.schemas",
    "RunPlan": "judgecards.limits",
    "Store": "judgecards.storage",
    "StoreError": "judgecards.errors",
    "TieredEval": "judgecards.tiered.pipeline",
    "TokenUsage": "judgecards.storage",
    "TransportError": "judgecards.errors",
    "UncalibratedJudgeWarning": "judgecards.errors",
    "acompare_many": "judgecards.pairwise.compare",
    "compare": "judgecards.pairwise.compare",
    "compare_many": "judgecards.pairwise.compare",
    "comparison_report": "judgecards.pairwise.report",
    "list_cards": "judgecards.cards",
    "load_card": "judgecards.cards",
    "rank_stored": "judgecards.pairwise.stored",
}

# Names dropped from the face: they resolve, with a DeprecationWarning naming their new home,
# for one release. Not part of `__all__` and not in the TYPE_CHECKING block.
_MOVED: dict[str, str] = {
    "MOCK_BANNER": "judgecards.providers.mock",
    "AdaptiveLimiter": "judgecards.limits",
    "BatchCollection": "judgecards.batch",
    "BatchError": "judgecards.batch",
    "BatchJob": "judgecards.batch",
    "BudgetStats": "judgecards.limits",
    "CardLockMismatch": "judgecards.errors",
    "CardValidationError": "judgecards.errors",
    "ComparePlan": "judgecards.pairwise.budget",
    "CostCap": "judgecards.limits",
    "EvalPlan": "judgecards.tiered",
    "ImportResult": "judgecards.importers",
    "InputTooLarge": "judgecards.errors",
    "JudgeCheck": "judgecards.tiered",
    "LengthCorrelation": "judgecards.judging",
    "LimiterStats": "judgecards.limits",
    "ModelPrice": "judgecards.limits",
    "ModelRating": "judgecards.pairwise.ratings",
    "OutputError": "judgecards.errors",
    "PairOutcome": "judgecards.pairwise.rules",
    "PairwiseReport": "judgecards.pairwise.report",
    "PairwiseVerbosity": "judgecards.judging",
    "PriceTable": "judgecards.limits",
    "RankingError": "judgecards.errors",
    "Ratings": "judgecards.pairwise.ratings",
    "Refusal": "judgecards.limits",
    "RenderError": "judgecards.errors",
    "Tier": "judgecards.tiered",
    "TieredReport": "judgecards.tiered",
    "TransportCounters": "judgecards.judging",
    "WrongCardKind": "judgecards.errors",
    "bradley_terry": "judgecards.pairwise.ratings",
    "comparisons_table": "judgecards.storage",
    "elo": "judgecards.pairwise.ratings",
    "import_openai_graders": "judgecards.importers",
    "import_promptfoo": "judgecards.importers",
    "load_prices": "judgecards.limits",
    "model_family": "judgecards.judging",
    "pairwise_report": "judgecards.pairwise.report",
    "plan_comparisons": "judgecards.pairwise.compare",
    "resolve_pair": "judgecards.pairwise.rules",
    "results_table": "judgecards.storage",
    "self_preference_warning": "judgecards.judging",
    "strict_schema": "judgecards.replies",
    "verbosity_bias_pairwise": "judgecards.judging",
    "verbosity_bias_single": "judgecards.judging",
    "weighted_scores": "judgecards.replies",
    "write_table": "judgecards.storage",
}

__all__ = public_names(_EXPORTS)

__getattr__, __dir__ = lazy_exports("judgecards", globals(), _EXPORTS, moved=_MOVED)


if TYPE_CHECKING:
    # The same table for type checkers (`X as X` marks a re-export); tests/test_faces.py keeps
    # the two in step.
    from judgecards.cards import Card as Card
    from judgecards.cards import list_cards as list_cards
    from judgecards.cards import load_card as load_card
    from judgecards.errors import BudgetError as BudgetError
    from judgecards.errors import CardError as CardError
    from judgecards.errors import CardNotFound as CardNotFound
    from judgecards.errors import InputError as InputError
    from judgecards.errors import InvalidInput as InvalidInput
    from judgecards.errors import JudgecardsError as JudgecardsError
    from judgecards.errors import JudgeOutputError as JudgeOutputError
    from judgecards.errors import MissingExtra as MissingExtra
    from judgecards.errors import MissingInput as MissingInput
    from judgecards.errors import NotRecorded as NotRecorded
    from judgecards.errors import ProviderConfigError as ProviderConfigError
    from judgecards.errors import ProviderError as ProviderError
    from judgecards.errors import StoreError as StoreError
    from judgecards.errors import TransportError as TransportError
    from judgecards.errors import UncalibratedJudgeWarning as UncalibratedJudgeWarning
    from judgecards.judging import Judge as Judge
    from judgecards.judging import RetryPolicy as RetryPolicy
    from judgecards.limits import RunPlan as RunPlan
    from judgecards.pairwise.compare import ComparisonResult as ComparisonResult
    from judgecards.pairwise.compare import acompare_many as acompare_many
    from judgecards.pairwise.compare import compare as compare
    from judgecards.pairwise.compare import compare_many as compare_many
    from judgecards.pairwise.report import comparison_report as comparison_report
    from judgecards.pairwise.stored import rank_stored as rank_stored
    from judgecards.replies import OutputMode as OutputMode
    from judgecards.schemas import Criterion as Criterion
    from judgecards.schemas import RubricPolicy as RubricPolicy
    from judgecards.storage import JudgeResult as JudgeResult
    from judgecards.storage import Store as Store
    from judgecards.storage import TokenUsage as TokenUsage
    from judgecards.tiered.pipeline import TieredEval as TieredEval
