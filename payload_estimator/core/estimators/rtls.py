"""Recursive total least squares (Kubus, Kröger, Wahl, IROS 2008), over sufficient statistics.

Total least squares admits noise in the regressor (accelerations, angular
rates) as well as in the measured wrench: it finds the smallest perturbation
of ``[Y w]`` that makes the system consistent. The solution is the right
singular vector of the smallest singular value of ``[Y w]`` in the metric of
the noise, i.e. the generalised eigenvector of the smallest eigenvalue of the
pencil ``(M, C)`` of its Gram ``M`` and the noise covariance ``C`` of its
columns (generalised TLS, Van Huffel & Vandewalle 1991 §3.3), which the
sufficient statistics hold exactly. Kubus et al. update an SVD sample by
sample; updating the Gram and solving an 11x11 pencil on demand gives the same
estimate, with exponential forgetting as an option.

The noise covariance is what makes TLS an errors-in-variables estimator rather
than a rescaled least squares. By default it is built from the signals:
measured linear and angular accelerations enter the regressor linearly, so
their white noise (std measured from the signals themselves,
:class:`~payload_estimator.core.estimators.base.KinematicNoise`, or given)
gives each channel's expected regressor noise Gram
(:func:`~payload_estimator.core.regressor.regressor_noise_gram`), and the
wrench noise (measured the same way from the wrench, or given) the
measurement column's. Gravity (from the orientation) and the F/T offsets are
exact columns: the offsets are eliminated first (mixed LS-TLS, Van Huffel &
Vandewalle 1991) through a Schur complement, then recovered by least squares.
``column_std="rms"`` is Kubus et al.'s column scaling to unit RMS instead
(what this estimator did before: not a noise model, and biased on slow motion).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from payload_estimator.core.estimators.base import (
    AUTO,
    ChannelWeighting,
    Estimator,
    Solution,
    check_forgetting,
    compensate_regressor_noise,
    pinv_psd,
    sandwich,
    scaled_eigh,
)
from payload_estimator.core.regressor import N_BIAS, N_PARAMS, features_regressor, samples_features
from payload_estimator.core.samples import SensorSamples
from payload_estimator.core.signal_noise import SignalNoise
from payload_estimator.core.statistics import WRENCH_COLUMN, RegressorStatistics

__all__ = ["RecursiveTotalLeastSquares"]

_NOISY = np.r_[np.arange(N_PARAMS), WRENCH_COLUMN]
_EXACT = np.arange(N_PARAMS, N_PARAMS + N_BIAS)


class RecursiveTotalLeastSquares(Estimator):
    """RTLS estimator (generalised TLS with the signals' noise model).

    Args:
        forgetting: per-sample forgetting factor in (0, 1] (1: none).
        column_std: None (default: the noise model from ``kinematic_noise`` and
            ``wrench_noise``), ``"rms"`` (Kubus et al.'s scaling of each column to unit
            RMS), or (11,) known noise std of the ten regressor columns and the wrench.
        channel_std: (6,) noise std of each wrench channel to weight rows by, or None
            (uniform weights).
        kinematic_noise: noise of the measured accelerations (``"auto"``: measured from
            the samples; None: exact; or ``(lin_acc_std, ang_acc_std)``).
        wrench_noise: ``"auto"`` (measured from the wrench samples, forces and torques
            apart) or ``(force_std, torque_std)`` (N, N·m, the sensor's data sheet).
        bias: also estimate the six F/T offsets (as exact columns).
    """

    name = "rtls"
    summary = "recursive total least squares (Kubus et al. 2008), generalised by the signals' noise"
    settings_options = {"forgetting": "forgetting"}

    def __init__(
        self,
        *,
        forgetting: float = 1.0,
        column_std: np.ndarray | str | None = None,
        channel_std: np.ndarray | None = None,
        kinematic_noise: Any = AUTO,
        wrench_noise: Any = AUTO,
        bias: bool = False,
    ) -> None:
        super().__init__(bias=bias, kinematic_noise=kinematic_noise)
        self.forgetting = check_forgetting(forgetting)
        self.rms_scaling = isinstance(column_std, str)
        if self.rms_scaling and column_std != "rms":
            raise ValueError(f"column_std must be None, 'rms' or 11 stds, got {column_std!r}")
        self.column_std = None if column_std is None or self.rms_scaling else np.asarray(column_std, dtype=float)
        if self.column_std is not None and (
            self.column_std.shape != (11,) or np.any(self.column_std <= 0)
        ):
            raise ValueError("column_std must be 11 positive numbers")
        self.wrench_auto = isinstance(wrench_noise, str)
        if self.wrench_auto and wrench_noise != AUTO:
            raise ValueError(f"wrench_noise must be 'auto' or (force_std, torque_std), got {wrench_noise!r}")
        self.wrench_std = None if self.wrench_auto else np.asarray(wrench_noise, dtype=float)
        if self.wrench_std is not None and (self.wrench_std.shape != (2,) or np.any(self.wrench_std <= 0)):
            raise ValueError("wrench_noise must be two positive numbers (N, N·m)")
        self.channel_weights = ChannelWeighting.parse(channel_std, allow_auto=False, who=self.name).known
        self.stats = RegressorStatistics()
        self._force_noise = SignalNoise()
        self._torque_noise = SignalNoise()

    def _accumulate(self, samples: SensorSamples) -> None:
        features = samples_features(samples)
        Y = features_regressor(features)
        self.stats.add_with_forgetting(Y, samples.wrench_in_sensor, self.forgetting, t=samples.t, features=features)
        self._force_noise.update(samples.wrench_in_sensor[:, :3])
        self._torque_noise.update(samples.wrench_in_sensor[:, 3:])

    def _reset(self) -> None:
        self.stats.reset()
        self._force_noise.reset()
        self._torque_noise.reset()

    def _fit_inputs(self) -> tuple[RegressorStatistics, np.ndarray | None, None]:
        return self.stats, self.channel_weights, None

    def _noise_covariance(self) -> np.ndarray | None:
        """(11, 11) noise covariance of the columns ``[Y, w]`` summed over the samples (channel-weighted),
        or None when the noise model says nothing is noisy."""
        c = np.ones(6) if self.channel_weights is None else self.channel_weights
        n = self.stats.weight_sum
        if self.column_std is not None:
            return np.diag(n * self.column_std**2) * float(np.sum(c))
        if self.wrench_std is not None:
            force, torque = float(self.wrench_std[0]), float(self.wrench_std[1])
        else:
            force, torque = self._force_noise.std(), self._torque_noise.std()
        if not (np.isfinite(force) and np.isfinite(torque)):
            return None
        C = np.zeros((11, 11))
        noise = self.kinematic_noise.gram(self.stats, False)
        if noise is not None:
            C[:N_PARAMS, :N_PARAMS] = np.tensordot(c, noise, axes=1)
        C[N_PARAMS, N_PARAMS] = n * float(c[:3].sum() * force**2 + c[3:].sum() * torque**2)
        return C if C[N_PARAMS, N_PARAMS] > 0.0 or np.any(C) else None

    def solve(self) -> tuple[np.ndarray, np.ndarray | None]:
        """The TLS solution: (phi (10,), offsets (6,) or None)."""
        phi, bias, _ = self._solve_tls()
        return phi, bias

    def _solve_tls(self) -> tuple[np.ndarray, np.ndarray | None, float]:
        """(phi, offsets or None, lambda): lambda is the pencil's smallest eigenvalue, the
        share of the noise Gram the data hold beyond the model (0 for LS)."""
        M = self.stats.combined(self.channel_weights)
        Mnn = M[np.ix_(_NOISY, _NOISY)]
        if self.with_bias:
            Mee = M[np.ix_(_EXACT, _EXACT)]
            Men = M[np.ix_(_EXACT, _NOISY)]
            Mnn = Mnn - Men.T @ pinv_psd(Mee) @ Men
        lam = 0.0
        C = None if self.rms_scaling else self._noise_covariance()
        if self.rms_scaling or C is None:
            rms = np.sqrt(np.clip(np.diag(Mnn), 0.0, None))
            d = np.where(rms > 0.0, 1.0 / np.where(rms > 0.0, rms, 1.0), 1.0)
            if C is None and not self.rms_scaling:  # nothing is noisy: least squares
                x = pinv_psd(Mnn[:-1, :-1]) @ Mnn[:-1, -1]
                return x, self._offsets(M, x), 0.0
            S = Mnn * np.outer(d, d)
            _, V = np.linalg.eigh(0.5 * (S + S.T))
            v = V[:, 0] * d
        else:
            # Smallest eigenvalue of M v = lam C v: the largest of C v = mu M v (C may be singular).
            d, w, U, _ = scaled_eigh(Mnn)
            Cs = C / np.outer(d, d)
            if w[0] <= 1e-13 * max(w[-1], 0.0):  # the data are consistent: an exact solution, lambda = 0
                v = U[:, 0] / d
            else:
                W = U / np.sqrt(w)  # M^-1/2
                mu, Z = np.linalg.eigh(W.T @ (0.5 * (Cs + Cs.T)) @ W)
                v = (W @ Z[:, -1]) / d
                lam = 1.0 / mu[-1] if mu[-1] > 0 else 0.0
        if abs(v[-1]) < 1e-12 * np.linalg.norm(v):
            # Non-generic TLS problem: the wrench is orthogonal to the data. Fall back to LS.
            x = pinv_psd(Mnn[:-1, :-1]) @ Mnn[:-1, -1]
        else:
            x = -v[:-1] / v[-1]
        return x, self._offsets(M, x), lam

    def _offsets(self, M: np.ndarray, x: np.ndarray) -> np.ndarray | None:
        if not self.with_bias:
            return None
        Mee = M[np.ix_(_EXACT, _EXACT)]
        rhs = M[_EXACT, WRENCH_COLUMN] - M[np.ix_(_EXACT, np.arange(N_PARAMS))] @ x
        return pinv_psd(Mee) @ rhs

    def _solve(self) -> Solution:
        phi, bias, lam = self._solve_tls()
        x = phi if bias is None else np.r_[phi, bias]
        c = np.ones(6) if self.channel_weights is None else self.channel_weights
        A = self.stats.normal_equations(self.with_bias, self.channel_weights).A
        C = None if self.rms_scaling else self._noise_covariance()
        if C is not None and lam > 0.0:
            # First order, GTLS is least squares on the compensated Gram A - lam C (its normal equations)
            noise = np.zeros_like(A)
            noise[:N_PARAMS, :N_PARAMS] = lam * C[:N_PARAMS, :N_PARAMS]
            A = compensate_regressor_noise(A, noise)
        covariance, information = sandwich(self.stats, x, self.with_bias, c, A)
        return Solution(
            theta=x,
            information=information,
            covariance=covariance,
            residual_ss=self.stats.channel_residuals(x, self.with_bias),
            weight_sum=self.stats.weight_sum,
            normal_matrix=self.stats.normal_equations(self.with_bias, self.channel_weights).A,
        )
