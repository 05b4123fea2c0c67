"""One item's re-ask loop (`Attempts`), apart from `judgecards.judging.judge` so the loop and the
`Judge` that drives it each stay a readable size.

The loop is a state machine: the drivers (a `Judge`'s synchronous and asynchronous runs) ask it for the
next request, send it (or find its reply in the response cache) and feed the completion back;
it parses and validates, re-asks with the problems, asks a reply cut at the token limit once
more with a larger budget, decides the verdict in code and builds the result record. Written
once, driven synchronously or asynchronously, so the two paths cannot drift apart.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

from judgecards import replies
from judgecards.errors import JudgeOutputError, RenderError, TransportError
from judgecards.judging.prepared import ItemJudge, PreparedItem
from judgecards.judging.requests import larger_budget, reask
from judgecards.providers.base import Completion, CompletionRequest, Usage
from judgecards.replies import decide, parse_reply
from judgecards.storage import CacheEntry, JudgeResult, TokenUsage

__all__ = ["Attempts", "Run"]

Run = tuple[JudgeResult, list[CacheEntry], dict[str, Any]]
"""An item's outcome: its result, the replies to cache, the call parameters as sent."""


@dataclass
class Attempts:
    """One item's re-ask loop as a state machine; the drivers supply completions."""

    judge: ItemJudge
    item: PreparedItem
    started: float = field(default_factory=time.perf_counter)
    request: CompletionRequest | None = None
    attempts: int = 0
    usage: Usage = field(default_factory=Usage)
    all_cached: bool = True
    entries: list[CacheEntry] = field(default_factory=list)
    last_reply: str | None = None
    last_problems: list[str] = field(default_factory=list)
    transport_retries: int = 0
    render_error: RenderError | None = None
    budget_raised: bool = False  # a reply cut at the token limit was asked again, larger
    larger_pending: bool = False  # that larger request is waiting to be sent

    def next_request(self) -> CompletionRequest | None:
        if self.larger_pending:  # a cut reply's larger retry: the same attempt, not a re-ask
            self.larger_pending = False
            self.attempts += 1
            return self.request
        if self.attempts >= self.judge.max_attempts:
            return None
        if self.request is None:
            try:
                self.request = self.judge.first_request(self.item)
            except RenderError as error:
                # This item's data breaks the card (a budget, a sandbox refusal): its own
                # error record, never a stop for the whole batch.
                self.render_error = error
                return None
        self.attempts += 1
        return self.request

    def feed(self, key: str, completion: Completion, *, cached: bool) -> JudgeResult | None:
        assert self.request is not None
        if not cached:
            self.all_cached = False
            self.usage = self.usage + completion.usage
        self.entries.append(
            CacheEntry(key, self.judge.provider.name, self.request.model, completion)
        )
        self.last_reply = completion.text
        try:
            judgment = parse_reply(
                self.judge.card,
                replies.reply_text(completion.text, self.request),
                inputs=self.item.inputs,
                truncated=completion.truncated,
            )
        except JudgeOutputError as error:
            self.last_problems = error.problems
            if completion.truncated:
                return self._cut()
            self.request = reask(self.judge.card, self.request, completion.text, error)
            return None
        decision = decide(
            self.judge.card,
            judgment,
            text=completion.text,
            logprobs=completion.logprobs,
            geval=self.request.top_logprobs is not None,
            inputs=self.item.inputs,
            rubric=self.judge.rubric,
        )
        return self._result(
            status="ok",
            verdict=decision.verdict,
            scores=decision.scores,
            model_verdict=decision.model_verdict,
            verdict_overridden=decision.verdict_overridden,
            output={**judgment.model_dump(mode="json"), **decision.annotations},
            cached=self.all_cached,
            extraction=replies.extraction_of(self.request, decision.annotations),
            native_method=replies.native_method_of(self.request),
        )

    def _cut(self) -> JudgeResult | None:
        """A reply cut at the token limit: once more with a larger budget, then ``truncated``."""
        assert self.request is not None
        larger = None if self.budget_raised else larger_budget(self.request)
        if larger is not None:
            self.request, self.budget_raised, self.larger_pending = larger, True, True
            return None
        self.entries = []  # replies of a failed item are not cached
        error = (
            f"the reply was cut off at its token limit ({self.request.max_tokens:,}); raise "
            "max_tokens for this model (Judge(max_tokens=...), --set max_tokens=N)"
        )
        return self._result(status="error", error_kind="truncated", error=error, cached=False)

    def failed(self, error: TransportError) -> JudgeResult:
        return self._result(status="error", error_kind=error.kind, error=str(error), cached=False)

    def exhausted(self) -> JudgeResult:
        if self.render_error is not None:
            return self._result(
                status="error", error_kind="input", error=str(self.render_error), cached=False
            )
        problems = "; ".join(self.last_problems) or "invalid output"
        return self._result(
            status="error",
            error_kind="invalid_output",
            error=f"no valid judgment after {self.attempts} attempt(s): {problems}",
            cached=False,
        )

    def capped(self, error: str) -> JudgeResult:
        """The item stopped because its next call (not sent, so not an attempt) could not fit
        under ``max_cost`` (`judgecards.limits.budget`)."""
        self.attempts -= 1
        self.entries = []  # replies of a failed item are not cached
        return self._result(status="error", error_kind="max_cost", error=error, cached=False)

    def _result(self, **fields: Any) -> JudgeResult:
        judge = self.judge
        return JudgeResult(
            id=self.item.key,
            item_id=self.item.item_id,
            raw_reply=self.last_reply,
            card=judge.card.ref,
            card_hash=judge.card.hash,
            model=judge.model,
            usage=TokenUsage(**asdict(self.usage)),
            cost_usd=judge.prices.cost(judge.model, **asdict(self.usage)),
            latency_s=time.perf_counter() - self.started,
            attempts=self.attempts,
            transport_retries=self.transport_retries,
            **fields,
        )
