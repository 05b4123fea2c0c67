"""Build label lists from a confusion matrix, so hand-worked examples stay readable."""

from __future__ import annotations


def from_confusion(
    confusion: list[list[int]], labels: list[object]
) -> tuple[list[object], list[object]]:
    """(judge, human) label lists with confusion[i][j] items human=labels[i], judge=labels[j]."""
    judge: list[object] = []
    human: list[object] = []
    for i, row in enumerate(confusion):
        for j, count in enumerate(row):
            human += [labels[i]] * count
            judge += [labels[j]] * count
    return judge, human
