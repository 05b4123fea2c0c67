"""judgecards: LLM-as-a-judge with versioned judge cards, durable results and calibration.

The public surface is what ``__all__`` lists; everything else may change between versions.
Names are imported on first use (PEP 562), so ``judgecards --help`` does not pay for pydantic,
Jinja or the provider SDKs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "MOCK_BANNER": "judgecards.providers.mock",
    "Card": "judgecards.cards",
    "CardError": "judgecards.errors",
    "CardLockMismatch": "judgecards.errors",
    "CardNotFound": "judgecards.errors",
    "CardValidationError": "judgecards.errors",
    "InputError": "judgecards.errors",
    "Judge": "judgecards.judge",
    "JudgeOutputError": "judgecards.errors",
    "JudgeResult": "judgecards.results",
    "JudgecardsError": "judgecards.errors",
    "MissingInput": "judgecards.errors",
    "ProviderConfigError": "judgecards.errors",
    "ProviderError": "judgecards.errors",
    "RenderError": "judgecards.errors",
    "RetryPolicy": "judgecards.retry",
    "StoreError": "judgecards.errors",
    "Store": "judgecards.store",
    "TokenUsage": "judgecards.results",
    "TransportError": "judgecards.errors",
    "UncalibratedJudgeWarning": "judgecards.judge",
    "list_cards": "judgecards.cards",
    "load_card": "judgecards.cards",
}

__all__ = sorted(_EXPORTS, key=lambda name: (name.lower(), name))


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'judgecards' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])


if TYPE_CHECKING:
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
