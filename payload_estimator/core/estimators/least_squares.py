"""Least squares over the sufficient statistics: OLS and WLS (Atkeson, An, Hollerbach 1986).

OLS minimises the plain sum of squared wrench residuals, forces (N) and
torques (N·m) alike. WLS weights each channel by the inverse of its residual
variance, estimated from a first OLS pass (survey 001, WLS: ``S`` from OLS
residuals), or by a noise level the user knows.
"""

from __future__ import annotations

import numpy as np

from payload_estimator.core.estimate import Estimate
from payload_estimator.core.estimators.base import (
    Estimator,
    channel_variances,
    channel_weights_from_std,
    inertia_identifiable,
    pinv_psd,
    scaled_condition_number,
    solve_psd,
)
from payload_estimator.core.inertia import InertialParameters
from payload_estimator.core.regressor import N_PARAMS, samples_regressor
from payload_estimator.core.samples import SensorSamples
from payload_estimator.core.statistics import RegressorStatistics

__all__ = ["OrdinaryLeastSquares", "WeightedLeastSquares", "linear_estimate"]


def linear_estimate(
    method: str,
    stats: RegressorStatistics,
    with_bias: bool,
    channel_weights: np.ndarray | None,
    samples_used: int,
    dynamism: float,
    prior_information: np.ndarray | None = None,
    weights_are_inverse_variances: bool = False,
) -> Estimate:
    """Solve the (channel-weighted, optionally regularised) normal equations and rate the result.

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
    p = x.shape[0]
    if rank == p:
        A_inv = pinv_psd(A)
        if weights_are_inverse_variances:
            cov = A_inv
        else:
            cov = A_inv @ np.tensordot(cw**2 * var, G, axes=1) @ A_inv
    else:
        cov = None
    params = InertialParameters(x[:N_PARAMS])
    information = np.tensordot(1.0 / var, G, axes=1)
    rss = np.clip(stats.channel_residuals(x, with_bias), 0.0, None)
    return Estimate(
        method=method,
        params=params,
        covariance=None if cov is None else cov[:N_PARAMS, :N_PARAMS],
        bias=x[N_PARAMS:].copy() if with_bias else None,
        residual_rms=np.sqrt(rss / max(stats.weight_sum, 1e-300)),
        condition_number=scaled_condition_number(ne.A),
        samples_used=samples_used,
        inertia_identifiable=inertia_identifiable(information, params),
        dynamism=dynamism,
    )


class OrdinaryLeastSquares(Estimator):
    """Batch ordinary least squares on the full Newton-Euler model (paper 004's OLS baseline).

    Args:
        bias: also estimate the six F/T offsets.
    """

    name = "ols"

    def __init__(self, bias: bool = False) -> None:
        super().__init__(bias)
        self.stats = RegressorStatistics()

    def _accumulate(self, samples: SensorSamples) -> None:
        self.stats.add(samples_regressor(samples), samples.wrench_in_sensor)

    def _reset(self) -> None:
        self.stats.reset()

    def _channel_weights(self) -> np.ndarray | None:
        return None

    def _weights_known(self) -> bool:
        return False

    def _estimate(self) -> Estimate:
        return linear_estimate(
            self.name,
            self.stats,
            self.with_bias,
            self._channel_weights(),
            self.samples_used,
            self.mean_dynamism,
            weights_are_inverse_variances=self._weights_known(),
        )


class WeightedLeastSquares(OrdinaryLeastSquares):
    """Least squares with each wrench channel weighted by its inverse noise variance.

    Args:
        bias: also estimate the six F/T offsets.
        channel_std: (6,) known noise std of ``[fx, fy, fz, tx, ty, tz]`` (N, N·m);
            None estimates it from the residuals of an OLS solution.
    """

    name = "wls"

    def __init__(self, bias: bool = False, channel_std: np.ndarray | None = None) -> None:
        super().__init__(bias)
        self._known_weights = channel_weights_from_std(channel_std)
        self.channel_std = None if channel_std is None else np.asarray(channel_std, dtype=float)

    def _weights_known(self) -> bool:
        return self.channel_std is not None

    def _channel_weights(self) -> np.ndarray:
        if self._known_weights is not None:
            return self._known_weights
        ne = self.stats.normal_equations(self.with_bias)
        x, _ = solve_psd(ne.A, ne.c)
        return 1.0 / channel_variances(self.stats, x, self.with_bias)
