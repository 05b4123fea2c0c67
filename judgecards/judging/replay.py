"""Offline replay: a judge that answers only from what an earlier, online run stored.

CI without API keys should get the judgments a developer recorded, and a test whose item was
never recorded should fail loudly rather than call a provider or quietly pass. ``Judge(...,
offline=True)`` does that: stored judgments and cached replies are used as usual, and an item
that would need a call raises `NotRecorded` before anything is sent. The provider is replaced by
a stand-in with the same name and model, so cache keys are the ones the online run wrote, and
no SDK client is built, so no key is needed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, NoReturn

from judgecards.errors import NotRecorded
from judgecards.providers import provider_class, split_model
from judgecards.providers.base import Completion, CompletionRequest, Provider, RetryDecision

__all__ = ["ReplayOnlyProvider", "not_recorded", "replay_stand_in"]

_SHOWN_INPUT_CHARS = 60


class ReplayOnlyProvider:
    """Stands in for a provider in offline mode and refuses every call.

    `Judge` checks for a stored reply before it would call, so these methods are a last line:
    whatever happens above, nothing leaves the machine.
    """

    name: ClassVar[str] = "replay"

    def __init__(self, model: str) -> None:
        self.model = model

    def _refuse(self) -> NoReturn:
        raise NotRecorded(
            f"{self.name}:{self.model} is offline: no provider call is made",
            card=None,
            model=f"{self.name}:{self.model}",
            item_id=None,
        )

    def complete(self, request: CompletionRequest) -> Completion:
        self._refuse()

    async def acomplete(self, request: CompletionRequest) -> Completion:
        self._refuse()

    def classify(self, error: BaseException) -> RetryDecision | None:
        return None  # NotRecorded is never a transport failure: it propagates

    def close(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


def replay_stand_in(model: str, *, base_url: str | None = None) -> Provider:
    """A `ReplayOnlyProvider` named like the provider of ``model`` (``provider:model``), with
    the endpoint that provider would call given ``base_url`` (cache keys include it).

    Raises:
        ProviderConfigError: the provider part is unknown, as it would be online.
    """
    prefix, name = split_model(model)
    # It takes the same output mode as the real provider, so its requests have the same keys.
    real = provider_class(model)
    native = bool(getattr(real, "native_output", 0))
    endpoint_for = getattr(real, "endpoint_for", None)
    endpoint = endpoint_for(base_url) if endpoint_for is not None else ""
    stand_in = type(
        f"ReplayOnly[{prefix}]",
        (ReplayOnlyProvider,),
        {"name": prefix, "native_output": native, "endpoint": endpoint},
    )
    provider: Provider = stand_in(name)
    return provider


def not_recorded(
    card: str, model: str, item_id: str | None, inputs: Mapping[str, Any]
) -> NotRecorded:
    """The error for an item an offline judge cannot answer, saying how to record it."""
    if item_id is not None:
        item = f"item {item_id!r}"
    else:
        shown = ", ".join(f"{name}={_preview(value)}" for name, value in inputs.items())
        item = f"the item with {shown}" if shown else "an item without inputs"
    return NotRecorded(
        f"{card} with {model} has no stored judgment or cached reply for {item}, and offline "
        "mode makes no provider calls. Record it by running once online (pytest: without "
        "--judge-offline) with the provider's API key and the same database, then keep that "
        "database with the tests.",
        card=card,
        model=model,
        item_id=item_id,
    )


def _preview(value: Any) -> str:
    text = value if isinstance(value, str) else str(value)
    if len(text) > _SHOWN_INPUT_CHARS:
        text = text[: _SHOWN_INPUT_CHARS - 1] + "…"
    return repr(text)
