"""What every estimator returns: the parameters, their uncertainty and their quality."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from payload_estimator.core.inertia import InertialParameters, check_physical_consistency

__all__ = ["Estimate"]


@dataclass(frozen=True)
class Estimate:
    """A payload estimate in the sensor frame ``S``.

    Attributes:
        method: estimator name (a key of :data:`~payload_estimator.core.estimators.ESTIMATORS`).
        params: the inertial parameters, about the sensor origin.
        covariance: (10, 10) covariance of ``phi`` (paper order), or None when
            the data do not determine it.
        bias: (6,) estimated F/T offset ``[N, N, N, N·m, N·m, N·m]`` in S, or None
            when offsets were not estimated.
        residual_rms: (6,) RMS of the wrench residual per channel (N, N·m).
        condition_number: condition number of the column-scaled regressor
            (Gautier & Khalil 1992); ``inf`` when rank deficient.
        samples_used: samples that entered the statistics.
        inertia_identifiable: whether the data determine the inertia tensor
            (standard deviation of each principal moment below a fraction of it).
        dynamism: mean dynamism ``nu`` of the samples, paper 004 eq. (4).
        extras: estimator-specific arrays, e.g. PMD's ``points_in_sensor`` (n, 3), m,
            and ``point_masses`` (n,), kg (what the rviz markers draw).
        physically_consistent: see :func:`~payload_estimator.core.inertia.check_physical_consistency`.
    """

    method: str
    params: InertialParameters
    covariance: np.ndarray | None
    bias: np.ndarray | None
    residual_rms: np.ndarray
    condition_number: float
    samples_used: int
    inertia_identifiable: bool
    dynamism: float = 0.0
    extras: Mapping[str, np.ndarray] = field(default_factory=dict)
    physically_consistent: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "physically_consistent", check_physical_consistency(self.params).consistent
        )

    # ------------------------------------------------------------------ values
    @property
    def mass(self) -> float:
        """kg."""
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
        return self.params.phi

    # ------------------------------------------------------------- uncertainty
    @property
    def phi_std(self) -> np.ndarray:
        """(10,) standard deviations of ``phi`` (NaN when unknown)."""
        if self.covariance is None:
            return np.full(10, np.nan)
        return np.sqrt(np.clip(np.diag(self.covariance), 0.0, None))

    @property
    def mass_std(self) -> float:
        return float(self.phi_std[0])

    @property
    def com_covariance(self) -> np.ndarray:
        """(3, 3) covariance of the COM, first-order propagation of ``c = (m c) / m``."""
        if self.covariance is None or self.mass <= 0.0:
            return np.full((3, 3), np.nan)
        m = self.mass
        Jac = np.zeros((3, 4))
        Jac[:, 0] = -self.params.phi[1:4] / m**2
        Jac[:, 1:4] = np.eye(3) / m
        return Jac @ self.covariance[:4, :4] @ Jac.T

    @property
    def com_std(self) -> np.ndarray:
        """(3,) standard deviation of the COM, m."""
        return np.sqrt(np.clip(np.diag(self.com_covariance), 0.0, None))

    # ------------------------------------------------------------------ output
    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (SI units, sensor frame)."""

        def arr(x: np.ndarray | None) -> Any:
            if x is None:
                return None
            return np.where(np.isfinite(x), x, np.nan).tolist()

        def num(x: float) -> float | None:
            return float(x) if np.isfinite(x) else None

        return {
            "method": self.method,
            "mass": self.mass,
            "com": arr(self.com),
            "inertia_com": arr(self.inertia_com),
            "phi": arr(self.phi),
            "phi_std": arr(self.phi_std) if self.covariance is not None else None,
            "mass_std": num(self.mass_std),
            "com_std": arr(self.com_std) if self.covariance is not None else None,
            "bias": arr(self.bias),
            "residual_rms": arr(self.residual_rms),
            "condition_number": num(self.condition_number),
            "samples_used": int(self.samples_used),
            "inertia_identifiable": bool(self.inertia_identifiable),
            "physically_consistent": bool(self.physically_consistent),
            "dynamism": num(self.dynamism),
        }
