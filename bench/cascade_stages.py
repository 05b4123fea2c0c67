"""Does every stage of a cascade keep its guarantee? Calibrating on all labels vs on what is left.

LLMBar (../shared/data/llmbar/evaluator_verdicts.jsonl) holds six judges' recorded verdicts in
both answer orders on pairs with a gold label, Processed/MT-Bench among them (MT-Bench human
majority, ties removed). Each judge's confidence is both-order consistency (1.0 when the two
orders name the same winner, 0.5 when not, as `calibration.order_consistency`); an unparsed
order is no usable judgment; a pair agrees when both orders name the gold winner.

Each split draws half the pairs as calibration labels and gets one threshold per judge two ways:

* ``all``: each judge by `selective_threshold` on every calibration pair (the old rule);
* ``left``: `cascade_thresholds`, each judge only on the calibration pairs no earlier judge
  trusts (Trust or Escalate's ``cascaded_selective_evaluation``).

A stage fails a split when its agreement on the pairs it decides is below the target; the
population is the whole subset (``pop``), and the held-out half is shown beside it (``test``,
which adds the test half's own sampling noise). The guarantee asks each stage to fail in at most
δ = 10% of splits (population view).

    .venv/bin/python -m bench.cascade_stages               # 400 splits per row
    .venv/bin/python -m bench.cascade_stages --splits 50   # a quick look
"""

from __future__ import annotations

import argparse

import numpy as np
from numpy.typing import NDArray

from calibration.stats import cascade_stage_thresholds, selective_threshold
from tests.builders import LLMBAR_SUBSETS, llmbar_set

Bools = NDArray[np.bool_]
Floats = NDArray[np.float64]

# (name, subsets, strategy, judges cheapest first, targets)
CASES: tuple[tuple[str, tuple[str, ...], str, tuple[str, ...], tuple[float, ...]], ...] = (
    ("LLMBar Natural", ("LLMBar/Natural",), "Vanilla", ("PaLM2", "ChatGPT", "GPT-4"), (0.85, 0.9)),
    (
        "LLMBar Adversarial",
        LLMBAR_SUBSETS[1:],
        "Vanilla",
        ("LLaMA2", "ChatGPT", "GPT-4"),
        (0.75, 0.8),
    ),
    (
        "MT-Bench (Processed)",
        ("Processed/MT-Bench",),
        "Metrics_Reference",
        ("LLaMA2", "PaLM2", "GPT-4"),
        (0.75, 0.8),
    ),
)


def judged(
    subsets: tuple[str, ...], strategy: str, judges: tuple[str, ...]
) -> tuple[list[Floats], list[Bools]]:
    """Per judge: confidence (nan: an order unparsed) and agreement with gold, per pair."""
    data = llmbar_set(subsets, strategy)
    confidences, agrees = [], []
    for name in judges:
        verdicts = data.judge(name)
        parsed = (verdicts > 0).all(axis=1)
        same = verdicts[:, 0] == verdicts[:, 1]
        confidences.append(np.where(parsed, np.where(same, 1.0, 0.5), np.nan))
        agrees.append(parsed & same & (verdicts[:, 0] == data.gold))
    return confidences, agrees


def stage_outcomes(
    thresholds: list[float | None], confidences: list[Floats], agrees: list[Bools], rows: Bools
) -> list[float]:
    """Each stage's agreement on the rows it decides (nan when it decides none)."""
    left = rows.copy()
    out = []
    for threshold, conf, right in zip(thresholds, confidences, agrees, strict=True):
        if threshold is None:
            out.append(np.nan)
            continue
        decides = left & np.isfinite(conf) & (np.nan_to_num(conf, nan=-1.0) >= threshold)
        out.append(float(right[decides].mean()) if decides.any() else np.nan)
        left &= ~decides
    return out


def run(splits: int, seed: int, delta: float) -> None:
    rng = np.random.default_rng(seed)
    print(f"{splits} calibration/test splits (half each), δ = {delta}; share of splits in which a")
    print("stage's agreement on what it decides is below target (population | test half),")
    print("and its mean share of the pairs it decides (population)\n")
    header = f"{'data set':<22} {'target':>6} {'stage':<8} {'rule':<5} {'fail pop':>9} "
    print(header + f"{'fail test':>10} {'decides':>8}")
    for name, subsets, strategy, judges, targets in CASES:
        confidences, agrees = judged(subsets, strategy, judges)
        n = len(confidences[0])
        for target in targets:
            fails = {rule: np.zeros((2, len(judges))) for rule in ("all", "left")}
            decided = {rule: np.zeros(len(judges)) for rule in ("all", "left")}
            for _ in range(splits):
                calib = np.zeros(n, dtype=bool)
                calib[rng.choice(n, n // 2, replace=False)] = True
                sub_c = [c[calib] for c in confidences]
                sub_a = [a[calib] for a in agrees]
                left = [
                    s.threshold
                    for s in cascade_stage_thresholds(sub_c, sub_a, target=target, delta=delta)
                ]
                alone = [
                    selective_threshold(
                        np.nan_to_num(c[np.isfinite(c)]),
                        a[np.isfinite(c)],
                        target=target,
                        delta=delta,
                    ).threshold
                    for c, a in zip(sub_c, sub_a, strict=True)
                ]
                for rule, thresholds in (("all", alone), ("left", left)):
                    for view, rows in enumerate((np.ones(n, dtype=bool), ~calib)):
                        agreement = np.array(stage_outcomes(thresholds, confidences, agrees, rows))
                        fails[rule][view] += np.nan_to_num(agreement < target, nan=0.0)
                    decided[rule] += share_decided(thresholds, confidences)
            for j, judge in enumerate(judges):
                for rule in ("all", "left"):
                    pop, test = fails[rule][:, j] / splits
                    print(
                        f"{name:<22} {target:>6.2f} {judge:<8} {rule:<5} {pop:>9.1%} "
                        f"{test:>10.1%} {decided[rule][j] / splits:>8.1%}"
                    )
        print()


def share_decided(thresholds: list[float | None], confidences: list[Floats]) -> Floats:
    """Share of all pairs each stage decides."""
    left = np.ones(len(confidences[0]), dtype=bool)
    out = np.zeros(len(thresholds))
    for j, (threshold, conf) in enumerate(zip(thresholds, confidences, strict=True)):
        if threshold is None:
            continue
        decides = left & np.isfinite(conf) & (np.nan_to_num(conf, nan=-1.0) >= threshold)
        out[j] = decides.mean()
        left &= ~decides
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=400, help="calibration/test splits per row")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--delta", type=float, default=0.1)
    args = parser.parse_args()
    run(args.splits, args.seed, args.delta)


if __name__ == "__main__":
    main()
