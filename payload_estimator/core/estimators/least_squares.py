"""Least squares over the sufficient statistics: OLS and WLS (Atkeson, An, Hollerbach 1986).

OLS minimises the plain sum of squared wrench residuals, forces (N) and
torques (N·m) alike. WLS weights each channel by the inverse of its residual
variance, estimated from a first OLS pass (survey 001, WLS: ``S`` from OLS
residuals), or by a noise level the user knows.
"""

from __future__ import annotations

import numpy as np

from payload_estimator.core.estimators.base import (
    AUTO,
    ChannelWeighting,
    Estimator,
    Solution,
    channel_variances,
    pinv_psd,
    solve_psd,
)
from payload_estimator.core.regressor import samples_regressor
from payload_estimator.core.samples import SensorSamples
from payload_estimator.core.statistics import RegressorStatistics

__all__ = ["OrdinaryLeastSquares", "WeightedLeastSquares", "linear_solution"]


def linear_solution(
    stats: RegressorStatistics,
    with_bias: bool,
    channel_weights: np.ndarray | None,
    prior_information: np.ndarray | None = None,
    weights_are_inverse_variances: bool = False,
) -> Solution:
    """Solve the (channel-weighted, optionally regularised) normal equations.

    Args:
        channel_weights: (6,) weight of each wrench channel, or None for 1.
        prior_information: (p, p) information added to the normal equations
            (a zero-mean prior, e.g. the initial covariance of RLS).
        weights_are_inverse_variances: the channel weights are ``1 / sigma_k²`` of a
            known noise level; the covariance is then ``A^-1``.

    Otherwise the covariance is the sandwich ``A^+ (sum_k c_k² s_k² G_k) A^+``
    with the residual variance ``s_k²`` of each channel, which is right
    whatever the weights were.
    """
    ne = stats.normal_equations(with_bias, channel_weights)
    A = ne.A if prior_information is None else ne.A + prior_information
    x, rank = solve_psd(A, ne.c)
    var = channel_variances(stats, x, with_bias)
    G = stats.channel_gram(with_bias)
    cw = np.ones(6) if channel_weights is None else np.asarray(channel_weights, dtype=float)
    cov = None
    if rank == x.shape[0]:
        A_inv = pinv_psd(A)
        cov = A_inv if weights_are_inverse_variances else A_inv @ np.tensordot(cw**2 * var, G, axes=1) @ A_inv
    return Solution(
        theta=x,
        information=np.tensordot(1.0 / var, G, axes=1),
        covariance=cov,
        residual_ss=stats.channel_residuals(x, with_bias),
        weight_sum=stats.weight_sum,
        normal_matrix=ne.A,
    )


class OrdinaryLeastSquares(Estimator):
    """Batch ordinary least squares on the full Newton-Euler model (paper 004's OLS baseline).

    Args:
        bias: also estimate the six F/T offsets.
    """

    name = "ols"
    summary = "ordinary least squares, full model (Atkeson et al. 1986)"

    def __init__(self, *, bias: bool = False) -> None:
        super().__init__(bias=bias)
        self.stats = RegressorStatistics()
        self.weighting = ChannelWeighting()

    def _accumulate(self, samples: SensorSamples) -> None:
        self.stats.add(samples_regressor(samples), samples.wrench_in_sensor)

    def _reset(self) -> None:
        self.stats.reset()

    def _channel_weights(self) -> np.ndarray | None:
        if self.weighting.known is not None or not self.weighting.auto:
            return self.weighting.known
        ne = self.stats.normal_equations(self.with_bias)
        x, _ = solve_psd(ne.A, ne.c)
        return 1.0 / channel_variances(self.stats, x, self.with_bias)

    def _solve(self) -> Solution:
        return linear_solution(
            self.stats,
            self.with_bias,
            self._channel_weights(),
            weights_are_inverse_variances=self.weighting.known is not None,
        )


class WeightedLeastSquares(OrdinaryLeastSquares):
    """Least squares with each wrench channel weighted by its inverse noise variance.

    Args:
        bias: also estimate the six F/T offsets.
        channel_std: ``"auto"`` (default: each channel's variance from the
            residuals of an OLS solution), (6,) known noise std of
            ``[fx, fy, fz, tx, ty, tz]`` (N, N·m), or None (uniform: OLS).
    """

    name = "wls"
    summary = "channel-weighted least squares (weights from OLS residuals or known noise)"

    def __init__(self, *, bias: bool = False, channel_std: np.ndarray | str | None = AUTO) -> None:
        super().__init__(bias=bias)
        self.weighting = ChannelWeighting.parse(channel_std, allow_auto=True, who=self.name)
        self.channel_std = None if self.weighting.known is None else np.asarray(channel_std, dtype=float)
