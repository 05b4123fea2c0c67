"""A verdict matrix (items × judges) turned into label codes: shared by the jury aggregators.

Private to the package. A column is one judge, or one judge in one answer order; a cell is that
judge's label for that item, or ``None``/NaN when it gave none (an unparseable reply).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calibration.stats import as_list, is_missing, label_order

Verdicts = Sequence[Sequence[Any]] | NDArray[Any]


@dataclass(frozen=True)
class CodedVerdicts:
    """Label codes: ``codes[i, j]`` is the position of column j's label for item i in
    ``classes``, or -1 when missing; ``judges[j]`` names column j."""

    codes: NDArray[np.intp]
    classes: tuple[Hashable, ...]
    judges: tuple[str, ...]

    def one_hot(self) -> NDArray[np.float64]:
        """Items × (judges·classes) indicators; a missing verdict is all zeros."""
        n, m = self.codes.shape
        k = len(self.classes)
        out = np.zeros((n, m * k))
        rows, cols = np.nonzero(self.codes >= 0)
        out[rows, cols * k + self.codes[rows, cols]] = 1.0
        return out


def encode_verdicts(
    verdicts: Verdicts,
    *,
    judges: Sequence[str] | None,
    labels: Iterable[Hashable] | None,
    extra: Iterable[Hashable] = (),
) -> CodedVerdicts:
    """Check a verdict matrix and code it on one label scale (``extra`` labels join the scale,
    e.g. the human labels)."""
    if isinstance(verdicts, np.ndarray):
        if verdicts.ndim != 2:
            raise ValueError(f"verdicts must be a 2-D items × judges matrix, got {verdicts.shape}")
        rows = [list(r) for r in verdicts.tolist()]
    else:
        rows = [as_list(r, f"verdicts[{i}]") for i, r in enumerate(as_list(verdicts, "verdicts"))]
    if not rows:
        raise ValueError("verdicts has no items")
    width = len(rows[0])
    for i, row in enumerate(rows):
        if len(row) != width:
            raise ValueError(f"verdicts[{i}] has {len(row)} verdicts, verdicts[0] has {width}")
    if width == 0:
        raise ValueError("verdicts has no judges (columns)")
    names = tuple(judges) if judges is not None else tuple(f"judge {j}" for j in range(width))
    if len(names) != width:
        raise ValueError(f"judges names {len(names)} columns, verdicts has {width}")
    observed = [v for row in rows for v in row if not is_missing(v)]
    classes = label_order([*observed, *(v for v in extra if not is_missing(v))], labels)
    if len(classes) < 2:
        raise ValueError(f"a jury needs at least two labels to choose between, got {classes!r}")
    index = {label: c for c, label in enumerate(classes)}
    codes = np.array(
        [[-1 if is_missing(v) else index[v] for v in row] for row in rows], dtype=np.intp
    )
    return CodedVerdicts(codes, classes, names)


def human_codes(human: Sequence[Any] | NDArray[Any], coded: CodedVerdicts) -> NDArray[np.intp]:
    """The human label of each item as a code on the verdicts' scale."""
    values = as_list(human, "human")
    if len(values) != len(coded.codes):
        raise ValueError(
            f"human has {len(values)} labels for {len(coded.codes)} items (one per row of verdicts)"
        )
    index = {label: c for c, label in enumerate(coded.classes)}
    out = np.empty(len(values), dtype=np.intp)
    for i, v in enumerate(values):
        if is_missing(v):
            raise ValueError(f"human[{i}] is missing; drop the item before fitting")
        if v not in index:
            raise ValueError(f"human[{i}] is {v!r}, not on the label scale {coded.classes!r}")
        out[i] = index[v]
    return out


def column_accuracy(coded: CodedVerdicts, truth: NDArray[np.intp]) -> dict[str, float]:
    """Each judge's agreement with ``truth``, averaged over its columns (a missing verdict is
    wrong) — for a pairwise judge with one column per order, "both orders averaged"."""
    right = coded.codes == truth[:, None]
    out: dict[str, list[float]] = {}
    for j, name in enumerate(coded.judges):
        out.setdefault(name, []).append(float(right[:, j].mean()))
    return {name: float(np.mean(values)) for name, values in out.items()}
