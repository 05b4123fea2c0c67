"""Arrays from the public judge-vs-human data sets in ``../shared/data`` (read there, never copied).

Each loader returns plain numpy arrays for the statistical tests (corrected estimates, selective
thresholds, juries). When the data directory is absent the calling test is skipped with the
reason; CI always has it beside the repository.
"""

from __future__ import annotations

import csv
import json
import os
import re
from collections import defaultdict
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

# The same place as conftest's ``shared_data`` fixture: JUDGECARDS_SHARED_DATA, else beside the checkout.
DATA = Path(
    os.environ.get("JUDGECARDS_SHARED_DATA")
    or Path(__file__).resolve().parents[2].parent / "shared" / "data"
)

LLMBAR_SUBSETS = (
    "LLMBar/Natural",
    "LLMBar/Adversarial/Neighbor",
    "LLMBar/Adversarial/GPTInst",
    "LLMBar/Adversarial/GPTOut",
    "LLMBar/Adversarial/Manual",
)
SUMMEVAL_DIMENSIONS = ("coherence", "consistency", "fluency", "relevance")


def data_file(relative: str) -> Path:
    """The path of a shared data file, or skip the test saying where it was looked for."""
    path = DATA / relative
    if not path.is_file():
        pytest.skip(f"public data not found at {path} (see ../shared/data/README.md)")
    return path


@dataclass(frozen=True)
class MTBench:
    """MT-Bench comparisons: human plurality vs GPT-4 (both orders resolved), 1,814 rows."""

    model_a: NDArray[np.str_]
    model_b: NDArray[np.str_]
    human: NDArray[np.str_]  # "A" | "B" | "tie"
    gpt4: NDArray[np.str_]  # "A" | "B" | "tie" (an order-inconsistent verdict is a tie)
    inconsistent: NDArray[np.bool_]  # GPT-4 disagreed with itself across the two orders

    def win_scores(self, model: str) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Human and GPT-4 scores of ``model`` in its comparisons: win 1, tie 0.5, loss 0."""
        points = {"A": 1.0, "tie": 0.5, "B": 0.0}
        as_a, as_b = self.model_a == model, self.model_b == model
        keep = as_a | as_b
        human = np.array([points[v] for v in self.human[keep]])
        gpt4 = np.array([points[v] for v in self.gpt4[keep]])
        flip = as_b[keep]
        return np.where(flip, 1.0 - human, human), np.where(flip, 1.0 - gpt4, gpt4)

    @property
    def models(self) -> list[str]:
        """The six models compared."""
        return sorted({str(m) for m in (*self.model_a, *self.model_b)})


@cache
def mt_bench() -> MTBench:
    """MT-Bench human votes vs the GPT-4 pairwise judge."""
    with data_file("mt_bench/human_vs_gpt4_pair_labels_judgecal.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    return MTBench(
        model_a=np.array([r["model_a"] for r in rows]),
        model_b=np.array([r["model_b"] for r in rows]),
        human=np.array([r["human_winner"] for r in rows]),
        gpt4=np.array([r["gpt4_winner"] for r in rows]),
        inconsistent=np.array([r["gpt4_inconsistent_order"] == "True" for r in rows]),
    )


@cache
def summeval() -> dict[str, tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.str_]]]:
    """Per dimension: (mean of 3 expert scores, GPT-4 reason-then-score, system) per summary.

    1,200 summaries: 12 systems (``model_id``) × 100 source documents.

    GPT-4's score is the last standalone digit 1–5 of its reply ("… Final score: 5."); one reply
    without one (consistency) is dropped.
    """
    experts: dict[tuple[str, str], dict[str, float]] = {}
    with data_file("summeval/annotations_abstractive_12systems.jsonl").open() as handle:
        for line in handle:
            row = json.loads(line)
            experts[(row["model_id"], row["id"])] = {
                d: float(np.mean([a[d] for a in row["expert_annotations"]]))
                for d in SUMMEVAL_DIMENSIONS
            }
    gpt4: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    with data_file("summeval/llm_judgments_shen2023.jsonl").open() as handle:
        for line in handle:
            row = json.loads(line)
            if row["evaluator"] != "gpt-4-0314" or row["method"] != "rts":
                continue
            digits = re.findall(r"(?<!\d)([1-5])(?!\d)", row["resp"])
            if digits:
                gpt4[(row["model_id"], row["id"])][row["dimension"]] = float(digits[-1])
    result = {}
    for dimension in SUMMEVAL_DIMENSIONS:
        keys = sorted(k for k in experts if dimension in gpt4.get(k, {}))
        result[dimension] = (
            np.array([experts[k][dimension] for k in keys]),
            np.array([gpt4[k][dimension] for k in keys]),
            np.array([system for system, _ in keys]),
        )
    return result


@dataclass(frozen=True)
class LLMBar:
    """LLMBar's 419 Natural + Adversarial items, Vanilla strategy, six judges' recorded verdicts.

    ``verdicts[i, 2*j + o]`` is judge ``j``'s verdict on item ``i`` in order ``o`` (0 = as
    given, 1 = swapped, mapped back): 1 or 2, or 0 when the reply could not be parsed.
    """

    judges: tuple[str, ...]
    subsets: NDArray[np.str_]
    gold: NDArray[np.int64]
    verdicts: NDArray[np.int64]

    def judge(self, name: str) -> NDArray[np.int64]:
        """The (items × 2) verdicts of one judge, both orders."""
        j = self.judges.index(name)
        return self.verdicts[:, 2 * j : 2 * j + 2]


@cache
def llmbar() -> LLMBar:
    """The LLMBar verdict matrix (see `LLMBar`)."""
    return llmbar_set(LLMBAR_SUBSETS, "Vanilla")


@cache
def llmbar_set(subsets: tuple[str, ...], strategy: str) -> LLMBar:
    """The verdict matrix of any LLMBar subsets (e.g. ``("Processed/MT-Bench",)``, which has
    only ``Metrics_Reference``) for one strategy, with every judge that has verdicts there."""
    rows = []
    with data_file("llmbar/evaluator_verdicts.jsonl").open() as handle:
        for line in handle:
            row = json.loads(line)
            if row["strategy"] == strategy and row["subset"] in subsets:
                rows.append(row)
    judges = tuple(sorted({r["evaluator"] for r in rows}))
    items = sorted({(subsets.index(r["subset"]), r["index"]) for r in rows})
    position = {item: i for i, item in enumerate(items)}
    gold = np.zeros(len(items), dtype=np.int64)
    verdicts = np.zeros((len(items), 2 * len(judges)), dtype=np.int64)
    for r in rows:
        i = position[(subsets.index(r["subset"]), r["index"])]
        gold[i] = r["label"]
        j = judges.index(r["evaluator"])
        for o, key in enumerate(("winner_swap_false", "winner_swap_true")):
            verdicts[i, 2 * j + o] = {"1": 1, "2": 2}.get(r[key] or "", 0)
    return LLMBar(judges, np.array([subsets[s] for s, _ in items]), gold, verdicts)
