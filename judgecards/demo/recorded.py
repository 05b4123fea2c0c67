"""A provider that replies with verdicts a real judge recorded earlier, for the pairwise card.

The demo stores real judges' verdicts the way any run stores them: through `judgecards.Judge`
and `judgecards.compare_many`, so the results, the comparisons and their ids are exactly what
``judgecards compare`` writes, and everything downstream (labels, cascades, the report) reads
them as it reads live judgments. This provider is the only stand-in: it finds the question and
the two answers in the rendered prompt and answers with the verdict recorded for them, with no
network. A pair it was not given is a `NotRecorded` error, never a made-up verdict.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from typing import ClassVar, Literal, NoReturn

from judgecards.cards import neutralise_text
from judgecards.errors import NotRecorded
from judgecards.providers.base import Completion, CompletionRequest, RetryDecision, Usage

__all__ = ["Recorded", "RecordedProvider"]

Verdict = Literal["A", "B", "tie"]
Recorded = tuple[str, str, str, Verdict | None]
"""question, answer shown first, answer shown second, and the verdict recorded for that order
(positional: ``A`` = the answer shown first; ``None``: the recorded reply had no verdict)."""

_BLOCKS = tuple(
    re.compile(rf"<{tag}>\n(.*?)\n</{tag}>", re.DOTALL)
    for tag in ("question", "answer_a", "answer_b")
)
_NO_VERDICT = "The recorded reply of this judge held no verdict that could be read."


def _key(question: str, first: str, second: str) -> str:
    return hashlib.sha256(json.dumps([question, first, second]).encode()).hexdigest()


class RecordedProvider:
    """Answers the pairwise card from recorded verdicts.

    Args:
        model: the recorded judge's name (the part after ``provider:``).
        recorded: one entry per order judged; texts as the card receives them.
        tags: the card's tag names (`judgecards.Card.tags`), neutralised in the prompt exactly
            as the card's renderer does, so a text holding ``</answer_a>`` still matches.
        source: where the verdicts were recorded, written into each reply's reasoning.
    """

    name: ClassVar[str] = "recorded"
    native_output: ClassVar[bool] = False

    def __init__(
        self, model: str, recorded: Iterable[Recorded], *, tags: frozenset[str], source: str
    ) -> None:
        self.model = model
        self.source = source
        self._verdicts: dict[str, Verdict | None] = {
            _key(*(neutralise_text(text, tags) for text in (q, first, second))): verdict
            for q, first, second, verdict in recorded
        }

    def _reply(self, request: CompletionRequest) -> str:
        prompt = request.messages[0].content
        found = [pattern.search(prompt) for pattern in _BLOCKS]
        key = None if None in found else _key(*(m.group(1) for m in found if m is not None))
        if key is None or key not in self._verdicts:
            self._refuse("no verdict was recorded for this question and pair of answers")
        verdict = self._verdicts[key]
        if verdict is None:
            return _NO_VERDICT
        reasoning = f"Verdict recorded by {self.model} ({self.source}); its reasoning is not kept."
        return json.dumps({"reasoning": reasoning, "winner": verdict})

    def _refuse(self, why: str) -> NoReturn:
        raise NotRecorded(
            f"{self.name}:{self.model}: {why}",
            card=None,
            model=f"{self.name}:{self.model}",
            item_id=None,
        )

    def complete(self, request: CompletionRequest) -> Completion:
        return Completion(text=self._reply(request), model=self.model, usage=Usage())

    async def acomplete(self, request: CompletionRequest) -> Completion:
        return self.complete(request)

    def classify(self, error: BaseException) -> RetryDecision | None:
        return None  # nothing here is a transport failure worth retrying

    def close(self) -> None:
        pass

    async def aclose(self) -> None:
        pass
