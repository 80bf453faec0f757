"""Recursive total least squares (Kubus, Kröger, Wahl, IROS 2008), over sufficient statistics.

Total least squares admits noise in the regressor (accelerations) as well as in
the measured wrench: it finds the smallest perturbation of ``[Y w]`` that makes
the system consistent. In the metric of the noise this is the generalised
eigenvector ``v = [phi; -1]`` of the smallest eigenvalue ``lam`` of the pencil
``(M, C)`` of the Gram ``M`` of ``[Y w]`` and the noise covariance ``C`` of its
columns (generalised TLS, Van Huffel & Vandewalle 1991 §3.3), which the
sufficient statistics hold exactly. Since the regressor's noise and the
wrench's are independent (``C_Yw = 0``), the first ten rows of ``(M - lam C) v = 0``
are GTLS's normal equations (TLS's closed form ``(A^T A - sigma² I) x = A^T b``
in the metric of the noise)::

    (M_YY - lam C_YY) phi = M_Yw                                         (1)

least squares on the Gram with the noise's share taken out, by the amount
``lam`` the data show. Kubus et al. update an SVD sample by sample; updating
the Gram and solving an 11x11 pencil on demand gives the same estimate, at a
per-sample cost that does not grow with the samples, with exponential
forgetting as an option.

**Noise model.** By default every noise level is *measured online from the
signals themselves* (:class:`~payload_estimator.core.signal_noise.SignalNoise`,
the median of fourth differences); either may instead be given from a data
sheet (``kinematic_noise``, ``wrench_noise``). The white noise of the measured
linear and angular accelerations (std per axis, m/s² and rad/s², through
:class:`~payload_estimator.core.estimators.base.KinematicNoise`) enters the
regressor linearly and gives each wrench channel ``k`` its per-sample noise
Gram ``G_k`` (:func:`~payload_estimator.core.regressor.regressor_noise_gram`);
the wrench noise (std of the forces, N, and of the torques, N·m, each pooled
over its three axes) gives the measurement column's ``sigma_wk²``. Gravity
(from the orientation) and the angular velocity (encoder or gyro rates, orders
of magnitude cleaner than differentiated accelerations) are taken as exact,
as are the F/T offsets, which are eliminated first (mixed LS-TLS, Van Huffel
& Vandewalle 1989) through a Schur complement and recovered by least squares.

**Channel weights.** Rows of different channels carry different noise: a
force row the force noise (Table II: 0.1 N) and ``m da``, a torque row the
torque noise (0.005 N·m) and ``m c x da + J dalpha``. Summed unweighted (N and
N·m alike) the forces swamp the torques, which alone determine the COM well.
With ``channel_std="auto"`` (default) channel ``k`` is weighted by the inverse
of its equation-error variance ``s_k²``, the maximum-likelihood weighting of
weighted TLS for rows of unequal noise (Markovsky & Van Huffel 2007), as
feasible GLS: a first solve weights by the measured wrench noise alone
(``1 / sigma_wk²``, forces and torques apart), :data:`REWEIGHTINGS` more by
the residual variance at the previous estimate. The noise model predicts
``s_k² = sigma_wk² + phi^T G_k phi`` too (:meth:`~RecursiveTotalLeastSquares.channel_noise_variance`),
but through the inertia, which slow motion does not determine: at the
estimate's attenuated inertia it under-predicts the claw hammer's ``tx, ty``
error 2.3 to 2.9-fold (0.6 rad/s, moderate noise), where the residuals measure
it, and whatever the model leaves out (gyro noise in the angular velocity).

**Bounded correction.** Where the noise is most of the data Gram, (1) subtracts
two nearly equal numbers. On slow motion that is where the inertia lives: at
0.6 rad/s the angular acceleration is about 0.5 rad/s² and Table II's noise 0.5
to 1 rad/s², so the noise is 55 % to 98 % of the data in the six inertia
directions of the pencil ``(M_YY, C_YY)`` (1e-4 to 1e-3 in those of mass and COM). The
eigenvalues of those directions (``1/share``) then lie within the sampling
error of the solution's (about 1), the eigenvector mixes with them, and plain
GTLS errs by thousands of percent on the COM (``benchmarks/tools.py``); so does
least squares fully compensated for the noise. As for least squares
(:func:`~payload_estimator.core.estimators.base.compensate_regressor_noise`),
(1) is therefore solved with the correction ``lam C_YY`` capped, in the metric
of ``M_YY``, to leave at least ``floor`` (default
:data:`~payload_estimator.core.estimators.base.EIV_FLOOR`) of the data in
every direction: the exact GTLS solution wherever ``lam`` times the noise share
stays below ``1 - floor``, at most ``1/floor`` times least squares elsewhere.
``lam`` itself, the smallest eigenvalue, is stable however the eigenvector
mixes (it is at most the ratio at the true ``v``); it scales the modelled
noise to what the residuals show (e.g. noise low-passed before sampling,
which the fourth differences read low).

``column_std="rms"`` is Kubus et al.'s original column scaling to unit RMS and
its eigenvector (rows unweighted unless ``channel_std`` gives stds; not a
noise model, and biased on slow motion); ``column_std`` as 11 stds is GTLS with
that known column noise; ``floor=None`` returns the pencil's eigenvector
(plain GTLS).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from payload_estimator.core.estimators.base import (
    AUTO,
    EIV_FLOOR,
    ChannelWeighting,
    Estimator,
    Solution,
    channel_variances,
    check_forgetting,
    compensate_regressor_noise,
    pinv_psd,
    sandwich,
    scaled_eigh,
    solve_psd,
)
from payload_estimator.core.regressor import (
    N_BIAS,
    N_PARAMS,
    regressor_noise_gram,
    samples_features,
    whitened_rows,
)
from payload_estimator.core.samples import SensorSamples
from payload_estimator.core.signal_noise import SignalNoise
from payload_estimator.core.statistics import WRENCH_COLUMN, RegressorStatistics
from payload_estimator.errors import ConfigurationError

__all__ = ["RecursiveTotalLeastSquares", "REWEIGHTINGS"]

_NOISY = np.r_[np.arange(N_PARAMS), WRENCH_COLUMN]
_EXACT = np.arange(N_PARAMS, N_PARAMS + N_BIAS)

REWEIGHTINGS = 1
"""Solves after the first (weighted by the wrench noise alone) that reweight the channels by the residual
variance at the previous estimate. One reaches the fixed point: on ``benchmarks/tools.py`` a second moves
the mean mass and COM errors by less than 0.01 percentage point."""
_RELATIVE_VARIANCE_FLOOR = 1e-6
"""A channel's noise variance counts as at least this share of the largest one's (a channel measured
noise-free cannot take all the weight)."""


@dataclass(frozen=True)
class _Fit:
    """One solve: the unknowns, the pencil's eigenvalue and what the solve used."""

    phi: np.ndarray
    offsets: np.ndarray | None
    lam: float
    """Smallest eigenvalue of the pencil: the residual over the modelled noise (about 1; 0 for LS)."""
    weights: np.ndarray
    """(6,) channel weights."""
    noise: np.ndarray | None
    """(10, 10) channel-weighted noise Gram of the regressor columns ``C_YY``, or None (none modelled)."""


class RecursiveTotalLeastSquares(Estimator):
    """RTLS estimator: generalised TLS, channel-weighted, with the signals' noise model.

    Args:
        forgetting: per-sample forgetting factor in (0, 1] (1: none).
        column_std: None (default: the noise model from ``kinematic_noise`` and
            ``wrench_noise``), ``"rms"`` (Kubus et al.'s scaling of each column to unit
            RMS), or (11,) known noise std of the ten regressor columns and the wrench.
        channel_std: ``"auto"`` (default: each wrench channel by the inverse of its
            equation-error variance: the measured wrench noise's, then the residuals';
            uniform with ``column_std``, which models no channel apart), None (uniform), or (6,) noise std of
            ``[fx, fy, fz, tx, ty, tz]`` (N, N·m): rows weighted by the inverse variances.
        kinematic_noise: noise of the measured accelerations (``"auto"``: measured from
            the samples; None: exact; or ``(lin_acc_std, ang_acc_std)``, m/s², rad/s²).
        wrench_noise: ``"auto"`` (measured from the wrench samples, forces and torques
            apart) or ``(force_std, torque_std)`` (N, N·m, the sensor's data sheet); ``(0, 0)``
            (the settings' ``ft_noise_std`` default) means measured.
        floor: share of the data Gram the noise correction leaves at least in every
            direction (module docstring); None: plain GTLS, the pencil's eigenvector.
        bias: also estimate the six F/T offsets (as exact columns).
    """

    name = "rtls"
    summary = "recursive total least squares (Kubus et al. 2008), generalised by the signals' noise"
    settings_options = {**Estimator.settings_options, "forgetting": "forgetting", "wrench_noise": "ft_noise_std"}

    def __init__(
        self,
        *,
        forgetting: float = 1.0,
        column_std: np.ndarray | str | None = None,
        channel_std: np.ndarray | str | None = AUTO,
        kinematic_noise: Any = AUTO,
        wrench_noise: Any = AUTO,
        floor: float | None = EIV_FLOOR,
        bias: bool = False,
        offset_window_s: float = 0.0,
    ) -> None:
        super().__init__(bias=bias, kinematic_noise=kinematic_noise, offset_window_s=offset_window_s)
        self.forgetting = check_forgetting(forgetting)
        self.rms_scaling = isinstance(column_std, str)
        if self.rms_scaling and column_std != "rms":
            raise ConfigurationError(f"column_std must be None, 'rms' or 11 stds, got {column_std!r}")
        self.column_std = None if column_std is None or self.rms_scaling else np.asarray(column_std, dtype=float)
        if self.column_std is not None and (
            self.column_std.shape != (11,) or np.any(self.column_std <= 0)
        ):
            raise ConfigurationError("column_std must be 11 positive numbers")
        if not isinstance(wrench_noise, str) and np.all(np.asarray(wrench_noise, dtype=float) == 0.0):
            wrench_noise = AUTO  # zeros (the settings' default): not given, measure it
        self.wrench_auto = isinstance(wrench_noise, str)
        if self.wrench_auto and wrench_noise != AUTO:
            raise ConfigurationError(f"wrench_noise must be 'auto' or (force_std, torque_std), got {wrench_noise!r}")
        self.wrench_std = None if self.wrench_auto else np.asarray(wrench_noise, dtype=float)
        if self.wrench_std is not None and (self.wrench_std.shape != (2,) or np.any(self.wrench_std <= 0)):
            raise ConfigurationError("wrench_noise must be two positive numbers (N, N·m)")
        weighting = ChannelWeighting.parse(channel_std, allow_auto=True, who=self.name)
        self.channel_weights = weighting.known
        self.auto_weights = weighting.auto and column_std is None
        if floor is not None and not 0.0 < floor < 1.0:
            raise ConfigurationError(f"floor must be in (0, 1) or None, got {floor!r}")
        self.floor = None if floor is None else float(floor)
        self.stats = self._new_statistics()
        self._force_noise = SignalNoise()
        self._torque_noise = SignalNoise()
        self._cache: tuple[tuple[Any, ...], _Fit] | None = None

    def _accumulate(self, samples: SensorSamples) -> None:
        Y, wrench, features = whitened_rows(samples, samples_features(samples))
        self.stats.add_with_forgetting(Y, wrench, self.forgetting, t=samples.t, features=features)
        self._force_noise.update(samples.wrench_in_sensor[:, :3])
        self._torque_noise.update(samples.wrench_in_sensor[:, 3:])

    def _reset(self) -> None:
        self.stats.reset()
        self._force_noise.reset()
        self._torque_noise.reset()
        self._cache = None

    def _fit_inputs(self) -> tuple[RegressorStatistics, np.ndarray | None, None]:
        return self.stats, self._fit().weights, None

    # --- the noise model -------------------------------------------------------------------

    def wrench_noise_std(self) -> np.ndarray | None:
        """Return the (6,) noise std of ``[fx, fy, fz, tx, ty, tz]`` (N, N·m).

        Given, or measured from the wrench (forces and torques pooled apart); None until it can
        be measured."""
        self._flush()
        if self.wrench_std is not None:
            force, torque = float(self.wrench_std[0]), float(self.wrench_std[1])
        else:
            force, torque = self._force_noise.std(), self._torque_noise.std()
        if not (np.isfinite(force) and np.isfinite(torque)):
            return None
        return np.r_[np.full(3, force), np.full(3, torque)]

    def regressor_noise(self) -> np.ndarray:
        """(6, 10, 10) per-sample noise Gram ``G_k`` of each channel's regressor row (0 when exact)."""
        self._flush()
        std = self.kinematic_noise.std()
        if std is None:
            return np.zeros((6, N_PARAMS, N_PARAMS))
        return regressor_noise_gram(std[0], std[1])

    def channel_noise_variance(self, phi: np.ndarray | None = None) -> np.ndarray | None:
        """Return the (6,) equation-error variance the noise model predicts for each channel's rows at ``phi``.

        ``sigma_wk² + phi^T G_k phi`` (N², N²·m²; the wrench noise alone without ``phi``: the first
        solve's weights are its inverses); None until the wrench noise is measured, or when nothing
        is noisy. The pencil's ``C`` is its channel-weighted sum over the samples."""
        self._flush()
        sigma_w = self.wrench_noise_std()
        if sigma_w is None:
            return None
        var = sigma_w**2
        if phi is not None:
            var = var + np.einsum("i,kij,j->k", phi, self.regressor_noise(), phi)
        top = float(np.max(var))
        return np.maximum(var, _RELATIVE_VARIANCE_FLOOR * top) if top > 0.0 else None

    # --- the solve -------------------------------------------------------------------------

    def solve(self) -> tuple[np.ndarray, np.ndarray | None]:
        """The TLS solution: (phi (10,), offsets (6,) or None)."""
        self._flush()
        fit = self._fit()
        return fit.phi, fit.offsets

    def _fit(self) -> _Fit:
        key = (self.stats.n_samples, self.stats.weight_sum, self.kinematic_noise.std(),
               self._force_noise.n_differences, self._torque_noise.n_differences)
        if self._cache is None or self._cache[0] != key:
            self._cache = (key, self._compute_fit())
        return self._cache[1]

    def _compute_fit(self) -> _Fit:
        fixed = np.ones(6) if self.channel_weights is None else self.channel_weights
        n = self.stats.weight_sum
        if self.rms_scaling:
            return self._solve_rms(fixed)
        if self.column_std is not None:
            return self._solve_gtls(fixed, np.diag(n * self.column_std[:N_PARAMS] ** 2) * float(np.sum(fixed)),
                                    n * float(self.column_std[-1] ** 2 * np.sum(fixed)))
        if not self.auto_weights:
            return self._solve_noise_model(fixed)
        var = self.channel_noise_variance()
        if var is None:  # no noise measured yet: least squares
            return self._solve_gtls(fixed, None, 0.0)
        fit = self._solve_noise_model(1.0 / var)
        for _ in range(REWEIGHTINGS):
            x = fit.phi if fit.offsets is None else np.r_[fit.phi, fit.offsets]
            fit = self._solve_noise_model(1.0 / channel_variances(self.stats, x, self.with_bias))
        return fit

    def _solve_noise_model(self, weights: np.ndarray) -> _Fit:
        """GTLS with the signals' noise model and channel ``weights``."""
        sigma_w = self.wrench_noise_std()
        if sigma_w is None:
            return self._solve_gtls(weights, None, 0.0)
        n = self.stats.weight_sum
        return self._solve_gtls(weights, n * np.tensordot(weights, self.regressor_noise(), axes=1),
                                n * float(np.sum(weights * sigma_w**2)))

    def _reduced_gram(self, weights: np.ndarray) -> np.ndarray:
        """Return the (11, 11) channel-weighted Gram of ``[Y, w]`` with the exact offset columns eliminated.

        The elimination is a Schur complement: mixed LS-TLS."""
        M = self.stats.combined(weights)
        Mnn = M[np.ix_(_NOISY, _NOISY)]
        if self.with_bias:
            Mee = M[np.ix_(_EXACT, _EXACT)]
            Men = M[np.ix_(_EXACT, _NOISY)]
            Mnn = Mnn - Men.T @ pinv_psd(Mee) @ Men
        return Mnn

    def _solve_gtls(self, weights: np.ndarray, noise: np.ndarray | None, wrench_noise: float) -> _Fit:
        """Solve the GTLS of the pencil ``(M, C)``, ``C = diag(noise (10, 10), wrench_noise)``.

        Both are summed over the samples, channel-weighted: ``phi`` from (1) with the correction
        capped at ``1 - floor``, or the eigenvector when :attr:`floor` is None."""
        Mnn = self._reduced_gram(weights)
        C = np.zeros((N_PARAMS + 1, N_PARAMS + 1))
        C[N_PARAMS, N_PARAMS] = wrench_noise
        if noise is not None:
            C[:N_PARAMS, :N_PARAMS] = noise
        if not np.any(C):  # nothing is noisy: least squares
            return self._finish(pinv_psd(Mnn[:-1, :-1]) @ Mnn[:-1, -1], 0.0, weights, None)
        # Smallest eigenvalue of M v = lam C v: the largest of C v = mu M v (C may be singular).
        d, w, U, _ = scaled_eigh(Mnn)
        if w[0] <= 1e-13 * max(w[-1], 0.0):  # the data are consistent: an exact solution, lambda = 0
            return self._finish(self._from_eigenvector(U[:, 0] / d, Mnn), 0.0, weights, noise)
        W = U / np.sqrt(w)  # M^-1/2
        Cs = C / np.outer(d, d)
        mu, Z = np.linalg.eigh(W.T @ (0.5 * (Cs + Cs.T)) @ W)
        lam = 1.0 / mu[-1] if mu[-1] > 0 else 0.0
        if self.floor is None or noise is None or lam == 0.0:
            return self._finish(self._from_eigenvector((W @ Z[:, -1]) / d, Mnn), lam, weights, noise)
        A = compensate_regressor_noise(Mnn[:N_PARAMS, :N_PARAMS], lam * noise, self.floor)
        return self._finish(solve_psd(A, Mnn[:N_PARAMS, N_PARAMS])[0], lam, weights, noise)

    def _solve_rms(self, weights: np.ndarray) -> _Fit:
        """Kubus et al.: TLS of ``[Y w]`` with every column scaled to unit RMS."""
        Mnn = self._reduced_gram(weights)
        rms = np.sqrt(np.clip(np.diag(Mnn), 0.0, None))
        d = np.where(rms > 0.0, 1.0 / np.where(rms > 0.0, rms, 1.0), 1.0)
        S = Mnn * np.outer(d, d)
        _, V = np.linalg.eigh(0.5 * (S + S.T))
        return self._finish(self._from_eigenvector(V[:, 0] * d, Mnn), 0.0, weights, None)

    @staticmethod
    def _from_eigenvector(v: np.ndarray, Mnn: np.ndarray) -> np.ndarray:
        if abs(v[-1]) < 1e-12 * np.linalg.norm(v):
            # Non-generic TLS problem: the wrench is orthogonal to the data. Fall back to LS.
            return pinv_psd(Mnn[:-1, :-1]) @ Mnn[:-1, -1]
        return -v[:-1] / v[-1]

    def _finish(self, phi: np.ndarray, lam: float, weights: np.ndarray, noise: np.ndarray | None) -> _Fit:
        """The fit of ``phi``, with the F/T offsets recovered by least squares given it."""
        offsets = None
        if self.with_bias:
            M = self.stats.combined(weights)
            Mee = M[np.ix_(_EXACT, _EXACT)]
            rhs = M[_EXACT, WRENCH_COLUMN] - M[np.ix_(_EXACT, np.arange(N_PARAMS))] @ phi
            offsets = pinv_psd(Mee) @ rhs
        return _Fit(phi, offsets, lam, weights, noise)

    def _solve(self) -> Solution:
        fit = self._fit()
        x = fit.phi if fit.offsets is None else np.r_[fit.phi, fit.offsets]
        A = self.stats.normal_equations(self.with_bias, fit.weights).A
        A_fit = A
        if fit.noise is not None and fit.lam > 0.0:
            # GTLS is least squares on the compensated Gram A - lam C (its normal equations (1))
            noise = np.zeros_like(A)
            noise[:N_PARAMS, :N_PARAMS] = fit.lam * fit.noise
            A_fit = compensate_regressor_noise(A, noise, EIV_FLOOR if self.floor is None else self.floor)
        covariance, information = sandwich(self.stats, x, self.with_bias, fit.weights, A_fit)
        return Solution(
            theta=x,
            information=information,
            covariance=covariance,
            residual_ss=self.stats.channel_residuals(x, self.with_bias),
            weight_sum=self.stats.weight_sum,
            normal_matrix=A,
        )
