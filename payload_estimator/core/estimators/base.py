"""What all estimators share: sample intake, and linear algebra on the statistics."""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from payload_estimator.core.inertia import InertialParameters
from payload_estimator.core.regressor import N_PARAMS, regressor_noise_gram
from payload_estimator.core.results import (
    FROM_PRIOR,
    IDENTIFIED,
    NOT_IDENTIFIED,
    Estimate,
    Identification,
    ModelFit,
)
from payload_estimator.core.samples import SensorSamples
from payload_estimator.core.shapes import SampledShape
from payload_estimator.core.signal_noise import SignalNoise
from payload_estimator.core.statistics import WRENCH_COLUMN, RegressorStatistics
from payload_estimator.errors import InsufficientData

__all__ = [
    "Estimator",
    "InsufficientData",
    "Solution",
    "ChannelWeighting",
    "AUTO",
    "solve_psd",
    "pinv_psd",
    "scaled_eigh",
    "scaled_condition_number",
    "channel_variances",
    "inertia_identifiable",
    "IDENTIFIABLE_REL_STD",
    "channel_weights_from_std",
    "check_forgetting",
    "KinematicNoise",
    "correlation_factors",
    "sandwich",
    "compensate_regressor_noise",
    "EIV_FLOOR",
    "noise_level_covariance",
    "identify",
    "model_fit",
    "IDENTIFIED_MASS_REL_STD",
    "IDENTIFIED_COM_STD",
    "PERSISTENCE_LIMIT",
    "RESIDUAL_SHARE_LIMIT",
    "EXCESS_LIMIT",
]

IDENTIFIABLE_REL_STD = 0.25
"""Inertia counts as identified when each principal-moment std is below this fraction."""
IDENTIFIED_MASS_REL_STD = 0.1
"""Mass counts as identified when its std (from the data alone) is below this fraction of it."""
IDENTIFIED_COM_STD = 0.01
"""A COM component counts as identified when its std (from the data alone) is below this, m."""
PERSISTENCE_LIMIT = 3.0
"""Model fit is poor when residuals stay correlated this many times longer than the noise does
(:class:`~payload_estimator.core.results.ModelFit`; chosen with ``benchmarks/model_fit.py``)..."""
RESIDUAL_SHARE_LIMIT = 0.05
"""...and the residual is at least this share of the measured force or torque (RMS): a persistent
residual smaller than that (the filters' last bit of lag; an F/T offset drifting by 1e-3 of the
payload's weight per second, the simulator's default, reaches 2-3 % in 20 s) is not a sign of a wrong
model."""
EXCESS_LIMIT = 6.0
"""Model fit is poor when a constrained estimate is this far (chi-square per unknown) from the
unconstrained fit (chosen with ``benchmarks/model_fit.py``)."""
_MIN_FIT_BLOCKS = 8
"""Long blocks needed before the model fit is judged (4 s of data)."""
_INERTIA_SCALE_FLOOR_M = 0.02
"""Radius (m) of gyration below which inertia uncertainty is judged against ``m r²``."""
_VARIANCE_FLOOR = 1e-12
_CHUNK = 256


AUTO = "auto"
"""``channel_std=AUTO``: estimate each channel's noise from the residuals (WLS, PMD)."""


def channel_weights_from_std(channel_std: np.ndarray | None) -> np.ndarray | None:
    """(6,) inverse variances from the noise std of ``[fx, fy, fz, tx, ty, tz]`` (N, N·m), or None."""
    if channel_std is None:
        return None
    std = np.asarray(channel_std, dtype=float)
    if std.shape != (6,) or np.any(std <= 0) or not np.all(np.isfinite(std)):
        raise ValueError("channel_std must be 6 positive numbers (N, N, N, N·m, N·m, N·m)")
    return 1.0 / std**2


@dataclass(frozen=True)
class ChannelWeighting:
    """How the six wrench channels are weighted; the one meaning of ``channel_std`` for every estimator.

    * ``None``: uniform weights (every channel 1; forces in N and torques in N·m
      count alike, as in the papers).
    * ``"auto"``: each channel by the inverse of its residual variance, estimated
      from the data (estimators whose ``supports_auto_weights`` is true).
    * six numbers: the known noise std of ``[fx, fy, fz, tx, ty, tz]`` (N, N·m);
      each channel by its inverse variance, and the covariance is then the
      inverse information.
    """

    known: np.ndarray | None = None
    auto: bool = False

    @classmethod
    def parse(cls, channel_std: Any, allow_auto: bool, who: str) -> ChannelWeighting:
        if isinstance(channel_std, str):
            if channel_std != AUTO:
                raise ValueError(f"{who}: channel_std must be None, 'auto' or 6 stds, got {channel_std!r}")
            if not allow_auto:
                raise ValueError(f"{who}: channel_std='auto' is not supported; give None or 6 stds")
            return cls(None, True)
        return cls(channel_weights_from_std(channel_std), False)


@dataclass(frozen=True)
class Solution:
    """What an estimator's solve hands to :meth:`Estimator.estimate`, which rates it.

    Attributes:
        theta: the unknowns ``[phi; beta]`` (10, or 16 with the F/T offsets).
        information: (p, p) whitened Fisher information of ``theta``.
        covariance: covariance of ``phi`` (its leading 10 x 10 block is used), or None.
        residual_ss: (6,) residual sum of squares per wrench channel.
        weight_sum: the (weighted) number of samples behind ``residual_ss``.
        normal_matrix: (p, p) Gram of the regressor, for the scaled condition number.
        extras: estimator-specific arrays that travel in the estimate (e.g. PMD's
            ``points_in_sensor`` and ``point_masses``).
    """

    theta: np.ndarray
    information: np.ndarray
    covariance: np.ndarray | None
    residual_ss: np.ndarray
    weight_sum: float
    normal_matrix: np.ndarray
    extras: Mapping[str, np.ndarray] = field(default_factory=dict)


EIV_FLOOR = 0.1
"""Errors-in-variables compensation removes at most this share of the information in any direction
(:func:`compensate_regressor_noise`): an over-estimated noise level can then at most double an
estimate, never flip it."""


class KinematicNoise:
    """The noise std of the measured accelerations that build the regressor (errors in variables).

    ``spec``: None (taken as exact: no compensation), ``"auto"`` (measured from the samples'
    own linear and angular accelerations, :class:`~payload_estimator.core.signal_noise.SignalNoise`),
    or ``(lin_acc_std, ang_acc_std)`` in m/s² and rad/s² per axis (a data sheet's figures).
    """

    def __init__(self, spec: Any) -> None:
        self.auto = isinstance(spec, str)
        if self.auto and spec != AUTO:
            raise ValueError(f"kinematic_noise must be None, 'auto' or (lin_acc_std, ang_acc_std), got {spec!r}")
        self.known: tuple[float, float] | None = None
        if spec is not None and not self.auto:
            values = np.asarray(spec, dtype=float)
            if values.shape != (2,) or np.any(values < 0) or not np.all(np.isfinite(values)):
                raise ValueError("kinematic_noise must be two non-negative numbers (m/s², rad/s²)")
            self.known = (float(values[0]), float(values[1]))
        self._lin_acc = SignalNoise()
        self._ang_acc = SignalNoise()
        self._supplied: tuple[float, float, float] | None = None
        self._whitened = False
        """Samples with their own wrench information arrived (joint torques): their rows are mixed per sample,
        and the expected noise Gram of the plain regressor rows is not theirs; nothing is compensated."""

    def supply(self, lin_acc_std: float, ang_acc_std: float, relative_variance: float) -> None:
        """Noise levels that whoever made the samples knows better than the samples show (``"auto"``
        only). Accelerations differentiated from filtered encoder positions carry low-passed noise,
        which the samples' high differences barely see; the robot pipeline knows the filter and the
        encoders' noise, and supplies what it implies (:meth:`EstimationStream.process`)."""
        if self.auto and np.isfinite(lin_acc_std) and np.isfinite(ang_acc_std):
            self._supplied = (float(lin_acc_std), float(ang_acc_std), float(relative_variance))

    def update(self, samples: SensorSamples) -> None:
        if samples.wrench_information_sqrt is not None:
            self._whitened = True
        if self.auto and self._supplied is None:
            self._lin_acc.update(samples.lin_acc_in_sensor)
            self._ang_acc.update(samples.ang_acc_in_sensor)

    def reset(self) -> None:
        self._lin_acc.reset()
        self._ang_acc.reset()
        self._supplied = None
        self._whitened = False

    def std(self) -> tuple[float, float] | None:
        """``(lin_acc_std, ang_acc_std)``, or None when there is nothing to compensate."""
        if self._whitened:
            return None
        if self.known is not None:
            return self.known
        if not self.auto:
            return None
        if self._supplied is not None:
            return self._supplied[0], self._supplied[1]
        lin, ang = self._lin_acc.std(), self._ang_acc.std()
        if not (np.isfinite(lin) and np.isfinite(ang)):
            return None
        return lin, ang

    def terms(
        self, stats: RegressorStatistics, with_bias: bool, reduced: bool = False
    ) -> list[tuple[np.ndarray, float]]:
        """The expected noise part of ``stats``' per-channel Grams of the unknowns, one term per
        noisy signal (linear, angular acceleration): ``(G_i (6, p, p), v_i)`` with ``v_i`` the
        relative variance of that signal's estimated noise variance (0 when given)."""
        std = self.std()
        if std is None:
            return []
        p = N_PARAMS + (6 if with_bias else 0)
        out = []
        for signal, (lin, ang) in enumerate(((std[0], 0.0), (0.0, std[1]))):
            if lin == 0.0 and ang == 0.0:
                continue
            D = np.zeros((6, p, p))
            D[:, :N_PARAMS, :N_PARAMS] = stats.weight_sum * regressor_noise_gram(lin, ang, reduced=reduced)
            monitor = self._lin_acc if signal == 0 else self._ang_acc
            if not self.auto:
                rel_var = 0.0
            elif self._supplied is not None:
                rel_var = self._supplied[2]
            else:
                rel_var = monitor.relative_variance()
            out.append((D, rel_var))
        return out

    def gram(self, stats: RegressorStatistics, with_bias: bool, reduced: bool = False) -> np.ndarray | None:
        """(6, p, p) expected noise part of ``stats``' per-channel Grams of the unknowns, or None."""
        terms = self.terms(stats, with_bias, reduced)
        return sum((D for D, _ in terms), np.zeros_like(terms[0][0])) if terms else None


def noise_level_covariance(
    A: np.ndarray, x: np.ndarray, channel_weights: np.ndarray, terms: list[tuple[np.ndarray, float]]
) -> np.ndarray:
    """(p, p) covariance of the estimate due to the error of a measured noise level.

    Compensation subtracts ``G_i`` per signal; an error ``e`` in the relative variance
    moves the solution of ``(A - sum G) x = c`` by ``A^-1 (c . G_i) x e``.
    """
    p = x.shape[0]
    cov = np.zeros((p, p))
    if not terms:
        return cov
    A_inv = pinv_psd(A)
    for G, rel_var in terms:
        if rel_var > 0.0:
            j = A_inv @ (np.tensordot(channel_weights, G, axes=1) @ x)
            cov += rel_var * np.outer(j, j)
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
    mu, U = np.linalg.eigh(0.5 * (M + M.T))
    M = (U * np.clip(mu, floor, 1.0)) @ U.T
    R = V[:, keep] * np.sqrt(lam[keep])  # A^1/2 on its range
    out = R @ M @ R.T
    return 0.5 * (out + out.T) * np.outer(d, d)


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
    trend in the residuals shifts (:meth:`RegressorStatistics.drift_covariance`). Neither assumes the weights were the
    inverse noise variances, nor that the regressor was exact: the residuals carry the
    regressor's noise too.
    """
    analysis = stats.correlation_analysis(x, with_bias, channel_weights)
    tau = _factors(analysis.tau_short)
    S = stats.score_covariance(x, with_bias, channel_weights, tau)
    if stats.n_blocks(1) >= _MIN_FIT_BLOCKS:
        S = S + analysis.slow_score
    # Residuals at the variance floor at least, channel by channel: data that fit exactly (a
    # frozen, repeated message) must give a large but finite information, not an overflow.
    w = np.asarray(channel_weights, dtype=float)
    S = S + _VARIANCE_FLOOR * np.tensordot(w * w, stats.channel_gram(with_bias), axes=1)
    A_inv = pinv_psd(A)
    cov = A_inv @ S @ A_inv + stats.drift_covariance(x, with_bias, channel_weights, A, tau)
    information = A @ pinv_psd(S) @ A
    return 0.5 * (cov + cov.T), 0.5 * (information + information.T)


def check_forgetting(forgetting: float) -> float:
    """A per-sample forgetting factor, validated to lie in (0, 1]."""
    if not 0.0 < forgetting <= 1.0:
        raise ValueError("forgetting must be in (0, 1]")
    return float(forgetting)


def scaled_eigh(A: np.ndarray, rcond: float = 1e-10) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Eigendecomposition of a symmetric PSD ``A`` after Jacobi scaling: ``(d, lam, V, seen)``.

    ``A = D (V diag(lam) V^T) D`` with ``D = diag(d)`` (``d`` the square roots of the diagonal,
    1 where it is 0), eigenvalues ascending; ``seen`` marks those above ``rcond`` times the
    largest (none when that is not positive): equilibrated first, so that ``rcond`` is relative
    to a well-scaled matrix.
    """
    d = np.sqrt(np.clip(np.diag(A), 0.0, None))
    d[d == 0.0] = 1.0
    As = A / np.outer(d, d)
    lam, V = np.linalg.eigh(0.5 * (As + As.T))
    seen = lam > rcond * max(lam[-1], 0.0) if lam[-1] > 0 else np.zeros_like(lam, bool)
    return d, lam, V, seen


def solve_psd(A: np.ndarray, c: np.ndarray, rcond: float = 1e-10) -> tuple[np.ndarray, int]:
    """Minimum-norm solution of ``A x = c`` for a symmetric PSD ``A``, with its rank (:func:`scaled_eigh`)."""
    d, lam, V, keep = scaled_eigh(A, rcond)
    xs = V[:, keep] @ ((V[:, keep].T @ (c / d)) / lam[keep])
    return xs / d, int(keep.sum())


def pinv_psd(A: np.ndarray, rcond: float = 1e-10) -> np.ndarray:
    """Pseudo-inverse of a symmetric PSD matrix (Jacobi-scaled, eigenvalue cutoff ``rcond``)."""
    d, lam, V, keep = scaled_eigh(A, rcond)
    inv = (V[:, keep] / lam[keep]) @ V[:, keep].T
    return inv / np.outer(d, d)


def scaled_condition_number(A: np.ndarray) -> float:
    """Condition number of the column-scaled regressor, from its Gram ``A = Y^T Y``.

    Columns scaled to unit norm (Gautier & Khalil 1992); ``cond(Y D) = sqrt(cond(D A D))``.
    Returns ``inf`` when a column is empty or the matrix is singular.
    """
    d = np.sqrt(np.clip(np.diag(A), 0.0, None))
    if np.any(d == 0.0):
        return float("inf")
    lam = np.linalg.eigvalsh(A / np.outer(d, d))
    if lam[0] <= lam[-1] * 1e-15:
        return float("inf")
    return float(np.sqrt(lam[-1] / lam[0]))


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


def _data_covariance(information: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Marginal data-only covariance of phi from the information of ``[phi; beta]``:
    ``(cov (10, 10), null (10, k) basis of what the data do not see, d (10,) scaling)``."""
    H = information
    if H.shape[0] > N_PARAMS:
        Hpp, Hpb, Hbb = H[:N_PARAMS, :N_PARAMS], H[:N_PARAMS, N_PARAMS:], H[N_PARAMS:, N_PARAMS:]
        H = Hpp - Hpb @ pinv_psd(Hbb) @ Hpb.T
    d, lam, V, seen = scaled_eigh(H)
    cov = (V[:, seen] / lam[seen]) @ V[:, seen].T / np.outer(d, d)
    return cov, V[:, ~seen], d


DataCovariance = tuple[np.ndarray, np.ndarray, np.ndarray]
"""What :func:`_data_covariance` returns; an estimate computes it once for :func:`identify` and
:func:`model_fit`."""


def identify(
    information: np.ndarray, params: InertialParameters, has_prior: bool, data: DataCovariance | None = None
) -> Identification:
    """Which quantities the data determine (:class:`~payload_estimator.core.results.Identification`).

    From the data's information alone (never the prior's): a quantity ``q(phi)`` is
    identified when its gradient has no component the data do not see and its standard
    deviation ``sqrt(grad^T C grad)`` is within bounds: the mass within
    :data:`IDENTIFIED_MASS_REL_STD` of itself, each COM axis within :data:`IDENTIFIED_COM_STD`,
    the inertia as :func:`inertia_identifiable`. A payload held still shows ``m g`` and
    ``m c x g``: the COM along gravity and the inertia are not seen. What is not identified
    comes from the prior when the estimator has one (``has_prior``), else from nothing.
    """
    otherwise = FROM_PRIOR if has_prior else NOT_IDENTIFIED
    if not np.all(np.isfinite(information)) or not np.isfinite(params.mass) or params.mass <= 0.0:
        return Identification(otherwise, (otherwise, otherwise, otherwise), otherwise)
    cov, null, d = _data_covariance(information) if data is None else data

    def std(grad: np.ndarray) -> float:
        scaled = grad / d  # the gradient in the Jacobi-scaled coordinates of the eigenvectors
        if null.shape[1] and np.linalg.norm(null.T @ scaled) > 1e-6 * np.linalg.norm(scaled):
            return float("inf")
        return float(np.sqrt(max(grad @ cov @ grad, 0.0)))

    m, c = params.mass, params.com
    grad_m = np.zeros(N_PARAMS)
    grad_m[0] = 1.0
    mass = IDENTIFIED if std(grad_m) < IDENTIFIED_MASS_REL_STD * m else otherwise
    com = []
    for i in range(3):
        g = np.zeros(N_PARAMS)
        g[0], g[1 + i] = -c[i] / m, 1.0 / m
        com.append(IDENTIFIED if std(g) < IDENTIFIED_COM_STD else otherwise)
    inertia = IDENTIFIED if inertia_identifiable(information, params) else otherwise
    return Identification(mass, (com[0], com[1], com[2]), inertia)


def model_fit(
    stats: RegressorStatistics | None,
    theta: np.ndarray,
    with_bias: bool,
    channel_weights: np.ndarray | None,
    information: np.ndarray,
    unconstrained: np.ndarray | None = None,
    data: DataCovariance | None = None,
) -> ModelFit:
    """Test whether the model explains the data (:class:`~payload_estimator.core.results.ModelFit`).

    * Persistence (every estimator): residuals of a right model are the sensors' noise,
      correlated over the filters' memory only; a wrong one leaves a residual that follows
      the motion. The ratio of the residuals' correlation factors over long and short blocks
      (:meth:`RegressorStatistics.correlation_factors`), median over the channels, is about
      1 for noise and grows with the block length for model error; poor above
      :data:`PERSISTENCE_LIMIT`.
    * Excess (``unconstrained``, the least-squares fit ``x_ls`` of the same data term, given:
      estimators whose constraints or prior can keep them from it, PMD):
      ``(theta - x_ls)^T I (theta - x_ls)`` per unknown the
      data see, with ``I`` the data's information; about 1 when the constraints hold the
      truth (a shape that contains the payload), poor above :data:`EXCESS_LIMIT`.

    Judged only after :data:`_MIN_FIT_BLOCKS` long blocks (4 s of data).
    """
    if stats is None or not np.all(np.isfinite(theta)):
        return ModelFit()
    tau_short, tau_slow = stats.correlation_factors(theta, with_bias, channel_weights)
    n_slow = stats.n_blocks(1)
    if n_slow < _MIN_FIT_BLOCKS or not (np.all(np.isfinite(tau_short)) and np.all(np.isfinite(tau_slow))):
        return ModelFit()
    persistence = float(np.median(tau_slow / np.maximum(tau_short, 1.0)))
    rss = np.clip(stats.channel_residuals(theta, with_bias), 0.0, None)
    signal = stats.gram[:, WRENCH_COLUMN, WRENCH_COLUMN]  # (6,) sum of squared measurements
    share = max(float(np.sqrt(rss[:3].sum() / max(signal[:3].sum(), 1e-300))),
                float(np.sqrt(rss[3:].sum() / max(signal[3:].sum(), 1e-300))))
    excess = float("nan")
    if unconstrained is not None:
        x_ls = unconstrained
        # mass and first moment: what every sufficiently varied motion determines well, and
        # where a misplaced shape shows first (all ten would dilute it with poorly seen inertia)
        cov, _, _ = _data_covariance(information) if data is None else data
        block = cov[:4, :4]
        diff = (theta - x_ls)[:4]
        excess = float(diff @ pinv_psd(block) @ diff) / 4.0
    causes = []
    if persistence > PERSISTENCE_LIMIT and share > RESIDUAL_SHARE_LIMIT:
        causes.append(
            f"the residuals ({100 * share:.0f} % of the wrench) follow the motion ({persistence:.1f}x longer "
            "than noise): the payload may be "
            "touching something or loose, the sensor frame, the wrench sign or the gravity direction may be "
            "wrong, or the F/T offset drifts fast (re-zero the sensor and reset)"
        )
    if np.isfinite(excess) and excess > EXCESS_LIMIT:
        causes.append(
            f"the shape cannot hold the payload the data show (excess {excess:.1f}): it is too small, misplaced "
            "or turned; check --shape and its pose in the sensor frame, or estimate without a shape (wls)"
        )
    return ModelFit(True, not causes, persistence, excess, "; ".join(causes))


def inertia_identifiable(
    information: np.ndarray, params: InertialParameters, rel_std: float = IDENTIFIABLE_REL_STD
) -> bool:
    """Whether the data determine the inertia tensor.

    ``information`` is the (whitened) Fisher information of the unknowns
    (phi first). The marginal covariance of the six inertia entries is the
    inverse of the Schur complement of the other unknowns; the inertia counts
    as identified when the standard deviation of each diagonal entry is below
    ``rel_std`` times the mean principal moment about the COM (floored at
    ``m (2 cm)²`` so that point-like payloads, and estimates whose inertia is
    not positive definite, are not judged against their own scale).
    """
    if not np.all(np.isfinite(information)) or params.mass <= 0.0:
        return False
    # The marginal covariance of the inertia entries is their block of the inverse
    # information (= the inverse of the Schur complement of the other unknowns).
    d = np.sqrt(np.clip(np.diag(information), 0.0, None))
    if np.any(d[4:N_PARAMS] == 0.0):
        return False
    d[d == 0.0] = 1.0
    lam, V = np.linalg.eigh(information / np.outer(d, d))
    if lam[0] <= max(lam[-1], 0.0) * 1e-12:
        return False
    cov = (V / lam) @ V.T / np.outer(d, d)
    std_diag = np.sqrt(np.clip(np.diag(cov)[[4, 7, 9]], 0.0, None))  # Jxx, Jyy, Jzz
    moments = params.principal_moments()
    own = float(np.mean(moments)) if moments[0] > 0.0 else 0.0  # a non-physical tensor sets no scale
    scale = max(own, params.mass * _INERTIA_SCALE_FLOOR_M**2)
    return bool(np.all(std_diag < rel_std * scale))


class Estimator(abc.ABC):
    """An online estimator of the ten inertial parameters.

    Feed it batches of :class:`SensorSamples` with :meth:`update`; ask for an
    :class:`Estimate` whenever you like with :meth:`estimate`. Samples with a
    non-finite value, or one beyond :data:`~payload_estimator.core.samples.MAX_ABS_VALUE`,
    are dropped and counted in :attr:`rejected_samples`; values below
    :data:`~payload_estimator.core.samples.MIN_ABS_VALUE` count as 0.

    A subclass implements ``_accumulate`` (samples into its statistics),
    ``_reset`` and ``_solve`` (a :class:`Solution`); this class turns the
    solution into the :class:`Estimate` (uncertainty, residuals, condition
    number, identifiability), the same way for every estimator. Its options
    are keyword-only constructor arguments; :attr:`settings_options` says
    which settings fields feed them, and :attr:`needs_points` whether it
    takes point-mass positions. Registered by name in
    :data:`payload_estimator.core.estimators.ESTIMATORS`.
    """

    name: ClassVar[str] = "estimator"
    summary: ClassVar[str] = ""
    """One line for help texts."""
    needs_points: ClassVar[bool] = False
    """True when the constructor's first argument is ``points_in_sensor`` (n, 3)."""
    settings_options: ClassVar[Mapping[str, str]] = {}
    """Constructor option -> ``Settings`` field it is read from."""
    has_prior: ClassVar[bool] = False
    """True when a prior fills in what the data do not determine (PMD: the shape)."""

    @classmethod
    def options_from(cls, values: Mapping[str, Any]) -> dict[str, Any]:
        """The constructor options this estimator reads from a settings mapping."""
        return {option: values[name] for option, name in cls.settings_options.items()}

    @classmethod
    def create(
        cls, points_in_sensor: np.ndarray | SampledShape | None = None, *, bias: bool = False, **options: Any
    ) -> Estimator:
        """An instance with ``options``; ``points_in_sensor`` (n, 3), or a shape's
        :class:`~payload_estimator.core.shapes.SampledShape` (whose parts become density groups),
        is required by (and only passed to) estimators with :attr:`needs_points`."""
        make: Any = cls  # subclasses add the points argument and their own options
        if not cls.needs_points:
            return make(bias=bias, **options)
        if points_in_sensor is None:
            raise ValueError(f"{cls.name} needs point-mass positions (a shape or a points file)")
        if isinstance(points_in_sensor, SampledShape):
            options = {"part_labels": points_in_sensor.part, "point_volumes": points_in_sensor.volume,
                       "own_inertia": points_in_sensor.own_inertia, **options}
            points_in_sensor = points_in_sensor.points_in_sensor
        return make(points_in_sensor, bias=bias, **options)

    def __init__(self, *, bias: bool = False, kinematic_noise: Any = None) -> None:
        self.with_bias = bool(bias)
        self.kinematic_noise = KinematicNoise(kinematic_noise)
        self.rejected_samples = 0
        self._dynamism_sum = 0.0
        self._n_seen = 0

    @property
    def samples_used(self) -> int:
        return self._n_seen

    @property
    def mean_dynamism(self) -> float:
        return self._dynamism_sum / self._n_seen if self._n_seen else 0.0

    def update(self, samples: SensorSamples) -> None:
        """Take in a batch of samples (vectorised; any size, including one)."""
        ok = samples.usable_mask()
        if not ok.all():
            self.rejected_samples += int((~ok).sum())
            samples = samples.select(ok)
        if len(samples) == 0:
            return
        samples = samples.with_tiny_values_zeroed()
        self.kinematic_noise.update(samples)
        self._dynamism_sum += float(samples.dynamism().sum())
        self._n_seen += len(samples)
        if len(samples) <= _CHUNK:
            self._accumulate(samples)
            return
        # Chunks small enough to stay in cache are several times faster than one big product.
        for start in range(0, len(samples), _CHUNK):
            self._accumulate(samples.select(slice(start, start + _CHUNK)))

    def reset(self) -> None:
        """Forget all data."""
        self.rejected_samples = 0
        self._dynamism_sum = 0.0
        self._n_seen = 0
        self.kinematic_noise.reset()
        self._reset()

    def estimate(self) -> Estimate:
        """The current estimate; raises :class:`InsufficientData` before any sample."""
        if self._n_seen == 0:
            raise InsufficientData(f"{self.name}: no samples yet")
        p = N_PARAMS + (6 if self.with_bias else 0)
        if 6 * self._n_seen < p:
            raise InsufficientData(
                f"{self.name}: {self._n_seen} sample(s) give {6 * self._n_seen} equations for {p} unknowns"
            )
        sol = self._solve()
        params = InertialParameters(sol.theta[:N_PARAMS])
        stats, weights, unconstrained = self._fit_inputs()
        data = _data_covariance(sol.information) if np.all(np.isfinite(sol.information)) else None
        return Estimate(
            method=self.name,
            params=params,
            covariance=None if sol.covariance is None else sol.covariance[:N_PARAMS, :N_PARAMS],
            bias=sol.theta[N_PARAMS:].copy() if self.with_bias else None,
            residual_rms=np.sqrt(np.clip(sol.residual_ss, 0.0, None) / max(sol.weight_sum, 1e-300)),
            condition_number=scaled_condition_number(sol.normal_matrix),
            samples_used=self.samples_used,
            inertia_identifiable=inertia_identifiable(sol.information, params),
            dynamism=self.mean_dynamism,
            extras=dict(sol.extras),
            identification=identify(sol.information, params, self.has_prior, data),
            model_fit=model_fit(stats, sol.theta, self.with_bias, weights, sol.information, unconstrained, data),
        )

    def _fit_inputs(
        self,
    ) -> tuple[RegressorStatistics | None, np.ndarray | None, np.ndarray | None]:
        """What :func:`model_fit` needs: the statistics, their channel weights, and the
        unconstrained least-squares fit of the same data term when the estimator has a prior
        or constraints (else None). Default: no test."""
        return None, None, None

    @abc.abstractmethod
    def _accumulate(self, samples: SensorSamples) -> None: ...

    @abc.abstractmethod
    def _reset(self) -> None: ...

    @abc.abstractmethod
    def _solve(self) -> Solution: ...

