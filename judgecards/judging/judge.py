"""`Judge`: a card plus a model, with caching, retries, re-asks and a durable store.

One item's life: render the card (inputs are data) → look up the response cache → call the
provider under the transport retry policy → parse and validate → on invalid output re-ask with
the problems, up to ``max_attempts`` → decide the verdict in code → write the result (and, if it
succeeded, the replies that produced it to the cache) in one transaction (shared with the items
of a stream that finish in the same turn, `judgecards.storage.grouped_saves`). Failures end as error
records; only an authentication failure, which would fail every other item too, stops a batch.

The re-ask loop is written once (`judgecards.judging.attempts`) and driven either synchronously
(`score`) or asynchronously (`ascore`, `score_many`), so the two paths cannot drift apart.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    Callable,
    Iterable,
    Mapping,
    Sequence,
    Sized,
)
from dataclasses import replace
from typing import Any

from judgecards import replies
from judgecards.cards import DEFAULT_MAX_INPUT_CHARS, Card, check_inputs, load_card
from judgecards.errors import (
    InvalidInput,
    MissingInput,
    RenderError,
    TransportError,
)
from judgecards.judging.attempts import Attempts, Run
from judgecards.judging.pool import Progress, stream_judgments
from judgecards.judging.prepared import ItemState, PreparedItem, item_id_of
from judgecards.judging.replay import not_recorded, replay_stand_in
from judgecards.judging.requests import first_request, mock_options
from judgecards.judging.retry import (
    RetryPolicy,
    Sent,
    TransportCounters,
    TransportState,
    acall_with_retries,
    call_with_retries,
)
from judgecards.limits import (
    AdaptiveLimiter,
    CostCap,
    PriceTable,
    RateLimits,
    RunPlan,
    counter_for,
    load_prices,
)
from judgecards.providers import make_provider, split_model
from judgecards.providers.base import Completion, CompletionRequest, Provider, endpoint_of
from judgecards.schemas import RubricPolicy
from judgecards.storage import CacheEntry, GroupedSaves, JudgeResult, Store

__all__ = ["Judge", "Progress"]

_UNSET: Any = object()


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


class Judge:
    """Score items with one judge card and one model.

    Args:
        card: ``name``, ``name@version`` or a loaded `Card`.
        model: ``provider:model``, e.g. ``anthropic:claude-sonnet-5-5``, ``openai:gpt-4o``, or
            ``mock:judge`` for an offline dry run (synthetic scores, labelled as such).
        cards_dir: extra card directories (else ``JUDGECARDS_CARDS_DIR``).
        db: a `Store` or a database path (else ``JUDGECARDS_DB``, else ``./judgecards.db``).
        cache: reuse stored results and cached replies; ``False`` calls the provider afresh
            (and overwrites the stored result).
        max_attempts: judge replies per item, re-asks included.
        retry: transport retry policy (429, 5xx, timeouts).
        temperature / max_tokens / top_logprobs: override the card's defaults; ``temperature=None``
            sends none. With ``top_logprobs`` set, scores are G-Eval-weighted where the provider
            returns logprobs (`judgecards.replies.geval`); ``top_logprobs=None`` keeps sampled scores.
        rubric: for cards with a ``criteria`` input (``rubric``): default criteria, pass
            thresholds, primary criterion and an optional weighted aggregate
            (`judgecards.schemas.RubricPolicy`; default: the four default criteria, no thresholds).
        provider: a ready provider instance (for tests and custom providers).
        max_input_chars: the longest input accepted, in characters (default 200,000; ``None``
            for no limit). A longer input is refused before any call: `InputTooLarge` from
            `score`, an ``input`` error record from `score_many`.
        offline: answer only from stored judgments and cached replies, with no API key; an
            item that would need a call raises `NotRecorded` naming it (`judgecards.judging.replay`).
            With ``cache=False`` it is refused (`ValueError`): there would be nothing to answer.
        prices: a `PriceTable`, or a price file over the shipped table (else
            ``JUDGECARDS_PRICES``); each result's ``cost_usd`` comes from it (`judgecards.limits.pricing`).
        rpm / tpm: requests / tokens per minute allowed to the model; concurrency adapts to the
            server's 429s either way (`judgecards.limits.rate`; ``judge.rates`` tells what it did).
        max_cost: US dollars this judge may spend; an item whose projected cost would pass it is
            not started but returned as ``not_judged`` (`judgecards.limits.budget`, ``judge.budget``).
        **provider_options: passed to the provider: ``api_key``, ``base_url``, ``timeout``,
            ``http_client``, ``async_http_client``.
        output_mode: ``auto``, ``native`` or ``prompt``, over the card's ``output_mode``: how a
            JSON card's schema reaches the judge (`judgecards.replies.structured_output`).
    """

    def __init__(  # noqa: PLR0913  public API: the judge's keyword-only settings
        self,
        card: str | Card = "reference",
        model: str = "mock:judge",
        *,
        cards_dir: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
        db: Store | str | os.PathLike[str] | None = None,
        cache: bool = True,
        max_attempts: int = 3,
        retry: RetryPolicy | None = None,
        temperature: float | None = _UNSET,
        max_tokens: int | None = None,
        top_logprobs: int | None = _UNSET,
        provider: Provider | None = None,
        rubric: RubricPolicy | None = None,
        max_input_chars: int | None = DEFAULT_MAX_INPUT_CHARS,
        offline: bool = False,
        prices: PriceTable | str | os.PathLike[str] | None = None,
        rpm: float | None = None,
        tpm: float | None = None,
        max_cost: float | None = None,
        output_mode: replies.OutputMode | None = None,
        **provider_options: Any,
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if offline and not cache:
            raise ValueError(
                "offline=True answers only from stored judgments and cached replies, and "
                "cache=False ignores both: leave one of them out (pytest: --judge-offline with a "
                "judge built with cache=False)"
            )
        if max_input_chars is not None and max_input_chars < 1:
            raise ValueError("max_input_chars must be at least 1 (or None for no limit)")
        self.max_input_chars = max_input_chars
        self.card = load_card(card, cards_dir=cards_dir)
        self.prices = prices if isinstance(prices, PriceTable) else load_prices(prices)
        self.budget = CostCap.of(max_cost, self.prices.lookup(model), model)  # before any call
        self.rates = RateLimits(rpm=rpm, tpm=tpm)
        if rubric is not None and "criteria" not in self.card.spec.inputs:
            raise ValueError(
                f"rubric= applies to cards with a 'criteria' input; {self.card.ref} has none"
            )
        self.rubric = rubric or (RubricPolicy() if "criteria" in self.card.spec.inputs else None)
        self.model = model
        prefix, _ = split_model(model)
        self.offline = offline
        if offline and provider is None:
            # Same name, model and endpoint: the same cache keys as the online run.
            provider = replay_stand_in(model, base_url=provider_options.get("base_url"))
        if provider is None:
            if prefix == "mock":
                # The mock writes replies from structured descriptions, never from the prompt.
                for name, value in mock_options(self.card).items():
                    provider_options.setdefault(name, value)
            provider = make_provider(model, **provider_options)
        self.provider = provider
        # Part of every key: replies from another server under the same model name are not
        # this judge's (issue 22 item 11).
        self.endpoint = endpoint_of(provider)
        self.is_mock = prefix == "mock"
        self.output_mode: replies.OutputMode = output_mode or self.card.spec.output_mode
        self.native = replies.sends_natively(self.card, self.output_mode, provider)
        self._probe = replies.NativeProbe()  # auto: the first native request alone
        self._owns_store = not isinstance(db, Store)
        self.store = db if isinstance(db, Store) else Store(db)
        self.cache = cache
        self.max_attempts = max_attempts
        self.retry = retry or RetryPolicy()
        # Per-judge memory of the transport layer: live counters, whether the server has
        # answered, and request fields it rejected (used only to build new requests).
        self._transport = TransportState()
        defaults = self.card.spec.defaults
        self.temperature = defaults.temperature if temperature is _UNSET else temperature
        self.max_tokens = max_tokens or defaults.max_tokens
        self.top_logprobs = defaults.top_logprobs if top_logprobs is _UNSET else top_logprobs
        self.params: dict[str, Any] = {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "top_logprobs": self.top_logprobs,
        }
        if self.rubric is not None:
            # Thresholds and weights change the result, not the reply: a new policy re-decides
            # from the response cache without a call.
            self.params["rubric"] = self.rubric.decision_params()

    @property
    def transport_counters(self) -> TransportCounters:
        """Live transport retry counts (429s, server errors, timeouts…) of this judge's calls,
        updated while a batch runs; see `judgecards.judging.retry.TransportCounters`."""
        return self._transport.counters

    def close(self) -> None:
        """Close the provider's connections and, if this judge opened it, the database."""
        self.provider.close()
        if self._owns_store:
            self.store.close()

    def __enter__(self) -> Judge:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Judge(card={self.card.ref!r}, model={self.model!r}, db={str(self.store.path)!r})"

    # ------------------------------------------------------------------ public API

    def score(self, **inputs: Any) -> JudgeResult:
        """Judge one item synchronously. Invalid output and failed calls give an error record."""
        item = self._prepare(inputs, item_id=None)
        stored = self._stored([item])
        if item.key in stored:
            return stored[item.key]
        if (refused := self._over_budget(item)) is not None:
            return refused
        return self._finish_sync(item)

    async def ascore(self, **inputs: Any) -> JudgeResult:
        """Judge one item asynchronously."""
        item = self._prepare(inputs, item_id=None)
        stored = self._stored([item])
        if item.key in stored:
            return stored[item.key]
        if (refused := await self._aover_budget(item)) is not None:
            return refused
        result, entries, params = await self._run_async(item)
        self._save(item, result, entries, params)
        return result

    def plan(self, items: Iterable[Mapping[str, Any]]) -> RunPlan:
        """What `score_many` of ``items`` would send and its projected cost, with no call:
        every first prompt rendered, its tokens estimated (`judgecards.limits.plan`)."""
        prepared = self.prepare(items, classify=True)
        requests = [item.request for item in prepared if item.request is not None]
        stored = {item.key for item in prepared if item.state == "stored"}
        refused = sum(item.state == "refused" for item in prepared)
        return RunPlan.of(
            self.model,
            self.prices.lookup(self.model),
            requests,
            items=len(prepared),
            stored=len(stored),
            refused=refused,
            counter=counter_for(self.model),
        )

    def score_many(
        self,
        items: Iterable[Mapping[str, Any]],
        *,
        concurrency: int = 8,
        progress: Progress | None = None,
    ) -> list[JudgeResult]:
        """Judge many items with at most ``concurrency`` calls in flight; results in input order.

        Each item is a mapping of the card's inputs, optionally with an ``id``. Items already
        judged successfully (same card version, model, parameters, id and inputs) are returned
        from the store without a call, which is also how an interrupted run resumes. An item
        missing an input becomes an error record (``error_kind="input"``); nothing is dropped.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.ascore_many(items, concurrency=concurrency, progress=progress))
        raise RuntimeError(
            "score_many() cannot run inside an event loop; use `await judge.ascore_many(...)`"
        )

    async def ascore_many(
        self,
        items: Iterable[Mapping[str, Any]],
        *,
        concurrency: int = 8,
        progress: Progress | None = None,
        pool: asyncio.Semaphore | None = None,
    ) -> list[JudgeResult]:
        """Async twin of `score_many`; ``pool`` (instead of ``concurrency``) bounds the calls
        in flight together with other batches that share it (a `calibration.Jury`'s judges)."""
        listed = list(items)
        stream = self.ascore_stream(
            listed, concurrency=concurrency, progress=progress, pool=pool, total=len(listed)
        )
        return [result async for result in stream]

    def ascore_stream(
        self,
        items: Iterable[Mapping[str, Any]] | AsyncIterable[Mapping[str, Any]],
        *,
        concurrency: int = 8,
        progress: Progress | None = None,
        pool: asyncio.Semaphore | None = None,
        total: int | None = None,
    ) -> AsyncGenerator[JudgeResult, None]:
        """Judge ``items`` (an iterable or async iterable, read as it is needed) and yield each
        result in input order, holding only a bounded window of items: memory does not grow
        with the number of items (`judgecards.judging.pool`).

        Stored results are looked up a chunk at a time. Items with the same id and inputs share
        one call while both are in the window; a later repeat is answered from the store or the
        response cache. ``total`` (needed with ``progress`` when ``items`` has no length) is
        the count passed to ``progress``.
        """
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if total is None and isinstance(items, Sized):
            total = len(items)
        if progress is not None and total is None:
            raise ValueError("progress needs total= when the items have no length")
        limiter = self.rates.for_run(None if pool else concurrency)
        saves = GroupedSaves(self.store)  # items finishing together share a transaction

        async def work(item: PreparedItem) -> JudgeResult:
            if (refused := await self._aover_budget(item)) is not None:
                return refused
            result, entries, params = await self._run_async(item, limiter=limiter)
            await saves.save(result, inputs=item.inputs, params=params, cache_entries=entries)
            if self.budget is not None:
                self.budget.settle(item.key, result.cost_usd)
            return result

        return stream_judgments(
            self, items, work, concurrency=concurrency, progress=progress, pool=pool, total=total
        )

    # ------------------------------------------------------------------ the seam

    def prepare(
        self,
        items: Iterable[Mapping[str, Any]],
        *,
        classify: bool = False,
        record_refusals: bool = False,
    ) -> list[PreparedItem]:
        """``items`` as this judge finds them before any call, in order (`judgecards.judging.prepared`):
        each keyed, its refused inputs found, and the stored ones looked up (one store query per
        chunk). With ``classify``, each item not stored is also `classify`-ed (its first request
        built and looked up in the response cache). With ``record_refusals``, a refused item's
        ``input`` error record is stored as a live run stores it (and carried as its result).
        """
        prepared: list[PreparedItem] = []
        for item in items:
            item_id = item_id_of(item)
            try:
                entry = replace(self._prepare(item, item_id=item_id), source=item)
            except InvalidInput as error:
                entry = self._refused_input(item, item_id, error, record=record_refusals)
            prepared.append(entry)
        keyed = [entry for entry in prepared if entry.state == "to_call"]
        stored = self._stored(keyed)
        found = [
            replace(entry, state="stored", result=stored[entry.key])
            if entry.state == "to_call" and entry.key in stored
            else entry
            for entry in prepared
        ]
        if not classify:
            return found
        return [
            self.classify(entry, record_refusal=record_refusals)
            if entry.state == "to_call"
            else entry
            for entry in found
        ]

    def classify(self, item: PreparedItem, *, record_refusal: bool = False) -> PreparedItem:
        """``item`` (prepared, not stored) with its first request as it would be sent now:
        ``refused`` if the card cannot render it (with ``record_refusal``, its ``input`` error
        record stored, with no call), ``cached`` if that request's reply is in the response
        cache, else ``to_call``."""
        try:
            request = self._transport.prepare(self._first_request(item))
        except RenderError as error:
            result = None
            if record_refusal:  # the live path's error record: the run stops before a call
                result = self._finish_sync(item)
            return replace(item, state="refused", result=result, refusal=str(error))
        key = self._cache_key(request)
        state: ItemState = "to_call" if self._cached(key) is None else "cached"
        return replace(item, state=state, request=request, cache_key=key)

    def first_request(self, item: PreparedItem) -> CompletionRequest:
        """``item``'s first request as this judge would build it now (not yet adjusted for
        fields the server rejected: `classify` is)."""
        return self._first_request(item)

    def keys_of(self, item: PreparedItem) -> tuple[str, ...]:
        """Every key ``item`` may be stored under: its key, then the one it had before keys
        named the endpoint (a batch submitted then carries it as its custom ids)."""
        return item.key, self._key_before_endpoints(item)

    async def afinish(
        self,
        item: PreparedItem,
        first: Completion | None = None,
        *,
        revise: Callable[[JudgeResult], JudgeResult] | None = None,
    ) -> JudgeResult:
        """Judge a prepared item, ``first`` (a reply already paid for, e.g. a provider
        batch's) answering its first attempt (re-asks are live calls), and store the result,
        ``revise``-d first (a batch's ``via`` and price), exactly as a live run stores it."""
        result, entries, params = await self._run_async(item, first=first)
        if revise is not None:
            result = revise(result)
        self._save(item, result, entries, params)
        return result

    # ------------------------------------------------------------------ internals

    def _prepare(self, inputs: Mapping[str, Any], *, item_id: str | None) -> PreparedItem:
        if self.rubric is not None:
            try:
                inputs = {**inputs, "criteria": self.rubric.criteria_for(inputs.get("criteria"))}
            except ValueError as error:
                raise MissingInput(
                    f"card {self.card.ref}: input 'criteria' is invalid: {error}",
                    card=self.card.ref,
                    variable="criteria",
                ) from None
        card_inputs = {
            name: inputs.get(name) for name in self.card.spec.inputs if inputs.get(name) is not None
        }
        # Raises MissingInput or InputTooLarge before any call.
        check_inputs(self.card, card_inputs, max_input_chars=self.max_input_chars)
        key = _digest(
            [self.card.hash, self.model, self.endpoint, self.params, item_id, card_inputs]
        )[:32]
        # The prompt is rendered when the item is run, not here: a batch starts calling at once,
        # and items answered from the store are never rendered at all.
        return PreparedItem(key=key, item_id=item_id, inputs=card_inputs)

    def _key_before_endpoints(self, item: PreparedItem) -> str:
        """The key `_prepare` gave ``item`` before keys named the endpoint: a batch submitted
        then carries it as its custom ids, and is still collected under it."""
        return _digest([self.card.hash, self.model, self.params, item.item_id, item.inputs])[:32]

    def _first_request(self, item: PreparedItem) -> CompletionRequest:
        return first_request(
            self.card,
            item.inputs,
            model=self.provider.model,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            top_logprobs=self.top_logprobs,
            max_input_chars=self.max_input_chars,
            # After a refusal in this run, new requests are built in the prompt form at once.
            native=self.native and "response_format" not in self._transport.rejected,
            can_fall_back=self.output_mode == "auto",
        )

    def _refused_input(
        self, item: Mapping[str, Any], item_id: str | None, error: InvalidInput, *, record: bool
    ) -> PreparedItem:
        key = _digest(
            [self.card.hash, self.model, self.params, item_id, dict(item), "input-error"]
        )[:32]
        inputs = {k: v for k, v in item.items() if k != "id"}
        result = None
        if record:
            result = JudgeResult(
                id=key,
                item_id=item_id,
                status="error",
                card=self.card.ref,
                card_hash=self.card.hash,
                model=self.model,
                error_kind="input",
                error=str(error),
                cost_usd=0.0,
            )
            self.store.save(result, inputs=inputs, params=self.params)
        return PreparedItem(
            key=key,
            item_id=item_id,
            inputs=inputs,
            state="refused",
            source=item,
            result=result,
            refusal=str(error),
        )

    def _stored(self, items: Sequence[PreparedItem]) -> dict[str, JudgeResult]:
        if not self.cache or not items:
            return {}
        return self.store.finished(item.key for item in items)

    def _cache_key(self, request: CompletionRequest) -> str:
        provider = self.provider
        fields = [provider.name, provider.model, self.endpoint, self.card.hash]
        return _digest([*fields, request.cache_fields()])

    def _cached(self, key: str) -> Completion | None:
        return self.store.cached_completion(key) if self.cache else None

    def _finish_sync(self, item: PreparedItem) -> JudgeResult:
        result, entries, params = self._run_sync(item)
        self._save(item, result, entries, params)
        return result

    def _run_sync(self, item: PreparedItem) -> Run:
        state = Attempts(self, item)
        while (request := state.next_request()) is not None:
            request = self._transport.prepare(request)  # without fields the server rejected
            key = self._cache_key(request)
            completion = self._cached(key)
            cached = completion is not None
            if completion is None:
                if self.offline:
                    raise not_recorded(self.card.ref, self.model, item.item_id, item.inputs)
                # A re-ask or larger retry reserves its own projection first (`judgecards.limits.budget`).
                budget = self.budget
                if budget and state.attempts > 1 and not budget.reserve_call(item.key, request):
                    return state.capped(budget.stopped()), [], self._sent_params(request)
                try:
                    sent = call_with_retries(
                        self.provider, request, self.retry, self._transport, self.rates.single
                    )
                except TransportError as error:
                    return self._failed(state, request, error)
                completion, request, key = self._sent(state, sent, request, key)
            state.request = request
            result = state.feed(key, completion, cached=cached)
            if result is not None:
                return result, state.entries, self._sent_params(request)
        return state.exhausted(), [], self._sent_params(state.request)

    async def _run_async(
        self,
        item: PreparedItem,
        first: Completion | None = None,
        limiter: AdaptiveLimiter | None = None,
    ) -> Run:
        """``first``: a reply already paid for (a provider batch's) answers the first attempt;
        re-asks after it are live calls."""
        state = Attempts(self, item)
        while (request := state.next_request()) is not None:
            request = self._transport.prepare(request)
            key = self._cache_key(request)
            completion: Completion | None
            if first is not None:
                completion, cached, first = first, False, None
            else:
                completion = self._cached(key)
                cached = completion is not None
            if completion is None:
                if self.offline:
                    raise not_recorded(self.card.ref, self.model, item.item_id, item.inputs)
                budget = self.budget
                if (
                    budget
                    and state.attempts > 1
                    and not await budget.areserve_call(item.key, request)
                ):
                    return state.capped(budget.stopped()), [], self._sent_params(request)
                try:
                    sent = await self._probe.send(
                        request.native == "schema",
                        lambda request=request: acall_with_retries(  # type: ignore[misc]
                            self.provider,
                            request,
                            self.retry,
                            self._transport,
                            limiter or self.rates.single,
                        ),
                    )
                except TransportError as error:
                    return self._failed(state, request, error)
                completion, request, key = self._sent(state, sent, request, key)
            state.request = request
            result = state.feed(key, completion, cached=cached)
            if result is not None:
                return result, state.entries, self._sent_params(request)
        return state.exhausted(), [], self._sent_params(state.request)

    def _sent(
        self, state: Attempts, sent: Sent, request: CompletionRequest, key: str
    ) -> tuple[Completion, CompletionRequest, str]:
        """The reply, the request as finally sent and its cache key (hashed again only when
        the request changed on the way: a field the server rejected was dropped)."""
        state.transport_retries += sent.retries
        if sent.request is not request:
            key = self._cache_key(sent.request)
        return sent.completion, sent.request, key

    def _failed(self, state: Attempts, request: CompletionRequest, error: TransportError) -> Run:
        if error.stops_batch:  # bad credentials or a wrong URL: every other item would fail too
            raise error
        if refused := replies.native_refused(self.provider, request, error):
            raise refused  # output_mode native: every item would be refused the same way
        state.transport_retries += error.retries
        # A field rejected during the call is not sent again: record what was sent last.
        return state.failed(error), [], self._sent_params(self._transport.prepare(request))

    def _over_budget(self, item: PreparedItem) -> JudgeResult | None:
        """A ``not_judged`` record if starting ``item`` could pass ``max_cost``, else None
        (waiting, in this thread, while other items' reservations may still give room)."""
        if self.budget is None or self.budget.admit(item.key, *self._cap_questions(item)):
            return None
        return self._not_judged(item)

    async def _aover_budget(self, item: PreparedItem) -> JudgeResult | None:
        """Async twin of `_over_budget`: waits in the event loop."""
        if self.budget is None or await self.budget.aadmit(item.key, *self._cap_questions(item)):
            return None
        return self._not_judged(item)

    def _cap_questions(
        self, item: PreparedItem
    ) -> tuple[Callable[[], CompletionRequest], Callable[[CompletionRequest], bool]]:
        """What the cap asks of an item before it starts, answered as `classify` answers it:
        its first request as it would be sent now, and whether that reply is cached."""
        return (
            lambda: self._transport.prepare(self._first_request(item)),
            lambda request: self._cached(self._cache_key(request)) is not None,
        )

    def _not_judged(self, item: PreparedItem) -> JudgeResult:
        assert self.budget is not None
        return self.budget.not_judged(
            id=item.key,
            item_id=item.item_id,
            card=self.card.ref,
            card_hash=self.card.hash,
            model=self.model,
        )

    def _sent_params(self, request: CompletionRequest | None) -> dict[str, Any]:
        """The call parameters as sent (a field the server rejected is None), for the store."""
        if request is None:
            return self.params
        sent = {"temperature": request.temperature, "top_logprobs": request.top_logprobs}
        return {**self.params, **sent}

    def _save(
        self,
        item: PreparedItem,
        result: JudgeResult,
        entries: list[CacheEntry],
        params: dict[str, Any],
    ) -> None:
        # Only replies that led to a valid judgment are cached (the runners pass none for a
        # failed item), so a failed item is tried afresh next time instead of replaying failure.
        self.store.save(result, inputs=item.inputs, params=params, cache_entries=entries)
        if self.budget is not None:
            self.budget.settle(item.key, result.cost_usd)
