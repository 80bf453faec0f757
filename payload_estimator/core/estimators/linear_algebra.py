"""Linear algebra on symmetric positive semi-definite matrices (Grams, informations), Jacobi-scaled.

The estimators' normal matrices mix columns of very different scales (kg, kg·m, kg·m², N); every
routine here equilibrates the matrix first (divides by the square roots of its diagonal), so
that a relative eigenvalue cutoff means the same for every column.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import lapack

__all__ = ["eigh", "cholesky", "cholesky_solve", "positive_definite", "scaled_eigh", "solve_psd", "pinv_psd",
           "scaled_condition_number"]


def scaled_eigh(A: np.ndarray, rcond: float = 1e-10) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Eigendecomposition of a symmetric PSD ``A`` after Jacobi scaling: ``(d, lam, V, seen)``.

    ``A = D (V diag(lam) V^T) D`` with ``D = diag(d)`` (``d`` the square roots of the diagonal,
    1 where it is 0), eigenvalues ascending; ``seen`` marks those above ``rcond`` times the
    largest (none when that is not positive): equilibrated first, so that ``rcond`` is relative
    to a well-scaled matrix.
    """
    d = np.sqrt(np.maximum(A.diagonal(), 0.0))
    d[d == 0.0] = 1.0
    As = A / np.outer(d, d)
    lam, V = eigh(0.5 * (As + As.T))
    seen = lam > rcond * max(lam[-1], 0.0) if lam[-1] > 0 else np.zeros_like(lam, bool)
    return d, lam, V, seen


def eigh(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``numpy.linalg.eigh(A)`` of a symmetric ``A``, ``(lam, V)`` with ``lam`` ascending.

    LAPACK's ``dsyevd`` on the lower triangle, as numpy calls it (the same numbers), without
    numpy's per-call checks, which cost a third of the time on these small matrices; a matrix
    that is not finite, or that LAPACK fails on, goes through numpy (and its error)."""
    if A.dtype == np.float64 and A.ndim == 2 and np.isfinite(A).all():
        lam, V, info = lapack.dsyevd(A, lower=1)
        if info == 0:
            return lam, V
    return np.linalg.eigh(A)


def cholesky(A: np.ndarray) -> np.ndarray:
    """The lower Cholesky factor of a symmetric positive definite ``A``; ``LinAlgError`` when it is not.

    LAPACK's ``dpotrf`` without numpy's or scipy's per-call checks (for small matrices factored and
    solved with many times)."""
    factor, info = lapack.dpotrf(A, lower=1, clean=0)
    if info != 0:
        raise np.linalg.LinAlgError("not positive definite")
    return factor


def cholesky_solve(factor: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``A^-1 b`` from :func:`cholesky`'s factor of ``A`` (``b`` a vector or a matrix)."""
    x, info = lapack.dpotrs(factor, b, lower=1)
    if info != 0:
        raise np.linalg.LinAlgError("singular")
    return x


def positive_definite(A: np.ndarray) -> bool:
    """Whether the symmetric ``A`` is positive definite (its Cholesky factorisation exists)."""
    return bool(lapack.dpotrf(A, lower=1, clean=0)[1] == 0)


def solve_psd(A: np.ndarray, c: np.ndarray, rcond: float = 1e-10) -> tuple[np.ndarray, int]:
    """Minimum-norm solution of ``A x = c`` for a symmetric PSD ``A``, with its rank (:func:`scaled_eigh`)."""
    d, lam, V, keep = scaled_eigh(A, rcond)
    xs = V[:, keep] @ ((V[:, keep].T @ (c / d)) / lam[keep])
    return xs / d, int(keep.sum())


def pinv_psd(A: np.ndarray, rcond: float = 1e-10) -> np.ndarray:
    """Pseudo-inverse of a symmetric PSD matrix (Jacobi-scaled, eigenvalue cutoff ``rcond``)."""
    d, lam, V, keep = scaled_eigh(A, rcond)
    inv = (V[:, keep] / lam[keep]) @ V[:, keep].T
    return inv / d[:, None] / d[None, :]


def scaled_condition_number(A: np.ndarray) -> float:
    """Condition number of the column-scaled regressor, from its Gram ``A = Y^T Y``.

    Columns scaled to unit norm (Gautier & Khalil 1992); ``cond(Y D) = sqrt(cond(D A D))``.
    Returns ``inf`` when a column is empty or the matrix is singular.
    """
    d = np.sqrt(np.clip(np.diag(A), 0.0, None))
    if np.any(d == 0.0):
        return float("inf")
    lam = np.linalg.eigvalsh(A / np.outer(d, d))
    if lam[0] <= lam[-1] * 1e-15:
        return float("inf")
    return float(np.sqrt(lam[-1] / lam[0]))
