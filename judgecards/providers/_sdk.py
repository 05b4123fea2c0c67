"""What the two official-SDK providers share: key and base-URL lookup, one client per flavour.

Clients are built once and reused (per-call construction is what makes many tools slow), always
with ``max_retries=0`` because `judgecards.judging.retry` is the only retry layer.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

from judgecards.errors import ProviderConfigError
from judgecards.providers.base import CompletionRequest
from judgecards.redaction import register_secret


class SDKProvider:
    """Base of providers backed by an official SDK client class pair (sync, async)."""

    name: ClassVar[str]
    key_variable: ClassVar[str]
    base_url_variable: ClassVar[str]
    default_base_url: ClassVar[str]  # the hosted API the SDK calls without a base URL

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        http_client: Any = None,
        async_http_client: Any = None,
        timeout: float = 60.0,
    ) -> None:
        self.model = model
        self.base_url = base_url or os.environ.get(self.base_url_variable) or None
        configured = api_key or os.environ.get(self.key_variable)
        # Registered for redaction: a server may echo the key in an error body.
        register_secret(configured)
        self._api_key = configured or self._without_key()
        self._http_client = http_client
        self._async_http_client = async_http_client
        self._timeout = timeout
        self._client: Any = None
        self._async_client: Any = None

    @classmethod
    def endpoint_for(cls, base_url: str | None) -> str:
        """The server a provider built with ``base_url`` calls: that URL, else the base-URL
        variable's, else the hosted API's (without a trailing slash)."""
        return (base_url or os.environ.get(cls.base_url_variable) or cls.default_base_url).rstrip(
            "/"
        )

    @property
    def endpoint(self) -> str:
        """The server this provider calls (`endpoint_for`): part of every response-cache key."""
        return self.endpoint_for(self.base_url)

    def _without_key(self) -> str:
        """The key to use when none is configured; by default, an error naming the variable."""
        raise ProviderConfigError(
            f"No {self.name} API key: set the {self.key_variable} environment variable or pass "
            f"api_key=... ({self.base_url_variable} points the SDK at another server).",
            provider=self.name,
            model=self.model,
        )

    def _sdk_classes(self) -> tuple[Any, Any]:
        """The SDK's (sync, async) client classes, imported only when first needed."""
        raise NotImplementedError

    def _arguments(self, request: CompletionRequest) -> dict[str, Any]:
        """The SDK call's keyword arguments for one `CompletionRequest`."""
        raise NotImplementedError

    def request_body(self, request: CompletionRequest) -> dict[str, Any]:
        """The JSON body the SDK would send for ``request``: a batch line's ``body`` / ``params``.

        Built from the same `_arguments` as a live call, so whatever a live request carries (a
        response format, cache control) a batch line carries too; client-side options
        (``timeout``) are left out and ``extra_body`` is merged in, as the SDK does.
        """
        arguments = dict(self._arguments(request))
        for option in ("timeout", "extra_headers", "extra_query"):
            arguments.pop(option, None)
        extra = arguments.pop("extra_body", None) or {}
        return {**arguments, **extra}

    def _build(self, async_: bool) -> Any:
        sync_class, async_class = self._sdk_classes()
        return (async_class if async_ else sync_class)(
            api_key=self._api_key,
            base_url=self.base_url,
            http_client=self._async_http_client if async_ else self._http_client,
            max_retries=0,
            timeout=self._timeout,
        )

    def _sync(self) -> Any:
        if self._client is None:
            self._client = self._build(async_=False)
        return self._client

    @property
    def timeout(self) -> float:
        """Seconds a call may take (what a stored batch rebuilds its judge with)."""
        return self._timeout

    def sync_client(self) -> Any:
        """The SDK client this provider calls with (built on first use): the provider's batch
        API (`judgecards.batch`) goes through it, with the same key, URL and transport."""
        return self._sync()

    def _async(self) -> Any:
        if self._async_client is None:
            self._async_client = self._build(async_=True)
        return self._async_client

    def __repr__(self) -> str:  # never show the key
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    async def aclose(self) -> None:
        # A client we built is closed; one the caller passed in is theirs to close.
        if self._async_client is not None and self._async_http_client is None:
            await self._async_client.close()
        self._async_client = None
