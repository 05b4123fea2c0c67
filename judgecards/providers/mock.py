"""An offline provider for dry runs, demos and tests. Its scores are synthetic, never a judgment.

Replies come from a queue (``replies=[...]``; an `Exception` in the queue is raised) or, when the
queue is empty, from ``responder(request)``. The `Judge` gives the mock a responder that writes a
valid reply in the card's own format, chosen deterministically from the prompt's hash, so dry runs
exercise parsing, validation, verdict rules and the store end to end. Every request is recorded
in ``history``. Results from this provider carry ``mock:`` in their model name and the CLI prints
a banner, so nobody mistakes them for a judgment.
"""

from __future__ import annotations

import hashlib
import random
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar

from judgecards.providers.base import Completion, CompletionRequest, RetryDecision, Usage

__all__ = ["MOCK_BANNER", "MockProvider", "request_seed", "synthesize"]

MOCK_BANNER = "MOCK PROVIDER: scores are synthetic placeholders, not a judgment by any model."

Responder = Callable[[CompletionRequest], str]


class MockProvider:
    """A provider that answers without a network. See the module docstring."""

    name: ClassVar[str] = "mock"

    def __init__(
        self,
        model: str = "judge",
        *,
        replies: Iterable[str | Completion | BaseException] = (),
        responder: Responder | None = None,
        **transport_options: Any,
    ) -> None:
        # api_key, base_url, timeout and http clients are accepted so that the same options work
        # for every provider; the mock has no transport to apply them to.
        del transport_options
        self.model = model or "judge"
        self._queue: deque[str | Completion | BaseException] = deque(replies)
        self.responder = responder
        self.history: list[CompletionRequest] = []

    def enqueue(self, *replies: str | Completion | BaseException) -> None:
        self._queue.extend(replies)

    def complete(self, request: CompletionRequest) -> Completion:
        self.history.append(request)
        if self._queue:
            reply = self._queue.popleft()
            if isinstance(reply, BaseException):
                raise reply
            if isinstance(reply, Completion):
                return reply
            text = reply
        elif self.responder is not None:
            text = self.responder(request)
        else:
            text = '{"mock": true}'
        prompt_words = sum(len(m.content.split()) for m in request.messages)
        return Completion(
            text=text,
            model=f"mock:{self.model}",
            usage=Usage(input_tokens=prompt_words, output_tokens=len(text.split())),
            finish_reason="stop",
        )

    async def acomplete(self, request: CompletionRequest) -> Completion:
        return self.complete(request)

    def classify(self, error: BaseException) -> RetryDecision:
        return RetryDecision(retry=False, kind="fatal")

    def close(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


def request_seed(request: CompletionRequest) -> int:
    """A stable seed from the conversation, so the same prompt always gets the same mock reply."""
    digest = hashlib.sha256()
    for message in request.messages:
        digest.update(message.role.encode() + b"\0" + message.content.encode() + b"\0")
    return int.from_bytes(digest.digest()[:8], "big")


def synthesize(schema: Mapping[str, Any], rng: random.Random) -> Any:
    """A random instance of a (pydantic-generated) JSON Schema: enough for judge-shaped replies."""
    definitions: Mapping[str, Any] = schema.get("$defs", {})

    def build(node: Mapping[str, Any]) -> Any:
        if "$ref" in node:
            return build(definitions[node["$ref"].rsplit("/", 1)[-1]])
        if "enum" in node:
            return rng.choice(list(node["enum"]))
        if "const" in node:
            return node["const"]
        for combinator in ("anyOf", "oneOf"):
            if combinator in node:
                options = [o for o in node[combinator] if o.get("type") != "null"] or node[
                    combinator
                ]
                return build(options[0])
        kind = node.get("type")
        if kind == "object":
            return {key: build(sub) for key, sub in node.get("properties", {}).items()}
        if kind == "integer":
            return rng.randint(int(node.get("minimum", 1)), int(node.get("maximum", 5)))
        if kind == "number":
            return round(
                rng.uniform(float(node.get("minimum", 0)), float(node.get("maximum", 1))), 2
            )
        if kind == "boolean":
            return rng.random() < 0.5
        if kind == "array":
            return [build(node["items"])] if "items" in node and node.get("minItems", 0) else []
        if kind == "string":
            return "Mock rationale: placeholder text, not a judgment."
        return None

    return build(schema)
