"""Does the Rogan–Gladen interval cover the true share on real judges? And how wide is it?

LLMBar (../shared/data/llmbar/evaluator_verdicts.jsonl) gives, per pair, the gold better output
(people) and each judge's recorded verdict with the outputs as given (the judge; an unparsed
reply leaves the item out). Two-valued: ``1`` (output 1 better) is the positive. For each data
set and judge, the truth is the gold share of ``1`` over all its items; each repetition labels
n random items (without replacement), the judge's verdicts on the rest are unlabelled, and
`calibration.rogan_gladen` gives a 95% interval. Printed: coverage (over the repetitions where
it did not refuse), refusals (TPR + TNR ≤ 1 on the labels), mean width, and the mean width of
the human-only Wilson interval on the same n labels.

    .venv/bin/python -m bench.rogan_gladen_coverage             # 500 repetitions per row
    .venv/bin/python -m bench.rogan_gladen_coverage --reps 100  # a quick look
"""

from __future__ import annotations

import argparse

import numpy as np
from numpy.typing import NDArray

from calibration import judge_rates, rogan_gladen
from tests.builders import LLMBAR_SUBSETS, llmbar_set

CASES: tuple[tuple[str, tuple[str, ...], str, tuple[str, ...]], ...] = (
    ("LLMBar Natural+Adversarial", LLMBAR_SUBSETS, "Vanilla", ("GPT-4", "ChatGPT", "PaLM2")),
    ("LLMBar Natural", ("LLMBar/Natural",), "Vanilla", ("GPT-4", "PaLM2")),
    ("Processed MT-Bench", ("Processed/MT-Bench",), "Metrics_Reference", ("GPT-4", "LLaMA2")),
    ("Processed LLMEval^2", ("Processed/LLMEval^2",), "Metrics_Reference", ("GPT-4",)),
)


def pairs(
    subsets: tuple[str, ...], strategy: str, judge: str
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(gold, judge verdict as given) on the items the judge's reply was parsed for."""
    data = llmbar_set(subsets, strategy)
    said = data.judge(judge)[:, 0]
    keep = said > 0
    return data.gold[keep], said[keep]


def run(reps: int, sizes: tuple[int, ...], seed: int) -> None:
    rng = np.random.default_rng(seed)
    print(f"{reps} repetitions per row; 95% intervals; positive = output 1 better\n")
    print(
        f"{'data set':<27} {'judge':<8} {'N':>4} {'n':>4} {'TPR':>5} {'TNR':>5} {'cover':>6} "
        f"{'refused':>7} {'width':>6} {'human':>6}"
    )
    for name, subsets, strategy, judges in CASES:
        for judge in judges:
            gold, said = pairs(subsets, strategy, judge)
            truth = float((gold == 1).mean())
            rates = judge_rates(gold.tolist(), said.tolist(), positive=1)
            for n in sizes:
                if n >= len(gold):
                    continue
                covered, refused, widths, human_widths = 0, 0, [], []
                for _ in range(reps):
                    labelled = np.zeros(len(gold), dtype=bool)
                    labelled[rng.choice(len(gold), n, replace=False)] = True
                    try:
                        e = rogan_gladen(
                            gold[labelled].tolist(),
                            said[labelled].tolist(),
                            said[~labelled].tolist(),
                            positive=1,
                        )
                    except ValueError:
                        refused += 1
                        continue
                    covered += e.low <= truth <= e.high
                    widths.append(e.high - e.low)
                    share = (gold[labelled] == 1).mean()
                    human_widths.append(_wilson_width(float(share), n))
                done = reps - refused
                cover = f"{covered / done:.1%}" if done else "-"
                print(
                    f"{name:<27} {judge:<8} {len(gold):>4} {n:>4} {rates.tpr.value:>5.2f} "
                    f"{rates.tnr.value:>5.2f} {cover:>6} {refused:>7} "
                    f"{np.mean(widths) if widths else float('nan'):>6.3f} "
                    f"{np.mean(human_widths) if human_widths else float('nan'):>6.3f}"
                )


def _wilson_width(share: float, n: int, z: float = 1.959963984540054) -> float:
    denominator = 1 + z**2 / n
    half = z * np.sqrt(share * (1 - share) / n + z**2 / (4 * n**2)) / denominator
    return float(2 * half)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    run(args.reps, (50, 100, 200), args.seed)


if __name__ == "__main__":
    main()
