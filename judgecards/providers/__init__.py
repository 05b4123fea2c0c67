"""Provider registry: ``"openai:gpt-4o"`` → an `OpenAIProvider` for ``gpt-4o``.

A third provider is one new module and one entry in `_FACTORIES`. Imports are lazy so that
``judgecards --help`` does not pay for SDKs it will not use.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from judgecards.errors import ProviderConfigError
from judgecards.providers.base import (
    Completion,
    CompletionRequest,
    Message,
    Provider,
    RetryDecision,
    TokenLogprob,
    Usage,
)

__all__ = [
    "Completion",
    "CompletionRequest",
    "Message",
    "Provider",
    "RetryDecision",
    "TokenLogprob",
    "Usage",
    "make_provider",
    "provider_class",
    "split_model",
]

# prefix -> (module, class, pip package that provides the SDK)
_FACTORIES: dict[str, tuple[str, str, str | None]] = {
    "openai": ("judgecards.providers.openai", "OpenAIProvider", "openai"),
    "anthropic": ("judgecards.providers.anthropic", "AnthropicProvider", "anthropic"),
    "mock": ("judgecards.providers.mock", "MockProvider", None),
}


def split_model(model: str) -> tuple[str, str]:
    """Split ``"provider:model"``; the model part may itself contain colons (``qwen2.5:7b``)."""
    prefix, sep, name = model.partition(":")
    if not sep or not prefix:
        raise ProviderConfigError(
            f"Model {model!r} must look like 'provider:model', e.g. 'openai:gpt-4o', "
            f"'anthropic:claude-sonnet-5-5' or 'mock:judge'. Known providers: "
            f"{', '.join(sorted(_FACTORIES))}.",
            provider=prefix or "?",
            model=model,
        )
    return prefix, name


def provider_class(model: str) -> Callable[..., Provider]:
    """The provider class for a ``provider:model`` string, imported on first use.

    Raises:
        ProviderConfigError: the provider part is unknown, or its SDK is not installed.
    """
    prefix, name = split_model(model)
    if prefix not in _FACTORIES:
        raise ProviderConfigError(
            f"Unknown provider {prefix!r} in {model!r}; known: {', '.join(sorted(_FACTORIES))}.",
            provider=prefix,
            model=name,
        )
    module_name, class_name, package = _FACTORIES[prefix]
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:  # pragma: no cover - the SDKs are dependencies
        hint = f" (pip install {package})" if package else ""
        raise ProviderConfigError(
            f"Provider {prefix!r} is not available{hint}: {error}", provider=prefix, model=name
        ) from error
    cls: Callable[..., Provider] = getattr(module, class_name)
    return cls


def make_provider(model: str, **options: Any) -> Provider:
    """Build the provider for a ``provider:model`` string; ``options`` go to its constructor."""
    provider: Provider = provider_class(model)(split_model(model)[1], **options)
    return provider
