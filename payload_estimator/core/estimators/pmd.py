"""Point-mass discretisation (PMD), paper 004 Problem 1, over sufficient statistics.

The payload is ``n`` point masses ``m_i >= 0`` at fixed positions ``p_i`` inside
its shape, so ``phi = P m`` with ``P`` (10 x n) built from the positions: every
estimate is a non-negative sum of point masses inside the shape, hence
physically consistent by construction. Paper 004 eq. (8) blends the reduced,
gravity-only model (eq. 6) and the full Newton-Euler model (eq. 3) sample by
sample with the dynamism weight of eq. (9), ``w = tanh(3 nu / c1)``.

We solve the squared form of Problem 1, a quadratic program:

    min_{m >= 0, beta}  sum_j (1 - w_j)² |Y~_j P m + beta - b_j|²_C
                      + sum_j  w_j²     |Y_j  P m + beta - b_j|²_C
                      + lambda sum_i (m_i / m_bar - 1)²

with ``|r|²_C = sum_k c_k r_k²`` a per-channel weighting (the inverse noise
variance of each wrench channel, estimated from the residuals by default, or
uniform as in the paper), ``beta`` the optional F/T offsets and
``m_bar = m_ls / n`` the mean point mass of a uniform body of the mass ``m_ls``
that unconstrained least squares gives on the same data. The paper's
regulariser ``lambda |m|`` encourages homogeneity but also shrinks the total
mass towards zero; centring it on the uniform distribution keeps the
homogeneity and removes that bias. ``lambda`` is unitless.

Since ``Y P m = (Y P) m``, the data term equals ``theta^T H theta - 2 h^T theta``
with ``theta = [P m; beta]`` and ``H``, ``h`` read from the two weighted
statistics (10 or 16 unknowns): the cost of a solve never depends on the
number of samples. ``H`` has rank r <= 16, so the QP's Hessian is a rank-r
matrix plus ``lambda I``. Writing ``H = L L^T`` and lifting ``z = L^T theta``
gives the sparse QP

    min  |z|² + lambda' |u - 1|² - 2 h^T T x   s.t.  L^T T x - z = 0,  u >= 0

in ``x = [u; beta]`` (``u = m / m_bar``), whose KKT system OSQP factors in time
linear in ``n``. It is solved by OSQP, warm-started from the previous
solution (see :mod:`~payload_estimator.core.estimators.qp`).
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
from payload_estimator.core.estimators.qp import LiftedPointMassQP
from payload_estimator.core.regressor import (
    N_BIAS,
    N_PARAMS,
    reduced_regressor,
    samples_regressor,
)
from payload_estimator.core.samples import STANDARD_GRAVITY, SensorSamples
from payload_estimator.core.statistics import RegressorStatistics

__all__ = ["PointMassDiscretization", "point_mass_matrix", "dynamism_weight", "C1_PAPER", "C1_PIPELINE"]

C1_PAPER = 300.0
"""Paper 004's dynamism scale ``c1`` (eq. 9) for its simulations: sensor-level samples whose
kinematics carry Table II's noise, so the full model is trusted only in clearly dynamic samples.
The estimator's default, and what ``payload-estimator estimate`` uses on sample files."""
C1_PIPELINE = 3.0
"""``c1`` on the robot pipeline (the node, ``replay``, ``demo``; the ``c1`` setting's default).
Kinematics from joint encoders through the matched filters are far cleaner than Table II, so the
full model can be trusted at low dynamism: with F/T offsets estimated, c1 = 300 gave 0.6-4.4 %
mass error on the simulated arms and c1 = 3 gave 0.07-0.7 % (``benchmarks/end_to_end.py --c1``).
On a real xArm with noisy kinematics the paper needed 5e3-25e3."""


def point_mass_matrix(points: np.ndarray) -> np.ndarray:
    """``P`` (10 x n): column ``i`` is ``phi`` of a unit point mass at ``points[i]``.

    ``phi = [1, p, vech(|p|² I - p p^T)]`` (paper 004 eq. (5) with ``k`` = 0, 1, 2).
    """
    p = np.asarray(points, dtype=float)
    x, y, z = p[:, 0], p[:, 1], p[:, 2]
    r2 = x * x + y * y + z * z
    return np.stack(
        [np.ones_like(x), x, y, z, r2 - x * x, -x * y, -x * z, r2 - y * y, -y * z, r2 - z * z]
    )


def dynamism_weight(nu: np.ndarray, c1: float) -> np.ndarray:
    """Paper 004 eq. (9): ``w = tanh(3 nu / c1)``, the share of the full model."""
    return np.tanh(3.0 * np.asarray(nu, dtype=float) / c1)


class PointMassDiscretization(Estimator):
    """PMD estimator (paper 004).

    Args:
        points_in_sensor: (n, 3) point-mass positions in the sensor frame, m
            (see :func:`payload_estimator.core.shapes.sample_points`).
        c1: dynamism scale of eq. (9); see :data:`C1_PAPER` (the default) and
            :data:`C1_PIPELINE`.
        regularization: ``lambda``, weight of ``sum (m_i / m_bar - 1)²`` relative
            to the channel-weighted squared residuals (the paper's 0.1 belongs to
            its unsquared, unweighted objective; 1.0 is our benchmarked default).
        channel_std: ``"auto"`` (estimate each channel's residual std from the
            data and weight by its inverse variance), None (uniform weights, as
            in the paper) or (6,) known stds (N, N·m).
        dynamism_scales: ``(n1, n2, n3)`` of eq. (4).
        bias: also estimate the six F/T offsets.
        solver: ``"osqp"`` (persistent, warm-started OSQP workspace) or any
            qpsolvers solver name (``"osqp-qpsolvers"``, ``"clarabel"``...).
        solver_options: solver settings (OSQP names for the OSQP paths).
        reduced_with_linear_acceleration: use ``g - a`` instead of ``g`` in the
            reduced model (``f = m (g - a)``, ``tau = m c x (g - a)``). The linear
            acceleration is measured with little noise relative to ``g`` and
            multiplies only the mass and COM, so keeping it removes the reduced
            model's bias at higher speeds (mass error at 2 rad/s: 2.0 % -> 0.5 %
            in ``benchmarks/accuracy.py``); False is the paper's eq. (6) exactly.
    """

    name = "pmd"
    summary = "point-mass discretisation, physically consistent QP (paper 004)"
    needs_points = True
    settings_options = {"c1": "c1", "regularization": "regularization"}

    def __init__(
        self,
        points_in_sensor: np.ndarray,
        *,
        c1: float = C1_PAPER,
        regularization: float = 1.0,
        channel_std: str | np.ndarray | None = AUTO,
        dynamism_scales: tuple[float, float, float] = (1.0, 1.0, 0.5),
        bias: bool = False,
        solver: str = "osqp",
        solver_options: dict | None = None,
        reduced_with_linear_acceleration: bool = True,
    ) -> None:
        super().__init__(bias=bias)
        self.reduced_with_linear_acceleration = bool(reduced_with_linear_acceleration)
        points = np.asarray(points_in_sensor, dtype=float)
        if points.ndim != 2 or points.shape[1] != 3 or len(points) < 1:
            raise ValueError("points_in_sensor must be an (n, 3) array with n >= 1")
        if not np.all(np.isfinite(points)):
            raise ValueError("points_in_sensor has non-finite coordinates")
        if c1 <= 0 or regularization < 0:
            raise ValueError("c1 must be positive and regularization non-negative")
        self.points = points
        self.P = point_mass_matrix(points)
        self.c1 = float(c1)
        self.regularization = float(regularization)
        weighting = ChannelWeighting.parse(channel_std, allow_auto=True, who=self.name)
        self.auto_weights = weighting.auto
        self._fixed_weights = None if weighting.auto else (
            weighting.known if weighting.known is not None else np.ones(6))
        self.dynamism_scales = tuple(float(s) for s in dynamism_scales)
        self._qp = LiftedPointMassQP(
            self.P, N_BIAS if self.with_bias else 0, solver=solver, settings=solver_options
        )
        self.stats_reduced = RegressorStatistics()
        self.stats_full = RegressorStatistics()
        self._force_norm_sum = 0.0
        self._gravity_norm_sum = 0.0
        self._weights: np.ndarray | None = None
        self.masses: np.ndarray = np.zeros(len(points))
        self.last_solve_status: str = "not solved"
        self.last_solve_iterations = 0

    @property
    def n_points(self) -> int:
        return self.points.shape[0]

    # ------------------------------------------------------------------ intake
    def _accumulate(self, samples: SensorSamples) -> None:
        n1, n2, n3 = self.dynamism_scales
        w = dynamism_weight(samples.dynamism(n1, n2, n3), self.c1)
        apparent = samples.gravity_in_sensor
        if self.reduced_with_linear_acceleration:
            apparent = apparent - samples.lin_acc_in_sensor
        self.stats_reduced.add(
            reduced_regressor(apparent), samples.wrench_in_sensor, (1.0 - w) ** 2
        )
        self.stats_full.add(samples_regressor(samples), samples.wrench_in_sensor, w**2)
        self._force_norm_sum += float(np.linalg.norm(samples.wrench_in_sensor[:, :3], axis=1).sum())
        self._gravity_norm_sum += float(np.linalg.norm(samples.gravity_in_sensor, axis=1).sum())

    def _reset(self) -> None:
        self.stats_reduced.reset()
        self.stats_full.reset()
        self._force_norm_sum = 0.0
        self._gravity_norm_sum = 0.0
        self._qp.reset()
        self._weights = None
        self.masses = np.zeros(self.n_points)
        self.last_solve_status = "not solved"

    # ------------------------------------------------------------------- solve
    def _mass_scale(self, H: np.ndarray, h: np.ndarray) -> float:
        """Total mass (kg) of the uniform reference body.

        Unconstrained least squares on the data term, unless it is far from the
        mean force over the mean gravity (few samples, poor excitation), in
        which case that plain ratio is used: the reference only centres the
        regulariser and sets the QP's units, it must never be absurd.
        """
        g = self._gravity_norm_sum if self._gravity_norm_sum > 0 else STANDARD_GRAVITY
        rough = self._force_norm_sum / g
        rough = rough if rough > 1e-6 else 1.0
        x, _ = solve_psd(H, h)
        if np.isfinite(x[0]) and rough / 3.0 < x[0] < 3.0 * rough:
            return float(x[0])
        return rough

    def _objective(self, channel_weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``H`` (p x p) and ``h`` (p,) of the data term in ``theta = [phi; beta]``."""
        ne_r = self.stats_reduced.normal_equations(self.with_bias, channel_weights)
        ne_f = self.stats_full.normal_equations(self.with_bias, channel_weights)
        return ne_r.A + ne_f.A, ne_r.c + ne_f.c

    def _solve_qp(self, H: np.ndarray, h: np.ndarray, m_bar: float) -> np.ndarray:
        """Solve the lifted QP (:mod:`~payload_estimator.core.estimators.qp`); returns ``x = [u; beta]``."""
        result = self._qp.solve(H, h, m_bar, self.regularization)
        self.last_solve_status = result.status
        self.last_solve_iterations = result.iterations
        return result.x

    def _solve(self) -> Solution:
        weights = self._fixed_weights if self._fixed_weights is not None else self._weights
        if weights is None:
            weights = self._initial_weights()
        H, h = self._objective(weights)
        m_bar = self._mass_scale(H, h) / self.n_points
        x = self._solve_qp(H, h, m_bar)
        if self.auto_weights:
            # Re-weight each channel by the residual variance at this solution (one pass).
            new_weights = 1.0 / self._residual_variances(x, m_bar)
            if self._weights is None or not np.allclose(new_weights, weights, rtol=0.2):
                H, h = self._objective(new_weights)
                m_bar = self._mass_scale(H, h) / self.n_points
                x = self._solve_qp(H, h, m_bar)
            self._weights = new_weights
        n = self.n_points
        u = np.clip(x[:n], 0.0, None)
        self.masses = u * m_bar
        phi = self.P @ self.masses
        beta = x[n:] if self.with_bias else None
        theta = phi if beta is None else np.r_[phi, beta]
        var = self._residual_variances(theta, None)
        G_r = self.stats_reduced.channel_gram(self.with_bias)
        G_f = self.stats_full.channel_gram(self.with_bias)
        information = np.tensordot(1.0 / var, G_r + G_f, axes=1)
        return Solution(
            theta=theta,
            information=information,
            covariance=self._posterior_covariance(information, u, m_bar),
            residual_ss=self.stats_reduced.channel_residuals(theta, self.with_bias)
            + self.stats_full.channel_residuals(theta, self.with_bias),
            weight_sum=self.stats_reduced.weight_sum + self.stats_full.weight_sum,
            normal_matrix=H,
            extras={"points_in_sensor": self.points, "point_masses": self.masses.copy()},
        )

    def _initial_weights(self) -> np.ndarray:
        """Before any residual is known: torques count as forces at a 0.1 m lever arm."""
        return np.array([1.0, 1.0, 1.0, 100.0, 100.0, 100.0])

    def _residual_variances(self, x: np.ndarray, m_bar: float | None) -> np.ndarray:
        """(6,) residual variance per channel of Problem 1 at ``x``."""
        n = self.n_points
        if m_bar is not None:  # x = [u; beta]
            theta = self.P @ (np.clip(x[:n], 0.0, None) * m_bar)
            if self.with_bias:
                theta = np.r_[theta, x[n:]]
        else:
            theta = x
        combined = RegressorStatistics()
        combined += self.stats_reduced
        combined += self.stats_full
        return channel_variances(combined, theta, self.with_bias)

    def _posterior_covariance(
        self, information: np.ndarray, u: np.ndarray, m_bar: float
    ) -> np.ndarray | None:
        """Covariance of ``phi`` under the Gaussian reading of Problem 1.

        With whitened residuals the objective is ``-2 log`` of a posterior whose
        prior on the free point masses has precision ``kappa = lambda / m_bar²``.
        Masses at their bound are held fixed. By the push-through identity the
        10 x 10 covariance ``P_F (kappa I + P_F^T H P_F)^-1 P_F^T`` equals
        ``R (kappa I + R^T H R)^-1 R^T`` with ``G = P_F P_F^T = R R^T``: no n x n
        inverse. The middle matrix is symmetric with eigenvalues of at least
        ``kappa``, which its inverse enforces: the covariance stays finite however
        large the information (zero residuals) and however few the points (a
        rank-deficient ``G``), where solving ``(kappa I + G H) C = G`` can meet a
        numerically singular matrix. The F/T offsets are marginalised through the
        Schur complement of ``H``.
        """
        if self.regularization <= 0.0:
            return None
        H = information
        if self.with_bias:
            Hpp, Hpb, Hbb = H[:N_PARAMS, :N_PARAMS], H[:N_PARAMS, N_PARAMS:], H[N_PARAMS:, N_PARAMS:]
            H = Hpp - Hpb @ pinv_psd(Hbb) @ Hpb.T
        free = u > 1e-9 * max(float(u.max()), 1e-300)
        if not np.any(free):
            return None
        P_F = self.P[:, free]
        lam_G, U = np.linalg.eigh(P_F @ P_F.T)
        R = U * np.sqrt(np.clip(lam_G, 0.0, None))
        kappa = self.regularization / (m_bar * m_bar)
        M = R.T @ H @ R
        lam, V = np.linalg.eigh(0.5 * (M + M.T))
        W = R @ V
        cov = (W / np.maximum(lam + kappa, kappa)) @ W.T
        return 0.5 * (cov + cov.T)
