"""When is an online estimate good enough to use? A convergence monitor over time.

"Converged" is a promise about every quantity that will be handed over (to a
controller, a URDF, a gravity-compensation filter): it is determined by the data
(:class:`~payload_estimator.core.results.Identification`; the inertia may come
from PMD's shape prior), its reported uncertainty is within bounds, it has
stayed steady for a while, the estimate is physically consistent and the model
explains the data (:class:`~payload_estimator.core.results.ModelFit`). An empty gripper
(:attr:`~payload_estimator.core.results.Identification.empty`) converges on no payload once it has
read as none for the window.
Which quantities are handed over is :attr:`ConvergenceCriteria.inertia`: mass
and COM always, the inertia tensor when the target takes it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from payload_estimator.core.estimators.rating import NO_PAYLOAD_MASS_STD_KG, NO_PAYLOAD_SIGMAS
from payload_estimator.core.results import Estimate

__all__ = ["ConvergenceCriteria", "ConvergenceMonitor"]


@dataclass(frozen=True)
class ConvergenceCriteria:
    """Thresholds of :class:`ConvergenceMonitor`.

    Attributes:
        window_s: how long the estimate must stay steady, s.
        mass_rel: largest mass change over the window, relative.
        com_abs: largest COM displacement over the window, m.
        mass_rel_std: largest relative standard deviation of the mass.
        com_std: largest standard deviation of each COM component, m.
        inertia: the inertia is handed over too: it must be identified (or come from a
            shape prior), certain and steady.
        inertia_rel: largest change of any inertia entry about the COM over the window,
            relative to the mean principal moment.
        inertia_rel_std: largest standard deviation of each inertia entry about the COM,
            relative to the mean principal moment.
        min_samples: samples the estimator must have used.
    """

    window_s: float = 1.0
    mass_rel: float = 0.01
    com_abs: float = 0.003
    mass_rel_std: float = 0.02
    com_std: float = 0.005
    inertia: bool = True
    inertia_rel: float = 0.1
    inertia_rel_std: float = 0.25
    min_samples: int = 50


_ENTRY_NAMES = ("Ixx", "Iyy", "Izz", "Ixy", "Ixz", "Iyz")


STAY_FACTOR = 1.5
"""Once converged, an estimate stays so until its uncertainty or its movement exceeds this many times the
bound that converging took (hysteresis: an estimate at the edge of a bound does not flicker)."""


class ConvergenceMonitor:
    """Decides, estimate after estimate, whether the estimate has converged.

    Converged means: enough samples, physically consistent (a positive mass when the inertia
    is not handed over), a model that fits, every
    handed-over quantity identified and within its uncertainty bound, and all of them
    steady over the last ``window_s`` seconds. Once converged, the uncertainty and steadiness bounds
    are :data:`STAY_FACTOR` times wider. :attr:`reason` says what is still missing.
    """

    def __init__(self, criteria: ConvergenceCriteria = ConvergenceCriteria()) -> None:
        self.criteria = criteria
        self._history: deque[tuple[float, float, np.ndarray, np.ndarray]] = deque()
        self.converged = False
        self.reason = "no estimate yet"

    def reset(self) -> None:
        """Forget every estimate seen: not converged, no estimate yet."""
        self._history.clear()
        self.converged = False
        self.reason = "no estimate yet"

    def update(self, t: float, estimate: Estimate) -> bool:
        """Take the estimate at time ``t`` (s); returns whether it has converged."""
        c = self.criteria
        k = STAY_FACTOR if self.converged else 1.0  # the bounds an estimate must stay within once converged
        if not np.all(np.isfinite(estimate.phi)):
            self._history.clear()
            return self._set(False, "the estimate is not finite")
        if self._history and t < self._history[-1][0]:
            self._history.clear()  # the clock went back (a restarted recording or simulator): start over
        elif self._history and t == self._history[-1][0]:
            self._history.pop()  # no new sample since (an input is silent): the same instant, not a new one
        I = estimate.inertia_com
        entries = np.array([I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]])
        self._history.append((t, estimate.mass, estimate.com.copy(), entries))
        # an estimate holds until the next one (between them no sample entered, e.g. across a gap in the
        # inputs): the newest entry at or before the window's start stands for the estimate at its start
        while len(self._history) > 1 and self._history[1][0] <= t - c.window_s:
            self._history.popleft()
        if estimate.samples_used < c.min_samples:
            return self._set(False, f"{estimate.samples_used} of {c.min_samples} samples")
        if estimate.model_fit.checked and not estimate.model_fit.good:
            return self._set(False, f"model fit poor: {estimate.model_fit.cause}")
        if estimate.identification.empty:
            return self._no_payload(c)
        missing = estimate.identification.missing(inertia=c.inertia)
        if missing:
            return self._set(False, f"not identified from the data: {', '.join(missing)} "
                                    "(move the payload through more orientations, or faster)")
        if c.inertia and not estimate.physically_consistent:
            return self._set(False, "not physically consistent")
        if estimate.mass <= 0.0:  # all that consistency asks of mass and COM alone
            return self._set(False, "the mass is not positive")
        if estimate.covariance is None:
            return self._set(False, "uncertainty unknown")
        rel_std = estimate.mass_std / estimate.mass
        if not rel_std <= k * c.mass_rel_std:
            return self._set(False, f"mass uncertainty {100 * rel_std:.1f} %")
        com_std = estimate.com_std
        if not np.all(com_std <= k * c.com_std):
            axis = int(np.argmax(com_std))
            return self._set(False, f"COM {'xyz'[axis]} uncertainty {1e3 * com_std[axis]:.1f} mm")
        scale = _inertia_scale(estimate)
        if c.inertia:
            istd = estimate.inertia_com_std / scale
            if not np.all(istd <= k * c.inertia_rel_std):
                entry = int(np.argmax(istd))
                return self._set(False, f"inertia uncertainty {_ENTRY_NAMES[entry]} {100 * istd[entry]:.0f} %")
        span = min(self._history[-1][0] - self._history[0][0], c.window_s)
        if span < 0.9 * c.window_s:
            return self._set(False, f"steady for {span:.1f} of {c.window_s:.1f} s")
        masses = np.array([h[1] for h in self._history])
        coms = np.array([h[2] for h in self._history])
        mass_change = (masses.max() - masses.min()) / max(abs(estimate.mass), 1e-9)
        if mass_change > k * c.mass_rel:
            return self._set(False, f"mass still moving ({100 * mass_change:.1f} % in {c.window_s:.1f} s)")
        com_change = float(np.max(np.linalg.norm(coms - coms[-1], axis=1)))
        if com_change > k * c.com_abs:
            return self._set(False, f"COM still moving ({1e3 * com_change:.1f} mm in {c.window_s:.1f} s)")
        if c.inertia:
            inertias = np.array([h[3] for h in self._history])
            change = np.max(inertias.max(axis=0) - inertias.min(axis=0)) / scale
            if change > k * c.inertia_rel:
                return self._set(False, f"inertia still moving ({100 * change:.0f} % in {c.window_s:.1f} s)")
        return self._set(True, "converged")

    def _no_payload(self, c: ConvergenceCriteria) -> bool:
        """Decide for an empty gripper (:attr:`Identification.empty`): converged on no payload once so for the window.

        Every mass in the window within :data:`NO_PAYLOAD_SIGMAS` times :data:`NO_PAYLOAD_MASS_STD_KG` of
        zero (there is no COM or inertia to settle)."""
        span = min(self._history[-1][0] - self._history[0][0], c.window_s)
        if span < 0.9 * c.window_s:
            return self._set(False, f"no payload for {span:.1f} of {c.window_s:.1f} s")
        masses = np.array([h[1] for h in self._history])
        if np.max(np.abs(masses)) > NO_PAYLOAD_SIGMAS * NO_PAYLOAD_MASS_STD_KG:
            return self._set(False, "mass still moving towards no payload")
        return self._set(True, "converged: no payload")

    def _set(self, value: bool, reason: str) -> bool:
        self.converged = value
        self.reason = reason
        return value


def _inertia_scale(estimate: Estimate) -> float:
    """Mean principal moment about the COM, floored at ``m (2 cm)²`` (a point-like payload)."""
    moments = estimate.params.principal_moments()
    return max(float(np.mean(moments)), estimate.mass * 0.02**2, 1e-12)
