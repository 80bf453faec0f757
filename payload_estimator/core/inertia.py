"""The ten inertial parameters of a rigid body, and every convention change.

The canonical form is the vector of Nadeau, Giamou and Kelly, "Fast Object Inertial
Parameter Identification for Collaborative Robots", eq. (1), about the origin of the
frame the body is expressed in (usually the sensor frame ``S``)::

    phi = [m, m cx, m cy, m cz, Jxx, Jxy, Jxz, Jyy, Jyz, Jzz]

where ``J`` is the inertia tensor **about the frame origin** (not the COM).
Each other convention has exactly one pair of conversion functions here:

* mass + COM + inertia about the COM (URDF ``<inertial>``, ``geometry_msgs/Inertia``,
  Franka ``SetLoad``): :meth:`InertialParameters.from_mass_com_inertia`,
  :attr:`InertialParameters.inertia_com`;
* pinocchio's dynamic-parameter order ``[m, mcx, mcy, mcz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]``
  (about the origin): :func:`phi_to_pinocchio`, :func:`phi_from_pinocchio`;
* ``geometry_msgs/Inertia`` fields: :func:`to_ros_inertia_fields`,
  :func:`from_ros_inertia_fields`;
* another frame (rotation + parallel-axis theorem): :meth:`InertialParameters.transformed`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TypedDict

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "InertialParameters",
    "ConsistencyCheck",
    "skew",
    "vech",
    "unvech",
    "phi_to_pinocchio",
    "phi_from_pinocchio",
    "RosInertiaFields",
    "to_ros_inertia_fields",
    "from_ros_inertia_fields",
    "pseudo_inertia",
    "from_pseudo_inertia",
    "check_physical_consistency",
]

# Index of (row, col) of the symmetric 3x3 tensor in the canonical 6-vector.
_VECH_INDEX = ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))
_PIN_FROM_PAPER = np.array([0, 1, 2, 3, 4, 5, 7, 6, 8, 9])
"""pinocchio order = canonical order[_PIN_FROM_PAPER]: swaps Ixz and Iyy."""


def skew(v: np.ndarray) -> np.ndarray:
    """The 3x3 cross-product matrix ``[v]x`` with ``[v]x u = v x u``."""
    x, y, z = np.asarray(v, dtype=float)
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


def vech(J: np.ndarray) -> np.ndarray:
    """Symmetric 3x3 tensor -> ``[Jxx, Jxy, Jxz, Jyy, Jyz, Jzz]`` (the canonical order)."""
    J = np.asarray(J, dtype=float)
    return np.array([J[i, j] for i, j in _VECH_INDEX])


def unvech(j: ArrayLike) -> np.ndarray:
    """``[Jxx, Jxy, Jxz, Jyy, Jyz, Jzz]`` -> symmetric 3x3 tensor."""
    xx, xy, xz, yy, yz, zz = np.asarray(j, dtype=float)
    return np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])


def _shift_term(mass: float, com: np.ndarray) -> np.ndarray:
    """Parallel-axis term ``m [c]x^T [c]x = m (|c|² I - c c^T)``."""
    c = np.asarray(com, dtype=float)
    return mass * (np.dot(c, c) * np.eye(3) - np.outer(c, c))


@dataclass(frozen=True)
class InertialParameters:
    """Rigid-body inertial parameters about the origin of the frame they are expressed in.

    Attributes:
        phi: (10,) ``[m, m cx, m cy, m cz, Jxx, Jxy, Jxz, Jyy, Jyz, Jzz]``, Nadeau et al.'s eq. (1);
            kg, kg·m, kg·m²; the inertia ``J`` is about the frame origin.
    """

    phi: np.ndarray

    def __post_init__(self) -> None:
        phi = np.array(self.phi, dtype=float).reshape(-1)
        if phi.shape != (10,):
            raise ValueError(f"phi must have 10 entries, got {phi.shape}")
        phi.setflags(write=False)
        object.__setattr__(self, "phi", phi)

    # ------------------------------------------------------------------ builders
    @classmethod
    def from_mass_com_inertia(
        cls, mass: float, com: np.ndarray, inertia_com: np.ndarray
    ) -> InertialParameters:
        """From mass (kg), COM (m) and the inertia tensor about the COM (kg·m², frame axes)."""
        com = np.asarray(com, dtype=float).reshape(3)
        I_c = np.asarray(inertia_com, dtype=float).reshape(3, 3)
        I_c = 0.5 * (I_c + I_c.T)
        J_o = I_c + _shift_term(mass, com)
        return cls(np.concatenate([[mass], mass * com, vech(J_o)]))

    @classmethod
    def point_mass(cls, mass: float, position: np.ndarray) -> InertialParameters:
        """A point mass (kg) at ``position`` (m)."""
        return cls.from_mass_com_inertia(mass, position, np.zeros((3, 3)))

    @classmethod
    def zero(cls) -> InertialParameters:
        """No body at all (the additive identity)."""
        return cls(np.zeros(10))

    # ---------------------------------------------------------------- accessors
    @property
    def mass(self) -> float:
        """Mass, kg."""
        return float(self.phi[0])

    @property
    def first_moment(self) -> np.ndarray:
        """``m c``, kg·m."""
        return self.phi[1:4].copy()

    @property
    def com(self) -> np.ndarray:
        """Centre of mass in the frame, m (NaN when the mass is zero)."""
        if self.mass == 0.0:
            return np.full(3, np.nan)
        return self.phi[1:4] / self.mass

    @property
    def inertia_origin(self) -> np.ndarray:
        """Inertia tensor about the frame origin, kg·m² (3x3)."""
        return unvech(self.phi[4:])

    @property
    def inertia_com(self) -> np.ndarray:
        """Inertia tensor about the COM, frame axes, kg·m² (3x3)."""
        return self._inertia_com.copy()

    def principal_moments(self) -> np.ndarray:
        """Eigenvalues of the inertia about the COM, ascending, kg·m²."""
        return self._principal_moments.copy()

    @cached_property
    def _inertia_com(self) -> np.ndarray:
        # computed once (phi cannot change; an estimate's readers ask often); readers get copies
        if self.mass == 0.0:
            return self.inertia_origin
        return self.inertia_origin - _shift_term(self.mass, self.com)

    @cached_property
    def _principal_moments(self) -> np.ndarray:
        return np.linalg.eigvalsh(self._inertia_com)

    # ------------------------------------------------------------- operations
    def __add__(self, other: InertialParameters) -> InertialParameters:
        """Inertial parameters of two bodies in the same frame are additive."""
        return InertialParameters(self.phi + other.phi)

    def scaled(self, factor: float) -> InertialParameters:
        """The same shape with ``factor`` times the mass (uniform density change)."""
        return InertialParameters(self.phi * factor)

    def transformed(self, R_new_old: np.ndarray, p_new_old: np.ndarray) -> InertialParameters:
        """Express the body in a new frame.

        Args:
            R_new_old: rotation of the current frame in the new one (3x3).
            p_new_old: origin of the current frame in the new one (m).

        The COM moves as ``c' = R c + p``; the inertia about the COM rotates as
        ``R I_c R^T``; the inertia about the new origin follows from the
        parallel-axis theorem.
        """
        R = np.asarray(R_new_old, dtype=float).reshape(3, 3)
        p = np.asarray(p_new_old, dtype=float).reshape(3)
        m = self.mass
        if m == 0.0:
            return InertialParameters.zero()
        return InertialParameters.from_mass_com_inertia(
            m, R @ self.com + p, R @ self.inertia_com @ R.T
        )

    def is_physically_consistent(self, rtol: float = 1e-9) -> bool:
        """True when the parameters are realisable by a non-negative mass density."""
        return check_physical_consistency(self, rtol=rtol).consistent

    def __repr__(self) -> str:  # pragma: no cover - cosmetic
        c = np.array2string(self.com, precision=4)
        return f"InertialParameters(mass={self.mass:.6g} kg, com={c} m, inertia_com=...)"


# ------------------------------------------------------------------ conventions
def phi_to_pinocchio(phi: np.ndarray) -> np.ndarray:
    """Canonical order -> pinocchio ``[m, mcx, mcy, mcz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]``.

    Both are about the frame origin; only ``Ixz`` and ``Iyy`` swap places.
    """
    return np.asarray(phi, dtype=float)[_PIN_FROM_PAPER]


def phi_from_pinocchio(pi: np.ndarray) -> np.ndarray:
    """Pinocchio order -> canonical order (the permutation is its own inverse)."""
    return np.asarray(pi, dtype=float)[_PIN_FROM_PAPER]


class RosInertiaFields(TypedDict):
    """``geometry_msgs/Inertia`` fields (kg, m, kg m² about the COM).

    They are the keyword arguments of :func:`from_ros_inertia_fields`."""

    m: float
    com: tuple[float, float, float]
    ixx: float
    ixy: float
    ixz: float
    iyy: float
    iyz: float
    izz: float


def to_ros_inertia_fields(params: InertialParameters) -> RosInertiaFields:
    """Return the ``geometry_msgs/Inertia`` fields: ``m``, ``com`` (x, y, z), ``ixx ... izz`` about the COM.

    All are zero for zero mass: nothing held, whose COM is undefined."""
    if params.mass == 0.0 and not np.any(params.phi):
        return {"m": 0.0, "com": (0.0, 0.0, 0.0), "ixx": 0.0, "ixy": 0.0, "ixz": 0.0, "iyy": 0.0, "iyz": 0.0,
                "izz": 0.0}
    I_c = params.inertia_com
    com = params.com
    return {
        "m": params.mass,
        "com": (float(com[0]), float(com[1]), float(com[2])),
        "ixx": float(I_c[0, 0]),
        "ixy": float(I_c[0, 1]),
        "ixz": float(I_c[0, 2]),
        "iyy": float(I_c[1, 1]),
        "iyz": float(I_c[1, 2]),
        "izz": float(I_c[2, 2]),
    }


def from_ros_inertia_fields(
    m: float,
    com: tuple[float, float, float],
    ixx: float,
    ixy: float,
    ixz: float,
    iyy: float,
    iyz: float,
    izz: float,
) -> InertialParameters:
    """Inverse of :func:`to_ros_inertia_fields` (inertia about the COM)."""
    I_c = unvech([ixx, ixy, ixz, iyy, iyz, izz])
    return InertialParameters.from_mass_com_inertia(m, np.asarray(com, dtype=float), I_c)


# --------------------------------------------------------- physical consistency
def pseudo_inertia(params: InertialParameters) -> np.ndarray:
    """The 4x4 pseudo-inertia matrix (Wensing, Kim, Slotine 2017).

    ``Pi = [[Sigma, h], [h^T, m]]`` with ``Sigma = tr(J)/2 I - J`` (second moment
    of the mass distribution about the origin) and ``h = m c``. The parameters
    are realisable by a non-negative density exactly when ``Pi`` is positive
    semidefinite (positive definite for a body that is not flat).
    """
    J = params.inertia_origin
    Sigma = 0.5 * np.trace(J) * np.eye(3) - J
    Pi = np.empty((4, 4))
    Pi[:3, :3] = Sigma
    Pi[:3, 3] = params.phi[1:4]
    Pi[3, :3] = params.phi[1:4]
    Pi[3, 3] = params.mass
    return Pi


def from_pseudo_inertia(Pi: np.ndarray) -> InertialParameters:
    """Inverse of :func:`pseudo_inertia`."""
    Pi = np.asarray(Pi, dtype=float)
    Sigma = 0.5 * (Pi[:3, :3] + Pi[:3, :3].T)
    J = np.trace(Sigma) * np.eye(3) - Sigma
    h = 0.5 * (Pi[:3, 3] + Pi[3, :3])
    return InertialParameters(np.concatenate([[Pi[3, 3]], h, vech(J)]))


@dataclass(frozen=True)
class ConsistencyCheck:
    """Outcome of :func:`check_physical_consistency`.

    Attributes:
        mass_positive: ``m > 0``.
        pseudo_inertia_min_eig: smallest eigenvalue of the pseudo-inertia, relative
            to its largest (>= 0 for a realisable body).
        principal_moments: eigenvalues of the inertia about the COM, ascending, kg·m².
        triangle_inequality: ``I1 + I2 >= I3`` for the principal moments (within tolerance).
        consistent: all of the above.
    """

    mass_positive: bool
    pseudo_inertia_min_eig: float
    principal_moments: np.ndarray
    triangle_inequality: bool
    consistent: bool


def check_physical_consistency(params: InertialParameters, rtol: float = 1e-9) -> ConsistencyCheck:
    """Full physical consistency: positive mass and a positive-semidefinite pseudo-inertia.

    ``Pi >= 0`` implies positive principal moments that satisfy the triangle
    inequalities (Wensing et al. 2017); both are reported separately because
    rviz and the robot vendors check them. ``rtol`` absorbs rounding: relative to
    the largest eigenvalue of ``Pi``, and for the principal moments to the larger
    of the largest moment and the inertia about the origin they are computed from
    (a point mass off the origin has moments that are zero up to that rounding).
    """
    finite = bool(np.all(np.isfinite(params.phi)))
    if not finite:
        return ConsistencyCheck(False, -np.inf, np.full(3, np.nan), False, False)
    m_pos = params.mass > 0.0
    eig = np.linalg.eigvalsh(pseudo_inertia(params))
    scale = max(abs(eig[-1]), np.finfo(float).tiny)
    min_rel = float(eig[0] / scale)
    pm = params.principal_moments() if m_pos else np.full(3, np.nan)
    rounding_scale = max(float(np.max(np.abs(pm))), float(np.max(np.abs(params.inertia_origin)))) if m_pos else 0.0
    tol = rtol * max(rounding_scale, np.finfo(float).tiny)
    tri = bool(m_pos and pm[0] >= -tol and pm[0] + pm[1] >= pm[2] - tol)
    consistent = bool(m_pos and min_rel >= -rtol and tri)
    return ConsistencyCheck(m_pos, min_rel, pm, tri, consistent)
