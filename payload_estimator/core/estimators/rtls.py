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

from payload_estimator.core.estimators.base import (
    ChannelWeighting,
    Estimator,
    Solution,
    check_forgetting,
    effective_variances,
    pinv_psd,
)
from payload_estimator.core.regressor import N_BIAS, N_PARAMS, features_regressor, samples_features
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
        channel_std: (6,) noise std of each wrench channel to weight rows by, or None
            (uniform weights).
        bias: also estimate the six F/T offsets (as exact columns).
    """

    name = "rtls"
    summary = "recursive total least squares (Kubus et al. 2008)"
    settings_options = {"forgetting": "forgetting"}

    def __init__(
        self,
        *,
        forgetting: float = 1.0,
        column_std: np.ndarray | None = None,
        channel_std: np.ndarray | None = None,
        bias: bool = False,
    ) -> None:
        super().__init__(bias=bias)
        self.forgetting = check_forgetting(forgetting)
        self.column_std = None if column_std is None else np.asarray(column_std, dtype=float)
        if self.column_std is not None and (
            self.column_std.shape != (11,) or np.any(self.column_std <= 0)
        ):
            raise ValueError("column_std must be 11 positive numbers")
        self.channel_weights = ChannelWeighting.parse(channel_std, allow_auto=False, who=self.name).known
        self.stats = RegressorStatistics()

    def _accumulate(self, samples: SensorSamples) -> None:
        features = samples_features(samples)
        Y = features_regressor(features)
        self.stats.add_with_forgetting(Y, samples.wrench_in_sensor, self.forgetting, t=samples.t, features=features)

    def _reset(self) -> None:
        self.stats.reset()

    def _fit_inputs(self) -> tuple[RegressorStatistics, np.ndarray | None, None]:
        return self.stats, self.channel_weights, None

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

    def _solve(self) -> Solution:
        phi, bias = self.solve()
        x = phi if bias is None else np.r_[phi, bias]
        var = effective_variances(self.stats, x, self.with_bias)
        information = np.tensordot(1.0 / var, self.stats.channel_gram(self.with_bias), axes=1)
        return Solution(
            theta=x,
            information=information,
            covariance=pinv_psd(information),  # first order: that of the weighted LS problem at the TLS point
            residual_ss=self.stats.channel_residuals(x, self.with_bias),
            weight_sum=self.stats.weight_sum,
            normal_matrix=self.stats.normal_equations(self.with_bias, self.channel_weights).A,
        )
