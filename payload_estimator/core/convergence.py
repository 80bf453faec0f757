"""When is an online estimate good enough to use? A convergence monitor over time.

"Converged" is a promise about every quantity that will be handed over (to a
controller, a URDF, a gravity-compensation filter): it is determined by the data
(:class:`~payload_estimator.core.results.Identification`; the inertia may come
from PMD's shape prior), its reported uncertainty is within bounds, it has
stayed steady for a while, the estimate is physically consistent and the model
explains the data (:class:`~payload_estimator.core.results.ModelFit`). Steady means that, over the
window, each quantity moved less than a fixed tolerance *or* less than the uncertainty the estimates
reported said it might (:data:`STEADY_SIGMAS` of their standard deviations, the current one's and the
earlier ones'): an estimate still gaining
information moves by about the uncertainty it loses, and an uncertainty bound wider than the
tolerance would otherwise call "still moving" what the estimate itself reports as that uncertain. An
empty gripper
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
        mass_rel: largest mass change over the window, relative (a larger change is still steady when
            it is within :data:`STEADY_SIGMAS` standard deviations, as are the next two).
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
STEADY_SIGMAS = 2.0
"""A quantity is steady when, over the window, the current estimate stays within this many standard
deviations of each earlier estimate (component by component; the smaller of the two estimates' standard
deviations), even if it moved more than the fixed tolerance. An honest estimate moves, as data come, by
about the uncertainty it loses: on the default demo (PMD, 10 s), the stop's angular accelerations moved
Ixx and Iyy about the COM by 18 % of the mean principal moment in the last second, 1.4 of their
standard deviations at most (14-22 % of it), and with the fixed 10 % alone the demo ended "still
moving". Twice (three times once converged, :data:`STAY_FACTOR`) the standard deviation is more than
such a move; an estimate that moves further moved more than it said it might, or now claims to know
better than the move it just made."""


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
        self._history: deque[_Entry] = deque()
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
        if self._history and t < self._history[-1].t:
            self._history.clear()  # the clock went back (a restarted recording or simulator): start over
        elif self._history and t == self._history[-1].t:
            self._history.pop()  # no new sample since (an input is silent): the same instant, not a new one
        self._history.append(_Entry.of(t, estimate, c.inertia))
        # an estimate holds until the next one (between them no sample entered, e.g. across a gap in the
        # inputs): the newest entry at or before the window's start stands for the estimate at its start
        while len(self._history) > 1 and self._history[1].t <= t - c.window_s:
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
        span = min(self._history[-1].t - self._history[0].t, c.window_s)
        if span < 0.9 * c.window_s:
            return self._set(False, f"steady for {span:.1f} of {c.window_s:.1f} s")
        h = list(self._history)
        masses = np.array([e.values[:1] for e in h])
        mass_change = float(np.ptp(masses)) / max(abs(estimate.mass), 1e-9)
        sigmas = _sigmas_moved(masses, np.array([e.stds[:1] for e in h]))
        if mass_change > k * c.mass_rel and not sigmas[0] <= k * STEADY_SIGMAS:
            return self._set(False, f"mass still moving ({100 * mass_change:.1f} % in {c.window_s:.1f} s"
                                    f"{_in_stds(sigmas[0])})")
        coms = np.array([e.values[1:4] for e in h])
        com_change = float(np.max(np.linalg.norm(coms - coms[-1], axis=1)))
        sigmas = _sigmas_moved(coms, np.array([e.stds[1:4] for e in h]))
        if com_change > k * c.com_abs and not np.max(sigmas) <= k * STEADY_SIGMAS:
            return self._set(False, f"COM still moving ({1e3 * com_change:.1f} mm in {c.window_s:.1f} s"
                                    f"{_in_stds(np.max(sigmas))})")
        if c.inertia:
            inertias = np.array([e.values[4:] for e in h])
            changes = np.ptp(inertias, axis=0) / scale
            sigmas = _sigmas_moved(inertias, np.array([e.stds[4:] for e in h]))
            moving = (changes > k * c.inertia_rel) & ~(sigmas <= k * STEADY_SIGMAS)
            if np.any(moving):
                entry = int(np.argmax(np.where(moving, changes, -np.inf)))
                return self._set(False, f"inertia still moving ({_ENTRY_NAMES[entry]} {100 * changes[entry]:.0f} % "
                                        f"in {c.window_s:.1f} s{_in_stds(sigmas[entry])})")
        return self._set(True, "converged")

    def _no_payload(self, c: ConvergenceCriteria) -> bool:
        """Decide for an empty gripper (:attr:`Identification.empty`): converged on no payload once so for the window.

        Every mass in the window within :data:`NO_PAYLOAD_SIGMAS` times :data:`NO_PAYLOAD_MASS_STD_KG` of
        zero (there is no COM or inertia to settle)."""
        span = min(self._history[-1].t - self._history[0].t, c.window_s)
        if span < 0.9 * c.window_s:
            return self._set(False, f"no payload for {span:.1f} of {c.window_s:.1f} s")
        masses = np.array([e.values[0] for e in self._history])
        if np.max(np.abs(masses)) > NO_PAYLOAD_SIGMAS * NO_PAYLOAD_MASS_STD_KG:
            return self._set(False, "mass still moving towards no payload")
        return self._set(True, "converged: no payload")

    def _set(self, value: bool, reason: str) -> bool:
        self.converged = value
        self.reason = reason
        return value


@dataclass(frozen=True)
class _Entry:
    """One estimate in the window: its time, values and their standard deviations.

    ``values``: ``[m, c (3), inertia about the COM (xx, yy, zz, xy, xz, yz)]``, kg, m, kg m²; ``stds``
    likewise (NaN where unknown, and for the inertia when it is not handed over)."""

    t: float
    values: np.ndarray
    stds: np.ndarray

    @classmethod
    def of(cls, t: float, estimate: Estimate, inertia: bool) -> _Entry:
        I = estimate.inertia_com
        values = np.r_[estimate.mass, estimate.com, I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]]
        stds = np.full(10, np.nan)
        if estimate.covariance is not None:
            stds[0], stds[1:4] = estimate.mass_std, estimate.com_std
            if inertia:
                stds[4:] = estimate.inertia_com_std
        return cls(float(t), values, stds)


def _sigmas_moved(values: np.ndarray, stds: np.ndarray) -> np.ndarray:
    """Per component, the largest ``|x_now - x_h| / min(std_h, std_now)`` over the window's estimates ``h``.

    The move in the smaller of the two standard deviations: neither the earlier estimate nor the current
    one may have claimed to know the quantity better than the move shows. ``values``, ``stds``: (n, k),
    oldest first, the current estimate last. NaN where a standard deviation is unknown or zero (then only
    the fixed tolerance can call it steady)."""
    moved = np.abs(values - values[-1])
    stds = np.minimum(stds, stds[-1])
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(stds > 0.0, moved / stds, np.nan)
    ratio = np.where(moved == 0.0, 0.0, ratio)  # not moved at all: steady whatever the std
    return np.asarray(np.max(ratio, axis=0))


def _in_stds(sigmas: float) -> str:
    """``", 3.2 std"``: how far the estimate moved in its earlier standard deviations (nothing when unknown)."""
    return f", {sigmas:.1f} std" if np.isfinite(sigmas) else ""


def _inertia_scale(estimate: Estimate) -> float:
    """Mean principal moment about the COM, floored at ``m (2 cm)²`` (a point-like payload)."""
    moments = estimate.params.principal_moments()
    return max(float(np.mean(moments)), estimate.mass * 0.02**2, 1e-12)
