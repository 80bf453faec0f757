"""The convergence monitor's steadiness: an estimate is steady when it moves less than a fixed tolerance or
less than its own uncertainty says it may, and still moving when it moves more than both."""

from __future__ import annotations

import numpy as np
import pytest

from payload_estimator.core.convergence import STAY_FACTOR, STEADY_SIGMAS, ConvergenceCriteria, ConvergenceMonitor
from payload_estimator.core.inertia import InertialParameters
from payload_estimator.core.results import Estimate

MASS_KG = 0.8
COM_M = np.zeros(3)
"""m: at the sensor's origin, so the inertia about the COM has the covariance of the inertia about the origin."""
MOMENT = 1e-3
"""kg m²: each principal moment about the COM, so the mean principal moment the inertia is measured in."""


def _estimate(mass=MASS_KG, com=COM_M, ixx=MOMENT, mass_std=1e-3, com_std=1e-4, inertia_std=0.05 * MOMENT):
    """An estimate with these standard deviations (independent; the inertia's about the origin, about the COM
    too while the COM is near the origin)."""
    params = InertialParameters.from_mass_com_inertia(mass, np.asarray(com, dtype=float),
                                                      np.diag([ixx, MOMENT, MOMENT]))
    cov = np.diag(np.r_[mass_std**2, np.full(3, (mass * com_std) ** 2), np.full(6, inertia_std**2)])
    return Estimate("wls", params, cov, None, np.zeros(6), 10.0, 500, True)


def _run(estimates, t0=0.0):
    """Feed estimates at 10 Hz; return the monitor."""
    monitor = ConvergenceMonitor()
    for k, est in enumerate(estimates):
        monitor.update(t0 + 0.1 * k, est)
    return monitor


N = 11
"""Estimates per run, at 10 Hz: the first steadiness check (a window of 0.9 s) at the 10th, the last a
1 s window, all before any hysteresis (:data:`STAY_FACTOR`) applies."""


def _share(k):
    """How far the move has gone at the ``k``-th estimate: all of it over the run's 1 s."""
    return min(k, N - 1) / (N - 1)


def _ramp(n, **kwargs_of_k):
    """``n`` estimates, each keyword a function of the estimate's index."""
    return [_estimate(**{name: f(k) for name, f in kwargs_of_k.items()}) for k in range(n)]


def test_the_inertia_moving_within_its_uncertainty_converges_and_beyond_it_does_not():
    """The default demo's case: the inertia's standard deviation 20 % of the mean principal moment (within the
    25 % bound), Ixx moving 15 % of it in the last second (more than the fixed 10 %), as data come that
    the estimate said might move it that far: converged. The same move with a standard deviation of 5 %
    is three of them: still moving, and the reason says by how much."""
    move = 0.15 * MOMENT  # over 1 s: 10 steps of 0.1 s
    ixx = {"ixx": lambda k: MOMENT + move * _share(k)}
    honest = _run(_ramp(N, **ixx, inertia_std=lambda k: 0.2 * MOMENT))
    assert honest.converged, honest.reason
    overconfident = _run(_ramp(N, **ixx, inertia_std=lambda k: 0.05 * MOMENT))
    assert not overconfident.converged
    # 15 % of the mean principal moment before the move, 14 % of it after
    assert overconfident.reason == "inertia still moving (Ixx 14 % in 1.0 s, 3.0 std)"


@pytest.mark.parametrize("move, steady", [(0.05, True), (0.2, False)])
def test_a_move_within_the_fixed_tolerance_is_steady_however_certain_the_estimate(move, steady):
    """The tolerance stays: 5 % of the mean principal moment in a second with a standard deviation of 0.1 %
    (50 of them) is steady, 20 % is not."""
    monitor = _run(_ramp(N, ixx=lambda k: MOMENT * (1 + move * _share(k)), inertia_std=lambda k: 1e-3 * MOMENT))
    assert monitor.converged is steady, monitor.reason


@pytest.mark.parametrize("sigmas, converged", [(0.8 * STEADY_SIGMAS, True), (1.2 * STEADY_SIGMAS, False)])
def test_mass_and_com_steadiness_follow_their_uncertainty_too(sigmas, converged):
    """Mass 1.5 % std (within the 2 % bound) moving ``sigmas`` of it (beyond the fixed 1 %); the COM 4 mm std
    moving ``sigmas`` of it along z (beyond the fixed 3 mm)."""
    mass_std, com_std = 0.015 * MASS_KG, 0.004
    mass = _run(_ramp(N, mass=lambda k: MASS_KG + sigmas * mass_std * _share(k),
                      mass_std=lambda k: mass_std))
    assert mass.converged is converged, mass.reason
    com = _run(_ramp(N, com=lambda k: COM_M + [0.0, 0.0, sigmas * com_std * _share(k)],
                     com_std=lambda k: com_std))
    assert com.converged is converged, com.reason
    if not converged:
        assert mass.reason.startswith("mass still moving (") and "std)" in mass.reason
        assert com.reason.startswith("COM still moving (") and "std)" in com.reason


@pytest.mark.parametrize("before, after, steady", [(0.2, 0.2, True), (0.2, 0.02, False), (0.02, 0.2, False)])
def test_the_move_is_measured_in_the_smaller_of_the_earlier_and_the_current_uncertainty(before, after, steady):
    """A jump of 15 % of the mean principal moment with standard deviations of 20 % before and after it is
    steady; the same jump is still moving when the estimate grows confident with it (2 % after: it now
    claims to know better than the move it just made) and when it was confident before it (2 % before:
    it moved further than it said it might), whatever the other estimate reports."""
    def jump(k):
        return MOMENT * (1.15 if k >= 5 else 1.0)

    monitor = _run(_ramp(N, ixx=jump, inertia_std=lambda k: (after if k >= 5 else before) * MOMENT))
    assert monitor.converged is steady, monitor.reason
    if not steady:  # 15 % of the mean principal moment before the jump, 14 % after it
        assert monitor.reason == "inertia still moving (Ixx 14 % in 1.0 s, 7.5 std)"


def test_once_converged_the_bound_is_wider_but_a_real_move_still_unsettles_it():
    """Hysteresis: converged, a move of 2.5 standard deviations (between :data:`STEADY_SIGMAS` and
    :data:`STAY_FACTOR` times it, and beyond the fixed tolerance) keeps it converged; one of 4 does not."""
    assert STEADY_SIGMAS < 2.5 < STAY_FACTOR * STEADY_SIGMAS < 4.0
    std = 0.08 * MOMENT  # 2.5 of them: 19 % of the mean principal moment, more than 1.5 x 10 %
    for sigmas, converged in ((2.5, True), (4.0, False)):
        monitor = ConvergenceMonitor()
        for k in range(20):
            monitor.update(0.1 * k, _estimate(inertia_std=std))
        assert monitor.converged
        monitor.update(2.0, _estimate(ixx=MOMENT + sigmas * std, inertia_std=std))
        assert monitor.converged is converged, (sigmas, monitor.reason)


def test_an_unknown_uncertainty_leaves_only_the_tolerance():
    """An earlier estimate in the window without a covariance: its move cannot be weighed by its uncertainty,
    so the fixed tolerance decides (a move of 20 % of the mean principal moment: still moving)."""
    estimates = _ramp(N, ixx=lambda k: MOMENT * (1 + 0.2 * _share(k)), inertia_std=lambda k: 0.2 * MOMENT)
    unknown = estimates[5]
    estimates[5] = Estimate("wls", unknown.params, None, None, np.zeros(6), 10.0, 500, True)
    monitor = ConvergenceMonitor()
    for k, est in enumerate(estimates):
        monitor.update(0.1 * k, est)
    assert not monitor.converged and monitor.reason == "inertia still moving (Ixx 19 % in 1.0 s)"
    assert _run(_ramp(N, ixx=lambda k: MOMENT * (1 + 0.2 * _share(k)),
                      inertia_std=lambda k: 0.2 * MOMENT)).converged


def test_without_the_inertia_its_movement_does_not_count():
    """Mass and COM only (``inertia=False``): an inertia jumping by half is no reason to wait."""
    monitor = ConvergenceMonitor(ConvergenceCriteria(inertia=False))
    for k in range(21):
        monitor.update(0.1 * k, _estimate(ixx=MOMENT * (1.5 if k % 2 else 1.0)))
    assert monitor.converged, monitor.reason
