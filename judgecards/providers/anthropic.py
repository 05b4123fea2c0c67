"""Anthropic's Messages API through the official ``anthropic`` SDK.

Recent SDKs removed ``temperature`` from ``messages.create`` and recent models reject a
non-default temperature, while older models still honour it. We send it in ``extra_body``; when
the server answers 400 naming the temperature, the provider stops sending it (once, with a
warning) and the call is retried, instead of failing every item of a batch.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any, ClassVar

from judgecards.errors import ProviderConfigError
from judgecards.providers._http import classify_status
from judgecards.providers.base import Completion, CompletionRequest, RetryDecision, Usage

if TYPE_CHECKING:
    import anthropic
    import httpx2

__all__ = ["AnthropicProvider"]

log = logging.getLogger(__name__)


class AnthropicProvider:
    """Claude models through the official ``anthropic`` SDK (``max_retries=0``; we retry).

    Args:
        model: e.g. ``claude-sonnet-4-5``.
        api_key: defaults to ``ANTHROPIC_API_KEY``.
        base_url: defaults to ``ANTHROPIC_BASE_URL``, else Anthropic's API.
        http_client / async_http_client: ``httpx2`` clients (tests inject a MockTransport).
        timeout: seconds per request.
    """

    name: ClassVar[str] = "anthropic"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        http_client: httpx2.Client | None = None,
        async_http_client: httpx2.AsyncClient | None = None,
        timeout: float = 60.0,
    ) -> None:
        self.model = model
        self.base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
        key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise ProviderConfigError(
                "No Anthropic API key: set the ANTHROPIC_API_KEY environment variable or pass "
                "api_key=... (ANTHROPIC_BASE_URL points the SDK at another server).",
                provider=self.name,
                model=model,
            )
        self._api_key = key
        self._http_client = http_client
        self._async_http_client = async_http_client
        self._timeout = timeout
        self._client: anthropic.Anthropic | None = None
        self._async_client: anthropic.AsyncAnthropic | None = None
        self._send_temperature = True

    def __repr__(self) -> str:  # never show the key
        return f"AnthropicProvider(model={self.model!r}, base_url={self.base_url!r})"

    def _sync(self) -> anthropic.Anthropic:
        if self._client is None:
            import anthropic

            self._client = anthropic.Anthropic(
                api_key=self._api_key,
                base_url=self.base_url,
                http_client=self._http_client,
                max_retries=0,
                timeout=self._timeout,
            )
        return self._client

    def _async(self) -> anthropic.AsyncAnthropic:
        if self._async_client is None:
            import anthropic

            self._async_client = anthropic.AsyncAnthropic(
                api_key=self._api_key,
                base_url=self.base_url,
                http_client=self._async_http_client,
                max_retries=0,
                timeout=self._timeout,
            )
        return self._async_client

    def _arguments(self, request: CompletionRequest) -> dict[str, Any]:
        arguments: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
        }
        if request.system:
            arguments["system"] = request.system
        if request.temperature is not None and self._send_temperature:
            arguments["extra_body"] = {"temperature": request.temperature}
        if request.timeout is not None:
            arguments["timeout"] = request.timeout
        return arguments

    def complete(self, request: CompletionRequest) -> Completion:
        return _completion(self._sync().messages.create(**self._arguments(request)))

    async def acomplete(self, request: CompletionRequest) -> Completion:
        return _completion(await self._async().messages.create(**self._arguments(request)))

    def classify(self, error: BaseException) -> RetryDecision:
        import anthropic

        if isinstance(error, anthropic.APIStatusError):
            if (
                error.status_code == 400
                and self._send_temperature
                and "temperature" in str(error.message).lower()
            ):
                self._send_temperature = False
                log.warning("%s rejects temperature; sending requests without it", self.model)
                return RetryDecision(retry=True, kind="transient", retry_after=0.0, status=400)
            return classify_status(error.status_code, error.response.headers, error.body)
        if isinstance(error, anthropic.APIConnectionError):  # includes APITimeoutError
            return RetryDecision(retry=True, kind="transient")
        return RetryDecision(retry=False, kind="fatal")

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    async def aclose(self) -> None:
        # A client we built is closed; one the caller passed in is theirs to close.
        if self._async_client is not None and self._async_http_client is None:
            await self._async_client.close()
        self._async_client = None


def _completion(message: Any) -> Completion:
    text = "".join(
        block.text for block in (message.content or ()) if getattr(block, "type", None) == "text"
    )
    usage = message.usage
    return Completion(
        text=text,
        model=message.model or "",
        usage=Usage(
            input_tokens=(usage.input_tokens or 0) if usage else 0,
            output_tokens=(usage.output_tokens or 0) if usage else 0,
        ),
        finish_reason=message.stop_reason,
        raw={"id": message.id},
    )
