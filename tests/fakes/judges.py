"""Providers and judges on the real SDKs whose HTTP goes to a `Script`: written once for all tests.

``openai_judge(script)`` is a `Judge` whose OpenAI SDK (sync and async clients) talks to the
scripted transport and whose retry waits are recorded (by ``waits``, or a fresh `Waits`), so no
test sleeps. The keys are realistic in shape, so tests can assert they never leak.
"""

from __future__ import annotations

from typing import Any

from judgecards import Judge
from judgecards.providers.anthropic import AnthropicProvider
from judgecards.providers.openai import OpenAIProvider
from tests.fakes.http import Script, Waits

OPENAI_KEY = "sk-test-4f9a7c2e1b3d5f60718293a4b5c6d7e8"
ANTHROPIC_KEY = "sk-ant-api03-test-Zq8Xv2Lm4Np6Rt8Wy0Ab2Cd4Ef6Gh8"


def openai_provider(
    script: Script, model: str = "gpt-4o", *, api_key: str = OPENAI_KEY, **options: Any
) -> OpenAIProvider:
    """An `OpenAIProvider` whose sync and async clients both go to ``script``."""
    return OpenAIProvider(
        model, api_key=api_key, http_client=script.client(),
        async_http_client=script.async_client(), **options,
    )  # fmt: skip


def anthropic_provider(
    script: Script, model: str = "claude-sonnet-5", *, api_key: str = ANTHROPIC_KEY, **options: Any
) -> AnthropicProvider:
    """An `AnthropicProvider` whose sync and async clients both go to ``script``."""
    return AnthropicProvider(
        model, api_key=api_key, http_client=script.client(),
        async_http_client=script.async_client(), **options,
    )  # fmt: skip


def openai_judge(
    script: Script,
    card: str = "reference@1",
    *,
    waits: Waits | None = None,
    attempts: int = 6,
    deadline: float = 300.0,
    model: str = "gpt-4o",
    **options: Any,
) -> Judge:
    """A `Judge` on the real OpenAI SDK over ``script``; ``options`` go to `Judge`."""
    policy = (waits if waits is not None else Waits()).policy(attempts=attempts, deadline=deadline)
    provider = openai_provider(script, model)
    return Judge(card, f"openai:{model}", provider=provider, retry=policy, **options)


def anthropic_judge(
    script: Script,
    card: str = "reference@1",
    *,
    waits: Waits | None = None,
    attempts: int = 6,
    deadline: float = 300.0,
    model: str = "claude-sonnet-5",
    **options: Any,
) -> Judge:
    """A `Judge` on the real Anthropic SDK over ``script``; ``options`` go to `Judge`."""
    policy = (waits if waits is not None else Waits()).policy(attempts=attempts, deadline=deadline)
    provider = anthropic_provider(script, model)
    return Judge(card, f"anthropic:{model}", provider=provider, retry=policy, **options)
