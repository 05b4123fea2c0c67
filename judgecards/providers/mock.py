"""An offline provider for dry runs, demos and tests. Its scores are synthetic, never a judgment.

Replies come from a queue (``replies=[...]``; an `Exception` in the queue is raised). When the
queue is empty the mock writes a reply in the requested format from structured descriptions,
never by reading the prompt: a final line (``FinalLine``: the line template and its integer
range, given at construction) or a JSON instance of the request's ``response_schema`` (a rubric's
schema names each criterion and its scale). Choices are drawn deterministically from a hash of
the conversation, so dry runs exercise parsing, validation, verdict rules and the store end to
end and repeat exactly. Every request is recorded in ``history``. Results from this provider
carry ``mock:`` in their model name and the CLI prints a banner, so nobody mistakes them for a
judgment.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from judgecards.providers.base import Completion, CompletionRequest, RetryDecision, Usage

__all__ = ["MOCK_BANNER", "FinalLine", "MockProvider", "request_seed", "synthesize"]

MOCK_BANNER = "MOCK PROVIDER: scores are synthetic placeholders, not a judgment by any model."

_DRAWS = 100
_HISTORY = 100


@dataclass(frozen=True)
class FinalLine:
    """A final-token card's answer line: ``template`` holds ``{value}``, an integer in [low, high]."""

    template: str
    low: int
    high: int


class MockProvider:
    """A provider that answers without a network. See the module docstring.

    Args:
        model: the name after ``mock:``.
        replies: served first, in order; an exception in the queue is raised by that call.
        final_line: write replies ending in this line instead of JSON (final-token cards).
        accept: a check a JSON draw must pass, for rules a JSON Schema cannot state (e.g. "style
            fidelity is 5 when style is not relevant"); the mock draws again, up to 100 times.
        **transport_options: ``api_key``, ``base_url``, ``timeout`` and the HTTP clients are
            accepted so the same options work for every provider; the mock has no transport.
    """

    name: ClassVar[str] = "mock"
    # Takes native-output requests: its JSON draws follow the request's schema anyway.
    native_output: ClassVar[bool] = True

    def __init__(
        self,
        model: str = "judge",
        *,
        replies: Iterable[str | Completion | BaseException] = (),
        final_line: FinalLine | None = None,
        accept: Callable[[Any], bool] | None = None,
        **transport_options: Any,
    ) -> None:
        del transport_options
        self.model = model or "judge"
        self._queue: deque[str | Completion | BaseException] = deque(replies)
        self.final_line = final_line
        self.accept = accept
        # The latest requests, for tests; bounded, so a mock run of any size holds no more.
        self.history: deque[CompletionRequest] = deque(maxlen=_HISTORY)

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
        else:
            text = self._synthetic_reply(request)
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

    def _synthetic_reply(self, request: CompletionRequest) -> str:
        rng = random.Random(request_seed(request))
        if self.final_line is not None:
            value = rng.randint(self.final_line.low, self.final_line.high)
            return (
                "Mock reasoning: placeholder, not a judgment.\n"
                + self.final_line.template.replace("{value}", str(value))
            )
        if request.response_schema is None:
            return '{"mock": true}'
        candidate: Any = None
        for _ in range(_DRAWS):
            candidate = synthesize(request.response_schema, rng)
            if self.accept is None or self.accept(candidate):
                break
        return json.dumps(candidate)


def request_seed(request: CompletionRequest) -> int:
    """A stable seed from the conversation, so the same prompt always gets the same mock reply."""
    digest = hashlib.sha256()
    for message in request.messages:
        digest.update(message.role.encode() + b"\0" + message.content.encode() + b"\0")
    return int.from_bytes(digest.digest()[:8], "big")


def synthesize(schema: Mapping[str, Any], rng: random.Random) -> Any:
    """A random instance of a (pydantic-generated or rubric) JSON Schema.

    Enough for judge-shaped replies: objects get every property, ``enum`` values are drawn,
    integers within ``minimum``/``maximum``, and an array whose items are a choice of shapes
    (``anyOf``, as in a rubric's one entry per criterion) gets each shape in turn, ``minItems``
    entries in all.
    """
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
            items: Mapping[str, Any] = node.get("items", {})
            count = int(node.get("minItems", 0)) if items else 0
            shapes = items.get("anyOf") or items.get("oneOf") or [items]
            return [build(shapes[index % len(shapes)]) for index in range(count)]
        if kind == "string":
            return "Mock rationale: placeholder text, not a judgment."
        return None

    return build(schema)
