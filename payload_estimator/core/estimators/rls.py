"""Recursive least squares with exponential forgetting, over sufficient statistics.

Textbook RLS with forgetting factor ``lambda`` and initial covariance
``P0 = delta I`` minimises, after ``k`` samples,

    sum_j lambda^(k-j) |w_j - Y_j x|²  +  lambda^k x^T P0^-1 x

(Ljung & Söderström 1983). Instead of propagating ``P`` one sample at a time,
this class keeps that very sum as weighted sufficient statistics: a batch of
``N`` samples decays the old statistics by ``lambda^N`` and enters with weights
``lambda^(N-1-j)``, all in one vectorised product; the estimate is solved on
demand. The result is identical to the sequential recursion (tested), the
per-sample work is constant, and a batch costs one matrix product.

A constant information floor (``min_information``, default tiny) keeps the
covariance bounded when the excitation stops for long (covariance wind-up).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from payload_estimator.core.estimators.base import AUTO, ChannelWeighting, Estimator, Solution, check_forgetting
from payload_estimator.core.estimators.least_squares import linear_solution
from payload_estimator.core.regressor import N_BIAS, N_PARAMS, samples_features, whitened_rows
from payload_estimator.core.samples import SensorSamples
from payload_estimator.core.statistics import RegressorStatistics
from payload_estimator.errors import ConfigurationError

__all__ = ["RecursiveLeastSquares"]


class RecursiveLeastSquares(Estimator):
    """RLS with exponential forgetting (payloads change).

    Args:
        forgetting: forgetting factor per sample, in (0, 1]; the memory is about
            ``1 / (1 - forgetting)`` samples (1.0: no forgetting).
        initial_covariance: ``delta`` of ``P0 = delta I``, in the units of the
            (channel-weighted) parameters.
        min_information: constant information added to the diagonal at solve
            time, relative to the largest diagonal entry of the statistics (0 for
            textbook RLS).
        channel_std: (6,) noise std of each wrench channel to weight by, or None
            (uniform weights, textbook).
        bias: also estimate the six F/T offsets.
        kinematic_noise: as for :class:`~payload_estimator.core.estimators.least_squares.OrdinaryLeastSquares`.
    """

    name = "rls"
    summary = "recursive least squares with exponential forgetting"
    settings_options = {**Estimator.settings_options, "forgetting": "forgetting"}

    def __init__(
        self,
        *,
        forgetting: float = 0.999,
        initial_covariance: float = 1e6,
        min_information: float = 1e-12,
        channel_std: np.ndarray | None = None,
        bias: bool = False,
        kinematic_noise: Any = AUTO,
        offset_window_s: float = 0.0,
    ) -> None:
        super().__init__(bias=bias, kinematic_noise=kinematic_noise, offset_window_s=offset_window_s)
        if initial_covariance <= 0.0:
            raise ConfigurationError("initial_covariance must be positive")
        self.forgetting = check_forgetting(forgetting)
        self.initial_covariance = float(initial_covariance)
        self.min_information = float(min_information)
        self.channel_weights = ChannelWeighting.parse(channel_std, allow_auto=False, who=self.name).known
        self.stats = self._new_statistics()
        self._prior_scale = 1.0

    def _accumulate(self, samples: SensorSamples) -> None:
        Y, wrench, features = whitened_rows(samples, samples_features(samples))
        self._prior_scale *= self.stats.add_with_forgetting(Y, wrench, self.forgetting, t=samples.t,
                                                            features=features)

    def _reset(self) -> None:
        self.stats.reset()
        self._prior_scale = 1.0

    def _fit_inputs(self) -> tuple[RegressorStatistics, np.ndarray | None, None]:
        return self.stats, self.channel_weights, None

    def _solve(self) -> Solution:
        p = N_PARAMS + (N_BIAS if self.with_bias else 0)
        prior = np.eye(p) * (self._prior_scale / self.initial_covariance)
        if self.min_information > 0.0:
            A = self.stats.normal_equations(self.with_bias, self.channel_weights).A
            prior += np.eye(p) * self.min_information * max(float(np.max(np.diag(A))), 0.0)
        return linear_solution(
            self.stats, self.with_bias, self.channel_weights, prior_information=prior,
            regressor_noise=self.kinematic_noise.terms(self.stats, self.with_bias),
        )
