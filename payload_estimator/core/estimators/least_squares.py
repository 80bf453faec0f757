"""Least squares over the sufficient statistics: OLS and WLS (Atkeson, An, Hollerbach 1986).

OLS minimises the plain sum of squared wrench residuals, forces (N) and
torques (N·m) alike. WLS weights each channel by the inverse of its residual
variance, estimated from a first OLS pass (as in Leboutet et al.'s survey, "Inertial
Parameter Identification in Robotics: A Survey", WLS: ``S`` from OLS residuals), or by a
noise level the user knows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from payload_estimator.core.estimators.base import (
    AUTO,
    ChannelWeighting,
    Estimator,
    Solution,
    channel_variances,
    compensate_regressor_noise,
    noise_level_covariance,
    sandwich,
    solve_psd,
)
from payload_estimator.core.regressor import samples_features, whitened_rows
from payload_estimator.core.samples import SensorSamples
from payload_estimator.core.statistics import RegressorStatistics

__all__ = ["OrdinaryLeastSquares", "WeightedLeastSquares", "linear_solution"]


def linear_solution(
    stats: RegressorStatistics,
    with_bias: bool,
    channel_weights: np.ndarray | None,
    prior_information: np.ndarray | None = None,
    regressor_noise: list[tuple[np.ndarray, float]] | None = None,
) -> Solution:
    """Solve the (channel-weighted, optionally regularised) normal equations.

    Args:
        stats: the sufficient statistics of the samples.
        with_bias: also solve for the six F/T offsets.
        channel_weights: (6,) weight of each wrench channel, or None for 1.
        prior_information: (p, p) information added to the normal equations
            (a zero-mean prior, e.g. the initial covariance of RLS).
        regressor_noise: the expected noise Gram of the regressor per channel, one term
            per noisy signal (:meth:`KinematicNoise.terms`), subtracted from the normal
            equations (bias-compensated least squares, :func:`compensate_regressor_noise`);
            the uncertainty of a measured noise level enters the covariance.

    The covariance is the sandwich ``A^+ S A^+`` (:func:`sandwich`): right whatever the
    weights are, with the residuals' correlation across channels and in time.
    """
    ne = stats.normal_equations(with_bias, channel_weights)
    cw = np.ones(6) if channel_weights is None else np.asarray(channel_weights, dtype=float)
    A = ne.A
    terms = regressor_noise or []
    if terms:
        A = compensate_regressor_noise(A, np.tensordot(cw, sum(D for D, _ in terms), axes=1))
    if prior_information is not None:
        A = A + prior_information
    x, rank = solve_psd(A, ne.c)
    covariance, information = sandwich(stats, x, with_bias, cw, A)
    if terms:
        covariance = covariance + noise_level_covariance(A, x, cw, terms)
    return Solution(
        theta=x,
        information=information,
        covariance=covariance if rank == x.shape[0] else None,
        residual_ss=stats.channel_residuals(x, with_bias),
        weight_sum=stats.weight_sum,
        normal_matrix=ne.A,
    )


class OrdinaryLeastSquares(Estimator):
    """Batch ordinary least squares on the full Newton-Euler model (Nadeau et al.'s OLS baseline).

    Args:
        bias: also estimate the six F/T offsets.
        kinematic_noise: noise of the measured accelerations, compensated in the
            normal equations (:class:`~payload_estimator.core.estimators.base.KinematicNoise`):
            ``"auto"`` (default: measured from the samples), None (exact) or
            ``(lin_acc_std, ang_acc_std)``.
    """

    name = "ols"
    summary = "ordinary least squares, full model (Atkeson et al. 1986)"

    def __init__(self, *, bias: bool = False, kinematic_noise: Any = AUTO, offset_window_s: float = 0.0) -> None:
        super().__init__(bias=bias, kinematic_noise=kinematic_noise, offset_window_s=offset_window_s)
        self.stats = self._new_statistics()
        self.weighting = ChannelWeighting()

    def _accumulate(self, samples: SensorSamples) -> None:
        Y, wrench, features = whitened_rows(samples, samples_features(samples))
        self.stats.add(Y, wrench, t=samples.t, features=features)

    def _reset(self) -> None:
        self.stats.reset()

    def _channel_weights(self) -> np.ndarray | None:
        if self.weighting.known is not None or not self.weighting.auto:
            return self.weighting.known
        ne = self.stats.normal_equations(self.with_bias)
        x, _ = solve_psd(ne.A, ne.c)
        return 1.0 / channel_variances(self.stats, x, self.with_bias)

    def _fit_inputs(self) -> tuple[RegressorStatistics, np.ndarray | None, None]:
        return self.stats, self._channel_weights(), None

    def _solve(self) -> Solution:
        return linear_solution(
            self.stats,
            self.with_bias,
            self._channel_weights(),
            regressor_noise=self.kinematic_noise.terms(self.stats, self.with_bias),
        )


class WeightedLeastSquares(OrdinaryLeastSquares):
    """Least squares with each wrench channel weighted by its inverse noise variance.

    Args:
        bias: also estimate the six F/T offsets.
        channel_std: ``"auto"`` (default: each channel's variance from the
            residuals of an OLS solution), (6,) known noise std of
            ``[fx, fy, fz, tx, ty, tz]`` (N, N·m), or None (uniform: OLS).
        kinematic_noise: as for :class:`OrdinaryLeastSquares`.
    """

    name = "wls"
    summary = "channel-weighted least squares (weights from OLS residuals or known noise)"

    def __init__(
        self, *, bias: bool = False, channel_std: np.ndarray | str | None = AUTO, kinematic_noise: Any = AUTO,
        offset_window_s: float = 0.0,
    ) -> None:
        super().__init__(bias=bias, kinematic_noise=kinematic_noise, offset_window_s=offset_window_s)
        self.weighting = ChannelWeighting.parse(channel_std, allow_auto=True, who=self.name)
        self.channel_std = None if self.weighting.known is None else np.asarray(channel_std, dtype=float)
