"""PMD's quadratic program on a support: the point masses outside it held at zero, the bounds of the others dropped.

The exact solves of :class:`~payload_estimator.core.estimators.qp.LiftedPointMassQP` (its refinement of OSQP's
answer, and the answer of the last support when it still holds): :class:`SupportProblem` takes the blocks of
the lifted QP apart, solves it on a support in ``O(n p²)`` (the Woodbury identity), and checks the optimality
conditions of the masses' bounds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from payload_estimator.core.estimators.linear_algebra import cholesky, cholesky_solve

__all__ = ["SupportProblem", "SUPPORT_TOL", "REFINEMENT_ROUNDS", "REFINED"]

REFINEMENT_ROUNDS = 3
"""Rounds of iterative refinement of each exact solve on a support ..."""
REFINED = 1e-9
"""... a round that moved no mass by more than this share of the largest is the last
(on noisy data the first round's correction is 1e-10 to 1e-8 of the masses: no estimate shows it)."""
SUPPORT_TOL = 1e-6
"""A point held at zero whose gradient is negative beyond this share of the largest is pulled below its bound;
a mass below this share of the largest is none (the support's edge)."""

@dataclass(frozen=True)
class SupportProblem:
    """PMD's lifted QP without the masses' bounds, in the unknowns ``y = [u; s]``, ``s = [beta; v; w]``.

    The objective is ``1/2 y^T P y + q^T y + |C y|²`` with ``z = C y`` eliminated (``C = L^T T``,
    p x .). Its point block is diagonal, ``diag_u``; the points couple with the other unknowns only
    through a few entries of ``P`` (a point with its group's level).

    Attributes:
        diag_u: (n,) ``P``'s diagonal on the point masses.
        c_rows, c_cols, c_vals: the entries of ``P`` that couple point ``c_rows`` with the other
            unknown ``c_cols`` (an index into ``s``).
        P_ss: (k, k) ``P`` on the other unknowns.
        C_u: (p, n) ``C``'s point columns. C_s: (p, k) its other columns.
        q_u: (n,) ``q`` on the points. q_s: (k,) on the other unknowns.
    """

    diag_u: np.ndarray
    c_rows: np.ndarray
    c_cols: np.ndarray
    c_vals: np.ndarray
    P_ss: np.ndarray
    C_u: np.ndarray
    C_s: np.ndarray
    q_u: np.ndarray
    q_s: np.ndarray

    @classmethod
    def from_objective(cls, P_values: np.ndarray, P_coordinates: tuple[np.ndarray, np.ndarray], q: np.ndarray,
                       M: np.ndarray, n: int, nx: int) -> SupportProblem | None:
        """Return the blocks of the QP of :class:`LiftedPointMassQP`, or None.

        ``n`` points and ``nx`` unknowns before ``z``; ``P_values`` is the CSC data at
        ``P_coordinates``, ``M = L^T T``. None when a point has no curvature of its own."""
        p = M.shape[0]
        k = nx - n
        rows, cols = P_coordinates
        on_u = (rows == cols) & (rows < n)
        diag_u = np.zeros(n)
        diag_u[rows[on_u]] = P_values[on_u]
        coupling = (rows < n) & (cols >= n) & (cols < nx)
        small = (rows >= n) & (rows < nx) & (cols < nx)
        P_ss = np.zeros((k, k))
        P_ss[rows[small] - n, cols[small] - n] = P_values[small]
        P_ss = P_ss + np.triu(P_ss, 1).T
        nb = M.shape[1] - n
        C_s = np.zeros((p, k))
        C_s[:, :nb] = M[:, n:]
        if np.any(diag_u <= 0.0):
            return None
        return cls(diag_u, rows[coupling], cols[coupling] - n, P_values[coupling], P_ss, M[:, :n], C_s,
                   q[:n], q[n:nx])

    def objective(self, y_u: np.ndarray, y_s: np.ndarray) -> float:
        """The QP's objective at ``y = [y_u; y_s]`` (``z`` eliminated)."""
        z = self.C_u @ y_u + self.C_s @ y_s
        quad = float(self.diag_u @ (y_u * y_u) + 2.0 * np.sum(self.c_vals * y_u[self.c_rows] * y_s[self.c_cols])
                     + y_s @ self.P_ss @ y_s)
        return 0.5 * quad + float(self.q_u @ y_u + self.q_s @ y_s + z @ z)

    def gradient(self, y_u: np.ndarray, y_s: np.ndarray) -> np.ndarray:
        """(n,) the objective's gradient by the point masses at ``y = [y_u; y_s]``."""
        gradient = self.diag_u * y_u + self.q_u + 2.0 * self.C_u.T @ (self.C_u @ y_u + self.C_s @ y_s)
        return gradient + np.bincount(self.c_rows, self.c_vals * y_s[self.c_cols], minlength=gradient.shape[0])

    def pulled_below(self, y_u: np.ndarray, y_s: np.ndarray, support: np.ndarray) -> np.ndarray:
        """(n,) the points held at zero (outside ``support``) whose gradient pulls them below it.

        Negative beyond :data:`SUPPORT_TOL` of the gradient's largest magnitude; none means that
        ``y`` meets the optimality conditions of the masses' bounds."""
        gradient = self.gradient(y_u, y_s)
        scale = float(np.max(np.abs(gradient))) if gradient.size else 0.0
        return ~support & (gradient < -SUPPORT_TOL * max(scale, 1e-300))

    def primal(self, y_u: np.ndarray, y_s: np.ndarray) -> np.ndarray:
        """The QP's whole primal vector ``[y_u; y_s; z]`` with ``z = C y``."""
        return np.r_[y_u, y_s, self.C_u @ y_u + self.C_s @ y_s]

    def solve(self, support: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return the unconstrained minimiser ``(y_u (n,), y_s (k,))`` with the points outside ``support`` at zero.

        ``support`` is (n,). Its point block, diagonal plus the rank-p ``2 C_u^T C_u``, is
        solved by the Woodbury identity and a Schur complement on the few other unknowns,
        ``O(n p²)``, then iteratively refined. Raises ``LinAlgError`` when it is singular."""
        diag_u, c_rows, c_cols, c_vals = self.diag_u, self.c_rows, self.c_cols, self.c_vals
        n, k, p = diag_u.shape[0], self.P_ss.shape[0], self.C_u.shape[0]
        S = np.flatnonzero(support)
        position = np.full(n, -1)
        position[S] = np.arange(S.size)
        inside = position[c_rows] >= 0
        P_us = np.zeros((S.size, k))
        P_us[position[c_rows[inside]], c_cols[inside]] = c_vals[inside]
        C = self.C_u[:, S]
        d_inv = 1.0 / diag_u[S]
        capacitance = cholesky(0.5 * np.eye(p) + (C * d_inv) @ C.T)

        def apply_inverse(X: np.ndarray) -> np.ndarray:
            """``(D + 2 C^T C)^-1 X`` (Woodbury)."""
            Y = d_inv * X if X.ndim == 1 else d_inv[:, None] * X
            return Y - (d_inv * (C.T @ cholesky_solve(capacitance, C @ Y)).T).T

        A_us = P_us + 2.0 * C.T @ self.C_s
        A_ss = self.P_ss + 2.0 * self.C_s.T @ self.C_s
        schur = cholesky(A_ss - A_us.T @ apply_inverse(A_us))

        def block_solve(r_u: np.ndarray, r_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            d_s = cholesky_solve(schur, r_s - A_us.T @ apply_inverse(r_u))
            return apply_inverse(r_u - A_us @ d_s), d_s

        b_u, b_s = -self.q_u[S], -self.q_s
        x_u, y_s = block_solve(b_u, b_s)
        # Iterative refinement: the Woodbury identity cancels large terms when the data
        # dwarf the regulariser (noise-free data); two rounds win the digits back.
        for _ in range(REFINEMENT_ROUNDS):
            r_u = b_u - (diag_u[S] * x_u + 2.0 * C.T @ (C @ x_u) + A_us @ y_s)
            r_s = b_s - (A_us.T @ x_u + A_ss @ y_s)
            d_u, d_s = block_solve(r_u, r_s)
            x_u, y_s = x_u + d_u, y_s + d_s
            if np.max(np.abs(d_u), initial=0.0) <= REFINED * np.max(np.abs(x_u), initial=0.0):
                break  # nothing left to win back that an estimate would show
        y_u = np.zeros(n)
        y_u[S] = x_u
        return y_u, y_s
