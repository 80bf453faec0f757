"""Recursive total least squares (Kubus, Kröger, Wahl, IROS 2008), over sufficient statistics.

Total least squares admits noise in the regressor (accelerations, angular
rates) as well as in the measured wrench: it finds the smallest perturbation
of ``[Y w]`` that makes the system consistent. The solution is the right
singular vector of the smallest singular value of the column-scaled
``[Y D_Y, w d_w]`` (survey 001: ``beta = -V_Yw / V_ww``), i.e. the eigenvector of
the smallest eigenvalue of its Gram matrix, which the sufficient statistics
hold exactly. Kubus et al. update an SVD sample by sample; updating the Gram
and taking an 11x11 eigendecomposition on demand gives the same estimate, with
exponential forgetting as an option.

TLS assumes every column carries noise of the same variance, so the columns
are scaled first (Kubus et al., Section IV): by default each to unit RMS, or by
the noise std of each column when the user knows it. The F/T offsets are exact
columns (an identity): they are eliminated first (mixed LS-TLS, Van Huffel &
Vandewalle 1991) through a Schur complement, then recovered by least squares.
"""

from __future__ import annotations

import numpy as np

from payload_estimator.core.estimate import Estimate
from payload_estimator.core.estimators.base import (
    Estimator,
    channel_variances,
    channel_weights_from_std,
    check_forgetting,
    inertia_identifiable,
    pinv_psd,
    scaled_condition_number,
)
from payload_estimator.core.inertia import InertialParameters
from payload_estimator.core.regressor import N_BIAS, N_PARAMS, samples_regressor
from payload_estimator.core.samples import SensorSamples
from payload_estimator.core.statistics import WRENCH_COLUMN, RegressorStatistics

__all__ = ["RecursiveTotalLeastSquares"]

_NOISY = np.r_[np.arange(N_PARAMS), WRENCH_COLUMN]
_EXACT = np.arange(N_PARAMS, N_PARAMS + N_BIAS)


class RecursiveTotalLeastSquares(Estimator):
    """RTLS estimator.

    Args:
        forgetting: per-sample forgetting factor in (0, 1] (1: none).
        column_std: (11,) noise std of the ten regressor columns and of the wrench
            column, for column scaling; None scales each column to unit RMS.
        channel_std: (6,) noise std of each wrench channel to weight rows by, or None.
        bias: also estimate the six F/T offsets (as exact columns).
    """

    name = "rtls"

    def __init__(
        self,
        forgetting: float = 1.0,
        column_std: np.ndarray | None = None,
        channel_std: np.ndarray | None = None,
        bias: bool = False,
    ) -> None:
        super().__init__(bias)
        self.forgetting = check_forgetting(forgetting)
        self.column_std = None if column_std is None else np.asarray(column_std, dtype=float)
        if self.column_std is not None and (
            self.column_std.shape != (11,) or np.any(self.column_std <= 0)
        ):
            raise ValueError("column_std must be 11 positive numbers")
        self.channel_weights = channel_weights_from_std(channel_std)
        self.stats = RegressorStatistics()

    def _accumulate(self, samples: SensorSamples) -> None:
        self.stats.add_with_forgetting(samples_regressor(samples), samples.wrench_in_sensor, self.forgetting)

    def _reset(self) -> None:
        self.stats.reset()

    def solve(self) -> tuple[np.ndarray, np.ndarray | None]:
        """The TLS solution: (phi (10,), offsets (6,) or None)."""
        M = self.stats.combined(self.channel_weights)
        Mnn = M[np.ix_(_NOISY, _NOISY)]
        if self.with_bias:
            Mee = M[np.ix_(_EXACT, _EXACT)]
            Men = M[np.ix_(_EXACT, _NOISY)]
            Mnn = Mnn - Men.T @ pinv_psd(Mee) @ Men
        if self.column_std is not None:
            d = 1.0 / self.column_std
        else:
            rms = np.sqrt(np.clip(np.diag(Mnn), 0.0, None))
            d = np.where(rms > 0.0, 1.0 / np.where(rms > 0.0, rms, 1.0), 1.0)
        S = Mnn * np.outer(d, d)
        _, V = np.linalg.eigh(0.5 * (S + S.T))
        v = V[:, 0]
        if abs(v[-1]) < 1e-12:
            # Non-generic TLS problem: the wrench is orthogonal to the data. Fall back to LS.
            x = pinv_psd(Mnn[:-1, :-1]) @ Mnn[:-1, -1]
        else:
            x = -(v[:-1] * d[:-1]) / (v[-1] * d[-1])
        bias = None
        if self.with_bias:
            Mee = M[np.ix_(_EXACT, _EXACT)]
            rhs = M[_EXACT, WRENCH_COLUMN] - M[np.ix_(_EXACT, np.arange(N_PARAMS))] @ x
            bias = pinv_psd(Mee) @ rhs
        return x, bias

    def _estimate(self) -> Estimate:
        phi, bias = self.solve()
        x = phi if bias is None else np.r_[phi, bias]
        var = channel_variances(self.stats, x, self.with_bias)
        G = self.stats.channel_gram(self.with_bias)
        information = np.tensordot(1.0 / var, G, axes=1)
        # First-order covariance: that of the weighted LS problem at the TLS point.
        cov = pinv_psd(information)
        params = InertialParameters(phi)
        rss = np.clip(self.stats.channel_residuals(x, self.with_bias), 0.0, None)
        A = self.stats.normal_equations(self.with_bias, self.channel_weights).A
        return Estimate(
            method=self.name,
            params=params,
            covariance=cov[:N_PARAMS, :N_PARAMS],
            bias=bias,
            residual_rms=np.sqrt(rss / max(self.stats.weight_sum, 1e-300)),
            condition_number=scaled_condition_number(A),
            samples_used=self.samples_used,
            inertia_identifiable=inertia_identifiable(information, params),
            dynamism=self.mean_dynamism,
        )
