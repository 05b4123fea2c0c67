"""Run limits: rate limits, cost budgets, prices, token counts and the plan (cost before a run)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgecards.faces import lazy_exports, public_names

# Imported on first use, like `judgecards`' face: reading one name loads one module.
# `_EXPORTS` (this face's `__all__`, documented under it): names a user imports from here.
_EXPORTS: dict[str, str] = {
    "AdaptiveLimiter": "judgecards.limits.rate",
    "BudgetStats": "judgecards.limits.budget",
    "CostCap": "judgecards.limits.budget",
    "LimiterStats": "judgecards.limits.rate",
    "ModelPrice": "judgecards.limits.pricing",
    "PriceTable": "judgecards.limits.pricing",
    "Refusal": "judgecards.limits.rate",
    "load_prices": "judgecards.limits.pricing",
}
# `_SHARED`: what `judgecards`' face (documented there), the other subpackages, cli, serve,
# report and calibration take from here.
_SHARED: dict[str, str] = {
    "CHARACTERS": "judgecards.limits.token_count",
    "PRICES_ENV": "judgecards.limits.pricing",
    "Permit": "judgecards.limits.rate",
    "RateLimits": "judgecards.limits.rate",
    "RunPlan": "judgecards.limits.plan",
    "TokenCounter": "judgecards.limits.token_count",
    "counter_for": "judgecards.limits.token_count",
    "estimate_tokens": "judgecards.limits.plan",
    "format_cost": "judgecards.limits.pricing",
    "is_overload": "judgecards.limits.rate",
    "run_cost": "judgecards.limits.pricing",
    "run_cost_text": "judgecards.limits.pricing",
}

__all__ = public_names(_EXPORTS)

__getattr__, __dir__ = lazy_exports("judgecards.limits", globals(), {**_EXPORTS, **_SHARED})

if TYPE_CHECKING:
    from judgecards.limits.budget import BudgetStats as BudgetStats
    from judgecards.limits.budget import CostCap as CostCap
    from judgecards.limits.plan import RunPlan as RunPlan
    from judgecards.limits.plan import estimate_tokens as estimate_tokens
    from judgecards.limits.pricing import PRICES_ENV as PRICES_ENV
    from judgecards.limits.pricing import ModelPrice as ModelPrice
    from judgecards.limits.pricing import PriceTable as PriceTable
    from judgecards.limits.pricing import format_cost as format_cost
    from judgecards.limits.pricing import load_prices as load_prices
    from judgecards.limits.pricing import run_cost as run_cost
    from judgecards.limits.pricing import run_cost_text as run_cost_text
    from judgecards.limits.rate import AdaptiveLimiter as AdaptiveLimiter
    from judgecards.limits.rate import LimiterStats as LimiterStats
    from judgecards.limits.rate import Permit as Permit
    from judgecards.limits.rate import RateLimits as RateLimits
    from judgecards.limits.rate import Refusal as Refusal
    from judgecards.limits.rate import is_overload as is_overload
    from judgecards.limits.token_count import CHARACTERS as CHARACTERS
    from judgecards.limits.token_count import TokenCounter as TokenCounter
    from judgecards.limits.token_count import counter_for as counter_for
