"""When is an online estimate good enough to use? A convergence monitor over time."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from payload_estimator.core.estimate import Estimate

__all__ = ["ConvergenceCriteria", "ConvergenceMonitor"]


@dataclass(frozen=True)
class ConvergenceCriteria:
    """Thresholds of :class:`ConvergenceMonitor`.

    Attributes:
        window_s: how long the estimate must stay steady, s.
        mass_rel: largest mass change over the window, relative.
        com_abs: largest COM displacement over the window, m.
        mass_rel_std: largest relative standard deviation of the mass (when known).
        min_samples: samples the estimator must have used.
    """

    window_s: float = 1.0
    mass_rel: float = 0.01
    com_abs: float = 0.003
    mass_rel_std: float = 0.02
    min_samples: int = 50


class ConvergenceMonitor:
    """Decides, estimate after estimate, whether the estimate has converged.

    Converged means: enough samples, physically consistent, a small mass
    uncertainty, and mass and COM steady over the last ``window_s`` seconds.
    :attr:`reason` says what is still missing.
    """

    def __init__(self, criteria: ConvergenceCriteria = ConvergenceCriteria()) -> None:
        self.criteria = criteria
        self._history: deque[tuple[float, float, np.ndarray]] = deque()
        self.converged = False
        self.reason = "no estimate yet"

    def reset(self) -> None:
        self._history.clear()
        self.converged = False
        self.reason = "no estimate yet"

    def update(self, t: float, estimate: Estimate) -> bool:
        """Take the estimate at time ``t`` (s); returns whether it has converged."""
        c = self.criteria
        if not np.all(np.isfinite(estimate.phi)):
            self._history.clear()
            return self._set(False, "the estimate is not finite")
        if self._history and t < self._history[-1][0]:
            self._history.clear()  # the clock went back (a restarted recording or simulator): start over
        elif self._history and t == self._history[-1][0]:
            self._history.pop()  # no new sample since (an input is silent): the same instant, not a new one
        self._history.append((t, estimate.mass, estimate.com.copy()))
        while self._history and self._history[0][0] < t - c.window_s:
            self._history.popleft()
        if estimate.samples_used < c.min_samples:
            return self._set(False, f"{estimate.samples_used} of {c.min_samples} samples")
        if not estimate.physically_consistent:
            return self._set(False, "not physically consistent")
        if estimate.covariance is not None and estimate.mass > 0:
            rel_std = estimate.mass_std / estimate.mass
            if rel_std > c.mass_rel_std:
                return self._set(False, f"mass uncertainty {100 * rel_std:.1f} %")
        span = self._history[-1][0] - self._history[0][0]
        if span < 0.9 * c.window_s:
            return self._set(False, f"steady for {span:.1f} of {c.window_s:.1f} s")
        masses = np.array([h[1] for h in self._history])
        coms = np.array([h[2] for h in self._history])
        mass_change = (masses.max() - masses.min()) / max(abs(estimate.mass), 1e-9)
        if mass_change > c.mass_rel:
            return self._set(False, f"mass still moving ({100 * mass_change:.1f} % in {c.window_s:.1f} s)")
        com_change = float(np.max(np.linalg.norm(coms - coms[-1], axis=1)))
        if com_change > c.com_abs:
            return self._set(False, f"COM still moving ({1e3 * com_change:.1f} mm in {c.window_s:.1f} s)")
        return self._set(True, "converged")

    def _set(self, value: bool, reason: str) -> bool:
        self.converged = value
        self.reason = reason
        return value
