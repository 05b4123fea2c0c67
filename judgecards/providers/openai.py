"""OpenAI and every OpenAI-compatible server (vLLM, Ollama, llama.cpp, LM Studio…).

The SDK is built with ``max_retries=0``: `judgecards.judging.retry` is the only retry layer, so a 500 is
tried as often as our policy says and not three times that.
"""

from __future__ import annotations

from typing import Any, ClassVar

from judgecards.errors import ProviderConfigError
from judgecards.providers._sdk import SDKProvider
from judgecards.providers.base import (
    Completion,
    CompletionRequest,
    RetryDecision,
    TokenLogprob,
    Usage,
)
from judgecards.providers.http_errors import (
    classify_connection,
    classify_status,
    offers_json_object,
    refuses_structured_output,
)

__all__ = ["OpenAIProvider"]

_PLACEHOLDER_KEY = "not-needed"
SCHEMA_NAME = "judgment"


class OpenAIProvider(SDKProvider):
    """Chat Completions through the official ``openai`` SDK.

    Args:
        model: model name as the server knows it (``gpt-4o``, ``qwen2.5:7b``…).
        api_key: defaults to ``OPENAI_API_KEY``. With a custom base URL and no key, a placeholder
            is sent, since local servers usually ignore it.
        base_url: defaults to ``OPENAI_BASE_URL``, else the OpenAI API.
        http_client / async_http_client: ``httpx2`` clients to use (tests inject a MockTransport).
        timeout: seconds per request.
    """

    name: ClassVar[str] = "openai"
    # Sends a JSON schema natively (`CompletionRequest.native`); see judgecards.replies.structured_output.
    native_output: ClassVar[bool] = True
    key_variable: ClassVar[str] = "OPENAI_API_KEY"
    base_url_variable: ClassVar[str] = "OPENAI_BASE_URL"
    default_base_url: ClassVar[str] = "https://api.openai.com/v1"

    def _without_key(self) -> str:
        if self.base_url is None:
            raise ProviderConfigError(
                "No OpenAI API key: set the OPENAI_API_KEY environment variable, pass "
                "api_key=..., or point OPENAI_BASE_URL at an OpenAI-compatible server "
                "(vLLM, Ollama, llama.cpp) that needs none.",
                provider=self.name,
                model=self.model,
            )
        return _PLACEHOLDER_KEY

    def _sdk_classes(self) -> tuple[Any, Any]:
        import openai

        return openai.OpenAI, openai.AsyncOpenAI

    def _arguments(self, request: CompletionRequest) -> dict[str, Any]:
        messages: list[dict[str, str]] = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        messages.extend({"role": m.role, "content": m.content} for m in request.messages)
        # The messages go in extra_body, which the SDK merges into the same JSON body: given as
        # ``messages``, the SDK walks each one against every TypedDict of its message union on
        # every call (0.5 ms of CPU a request for a system and a user message, a quarter of the
        # client's whole cost per call against a loopback server; issue 22 item 15).
        arguments: dict[str, Any] = {"model": self.model, "messages": []}
        body: dict[str, Any] = {"messages": messages}
        if request.temperature is not None:
            arguments["temperature"] = request.temperature
        # OpenAI's own API wants max_completion_tokens (reasoning models reject max_tokens);
        # compatible servers (vLLM, Ollama, llama.cpp) reliably understand max_tokens.
        token_key = "max_tokens" if self.base_url else "max_completion_tokens"
        arguments[token_key] = request.max_tokens
        if request.top_logprobs is not None:
            arguments["logprobs"] = True
            arguments["top_logprobs"] = request.top_logprobs
        if request.native is not None and request.native_schema is not None:
            # Strict mode: the server constrains the reply to the schema (the strict subset,
            # `judgecards.replies.structured_output.strict_schema`); pydantic still validates it.
            if request.native == "json_object":
                # llama-cpp-python's own form: it refuses "json_schema" but builds a grammar
                # from a schema given with "json_object".
                response_format: dict[str, Any] = {
                    "type": "json_object",
                    "schema": dict(request.native_schema),
                }
            else:
                response_format = {
                    "type": "json_schema",
                    "json_schema": {
                        "name": SCHEMA_NAME,
                        "strict": True,
                        "schema": dict(request.native_schema),
                    },
                }
            # The same JSON body, sent as extra_body: the SDK walks a ``response_format``
            # argument node by node against its TypedDicts on every call (to rename keys it has
            # none of here), about 0.14 ms a request for a card's schema.
            body["response_format"] = response_format
        arguments["extra_body"] = body
        if request.timeout is not None:
            arguments["timeout"] = request.timeout
        return arguments

    def complete(self, request: CompletionRequest) -> Completion:
        response = self._sync().chat.completions.create(**self._arguments(request))
        return _completion(response)

    async def acomplete(self, request: CompletionRequest) -> Completion:
        response = await self._async().chat.completions.create(**self._arguments(request))
        return _completion(response)

    def completion_from_body(self, body: Any) -> Completion:
        """A reply from a chat completion's JSON body (a batch output line's ``response.body``),
        read exactly as a live response is."""
        from openai.types.chat import ChatCompletion

        return _completion(ChatCompletion.model_validate(body))

    def classify(self, error: BaseException) -> RetryDecision | None:
        import openai

        if isinstance(error, openai.APIStatusError):
            if refuses_structured_output(error.status_code, error.message, error.body):
                return RetryDecision(
                    retry=False,
                    kind="fatal",
                    status=error.status_code,
                    rejected_parameter=(
                        "json_schema"
                        if offers_json_object(error.message, error.body)
                        else "response_format"
                    ),
                )
            return classify_status(error.status_code, error.response.headers, error.body)
        if isinstance(error, openai.APIConnectionError):
            return classify_connection(error, timed_out=isinstance(error, openai.APITimeoutError))
        if isinstance(error, openai.OpenAIError):
            return RetryDecision(retry=False, kind="fatal")
        return None


def _completion(response: Any) -> Completion:
    if not response.choices:
        return Completion(text="", model=response.model or "", raw={"id": response.id})
    choice = response.choices[0]
    usage = response.usage
    logprobs = None
    content_logprobs = getattr(choice.logprobs, "content", None) if choice.logprobs else None
    if content_logprobs:
        logprobs = tuple(
            TokenLogprob(
                token=item.token,
                logprob=item.logprob,
                top=tuple((alt.token, alt.logprob) for alt in (item.top_logprobs or ())),
            )
            for item in content_logprobs
        )
    return Completion(
        text=choice.message.content or "",
        model=response.model or "",
        usage=Usage(
            input_tokens=(usage.prompt_tokens or 0) if usage else 0,
            output_tokens=(usage.completion_tokens or 0) if usage else 0,
            # OpenAI caches long prompt prefixes by itself and counts them in prompt_tokens.
            cache_read_tokens=_cached_tokens(usage),
        ),
        finish_reason=choice.finish_reason,
        logprobs=logprobs,
        raw={
            "id": response.id,
            "system_fingerprint": getattr(response, "system_fingerprint", None),
        },
    )


def _cached_tokens(usage: Any) -> int:
    details = getattr(usage, "prompt_tokens_details", None) if usage else None
    return (getattr(details, "cached_tokens", None) or 0) if details else 0
