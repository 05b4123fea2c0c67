"""The synthetic `reference` items the speed benchmarks judge.

One definition, so that benchmarks comparing runs (core overhead, adaptive rate) send prompts
of the same size and their numbers can be read side by side.
"""

from __future__ import annotations

__all__ = ["reference_items"]


def reference_items(n: int, tag: str) -> list[dict[str, str]]:
    """``n`` items with ids ``{tag}-{i}``: a fresh tag gives items no store or cache has seen."""
    return [
        {
            "id": f"{tag}-{i}",
            "question": f"What is the capital of country number {i}?",
            "gold_answer": f"City {i}.",
            "model_output": f"I believe it is City {i}, on the river {i % 7}.",
        }
        for i in range(n)
    ]
