"""The Bradley–Terry fit behind `judgecards.pairwise.ratings.bradley_terry`.

A damped Newton iteration on the pair counts, vectorised over bootstrap resamples (each row of
``counts`` is one resample), for the plain model (ties as half a win) and Davidson's tie model.
The log-likelihood is concave in both, so Newton with backtracking converges from zero.
"""

from __future__ import annotations

import numpy as np

__all__ = ["fit_bradley_terry"]


def fit_bradley_terry(  # noqa: PLR0915, PLR0917  one vectorised Newton solve
    counts: np.ndarray,
    pairs: np.ndarray,
    n_models: int,
    ties: str,
    ridge: float,
    max_iter: int = 100,
    tol: float = 1e-9,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Maximise the penalised log-likelihood for every row of ``counts`` at once.

    Parameters per row: log-strengths ``theta`` (n_models) and, for Davidson, ``eta = log nu``.
    Returns ``theta`` (batch, n_models) and ``eta`` (batch,) or ``None``.
    """
    from scipy.special import expit

    batch = counts.shape[0]
    davidson = ties == "davidson"
    dim = n_models + (1 if davidson else 0)
    i, j = pairs[:, 0], pairs[:, 1]
    beta = np.zeros((batch, dim))
    if davidson:
        # Start nu at the observed tie share (nu / (2 + nu) = tie rate at equal strengths).
        tie_rate = (counts[..., 2].sum(-1) + 0.5) / (counts.sum((-1, -2)) + 1.0)
        beta[:, -1] = np.log(2 * tie_rate / (1 - tie_rate))
    # The ridge also applies to eta so a resample without ties stays finite (nu -> ~0).
    penalty = np.full(dim, ridge)

    def objective(b: np.ndarray) -> np.ndarray:
        d = b[:, i] - b[:, j]
        if davidson:
            logits = np.stack([d / 2, -d / 2, np.broadcast_to(b[:, -1:], d.shape)], axis=-1)
            logp = logits - _logsumexp(logits)
            ll = (counts * logp).sum((-1, -2))
        else:
            win_i = counts[..., 0] + counts[..., 2] / 2
            win_j = counts[..., 1] + counts[..., 2] / 2
            ll = -(win_i * np.logaddexp(0.0, -d) + win_j * np.logaddexp(0.0, d)).sum(-1)
        value: np.ndarray = ll - 0.5 * (penalty * b * b).sum(-1)
        return value

    rows = np.arange(batch)[:, None]
    current = objective(beta)
    for _ in range(max_iter):
        d = beta[:, i] - beta[:, j]
        grad = np.zeros((batch, dim))
        hess = np.zeros((batch, dim, dim))  # negative Hessian (positive semi-definite)
        if davidson:
            logits = np.stack([d / 2, -d / 2, np.broadcast_to(beta[:, -1:], d.shape)], axis=-1)
            p = np.exp(logits - _logsumexp(logits))
            n = counts.sum(-1)
            resid = counts - n[..., None] * p
            g_d = 0.5 * (resid[..., 0] - resid[..., 1])
            g_eta = resid[..., 2]
            # Fisher information of the three-way softmax, n (diag p - p p^T), mapped to (d, eta)
            # through logits = (d/2, -d/2, eta).
            p1, p2, p3 = p[..., 0], p[..., 1], p[..., 2]
            f11, f22, f33 = n * p1 * (1 - p1), n * p2 * (1 - p2), n * p3 * (1 - p3)
            f12, f13, f23 = -n * p1 * p2, -n * p1 * p3, -n * p2 * p3
            h_dd = 0.25 * (f11 - 2 * f12 + f22)
            h_de = 0.5 * (f13 - f23)
            grad[:, -1] = g_eta.sum(-1)
            hess[:, -1, -1] = f33.sum(-1)
            last = np.full((1, 1), dim - 1, dtype=np.intp)
            np.add.at(hess, (rows, i[None, :], last), h_de)
            np.add.at(hess, (rows, j[None, :], last), -h_de)
            hess[:, -1, :-1] = hess[:, :-1, -1]
        else:
            s = expit(d)
            n = counts.sum(-1)
            g_d = counts[..., 0] + counts[..., 2] / 2 - n * s
            h_dd = n * s * (1 - s)
        np.add.at(grad, (rows, i[None, :]), g_d)
        np.add.at(grad, (rows, j[None, :]), -g_d)
        np.add.at(hess, (rows, i[None, :], i[None, :]), h_dd)
        np.add.at(hess, (rows, j[None, :], j[None, :]), h_dd)
        np.add.at(hess, (rows, i[None, :], j[None, :]), -h_dd)
        np.add.at(hess, (rows, j[None, :], i[None, :]), -h_dd)
        grad -= penalty * beta
        hess += np.diag(penalty)
        step = np.linalg.solve(hess, grad[..., None])[..., 0]
        # Backtracking: halve the step for the rows where the objective did not improve.
        alpha = np.ones(batch)
        for _ in range(30):
            candidate = beta + alpha[:, None] * step
            value = objective(candidate)
            worse = value < current - 1e-12 * np.abs(current)
            if not worse.any():
                break
            alpha = np.where(worse, alpha / 2, alpha)
        beta, current = candidate, value
        if np.max(np.abs(alpha[:, None] * step)) < tol:
            break
    theta = beta[:, :n_models]
    return theta, (beta[:, -1] if davidson else None)


def _logsumexp(x: np.ndarray) -> np.ndarray:
    top = x.max(axis=-1, keepdims=True)
    out: np.ndarray = top + np.log(np.exp(x - top).sum(axis=-1, keepdims=True))
    return out
