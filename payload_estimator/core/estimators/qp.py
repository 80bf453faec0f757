"""The lifted quadratic program of PMD, and the solvers that take it.

Problem (see :mod:`payload_estimator.core.estimators.pmd`)::

    min_{u >= 0, beta}  theta^T H theta - 2 h^T theta
                        + lambda sum_i c_i (u_i - v_g(i))² + mu sum_g c_g (v_g - w)²,
    theta = [T_u u; beta],  T_u = m_bar P  (10 x n)

The points fall into density groups ``g`` (the parts of the shape, or the primitives of
the division); ``c_i`` is the share of the volume point ``i`` stands for (mean 1; all 1 for
evenly spaced points) and ``c_g`` its group's sum, so each sum is a discretisation of an
integral over the volume, ``int (rho - rho_g)² dV``, whatever the spacing of the points.
``v_g`` (free) is the group's level and ``w`` (free) the common one, so minimising over them
makes the regulariser ``lambda`` times each group's spread about its own (volume-weighted) mean
plus ``mu`` times the spread of the groups' means about theirs:
uniform density within a part, a weak preference (``mu`` << ``lambda``) for equal density
across parts, and no pull at all on the total mass, which the data alone determine.
``H`` (p x p, p = 10 or 16) is PSD of rank <= p, so with ``H = L L^T`` and
``z = L^T theta`` the problem becomes

    min  |z|² + lambda sum_i (u_i - v_g(i))² + mu sum_g n_g (v_g - w)² - 2 (T^T h)^T x
    s.t. L^T T x - z = 0,   u >= 0,     x = [u; beta]

whose matrices have ``O(p n)`` non-zeros and a fixed sparsity pattern: OSQP factors its KKT
system once symbolically and, on each new solve, only refactors numerically, in time linear
in ``n``. Two ways to solve it:

* ``solver="osqp"`` (default): a persistent OSQP workspace, updated in place
  (``update(q, Px, Ax)``) and warm-started with the previous primal and dual
  solution. This is what makes a re-solve cost about a millisecond. OSQP's answer is
  then *refined*: on the support it found (the points with mass), the problem is an
  equality-constrained least squares that one dense solve answers exactly, accepted when
  it stays non-negative and lowers the objective (see :meth:`LiftedPointMassQP._refine`).
  First-order solvers stop at a tolerance that, for PMD, sits in the weakly determined
  inertia directions; the refinement removes that floor.
* any other name (``"osqp-qpsolvers"``, ``"clarabel"``, ``"proxqp"``,
  ``"highs"``...): the same matrices through ``qpsolvers.solve_problem``,
  warm-started with the previous primal solution, and refined the same way. qpsolvers
  builds a new solver instance on every call, so it is slower; it is there to cross-check
  OSQP and to let users pick another solver.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from payload_estimator.core.estimators.base import scaled_eigh
from payload_estimator.core.estimators.qp_support import SUPPORT_TOL, SupportProblem

if TYPE_CHECKING:
    import osqp

__all__ = ["LiftedPointMassQP", "QPResult"]

_EPS_FREE = 1e-8
"""Curvature of the free unknowns (the group levels, ``w``, the F/T offsets) of their own, relative to what
they already have (the regulariser's on the levels, the data's on the offsets): a fixed ``P`` pattern and no
flat direction, but no pull. An absolute one, in the solve's units, is not tiny on noise-free data: there the
data term's weights are ~1e12 and the normalised regulariser ~1e-11, so a fixed 1e-8 held the group levels at
zero hundreds of times harder than the points are tied to them, shrinking every part (a 20 g file's long-axis
inertia 9 % off where the exact optimum of the same problem is within 1.5 %)."""
_RANGE_TOL = 1e-12
MAX_ITERATIONS = 4000
TIME_LIMIT_S = 0.05
"""OSQP's bounds on one solve when the caller sets none (the estimator sets its own budget per
estimate). A solve that stops at either keeps its last iterate (non-negative masses, so still
physically consistent) and says so in its status; the next solve starts from it."""
EPS = 1e-5
"""OSQP's absolute and relative tolerance: it has only to find the support (which points carry
mass); :meth:`LiftedPointMassQP._refine` then solves exactly on it."""
REFINE_STEPS = 200
REFINE_STEPS_WITHIN_BUDGET = 8
"""Steps the refinement takes whatever the solve's time budget (each costs ``O(n p²)``, a quarter of a
millisecond with 1000 points); beyond them, only while the budget lasts (a recording's estimates have
none: every step). From the last answer's support a step or two suffice; a support far off (a robot at
rest, a flat direction) takes dozens, which a live estimate leaves to the next one."""
REFINE_MASS_SHIFT = 0.05
"""The refinement polishes what the data determine weakly (the inertia); it may not move the total of the
point masses by more than this share (of the reference body's mass at least: from nothing, an empty
gripper's, it may go to exactly nothing). Where the data leave a direction flat (a robot at rest with the F/T
offsets unknown: mass and offsets cannot be told apart), the exact solve on the support is at the mercy of
rounding and lands anywhere along it, where OSQP's answer stays near the regulariser's anchor."""
EXACT_ON_SUPPORT = "solved exactly on the last support"
"""The status of a solve that the last answer's support answered exactly (no OSQP iteration)."""
_SEED, _EXACT = "seed", "exact"
"""The states of a start given by :meth:`LiftedPointMassQP.seed`."""
MASS_ANCHOR = 1e-2
"""``lambda`` times this pulls the common level ``w`` towards 1 (the reference body's mass): nothing
where the data hold the mass, but a problem whose data cannot tell the mass from the F/T offsets
(the robot at rest with offsets unknown) stays strictly convex, at the reference mass, instead of
drifting along a flat valley for 20,000 iterations to a mass of 10^10 kg."""


@dataclass(frozen=True)
class QPResult:
    """A QP solution: ``x = [u; beta]``, the solver's status string, and whether it converged.

    When it did not converge, ``x`` is the last iterate if usable, else the previous solution."""

    x: np.ndarray
    status: str
    iterations: int
    converged: bool = True


def _coordinates(pattern: sp.csc_matrix) -> tuple[np.ndarray, np.ndarray]:
    """Row and column of each stored entry of a CSC pattern, in storage order."""
    cols = np.repeat(np.arange(pattern.shape[1]), np.diff(pattern.indptr))
    return pattern.indices, cols


class LiftedPointMassQP:
    """Solve PMD's QP repeatedly for one fixed set of points.

    Args:
        P_points: (10, n) unit-point-mass parameter matrix.
        n_bias: 0, or 6 when the F/T offsets are unknowns.
        solver: ``"osqp"`` for the persistent workspace, else a qpsolvers solver name
            (``"osqp-qpsolvers"`` means OSQP through qpsolvers).
        settings: solver settings (OSQP names for both OSQP paths), and ``refine`` (default True).
        groups: (n,) density group of each point (integers; None: one group).
        point_weights: (n,) ``c_i``, each point's weight in the regulariser: the share of the
            volume it stands for, relative to the mean (None: 1 each).
    """

    def __init__(
        self,
        P_points: np.ndarray,
        n_bias: int = 0,
        solver: str = "osqp",
        settings: dict | None = None,
        groups: np.ndarray | None = None,
        point_weights: np.ndarray | None = None,
    ) -> None:
        self.P_points = np.asarray(P_points, dtype=float)
        self.n = self.P_points.shape[1]
        weights = np.ones(self.n) if point_weights is None else np.asarray(point_weights, dtype=float)
        if weights.shape != (self.n,) or not np.all(np.isfinite(weights)) or np.any(weights <= 0.0):
            raise ValueError(f"point_weights must be one positive weight per point ({self.n})")
        self.point_weights = weights * (self.n / float(weights.sum())) if self.n else weights
        """(n,) ``c_i``, mean 1: each point's weight in the regulariser (the volume it stands for)."""
        self.nb = int(n_bias)
        self.p = self.P_points.shape[0] + self.nb
        self.solver = solver
        self.settings = {
            "eps_abs": EPS,
            "eps_rel": EPS,
            "polishing": True,
            # The problem is bounded by construction (strictly convex in every variable, the
            # linear term in the range of the data): a "dual infeasible" certificate could only
            # come from a direction of tiny curvature, so the test is made strict.
            "eps_dual_inf": 1e-12,
            "max_iter": MAX_ITERATIONS,
            "time_limit": TIME_LIMIT_S,
            "verbose": False,
            **(settings or {}),
        }
        self.refine = bool(self.settings.pop("refine", True))
        """Refine every solution on its support (:meth:`_refine`); ``solver_options={"refine": False}``
        leaves the solver's own answer (for comparison: ``benchmarks/tools.py --convergence``)."""
        self._workspace: osqp.OSQP | None = None
        self._limits: tuple[int, float] = (self.settings["max_iter"], self.settings["time_limit"])
        """The iteration and time limits the workspace holds."""
        self._cold = True
        """No solve since the workspace was set up or the warm start dropped."""
        self.last_solve_seconds = 0.0
        self._x: np.ndarray | None = None
        self._y: np.ndarray | None = None
        self._m_bar = 0.0
        self._support: np.ndarray | None = None
        """The points that carried mass at the last refined answer: where the next refinement starts
        (OSQP's tolerance leaves traces of mass on points the exact answer leaves empty; each would
        cost the active set one step to drop)."""
        self._start = ""
        """After a :meth:`seed`: ``_SEED`` (the next solve tries its support exactly), then ``_EXACT`` (every answer
        since was exact, no OSQP set up yet: the next solve tries the last support first too); else ""."""
        self.set_groups(groups)

    def set_groups(self, groups: np.ndarray | None) -> None:
        """Assign the points to density groups.

        This drops the workspace (the pattern changes); the warm start is kept for the points
        and offsets."""
        labels = np.zeros(self.n, dtype=int) if groups is None else np.asarray(groups)
        if labels.shape != (self.n,):
            raise ValueError(f"groups must have one label per point ({self.n}), got shape {labels.shape}")
        _, self.group_of = np.unique(labels, return_inverse=True)
        self.group_of = self.group_of.reshape(-1)
        self.n_groups = int(self.group_of.max()) + 1 if self.n else 0
        self.group_sizes = np.bincount(self.group_of, minlength=self.n_groups).astype(float)
        self._group_order = np.argsort(self.group_of, kind="stable")
        """The points group by group, each group's in ascending order (the pattern's order)."""
        self.group_weights = np.bincount(self.group_of, weights=self.point_weights, minlength=self.n_groups)
        """(G,) ``c_g``: each group's share of the volume, in units of the mean point's."""
        keep = None if self._x is None else self._x[: self.n + self.nb]
        self._workspace = None
        self._y = None
        self._x = None if keep is None else self._warm_start(keep)
        self._A_pattern = self._constraint_pattern()
        self._P_pattern = self._objective_pattern()
        self._P_coordinates = _coordinates(self._P_pattern)

    @property
    def n_variables(self) -> int:
        """Variables of the lifted QP: the point masses, the offsets, the group levels and ``w``, ``z``."""
        return self.n + self.nb + self.n_groups + 1 + self.p

    def reset(self) -> None:
        """Drop the warm start (the workspace, whose pattern stays, is kept: no new setup)."""
        self._x = self._y = None
        self._cold = True
        self._start = ""

    def last_solution(self) -> tuple[np.ndarray, np.ndarray, float] | None:
        """The last answer ``(u, beta, mass)``, what :meth:`seed` takes; None before any.

        ``u`` (n,) each point's density relative to a uniform body of ``mass`` kg, ``beta`` (nb,) the offsets."""
        if self._x is None or not self._m_bar > 0.0:
            return None
        return self._x[: self.n].copy(), self._x[self.n : self.n + self.nb].copy(), self._m_bar * self.n

    def seed(self, u: np.ndarray, beta: np.ndarray, mass: float) -> None:
        """Start the next solve from densities ``u`` (n,) relative to a uniform body of ``mass`` kg, offsets ``beta``.

        Say, another set of points' answer (:meth:`last_solution`) carried over to these. The next solve first
        tries the support they give exactly (:meth:`_exact_on_last_support`, its optimality conditions checked:
        then no OSQP set-up at all); else it solves as this QP would without a start (:meth:`_seeded_answer`)."""
        u = np.clip(np.asarray(u, dtype=float), 0.0, None)
        self._x = self._warm_start(np.r_[u, np.asarray(beta, dtype=float)])
        self._m_bar = float(mass) / max(self.n, 1)
        self._support = u > SUPPORT_TOL * max(float(u.max(initial=0.0)), 1e-300)
        self._y = None
        self._start = _SEED if self._support.any() else ""

    def prepare(self) -> None:
        """Set OSQP's workspace up now (the symbolic factorisation), so that no solve pays for it.

        The values are placeholders; every solve puts its own in place."""
        if self.solver != "osqp" or self._workspace is not None:
            return
        import osqp

        P = self._P_pattern.copy()
        P.data = self._objective_values(1.0, 0.0)
        A = self._A_pattern.copy()
        A.data = self._constraint_values(np.ones((self.p, self.n + self.nb)))
        l, u = self._bounds()
        ws = osqp.OSQP()
        ws.setup(P=P, q=np.zeros(self.n_variables), A=A, l=l, u=u, **self.settings)
        self._workspace = ws
        self._limits = (self.settings["max_iter"], self.settings["time_limit"])
        self._cold = True

    # ------------------------------------------------------------ matrices
    def _constraint_pattern(self) -> sp.csc_matrix:
        """Return the CSC pattern of ``[[L^T T, 0, -I], [I_u, 0, 0]]`` with placeholder values.

        Columns: u, beta, the group levels v and w, z."""
        n, nb, p = self.n, self.nb, self.p
        indices: list[np.ndarray] = []
        # u columns: p dense rows, then the row of their bound
        u_rows = np.concatenate([np.tile(np.arange(p), (n, 1)), (p + np.arange(n))[:, None]], axis=1)
        indices.append(u_rows.reshape(-1))
        counts = [np.full(n, p + 1)]
        if nb:
            indices.append(np.tile(np.arange(p), nb))
            counts.append(np.full(nb, p))
        counts.append(np.zeros(self.n_groups + 1, dtype=int))  # v, w: no constraint
        indices.append(np.arange(p))  # z columns: -1 on their own row
        counts.append(np.ones(p, dtype=int))
        indptr = np.concatenate([[0], np.cumsum(np.concatenate(counts))])
        idx = np.concatenate(indices)
        data = np.ones(idx.shape[0])
        return sp.csc_matrix((data, idx, indptr), shape=(p + n, self.n_variables))

    def _objective_pattern(self) -> sp.csc_matrix:
        """Upper triangle of the objective's Hessian (OSQP's ``P``), CSC, placeholder values.

        Columns in order: u (diagonal), beta (diagonal), each v_g (its points' u, then its
        diagonal), w (every v_g, then its diagonal), z (diagonal)."""
        n, nb, G, p = self.n, self.nb, self.n_groups, self.p
        order = self._group_order
        starts = np.concatenate([[0], np.cumsum(self.group_sizes.astype(int))])
        indices = [np.arange(n + nb)]
        counts = [np.ones(n + nb, dtype=int)]
        for g in range(G):
            indices.append(np.r_[order[starts[g]:starts[g + 1]], n + nb + g])
            counts.append(np.array([starts[g + 1] - starts[g] + 1]))
        indices.append(np.r_[n + nb + np.arange(G), n + nb + G])
        counts.append(np.array([G + 1]))
        indices.append(n + nb + G + 1 + np.arange(p))
        counts.append(np.ones(p, dtype=int))
        indptr = np.concatenate([[0], np.cumsum(np.concatenate(counts))])
        idx = np.concatenate(indices)
        return sp.csc_matrix((np.ones(idx.shape[0]), idx, indptr), shape=(self.n_variables, self.n_variables))

    def _objective_values(self, lam: float, mu: float, M: np.ndarray | None = None) -> np.ndarray:
        """CSC data of ``P`` (see :meth:`_objective_pattern`) for the scaled weights ``lam``, ``mu``.

        ``M = L^T T`` (p x (n + nb)) gives the data's curvature on the offsets, of which theirs is
        :data:`_EPS_FREE` (None: :data:`_EPS_FREE` itself, a placeholder)."""
        n, nb, G, p = self.n, self.nb, self.n_groups, self.p
        c, sizes, volumes, order = self.point_weights, self.group_sizes, self.group_weights, self._group_order
        # the levels' own curvature relative to the regulariser's (absolute only where there is none: then the
        # levels are tied to nothing and any curvature leaves the points alone)
        free = _EPS_FREE * (lam + mu) if lam + mu > 0.0 else _EPS_FREE
        offsets = np.full(nb, _EPS_FREE)
        if nb and M is not None:
            data = 2.0 * np.einsum("ij,ij->j", M[:, n:], M[:, n:])
            offsets = np.where(data > 0.0, _EPS_FREE * data, _EPS_FREE)
        parts = [2.0 * lam * c, offsets]
        start = 0
        for g in range(G):
            members = order[start : start + int(sizes[g])]
            start += int(sizes[g])
            parts.append(np.r_[-2.0 * lam * c[members], 2.0 * (lam + mu) * volumes[g] + free])
        # (the volumes sum to n)
        parts.append(np.r_[-2.0 * mu * volumes, 2.0 * (mu + MASS_ANCHOR * lam) * n + free])
        parts.append(np.full(p, 2.0))
        return np.concatenate(parts)

    def _constraint_values(self, M: np.ndarray) -> np.ndarray:
        """CSC data of the constraint matrix for ``M = L^T T`` (p x (n + nb))."""
        n, nb, p = self.n, self.nb, self.p
        u_part = np.empty((n, p + 1))
        u_part[:, :p] = M[:, :n].T
        u_part[:, p] = 1.0
        parts = [u_part.reshape(-1)]
        if nb:
            parts.append(M[:, n:].T.reshape(-1))
        parts.append(-np.ones(p))
        return np.concatenate(parts)

    def _warm_start(self, x_ub: np.ndarray) -> np.ndarray:
        """Return a full primal vector from ``[u; beta]``.

        The group levels are at their groups' means (the optimum of the regulariser for these
        ``u``), ``z`` is left at zero."""
        u = x_ub[: self.n]
        volumes = self.group_weights
        v = (np.bincount(self.group_of, weights=self.point_weights * u, minlength=self.n_groups)
             / np.maximum(volumes, 1e-300))
        w = float(np.dot(v, volumes) / max(self.n, 1))
        return np.r_[x_ub, v, w, np.zeros(self.p)]

    # --------------------------------------------------------------- solve
    def solve(
        self, H: np.ndarray, h: np.ndarray, m_bar: float, regularization: float, coupling: float = 0.0,
        max_iter: int | None = None, time_limit: float | None = None,
    ) -> QPResult:
        """Solve the QP for one data term.

        Args:
            H: the data term's matrix in ``theta``.
            h: the data term's vector in ``theta``.
            m_bar: the mean point mass, kg.
            regularization: the within-group weight ``lambda``.
            coupling: the across-group weight ``mu``.
            max_iter: OSQP's iterations for this solve (None: the settings').
            time_limit: OSQP's wall time for this solve, s (None: the settings').
        """
        n, nb, p = self.n, self.nb, self.p
        # Normalise the objective (does not move the minimiser) so tolerances are relative.
        scale = max(float(np.trace(H)) * m_bar**2 * n / p, 1e-300)
        d, lam, V, seen = scaled_eigh(H, _RANGE_TOL)
        # H / scale = L L^T (p x rank) over what the data see, Jacobi-scaled so that the inertia's
        # small columns are not mistaken for noise next to the offsets' large ones.
        L = np.zeros((p, p))
        L[:, seen] = (d[:, None] * V[:, seen]) * np.sqrt(lam[seen] / scale)
        # The linear term must lie in the range of H, else the objective falls without bound along
        # a direction the data do not see (the robot at rest with F/T offsets unknown, after the
        # noise compensation of H): keep only its part the data determine, H x_ls.
        h = d * (V[:, seen] @ (V[:, seen].T @ (h / d)))
        T_u = self.P_points * m_bar
        M = np.empty((p, n + nb))
        M[:, :n] = L[: self.P_points.shape[0]].T @ T_u
        if nb:
            M[:, n:] = L[self.P_points.shape[0] :].T
        q = np.zeros(self.n_variables)
        q[:n] = -2.0 * (T_u.T @ h[: self.P_points.shape[0]]) / scale
        if nb:
            q[n : n + nb] = -2.0 * h[self.P_points.shape[0] :] / scale
        q[n + nb + self.n_groups] = -2.0 * MASS_ANCHOR * regularization * n / scale
        P_values = self._objective_values(regularization / scale, coupling / scale, M)
        A_values = self._constraint_values(M)
        self._start_from(M, m_bar)
        t0 = time.perf_counter()
        # a budget given for this solve bounds the refinement's steps too (without one, only their count)
        deadline = np.inf if time_limit is None else t0 + max(float(time_limit), 1e-3)
        seeded = self._seeded_answer(P_values, q, M, m_bar)
        if seeded is not None:
            result = seeded
        elif self.solver == "osqp":
            limits = (self.settings["max_iter"] if max_iter is None else max(int(max_iter), 1),
                      self.settings["time_limit"] if time_limit is None else max(float(time_limit), 1e-3))
            result = self._solve_osqp(P_values, q, A_values, M, limits, deadline)
        else:
            result = self._solve_qpsolvers(P_values, q, A_values, M, deadline)
        self.last_solve_seconds = time.perf_counter() - t0
        return result

    def _start_from(self, M: np.ndarray, m_bar: float) -> None:
        """Put the warm start in this solve's units (masses rescaled by the new ``m_bar``, ``z`` consistent).

        Without one, a cold start from the uniform body of the reference mass (u = 1), not from u = 0: on
        noise-free data the data term dwarfs the regulariser, and from zero OSQP could meet its tolerances at
        an empty payload after one check (the whole body's mass lost)."""
        n, nb = self.n, self.nb
        if self._x is None:
            self._x = self._warm_start(np.r_[np.ones(n), np.zeros(nb)])
            self._m_bar = m_bar
        x = self._x.copy()
        ratio = self._m_bar / m_bar if self._m_bar > 0 else 1.0
        x[:n] *= ratio
        x[n + nb : n + nb + self.n_groups + 1] *= ratio
        x[n + nb + self.n_groups + 1 :] = M @ x[: n + nb]
        self._x, self._m_bar = x, m_bar

    def _seeded_answer(self, P_values: np.ndarray, q: np.ndarray, M: np.ndarray, m_bar: float) -> QPResult | None:
        """After a :meth:`seed`: the minimiser on its support when it holds it (checked), else None.

        Then the solve starts as a new one's would (from the uniform body), so that it gives what this QP
        built afresh gives. None too when no seed is pending."""
        if self._start != _SEED:
            return None
        exact = self._exact_on_last_support(P_values, q, M) if self.refine else None
        if exact is None:
            self._x, self._support, self._start = None, None, ""
            self._start_from(M, m_bar)
            return None
        self._x, self._start = exact, _EXACT  # no OSQP set up yet: the next solve tries the last support first too
        return QPResult(exact[: self.n + self.nb].copy(), EXACT_ON_SUPPORT, 0, True)

    def _bounds(self) -> tuple[np.ndarray, np.ndarray]:
        l = np.zeros(self.p + self.n)
        u = np.concatenate([np.zeros(self.p), np.full(self.n, np.inf)])
        return l, u

    def _solve_osqp(self, P_values: np.ndarray, q: np.ndarray, A_values: np.ndarray, M: np.ndarray,
                    limits: tuple[int, float], deadline: float) -> QPResult:
        import osqp

        ws = self._workspace
        if (ws is not None and not self._cold or self._start == _EXACT) and self.refine:
            exact = self._exact_on_last_support(P_values, q, M)
            if exact is not None:
                self._x = exact
                return QPResult(exact[: self.n + self.nb].copy(), EXACT_ON_SUPPORT, 0, True)
        self._start = ""
        t_update = time.perf_counter()
        if ws is not None and self._cold:  # set up before any solve, or reset: start afresh
            ws.update(q=q, Px=P_values, Ax=A_values)
            ws.warm_start(x=np.zeros(self.n_variables) if self._x is None else self._x,
                          y=np.zeros(self.p + self.n))
        elif ws is None:
            P = self._P_pattern.copy()
            P.data = P_values.copy()
            A = self._A_pattern.copy()
            A.data = A_values
            l, u = self._bounds()
            ws = osqp.OSQP()
            ws.setup(P=P, q=q, A=A, l=l, u=u, **self.settings)
            self._workspace = ws
            self._limits = (self.settings["max_iter"], self.settings["time_limit"])
            if self._x is not None:
                ws.warm_start(x=self._x)
        else:
            ws.update(q=q, Px=P_values, Ax=A_values)
            if self._x is not None:
                ws.warm_start(x=self._x, y=self._y)
        self._cold = False
        # OSQP's run time counts the update (a numerical refactorisation) too: the limit is for the iterations
        limits = (limits[0], limits[1] + time.perf_counter() - t_update)
        if limits != self._limits:
            ws.update_settings(max_iter=limits[0], time_limit=limits[1])
            self._limits = limits
        res = ws.solve(raise_error=False)
        status = str(res.info.status)
        converged = status in ("solved", "solved inaccurate")
        usable = res.x is not None and bool(np.all(np.isfinite(res.x)))
        if usable and not converged and "infeasible" in status:
            usable = False  # an infeasibility certificate, not a point: never an estimate
        if not usable:
            previous = self._x
            self.reset()
            if "non convex" not in status:
                # a failed solve may leave the workspace in any state: set up anew; a factorisation that
                # found the matrix indefinite (rounding, on data that fit exactly) is redone by the next
                # update of the data, which costs a fraction of a new set-up (~15 ms with 1000 points)
                self._workspace = None
            if previous is None:
                raise RuntimeError(f"PMD: OSQP failed ({status})")
            self._x = previous
            return QPResult(previous[: self.n + self.nb].copy(), status, int(res.info.iter), False)
        x = res.x
        refined = (self._refine(P_values, q, M, x, deadline, converged)  # also from a limit's iterate
                   if self.refine else None)
        if refined is not None:
            x = refined
        self._x, self._y = x.copy(), res.y.copy()
        return QPResult(x[: self.n + self.nb].copy(), status, int(res.info.iter), converged)

    def _exact_on_last_support(self, P_values: np.ndarray, q: np.ndarray, M: np.ndarray) -> np.ndarray | None:
        """The minimiser, when the last answer's support still holds it; else None (OSQP must search).

        The QP is strictly convex, so a point that meets its optimality conditions is its minimiser:
        on the last support, the exact solve's masses are non-negative, and no point held at zero
        is pulled below it (its gradient is not negative beyond :data:`SUPPORT_TOL` of the largest).
        Between two estimates a few tenths of a second apart the support rarely changes, and this
        costs one solve of :meth:`SupportProblem.solve` where OSQP's update and iterations cost
        several. As for :meth:`_refine`, the total mass may not move by more than
        :data:`REFINE_MASS_SHIFT` from the last answer's (a flat direction: OSQP's answer instead).

        Args:
            P_values: CSC data of the objective's Hessian (:meth:`_objective_values`).
            q: (n_variables,) the objective's linear term.
            M: (p, n + nb) ``L^T T``, the constraint block of the masses and offsets.

        Returns:
            (n_variables,) the primal vector (``z`` consistent with it), or None.
        """
        support, x_last = self._support, self._x
        n = self.n
        if support is None or x_last is None or support.shape != (n,) or not support.any():
            return None
        problem = self._support_problem(P_values, q, M)
        if problem is None:
            return None
        try:
            y_u, y_s = problem.solve(support)
        except np.linalg.LinAlgError:
            return None
        if not (np.all(np.isfinite(y_u)) and np.all(np.isfinite(y_s))) or np.any(y_u[support] < 0.0):
            return None
        if np.any(problem.pulled_below(y_u, y_s, support)) or self._mass_moved(y_u, x_last[:n]):
            return None  # x_last is in this solve's units (rescaled)
        return problem.primal(y_u, y_s)

    def _support_problem(self, P_values: np.ndarray, q: np.ndarray, M: np.ndarray) -> SupportProblem | None:
        """:class:`SupportProblem` of this QP (None when a point has no curvature of its own)."""
        nx = self.n + self.nb + self.n_groups + 1
        return SupportProblem.from_objective(P_values, self._P_coordinates, q, M, self.n, nx)

    def _mass_moved(self, y_u: np.ndarray, u: np.ndarray) -> bool:
        """Whether the point masses ``y_u`` total more than :data:`REFINE_MASS_SHIFT` away from those of ``u``."""
        mass_row = self.P_points[0]  # each point's mass per unit u (its share of the volume)
        total = float(mass_row @ np.clip(u, 0.0, None))
        return abs(float(mass_row @ y_u) - total) > REFINE_MASS_SHIFT * max(total, REFINE_MASS_SHIFT)

    def _refine(self, P_values: np.ndarray, q: np.ndarray, M: np.ndarray, x: np.ndarray,
                deadline: float = np.inf, converged: bool = True) -> np.ndarray | None:
        """The exact minimiser on the support OSQP found, or None when it is no better.

        With the points of zero mass held at zero, the problem is an equality-constrained least
        squares (:meth:`SupportProblem.solve`). From OSQP's point on its support, each step goes
        towards the support's minimiser as far as every mass stays non-negative, and the points that
        reach zero leave the support; at the minimiser, points held at zero whose gradient pulls them
        below it join it (a primal active-set method, at most :data:`REFINE_STEPS` solves, within the
        solve's time budget if it has one; every step's point is feasible and lowers the objective). Accepted only
        when the objective does not rise. OSQP stops at a tolerance relative to the whole problem,
        which leaves the weakly determined inertia directions short of the optimum (noise-free
        data: 9.6 % inertia error where the exact optimum is at 0.2 %).

        Args:
            P_values: CSC data of the objective's Hessian (:meth:`_objective_values`).
            q: (n_variables,) the objective's linear term.
            M: (p, n + nb) ``L^T T``, the constraint block of the masses and offsets.
            x: (n_variables,) the solver's answer.
            deadline: ``time.perf_counter()`` after which no further step starts beyond the first
                :data:`REFINE_STEPS_WITHIN_BUDGET` (every step's point is feasible, so the last one is kept).
            converged: the solver met its tolerances at ``x`` (then the refinement may not move the total
                mass by more than :data:`REFINE_MASS_SHIFT`; an iterate stopped at a limit it may).

        Returns:
            (n_variables,) the refined primal vector (``z`` consistent with it), or None.
        """
        n = self.n
        nx = n + self.nb + self.n_groups + 1
        problem = self._support_problem(P_values, q, M)
        if problem is None:
            return None
        u = x[:n]
        support = u > SUPPORT_TOL * max(float(u.max()), 1e-300)
        if self._support is not None and self._support.shape == support.shape and np.any(self._support & support):
            support &= self._support  # the last answer's support, where OSQP too puts mass
        # the feasible point the steps start from: OSQP's, on its support
        y_u, y_s = np.where(support, np.clip(u, 0.0, None), 0.0), x[n:nx].copy()
        for taken in range(REFINE_STEPS):
            if taken >= REFINE_STEPS_WITHIN_BUDGET and time.perf_counter() > deadline:
                break
            try:
                new_u, new_s = problem.solve(support)
            except np.linalg.LinAlgError:
                return None
            if not (np.all(np.isfinite(new_u)) and np.all(np.isfinite(new_s))):
                return None
            step = new_u - y_u
            blocking = support & (new_u < 0.0) & (step < 0.0)
            if np.any(blocking):
                # Step towards the support's minimiser as far as every mass stays non-negative; the
                # points that reach zero first leave the support (a primal active-set step: the
                # objective falls at every step, where dropping every negative point at once can cycle).
                ratios = y_u[blocking] / -step[blocking]
                alpha = float(np.clip(ratios.min(), 0.0, 1.0))
                y_u = np.clip(y_u + alpha * step, 0.0, None)
                y_s = y_s + alpha * (new_s - y_s)
                leaving = np.zeros(n, dtype=bool)
                leaving[np.flatnonzero(blocking)[ratios <= alpha * (1.0 + 1e-9)]] = True
                support &= ~leaving
                y_u[~support] = 0.0
                continue
            y_u, y_s = np.where(support, new_u, 0.0), new_s
            # Held at zero but pulling below it (negative gradient): join the support.
            joining = problem.pulled_below(y_u, y_s, support)
            if not np.any(joining):
                break
            # the one pulling hardest (Lawson and Hanson's rule: all at once may have to leave again one by one)
            gradient = problem.gradient(y_u, y_s)
            support[np.flatnonzero(joining)[np.argmin(gradient[joining])]] = True
        before = problem.objective(x[:n], x[n:nx])
        if problem.objective(y_u, y_s) > before + 1e-12 * abs(before):
            return None
        if converged and self._mass_moved(y_u, u):
            return None  # a direction the data leave flat (module constant): OSQP's, held by the anchor

        self._support = support.copy()
        return problem.primal(y_u, y_s)

    def _solve_qpsolvers(self, P_values: np.ndarray, q: np.ndarray, A_values: np.ndarray, M: np.ndarray,
                         deadline: float) -> QPResult:
        from qpsolvers import Problem, solve_problem

        n, nb, p = self.n, self.nb, self.p
        A_full = self._A_pattern.copy()
        A_full.data = A_values
        A_eq = A_full[:p]
        G = -A_full[p:]
        P_upper = self._P_pattern.copy()
        P_upper.data = P_values
        P_full = (P_upper + sp.triu(P_upper, k=1).T).tocsc()
        problem = Problem(P_full, q, G=G.tocsc(), h=np.zeros(n), A=A_eq.tocsc(), b=np.zeros(p))
        name = "osqp" if self.solver == "osqp-qpsolvers" else self.solver
        options = {**self.settings, "raise_error": False} if name == "osqp" else {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sol = solve_problem(problem, solver=name, initvals=self._x, **options)
        if sol.x is None or not np.all(np.isfinite(sol.x)):
            raise RuntimeError(f"PMD: {name} found no solution")
        refined = self._refine(P_values, q, M, sol.x, deadline, bool(sol.found)) if self.refine else None
        x = sol.x if refined is None else refined
        self._x = x.copy()
        info = sol.extras.get("info") if isinstance(sol.extras, dict) else None
        status = str(getattr(info, "status", "solved" if sol.found else "not solved"))
        iters = int(getattr(info, "iter", 0))
        return QPResult(x[: n + nb].copy(), status, iters, bool(sol.found))
