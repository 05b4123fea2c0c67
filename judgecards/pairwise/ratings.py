"""Ratings from many pairwise outcomes: Bradley–Terry (the estimate to use) and online Elo.

Input is a sequence of comparisons ``(model_a, model_b, winner)`` with ``winner`` in
``{"A", "B", "tie"}`` (``"A"`` means ``model_a`` won). In judgecards a comparison's winner is the
two-order verdict from `judgecards.pairwise.rules.resolve_pair`, but any source of pairwise
outcomes works (human votes, arena battles).

**Scale.** Both methods report Elo-like ratings: a difference of ``scale`` points (400) means odds
of ``base**1`` (10 : 1) that the higher-rated model wins a decisive game, i.e.
``P(i beats j | not a tie) = 1 / (1 + base ** (-(R_i - R_j) / scale))``. Bradley–Terry
ratings are anchored so that their **mean** is ``initial`` (1000), or so that a chosen ``anchor``
model sits at ``initial``; only differences carry meaning.

**Bradley–Terry** (`bradley_terry`) is a maximum-likelihood fit of
``P(i beats j) = sigmoid(theta_i - theta_j)`` over all comparisons at once, so it does not depend on
their order. Ties are handled explicitly, one of two ways:

* ``ties="half"`` (default): a tie counts as half a win for each side, as Chatbot Arena does. The
  fitted ratings then describe the *expected score* (win = 1, tie = 1/2), which is what a
  leaderboard usually wants; with many ties the ratings are pulled together accordingly.
* ``ties="davidson"``: Davidson's (1970) model, ``P(i wins) ∝ pi_i``, ``P(j wins) ∝ pi_j``,
  ``P(tie) ∝ nu * sqrt(pi_i * pi_j)``. Ratings describe decisive games only and ``nu`` (reported as
  ``tie_strength``) absorbs the tie rate; it is the right choice when a judge emits many ties.

The fit is a damped Newton iteration on the pair counts (the log-likelihood is concave in both
models), vectorised over bootstrap resamples so a 1000-resample interval costs a few tenths of a
second. A tiny ridge penalty (``ridge``, default 1e-6 on the natural-log strengths, the same order
as Chatbot Arena's ``LogisticRegression(C=1e6)``) fixes the free additive constant and keeps the
estimate finite when a model won or lost every game; such a model's rating is then very large in
magnitude and its interval very wide — the data cannot bound it.

**Elo** (`elo`) is the classic online update, kept for users who expect it. It is *order
dependent*: the point estimate processes the comparisons in the order given (chronological, say),
and the bootstrap resamples comparisons with replacement in random order, as Chatbot Arena does.

**Intervals** are percentile bootstrap intervals over *comparisons* (each resample refits), computed
by `scipy.stats.bootstrap` with a seeded generator, the same engine as
`judgecards.metrics.stats.bootstrap_ci`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from judgecards.errors import RankingError
from judgecards.pairwise._bradley_terry_fit import fit_bradley_terry
from judgecards.pairwise.rules import VERDICTS

__all__ = ["Comparison", "ModelRating", "Ratings", "bradley_terry", "comparison_groups", "elo"]

Comparison = tuple[str, str, str]
"""One pairwise outcome: ``(model_a, model_b, winner)`` with ``winner`` in ``{"A", "B", "tie"}``.

The winner is typed ``str`` rather than `Verdict` so rows read from CSV or a database need no
cast; it is checked at run time."""

# Keep each vectorised bootstrap batch to about this many resampled indices in memory.
_BATCH_CELLS = 4_000_000
# Ratings closer than this (in rating points) count as equal when ranking.
_RANK_TOLERANCE = 1e-6


@dataclass(frozen=True)
class ModelRating:
    """One model's rating.

    Attributes:
        model: the model name as given in the comparisons.
        rating: point estimate on the Elo-like scale (see the module docstring).
        low: lower bound of the bootstrap interval (``nan`` without a bootstrap).
        high: upper bound of the bootstrap interval (``nan`` without a bootstrap).
        rank: 1 + the number of models with a higher rating (equal ratings, to within 1e-6
            points, share a rank).
        rank_ub: Chatbot Arena's conservative rank: 1 + the number of models whose interval lies
            entirely above this one's (their ``low`` > this ``high``), i.e. the best rank the data
            cannot rule out. Without a bootstrap it equals ``rank``.
        games: comparisons this model took part in.
        wins: games it won.
        losses: games it lost.
        ties: games that were ties.
    """

    model: str
    rating: float
    low: float
    high: float
    rank: int
    rank_ub: int
    games: int
    wins: int
    losses: int
    ties: int

    def to_dict(self) -> dict[str, Any]:
        """A strict-JSON dict (``nan`` becomes ``None``)."""
        return {
            "model": self.model,
            "rating": _json_float(self.rating),
            "low": _json_float(self.low),
            "high": _json_float(self.high),
            "rank": self.rank,
            "rank_ub": self.rank_ub,
            "games": self.games,
            "wins": self.wins,
            "losses": self.losses,
            "ties": self.ties,
        }


@dataclass(frozen=True)
class Ratings:
    """Ratings of several models, best first.

    Attributes:
        method: ``"bradley_terry"`` or ``"elo"``.
        ties: how ties were treated: ``"half"`` or ``"davidson"`` for Bradley–Terry, ``"half"``
            (score 0.5) for Elo.
        models: one `ModelRating` per model, sorted by rating (highest first, then by name).
        n_comparisons: number of comparisons used.
        level: confidence level of the intervals.
        n_resamples: bootstrap resamples behind the intervals (0 = no intervals).
        scale: rating points per factor ``base`` in the win odds (400).
        base: odds base (10).
        initial: the anchor value: mean rating (Bradley–Terry) or starting rating (Elo).
        anchor: the model pinned at ``initial``, or ``None`` when the mean is anchored.
        tie_strength: Davidson's ``nu`` (``None`` unless ``ties="davidson"``). With equal
            strengths the tie probability is ``nu / (2 + nu)``.
        k: the Elo K-factor (``None`` for Bradley–Terry).
    """

    method: Literal["bradley_terry", "elo"]
    ties: Literal["half", "davidson"]
    models: tuple[ModelRating, ...]
    n_comparisons: int
    level: float
    n_resamples: int
    scale: float
    base: float
    initial: float
    anchor: str | None = None
    tie_strength: float | None = None
    k: float | None = None

    def __getitem__(self, model: str) -> ModelRating:
        for entry in self.models:
            if entry.model == model:
                return entry
        raise KeyError(model)

    def __iter__(self) -> Iterator[ModelRating]:
        return iter(self.models)

    def __len__(self) -> int:
        return len(self.models)

    def ranking(self) -> list[str]:
        """Model names, best first."""
        return [entry.model for entry in self.models]

    def win_probability(self, model: str, other: str) -> float:
        """Probability that ``model`` beats ``other`` in a decisive game, from the ratings."""
        diff = self[model].rating - self[other].rating
        return float(1.0 / (1.0 + self.base ** (-diff / self.scale)))

    def to_dict(self) -> dict[str, Any]:
        """A strict-JSON dict (``nan`` becomes ``None``) for ``--json`` output and storage."""
        return {
            "method": self.method,
            "ties": self.ties,
            "n_comparisons": self.n_comparisons,
            "level": self.level,
            "n_resamples": self.n_resamples,
            "scale": self.scale,
            "base": self.base,
            "initial": self.initial,
            "anchor": self.anchor,
            "tie_strength": _json_float(self.tie_strength)
            if self.tie_strength is not None
            else None,
            "k": self.k,
            "models": [entry.to_dict() for entry in self.models],
        }

    def as_text(self) -> str:
        """A fixed-width table for the terminal."""
        if self.method == "bradley_terry":
            tie_text = (
                f"Davidson ties, nu = {self.tie_strength:.3f}"
                if self.ties == "davidson" and self.tie_strength is not None
                else "a tie counts as half a win each"
            )
            title = f"Bradley–Terry ratings ({tie_text})"
            anchor = (
                f"{self.anchor} = {self.initial:g}" if self.anchor else f"mean = {self.initial:g}"
            )
        else:
            title = f"Elo ratings (online, K = {self.k:g}, a tie scores 0.5; order dependent)"
            anchor = f"start = {self.initial:g}"
        pct = f"{round(self.level * 100)}% CI"
        width = max([len("model"), *(len(m.model) for m in self.models)])
        intervals = (
            f"{pct} from {self.n_resamples} bootstrap resamples"
            if self.n_resamples
            else "no intervals"
        )
        odds = f"{self.scale:g} points = {self.base:g}:1 odds"
        header = (
            f"{'rank':>4}  {'model':<{width}}  {'rating':>7}  {pct:>17}  "
            f"{'games':>5}  {'W':>5}  {'L':>5}  {'T':>5}"
        )
        lines = [
            title,
            f"{self.n_comparisons} comparisons; {anchor}; {odds}; {intervals}",
            "",
            header,
        ]
        for m in self.models:
            ci = f"[{m.low:7.1f}, {m.high:7.1f}]" if not math.isnan(m.low) else "-"
            lines.append(
                f"{m.rank:>4}  {m.model:<{width}}  {m.rating:7.1f}  {ci:>17}  {m.games:>5}  "
                f"{m.wins:>5}  {m.losses:>5}  {m.ties:>5}"
            )
        return "\n".join(lines)


def bradley_terry(  # noqa: PLR0913  public API: keyword-only options
    comparisons: Sequence[Comparison],
    *,
    ties: Literal["half", "davidson"] = "half",
    bootstrap: int = 1000,
    level: float = 0.95,
    seed: int | None = 0,
    scale: float = 400.0,
    base: float = 10.0,
    initial: float = 1000.0,
    anchor: str | None = None,
    ridge: float = 1e-6,
) -> Ratings:
    """Fit Bradley–Terry ratings by maximum likelihood, with bootstrap intervals.

    Args:
        comparisons: ``(model_a, model_b, winner)`` triples, ``winner`` in ``{"A", "B", "tie"}``.
            Order does not matter. A model may appear on either side.
        ties: ``"half"`` (a tie is half a win each, Chatbot Arena's choice) or ``"davidson"``
            (an explicit tie parameter); see the module docstring.
        bootstrap: resamples for the intervals (each resamples the comparisons with replacement and
            refits); 0 skips the intervals (bounds are ``nan``).
        level: confidence level in (0, 1).
        seed: seed for the bootstrap (``None`` for fresh randomness).
        scale: rating points for odds of ``base`` to 1.
        base: odds base.
        initial: the rating the mean (or the ``anchor`` model) is pinned at.
        anchor: a model to pin at ``initial`` instead of the mean; its interval is then a point.
        ridge: L2 penalty on the natural-log strengths; keeps undefeated/winless models finite.

    Returns:
        `Ratings` with ``method="bradley_terry"``.

    Raises:
        RankingError: no comparisons, or a comparison graph that splits into groups never
            compared with each other (their ratings would not be on one scale); a `ValueError`.
        ValueError: an unknown winner, a model compared with itself, or an unknown ``anchor``.
    """
    if ties not in ("half", "davidson"):
        raise ValueError(f"ties must be 'half' or 'davidson', got {ties!r}")
    data = _encode(comparisons)
    _check_connected(comparisons)
    if anchor is not None and anchor not in data.models:
        raise ValueError(f"anchor {anchor!r} is not among the compared models {list(data.models)}")
    factor = scale / math.log(base)
    anchor_idx = data.models.index(anchor) if anchor is not None else None

    def to_ratings(theta: np.ndarray) -> np.ndarray:
        if anchor_idx is not None:
            ref = theta[..., [anchor_idx]]
        else:
            ref = theta.mean(axis=-1, keepdims=True)
        ratings: np.ndarray = initial + factor * (theta - ref)
        return ratings

    counts = data.pair_counts(np.arange(data.n)[None, :])
    theta, eta = fit_bradley_terry(counts, data.pairs, len(data.models), ties, ridge)
    point = to_ratings(theta)[0]
    tie_strength = float(np.exp(eta[0])) if eta is not None else None

    def statistic(idx: np.ndarray, axis: int = -1) -> np.ndarray:
        rows = np.atleast_2d(idx)
        theta_b, _ = fit_bradley_terry(
            data.pair_counts(rows), data.pairs, len(data.models), ties, ridge
        )
        out = to_ratings(theta_b).T  # (models, batch)
        return out if idx.ndim > 1 else out[:, 0]

    low, high = _bootstrap(
        statistic, data.n, len(data.models), n_resamples=bootstrap, level=level, seed=seed
    )
    return _ratings(
        data,
        point,
        low,
        high,
        method="bradley_terry",
        ties=ties,
        level=level,
        n_resamples=bootstrap,
        scale=scale,
        base=base,
        initial=initial,
        anchor=anchor,
        tie_strength=tie_strength,
        k=None,
    )


def elo(
    comparisons: Sequence[Comparison],
    *,
    k: float = 4.0,
    bootstrap: int = 1000,
    level: float = 0.95,
    seed: int | None = 0,
    scale: float = 400.0,
    base: float = 10.0,
    initial: float = 1000.0,
) -> Ratings:
    """Online Elo ratings, with intervals from a bootstrap over resampled, reshuffled comparisons.

    Every model starts at ``initial``. For each comparison in order, with expected score
    ``E_a = 1 / (1 + base ** ((R_b - R_a) / scale))`` and actual score ``S_a`` (1 win, 0.5 tie,
    0 loss): ``R_a += k * (S_a - E_a)`` and ``R_b -= k * (S_a - E_a)``. The mean rating stays at
    ``initial``.

    The result depends on the order of ``comparisons``: the point estimate uses the order given.
    ``k = 4`` is Chatbot Arena's choice for tens of thousands of battles; with a few hundred
    comparisons it barely moves ratings away from ``initial`` (chess uses 16–32). Prefer
    `bradley_terry` unless Elo is specifically wanted.

    Args:
        comparisons: ``(model_a, model_b, winner)`` triples in the order they happened.
        k: the K-factor (rating points moved per unit of surprise).
        bootstrap: resamples for the intervals (each draws the comparisons with replacement, in a
            random order, and replays Elo); 0 skips the intervals.
        level: confidence level in (0, 1).
        seed: seed for the bootstrap.
        scale: rating points for odds of ``base`` to 1.
        base: odds base.
        initial: starting rating of every model.

    Returns:
        `Ratings` with ``method="elo"`` and ``ties="half"``.

    Raises:
        RankingError: no comparisons (a `ValueError`).
        ValueError: an unknown winner or a model compared with itself.
    """
    data = _encode(comparisons)
    n_models = len(data.models)
    # Score of side A: A win = 1, B win = 0, tie = 0.5.
    score = np.array([1.0, 0.0, 0.5])[data.outcome]

    def replay(rows: np.ndarray) -> np.ndarray:
        batch = rows.shape[0]
        ratings = np.full((batch, n_models), float(initial))
        lanes = np.arange(batch)
        for t in range(rows.shape[1]):
            game = rows[:, t]
            a, b = data.idx_a[game], data.idx_b[game]
            ra, rb = ratings[lanes, a], ratings[lanes, b]
            expected = 1.0 / (1.0 + base ** ((rb - ra) / scale))
            delta = k * (score[game] - expected)
            ratings[lanes, a] = ra + delta
            ratings[lanes, b] = rb - delta
        return ratings

    point = replay(np.arange(data.n)[None, :])[0]

    def statistic(idx: np.ndarray, axis: int = -1) -> np.ndarray:
        out = replay(np.atleast_2d(idx)).T
        return out if idx.ndim > 1 else out[:, 0]

    low, high = _bootstrap(
        statistic, data.n, n_models, n_resamples=bootstrap, level=level, seed=seed
    )
    return _ratings(
        data,
        point,
        low,
        high,
        method="elo",
        ties="half",
        level=level,
        n_resamples=bootstrap,
        scale=scale,
        base=base,
        initial=initial,
        anchor=None,
        tie_strength=None,
        k=k,
    )


# --------------------------------------------------------------------------------------------
# internals


@dataclass(frozen=True)
class _Encoded:
    models: tuple[str, ...]
    idx_a: np.ndarray  # model index of side A, per comparison
    idx_b: np.ndarray
    outcome: np.ndarray  # 0 = A won, 1 = B won, 2 = tie
    pairs: np.ndarray  # (P, 2) model indices i < j of every pair that was compared
    cell: np.ndarray  # per comparison: pair * 3 + (0 i won, 1 j won, 2 tie)

    @property
    def n(self) -> int:
        return len(self.outcome)

    def pair_counts(self, rows: np.ndarray) -> np.ndarray:
        """(batch, P, 3) counts of [i wins, j wins, ties] per pair for each row of indices."""
        batch = rows.shape[0]
        n_cells = len(self.pairs) * 3
        flat = self.cell[rows] + (np.arange(batch) * n_cells)[:, None]
        counts = np.bincount(flat.ravel(), minlength=batch * n_cells)
        return counts.reshape(batch, len(self.pairs), 3).astype(float)


def _encode(comparisons: Sequence[Comparison]) -> _Encoded:
    if len(comparisons) == 0:
        raise RankingError("no comparisons to rate")
    names: set[str] = set()
    for row, (model_a, model_b, winner) in enumerate(comparisons):
        if winner not in VERDICTS:
            raise ValueError(f"comparison {row}: winner must be one of {VERDICTS}, got {winner!r}")
        if model_a == model_b:
            raise ValueError(f"comparison {row}: model {model_a!r} is compared with itself")
        names.update((model_a, model_b))
    models = tuple(sorted(names))
    index = {name: i for i, name in enumerate(models)}
    idx_a = np.array([index[c[0]] for c in comparisons], dtype=np.intp)
    idx_b = np.array([index[c[1]] for c in comparisons], dtype=np.intp)
    outcome = np.array([VERDICTS.index(c[2]) for c in comparisons], dtype=np.intp)
    lo, hi = np.minimum(idx_a, idx_b), np.maximum(idx_a, idx_b)
    pair_keys, pair_of = np.unique(lo * len(models) + hi, return_inverse=True)
    pairs = np.stack([pair_keys // len(models), pair_keys % len(models)], axis=1)
    # Re-orient each outcome to the pair's (i < j) orientation: an "A won" where A is j is "j won".
    swapped = idx_a > idx_b
    oriented = np.where(swapped & (outcome < 2), 1 - outcome, outcome)
    cell = pair_of.reshape(-1) * 3 + oriented
    return _Encoded(models, idx_a, idx_b, outcome, pairs, cell.astype(np.intp))


def comparison_groups(comparisons: Sequence[Comparison]) -> list[list[str]]:
    """The models split into groups that were never compared with each other.

    Ratings are on one scale only within a group: two models are in the same group when a chain
    of comparisons links them. `bradley_terry` refuses more than one group.

    Args:
        comparisons: ``(model_a, model_b, winner)`` triples; the winner is not looked at.

    Returns:
        The groups, each sorted by name, largest group first (then by first name); one group (or
        none, for no comparisons) means every rating is on one scale.
    """
    parent: dict[str, str] = {}

    def find(name: str) -> str:
        parent.setdefault(name, name)
        while parent[name] != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    for model_a, model_b, _ in comparisons:
        parent[find(model_a)] = find(model_b)
    groups: dict[str, list[str]] = {}
    for name in sorted(parent):
        groups.setdefault(find(name), []).append(name)
    return sorted(groups.values(), key=lambda group: (-len(group), group[0]))


def _check_connected(comparisons: Sequence[Comparison]) -> None:
    groups = comparison_groups(comparisons)
    if len(groups) > 1:
        listed = "; ".join(", ".join(g) for g in groups)
        raise RankingError(
            f"the comparisons split into {len(groups)} groups never compared with each other "
            f"({listed}); their ratings would not be on one scale — rate each group separately"
        )


def _bootstrap(
    statistic: Callable[..., np.ndarray],
    n: int,
    n_models: int,
    *,
    n_resamples: int,
    level: float,
    seed: int | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile intervals for a vector statistic of resampled comparison indices."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if n_resamples < 0:
        raise ValueError(f"bootstrap must be >= 0, got {n_resamples}")
    nan = np.full(n_models, math.nan)
    if n_resamples == 0 or n < 2:
        return nan, nan.copy()
    from scipy import stats as scipy_stats

    with warnings.catch_warnings():
        # A model whose rating is the same in every resample (e.g. the anchor) is expected.
        warnings.simplefilter(
            "ignore", category=getattr(scipy_stats, "DegenerateDataWarning", RuntimeWarning)
        )
        result = scipy_stats.bootstrap(
            (np.arange(n),),
            statistic,
            n_resamples=n_resamples,
            batch=max(1, _BATCH_CELLS // n),
            vectorized=True,
            confidence_level=level,
            method="percentile",
            rng=np.random.default_rng(seed),
        )
    return np.asarray(result.confidence_interval.low), np.asarray(result.confidence_interval.high)


def _ratings(
    data: _Encoded, point: np.ndarray, low: np.ndarray, high: np.ndarray, **meta: Any
) -> Ratings:
    n_models = len(data.models)
    games = np.bincount(data.idx_a, minlength=n_models) + np.bincount(
        data.idx_b, minlength=n_models
    )
    a_won, b_won, tied = data.outcome == 0, data.outcome == 1, data.outcome == 2
    wins = np.bincount(data.idx_a[a_won], minlength=n_models) + np.bincount(
        data.idx_b[b_won], minlength=n_models
    )
    losses = np.bincount(data.idx_b[a_won], minlength=n_models) + np.bincount(
        data.idx_a[b_won], minlength=n_models
    )
    ties = np.bincount(data.idx_a[tied], minlength=n_models) + np.bincount(
        data.idx_b[tied], minlength=n_models
    )
    entries = []
    for m in range(n_models):
        # A hair of tolerance so models the fit cannot tell apart share a rank.
        rank = 1 + int(np.sum(point > point[m] + _RANK_TOLERANCE))
        rank_ub = rank if math.isnan(high[m]) else 1 + int(np.sum(low > high[m] + _RANK_TOLERANCE))
        entries.append(
            ModelRating(
                model=data.models[m],
                rating=float(point[m]),
                low=float(low[m]),
                high=float(high[m]),
                rank=rank,
                rank_ub=rank_ub,
                games=int(games[m]),
                wins=int(wins[m]),
                losses=int(losses[m]),
                ties=int(ties[m]),
            )
        )
    entries.sort(key=lambda e: (-e.rating, e.model))
    return Ratings(models=tuple(entries), n_comparisons=data.n, **meta)


def _json_float(value: float) -> float | None:
    return None if math.isnan(value) else value
