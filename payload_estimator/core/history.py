"""A time series of estimates, for plots, reports and convergence checks."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from payload_estimator.core.results import Estimate

__all__ = ["EstimateHistory"]


@dataclass
class EstimateHistory:
    """Estimates recorded over time (sensor frame, SI units), appended in time order."""

    t: list[float] = field(default_factory=list)
    mass: list[float] = field(default_factory=list)
    mass_std: list[float] = field(default_factory=list)
    com: list[np.ndarray] = field(default_factory=list)
    com_std: list[np.ndarray] = field(default_factory=list)
    inertia_com: list[np.ndarray] = field(default_factory=list)
    consistent: list[bool] = field(default_factory=list)
    converged: list[bool] = field(default_factory=list)
    samples: list[int] = field(default_factory=list)
    mass_com_converged: list[bool] = field(default_factory=list)

    def append(self, t: float, estimate: Estimate, converged: bool, mass_com_converged: bool | None = None) -> None:
        """Record ``estimate`` at ``t`` (s).

        Args:
            t: time of the estimate, s.
            estimate: the estimate.
            converged: whether it had converged.
            mass_com_converged: whether mass and COM alone had converged (default: ``converged``).
        """
        self.t.append(float(t))
        self.mass.append(estimate.mass)
        self.mass_std.append(estimate.mass_std)
        self.com.append(estimate.com.copy())
        self.com_std.append(estimate.com_std.copy())
        self.inertia_com.append(estimate.inertia_com.copy())
        self.consistent.append(bool(estimate.physically_consistent))
        self.converged.append(bool(converged))
        self.samples.append(int(estimate.samples_used))
        self.mass_com_converged.append(bool(converged if mass_com_converged is None else mass_com_converged))

    def __len__(self) -> int:
        return len(self.t)

    def first_converged_time(self, mass_com: bool = False) -> float | None:
        """Return the time of the first estimate after which every estimate stayed converged, or None.

        With ``mass_com``, only mass and COM count."""
        flags = self.mass_com_converged if mass_com else self.converged
        if not flags or not flags[-1]:
            return None
        k = len(flags) - 1
        while k > 0 and flags[k - 1]:
            k -= 1
        return self.t[k]

    def arrays(self) -> dict[str, np.ndarray]:
        """Everything as numpy arrays (for saving or plotting)."""
        return {
            "t": np.array(self.t),
            "mass": np.array(self.mass),
            "mass_std": np.array(self.mass_std),
            "com": np.array(self.com).reshape(-1, 3),
            "com_std": np.array(self.com_std).reshape(-1, 3),
            "inertia_com": np.array(self.inertia_com).reshape(-1, 3, 3),
            "consistent": np.array(self.consistent),
            "converged": np.array(self.converged),
            "mass_com_converged": np.array(self.mass_com_converged),
            "samples": np.array(self.samples),
        }
