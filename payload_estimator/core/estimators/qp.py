"""The lifted quadratic program of PMD, and the solvers that take it.

Problem (see :mod:`payload_estimator.core.estimators.pmd`)::

    min_{u >= 0, beta}  theta^T H theta - 2 h^T theta + lambda |u - 1|²,
    theta = [T_u u; beta],  T_u = m_bar P  (10 x n)

``H`` (p x p, p = 10 or 16) is PSD of rank <= p, so with ``H = L L^T`` and
``z = L^T theta`` the problem becomes

    min  |z|² + lambda |u|² - 2 (T^T h + lambda 1_u)^T x
    s.t. L^T T x - z = 0,   u >= 0,     x = [u; beta]

whose constraint matrix has ``(p + 1) n + p (nb + 1)`` non-zeros and a fixed
sparsity pattern: OSQP factors its KKT system once symbolically and, on each
new solve, only refactors numerically, in time linear in ``n``. Two ways to
solve it:

* ``solver="osqp"`` (default): a persistent OSQP workspace, updated in place
  (``update(q, Px, Ax)``) and warm-started with the previous primal and dual
  solution. This is what makes a re-solve cost about a millisecond.
* any other name (``"osqp-qpsolvers"``, ``"clarabel"``, ``"proxqp"``,
  ``"highs"``...): the same matrices through ``qpsolvers.solve_problem``,
  warm-started with the previous primal solution. qpsolvers builds a new
  solver instance on every call, so it is slower; it is there to cross-check
  OSQP and to let users pick another solver.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

if TYPE_CHECKING:
    import osqp

__all__ = ["LiftedPointMassQP", "QPResult"]

_EPS_FREE = 1e-12  # tiny curvature on the free offsets keeps the P pattern fixed


@dataclass(frozen=True)
class QPResult:
    """``x = [u; beta]`` and the solver's status string."""

    x: np.ndarray
    status: str
    iterations: int


class LiftedPointMassQP:
    """Solve PMD's QP repeatedly for one fixed set of points.

    Args:
        P_points: (10, n) unit-point-mass parameter matrix.
        n_bias: 0, or 6 when the F/T offsets are unknowns.
        solver: ``"osqp"`` for the persistent workspace, else a qpsolvers solver name
            (``"osqp-qpsolvers"`` means OSQP through qpsolvers).
        settings: solver settings (OSQP names for both OSQP paths).
    """

    def __init__(
        self,
        P_points: np.ndarray,
        n_bias: int = 0,
        solver: str = "osqp",
        settings: dict | None = None,
    ) -> None:
        self.P_points = np.asarray(P_points, dtype=float)
        self.n = self.P_points.shape[1]
        self.nb = int(n_bias)
        self.p = self.P_points.shape[0] + self.nb
        self.solver = solver
        self.settings = {
            "eps_abs": 1e-7,
            "eps_rel": 1e-7,
            "polishing": True,
            "max_iter": 20000,
            "verbose": False,
            **(settings or {}),
        }
        self._workspace: osqp.OSQP | None = None
        self.last_solve_seconds = 0.0
        self._x: np.ndarray | None = None
        self._y: np.ndarray | None = None
        self._A_pattern = self._constraint_pattern()
        self._P_pattern = sp.identity(self.n + self.nb + self.p, format="csc")

    @property
    def n_variables(self) -> int:
        return self.n + self.nb + self.p

    def reset(self) -> None:
        """Drop the workspace and the warm start."""
        self._workspace = None
        self._x = self._y = None

    # ------------------------------------------------------------ matrices
    def _constraint_pattern(self) -> sp.csc_matrix:
        """CSC pattern of ``[[L^T T, -I], [I_u, 0]]`` with placeholder values."""
        n, nb, p = self.n, self.nb, self.p
        indices: list[np.ndarray] = []
        # u columns: p dense rows, then the row of their bound
        u_rows = np.concatenate([np.tile(np.arange(p), (n, 1)), (p + np.arange(n))[:, None]], axis=1)
        indices.append(u_rows.reshape(-1))
        counts = [np.full(n, p + 1)]
        if nb:
            indices.append(np.tile(np.arange(p), nb))
            counts.append(np.full(nb, p))
        indices.append(np.arange(p))  # z columns: -1 on their own row
        counts.append(np.ones(p, dtype=int))
        indptr = np.concatenate([[0], np.cumsum(np.concatenate(counts))])
        idx = np.concatenate(indices)
        data = np.ones(idx.shape[0])
        return sp.csc_matrix((data, idx, indptr), shape=(p + n, n + nb + p))

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

    # --------------------------------------------------------------- solve
    def solve(self, H: np.ndarray, h: np.ndarray, m_bar: float, regularization: float) -> QPResult:
        """Solve for the data term ``(H, h)`` in ``theta`` and the mean point mass ``m_bar`` (kg)."""
        n, nb, p = self.n, self.nb, self.p
        # Normalise the objective (does not move the minimiser) so tolerances are relative.
        scale = max(float(np.trace(H)) * m_bar**2 * n / p, 1e-300)
        lam, V = np.linalg.eigh(0.5 * (H + H.T))
        L = V * np.sqrt(np.clip(lam, 0.0, None) / scale)  # H / scale = L L^T, p x p
        T_u = self.P_points * m_bar
        M = np.empty((p, n + nb))
        M[:, :n] = L[: self.P_points.shape[0]].T @ T_u
        if nb:
            M[:, n:] = L[self.P_points.shape[0] :].T
        q = np.zeros(n + nb + p)
        q[:n] = -2.0 * (T_u.T @ h[: self.P_points.shape[0]] + regularization) / scale
        if nb:
            q[n : n + nb] = -2.0 * h[self.P_points.shape[0] :] / scale
        P_diag = np.empty(n + nb + p)
        P_diag[:n] = 2.0 * regularization / scale
        P_diag[n : n + nb] = _EPS_FREE
        P_diag[n + nb :] = 2.0
        A_values = self._constraint_values(M)
        t0 = time.perf_counter()
        if self.solver == "osqp":
            result = self._solve_osqp(P_diag, q, A_values)
        else:
            result = self._solve_qpsolvers(P_diag, q, A_values)
        self.last_solve_seconds = time.perf_counter() - t0
        return result

    def _bounds(self) -> tuple[np.ndarray, np.ndarray]:
        l = np.zeros(self.p + self.n)
        u = np.concatenate([np.zeros(self.p), np.full(self.n, np.inf)])
        return l, u

    def _solve_osqp(self, P_diag: np.ndarray, q: np.ndarray, A_values: np.ndarray) -> QPResult:
        import osqp

        ws = self._workspace
        if ws is None:
            P = self._P_pattern.copy()
            P.data = P_diag.copy()
            A = self._A_pattern.copy()
            A.data = A_values
            l, u = self._bounds()
            ws = osqp.OSQP()
            ws.setup(P=P, q=q, A=A, l=l, u=u, **self.settings)
            self._workspace = ws
        else:
            ws.update(q=q, Px=P_diag, Ax=A_values)
            if self._x is not None:
                ws.warm_start(x=self._x, y=self._y)
        res = ws.solve(raise_error=False)
        status = str(res.info.status)
        if res.x is None or not np.all(np.isfinite(res.x)):
            self.reset()
            raise RuntimeError(f"PMD: OSQP failed ({status})")
        self._x, self._y = res.x.copy(), res.y.copy()
        return QPResult(res.x[: self.n + self.nb].copy(), status, int(res.info.iter))

    def _solve_qpsolvers(self, P_diag: np.ndarray, q: np.ndarray, A_values: np.ndarray) -> QPResult:
        from qpsolvers import Problem, solve_problem

        n, nb, p = self.n, self.nb, self.p
        A_full = self._A_pattern.copy()
        A_full.data = A_values
        A_eq = A_full[:p]
        G = -A_full[p:]
        problem = Problem(
            sp.diags(P_diag, format="csc"), q, G=G.tocsc(), h=np.zeros(n), A=A_eq.tocsc(), b=np.zeros(p)
        )
        name = "osqp" if self.solver == "osqp-qpsolvers" else self.solver
        options = {**self.settings, "raise_error": False} if name == "osqp" else {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sol = solve_problem(problem, solver=name, initvals=self._x, **options)
        if sol.x is None or not np.all(np.isfinite(sol.x)):
            raise RuntimeError(f"PMD: {name} found no solution")
        self._x = sol.x.copy()
        info = sol.extras.get("info") if isinstance(sol.extras, dict) else None
        status = str(getattr(info, "status", "solved" if sol.found else "not solved"))
        iters = int(getattr(info, "iter", 0))
        return QPResult(sol.x[: n + nb].copy(), status, iters)
