"""A ``score`` run streamed to its output file, and its summary added up as results arrive.

The items are read from a file already checked line by line (`judgecards.judging.jsonl.check_items`),
judged through `judgecards.Judge.ascore_stream`, and each result is written to the output as it
comes (input order) and folded into a `ScoreTally`. So a run holds only the items in flight and
the summary's running figures, whatever the file's size. The output is still replaced atomically
(`OutputFile.write_with`): an interrupted run leaves the old file as it was.
"""

from __future__ import annotations

import asyncio
import gc
from array import array
from collections import Counter, deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from judgecards.cli._common import freeze_heap, input_limit, oversized_inputs
from judgecards.cli._output import OutputFile

if TYPE_CHECKING:
    from judgecards.cards import Card
    from judgecards.cli._rubric import RubricChoice
    from judgecards.judging import CheckedItems, Judge, Progress
    from judgecards.storage import JudgeResult

__all__ = [
    "ScoreTally",
    "answer_words",
    "card_and_items",
    "card_items",
    "judge_options",
    "stream_to_file",
]

# The input holding the answer being judged, by card convention (first present wins).
_JUDGED_INPUTS = ("model_output", "answer_2", "answer")


def card_and_items(
    card_ref: str, cards_dirs: Sequence[Path], items_path: Path, max_input_chars: int
) -> tuple[Card, CheckedItems]:
    """The card, and the items file checked line by line against it (read again, one item at a
    time, when judged), for ``score``, ``cascade`` and ``batch submit``: nothing here opens the
    database or calls a provider."""
    from judgecards.cards import load_card

    card = load_card(card_ref, cards_dir=list(cards_dirs) or None)
    return card, card_items(card, items_path, max_input_chars)


def card_items(card: Card, items_path: Path, max_input_chars: int) -> CheckedItems:
    """The items file checked line by line against ``card`` (its required inputs, the input
    size limit)."""
    from judgecards.judging import check_items

    required = [name for name, spec in card.spec.inputs.items() if spec.required]
    return check_items(
        items_path,
        required=required,
        required_by=card.ref,
        check=oversized_inputs(
            {name: name for name in card.spec.inputs}, input_limit(max_input_chars)
        ),
    )


def judge_options(  # noqa: PLR0913  the shared option groups, by keyword
    card: Card,
    *,
    no_cache: bool,
    max_attempts: int,
    max_input_chars: int,
    base_url: str | None,
    timeout: float,
    settings: Mapping[str, Any],
    prices: Any = None,
    rubric: RubricChoice | None = None,
    **limits: float | None,
) -> dict[str, Any]:
    """The `judgecards.Judge` keyword arguments the shared option groups ask for (``limits``:
    ``rpm``, ``tpm``, ``max_cost`` as given, unset ones left out)."""
    from judgecards.cli._rubric import rubric_policy

    options: dict[str, Any] = {
        "cache": not no_cache,
        "max_attempts": max_attempts,
        "max_input_chars": input_limit(max_input_chars),
        "timeout": timeout,
        **settings,
        **{name: value for name, value in limits.items() if value is not None},
    }
    if base_url:
        options["base_url"] = base_url
    if prices is not None:
        options["prices"] = prices
    policy = rubric_policy(card, rubric)
    if policy is not None:
        options["rubric"] = policy
    return options


def answer_words(item: Mapping[str, Any]) -> int | None:
    """The judged answer's length in words (for the verbosity line), if the item has one."""
    field = next((name for name in _JUDGED_INPUTS if isinstance(item.get(name), str)), None)
    return None if field is None else len(item[field].split())


class ScoreTally:
    """A run's summary figures, added one result at a time.

    Args:
        keep_results: also keep every result (for outputs that list each item: JUnit, a
            markdown summary, annotations); otherwise only counts and sums are kept.
    """

    def __init__(self, *, keep_results: bool = False) -> None:
        self.results: list[JudgeResult] | None = [] if keep_results else None
        self.count = 0
        self.ok = 0
        self.errors: Counter[str | None] = Counter()
        self.not_judged = 0
        self.verdicts: Counter[str] = Counter()
        self.extracted: Counter[str] = Counter()
        self.overridden = 0
        self.with_model_verdict = 0  # a card whose judge gives no verdict has nothing to override
        self.axis_sums: dict[str, float] = {}
        self.axis_counts: Counter[str] = Counter()
        self.tokens_in = 0
        self.tokens_out = 0
        self.cache_read = 0
        self.cache_write = 0
        self.cached = 0
        self.cost = 0.0
        self.unknown_cost = 0
        self.mock = False
        # How often each (answer length in words, score) pair occurred, per axis: both are few
        # distinct values, so this stays small however many items a run has.
        self._pairs: dict[str, Counter[tuple[int, float]]] = {}

    @classmethod
    def of(
        cls, results: Sequence[JudgeResult], items: Iterable[Mapping[str, Any]] | None = None
    ) -> ScoreTally:
        """The tally of results already in hand (``items``: theirs, for the verbosity line)."""
        tally = cls(keep_results=True)
        lengths = (answer_words(item) for item in items) if items is not None else None
        for result in results:
            tally.add(result, next(lengths) if lengths is not None else None)
        return tally

    @property
    def error_kinds(self) -> Counter[str]:
        """Error records by kind, as `judgecards.cli._common.finish_run` takes them."""
        return Counter({str(kind): n for kind, n in self.errors.items()})

    def add(self, result: JudgeResult, words: int | None = None) -> None:
        """Count ``result``; ``words``: its item's answer length (`answer_words`)."""
        if self.results is not None:
            self.results.append(result)
        self.count += 1
        self.cached += bool(result.cached)
        self.mock = self.mock or result.model.startswith("mock:")
        # This run's tokens and cost: a cached result was billed in an earlier run (a batch's
        # result carries that bill, `JudgeResult.cost_usd`).
        if not result.cached:
            self.tokens_in += result.usage.input_tokens
            self.tokens_out += result.usage.output_tokens
            self.cache_read += result.usage.cache_read_tokens
            self.cache_write += result.usage.cache_write_tokens
            if result.cost_usd is None:
                self.unknown_cost += 1
            else:
                self.cost += result.cost_usd
        if result.status == "not_judged":  # over --max-cost: not started, not an error
            self.not_judged += 1
            return
        if result.status == "error":
            self.errors[result.error_kind] += 1
        if result.status != "ok":  # an error record, or not judged (left by a cost cap)
            return
        self.ok += 1
        if result.verdict is not None:
            self.verdicts[result.verdict] += 1
        self.overridden += bool(result.verdict_overridden)
        self.with_model_verdict += result.model_verdict is not None
        extraction = getattr(result, "extraction", None)
        if extraction:
            self.extracted[extraction] += 1
        for axis, value in result.scores.items():
            self.axis_sums[axis] = self.axis_sums.get(axis, 0.0) + value
            self.axis_counts[axis] += 1
            if words is not None:
                self._pairs.setdefault(axis, Counter())[words, value] += 1

    def _prompt_cache(self) -> str:
        """The share of input tokens the provider's prompt cache served (`judgecards.cards.prompt_cache`),
        or nothing when it served and stored none."""
        if not self.tokens_in or not (self.cache_read or self.cache_write):
            return ""
        share = self.cache_read / self.tokens_in
        return f" ({share:.0%} of input read from the prompt cache, {self.cache_write} written)"

    def summary(self, elapsed: float, output_path: Path) -> str:
        from judgecards.limits import run_cost_text

        lines = [f"\n{self.count} items in {elapsed:.1f}s -> {output_path}"]
        if self.verdicts:
            total = sum(self.verdicts.values())
            lines.append(
                "verdicts:  "
                + "  ".join(f"{v} {n} ({n / total:.0%})" for v, n in self.verdicts.most_common())
            )
        if self.with_model_verdict:
            lines.append(
                f"overrides: {self.overridden} (the rule disagreed with the judge's own verdict)"
            )
        for axis, value in self.axis_sums.items():
            n = self.axis_counts[axis]
            lines.append(f"mean {axis:<16} {value / n:.2f}  (n={n})")
        errors = self.errors
        error_text = ", ".join(f"{k} {n}" for k, n in errors.most_common()) if errors else "none"
        lines.append(f"errors:    {sum(errors.values())} ({error_text})")
        if self.extracted:  # how judgments were read: native output, prompt JSON, final line…
            extracted = ", ".join(f"{k} {n}" for k, n in self.extracted.most_common())
            lines.append(f"extracted: {extracted}")
        lines.append(f"tokens:    {self.tokens_in} in, {self.tokens_out} out{self._prompt_cache()}")
        # run_cost_text adds up a list: one entry per unknown cost, or the known total.
        costs: list[float | None] = [None] * self.unknown_cost if self.unknown_cost else [self.cost]
        cost = run_cost_text(costs, cached=self.cached, mock=self.mock)
        lines.append(f"cost:      {cost}")
        lines.append(f"cache:     {self.cached} of {self.count} served without a call")
        return "\n".join(lines)

    def verbosity(self) -> str:
        """Length-vs-score correlation per axis: a judge that rewards length shows it here."""
        lines = []
        for axis in sorted(self._pairs):
            pairs = self._pairs[axis]
            lengths = {length for length, _ in pairs}
            scores = {score for _, score in pairs}
            if pairs.total() < 3 or len(lengths) == 1 or len(scores) == 1:
                continue  # nothing to correlate
            from judgecards.judging import verbosity_bias_single

            # Expanded for this one computation (8 bytes a value), then dropped.
            corr = verbosity_bias_single(
                array("d", (length for length, _ in pairs.elements())),
                array("d", (score for _, score in pairs.elements())),
            )
            if corr.spearman == corr.spearman:  # not nan
                lines.append(
                    f"  {axis:<16} Spearman {corr.spearman:+.2f} "
                    f"(p={corr.spearman_p:.2g}, n={corr.n})"
                )
        if not lines:
            return "verbosity: not enough varied scores to correlate with answer length"
        return "verbosity (answer length in words vs score):\n" + "\n".join(lines)


def stream_to_file(
    judge: Judge,
    items: Sequence[Mapping[str, Any]] | Iterable[Mapping[str, Any]],
    output: OutputFile,
    tally: ScoreTally,
    *,
    total: int,
    concurrency: int,
    progress: Progress | None,
    note: str = "",
) -> None:
    """Judge ``items`` and write each result to ``output`` as it comes, in input order.

    If the output cannot be written (a full disk), the run still judges and stores every item,
    then raises `judgecards.errors.OutputError` (with ``note``): a re-run writes the file from
    the store without a call. Anything else that stops the run leaves no partial file.
    """
    words: deque[int | None] = deque()  # the answer lengths of items read but not yet written

    def source() -> Iterator[Mapping[str, Any]]:
        for item in items:
            words.append(answer_words(item))
            yield item

    async def run(handle: IO[bytes]) -> None:
        stream = judge.ascore_stream(
            source(), concurrency=concurrency, progress=progress, total=total
        )
        unwritable: OSError | None = None
        frozen = False
        async for result in stream:
            if not frozen:  # the provider's SDK is imported by now (on the first call): freeze it
                freeze_heap()
                if collecting:
                    gc.enable()
                frozen = True
            tally.add(result, words.popleft())
            if unwritable is None:
                try:
                    handle.write(result.model_dump_json().encode("utf-8") + b"\n")
                except OSError as error:  # a full disk: judging goes on, every result is stored
                    unwritable = error
        if unwritable is not None:
            raise unwritable

    # The process's imports (pydantic models, the SDK's types: hundreds of thousands of objects)
    # live until it exits; frozen, the collector stops re-scanning them during the run (about 15%
    # of a short run's CPU). Frozen objects are never freed, which a command that exits can afford.
    # Until the first result the collector is off: the SDK's import (on the first call) would
    # otherwise be scanned over and over while it allocates (~50 ms), for no garbage.
    freeze_heap()
    collecting = gc.isenabled()
    gc.disable()
    try:
        output.write_with(lambda handle: asyncio.run(run(handle)), note=note)
    finally:
        if collecting:
            gc.enable()
