"""Point-mass discretisation (PMD), Nadeau et al.'s Problem 1, over sufficient statistics.

Nadeau, Giamou and Kelly, "Fast Object Inertial Parameter Identification for
Collaborative Robots".

The payload is ``n`` point masses ``m_i >= 0`` at fixed positions ``p_i`` inside
its shape, so ``phi = P m`` with ``P`` (10 x n) built from the positions: every
estimate is a non-negative sum of point masses inside the shape, hence
physically consistent by construction. Their eq. (8) blends the reduced,
gravity-only model (eq. 6) and the full Newton-Euler model (eq. 3) sample by
sample with the dynamism weight of eq. (9), ``w = tanh(3 nu / c1)``.

We solve the squared form of Problem 1, a quadratic program:

    min_{m >= 0, beta}  sum_j (1 - w_j)² |Y~_j P m + beta - b_j|²_C
                      + sum_j  w_j²     |Y_j  P m + beta - b_j|²_C
                      + lambda sum_g sum_{i in g} c_i (u_i - v_g)²
                      + mu sum_g c_g (v_g - w)²

with ``|r|²_C = sum_k c_k r_k²`` a per-channel weighting (by default the inverse
noise variance of each wrench channel *as measured*: the wrench's own noise plus the
accelerations' through the regressor, or what unconstrained least squares leaves where
that is more; or uniform as in Nadeau et al.; the reduced model's rows count for less where they fit
worse than the full model's, :meth:`PointMassDiscretization._reduced_share`), ``beta`` the optional F/T
offsets and ``m_bar`` the
mean point mass of a uniform body of the mass ``m_ls`` that unconstrained least
squares gives on the same data (it sets units only). ``c_i`` is the share of the
volume point ``i`` stands for (mean 1) and ``u_i = m_i / (c_i m_bar)`` its density
relative to that body's; ``v_g`` and ``w`` are free levels (at the optimum, the
volume-weighted mean density of group ``g`` and of all groups). The points fall into
density groups ``g`` of volume share ``c_g = sum_{i in g} c_i``: the parts of a shape
made of parts (a steel head, a wooden handle: one unknown density each) or the
primitives of the shape division (:class:`PrimitiveDivision`, Xu et al.); one group
when nothing says otherwise. The volume weights make the regulariser ``n`` times a
discretisation of ``int (rho - rho_g)² dV / V``: where the points are dense weighs no
more than where they are sparse (see :data:`VOLUME_WEIGHTED_PRIOR`; within a declared
part, whose points share its volume equally, they are 1). Nadeau et al.'s regulariser ``lambda |m|`` encourages
homogeneity but also shrinks the total mass towards zero; centring it on the
uniform body of the least-squares mass would keep the homogeneity but still
pull the mass towards a noisy number and, on a non-uniform tool, pull density
from the dense part into the light one. Here the regulariser spreads mass
evenly *within* each group, and only weakly (``mu`` = ``part_coupling`` x
``lambda``) across groups; it never pulls the total mass, which the data alone
determine (on workshop tools this keeps PMD's mass error at or below WLS's,
where centring on the least-squares body gave 7x WLS's). ``lambda`` is unitless.

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

import time
from typing import Any

import numpy as np

from payload_estimator.core.estimators.base import (
    AUTO,
    ChannelWeighting,
    Estimator,
    Solution,
    channel_variances,
    compensate_regressor_noise,
    correlation_factors,
    pinv_psd,
    scaled_eigh,
    solve_psd,
)
from payload_estimator.core.estimators.linear_algebra import eigh
from payload_estimator.core.estimators.pmd_points import (
    PointSet,
    carried_densities,
    density_parts,
    point_mass_matrix,
    point_set,
)
from payload_estimator.core.estimators.qp import LiftedPointMassQP
from payload_estimator.core.estimators.rating import anchor_to_data, anchored_covariance, data_covariance
from payload_estimator.core.estimators.uncertainty import (
    drift_covariance,
    summed_noise_level_covariance,
    summed_sandwich,
    summed_sandwich_information,
)
from payload_estimator.core.point_masses import SampledShape
from payload_estimator.core.regressor import (
    N_BIAS,
    N_PARAMS,
    regressor_noise_gram,
    samples_features,
    whitened_rows,
)
from payload_estimator.core.samples import STANDARD_GRAVITY, SensorSamples
from payload_estimator.core.signal_noise import SignalNoise
from payload_estimator.core.statistics import KEPT_GROWTH, WRENCH_COLUMN, RegressorStatistics
from payload_estimator.errors import ConfigurationError

__all__ = [
    "PointMassDiscretization",
    "point_mass_matrix",
    "dynamism_weight",
    "density_parts",
    "C1_PAPER",
    "C1_DEFAULT",
    "DENSITY_SPREAD",
    "SHAPE_INERTIA_SPREAD",
    "VOLUME_WEIGHTED_PRIOR",
    "PART_COUPLING",
    "PART_STIFFNESS",
]

C1_DEFAULT = 1.0
"""``c1``, the one default everywhere (the estimator's, ``estimate``, ``demo``, ``replay``, the node).
Nadeau et al. trust the full model only in clearly dynamic samples because their Table II's noise
in the measured accelerations biases it (errors in variables). Every estimator here removes that bias
(:class:`~payload_estimator.core.estimators.base.KinematicNoise`), so the full model can be trusted
at low dynamism, and the gravity-only model, which is wrong whenever the payload accelerates, gets
little weight: on the simulated arms, c1 = 300 gave 0.6-4.4 % mass error and c1 = 3 0.07-0.7 %
(``benchmarks/end_to_end.py --c1``); on sensor-level Table II data c1 = 300 left the COM 2-5
standard deviations off and c1 = 3 within one (``benchmarks/coverage.py --c1``). The gravity-only
model's error is a bias that no amount of data removes while its rows keep their weight: on noise-free
MuJoCo data of eight hand tools (``benchmarks/real_objects.py``) it left PMD's inertia 1.3 % off at
c1 = 3 and 0.6 % at c1 = 1 (0.3 % at c1 = 0.03), with moderate and high noise c1 = 1 was as good or
slightly better, and the coverage and end-to-end benchmarks did not tell c1 = 1 from 3. Its rows are
now weighted down by their misfit (:meth:`PointMassDiscretization._reduced_share`): 0.1 % at c1 = 1
on the same noise-free data."""
C1_PAPER = 300.0
"""Nadeau et al.'s ``c1`` for their simulations (eq. 9), for comparing with their Table III.

``benchmarks/accuracy.py`` compares. On a real xArm with noisy kinematics they needed 5e3-25e3."""


VOLUME_WEIGHTED_PRIOR = True
"""The regulariser weighs each point's deviation from its group's density by the volume the point stands
for (``c_i``), so that it measures the deviation of the density over the volume, not over the points.
Counted point by point, a finely sampled region costs more to make denser than the same volume sampled
coarsely: a tool's thin parts (a blade, a shaft) are sampled most finely, and are often its densest (steel
on a plastic handle); a one-density cloud then explains the COM the data fix with a gradient of density
over the whole tool rather than a denser thin part, and misses the inertia. On eight hand tools of 2-4
materials with their own cloud as one material (``benchmarks/real_objects.py``), weighting by volume took
PMD's mean inertia error from 9.97 to 7.39 % at moderate noise and from 10.10 to 7.56 % at high noise (a
20 g needle file 18.9 -> 11.6 %, a screwdriver's steel shaft on a plastic handle 20.0 -> 9.9 %), mass and
COM as good or better; on eighteen workshop tools as one material (``benchmarks/tools.py``, 3 seeds) from
13.1 to 10.6 %. On an evenly spaced cloud (a bounding box, a file of equal volumes) and within a declared
part it changes nothing. The price: noise-free, slow motion of a 20 g file as one material leaves its
long-axis moment 3.1 % off where counting points left 2.0 % (``test_pmd_convergence.py``).
False counts every point alike (for comparison)."""
SHAPE_INERTIA_SPREAD = 0.25
"""Relative std, in units of the uniform body's mean principal moment, of each inertia entry
about what the points can represent, in PMD's covariance."""
PART_STIFFNESS = 10.0
"""Within a part of a shape made of parts (one material, declared so by the user), the regulariser
is this much stiffer than within a plain envelope: on the workshop tools (``benchmarks/tools.py``)
it took PMD's inertia error from 8.5 to 6.0 % at moderate noise (7.1 % at high) with the mass as
good as least squares', where the same stiffness on a single envelope or a bounding box, which
real tools do not fill uniformly, costs mass and COM accuracy."""
PART_COUPLING = 0.01
"""``mu / lambda``: how weakly PMD prefers equal density across density groups."""
RELATIVE_VARIANCE_FLOOR = 1e-6
"""A channel's noise variance counts as at least this share of the largest one's (a channel measured
noise-free cannot take all the weight)."""
SIGNAL_VARIANCE_FLOOR = 1e-12
"""... and as at least this share of the largest mean square of its kind (forces, torques; a torque's at least a
force's times (1 m)²): noise-free data keep finite weights, and the prior's pull, relative to the data's, about
this small (on noise-free workshop tools after 1000 samples, 1e-6 left up to 1.7 % inertia error with the
tools' own clouds, 1e-12 at most 0.8 %)."""
DENSITY_SPREAD = 1.0
"""Relative std of the density of each eighth of the shape in PMD's covariance (the prior a
real, non-uniform object needs: a steel head on a wooden handle is ~5x the mean density, a
handle ~0.3x; see :meth:`PointMassDiscretization._posterior_covariance`)."""


def dynamism_weight(nu: np.ndarray, c1: float) -> np.ndarray:
    """Nadeau et al.'s eq. (9): ``w = tanh(3 nu / c1)``, the share of the full model."""
    return np.tanh(3.0 * np.asarray(nu, dtype=float) / c1)


class PointMassDiscretization(Estimator):
    """PMD estimator (Nadeau et al.).

    Args:
        points_in_sensor: (n, 3) point-mass positions in the sensor frame, m
            (see :func:`payload_estimator.core.shapes.sample_points`).
        c1: dynamism scale of eq. (9); see :data:`C1_DEFAULT` (the default) and
            :data:`C1_PAPER`.
        regularization: ``lambda``, weight of each group's spread of point masses about
            its mean, in units of ``m_bar``, relative to the channel-weighted squared
            residuals (Nadeau et al.'s 0.1 belongs to their unsquared, unweighted objective;
            1.0 is our benchmarked default).
        part_labels: (n,) density group of each point (a shape's parts, see
            :func:`~payload_estimator.core.shapes.sample_parts`), or None for one group.
        point_volumes: (n,) volume each point stands for (any unit; None: equal), so that
            equal ``u`` means equal density where the points are not evenly spaced (a thin
            part sampled more finely than the rest);
            :func:`~payload_estimator.core.shapes.sample_parts` gives them.
        own_inertia: (n, 6) inertia per kg each point carries about itself, m² (None: bare
            points); see :func:`point_mass_matrix`.
        part_coupling: ``mu / lambda``, the weak preference for equal density across
            groups (it picks the most uniform of the solutions the data cannot tell apart).
        channel_std: ``"auto"`` (weight each channel by the inverse of its measured noise
            variance, :meth:`_noise_weights`: never by the residuals of PMD's own fit, whose
            misfit the prior causes), None (uniform weights, as in Nadeau et al.) or (6,) known
            stds (N, N·m).
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
            in ``benchmarks/accuracy.py``); False is Nadeau et al.'s eq. (6) exactly.
        kinematic_noise: noise of the measured accelerations, compensated in the data
            term (:class:`~payload_estimator.core.estimators.base.KinematicNoise`):
            ``"auto"`` (default), None or ``(lin_acc_std, ang_acc_std)``.
        iteration_budget: OSQP iterations one estimate may spend on its solve (0: no
            budget). A warm-started re-solve needs a few dozen; the first solves, or a sudden change of
            the data, may need hundreds: with a budget those continue over the next estimates from where
            it stopped them, while each keeps the last estimate that converged (the stream sets
            ``solve_iteration_budget``; ``benchmarks/speed.py`` measures the latency it bounds).
        time_budget_s: wall time the solves of one estimate may take, s (0: no budget): the bound that
            holds on a slower or busier machine; reached, it acts as the iteration budget does. Without
            a budget, each solve stops at OSQP's own limits
            (:data:`~payload_estimator.core.estimators.qp.MAX_ITERATIONS`, ``TIME_LIMIT_S``).

    Attributes:
        budget_reached: estimates whose solve stopped at its budget or limit (they kept the last
            estimate that converged, or, before any, the solver's iterate).
    """

    name = "pmd"
    summary = "point-mass discretisation, physically consistent QP (Nadeau et al.)"
    needs_points = True
    has_prior = True
    settings_options = {**Estimator.settings_options, "c1": "c1", "regularization": "regularization",
                        "iteration_budget": "solve_iteration_budget", "time_budget_s": "solve_time_budget_s"}

    def __init__(
        self,
        points_in_sensor: np.ndarray,
        *,
        c1: float = C1_DEFAULT,
        regularization: float = 1.0,
        part_labels: np.ndarray | None = None,
        point_volumes: np.ndarray | None = None,
        own_inertia: np.ndarray | None = None,
        part_coupling: float = PART_COUPLING,
        channel_std: str | np.ndarray | None = AUTO,
        dynamism_scales: tuple[float, float, float] = (1.0, 1.0, 0.5),
        bias: bool = False,
        solver: str = "osqp",
        solver_options: dict | None = None,
        reduced_with_linear_acceleration: bool = True,
        kinematic_noise: Any = AUTO,
        offset_window_s: float = 0.0,
        iteration_budget: int = 0,
        time_budget_s: float = 0.0,
    ) -> None:
        super().__init__(bias=bias, kinematic_noise=kinematic_noise, offset_window_s=offset_window_s)
        if not (iteration_budget >= 0 and time_budget_s >= 0.0):
            raise ConfigurationError("iteration_budget and time_budget_s must be zero (no budget) or positive, got "
                                     f"{iteration_budget!r} and {time_budget_s!r}")
        self.iteration_budget = int(iteration_budget)
        self.time_budget_s = float(time_budget_s)
        self.budget_reached = 0
        self.reduced_with_linear_acceleration = bool(reduced_with_linear_acceleration)
        if c1 <= 0 or regularization < 0:
            raise ConfigurationError("c1 must be positive and regularization non-negative")
        if part_coupling < 0:
            raise ConfigurationError("part_coupling must be non-negative")
        self.c1 = float(c1)
        self.regularization = float(regularization)
        self.part_coupling = float(part_coupling)
        weighting = ChannelWeighting.parse(channel_std, allow_auto=True, who=self.name)
        self.auto_weights = weighting.auto
        self._fixed_weights = None if weighting.auto else (
            weighting.known if weighting.known is not None else np.ones(6))
        self.dynamism_scales = tuple(float(s) for s in dynamism_scales)
        self.stats_reduced = self._new_statistics()
        self.stats_full = self._new_statistics()
        self._force_norm_sum = 0.0
        self._gravity_norm_sum = 0.0
        self._force_noise = SignalNoise()
        self._torque_noise = SignalNoise()
        self._combined: RegressorStatistics | None = None
        self._combined_stale = False
        self._take_points(point_set(points_in_sensor, part_labels, point_volumes, own_inertia), solver,
                          solver_options)
        self._qp.prepare()

    def _take_points(self, points: PointSet, solver: str, solver_options: dict | None) -> None:
        """Solve with these point masses from the next estimate on, as if they had been there from the start."""
        self.points = points.points
        self.P = points.P
        self.cell_share = points.cell_share
        """(n,) each point's share of the volume, relative to the mean: ``u = 1`` everywhere is uniform density."""
        self.P_cells = self.P * self.cell_share
        """(10, n) ``phi`` of each point per unit ``u`` (``m_i = u_i cell_share_i m_bar``)."""
        self.part_labels = points.part_labels
        has_parts = self.part_labels is not None and int(self.part_labels.max()) > 0
        self.within_regularization = self.regularization * (PART_STIFFNESS if has_parts else 1.0)
        """``lambda`` within a density group: :data:`PART_STIFFNESS` times ``regularization`` in a user's part."""
        self._parts = self._density_units()
        self._qp = LiftedPointMassQP(
            self.P_cells, N_BIAS if self.with_bias else 0, solver=solver, settings=solver_options,
            groups=self.part_labels, point_weights=self._prior_volumes()
        )
        self._weights: np.ndarray | None = None
        """The channel weights of the last solve."""
        self._weights_key: int | None = None
        """The samples held when :attr:`_weights` were measured."""
        self._phi_prev: np.ndarray | None = None
        """The last estimate's ``phi``: where the regressor's noise is evaluated for the next weights."""
        self.masses: np.ndarray = np.zeros(self.n_points)
        self.last_solve_status: str = "not solved"
        self.last_solve_iterations = 0
        self.last_solve_converged = False
        self._last_good: tuple[np.ndarray, np.ndarray] | None = None
        """The point masses (kg) and offsets of the last estimate whose solve converged."""
        self._fit: tuple[np.ndarray, np.ndarray] | None = None
        """The last solve's channel weights and unconstrained least-squares fit (for the model fit)."""
        self._x_ls = np.zeros(N_PARAMS + (N_BIAS if self.with_bias else 0))
        """Least squares on the last data term :meth:`_mass_scale` saw."""
        self._terms: list[tuple[RegressorStatistics, np.ndarray, np.ndarray]] = []
        self.reduced_weights = np.ones(6)
        """The reduced model's channel weights in the last data term (:meth:`_reduced_share`)."""

    def replace_points(self, shape: SampledShape) -> None:
        """Solve with the point masses of ``shape`` from the next estimate on, every sample kept.

        For a new cloud of the payload mid-run: the estimator's statistics are the samples', whatever the
        points, so the next estimate is the one a PMD built with ``shape`` and fed the same samples would give
        (what earlier solves measured goes: the channel weights are measured anew, the statistics' analyses
        redone). Its solve starts from this one's answer carried over to the new points
        (:func:`~.pmd_points.carried_densities`): the support it gives is tried exactly, OSQP set up only if
        it fails. Raises ``ValueError`` (the points kept) when ``shape`` does not fit (:func:`~.pmd_points.point_set`).
        """
        points = point_set(shape.points_in_sensor, shape.part, shape.volume, shape.own_inertia)
        old_qp, old = self._qp, PointSet(self.points, self.P, self.cell_share, self.part_labels)
        start = old_qp.last_solution()
        self._take_points(points, old_qp.solver, {**old_qp.settings, "refine": old_qp.refine})
        for stats in self._statistics():
            stats.forget_analyses()
        self._combined = None
        if start is not None:
            u, beta, mass = start
            self._qp.seed(carried_densities(old, u, points), beta, mass)

    def _prior_volumes(self) -> np.ndarray:
        """(n,) ``c_i``, each point's weight in the regulariser (:data:`VOLUME_WEIGHTED_PRIOR`).

        Relative to the mean of its part: a declared part keeps the prior it was tuned with
        (:data:`PART_STIFFNESS`; weighted across parts too, the workshop tools' inertia error with their
        parts went from 2.87 to 3.44 %, ``benchmarks/tools.py``)."""
        if not VOLUME_WEIGHTED_PRIOR:
            return np.ones(self.n_points)
        if self.part_labels is None:
            return self.cell_share
        mean = np.bincount(self.part_labels, self.cell_share) / np.bincount(self.part_labels)
        return self.cell_share / mean[self.part_labels]

    @property
    def n_points(self) -> int:
        """Number of point masses."""
        return self.points.shape[0]

    def _density_units(self) -> list[np.ndarray]:
        """Return the point sets whose density the covariance's prior lets vary together.

        The shape's parts when it has several (each of one material), else the eighths of the
        cloud."""
        if self.part_labels is not None and self.part_labels.max() > 0:
            return [np.flatnonzero(self.part_labels == g) for g in range(int(self.part_labels.max()) + 1)]
        return density_parts(self.points)

    # ------------------------------------------------------------------ intake
    def _accumulate(self, samples: SensorSamples) -> None:
        n1, n2, n3 = self.dynamism_scales
        w = dynamism_weight(samples.dynamism(n1, n2, n3), self.c1)
        apparent = samples.gravity_in_sensor
        if self.reduced_with_linear_acceleration:
            apparent = apparent - samples.lin_acc_in_sensor
        Y_reduced, wrench, reduced = whitened_rows(samples, samples_features(samples, apparent_gravity=apparent))
        self.stats_reduced.add(Y_reduced, wrench, (1.0 - w) ** 2, t=samples.t, features=reduced)
        Y, wrench, features = whitened_rows(samples, samples_features(samples))
        self.stats_full.add(Y, wrench, w**2, t=samples.t, features=features)
        self._combined_stale = True
        self._force_norm_sum += float(np.linalg.norm(samples.wrench_in_sensor[:, :3], axis=1).sum())
        self._gravity_norm_sum += float(np.linalg.norm(samples.gravity_in_sensor, axis=1).sum())
        if self.auto_weights:
            self._force_noise.update(samples.wrench_in_sensor[:, :3])
            self._torque_noise.update(samples.wrench_in_sensor[:, 3:])

    def _statistics(self) -> list[RegressorStatistics]:
        return [self.stats_reduced, self.stats_full]

    def _reset(self) -> None:
        self.stats_reduced.reset()
        self.stats_full.reset()
        self._combined = None
        self._force_norm_sum = 0.0
        self._gravity_norm_sum = 0.0
        self._qp.reset()
        self._force_noise.reset()
        self._torque_noise.reset()
        self._weights = None
        self._weights_key = None
        self._phi_prev = None
        self.masses = np.zeros(self.n_points)
        self.last_solve_status = "not solved"
        self._fit = None
        self._last_good = None

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
        self._x_ls = x
        if np.isfinite(x[0]) and rough / 3.0 < x[0] < 3.0 * rough:
            return float(x[0])
        return rough

    def _data_terms(self, channel_weights: np.ndarray) -> list[tuple[RegressorStatistics, np.ndarray, np.ndarray]]:
        """Return ``(statistics, A, c)`` of the reduced and the full model's data terms.

        Each ``A`` is compensated for the noise in its regressor (the reduced model's ``g - a``
        carries the ``a`` noise only, and none with Nadeau et al.'s ``g``). The reduced model's rows
        are weighted by the inverse of their own error (:meth:`_reduced_share`), kept in
        :attr:`reduced_weights`."""
        full = self._data_term(self.stats_full, False, channel_weights)
        reduced = self._data_term(self.stats_reduced, True, channel_weights)
        share = self._reduced_share(channel_weights, reduced, full)
        if share != 1.0:
            # the data term is linear in the channel weights, its noise compensation too (scale-invariant
            # in the metric of A): the reduced model's term at weights * share is share times this one
            reduced = (reduced[0], share * reduced[1], share * reduced[2])
        self.reduced_weights = channel_weights * share
        return [reduced, full]

    def _data_term(self, stats: RegressorStatistics, reduced: bool,
                   channel_weights: np.ndarray) -> tuple[RegressorStatistics, np.ndarray, np.ndarray]:
        """``(statistics, A, c)`` of one model's data term with these channel weights."""
        ne = stats.normal_equations(self.with_bias, channel_weights)
        A = ne.A
        if not reduced or self.reduced_with_linear_acceleration:
            noise = self.kinematic_noise.gram(stats, self.with_bias, reduced=reduced)
            if noise is not None:
                A = compensate_regressor_noise(A, np.tensordot(channel_weights, noise, axes=1))
        return stats, A, ne.c

    def _reduced_share(self, channel_weights: np.ndarray, reduced: tuple[RegressorStatistics, np.ndarray, np.ndarray],
                       full: tuple[RegressorStatistics, np.ndarray, np.ndarray]) -> float:
        """Return the share (<= 1) of ``channel_weights`` the reduced model's rows get: less where they fit worse.

        ``channel_weights`` are the inverse of each channel's noise variance. The reduced (gravity-only)
        model's rows err by that noise plus what the model leaves out (the payload's rotation: ``w x (w x c)``,
        ``alpha x c``, ``I alpha``, ``w x I w``), which the dynamism weight makes small but never zero: a bias
        no amount of data removes. At the unconstrained least-squares fit of both models (the prior plays no
        part), the mean square residual per unit of sample weight, in the channels' noise units, of the
        reduced model's rows over the full model's measures it; where it is more than one, the reduced
        model's rows count for that much less (one factor for all channels, which keep their balance). On
        noisy data that is little (the residuals are mostly noise); on exact data the reduced model's rows
        hardly count, and PMD converges to the truth (noise-free hand tools with their own clouds: 0.60 % mean
        inertia error, 1.97 % on a 20 g file, against 0.10 % and 0.42 % weighted so;
        ``benchmarks/real_objects.py``)."""
        (stats_r, A_r, c_r), (stats_f, A_f, c_f) = reduced, full
        if not (stats_r.weight_sum > 0.0 and stats_f.weight_sum > 0.0):
            return 1.0
        x, _ = solve_psd(A_r + A_f, c_r + c_f)
        # mean squares per unit of sample weight (the fit's few unknowns are shared by both models)
        error_r = np.clip(stats_r.channel_residuals(x, self.with_bias), 0.0, None) / stats_r.weight_sum
        error_f = np.clip(stats_f.channel_residuals(x, self.with_bias), 0.0, None) / stats_f.weight_sum
        if not (np.all(np.isfinite(error_r)) and np.all(np.isfinite(error_f))):
            return 1.0
        # in the channels' noise units: one share for the whole model, whose channels keep their balance
        misfit_r, misfit_f = float(channel_weights @ error_r), float(channel_weights @ error_f)
        return misfit_f / misfit_r if misfit_r > misfit_f else 1.0

    def _objective(self, channel_weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``H`` (p x p) and ``h`` (p,) of the data term in ``theta = [phi; beta]``."""
        terms = self._data_terms(channel_weights)
        self._terms = terms  # the last objective's terms: the covariance reads them
        return terms[0][1] + terms[1][1], terms[0][2] + terms[1][2]

    def _solve_qp(self, H: np.ndarray, h: np.ndarray, m_bar: float, budget: list[float]) -> np.ndarray:
        """Solve the lifted QP (:mod:`~payload_estimator.core.estimators.qp`); returns ``x = [u; beta]``.

        ``budget`` ``[iterations, seconds]`` left for this estimate's solves; what the solve spends is
        taken off it."""
        t0 = time.perf_counter()
        result = self._qp.solve(H, h, m_bar, self.within_regularization, self.part_coupling * self.regularization,
                                max_iter=None if budget[0] == np.inf else int(budget[0]),
                                time_limit=None if budget[1] == np.inf else max(budget[1], 0.0))
        budget[0] -= result.iterations
        budget[1] -= time.perf_counter() - t0
        self.last_solve_status = result.status
        self.last_solve_iterations += result.iterations
        self.last_solve_converged = result.converged
        return result.x

    def _solve(self) -> Solution:
        if self._fixed_weights is not None:
            weights = self._fixed_weights
        else:
            # measured again once the samples grew by more than KEPT_GROWTH: solves on the same data (the
            # division's) and the estimates of the next few turns share them
            n = self.stats_full.n_samples + self.stats_reduced.n_samples
            n0 = self._weights_key
            if self._weights is None or n0 is None or not n0 <= n <= (1.0 + KEPT_GROWTH) * n0 or n == 0:
                self._weights, self._weights_key = self._noise_weights(), n
            weights = self._weights
        self._weights = weights
        budget = [float(self.iteration_budget or np.inf), self.time_budget_s or np.inf]  # 0: none
        self.last_solve_iterations = 0
        H, h = self._objective(weights)
        m_bar = self._mass_scale(H, h) / self.n_points
        x = self._solve_qp(H, h, m_bar, budget)
        n = self.n_points
        good: tuple[np.ndarray, np.ndarray] | None = (
            (np.clip(x[:n], 0.0, None) * self.cell_share * m_bar, x[n:]) if self.last_solve_converged else None)
        if good is not None:
            self._last_good = good
        else:
            self.budget_reached += 1  # the solve stopped at its budget (or failed)
            # the last estimate that converged, or before any the solver's iterate
            good = self._last_good
            if good is None:
                good = (np.clip(x[:n], 0.0, None) * self.cell_share * m_bar, x[n:])
        masses, offsets = good
        u = masses / (self.cell_share * m_bar)
        self.masses = masses.copy()
        phi = self.P @ self.masses
        constrained = phi if not self.with_bias else np.r_[phi, offsets]
        information = self._information(constrained, weights)
        # A shape that cannot hold the payload leaves residuals that inflate the information's noise at its own
        # estimate, hiding the very misfit: the anchor is judged at the fit the prior does not touch (for a shape
        # that holds the payload the two are one analysis, kept).
        reference = self._data_covariance(H, weights)
        anchored = anchor_to_data(constrained, self._x_ls, reference)
        theta = constrained
        if anchored is not None:
            theta, information = anchored, self._information(anchored, weights)
        self._phi_prev = theta[:N_PARAMS]
        self._fit = (weights, self._x_ls)
        covariance = self._posterior_covariance(information, u, m_bar)
        if covariance is not None:
            covariance = covariance + self._prior_bias(theta, information, self._x_ls)
            # A drifting offset shifts mass and first moment as it would shift least squares (the data
            # hold them); the inertia, which the prior holds where the data do not, it shifts less.
            combined = self._combined_stats()
            tau = correlation_factors(combined, theta, self.with_bias, weights)
            drift = drift_covariance(combined, theta, self.with_bias, weights, H, tau)
            covariance[:4, :4] += drift[:4, :4]
        if anchored is not None:  # its mass and first moment are the data's, and so is their uncertainty
            covariance = anchored_covariance(covariance, reference)
        return Solution(
            theta=theta,
            information=information,
            covariance=covariance,
            constrained=None if anchored is None else constrained,
            reference_covariance=reference,
            residual_ss=self.stats_reduced.channel_residuals(theta, self.with_bias)
            + self.stats_full.channel_residuals(theta, self.with_bias),
            weight_sum=self.stats_reduced.weight_sum + self.stats_full.weight_sum,
            normal_matrix=H,
            extras={"points_in_sensor": self.points, "point_masses": self.masses.copy(),
                    "qp_iterations": np.array(self.last_solve_iterations),
                    "qp_budget_reached": np.array(self.budget_reached)},
        )

    def _information(self, theta: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """The data's information about ``theta``, as least squares with these weights would have it.

        The sandwich (correlated channels and samples, noisy regressor) of the last objective's terms, whose
        rows are the same samples: their scores summed, never their informations
        (:func:`~.uncertainty.summed_sandwich_information`)."""
        (stats_r, A_r, _), (stats_f, A_f, _) = self._terms
        return summed_sandwich_information([(stats_r, self.reduced_weights), (stats_f, weights)], theta,
                                           self.with_bias, A_r + A_f)

    def _data_covariance(self, H: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The covariance of the unconstrained fit (:func:`~.rating.data_covariance`'s triple), as least squares has it.

        The sandwich of that fit's one solve of both models' terms (:func:`~.uncertainty.summed_sandwich`, ``H``
        the compensated data term it solves), and what the measured accelerations' noise level's own error adds
        through the compensation of the regressor's noise (both models' terms of a signal move together): on a
        short, slow run the latter is most of the first moment's uncertainty."""
        (stats_r, _, _), (stats_f, _, _) = self._terms
        cov = summed_sandwich([(stats_r, self.reduced_weights), (stats_f, weights)], self._x_ls, self.with_bias, H)
        noise = [(cw, self.kinematic_noise.terms(stats, self.with_bias, reduced))
                 for (stats, _, _), cw, reduced in zip(self._terms, (self.reduced_weights, weights), (True, False))
                 if self.reduced_with_linear_acceleration or not reduced]
        cov = cov + summed_noise_level_covariance(H, self._x_ls, noise)
        # over what the data see (the normal matrix's, as data_covariance has it): a direction they hardly see (mass
        # and offsets at one pose) is unseen, not a variance at the pseudo-inverse's cutoff
        _, null, d = data_covariance(H)
        cov = cov[:N_PARAMS, :N_PARAMS] * np.outer(d, d)
        if null.shape[1]:
            keep = np.eye(N_PARAMS) - null @ null.T
            cov = keep @ cov @ keep
        return cov / np.outer(d, d), null, d

    def _fit_inputs(
        self,
    ) -> tuple[RegressorStatistics | None, np.ndarray | None, np.ndarray | None]:
        if self._fit is None:
            return None, None, None
        return self._combined_stats(), self._fit[0], self._fit[1]

    def wrench_noise_std(self) -> np.ndarray | None:
        """Return the (6,) noise std of ``[fx, fy, fz, tx, ty, tz]`` measured from the wrench (N, N·m).

        Forces and torques pooled apart (:class:`~payload_estimator.core.signal_noise.SignalNoise`);
        None until it can be measured."""
        force, torque = self._force_noise.std(), self._torque_noise.std()
        if not (np.isfinite(force) and np.isfinite(torque)):
            return None
        return np.r_[np.full(3, force), np.full(3, torque)]

    def channel_noise_variance(self, phi: np.ndarray | None = None) -> np.ndarray | None:
        """Return the (6,) equation-error variance the measured noise predicts for each channel's rows at ``phi``.

        ``sigma_wk² + phi^T G_k phi``: the wrench's noise plus the accelerations' noise through the
        regressor (:func:`~payload_estimator.core.regressor.regressor_noise_gram`), as for
        :class:`~payload_estimator.core.estimators.rtls.RecursiveTotalLeastSquares`; None until the wrench
        noise is measured."""
        sigma_w = self.wrench_noise_std()
        if sigma_w is None:
            return None
        var = sigma_w**2
        std = self.kinematic_noise.std()
        if phi is not None and std is not None:
            var = var + np.einsum("i,kij,j->k", phi, regressor_noise_gram(std[0], std[1]), phi)
        return var

    def _noise_weights(self) -> np.ndarray:
        """Return the (6,) channel weights: the inverse of each channel's noise variance, as measured.

        From the measured wrench and acceleration noise at the last estimate (:meth:`channel_noise_variance`),
        never from the residuals of PMD's own fit: those hold the misfit the prior causes, and weights
        read from them would let the prior keep it however much data come (a fixed point short of
        the truth). With the data weighted by their noise, the data term grows with every sample
        while the prior stays, so its pull fades as informative data accumulate. Rows whitened by
        their own wrench information (joint torques) have unit noise. Before the noise can be
        measured (a few samples), the residuals of unconstrained least squares (which the prior
        does not touch) stand in."""
        if self.kinematic_noise.whitened:
            return np.ones(6)
        stats = self._combined_stats()
        mean_square = stats.gram[:, WRENCH_COLUMN, WRENCH_COLUMN] / max(stats.weight_sum, 1e-300)
        # forces and torques apart (N², N²·m²), a channel that reads zero as its group's largest does
        signal = float(np.max(mean_square)) if np.all(np.isfinite(mean_square)) else 0.0
        if not signal > 1e-100:  # nothing left to weigh (a frozen wrench, its offsets estimated)
            return np.ones(6)
        force_floor = SIGNAL_VARIANCE_FLOOR * max(float(mean_square[:3].max()), 1e-100)
        # a torque's floor at least a force's times (1 m)²: noise-free data at rest (mass and offsets one flat
        # valley) weighted 1e4 more in torques than in forces leave OSQP's answer anywhere along the valley
        torque_floor = max(SIGNAL_VARIANCE_FLOOR * float(mean_square[3:].max()), force_floor * 1.0)
        signal_floor = np.r_[np.full(3, force_floor), np.full(3, torque_floor)]

        def weights_of(var: np.ndarray) -> np.ndarray:
            var = np.where(np.isfinite(var), var, 0.0)
            floor = np.maximum(RELATIVE_VARIANCE_FLOOR * float(np.max(var)), signal_floor)
            return 1.0 / np.maximum(var, floor)

        phi = self._phi_prev
        modelled = self.channel_noise_variance()
        if phi is None and modelled is not None:
            # Before any estimate: the uniform body of the least-squares mass, whose inertia the
            # accelerations' noise multiplies (least squares' own inertia may be wild on slow motion).
            H, h = self._objective(weights_of(modelled))
            mass = self._mass_scale(H, h)
            phi = self.P_cells @ np.full(self.n_points, mass / float(self.cell_share.sum()))
        var = self.channel_noise_variance(phi)
        # What least squares leaves: the noise, plus what the noise model leaves out (gyro noise, noise
        # correlated across channels; on slow motion the modelled torque noise falls 2-3x short),
        # never a misfit of the prior's making (least squares has none).
        # Plain least squares (no errors-in-variables correction, which inflates the fit and its raw
        # residuals where the accelerations' noise is most of the data): the smallest residuals any
        # payload leaves.
        w0 = self._initial_weights() if var is None else weights_of(var)
        ne_reduced = self.stats_reduced.normal_equations(self.with_bias, w0)
        ne_full = self.stats_full.normal_equations(self.with_bias, w0)
        H, h = ne_reduced.A + ne_full.A, ne_reduced.c + ne_full.c
        x_ls, _ = solve_psd(H, h)
        residual = channel_variances(stats, x_ls, self.with_bias)
        return weights_of(residual if var is None else np.maximum(var, residual))

    def _initial_weights(self) -> np.ndarray:
        """Before any noise is known: torques count as forces at a 0.1 m lever arm."""
        return np.array([1.0, 1.0, 1.0, 100.0, 100.0, 100.0])

    def _combined_stats(self) -> RegressorStatistics:
        """Both models' statistics together (kept until the next sample: read several times a solve)."""
        if self._combined is None or self._combined_stale:
            combined = RegressorStatistics()
            combined += self.stats_reduced
            combined += self.stats_full
            if self._combined is not None:
                combined.carry_analysis(self._combined)
            self._combined, self._combined_stale = combined, False
        return self._combined

    def _inertia_scale(self, m_bar: float) -> float:
        """Mean principal moment (kg m²) of the points at the uniform mass ``m_bar`` each."""
        p = self.points - self.points.mean(axis=0)
        return float(m_bar * 2.0 * np.sum(p * p) / 3.0)

    def _prior_bias(self, theta: np.ndarray, information: np.ndarray, x_ls: np.ndarray) -> np.ndarray:
        """(10, 10) ``b b^T``: the pull of the prior on the estimate, as far as the data see it.

        The estimate is the QP's, whose point prior is narrower than the covariance's; where
        the data determine a direction, the unconstrained fit ``x_ls`` shows how far the prior
        pulled the estimate there. In the data's whitened coordinates ``z = C^-1/2 (theta - x_ls)``
        the noise of ``x_ls`` accounts for ``z_i² = 1`` on average; what exceeds it is bias:
        ``b = C^1/2 sign(z) sqrt(max(z² - 1, 0))`` (positive part, direction by direction).
        """
        d, lam, V, seen = scaled_eigh(information)
        V, lam = V[:, seen], lam[seen]
        z = (V.T @ ((theta - x_ls) * d)) * np.sqrt(lam)  # C = (D V lam V^T D)^-1 -> C^-1/2 = sqrt(lam) V^T D
        excess = np.where(np.abs(z) > 3.0, np.sign(z) * np.sqrt(np.clip(z * z - 1.0, 0.0, None)), 0.0)
        b = (V @ (excess / np.sqrt(lam))) / d
        return np.outer(b[:N_PARAMS], b[:N_PARAMS])

    def _posterior_covariance(
        self, information: np.ndarray, u: np.ndarray, m_bar: float
    ) -> np.ndarray | None:
        """Covariance of ``phi``: the Gaussian posterior of Problem 1, with an honest prior.

        With whitened residuals the objective is ``-2 log`` of a posterior whose prior
        gives each free point mass the std ``m_bar sqrt(c_i / lambda)`` (``c_i`` its share
        of the volume), independently. That
        prior suits the estimate (it spreads mass evenly) but not its uncertainty: real
        objects are not uniform point by point but part by part (a steel head on a
        wooden handle), and independent point deviations average out over hundreds of
        points, so the posterior it gives claims to know the inertia of an object whose
        density it never measured. The covariance therefore adds, to the point prior,
        a prior on the density of each eighth of the shape (:data:`DENSITY_SPREAD`
        relative std, the eighths split at the centroid along the points' principal
        axes): ``S0 = (m_bar² / lambda) P_F C_F^-1 P_F^T + sum_c q_c q_c^T`` (``P_F`` the free
        points' ``phi`` per unit density, ``C_F`` their volume shares), ``q_c`` the ``phi``
        of eighth ``c`` at its uniform mass, plus an independent spread of
        :data:`SHAPE_INERTIA_SPREAD` times the uniform body's mean principal moment on each
        inertia entry (what no arrangement of the points can show: the mass within each
        point's cell, the density within an eighth; without it the posterior of an object
        sampled by a few dozen points knows its products of inertia ten times better than
        the data do). Masses at their bound are held fixed in the
        point term. With ``S0 = R R^T`` (10 x r) the posterior covariance is
        ``R (I + R^T H R)^-1 R^T``: no n x n inverse, and finite however large the
        information. The F/T offsets are marginalised through the Schur complement of ``H``.
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
        P_F = self.P_cells[:, free] / np.sqrt(self._prior_volumes()[free])  # u_i's prior std: 1 / sqrt(lambda c_i)
        Q = m_bar * DENSITY_SPREAD * np.stack([self.P_cells[:, part].sum(axis=1) for part in self._parts], axis=1)
        S0 = (m_bar * m_bar / self.within_regularization) * (P_F @ P_F.T) + Q @ Q.T
        # What no arrangement of these points shows: the mass within each point's cell, and a
        # density that varies within the eighths. Each inertia entry gets its own spread.
        S0[4:, 4:] += np.eye(6) * (SHAPE_INERTIA_SPREAD * self._inertia_scale(m_bar)) ** 2
        lam_S, U = eigh(0.5 * (S0 + S0.T))
        R = U * np.sqrt(np.clip(lam_S, 0.0, None))
        M = R.T @ H @ R
        lam, V = eigh(0.5 * (M + M.T))
        W = R @ V
        cov = (W / np.maximum(lam + 1.0, 1.0)) @ W.T
        return 0.5 * (cov + cov.T)

