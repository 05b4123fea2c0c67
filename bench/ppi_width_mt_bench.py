"""What the bounded interval costs on MT-Bench win rates, where `judgecards estimate` uses it.

MT-Bench (../shared/data/mt_bench) has GPT-4's verdict and people's vote on 1,814 comparisons.
For the six model pairs with the most comparisons (128–146 each), the truth is the pair's
all-human win rate (a win 1, a tie ½); each subset labels n of the pair's comparisons without
replacement, as an audit draws stored results. Printed per interval kind (t-based finite
population, bounded on [0, 1]): coverage of the 95% corrected interval, and the mean width of
the corrected interval against the human-only one of the same kind and against the t one.

    .venv/bin/python -m bench.ppi_width_mt_bench            # 40 subsets per pair and n
    .venv/bin/python -m bench.ppi_width_mt_bench --reps 10  # a quick look
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from numpy.typing import NDArray

from calibration import SmallSampleWarning, corrected_estimate
from tests.builders import mt_bench

Floats = NDArray[np.float64]


def pair_scores() -> list[tuple[Floats, Floats]]:
    """(people, GPT-4) win rates of the alphabetically first model, for the six largest pairs."""
    data = mt_bench()
    pairs: dict[tuple[str, str], list[int]] = {}
    for i, (a, b) in enumerate(zip(data.model_a, data.model_b, strict=True)):
        pairs.setdefault((min(a, b), max(a, b)), []).append(i)
    largest = sorted(pairs.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:6]
    out = []
    for (first, _), rows in largest:
        index = np.array(rows)
        shown_first = data.model_a[index] == first

        def score(winner: NDArray[np.str_], flip: NDArray[np.bool_] = shown_first) -> Floats:
            value = np.where(winner == "A", 1.0, np.where(winner == "B", 0.0, 0.5))
            return np.where(flip, value, 1.0 - value)

        out.append((score(data.human[index]), score(data.gpt4[index])))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=40, help="subsets per pair and n")
    parser.add_argument("--n", type=int, nargs="*", default=[25, 50, 100])
    args = parser.parse_args()
    warnings.simplefilter("ignore", SmallSampleWarning)
    rng = np.random.default_rng(0)
    pairs = pair_scores()
    print(f"MT-Bench win rates, 6 model pairs of {[len(h) for h, _ in pairs]} comparisons")
    for n in args.n:
        stats: dict[str, list[float]] = {key: [] for key in ("t", "b", "th", "bh", "ct", "cb")}
        for human, judge in pairs:
            truth, size = float(human.mean()), len(human)
            for rep in range(args.reps):
                mask = np.zeros(size, dtype=bool)
                mask[rng.choice(size, n, replace=False)] = True
                parts = (human[mask], judge[mask], judge[~mask])
                t = corrected_estimate(*parts, finite_population=True, seed=rep)
                b = corrected_estimate(*parts, finite_population=True, bounds=(0, 1), seed=rep)
                for key, est in (("t", t.corrected), ("b", b.corrected)):
                    stats[key].append(est.high - est.low)
                    stats["c" + key].append(float(est.low <= truth <= est.high))
                stats["th"].append(t.human_only.high - t.human_only.low)
                stats["bh"].append(b.human_only.high - b.human_only.low)
        mean = {key: float(np.mean(values)) for key, values in stats.items()}
        print(
            f"n = {n:3d}: t: coverage {mean['ct']:.1%}, width {mean['t'] / mean['th']:.2f}x "
            f"human-only t | bounded: coverage {mean['cb']:.1%}, width "
            f"{mean['b'] / mean['bh']:.2f}x human-only bounded, {mean['b'] / mean['t']:.2f}x t"
        )


if __name__ == "__main__":
    main()
