"""Joint trajectories: the protocol every reference follows, interpolation through points, CSV files.

A :class:`JointTrajectory` is a smooth joint-space reference with analytic ``q``, ``dq``,
``ddq``: time 0 is its start, ``duration`` its end, and outside ``[0, duration]`` it holds a pose
at rest. This module builds them from what a controller or a file carries:

* :class:`PointTrajectory`: time-stamped points, as a ``control_msgs/FollowJointTrajectory`` goal
  (``trajectory_msgs/JointTrajectory``) carries them, with or without velocities and
  accelerations. Between two points: a quintic Hermite segment (given ``q``, ``dq``, ``ddq`` at
  both ends); with velocities only, the accelerations at the points are the mean of the two
  neighbouring cubic Hermite segments' (0 at the end points); with positions only, a quintic
  spline at rest at both ends. ``q``, ``dq`` and ``ddq`` are continuous on ``[t[0], t[-1]]``;
  before ``t[0]`` and after ``t[-1]`` the end point is held at rest (so give the end points at
  rest for a trajectory without a jump there). ros2_controllers' joint_trajectory_controller
  interpolates the same way with velocities and accelerations (quintic) and linearly with
  positions only; the spline here never asks for a step in velocity.
* :class:`SampledTrajectory` (:func:`from_positions`): positions only on a uniform grid (a CSV
  file), through a quintic spline (``scipy.interpolate.make_interp_spline``, ``k = 5``) with zero
  velocity and acceleration at both ends.
* :func:`braking_trajectory`: from any state to rest within acceleration limits, what a
  controller does when its goal is cancelled.
* :func:`sample_points`: uniform samples to send to a controller.
* :func:`write_trajectory_csv` / :func:`read_trajectory_csv`: header ``t,<joint names>``, one row
  per sample, times in s from the first row, positions in rad, a uniform step of at most
  :data:`MAX_CSV_STEP_S`.

The blends :func:`min_jerk` and :func:`ramped_time` start and stop the sinusoids of
:mod:`payload_estimator.sim.trajectories` and of the excitation design.

Units: s, rad, rad/s, rad/s², rad/s³. Joint arrays are (N, n): one row per time, one column per
joint, in the order of ``joint_names``.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from os import PathLike
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike

from payload_estimator.errors import ConfigurationError, InputError
from payload_estimator.files import read_text_file, write_text_atomic

__all__ = [
    "JointTrajectory",
    "PointTrajectory",
    "MinJerkSegments",
    "SampledTrajectory",
    "from_positions",
    "braking_trajectory",
    "sample_points",
    "write_trajectory_csv",
    "read_trajectory_csv",
    "min_jerk",
    "ramped_time",
    "MAX_CSV_STEP_S",
    "MIN_CSV_ROWS",
]

MAX_CSV_STEP_S = 0.01
"""Largest time step of a trajectory file, s (100 Hz at least)."""
MIN_CSV_ROWS = 2
"""Fewest rows of a trajectory file."""
_UNIFORM_RTOL = 1e-3
"""A grid is uniform when every step is within this fraction of the median step (plus 1 µs:
the file's time resolution)."""
_CSV_TIME_DECIMALS = 6
_CSV_POSITION_DECIMALS = 9


@runtime_checkable
class JointTrajectory(Protocol):
    """A smooth joint-space reference.

    ``duration`` (s) is where the motion ends (the pose is held afterwards);
    calling it with ``t`` of shape (N,) returns ``(q, dq, ddq)``, each
    (N, n_joints), rad, rad/s, rad/s², columns in the robot's joint order.
    """

    @property
    def duration(self) -> float:
        """End of the motion, s; the pose is held afterwards."""
        ...

    def __call__(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return ``(q, dq, ddq)`` at times ``t`` (N,), each (N, n_joints)."""
        ...


# ------------------------------------------------------------------ blends
def min_jerk(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Minimum-jerk blend ``s = 10x³ - 15x⁴ + 6x⁵`` and its first two derivatives in ``x``.

    ``x`` is clipped to [0, 1]; outside, ``s`` is 0 or 1 with zero derivatives.
    """
    x = np.clip(np.asarray(x, dtype=float), 0.0, 1.0)
    x2 = x * x
    s = x2 * x * (10.0 + x * (-15.0 + 6.0 * x))
    ds = 30.0 * x2 * (1.0 - x) ** 2
    dds = 60.0 * x * (1.0 - x) * (1.0 - 2.0 * x)
    return s, ds, dds


def _min_jerk_integral(x: np.ndarray) -> np.ndarray:
    """``int_0^x s(u) du = 2.5x⁴ - 3x⁵ + x⁶`` for ``x`` clipped to [0, 1]."""
    x = np.clip(np.asarray(x, dtype=float), 0.0, 1.0)
    return x**4 * (2.5 + x * (-3.0 + x))


def ramped_time(
    t: np.ndarray, duration: float, ramp: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Warped time ``tau(t)`` and its derivatives: a speed factor ``e = dtau/dt`` 0 -> 1 -> 0.

    ``e`` rises from 0 to 1 along a minimum-jerk blend over the first ``ramp``
    seconds and falls back to 0 over the last ``ramp`` seconds, so a sinusoid of
    ``tau`` starts and ends at rest and is never faster than the plain sinusoid.

    Args:
        t: (N,) times, s.
        duration: end of the motion, s (``tau`` is constant afterwards and before 0).
        ramp: length of the start and stop blends, s (shortened to ``duration / 2``).

    Returns:
        ``(tau, dtau, ddtau)``, each (N,): s, 1, 1/s.
    """
    t = np.asarray(t, dtype=float)
    T = max(min(ramp, 0.5 * duration), 1e-9)
    tc = np.clip(t, 0.0, duration)
    x_in = tc / T
    x_out = (duration - tc) / T
    s_in, ds_in, _ = min_jerk(x_in)
    s_out, ds_out, _ = min_jerk(x_out)
    e = np.minimum(s_in, s_out)  # one of them is 1 away from the blends (T <= duration / 2)
    rising = tc < T
    falling = tc > duration - T
    de = np.where(rising, ds_in / T, np.where(falling, -ds_out / T, 0.0))
    # tau = integral of e.
    tau_in = T * _min_jerk_integral(x_in)
    tau_mid = np.maximum(tc - T, 0.0) + 0.5 * T  # tau(T) = T/2
    tau_end_start = max(duration - 2 * T, 0.0) + 0.5 * T  # tau(duration - T)
    tau_out = tau_end_start + T * (0.5 - _min_jerk_integral(x_out))
    tau = np.where(rising, tau_in, np.where(falling, tau_out, tau_mid))
    inside = (t >= 0.0) & (t <= duration)
    return tau, np.where(inside, e, 0.0), np.where(inside, de, 0.0)


# ---------------------------------------------------------------- validation
def _times(t: ArrayLike, what: str = "t") -> np.ndarray:
    t = np.asarray(t, dtype=float)
    if t.ndim != 1 or len(t) == 0:
        raise InputError(f"{what} must be a non-empty 1-d array of times, got shape {t.shape}")
    if not np.all(np.isfinite(t)):
        raise InputError(f"{what} has a non-finite time")
    if np.any(np.diff(t) <= 0.0):
        k = int(np.argmax(np.diff(t) <= 0.0))
        raise InputError(f"{what} must increase strictly: {t[k + 1]:g} s follows {t[k]:g} s")
    return t


def _joint_array(values: ArrayLike, rows: int, what: str, width: int | None = None) -> np.ndarray:
    a = np.asarray(values, dtype=float)
    if a.ndim == 1 and rows == 1 and (width is None or len(a) == width):
        a = a[None, :]
    if a.ndim != 2 or a.shape[0] != rows or (width is not None and a.shape[1] != width):
        want = f"({rows}, {width if width is not None else 'n'})"
        raise InputError(f"{what} must have shape {want}, got {a.shape}")
    if a.shape[1] == 0:
        raise InputError(f"{what} has no joint")
    if not np.all(np.isfinite(a)):
        row = int(np.argmax(~np.all(np.isfinite(a), axis=1)))
        raise InputError(f"{what} has a non-finite value at point {row}")
    return a


def _names(joint_names: Sequence[str] | None, n: int) -> tuple[str, ...] | None:
    if joint_names is None:
        return None
    names = tuple(str(s) for s in joint_names)
    if len(names) != n:
        raise InputError(f"{len(names)} joint names for {n} joints")
    if len(set(names)) != len(names) or any(not s for s in names):
        raise InputError("joint names must be distinct and non-empty")
    return names


def _check_uniform(t: np.ndarray, what: str = "t") -> float:
    """Return the step of a uniform, increasing grid ``t``, s; InputError otherwise."""
    steps = np.diff(t)
    if len(steps) == 0:
        raise InputError(f"{what} needs at least two times")
    dt = float(np.median(steps))
    bad = np.abs(steps - dt) > _UNIFORM_RTOL * dt + 10.0 ** -_CSV_TIME_DECIMALS
    if np.any(bad):
        k = int(np.argmax(bad))
        raise InputError(f"{what} is not uniform: step {steps[k]:g} s after {t[k]:g} s, median {dt:g} s")
    return dt


# ------------------------------------------------------------ interpolation
def _quintic_hermite(
    p0: np.ndarray, v0: np.ndarray, a0: np.ndarray, p1: np.ndarray, v1: np.ndarray, a1: np.ndarray,
    T: np.ndarray, s: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Evaluate the quintic through ``(p, v, a)`` at both ends of segments of length ``T`` (N, 1) s.

    At ``s`` (N, 1) in [0, 1]; every other argument (N, n). Returns ``(q, dq, ddq)``, each (N, n)."""
    d = p1 - p0
    vT0, vT1 = v0 * T, v1 * T
    aT0, aT1 = 0.5 * a0 * T * T, 0.5 * a1 * T * T
    c3 = 10.0 * d - 6.0 * vT0 - 4.0 * vT1 - 3.0 * aT0 + aT1
    c4 = -15.0 * d + 8.0 * vT0 + 7.0 * vT1 + 3.0 * aT0 - 2.0 * aT1
    c5 = 6.0 * d - 3.0 * vT0 - 3.0 * vT1 - aT0 + aT1
    q = p0 + s * (vT0 + s * (aT0 + s * (c3 + s * (c4 + s * c5))))
    dq = (vT0 + s * (2.0 * aT0 + s * (3.0 * c3 + s * (4.0 * c4 + s * 5.0 * c5)))) / T
    ddq = (2.0 * aT0 + s * (6.0 * c3 + s * (12.0 * c4 + s * 20.0 * c5))) / (T * T)
    return q, dq, ddq


def _hermite_accelerations(t: np.ndarray, q: np.ndarray, dq: np.ndarray) -> np.ndarray:
    """Return the (K, n) accelerations at the points: the mean of the neighbouring cubic Hermite segments'.

    0 at the first and last point, where the trajectory meets its rest holds."""
    T = np.diff(t)[:, None]
    d = np.diff(q, axis=0)
    c2 = 3.0 * d - (2.0 * dq[:-1] + dq[1:]) * T  # cubic in s = (t - t_k) / T
    c3 = -2.0 * d + (dq[:-1] + dq[1:]) * T
    a_start = 2.0 * c2 / T**2
    a_end = (2.0 * c2 + 6.0 * c3) / T**2
    ddq = np.zeros_like(q)
    ddq[1:-1] = 0.5 * (a_end[:-1] + a_start[1:])
    return ddq


class _RestSpline:
    """Quintic interpolating spline through ``(t, q)`` with zero velocity and acceleration at both ends.

    Holds the end points at rest outside ``[t[0], t[-1]]``."""

    def __init__(self, t: np.ndarray, q: np.ndarray) -> None:
        from scipy.interpolate import make_interp_spline

        self.t0, self.t1 = float(t[0]), float(t[-1])
        self.q0, self.q1 = q[0].copy(), q[-1].copy()
        if len(t) < 2:
            self.spline = None
            return
        rest = [(1, np.zeros(q.shape[1])), (2, np.zeros(q.shape[1]))]
        self.spline = make_interp_spline(t, q, k=5, bc_type=(rest, rest), axis=0)

    def __call__(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n = len(self.q0)
        if self.spline is None:
            return np.tile(self.q0, (len(t), 1)), np.zeros((len(t), n)), np.zeros((len(t), n))
        tc = np.clip(t, self.t0, self.t1)
        inside = ((t >= self.t0) & (t <= self.t1))[:, None]
        q = np.where((t < self.t0)[:, None], self.q0, np.where((t > self.t1)[:, None], self.q1, self.spline(tc)))
        dq = np.where(inside, self.spline(tc, 1), 0.0)
        ddq = np.where(inside, self.spline(tc, 2), 0.0)
        return q, dq, ddq


class MinJerkSegments:
    """Rest-to-rest minimum-jerk segments through ``waypoints`` (W, n), rad, with ``durations`` (W - 1,) s.

    A JointTrajectory; the last waypoint is held afterwards. A pick-and-place cycle, or the way
    back to the start of an identification motion."""

    def __init__(self, waypoints: np.ndarray, durations: np.ndarray) -> None:
        self.waypoints = np.asarray(waypoints, dtype=float)
        self.durations = np.asarray(durations, dtype=float)
        self.starts = np.concatenate([[0.0], np.cumsum(self.durations)])

    @property
    def duration(self) -> float:
        """End of the last segment, s."""
        return float(self.starts[-1])

    def __call__(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return ``(q, dq, ddq)`` at times ``t`` (N,), each (N, n); clipped to ``[0, duration]``."""
        t = np.clip(np.atleast_1d(np.asarray(t, dtype=float)), 0.0, self.duration)
        idx = np.clip(np.searchsorted(self.starts, t, side="right") - 1, 0, len(self.durations) - 1)
        T = self.durations[idx]
        s, ds, dds = min_jerk((t - self.starts[idx]) / T)
        qa = self.waypoints[idx]
        delta = self.waypoints[idx + 1] - qa
        return (
            qa + delta * s[:, None],
            delta * (ds / T)[:, None],
            delta * (dds / T**2)[:, None],
        )


class PointTrajectory:
    """A :class:`JointTrajectory` through time-stamped points (see the module docstring).

    Args:
        t: (K,) times of the points, s, strictly increasing (time 0 is the trajectory's start;
            before ``t[0]`` the first point is held at rest).
        q: (K, n) positions, rad.
        dq: (K, n) velocities, rad/s, or None.
        ddq: (K, n) accelerations, rad/s², or None (only with ``dq``).
        joint_names: the n joints, or None.

    Raises:
        InputError: times not increasing or not finite, a non-finite value, mismatched shapes,
            accelerations without velocities.
    """

    def __init__(
        self,
        t: ArrayLike,
        q: ArrayLike,
        dq: ArrayLike | None = None,
        ddq: ArrayLike | None = None,
        joint_names: Sequence[str] | None = None,
    ) -> None:
        self.t = _times(t)
        K = len(self.t)
        self.q = _joint_array(q, K, "q")
        n = self.q.shape[1]
        self.joint_names = _names(joint_names, n)
        if ddq is not None and dq is None:
            raise InputError("accelerations need velocities too")
        self._spline: _RestSpline | None = None
        if dq is None:
            self.dq = self.ddq = None
            self._spline = _RestSpline(self.t, self.q)
            return
        self.dq = _joint_array(dq, K, "dq", n)
        self.ddq = _joint_array(ddq, K, "ddq", n) if ddq is not None else None
        self._acc = self.ddq if self.ddq is not None else _hermite_accelerations(self.t, self.q, self.dq)

    @property
    def duration(self) -> float:
        """Time of the last point, s."""
        return float(self.t[-1])

    @property
    def n_joints(self) -> int:
        """Number of joints."""
        return int(self.q.shape[1])

    def __call__(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(q, dq, ddq)`` at times ``t`` (N,), each (N, n)."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        if self._spline is not None:
            return self._spline(t)
        K, n = self.q.shape
        if K == 1:
            return np.tile(self.q[0], (len(t), 1)), np.zeros((len(t), n)), np.zeros((len(t), n))
        assert self.dq is not None
        tc = np.clip(t, self.t[0], self.t[-1])
        k = np.clip(np.searchsorted(self.t, tc, side="right") - 1, 0, K - 2)
        T = (self.t[k + 1] - self.t[k])[:, None]
        s = ((tc - self.t[k])[:, None]) / T
        q, dq, ddq = _quintic_hermite(self.q[k], self.dq[k], self._acc[k], self.q[k + 1], self.dq[k + 1],
                                      self._acc[k + 1], T, s)
        before, after = (t < self.t[0])[:, None], (t > self.t[-1])[:, None]
        q = np.where(before, self.q[0], np.where(after, self.q[-1], q))
        return q, np.where(before | after, 0.0, dq), np.where(before | after, 0.0, ddq)


class SampledTrajectory:
    """Positions on a uniform time grid through a quintic spline at rest at both ends.

    Args:
        t: (K,) uniform times, s, K >= 2; shifted so that the first is 0.
        q: (K, n) positions, rad.
        joint_names: the n joints.

    Attributes:
        t: (K,) the times from 0, s. q: (K, n). dt: the step, s. joint_names.
    """

    name = "file"

    def __init__(self, t: ArrayLike, q: ArrayLike, joint_names: Sequence[str]) -> None:
        t = _times(t)
        if len(t) < 2:
            raise InputError("a sampled trajectory needs at least two samples")
        self.dt = _check_uniform(t)
        self.t = t - t[0]
        self.q = _joint_array(q, len(t), "q")
        names = _names(joint_names, self.q.shape[1])
        assert names is not None
        self.joint_names = names
        self._spline = _RestSpline(self.t, self.q)

    @property
    def duration(self) -> float:
        """Time of the last sample, s."""
        return float(self.t[-1])

    def __call__(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(q, dq, ddq)`` at times ``t`` (N,), each (N, n)."""
        return self._spline(np.atleast_1d(np.asarray(t, dtype=float)))


def from_positions(t: ArrayLike, q: ArrayLike, joint_names: Sequence[str]) -> SampledTrajectory:
    """:class:`SampledTrajectory` through positions ``q`` (K, n) rad on the uniform grid ``t`` (K,) s."""
    return SampledTrajectory(t, q, joint_names)


# ------------------------------------------------------------------ braking
class _Braking:
    """A stop: per joint, the velocity falls from ``v0`` (with slope ``a0``) to 0 in ``T`` s.

    Along a cubic Hermite; the position is its integral from ``q0``. Holds the final pose
    afterwards."""

    name = "braking"

    def __init__(self, q0: np.ndarray, v0: np.ndarray, a0: np.ndarray, T: float) -> None:
        self.q0, self.v0, self.a0, self.T = q0, v0, a0, float(T)
        self.q_end = q0 + T * (0.5 * v0 + a0 * T / 12.0)

    @property
    def duration(self) -> float:
        return self.T

    def __call__(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        t = np.atleast_1d(np.asarray(t, dtype=float))
        T = self.T
        s = (np.clip(t, 0.0, T) / T)[:, None]
        s2, s3, s4 = s * s, s * s * s, s * s * s * s
        v0, aT = self.v0, self.a0 * T
        # velocity v0 h00(s) + a0 T h10(s); position T * integral; acceleration dv/ds / T
        q = self.q0 + T * (v0 * (0.5 * s4 - s3 + s) + aT * (0.25 * s4 - 2.0 * s3 / 3.0 + 0.5 * s2))
        dq = v0 * (2.0 * s3 - 3.0 * s2 + 1.0) + aT * (s3 - 2.0 * s2 + s)
        ddq = (v0 * (6.0 * s2 - 6.0 * s) + aT * (3.0 * s2 - 4.0 * s + 1.0)) / T
        before = (t < 0.0)[:, None]
        after = (t > T)[:, None]
        q = np.where(before, self.q0, np.where(after, self.q_end, q))
        dq = np.where(after, 0.0, np.where(before, v0, dq))
        ddq = np.where(after, 0.0, np.where(before, self.a0, ddq))
        return q, dq, ddq


def _braking_peaks(v0: np.ndarray, a0: np.ndarray, T: float) -> tuple[np.ndarray, np.ndarray]:
    """(n,) peak |acceleration| and |jerk| of :class:`_Braking` over its duration ``T``."""
    s = np.linspace(0.0, 1.0, 201)[:, None]
    acc = (v0 * (6.0 * s * s - 6.0 * s) + a0 * T * (3.0 * s * s - 4.0 * s + 1.0)) / T
    jerk = (v0 * (12.0 * s - 6.0) + a0 * T * (6.0 * s - 4.0)) / (T * T)
    return np.max(np.abs(acc), axis=0), np.max(np.abs(jerk), axis=0)


def braking_trajectory(
    q: ArrayLike,
    dq: ArrayLike,
    ddq: ArrayLike,
    ddq_max: ArrayLike,
    dddq_max: ArrayLike | None = None,
    min_duration: float = 0.01,
) -> JointTrajectory:
    """From the state ``(q, dq, ddq)`` (n,) to rest, every joint stopping at the same time.

    Each joint's velocity falls to zero along a cubic (starting with the acceleration ``ddq``,
    ending with zero acceleration), so position, velocity and acceleration stay continuous. The
    duration is the shortest (bisection, to 1 %) keeping every joint's acceleration within
    ``ddq_max`` (or within ``|ddq|`` if that is larger: the state already exceeds the limit) and,
    when given, its jerk within ``dddq_max``. Time 0 is the state given; the stopped
    pose is held after ``duration``.

    Args:
        q: (n,) positions, rad.
        dq: (n,) velocities, rad/s.
        ddq: (n,) accelerations, rad/s².
        ddq_max: (n,) acceleration limits, rad/s² (positive).
        dddq_max: (n,) jerk limits, rad/s³, or None.
        min_duration: shortest braking, s.
    """
    q0 = _joint_array(q, 1, "q")[0]
    n = len(q0)
    v0 = _joint_array(dq, 1, "dq", n)[0]
    a0 = _joint_array(ddq, 1, "ddq", n)[0]
    a_lim = np.maximum(_joint_array(ddq_max, 1, "ddq_max", n)[0], np.abs(a0))
    if np.any(a_lim <= 0.0):
        raise ConfigurationError("acceleration limits must be positive")
    j_lim = None if dddq_max is None else _joint_array(dddq_max, 1, "dddq_max", n)[0]
    if j_lim is not None and np.any(j_lim <= 0.0):
        raise ConfigurationError("jerk limits must be positive")

    def within(T: float) -> bool:
        acc, jerk = _braking_peaks(v0, a0, T)
        ok = bool(np.all(acc <= a_lim * (1.0 + 1e-9)))
        if j_lim is not None:  # the jerk falls as 1/T: every limit is met by a slow enough stop
            ok = ok and bool(np.all(jerk <= j_lim * (1.0 + 1e-9)))
        return ok

    lo = hi = float(min_duration)
    while not within(hi):
        lo, hi = hi, 2.0 * hi
        if hi > 1e4:
            raise ValueError("cannot brake within the limits")
    if hi > min_duration:
        while hi - lo > 0.01 * hi:
            mid = 0.5 * (lo + hi)
            lo, hi = (lo, mid) if within(mid) else (mid, hi)
    return _Braking(q0, v0, a0, hi)


# ---------------------------------------------------------------- sampling
def sample_points(traj: JointTrajectory, dt: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Uniform samples of ``traj`` from 0 to its end, both included, for a controller or a file.

    The step is ``dt`` when it divides the duration, else the largest step below ``dt`` that does.

    Returns:
        ``(t, q, dq, ddq)``: (N,) s and (N, n) rad, rad/s, rad/s².
    """
    if not dt > 0.0:
        raise ValueError("dt must be positive")
    duration = float(traj.duration)
    steps = max(1, math.ceil(duration / dt - 1e-9))
    t = np.linspace(0.0, duration, steps + 1)
    q, dq, ddq = traj(t)
    return t, q, dq, ddq


# -------------------------------------------------------------------- files
def write_trajectory_csv(path: str | PathLike[str], joint_names: Sequence[str], t: ArrayLike, q: ArrayLike) -> Path:
    """Write a trajectory file (module docstring), atomically; returns the path.

    Raises:
        InputError: what :func:`read_trajectory_csv` would refuse (a non-uniform or too coarse
            grid, too few rows, a non-finite value, mismatched names).
    """
    t = _times(t)
    q = _joint_array(q, len(t), "q")
    names = _names(joint_names, q.shape[1])
    assert names is not None
    _check_file_grid(t, "t")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["t", *names])
    for ti, qi in zip(t - t[0], q):
        writer.writerow([f"{ti:.{_CSV_TIME_DECIMALS}f}", *(f"{v:.{_CSV_POSITION_DECIMALS}f}" for v in qi)])
    return write_text_atomic(path, out.getvalue())


def _check_file_grid(t: np.ndarray, what: str) -> None:
    if len(t) < MIN_CSV_ROWS:
        raise InputError(f"{what}: {len(t)} rows, a trajectory needs at least {MIN_CSV_ROWS}")
    dt = _check_uniform(t, what)
    if dt > MAX_CSV_STEP_S * (1.0 + _UNIFORM_RTOL):
        raise InputError(f"{what}: time step {dt:g} s is above {MAX_CSV_STEP_S:g} s")


def read_trajectory_csv(path: str | PathLike[str]) -> tuple[tuple[str, ...], np.ndarray, np.ndarray]:
    """Read a trajectory file: ``(joint_names, t (K,) s from 0, q (K, n) rad)``.

    Raises:
        InputError: a one-line reason naming the file: no header ``t,<joint names>``, a row of the
            wrong length or not a number, a non-finite value, times not increasing, not uniform or
            with a step above :data:`MAX_CSV_STEP_S`, fewer than :data:`MIN_CSV_ROWS` rows; no such
            file, not a regular file, empty, not text (:func:`~payload_estimator.files.read_text_file`).
    """
    path = Path(path)
    text = read_text_file(path, "a trajectory CSV (header t,<joint names>)")
    rows = [row for row in csv.reader(io.StringIO(text, newline="")) if row and any(cell.strip() for cell in row)]
    if not rows:
        raise InputError(f"{path}: empty file, expected a header t,<joint names>")
    header = [cell.strip() for cell in rows[0]]
    if header[0] != "t" or len(header) < 2:
        raise InputError(f"{path}: the header must be t,<joint names>, got {','.join(header)[:80]!r}")
    try:
        names = _names(header[1:], len(header) - 1)
    except ValueError as exc:
        raise InputError(f"{path}: {exc}") from None
    assert names is not None
    width = len(header)
    values = np.empty((len(rows) - 1, width))
    for i, row in enumerate(rows[1:]):
        if len(row) != width:
            raise InputError(f"{path}: row {i + 2} has {len(row)} fields, the header {width}")
        try:
            values[i] = [float(cell) for cell in row]
        except ValueError:
            raise InputError(f"{path}: row {i + 2} has a field that is not a number") from None
    if not np.all(np.isfinite(values)):
        row_index = int(np.argmax(~np.all(np.isfinite(values), axis=1)))
        raise InputError(f"{path}: row {row_index + 2} has a value that is not finite")
    t, q = values[:, 0], values[:, 1:]
    if len(t) and np.any(np.diff(t) <= 0.0):
        k = int(np.argmax(np.diff(t) <= 0.0))
        raise InputError(f"{path}: time does not increase at row {k + 3} ({t[k + 1]:g} s after {t[k]:g} s)")
    try:
        _check_file_grid(t, str(path))
    except ValueError as exc:
        raise InputError(str(exc)) from None
    return names, t - t[0], q
