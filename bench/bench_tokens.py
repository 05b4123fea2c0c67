"""Tokens per judgment, the static share of the prompt, and the prompt cache on a repeated prefix.

On SQuAD 2.0 dev questions with a public system's predictions as the judged answers (the items
of `bench.bench_structured`, ``../shared/data/squad``), for ``reference@1``, ``reference@2`` and
``reference@3`` with the schema in the prompt and sent natively:

  * input tokens per judgment as `Judge.plan` counts them (system prompt, message, and the
    schema when it is sent natively, which providers bill as input), counted two ways:
    characters / 4 and, with the ``tokens`` extra, OpenAI's o200k_base tokenizer (gpt-4o's);
    and their share of v1's (schema in the prompt). Target (issue 10): the newest card with
    native output <= 50% of v1's;
  * the static share: the part of the prompt before the item (`judgecards.cards.prompt_cache`), the
    only part a provider can cache (characters; the schema sent natively is not in it);
  * against a loopback fake of Anthropic's Messages API that bills a ``cache_control`` prefix
    it has already answered as a cache read and a new one as a cache write (tokens = characters
    / 4), the real ``anthropic`` SDK judging every item at concurrency C: the share of the
    static tokens billed as cache reads (target >= 80%) and the cost per judgment with and
    without the cache at the shipped price of ``anthropic:claude-opus-4-1``. The schema sent
    natively (``output_config``) is billed as uncached input.

The cache run judges with reference@3. The shipped minimum for that model is 1,024 tokens and
reference@3's static prefix is shorter (the "static prefix tokens" row; the schema goes natively),
so the shipped table would not mark it:
the bench lowers the minimum with a user table (JUDGECARDS_CACHE_MINIMUMS), as a card with
few-shot examples would pass it. Requests in flight before the first reply all write.

    python -m bench.bench_tokens --items 200 --concurrency 8 --runs 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench._runs import Measure, machine, repeat, table  # noqa: E402
from bench.bench_structured import COUNTED_BY, cards, squad_items, tokens_per_judgment  # noqa: E402
from judgecards import Judge  # noqa: E402
from judgecards.cards import load_card, render  # noqa: E402
from judgecards.cards.prompt_cache import CACHE_MINIMUMS_ENV  # noqa: E402
from judgecards.limits import CHARACTERS, counter_for, load_prices  # noqa: E402
from judgecards.replies import guards_schema  # noqa: E402
from tests.fakes.http import reference_judgment  # noqa: E402
from tests.fakes.server import FakeRequest, FakeServer  # noqa: E402

MODEL = "claude-opus-4-1"


class PromptCache:
    """The fake server's cache: a marked prefix is readable once a request with it was answered."""

    def __init__(self) -> None:
        self.answered: set[str] = set()
        self.lock = threading.Lock()
        self.static = self.read = self.written = self.requests = 0

    def bill(self, request: FakeRequest) -> tuple[int, dict[str, Any]]:
        body = request.body
        system = body.get("system") or ""
        system_text = system if isinstance(system, str) else "".join(b["text"] for b in system)
        content = body["messages"][0]["content"]
        blocks = [{"text": content}] if isinstance(content, str) else content
        marked = [b["text"] for b in blocks if "cache_control" in b]
        # The schema sent natively is billed as input too; whether Anthropic caches it is not
        # documented, so it is billed here as uncached input.
        schema = body.get("output_config", {}).get("format", {}).get("schema")
        sent = json.dumps(schema, separators=(",", ":")) if schema is not None else ""
        total = (len(system_text) + sum(len(b["text"]) for b in blocks) + len(sent)) // 4
        prefix = (len(system_text) + len(marked[0])) // 4 if marked else 0
        with self.lock:
            hit = bool(marked) and marked[0] in self.answered
            self.static += prefix
            self.requests += 1
            self.read += prefix if hit else 0
            self.written += 0 if hit else prefix
            self.answered.update(marked)  # the reply is sent after this: later requests read
        usage = {
            "input_tokens": total - prefix, "output_tokens": 60,
            "cache_read_input_tokens": prefix if hit else 0,
            "cache_creation_input_tokens": 0 if hit else prefix,
        }  # fmt: skip
        return 200, {
            "id": "msg_bench", "type": "message", "role": "assistant", "model": MODEL,
            "content": [{"type": "text", "text": reference_judgment()}],
            "stop_reason": "end_turn", "stop_sequence": None, "usage": usage,
        }  # fmt: skip


def static_share(card: str, native: bool, items: list[dict[str, str]]) -> float:
    """The share of the prompt's characters (system included) before the item, the schema left
    out when sent natively by a card that guards it (v1 cards keep theirs)."""
    loaded = load_card(card)
    hidden = native and guards_schema(loaded.body)
    static = total = 0
    for item in items:
        prompt = render(loaded, item, output_schema="" if hidden else None)
        system = len(prompt.system or "")
        static += system + prompt.static_chars
        total += system + len(prompt.user)
    return static / total


def cache_run(items: list[dict[str, str]], concurrency: int, latency: float) -> list[Measure]:
    """Judge every item through the real SDK against the caching fake; bill with the prices."""
    cache = PromptCache()
    server = FakeServer(latency=latency, fault=cache.bill).serve_in_thread()
    with tempfile.TemporaryDirectory() as scratch:
        minimums = Path(scratch) / "minimums.yml"
        minimums.write_text(f"minimums: {{anthropic:{MODEL}: 0}}\n", encoding="utf-8")
        os.environ[CACHE_MINIMUMS_ENV] = str(minimums)
        try:
            judge = Judge(
                "reference@3",
                f"anthropic:{MODEL}",
                db=Path(scratch) / "bench.db",
                base_url=server.base_url.removesuffix("/v1"),
                api_key="sk-ant-bench",
            )
            with judge:
                results = asyncio.run(judge.ascore_many(items, concurrency=concurrency))
        finally:
            del os.environ[CACHE_MINIMUMS_ENV]
            server.stop()
    bad = [r for r in results if not r.ok]
    if bad:
        raise SystemExit(f"{len(bad)} items failed: {bad[0].error}")
    price = load_prices().lookup(f"anthropic:{MODEL}")
    assert price is not None
    paid = sum(r.cost_usd or 0.0 for r in results)
    uncached = sum(price.cost(r.usage.input_tokens, r.usage.output_tokens) for r in results)
    total_in = sum(r.usage.input_tokens for r in results)
    read = sum(r.usage.cache_read_tokens for r in results)
    n = len(results)
    return [
        Measure("static prefix tokens per request", cache.static / cache.requests, "", 0),
        Measure("static tokens billed as cache reads", cache.read / cache.static, "", 3, ">= 0.80"),
        Measure("share of all input read from cache", read / total_in, "", 3),
        Measure("cost per judgment, cached (USD)", paid / n, "", 6),
        Measure("cost per judgment, no cache (USD)", uncached / n, "", 6),
        Measure("cost cached / no cache", paid / uncached, "", 3),
    ]


def run(items: list[dict[str, str]], concurrency: int, latency: float) -> list[Measure]:
    measures: list[Measure] = []
    versions = cards()
    for label, model in COUNTED_BY.items():
        if label == "o200k" and counter_for(model) is CHARACTERS:
            continue  # the `tokens` extra is not installed
        v1 = tokens_per_judgment("reference@1", "prompt", items, model)[0]
        for card in versions:
            for mode in ("prompt", "native"):
                tokens = tokens_per_judgment(card, mode, items, model)[0]
                name = f"{card} {mode} ({label})"
                target = "<= 0.50" if (card, mode) == (versions[-1], "native") else ""
                measures.append(Measure(f"{name}: input tokens/judgment", tokens, "", 0))
                measures.append(Measure(f"{name}: share of v1", tokens / v1, "", 3, target))
    for card in versions:
        for mode in ("prompt", "native"):
            share = static_share(card, mode == "native", items)
            measures.append(Measure(f"{card} {mode}: static share of the prompt", share, "", 3))
    return measures + cache_run(items, concurrency, latency)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--latency", type=float, default=0.02, help="fake server seconds/request")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    items = squad_items(args.items)
    print(f"{len(items)} SQuAD 2.0 dev items, concurrency {args.concurrency}; {machine()}")
    results = repeat(lambda _: run(items, args.concurrency, args.latency), args.runs)
    print(table("Tokens per reference judgment and the prompt cache", results))


if __name__ == "__main__":
    main()
