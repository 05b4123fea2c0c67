"""Input tokens per ``reference`` judgment: schema in the prompt vs sent natively, v1 vs v2.

For each card version and output mode, every first request the run would send is rendered
exactly as `Judge.plan` renders it (offline: no call, no key) for SQuAD 2.0 dev questions with
a public system's predictions as the judged answers (``../shared/data/squad``), and its input
tokens are estimated as `judgecards.plan` does (characters / 4; no provider tokenizer is
installed here). The schema sent natively is reported apart: providers turn it into a grammar
and may bill part of it, which this estimate cannot see.

    python -m bench.bench_structured --items 200 --runs 3

Also reported: the wall time of rendering the plan (native ``auto`` requests of a card that
hides its schema are rendered twice, once with the schema for a possible fallback). The
issue-10 target is v2 + native input tokens <= 50% of v1's.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from bench._runs import Measure, machine, repeat, table
from judgecards import Judge, Store
from judgecards.cards import load_card
from judgecards.errors import CardError
from judgecards.structured_output import strict_schema

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "squad"
PREDICTIONS = "pred_v2_0_BERT_single_model_Google_AI_Language.json"


def squad_items(n: int) -> list[dict[str, str]]:
    """Answerable dev questions with their first gold answer and BERT's prediction."""
    articles = json.loads((DATA / "dev-v2.0_first5articles.json").read_text("utf-8"))["data"]
    predicted = json.loads((DATA / PREDICTIONS).read_text("utf-8"))
    items = []
    for article in articles:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                if qa["is_impossible"] or not predicted.get(qa["id"]):
                    continue
                items.append({
                    "id": qa["id"], "question": qa["question"],
                    "gold_answer": qa["answers"][0]["text"], "model_output": predicted[qa["id"]],
                })  # fmt: skip
                if len(items) == n:
                    return items
    return items


def cards() -> list[str]:
    found = ["reference@1"]
    try:
        load_card("reference@2")
        found.append("reference@2")
    except CardError:
        pass
    return found


def tokens_per_judgment(card: str, mode: str, items: list[dict[str, str]]) -> tuple[float, float]:
    with Store(":memory:") as store:
        judge = Judge(card, "openai:gpt-4o", db=store, offline=True, output_mode=mode)  # type: ignore[arg-type]
        started = time.perf_counter()
        plan = judge.plan(items)
        elapsed = time.perf_counter() - started
    return plan.input_tokens / max(plan.to_judge, 1), elapsed


def run(items: list[dict[str, str]]) -> list[Measure]:
    measures: list[Measure] = []
    baseline = None
    for card in cards():
        for mode in ("prompt", "native"):
            tokens, seconds = tokens_per_judgment(card, mode, items)
            baseline = baseline or tokens
            measures.append(Measure(f"{card} {mode}: input tokens/judgment", tokens, "", 0))
            target = "<= 0.50" if (card, mode) == ("reference@2", "native") else ""
            measures.append(
                Measure(f"{card} {mode}: share of v1 prompt", tokens / baseline, "", 2, target)
            )
            measures.append(Measure(f"{card} {mode}: plan render", seconds * 1000, " ms", 0))
    schema = json.dumps(strict_schema(json.loads(load_card("reference@1").output_schema)))
    measures.append(Measure("native schema sent (chars / 4)", len(schema) / 4, "", 0))
    return measures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    items = squad_items(args.items)
    print(f"{len(items)} SQuAD 2.0 dev items; {machine()}")
    results = repeat(lambda _: run(items), args.runs)
    print(table("Input tokens per reference judgment (estimated, characters / 4)", results))


if __name__ == "__main__":
    main()
