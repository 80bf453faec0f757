"""What every estimator returns: the parameters, their uncertainty and their quality."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from payload_estimator.core.inertia import InertialParameters, check_physical_consistency

__all__ = ["Estimate", "Identification", "ModelFit", "IDENTIFIED", "FROM_PRIOR", "NOT_IDENTIFIED", "NOT_APPLICABLE",
           "com_covariance", "inertia_com_covariance"]

IDENTIFIED = "identified"
"""The data determine the quantity (its standard deviation from the data alone is within bounds)."""
FROM_PRIOR = "prior"
"""The data do not, and the value comes from the estimator's prior (PMD: the shape, uniform density)."""
NOT_IDENTIFIED = "not identified"
"""The data do not, and there is no prior: the value means nothing (a minimum-norm solution)."""
NOT_APPLICABLE = "not applicable"
"""There is no payload (:attr:`Identification.empty`): it has no COM and no inertia."""


@dataclass(frozen=True)
class Identification:
    """What the data determine, quantity by quantity.

    Attributes:
        mass, inertia: :data:`IDENTIFIED`, :data:`FROM_PRIOR` or :data:`NOT_IDENTIFIED`.
        com: the same for each COM axis (x, y, z of the estimate's frame). A payload
            held in one orientation shows its mass and the two COM components across
            gravity only.

    An empty gripper (:func:`~payload_estimator.core.estimators.rating.no_payload`: the mass is
    zero within its uncertainty, and that uncertainty is small in absolute terms) has its mass
    :data:`IDENTIFIED` (as zero) and its COM and inertia :data:`NOT_APPLICABLE`.
    """

    mass: str = IDENTIFIED
    com: tuple[str, str, str] = (IDENTIFIED, IDENTIFIED, IDENTIFIED)
    inertia: str = IDENTIFIED

    @classmethod
    def no_payload(cls) -> Identification:
        """An empty gripper: the mass identified as zero, no COM and no inertia to speak of."""
        return cls(IDENTIFIED, (NOT_APPLICABLE, NOT_APPLICABLE, NOT_APPLICABLE), NOT_APPLICABLE)

    @property
    def empty(self) -> bool:
        """The data say there is no payload (the gripper is empty)."""
        return self.mass == IDENTIFIED and all(c == NOT_APPLICABLE for c in self.com)

    @property
    def mass_and_com(self) -> bool:
        """Mass and every COM axis determined by the data."""
        return self.mass == IDENTIFIED and all(c == IDENTIFIED for c in self.com)

    def missing(self, inertia: bool = True) -> list[str]:
        """The quantities the data do not determine (``inertia``: count the inertia too)."""
        out = [] if self.mass == IDENTIFIED else ["mass"]
        out += [f"COM {axis}" for axis, c in zip("xyz", self.com) if c not in (IDENTIFIED, NOT_APPLICABLE)]
        if inertia and self.inertia == NOT_IDENTIFIED:
            out.append("inertia")
        return out

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dictionary: ``mass``, ``com`` (three labels), ``inertia`` and ``empty``."""
        return {"mass": self.mass, "com": list(self.com), "inertia": self.inertia, "empty": self.empty}


@dataclass(frozen=True)
class ModelFit:
    """Whether the model explains the data at the noise level the estimator itself assumes.

    Attributes:
        checked: there were enough data to tell (else ``good`` is True and nothing is known).
        good: neither test failed.
        persistence: how much longer the residuals stay correlated than noise does
            (long-block over short-block correlation factor, median over the channels;
            about 1 when the model is right, large when the residual follows the motion:
            a contact, a wrong frame or sign).
        excess: for estimators with constraints or a prior (PMD), how far the estimate is
            from the unconstrained least-squares fit, as a chi-square per unknown under
            the data's own covariance (about 1 when the shape can hold the data).
        cause: what probably went wrong and what to do, when not good.
        shape_holds: False when the excess says the shape cannot hold the payload: the estimate's mass and
            COM are then the data's, and its inertia, which came from that shape, is not identified.
    """

    checked: bool = False
    good: bool = True
    persistence: float = float("nan")
    excess: float = float("nan")
    cause: str = ""
    shape_holds: bool = True

    @property
    def label(self) -> str:
        """``good``, ``poor`` or ``unknown`` (too few data)."""
        return "unknown" if not self.checked else "good" if self.good else "poor"

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dictionary: ``fit`` (the label), ``persistence``, ``excess``, ``cause``.

        Non-finite numbers are null."""
        def num(x: float) -> float | None:
            return float(x) if np.isfinite(x) else None

        return {"fit": self.label, "persistence": num(self.persistence), "excess": num(self.excess),
                "cause": self.cause}


@dataclass(frozen=True)
class Estimate:
    """A payload estimate in the sensor frame ``S``.

    Attributes:
        estimator: estimator name (a key of :data:`~payload_estimator.core.estimators.ESTIMATORS`).
        params: the inertial parameters, about the sensor origin.
        covariance: (10, 10) covariance of ``phi`` (its order), or None when
            the data do not determine it.
        bias: (6,) estimated F/T offset ``[N, N, N, N·m, N·m, N·m]`` in S, or None
            when offsets were not estimated.
        residual_rms: (6,) RMS of the wrench residual per channel (N, N·m).
        condition_number: condition number of the column-scaled regressor
            (Gautier & Khalil 1992); ``inf`` when rank deficient.
        samples_used: samples that entered the statistics.
        inertia_identifiable: whether the data determine the inertia tensor
            (standard deviation of each principal moment below a fraction of it).
        dynamism: mean dynamism ``nu`` of the samples, Nadeau et al.'s eq. (4).
        extras: estimator-specific arrays, e.g. PMD's ``points_in_sensor`` (n, 3), m,
            and ``point_masses`` (n,), kg (what the rviz markers draw).
        identification: which quantities the data determine.
        model_fit: whether the model explains the data.
        bias_covariance: (6, 6) covariance of ``bias``, N² and (N·m)², or None when unknown (or
            offsets not estimated, or not asked for: ``Estimator.estimate(offsets_uncertainty=True)``);
            what a payload tracker carries over to the next payload.
        bias_rate: (6,) N/s and N·m/s, how fast ``bias`` drifts as the newest offset window shows
            it, or None (offsets not estimated, constant over the run, or not asked for).
        physically_consistent: see :func:`~payload_estimator.core.inertia.check_physical_consistency`.
    """

    estimator: str
    params: InertialParameters
    covariance: np.ndarray | None
    bias: np.ndarray | None
    residual_rms: np.ndarray
    condition_number: float
    samples_used: int
    inertia_identifiable: bool
    dynamism: float = 0.0
    extras: Mapping[str, np.ndarray] = field(default_factory=dict)
    identification: Identification = field(default_factory=Identification)
    model_fit: ModelFit = field(default_factory=ModelFit)
    bias_covariance: np.ndarray | None = None
    bias_rate: np.ndarray | None = None
    physically_consistent: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "physically_consistent", check_physical_consistency(self.params).consistent
        )

    # ------------------------------------------------------------------ values
    @property
    def mass(self) -> float:
        """Mass, kg."""
        return self.params.mass

    @property
    def com(self) -> np.ndarray:
        """COM in the sensor frame, m."""
        return self.params.com

    @property
    def inertia_com(self) -> np.ndarray:
        """Inertia about the COM, sensor axes, kg·m²."""
        return self.params.inertia_com

    @property
    def phi(self) -> np.ndarray:
        """(10,) inertial parameters about the sensor origin (:class:`InertialParameters`)."""
        return self.params.phi

    # ------------------------------------------------------------- uncertainty
    @cached_property
    def phi_std(self) -> np.ndarray:
        """(10,) standard deviations of ``phi`` (NaN when unknown)."""
        if self.covariance is None:
            return _frozen(np.full(10, np.nan))
        return _frozen(np.sqrt(np.clip(np.diag(self.covariance), 0.0, None)))

    @property
    def mass_std(self) -> float:
        """Standard deviation of the mass, kg (NaN when unknown)."""
        return float(self.phi_std[0])

    @cached_property
    def com_covariance(self) -> np.ndarray:
        """(3, 3) covariance of the COM, first-order propagation of ``c = (m c) / m``."""
        if self.covariance is None:
            return _frozen(np.full((3, 3), np.nan))
        return _frozen(com_covariance(self.params.phi, self.covariance))

    @cached_property
    def com_std(self) -> np.ndarray:
        """(3,) standard deviation of the COM, m."""
        return _frozen(np.sqrt(np.clip(np.diag(self.com_covariance), 0.0, None)))

    @cached_property
    def inertia_com_covariance(self) -> np.ndarray:
        """(6, 6) covariance of the inertia about the COM, entries ``xx, yy, zz, xy, xz, yz``, kg² m⁴.

        First-order propagation of ``I_c = J - (|h|² I - h h^T) / m``, ``h = m c``."""
        if self.covariance is None:
            return _frozen(np.full((6, 6), np.nan))
        return _frozen(inertia_com_covariance(self.params.phi, self.covariance))

    @cached_property
    def inertia_com_std(self) -> np.ndarray:
        """(6,) standard deviation of the inertia about the COM, ``xx, yy, zz, xy, xz, yz``, kg m²."""
        return _frozen(np.sqrt(np.clip(np.diag(self.inertia_com_covariance), 0.0, None)))

    # ------------------------------------------------------------------ output
    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dictionary (SI units, sensor frame).

        Quantities the data do not determine and no prior supplies (:data:`NOT_IDENTIFIED`)
        are null, not a number."""

        def arr(x: np.ndarray | None) -> Any:
            if x is None:
                return None
            return np.where(np.isfinite(x), x, np.nan).tolist()

        def num(x: float) -> float | None:
            return float(x) if np.isfinite(x) else None

        ident = self.identification
        com: Any = [float(c) if status not in (NOT_IDENTIFIED, NOT_APPLICABLE) and np.isfinite(c) else None
                    for c, status in zip(self.com, ident.com)]
        inertia_known = ident.inertia not in (NOT_IDENTIFIED, NOT_APPLICABLE)
        return {
            "estimator": self.estimator,
            "mass": self.mass if ident.mass != NOT_IDENTIFIED else None,
            "com": com,
            "inertia_com": arr(self.inertia_com) if inertia_known else None,
            "inertia_com_std": (arr(self.inertia_com_std) if inertia_known and self.covariance is not None
                                else None),
            "identification": ident.to_dict(),
            "model_fit": self.model_fit.to_dict(),
            "phi": arr(self.phi),
            "phi_std": arr(self.phi_std) if self.covariance is not None else None,
            "mass_std": num(self.mass_std),
            "com_std": arr(self.com_std) if self.covariance is not None else None,
            "bias": arr(self.bias),
            "residual_rms": arr(self.residual_rms),
            "condition_number": num(self.condition_number),
            "samples_used": int(self.samples_used),
            "no_payload": ident.empty,
            "inertia_identifiable": bool(self.inertia_identifiable),
            "physically_consistent": bool(self.physically_consistent),
            "dynamism": num(self.dynamism),
        }


def _frozen(a: np.ndarray) -> np.ndarray:
    """``a``, read-only: an estimate's derived values are computed once (read by every output) and shared."""
    a.setflags(write=False)
    return a


_ENTRIES = ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2))
_PHI_INDEX = {(0, 0): 4, (0, 1): 5, (0, 2): 6, (1, 1): 7, (1, 2): 8, (2, 2): 9}
_ENTRY_ROWS = np.array([i for i, _ in _ENTRIES])
_ENTRY_COLS = np.array([j for _, j in _ENTRIES])
_ENTRY_PHI = np.array([_PHI_INDEX[entry] for entry in _ENTRIES])


def com_covariance(phi: np.ndarray, covariance: np.ndarray) -> np.ndarray:
    """Return the (3, 3) covariance of the COM ``c = h / m`` (``h = m c``), m².

    First-order propagation of the (10, 10) covariance of ``phi``; NaN when the mass is not
    positive."""
    m = float(phi[0])
    if not m > 0.0:
        return np.full((3, 3), np.nan)
    Jac = np.zeros((3, 4))
    Jac[:, 0] = -np.asarray(phi[1:4], dtype=float) / m**2
    Jac[:, 1:4] = np.eye(3) / m
    return Jac @ np.asarray(covariance, dtype=float)[:4, :4] @ Jac.T


def inertia_com_covariance(phi: np.ndarray, covariance: np.ndarray) -> np.ndarray:
    """Return the (6, 6) covariance of the inertia about the COM, entries ``xx, yy, zz, xy, xz, yz``, kg² m⁴.

    First-order propagation of ``I_c = J - (|h|² I - h h^T) / m`` from the (10, 10) covariance
    of ``phi``; NaN when the mass is not positive."""
    if not float(phi[0]) > 0.0:
        return np.full((6, 6), np.nan)
    Jac = _inertia_com_jacobian(np.asarray(phi, dtype=float))
    return Jac @ np.asarray(covariance, dtype=float) @ Jac.T


def _inertia_com_jacobian(phi: np.ndarray) -> np.ndarray:
    """(6, 10) derivative of the inertia about the COM (entries xx, yy, zz, xy, xz, yz) by ``phi``.

    ``I_c = J - S(h) / m`` with ``S(h) = |h|² I - h h^T``: by ``J`` the identity on its
    entry, by ``m`` ``S(h) / m²``, by ``h_k`` ``-(2 h_k I - e_k h^T - h e_k^T) / m``.
    """
    m, h = float(phi[0]), np.asarray(phi[1:4], dtype=float)
    S = float(h @ h) * np.eye(3) - np.outer(h, h)
    # dS_ij / dh_k = 2 h_k delta_ij - delta_ik h_j - h_i delta_jk, for the six entries at once
    rows, cols = _ENTRY_ROWS, _ENTRY_COLS
    eye = np.eye(3)
    dS = (2.0 * (rows == cols)[:, None] * h[None, :]
          - eye[rows] * h[cols][:, None] - h[rows][:, None] * eye[cols])  # (6, 3): entry by h_k
    Jac = np.zeros((6, 10))
    Jac[np.arange(6), _ENTRY_PHI] = 1.0
    Jac[:, 0] = S[rows, cols] / m**2
    Jac[:, 1:4] = -dS / m
    return Jac
