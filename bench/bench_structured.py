"""Input tokens per ``reference`` judgment: schema in the prompt vs sent natively, per version.

For each card version and output mode, every first request the run would send is rendered
exactly as `Judge.plan` renders it (offline: no call, no key) for SQuAD 2.0 dev questions with
a public system's predictions as the judged answers (``../shared/data/squad``), and its input
tokens are counted as `Judge.plan` counts them: the system prompt, the messages, and the schema
when it is sent natively (providers bill it as input; counted as the compact JSON sent). Two
counts: characters / 4 (the estimate for every provider) and, when the ``tokens`` extra is
installed, OpenAI's o200k_base tokenizer (gpt-4o's).

    python -m bench.bench_structured --items 200 --runs 3

Also reported: the schema sent natively alone, and the wall time of rendering the plan
(native ``auto`` requests of a card that hides its schema are rendered twice, once with the
schema for a possible fallback). The issue-10 target is the newest version + native input tokens
<= 50% of v1's.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from bench._runs import Measure, machine, repeat, table
from judgecards import Judge, Store
from judgecards.cards import list_cards, load_card
from judgecards.judging.requests import first_request
from judgecards.limits import CHARACTERS, counter_for
from judgecards.providers.base import CompletionRequest

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
    """Every built-in ``reference`` version, oldest first: the last is the one the target is on."""
    versions = sorted(c.version for c in list_cards() if c.name == "reference" and c.released)
    return [f"reference@{version}" for version in versions]


# The same OpenAI requests, counted two ways: a model tiktoken maps to o200k_base, and one it
# does not know (a compatible server's), which is counted as characters / 4.
COUNTED_BY = {"o200k": "openai:gpt-4o", "chars/4": "openai:judge"}


def tokens_per_judgment(
    card: str, mode: str, items: list[dict[str, str]], model: str = "openai:gpt-4o"
) -> tuple[float, float, str]:
    """Input tokens per first request as `Judge.plan` counts them, the plan's wall time, and
    how they were counted."""
    with Store(":memory:") as store:
        judge = Judge(card, model, db=store, offline=True, output_mode=mode)  # type: ignore[arg-type]
        started = time.perf_counter()
        plan = judge.plan(items)
        elapsed = time.perf_counter() - started
    return plan.input_tokens / max(plan.to_judge, 1), elapsed, plan.token_method


def native_schema_tokens(card: str, item: dict[str, str], model: str) -> int:
    """Tokens of the schema a native request of ``card`` carries, counted alone."""
    request = first_request(
        load_card(card), item, model=model, temperature=0.0, max_tokens=800, top_logprobs=None,
        max_input_chars=None, native=True,
    )  # fmt: skip
    schema_only = CompletionRequest(
        model=model, messages=(), native="schema", native_schema=request.native_schema
    )
    return counter_for(model).count(schema_only)


def run(items: list[dict[str, str]]) -> list[Measure]:
    measures: list[Measure] = []
    versions = cards()
    counts = {
        label: model
        for label, model in COUNTED_BY.items()
        if label != "o200k" or counter_for(model) is not CHARACTERS
    }
    for label, model in counts.items():
        baseline = tokens_per_judgment("reference@1", "prompt", items, model)[0]
        for card in versions:
            for mode in ("prompt", "native"):
                tokens, seconds, _ = tokens_per_judgment(card, mode, items, model)
                name = f"{card} {mode} ({label})"
                target = "<= 0.50" if (card, mode) == (versions[-1], "native") else ""
                measures.append(Measure(f"{name}: input tokens/judgment", tokens, "", 0))
                measures.append(
                    Measure(f"{name}: share of v1 prompt", tokens / baseline, "", 3, target)
                )
                if label == "chars/4":
                    measures.append(Measure(f"{name}: plan render", seconds * 1000, " ms", 0))
        for card in versions:
            sent = native_schema_tokens(card, items[0], model)
            measures.append(Measure(f"{card} native schema sent ({label})", sent, "", 0))
    return measures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    items = squad_items(args.items)
    print(f"{len(items)} SQuAD 2.0 dev items; {machine()}")
    results = repeat(lambda _: run(items), args.runs)
    print(table("Input tokens per reference judgment, native schema included", results))


if __name__ == "__main__":
    main()
