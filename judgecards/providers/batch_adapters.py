"""The batch API of a judge's provider: `batch_api_for` (kept apart from `judgecards.providers.batch_api`,
which the implementations import, so that no module imports one that imports it back)."""

from __future__ import annotations

from typing import Any

from judgecards.errors import ProviderConfigError
from judgecards.providers.base import Provider
from judgecards.providers.batch_api import BatchAPI

__all__ = ["batch_api_for"]


def batch_api_for(provider: Provider, **limits: int | None) -> BatchAPI:
    """The batch API of a judge's provider; ``limits`` (``max_requests``, ``max_bytes``)
    lower the providers' own per-batch limits (tests, or a proxy with smaller ones)."""
    from judgecards.providers.anthropic import AnthropicProvider
    from judgecards.providers.openai import OpenAIProvider

    api: Any
    if isinstance(provider, OpenAIProvider):
        from judgecards.providers.openai_batches import OpenAIBatches

        api = OpenAIBatches(provider)
    elif isinstance(provider, AnthropicProvider):
        from judgecards.providers.anthropic_batches import AnthropicBatches

        api = AnthropicBatches(provider)
    else:
        raise ProviderConfigError(
            f"batches go through the OpenAI or Anthropic batch API; {provider.name}:"
            f"{provider.model} has none (judge it live, without --batch)",
            provider=provider.name,
            model=provider.model,
        )
    for name, value in limits.items():
        if value is not None:
            if value < 1:
                raise ValueError(f"{name} must be at least 1")
            setattr(api, name, min(value, getattr(api, name)))
    batch: BatchAPI = api
    return batch
