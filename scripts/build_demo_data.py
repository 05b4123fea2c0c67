"""Build the data `judgecards demo` ships (judgecards/demo/data/) from ../shared/data.

Run from the repository root: ``python scripts/build_demo_data.py [DATA_DIR]``. The output is
deterministic; what it derives is described in judgecards/demo/data/ATTRIBUTION.md.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

SUBSETS = ("LLMBar/Natural", "LLMBar/Adversarial/Neighbor")
STRATEGY = "Vanilla"
EVALUATORS = ("GPT-4", "ChatGPT", "ChatGPT-0301", "PaLM2", "LLaMA2", "Falcon")
MT_COLUMNS = (
    "question_id",
    "turn",
    "model_a",
    "model_b",
    "n_human_a",
    "n_human_b",
    "n_human_ties",
    "gpt4_winner",
    "gpt4_inconsistent_order",
)


def main() -> None:
    data = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/data")
    out = Path(__file__).resolve().parents[1] / "judgecards" / "demo" / "data"
    verdicts: dict[tuple[str, int], dict[str, list[str | None]]] = {}
    with (data / "llmbar" / "evaluator_verdicts.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            if row["subset"] in SUBSETS and row["strategy"] == STRATEGY:
                verdicts.setdefault((row["subset"], row["index"]), {})[row["evaluator"]] = [
                    row["winner_swap_false"],
                    row["winner_swap_true"],
                ]
    with (out / "llmbar.jsonl").open("w", encoding="utf-8", newline="\n") as handle:
        for subset in SUBSETS:
            name = subset.replace("/", "__")
            items = json.loads((data / "llmbar" / f"{name}.json").read_text(encoding="utf-8"))
            for index, item in enumerate(items):
                recorded = verdicts[(subset, index)]
                row = {
                    "subset": subset,
                    "index": index,
                    "input": item["input"],
                    "output_1": item["output_1"],
                    "output_2": item["output_2"],
                    "label": item["label"],
                    "verdicts": {e: recorded[e] for e in EVALUATORS},
                }
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    source = data / "mt_bench" / "human_vs_gpt4_pair_labels_judgecal.csv"
    with (
        source.open(encoding="utf-8", newline="") as f,
        (out / "mt_bench.csv").open("w", encoding="utf-8", newline="") as g,
    ):
        writer = csv.writer(g, lineterminator="\n")
        writer.writerow(MT_COLUMNS)
        for row in csv.DictReader(f):
            writer.writerow([row[c] for c in MT_COLUMNS])


if __name__ == "__main__":
    main()
