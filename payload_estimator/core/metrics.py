"""How far an estimate is from the truth: Nadeau et al.'s metrics and a geodesic distance.

Nadeau, Giamou and Kelly ("Fast Object Inertial Parameter Identification for
Collaborative Robots"), eqs. (10)-(12), define scale-invariant errors in percent that
use the side lengths ``a`` of the object's bounding box:

* mass: ``|m^ - m| / m``;
* COM, per axis: ``|c^_i - c_i| / a_i``, averaged over the three axes;
* inertia, per upper-triangle entry: ``|J^_ij - J_ij| / ((m/12)(delta_ij (a_i² + a_j² + a_k²) - a_i a_j))``,
  i.e. relative to the inertia of a uniform box of the object's size,
  averaged over the six entries. We apply it to the inertia about the COM
  (sensor axes), which does not depend on where the sensor is.

The geodesic distance is the affine-invariant Riemannian distance between the
two 4x4 pseudo-inertia matrices (Lee, Wensing, Park 2019), defined for
physically consistent parameters only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

from payload_estimator.core.inertia import InertialParameters, pseudo_inertia

__all__ = ["ErrorMetrics", "paper_errors", "geodesic_distance", "mean_and_worst"]

_UPPER = ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))


@dataclass(frozen=True)
class ErrorMetrics:
    """Errors of Nadeau et al., eqs. (10)-(12), in percent.

    Attributes:
        mass: eq. (10).
        com_axes: (3,) eq. (11) per axis; ``com`` is their mean.
        inertia_entries: (6,) eq. (12) for xx, xy, xz, yy, yz, zz; ``inertia`` is their mean.
    """

    mass: float
    com_axes: np.ndarray
    inertia_entries: np.ndarray

    @property
    def com(self) -> float:
        """COM error, the mean of :attr:`com_axes`, percent."""
        return float(np.mean(self.com_axes))

    @property
    def inertia(self) -> float:
        """Inertia error, the mean of :attr:`inertia_entries`, percent."""
        return float(np.mean(self.inertia_entries))


def paper_errors(
    estimate: InertialParameters, truth: InertialParameters, bbox_lengths: np.ndarray
) -> ErrorMetrics:
    """Nadeau et al.'s errors of ``estimate`` against ``truth`` for an object of bounding box ``bbox_lengths`` (m).

    Both sets of parameters must be in the same frame; the bounding box is
    measured along that frame's axes. Non-finite estimates give infinite errors.
    """
    a = np.asarray(bbox_lengths, dtype=float)
    m = truth.mass
    if not np.all(np.isfinite(estimate.phi)) or estimate.mass == 0.0:
        return ErrorMetrics(np.inf, np.full(3, np.inf), np.full(6, np.inf))
    e_m = abs(estimate.mass - m) / m * 100.0
    e_c = np.abs(estimate.com - truth.com) / a * 100.0
    J_hat, J = estimate.inertia_com, truth.inertia_com
    e_j = np.empty(6)
    for n, (i, j) in enumerate(_UPPER):
        # (m/12)(delta_ij (a_i² + a_j² + a_k²) - a_i a_j), in magnitude
        if i == j:
            denom = m / 12.0 * (np.sum(a**2) - a[i] * a[j])
        else:
            denom = m / 12.0 * (a[i] * a[j])
        e_j[n] = abs(J_hat[i, j] - J[i, j]) / denom * 100.0
    return ErrorMetrics(float(e_m), e_c, e_j)


def geodesic_distance(a: InertialParameters, b: InertialParameters) -> float:
    """Affine-invariant distance ``sqrt(sum log² lambda_i)`` between pseudo-inertias.

    ``lambda_i`` are the generalised eigenvalues of ``(Pi_b, Pi_a)``. Unitless and
    invariant to a change of frame or of units; infinite when either set of
    parameters is not positive definite.
    """
    Pa, Pb = pseudo_inertia(a), pseudo_inertia(b)
    if np.linalg.eigvalsh(Pa)[0] <= 0.0 or np.linalg.eigvalsh(Pb)[0] <= 0.0:
        return float("inf")
    lam = scipy.linalg.eigh(Pb, Pa, eigvals_only=True)
    return float(np.sqrt(np.sum(np.log(lam) ** 2)))


def mean_and_worst(errors: list) -> str:
    """A benchmark table's cell of error figures: ``"mean (worst)"`` to two decimals, runs without one (NaN) left out.

    ``"no estimate"`` when no run has one."""
    v = np.asarray(errors, dtype=float)
    if v.size == 0 or np.all(np.isnan(v)):
        return "no estimate"
    return f"{np.nanmean(v):.2f} ({np.nanmax(v):.2f})"
