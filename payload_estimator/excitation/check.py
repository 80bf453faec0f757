"""Every constraint of an identification motion, checked on the sampled trajectory.

:func:`check_trajectory` samples a trajectory as a controller would execute it (1 kHz by
default), takes the jerk as the finite difference of the sampled accelerations, and checks:

* start and end at rest at the start configuration (position within 1e-6 rad, speed within
  1e-6 rad/s, acceleration within 1e-4 rad/s²);
* joint positions at least ``position_margin`` inside the limits, and within ``max_excursion``
  of the start;
* joint speeds, accelerations and jerks below their fractions of the vendor limits;
* the linear speed of the TCP and of the payload's outermost points (``payload_points``) below
  ``max_tcp_speed``;
* the payload, a sphere of ``payload_radius`` about the TCP, above ``floor_height`` and at least
  ``base_clearance`` from the vertical axis through the base.

It returns a :class:`TrajectoryCheck`: the peaks (as fractions of the limits where there is a
limit) and one line per violated constraint, naming the joint, the value, the limit and when.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from payload_estimator.excitation.limits import ArmLimits, ExcitationError, MotionLimits, point_speeds

if TYPE_CHECKING:  # pinocchio comes with the kinematics a caller passes in
    from payload_estimator.pipeline.kinematics import SensorKinematics

__all__ = ["TrajectoryCheck", "check_trajectory", "CHECK_RATE_HZ", "trajectory_grid", "fastest_point_text"]

CHECK_RATE_HZ = 1000.0
"""Rate at which a trajectory is sampled for the checks, Hz (a joint controller's rate)."""
_REST_POSITION, _REST_SPEED, _REST_ACCELERATION = 1e-6, 1e-6, 1e-4


def trajectory_grid(duration: float, rate_hz: float = CHECK_RATE_HZ) -> np.ndarray:
    """Uniform times from 0 to ``duration`` inclusive at ``rate_hz`` (the last step may be shorter)."""
    n = int(np.ceil(duration * rate_hz - 1e-9))
    return np.append(np.arange(n) / rate_hz, duration)


@dataclass(frozen=True, eq=False)
class TrajectoryCheck:
    """The sampled trajectory against every constraint.

    Attributes:
        ok: no constraint violated.
        violations: one line per violated constraint (empty when ``ok``).
        peak_velocity_fraction: (n,) peak |speed| / vendor speed limit, per joint.
        peak_acceleration_fraction: (n,) likewise for accelerations.
        peak_jerk_fraction: (n,) likewise for jerks.
        max_excursion: (n,) largest |q - q_start| per joint, rad.
        min_limit_distance: smallest distance of any joint to its position limit, rad.
        peak_tcp_speed: the TCP's own, m/s.
        peak_speed: the fastest of the TCP and the payload's points (the one ``max_tcp_speed`` bounds), m/s.
        fastest_point: (3,) where that is, in the TCP frame, m (zeros: the TCP).
        fastest_point_name: what it is ("the TCP", or the limits' ``payload_label``).
        min_floor_clearance: lowest point of the payload sphere above ``floor_height``, m.
        min_base_clearance: closest approach of the payload sphere to the base's vertical axis,
            beyond ``base_clearance``, m.
        rate_hz: sampling rate of the check, Hz.
    """

    ok: bool
    violations: tuple[str, ...]
    peak_velocity_fraction: np.ndarray
    peak_acceleration_fraction: np.ndarray
    peak_jerk_fraction: np.ndarray
    max_excursion: np.ndarray
    min_limit_distance: float
    peak_tcp_speed: float
    min_floor_clearance: float
    min_base_clearance: float
    rate_hz: float
    peak_speed: float
    fastest_point: np.ndarray
    fastest_point_name: str

    def summary(self) -> dict[str, Any]:
        """Plain values for printing and JSON (largest fractions over the joints)."""
        return {
            "ok": self.ok,
            "violations": list(self.violations),
            "peak_velocity_fraction": float(np.max(self.peak_velocity_fraction)),
            "peak_acceleration_fraction": float(np.max(self.peak_acceleration_fraction)),
            "peak_jerk_fraction": float(np.max(self.peak_jerk_fraction)),
            "max_excursion_rad": float(np.max(self.max_excursion)),
            "min_limit_distance_rad": self.min_limit_distance,
            "peak_tcp_speed_m_s": self.peak_tcp_speed,
            "peak_speed_m_s": self.peak_speed,
            "fastest_point": self.fastest_point_name,
            "fastest_point_xyz_m": self.fastest_point.tolist(),
            "min_floor_clearance_m": self.min_floor_clearance,
            "min_base_clearance_m": self.min_base_clearance,
        }


def _worst(values: np.ndarray, t: np.ndarray) -> tuple[int, float]:
    """(joint, time) of the largest entry of (N, n) ``values``."""
    k, j = np.unravel_index(int(np.argmax(values)), values.shape)
    return int(j), float(t[k])


def check_trajectory(
    trajectory: Any,
    kin: SensorKinematics,
    arm: ArmLimits,
    q_start: np.ndarray,
    limits: MotionLimits,
    rate_hz: float = CHECK_RATE_HZ,
) -> TrajectoryCheck:
    """Check ``trajectory`` (a JointTrajectory in ``arm``'s joint order) against every constraint.

    Args:
        trajectory: ``duration`` and ``__call__(t) -> (q, dq, ddq)``.
        kin: kinematics of the TCP frame, joints in ``arm.joint_names`` order.
        arm: the joint limits.
        q_start: (n,) the start (and end) configuration, rad.
        limits: the motion's bounds (its ``duration`` is not checked: the trajectory's own is used).
        rate_hz: sampling rate, Hz.

    Returns:
        The peaks and one line per violated constraint (module docstring).

    Raises:
        ExcitationError: the kinematics and the limits name other joints.
    """
    if tuple(kin.joint_names) != tuple(arm.joint_names):
        raise ExcitationError("the kinematics and the limits must name the same joints in the same order")
    q_start = np.asarray(q_start, dtype=float).reshape(-1)
    t = trajectory_grid(float(trajectory.duration), rate_hz)
    q, dq, ddq = (np.asarray(x, dtype=float) for x in trajectory(t))
    dt = np.diff(t)
    jerk = np.abs(np.diff(ddq, axis=0)) / dt[:, None]
    violations = _rest_violations(q, dq, ddq, q_start)
    violations += _position_violations(q, t, q_start, arm, limits)
    fractions, rates = _rate_violations(dq, ddq, jerk, t, arm, limits)
    violations += rates
    clearances, workspace = _workspace_violations(kin, q, dq, t, limits)
    violations += workspace
    speeds, floor, base = clearances
    k, j = np.unravel_index(int(np.argmax(speeds)), speeds.shape)
    return TrajectoryCheck(
        ok=not violations,
        violations=tuple(violations),
        peak_velocity_fraction=fractions[0],
        peak_acceleration_fraction=fractions[1],
        peak_jerk_fraction=fractions[2],
        max_excursion=np.max(np.abs(q - q_start), axis=0),
        min_limit_distance=float(np.min(np.minimum(q - arm.q_min, arm.q_max - q))),
        peak_tcp_speed=float(np.max(speeds[:, 0])),
        min_floor_clearance=float(np.min(floor)),
        min_base_clearance=float(np.min(base)),
        rate_hz=float(rate_hz),
        peak_speed=float(speeds[k, j]),
        fastest_point=limits.speed_points[j],
        fastest_point_name=limits.speed_point_name(int(j)),
    )


def _rest_violations(q: np.ndarray, dq: np.ndarray, ddq: np.ndarray, q_start: np.ndarray) -> list[str]:
    """Non-finite samples, and a start or end that is not at rest at ``q_start``."""
    violations = []
    if not (np.all(np.isfinite(q)) and np.all(np.isfinite(dq)) and np.all(np.isfinite(ddq))):
        violations.append("the trajectory has non-finite values")
    for where, i in (("start", 0), ("end", -1)):
        if np.max(np.abs(q[i] - q_start)) > _REST_POSITION:
            violations.append(f"the {where} is not the start configuration "
                              f"(off by {np.max(np.abs(q[i] - q_start)):.2g} rad)")
        if np.max(np.abs(dq[i])) > _REST_SPEED or np.max(np.abs(ddq[i])) > _REST_ACCELERATION:
            violations.append(f"the {where} is not at rest")
    return violations


def _position_violations(q: np.ndarray, t: np.ndarray, q_start: np.ndarray, arm: ArmLimits,
                         limits: MotionLimits) -> list[str]:
    """Return the lines of the joints that come near their position limits or move too far.

    Near: within the position margin of their limits; too far: leaving the start by more than
    the largest excursion (the worst sample of the worst joint each)."""
    names = arm.joint_names
    violations = []
    lo, hi = arm.q_min + limits.position_margin, arm.q_max - limits.position_margin
    below, above = lo - q, q - hi
    outside = np.maximum(below, above)
    if np.max(outside) > 0.0:
        j, when = _worst(outside, t)
        violations.append(f"{names[j]} comes within {limits.position_margin - np.max(outside[:, j]):.3f} rad "
                          f"of its position limit at t = {when:.3f} s (margin {limits.position_margin} rad)")
    excursion = np.abs(q - q_start)
    if np.max(excursion) > limits.max_excursion + 1e-9:
        j, when = _worst(excursion, t)
        violations.append(f"{names[j]} leaves its start by {np.max(excursion[:, j]):.3f} rad at t = {when:.3f} s "
                          f"(at most {limits.max_excursion} rad)")
    return violations


def _rate_violations(dq: np.ndarray, ddq: np.ndarray, jerk: np.ndarray, t: np.ndarray, arm: ArmLimits,
                     limits: MotionLimits) -> tuple[list[np.ndarray], list[str]]:
    """Return the (n,) peak fractions of the vendor limits of the joint speeds, accelerations and jerks.

    Also the lines of those above their allowed fractions."""
    names = arm.joint_names
    violations = []
    fractions = []
    for what, values, limit, allowed in (
        ("speed", np.abs(dq), arm.dq_max, limits.velocity_fraction),
        ("acceleration", np.abs(ddq), arm.ddq_max, limits.acceleration_fraction),
        ("jerk", jerk, arm.dddq_max, limits.jerk_fraction),
    ):
        fraction = values / limit
        fractions.append(np.max(fraction, axis=0))
        if np.max(fraction) > allowed:
            j, when = _worst(fraction, t)
            violations.append(f"{names[j]} {what} reaches {np.max(fraction[:, j]):.0%} of its limit "
                              f"({limit[j]:g}) at t = {when:.3f} s (at most {allowed:.0%})")
    return fractions, violations


def _workspace_violations(kin: SensorKinematics, q: np.ndarray, dq: np.ndarray, t: np.ndarray,
                          limits: MotionLimits) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], list[str]]:
    """Return ``((speeds, floor, base), lines)``: the speeds and clearances, and the broken limits.

    Per sample, the speeds (m/s, (N, 1 + K)) of the TCP and the payload's points
    (``limits.speed_points``), and the payload sphere's clearances of the floor and of the base's
    vertical axis beyond their margins (m); the lines of the limits they break."""
    violations = []
    motion = kin.compute(q, dq, np.zeros_like(dq))
    points = limits.speed_points
    speeds = point_speeds(motion.lin_vel_in_sensor, motion.ang_vel_in_sensor, points)
    if np.max(speeds) > limits.max_tcp_speed:
        i, j = (int(x) for x in np.unravel_index(int(np.argmax(speeds)), speeds.shape))
        where = "" if j == 0 else f" ({', '.join(f'{x:.3f}' for x in points[j])} m in the TCP frame)"
        violations.append(f"{limits.speed_point_name(j)}{where} moves at {speeds[i, j]:.3f} m/s "
                          f"at t = {t[i]:.3f} s (at most {limits.max_tcp_speed} m/s)")
    up = -kin.gravity_in_world / np.linalg.norm(kin.gravity_in_world)
    p = motion.p_world_sensor
    height = p @ up
    floor = height - limits.payload_radius - limits.floor_height
    if np.min(floor) < 0.0:
        k = int(np.argmin(floor))
        violations.append(f"the payload comes {-floor[k]:.3f} m below the floor plane "
                          f"(height {limits.floor_height} m) at t = {t[k]:.3f} s")
    horizontal = p - np.outer(height, up)
    base = np.linalg.norm(horizontal, axis=1) - limits.payload_radius - limits.base_clearance
    if np.min(base) < 0.0:
        k = int(np.argmin(base))
        violations.append(f"the payload comes {-base[k]:.3f} m too close to the robot's base "
                          f"(clearance {limits.base_clearance} m) at t = {t[k]:.3f} s")
    return (speeds, floor, base), violations


def fastest_point_text(check: TrajectoryCheck, frame: str = "TCP") -> str:
    """Where the motion is fastest and how fast, for a user (``frame``: the TCP frame's name).

    "the tip of the tool (identify_tool_length 0.15 m) at (0.00, 0.00, 0.15) m in the flange frame:
    0.24 m/s", or "the flange: 0.24 m/s" (the TCP itself)."""
    if check.fastest_point_name == "the TCP":
        return f"the {frame}: {check.peak_speed:.2f} m/s" if frame == "flange" else \
            f"the origin of the {frame} frame: {check.peak_speed:.2f} m/s"
    xyz = ", ".join(f"{x:.2f}" for x in check.fastest_point)
    return f"{check.fastest_point_name} at ({xyz}) m in the {frame} frame: {check.peak_speed:.2f} m/s"
