"""The uncertainty of an estimate: the sandwich covariance, and what the regressor's noise does.

* :func:`sandwich`: the covariance ``A^+ S A^+`` of a least-squares estimate with the score's
  covariance ``S`` measured from the residuals (across channels, and their correlation in time:
  :func:`correlation_factors`), and a persistent residual's and a drift's share; the information
  ``A S^+ A`` beside it. :func:`channel_variances`: each channel's residual variance.
* Errors in variables: noise in the measured accelerations adds its own Gram to the data's;
  :func:`compensate_regressor_noise` removes it (bounded by :data:`EIV_FLOOR`), and
  :func:`noise_level_covariance` is the uncertainty the measured noise level adds.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from payload_estimator.core.estimators.linear_algebra import eigh, pinv_psd, positive_definite, scaled_eigh
from payload_estimator.core.estimators.rating import MIN_FIT_BLOCKS
from payload_estimator.core.regressor import N_PARAMS
from payload_estimator.core.statistics import RegressorStatistics

__all__ = [
    "drift_covariance",
    "EIV_FLOOR",
    "noise_level_covariance",
    "compensate_regressor_noise",
    "correlation_factors",
    "sandwich",
    "summed_sandwich",
    "summed_noise_level_covariance",
    "summed_sandwich_information",
    "channel_variances",
]

_VARIANCE_FLOOR = 1e-12
"""Least residual variance per channel (data that fit exactly give a large, finite information)."""

EIV_FLOOR = 0.1
"""Errors-in-variables compensation removes at most this share of the information in any direction
(:func:`compensate_regressor_noise`): an over-estimated noise level can then at most double an
estimate, never flip it."""


def noise_level_covariance(
    A: np.ndarray, x: np.ndarray, channel_weights: np.ndarray, terms: list[tuple[np.ndarray, float]]
) -> np.ndarray:
    """(p, p) covariance of the estimate due to the error of a measured noise level.

    Compensation subtracts ``G_i`` per signal; an error ``e`` in the relative variance
    moves the solution of ``(A - sum G) x = c`` by ``A^-1 (c . G_i) x e``.
    """
    return summed_noise_level_covariance(A, x, [(channel_weights, terms)])


def summed_noise_level_covariance(
    A: np.ndarray, x: np.ndarray, parts: Sequence[tuple[np.ndarray, list[tuple[np.ndarray, float]]]]
) -> np.ndarray:
    """:func:`noise_level_covariance` of an estimate solving several data terms at once.

    ``parts``: each term's channel weights and noise terms (one a signal, in the same order); a signal's
    level errs once, moving every term alike."""
    p = x.shape[0]
    steps: dict[int, np.ndarray] = {}
    levels: dict[int, float] = {}
    A_inv: np.ndarray | None = None
    for channel_weights, terms in parts:
        for signal, (G, rel_var) in enumerate(terms):
            if rel_var > 0.0:
                A_inv = pinv_psd(A) if A_inv is None else A_inv
                step = A_inv @ (np.tensordot(channel_weights, G, axes=1) @ x)
                steps[signal] = steps[signal] + step if signal in steps else step
                levels[signal] = rel_var
    cov = np.zeros((p, p))
    for signal, step in steps.items():
        cov += levels[signal] * np.outer(step, step)
    return cov


def compensate_regressor_noise(A: np.ndarray, noise: np.ndarray, floor: float = EIV_FLOOR) -> np.ndarray:
    """``A - noise``, the Gram of the noise-free regressor (bias-compensated least squares).

    Noise in the regressor adds its own Gram to the data's on average, which pulls least
    squares towards zero (attenuation); subtracting it removes that bias. Taken in the
    metric of ``A`` (the pencil ``(A - noise, A)``), the compensated matrix keeps at least
    ``floor`` of ``A`` in every direction, so a noise level read too high can never make it
    indefinite. Directions ``A`` does not see stay empty.
    """
    d, lam, V, keep = scaled_eigh(A)
    if not keep.any():
        return A
    W = V[:, keep] / np.sqrt(lam[keep])  # A^-1/2 on its range
    Ns = noise / np.outer(d, d)
    M = np.eye(int(keep.sum())) - W.T @ Ns @ W
    M = 0.5 * (M + M.T)
    if not _within(M, floor):
        mu, U = eigh(M)
        M = (U * np.clip(mu, floor, 1.0)) @ U.T
    R = V[:, keep] * np.sqrt(lam[keep])  # A^1/2 on its range
    out = R @ M @ R.T
    return 0.5 * (out + out.T) * np.outer(d, d)


def _within(M: np.ndarray, floor: float) -> bool:
    """Whether the symmetric ``M``'s eigenvalues all lie in ``[floor, 1]`` (what clipping would leave alone).

    ``M - floor I`` and ``(1 + 1e-12) I - M`` positive definite: two Cholesky factorisations, a
    fraction of an eigendecomposition (``M`` is ``I`` less a PSD noise term: its eigenvalues reach 1
    along what the noise does not touch, the offsets)."""
    eye = np.eye(M.shape[0])
    return positive_definite(M - floor * eye) and positive_definite((1.0 + 1e-12) * eye - M)


def correlation_factors(
    stats: RegressorStatistics, x: np.ndarray, with_bias: bool, channel_weights: np.ndarray | None = None
) -> np.ndarray:
    """(6,) how many samples count as one independent sample, per wrench channel (>= 1).

    Samples of filtered signals are not independent: the covariance of an estimate from
    ``N`` of them is that of ``N / tau`` independent ones, with ``tau`` the long-run variance
    ratio of the residuals over short blocks (:meth:`RegressorStatistics.correlation_analysis`),
    which hold the filters' memory. Each channel's own factor is noisy over few blocks, so
    it is pulled halfway (geometrically) towards the median of the six (the pipeline filters
    every signal alike); a channel with almost no noise, whose residual is smooth, cannot
    inflate the others. 1 until it can be measured.
    """
    return _factors(stats.correlation_analysis(x, with_bias, channel_weights).tau_short)


def _factors(tau: np.ndarray) -> np.ndarray:
    if not np.all(np.isfinite(tau)):
        return np.ones(6)
    tau = np.clip(tau, 1e-6, None)
    return np.maximum(np.sqrt(tau * float(np.median(tau))), 1.0)


def sandwich(
    stats: RegressorStatistics, x: np.ndarray, with_bias: bool, channel_weights: np.ndarray, A: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Covariance ``A^+ S A^+`` of the estimate ``x`` solving ``A x = c``, and its information ``A S^+ A``.

    ``S`` is the covariance of the score (:meth:`RegressorStatistics.score_covariance`: the
    residuals' covariance across channels, from the data, and their
    :func:`correlation_factors` in time), plus what a persistent residual (a drifting F/T
    offset) adds through the slowly varying regressor columns
    (:meth:`RegressorStatistics.correlation_analysis`); the covariance adds what a linear
    trend in the residuals shifts (:func:`drift_covariance`). Neither assumes the weights were the
    inverse noise variances, nor that the regressor was exact: the residuals carry the
    regressor's noise too.
    """
    _, _, S_inv = _score_covariance(stats, x, with_bias, channel_weights)
    return summed_sandwich([(stats, channel_weights)], x, with_bias, A), _information(A, S_inv)


def summed_sandwich_information(
    parts: Sequence[tuple[RegressorStatistics, np.ndarray]], x: np.ndarray, with_bias: bool, A: np.ndarray
) -> np.ndarray:
    """The information ``A (sum_m S_m)^+ A`` of :func:`summed_sandwich`, terms of the same samples counted once.

    What an estimator with a prior combines with it (PMD)."""
    S = sum((_score_covariance(stats, x, with_bias, cw)[0] for stats, cw in parts), np.zeros_like(A))
    return _information(A, pinv_psd(S))


def summed_sandwich(
    parts: Sequence[tuple[RegressorStatistics, np.ndarray]], x: np.ndarray, with_bias: bool, A: np.ndarray
) -> np.ndarray:
    """Covariance ``A^+ (sum_m S_m) A^+`` of the estimate ``x`` solving ``(sum_m A_m) x = sum_m c_m``.

    ``parts``: each data term's statistics and channel weights (``A``, the sum of their normal matrices,
    as solved); ``S_m`` each one's score covariance and drift term, as in :func:`sandwich`. Terms whose rows
    are the same samples (PMD's reduced and full models) are summed as the one estimate's score, never as
    independent informations: a term of little weight whose residuals are not measured as correlated (the
    gravity-only rows after a second of brisk motion) would otherwise claim the precision the data lack."""
    A_inv = pinv_psd(A)
    S = np.zeros_like(A)
    drift = np.zeros_like(A)
    for stats, channel_weights in parts:
        S_m, tau, _ = _score_covariance(stats, x, with_bias, channel_weights)
        S = S + S_m
        drift = drift + drift_covariance(stats, x, with_bias, channel_weights, A, tau)
    cov = A_inv @ S @ A_inv + drift
    return 0.5 * (cov + cov.T)


def _information(A: np.ndarray, S_inv: np.ndarray) -> np.ndarray:
    information = A @ S_inv @ A
    return 0.5 * (information + information.T)



def _score_covariance(
    stats: RegressorStatistics, x: np.ndarray, with_bias: bool, channel_weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(S, tau, S^+)``: the score's covariance of :func:`sandwich`, the correlation factors it holds, its inverse.

    Measured once per correlation analysis (kept while the samples grew little and the estimate
    moved little, :data:`~payload_estimator.core.statistics.KEPT_GROWTH`) and channel weights, then
    scaled to the samples held: the score's covariance grows with them as the data's information does."""
    analysis = stats.correlation_analysis(x, with_bias, channel_weights)
    tau = _factors(analysis.tau_short)
    weights = np.asarray(channel_weights, dtype=float)
    derived = stats.kept_derived()
    kept = None if derived is None else derived.get("score_covariance")
    if kept is not None and kept[0] > 0.0 and np.array_equal(kept[3], weights):
        grown = stats.weight_sum / kept[0]
        return kept[1] * grown, tau, kept[2] / grown
    S = stats.score_covariance(x, with_bias, channel_weights, tau)
    if stats.n_blocks(1) >= MIN_FIT_BLOCKS:
        S = S + analysis.slow_score
    # Residuals at the variance floor at least, channel by channel: data that fit exactly (a
    # frozen, repeated message) must give a large but finite information, not an overflow.
    S = S + _VARIANCE_FLOOR * np.tensordot(weights * weights, stats.channel_gram(with_bias), axes=1)
    batches = getattr(stats, "batch_score_covariance", None)
    S_batches = batches(x, with_bias, channel_weights) if batches is not None else None
    if S_batches is not None:
        S = _at_least(S, S_batches)
    S_inv = pinv_psd(S)
    if derived is not None:
        derived["score_covariance"] = (stats.weight_sum, S, S_inv, weights.copy())
    return S, tau, S_inv


def _at_least(S: np.ndarray, other: np.ndarray) -> np.ndarray:
    """Return the larger of two covariances, direction by direction.

    ``S`` raised to ``other`` in every direction where ``other`` exceeds it (their generalised
    eigenvalues clipped at 1 from below)."""
    d, lam, V, seen = scaled_eigh(S)
    if not np.all(seen):
        return S + other
    root = V * np.sqrt(lam)[None, :]  # S / (d d^T) = root root^T
    inv_root = V / np.sqrt(lam)[None, :]
    M = inv_root.T @ (other / np.outer(d, d)) @ inv_root
    mu, U = eigh(0.5 * (M + M.T))
    raised = root @ U @ np.diag(np.maximum(mu, 1.0)) @ U.T @ root.T
    return np.outer(d, d) * 0.5 * (raised + raised.T)


def channel_variances(
    stats: RegressorStatistics, x: np.ndarray, with_bias: bool
) -> np.ndarray:
    """(6,) residual variance of each wrench channel at the unknowns ``x``.

    Degrees of freedom: the (weighted) number of samples minus the unknowns
    shared out over the six channels.
    """
    rss = np.clip(stats.channel_residuals(x, with_bias), 0.0, None)
    dof = max(stats.weight_sum - x.shape[0] / 6.0, 1.0)
    return np.maximum(rss / dof, _VARIANCE_FLOOR)


def drift_covariance(
    stats: RegressorStatistics, x: np.ndarray, with_bias: bool, channel_weights: np.ndarray, A: np.ndarray,
    tau: np.ndarray,
) -> np.ndarray:
    """(p, p) ``d d^T``: what a linear trend in the residuals (a drifting F/T offset) does to ``x``.

    An offset that drifts by ``rho_k`` per second adds ``rho_k (t - t_mean)`` to channel ``k``;
    least squares with a constant offset absorbs part of it into the parameters whose
    regressor changes over the run (gravity: mass and COM), shifting them by
    ``d = A^-1 sum_k c_k rho_k sum_j (t_j - t_mean) D_jk``. ``rho_k`` is the residuals' trend
    at ``x`` (from time-weighted sums kept beside the Grams), counted only where it stands out
    from the noise (``|rho| > 3`` standard errors, the noise correlated by ``tau``) and then
    shrunk by its noise (``sqrt(z² - 1)`` standard errors). A drift no sample time tells is 0.
    """
    p = x.shape[0]
    n_w = stats.weight_sum
    if not stats.time_ok or stats.first_time is None or n_w <= p:
        return np.zeros((p, p))
    t_mean = stats.time_sum / n_w
    spread = stats.time_sq - stats.time_sum * t_mean
    if not spread > 0.0:
        return np.zeros((p, p))
    v = np.r_[-x[:N_PARAMS], 1.0]
    centred = stats.time_data - t_mean * stats.data_sum  # (6, 11): sum s (t - t_mean) [Y_k, w_k]
    rho = (centred @ v) / spread
    var = np.clip(stats.channel_residuals(x, with_bias), 0.0, None) / max(n_w - p / 6.0, 1.0)
    se = np.sqrt(var * np.maximum(tau, 1.0) / spread)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(se > 0.0, rho / se, 0.0)
    rho = np.where(np.abs(z) > 3.0, np.sign(z) * np.sqrt(np.clip(z * z - 1.0, 0.0, None)) * se, 0.0)
    if not np.any(rho):
        return np.zeros((p, p))
    g = np.zeros(p)
    g[:N_PARAMS] = np.einsum("k,kd->d", channel_weights * rho, centred[:, :N_PARAMS])
    d = np.linalg.pinv(A, hermitian=True) @ g
    return np.outer(d, d)
