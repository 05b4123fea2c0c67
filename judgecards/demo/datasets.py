"""The recorded judges and human labels `judgecards demo` ships, read from ``demo/data``.

Two public data sets, subset and reformatted by ``scripts/build_demo_data.py`` (what was derived
is in ``data/ATTRIBUTION.md``): LLMBar's gold labels with six evaluators' recorded verdicts in
both answer orders (MIT), and MT-Bench's expert votes beside GPT-4's pairwise verdicts
(CC BY 4.0). Nothing here computes a figure: the data is only parsed and checked.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from importlib import resources
from typing import Literal

__all__ = [
    "LLMBAR_EVALUATORS",
    "LLMBarItem",
    "MTBenchComparison",
    "llmbar_items",
    "mt_bench_comparisons",
]

LLMBAR_EVALUATORS = ("GPT-4", "PaLM2", "ChatGPT-0301", "ChatGPT", "LLaMA2", "Falcon")
"""The evaluators whose verdicts are shipped (LLMBar's ``Vanilla`` prompt), strongest first as the
paper ranks them on LLMBar-Natural."""

Side = Literal["1", "2"]
Winner = Literal["A", "B", "tie"]


@dataclass(frozen=True)
class LLMBarItem:
    """One LLMBar instance: an instruction, two outputs, the objectively better one.

    Attributes:
        subset: ``LLMBar/Natural`` or ``LLMBar/Adversarial/Neighbor``.
        index: 0-based position in that subset's ``dataset.json``.
        label: 1 or 2, the better output (LLMBar's gold label).
        verdicts: per evaluator, its verdict with the outputs in the original order and with
            them swapped (mapped back to the original numbering): ``"1"``, ``"2"`` or ``None``
            when LLMBar could not parse the reply.
    """

    subset: str
    index: int
    input: str
    output_1: str
    output_2: str
    label: int
    verdicts: dict[str, tuple[Side | None, Side | None]]

    @property
    def id(self) -> str:
        return f"{self.subset}#{self.index}"


@dataclass(frozen=True)
class MTBenchComparison:
    """One MT-Bench comparison: the expert votes and GPT-4's verdict (both orders resolved).

    ``model_a``/``model_b`` are in alphabetical order and every verdict is oriented to them;
    ``gpt4_winner`` is a tie when GPT-4 disagreed with itself across the two orders
    (``gpt4_inconsistent``), as FastChat decides.
    """

    question_id: int
    turn: int
    model_a: str
    model_b: str
    votes_a: int
    votes_b: int
    votes_tie: int
    gpt4_winner: Winner
    gpt4_inconsistent: bool

    @property
    def id(self) -> str:
        return f"q{self.question_id}-t{self.turn}-{self.model_a}-vs-{self.model_b}"

    @property
    def votes(self) -> list[str]:
        """One entry per expert vote: ``A``, ``B`` or ``tie``."""
        return ["A"] * self.votes_a + ["B"] * self.votes_b + ["tie"] * self.votes_tie


_WINNERS: dict[str, Winner] = {"A": "A", "B": "B", "tie": "tie"}


def _winner(value: str, line: int) -> Winner:
    if value not in _WINNERS:
        raise ValueError(f"mt_bench.csv line {line}, gpt4_winner: {value!r} is not A, B or tie")
    return _WINNERS[value]


def _text(name: str) -> str:
    return (resources.files("judgecards.demo") / "data" / name).read_text(encoding="utf-8")


def llmbar_items() -> list[LLMBarItem]:
    """The shipped LLMBar instances, in file order."""
    items = []
    for line in _text("llmbar.jsonl").splitlines():
        row = json.loads(line)
        verdicts = {name: (pair[0], pair[1]) for name, pair in row["verdicts"].items()}
        items.append(
            LLMBarItem(
                row["subset"],
                row["index"],
                row["input"],
                row["output_1"],
                row["output_2"],
                row["label"],
                verdicts,
            )
        )
    return items


def mt_bench_comparisons() -> list[MTBenchComparison]:
    """The shipped MT-Bench comparisons (1,814, both turns), in file order."""
    rows = csv.DictReader(_text("mt_bench.csv").splitlines())
    return [
        MTBenchComparison(
            int(row["question_id"]),
            int(row["turn"]),
            row["model_a"],
            row["model_b"],
            int(row["n_human_a"]),
            int(row["n_human_b"]),
            int(row["n_human_ties"]),
            _winner(row["gpt4_winner"], line),
            row["gpt4_inconsistent_order"] == "True",
        )
        for line, row in enumerate(rows, start=2)  # line 1 is the header
    ]
