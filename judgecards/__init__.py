"""judgecards: LLM-as-a-judge with versioned judge cards, durable results and calibration.

The public surface is what ``__all__`` lists; everything else may change between versions.
"""

from judgecards.cards import Card, list_cards, load_card
from judgecards.errors import (
    CardError,
    CardLockMismatch,
    CardNotFound,
    CardValidationError,
    InputError,
    JudgecardsError,
    JudgeOutputError,
    MissingInput,
    ProviderConfigError,
    ProviderError,
    RenderError,
    StoreError,
    TransportError,
)
from judgecards.judge import Judge, UncalibratedJudgeWarning
from judgecards.providers.mock import MOCK_BANNER
from judgecards.results import JudgeResult, TokenUsage
from judgecards.retry import RetryPolicy
from judgecards.store import Store

__version__ = "0.1.0"

__all__ = [
    "MOCK_BANNER",
    "Card",
    "CardError",
    "CardLockMismatch",
    "CardNotFound",
    "CardValidationError",
    "InputError",
    "Judge",
    "JudgeOutputError",
    "JudgeResult",
    "JudgecardsError",
    "MissingInput",
    "ProviderConfigError",
    "ProviderError",
    "RenderError",
    "RetryPolicy",
    "Store",
    "TokenUsage",
    "TransportError",
    "UncalibratedJudgeWarning",
    "list_cards",
    "load_card",
]
