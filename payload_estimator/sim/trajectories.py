"""Joint-space excitation trajectories with analytic ``q``, ``dq``, ``ddq``.

Every trajectory starts at rest at the robot's home pose and never asks the
controller for a step: positions, velocities and accelerations are continuous
and the accelerations start from zero.

* :class:`PaperWristSinusoids` (``"wrist"``): Nadeau, Giamou and Kelly, "Fast Object
  Inertial Parameter Identification for Collaborative Robots" (Section V-A). The three wrist joints
  follow ``q0 + A sin(2 pi k f_i tau(t))`` with relative frequencies
  ``f = [0.1, 0.13, 0.16]`` Hz; the time scale ``k`` sets the mean angular
  speed of the flange.
* :class:`ThesisSinusoids` (``"thesis"``): Lambert's all-joint sinusoids (his MIT M.Eng
  thesis on payload identification with a Franka Panda). Every joint follows
  ``q_home_i + a sin(w_i tau(t))``, ``a = 0.3`` rad, ``w_i ~ U[1, 5]`` rad/s.
* :class:`PickAndPlace`: a cobot pick-and-place cycle of minimum-jerk segments
  in joint space, with a wrist rotation during the transfer.

Sinusoids are started and stopped by *warping time*: ``tau(t)`` runs at
``dtau/dt = e(t)``, where the speed factor ``e`` rises from 0 to 1 along a
minimum-jerk (quintic) blend over the first ``ramp`` seconds and falls back to
0 over the last ``ramp`` seconds. So ``dq = e(t) * (dq of the plain sinusoid)``
never exceeds the plain sinusoid's speed, and ``q(0) = q_home``,
``dq(0) = ddq(0) = 0``. After ``duration`` the robot holds its last pose.

Speed limits (all trajectories): the linear speed of the flange origin (the
TCP without tool) stays below :data:`TCP_SPEED_LIMIT` (0.25 m/s, the
"reduced speed" of ISO 10218-1, the usual figure for collaborative operation
under ISO/TS 15066, which itself fixes no single speed) with a 5 % margin;
every joint speed stays below :data:`JOINT_SPEED_FRACTION` of its limit and
every joint at least :data:`POSITION_MARGIN` inside its position limits. The
limits are checked on a 200 Hz grid over the whole trajectory.

The :class:`JointTrajectory` protocol and the blends (:func:`min_jerk`, :func:`ramped_time`) live
in :mod:`payload_estimator.excitation.trajectory` and are re-exported here.

Units: rad, rad/s, rad/s², s, m/s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from payload_estimator.errors import ConfigurationError
from payload_estimator.excitation.limits import flange_kinematics
from payload_estimator.excitation.trajectory import JointTrajectory, MinJerkSegments, min_jerk, ramped_time
from payload_estimator.pipeline.kinematics import SensorKinematics
from payload_estimator.robots import RobotSpec

__all__ = [
    "JointTrajectory",
    "RampedSinusoids",
    "PaperWristSinusoids",
    "ThesisSinusoids",
    "PickAndPlace",
    "ReturnToStart",
    "make_trajectory",
    "tcp_speed",
    "flange_kinematics",
    "min_jerk",
    "ramped_time",
    "TRAJECTORY_KINDS",
    "TCP_SPEED_LIMIT",
    "JOINT_SPEED_FRACTION",
    "POSITION_MARGIN",
    "PAPER_RELATIVE_FREQUENCIES_HZ",
]

TCP_SPEED_LIMIT = 0.25
"""Maximum linear speed of the flange origin, m/s (ISO 10218-1 reduced speed, cobot practice)."""
_TCP_TARGET = 0.95 * TCP_SPEED_LIMIT
JOINT_SPEED_FRACTION = 0.8
"""Joint speeds stay below this fraction of the vendor limit."""
POSITION_MARGIN = 0.05
"""Joint positions stay this far inside the vendor limits, rad."""
PAPER_RELATIVE_FREQUENCIES_HZ = (0.1, 0.13, 0.16)
"""Relative frequencies of Nadeau et al.'s wrist sinusoids, Hz (before the time scale ``k``)."""
_CHECK_RATE_HZ = 200.0

TRAJECTORY_KINDS: tuple[str, ...] = ("wrist", "thesis", "pickplace")
"""Names accepted by :func:`make_trajectory`."""


_Trajectory = TypeVar("_Trajectory", bound=JointTrajectory)
"""A :class:`JointTrajectory` type, kept through :func:`_largest_admissible`."""


# ---------------------------------------------------------------- kinematics
def _kinematics(spec_or_kinematics: RobotSpec | SensorKinematics) -> SensorKinematics:
    if isinstance(spec_or_kinematics, SensorKinematics):
        return spec_or_kinematics
    return flange_kinematics(spec_or_kinematics)


def tcp_speed(
    spec_or_kinematics: RobotSpec | SensorKinematics, traj: JointTrajectory, t: np.ndarray
) -> np.ndarray:
    """(N,) linear speed of the TCP along ``traj`` at times ``t``, m/s.

    The TCP is the flange origin for a :class:`RobotSpec`, or the sensor frame
    origin of a given :class:`SensorKinematics`.
    """
    q, dq, _ = traj(np.asarray(t, dtype=float))
    return _frame_speeds(_kinematics(spec_or_kinematics), q, dq)[0]


def _frame_speeds(
    kin: SensorKinematics, q: np.ndarray, dq: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(linear speed, angular speed) of the kinematics' frame, each (N,)."""
    motion = kin.compute(q, dq, np.zeros_like(dq))
    return (
        np.linalg.norm(motion.lin_vel_in_sensor, axis=1),
        np.linalg.norm(motion.ang_vel_in_sensor, axis=1),
    )


def _check_grid(duration: float) -> np.ndarray:
    return np.linspace(0.0, duration, int(np.ceil(duration * _CHECK_RATE_HZ)) + 1)


def _speed_ratio(spec: RobotSpec, traj: JointTrajectory) -> float:
    """Largest of (peak TCP speed / target, peak joint speed / allowed); <= 1 when within limits."""
    t = _check_grid(traj.duration)
    q, dq, _ = traj(t)
    lin, _ = _frame_speeds(flange_kinematics(spec), q, dq)
    joint = np.max(np.abs(dq) / (JOINT_SPEED_FRACTION * spec.dq_max[None, :]))
    return float(max(np.max(lin) / _TCP_TARGET, joint))


def _largest_admissible(
    spec: RobotSpec, build: Callable[[float], _Trajectory], scale: float
) -> tuple[_Trajectory, float, bool]:
    """Shrink ``scale`` until ``build(scale)`` respects the speed limits.

    Speeds are close to proportional to the scales used here, so a few
    proportional steps (with 1 % slack) converge. Returns the trajectory, the
    scale and whether it had to be reduced.
    """
    traj = build(scale)
    capped = False
    for _ in range(30):
        ratio = _speed_ratio(spec, traj)
        if ratio <= 1.0:
            return traj, scale, capped
        capped = True
        scale *= 0.99 / ratio
        traj = build(scale)
    raise RuntimeError(f"could not bring the trajectory of {spec.name} within the speed limits")


def _position_room(spec: RobotSpec, q_centre: np.ndarray) -> np.ndarray:
    """(n,) largest symmetric amplitude about ``q_centre`` inside the limits with margin, rad."""
    room = np.minimum(q_centre - spec.q_min, spec.q_max - q_centre) - POSITION_MARGIN
    if np.any(room < 0.0):
        raise ConfigurationError(f"{spec.name}: centre pose is closer than the margin to a joint limit")
    return room


# ----------------------------------------------------------------- sinusoids
class RampedSinusoids:
    """``q_i(t) = q_centre_i + amplitude_i sin(omega_i tau(t))``, ``tau`` from :func:`ramped_time`.

    Args:
        q_centre: (n,) centre pose (also the start and rest pose), rad.
        amplitude: (n,) amplitudes, rad (0 for joints held still).
        omega: (n,) angular frequencies, rad/s.
        duration: length of the motion, s.
        ramp: start/stop blend length, s.
        name: short label (the trajectory kind).
    """

    def __init__(
        self,
        q_centre: np.ndarray,
        amplitude: np.ndarray,
        omega: np.ndarray,
        duration: float,
        ramp: float = 1.0,
        name: str = "sinusoids",
    ) -> None:
        if duration <= 0.0:
            raise ConfigurationError("duration must be positive")
        self.q_centre = np.array(q_centre, dtype=float)
        self.amplitude = np.array(amplitude, dtype=float)
        self.omega = np.array(omega, dtype=float)
        if not self.q_centre.shape == self.amplitude.shape == self.omega.shape:
            raise ValueError("q_centre, amplitude and omega must have the same shape")
        self._duration = float(duration)
        self.ramp = float(ramp)
        self.name = name

    @property
    def duration(self) -> float:
        """End of the motion, s."""
        return self._duration

    def __call__(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(q, dq, ddq)`` at times ``t`` (N,), each (N, n)."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        tau, dtau, ddtau = ramped_time(t, self._duration, self.ramp)
        phase = np.outer(tau, self.omega)
        a_sin = self.amplitude * np.sin(phase)
        a_w_cos = self.amplitude * self.omega * np.cos(phase)
        q = self.q_centre + a_sin
        dq = a_w_cos * dtau[:, None]
        ddq = -a_sin * self.omega**2 * (dtau**2)[:, None] + a_w_cos * ddtau[:, None]
        return q, dq, ddq


class PaperWristSinusoids(RampedSinusoids):
    """Nadeau et al.'s excitation: the three wrist joints follow ``q_home + A sin(2 pi k f_i tau)``.

    ``k`` is first set (a few fixed-point steps) so that the mean angular speed
    of the flange between the blends equals ``mean_ang_vel``, then reduced if
    needed to respect the TCP and joint speed limits (``capped`` tells). The
    amplitude of a joint is reduced if ``A`` would cross a position limit.

    Args:
        spec: the robot.
        mean_ang_vel: requested mean angular speed of the flange, rad/s.
        amplitude_deg: ``A``, degrees (Nadeau et al.: 45).
        duration: s.
        ramp: start/stop blend, s.

    Attributes:
        time_scale: ``k``.
        capped: True when a speed limit lowered ``k`` below the requested speed.
    """

    def __init__(
        self,
        spec: RobotSpec,
        mean_ang_vel: float = 1.0,
        amplitude_deg: float = 45.0,
        duration: float = 30.0,
        ramp: float = 1.0,
    ) -> None:
        if mean_ang_vel <= 0.0:
            raise ConfigurationError("mean_ang_vel must be positive")
        n = spec.n_joints
        wrist = list(spec.wrist_joints)
        q_home = np.array(spec.q_home, dtype=float)
        amplitude = np.zeros(n)
        amplitude[wrist] = np.minimum(np.deg2rad(amplitude_deg), _position_room(spec, q_home)[wrist])
        freqs = np.zeros(n)
        freqs[wrist] = PAPER_RELATIVE_FREQUENCIES_HZ

        def build(k: float) -> RampedSinusoids:
            return RampedSinusoids(q_home, amplitude, 2 * np.pi * k * freqs, duration, ramp, "wrist")

        k = _time_scale_for_mean_ang_speed(spec, build, mean_ang_vel, _plateau_grid(duration, ramp))
        traj, k, capped = _largest_admissible(spec, build, k)
        super().__init__(q_home, amplitude, traj.omega, duration, ramp, "wrist")
        self.time_scale = k
        self.capped = capped
        self.mean_ang_vel_requested = float(mean_ang_vel)


def _time_scale_for_mean_ang_speed(
    spec: RobotSpec, build: Callable[[float], JointTrajectory], mean_ang_vel: float, t: np.ndarray
) -> float:
    """Time scale ``k`` giving the flange a mean angular speed ``mean_ang_vel`` (rad/s) over ``t``.

    The speed is nearly proportional to ``k``: fixed-point steps ``k <- k target / mean(k)``.
    """
    kin = flange_kinematics(spec)
    k = 1.0
    for _ in range(10):
        q, dq, _ = build(k)(t)
        mean = float(np.mean(_frame_speeds(kin, q, dq)[1]))
        k_new = k * mean_ang_vel / mean
        if abs(k_new - k) <= 1e-4 * k:
            return k_new
        k = k_new
    return k


def _plateau_grid(duration: float, ramp: float) -> np.ndarray:
    """Times between the start and stop blends (the whole motion when there is no plateau)."""
    lo, hi = ramp, duration - ramp
    if hi - lo < 0.5:
        lo, hi = 0.0, duration
    return np.linspace(lo, hi, int(np.ceil((hi - lo) * _CHECK_RATE_HZ)) + 1)


class ThesisSinusoids(RampedSinusoids):
    """Lambert's excitation: ``q_i = q_home_i + a sin(w_i tau)``, ``w_i ~ U[w_min, w_max]``.

    When the speed limits are exceeded, amplitude and frequencies are both
    scaled by ``sqrt(s)`` (so the speeds scale by ``s``): the joint range and
    the acceleration content shrink evenly. Each amplitude also stays inside
    the position limits.

    Args:
        spec: the robot.
        seed: seeds the frequency draw (``np.random.default_rng``).
        amplitude: ``a``, rad (Lambert: 0.3).
        omega_range: ``(w_min, w_max)``, rad/s (Lambert: 1 to 5).
        duration: s.
        ramp: start/stop blend, s.

    Attributes:
        speed_scale: ``s`` (1 when no limit was hit).
        omega_drawn: (n,) the frequencies drawn before scaling, rad/s.
    """

    def __init__(
        self,
        spec: RobotSpec,
        seed: int = 0,
        amplitude: float = 0.3,
        omega_range: tuple[float, float] = (1.0, 5.0),
        duration: float = 30.0,
        ramp: float = 1.0,
    ) -> None:
        rng = np.random.default_rng(seed)
        omega_drawn = rng.uniform(omega_range[0], omega_range[1], spec.n_joints)
        q_home = np.array(spec.q_home, dtype=float)
        room = _position_room(spec, q_home)

        def build(s: float) -> RampedSinusoids:
            root = np.sqrt(s)
            a = np.minimum(amplitude * root, room)
            return RampedSinusoids(q_home, a, omega_drawn * root, duration, ramp, "thesis")

        traj, s, _ = _largest_admissible(spec, build, 1.0)
        super().__init__(q_home, traj.amplitude, traj.omega, duration, ramp, "thesis")
        self.speed_scale = s
        self.omega_drawn = omega_drawn


# ------------------------------------------------------------ pick and place
def _flange_pose(spec: RobotSpec, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    kin = flange_kinematics(spec)
    R, p = kin.frame_pose(q, spec.flange_frame, spec.base_frame)
    return R[0], p[0]


def _solve_ik(
    spec: RobotSpec, q_start: np.ndarray, p_target: np.ndarray, R_target: np.ndarray
) -> np.ndarray:
    """Joint positions putting the flange at ``(R_target, p_target)`` (base frame), from ``q_start``.

    Damped least squares on pinocchio's frame Jacobian (LOCAL); raises if it
    does not converge to 1e-8 or leaves the limits with margin.
    """
    import pinocchio as pin

    kin = flange_kinematics(spec)
    model = kin.model
    data = model.createData()
    fid = model.getFrameId(spec.flange_frame)
    target = pin.SE3(R_target, p_target)
    if model.nq != spec.n_joints:
        raise RuntimeError("IK expects one configuration variable per joint")
    q = np.array(q_start, dtype=float)
    for _ in range(200):
        pin.forwardKinematics(model, data, q)
        current = pin.updateFramePlacement(model, data, fid)
        current_T_target = current.actInv(target)
        err = pin.log6(current_T_target).vector
        if np.linalg.norm(err) < 1e-10:
            break
        J = pin.computeFrameJacobian(model, data, q, fid, pin.ReferenceFrame.LOCAL)
        J = -pin.Jlog6(current_T_target.inverse()) @ J  # d err / dq
        q = q - J.T @ np.linalg.solve(J @ J.T + 1e-10 * np.eye(6), err)
    else:
        raise RuntimeError(f"{spec.name}: IK did not converge")
    lo, hi = spec.q_min + POSITION_MARGIN, spec.q_max - POSITION_MARGIN
    if np.any(q < lo) or np.any(q > hi):
        raise RuntimeError(f"{spec.name}: IK solution leaves the joint limits")
    return q


class PickAndPlace:
    """A pick-and-place cycle of minimum-jerk joint-space segments, repeated to fill ``duration``.

    Waypoints (flange pointing down throughout, as at home)::

        home [-> approach] -> above-pick -> pick -> (dwell) -> above-pick [-> carry]
             -> above-place -> place -> (dwell) -> above-place -> home

    ``carry`` and ``approach`` (when ``carry_tilt`` is not 0) are home with the wrist's pitch
    joint (the last but one) turned by ``carry_tilt`` and by ``-carry_tilt``: the part is shown
    to a camera or poured, the empty gripper is turned towards the next part. The sensor sees
    gravity from the side, which is what tells a held part's centre of mass along the tool axis
    and, with the gripper empty, the F/T sensor's offsets from its weight.

    ``above-pick`` is home with the base joint turned by ``+base_swing``;
    ``above-place`` turns it by ``-base_swing`` and the last joint by
    ``wrist_turn`` (the wrist rotates during the transfer); ``pick`` and
    ``place`` are ``drop`` metres lower, found by inverse kinematics. Each
    segment is long enough for the TCP and joint speed limits (at least
    ``min_segment`` s). With ``station_arc`` the base turns less on an arm whose
    flange is far from the base frame's z axis at home: the flange travels at most
    ``station_arc`` m along its arc from home to above-pick (and to above-place),
    so a long arm carries its parts no farther, and so no slower, than a short one.

    Args:
        spec: the robot.
        duration: total length, s; the cycle repeats (``None``: one cycle).
        base_swing: rad. wrist_turn: rad. drop: m. dwell: s. min_segment: s. carry_tilt: rad.
        station_arc: m, or None (the base turns by ``base_swing`` whatever the arm's reach).

    Attributes:
        base_swing: rad, how far the base turns from home to above-pick (``station_arc`` applied).
        waypoints: (W, n) the joint configurations of one cycle, rad.
        segment_durations: (W - 1,) s.
        cycle_duration: s.
        pick_dwell, place_dwell: (start, end) of the dwells at the pick and the place in one
            cycle, s: where the gripper closes and opens.
    """

    name = "pickplace"

    def __init__(
        self,
        spec: RobotSpec,
        duration: float | None = None,
        base_swing: float = 0.6,
        wrist_turn: float = 1.2,
        drop: float = 0.12,
        dwell: float = 0.4,
        min_segment: float = 0.8,
        carry_tilt: float = 0.0,
        station_arc: float | None = None,
    ) -> None:
        q_home = np.array(spec.q_home, dtype=float)
        if station_arc is not None:
            _, p_home = _flange_pose(spec, q_home[None, :])
            radius = float(np.hypot(p_home[0], p_home[1]))  # from the base frame's z axis (the base joint's), m
            if radius * abs(base_swing) > station_arc:
                base_swing = float(np.copysign(station_arc / radius, base_swing))
        self.base_swing = float(base_swing)
        above_pick = q_home.copy()
        above_pick[0] += base_swing
        above_place = q_home.copy()
        above_place[0] -= base_swing
        above_place[-1] += wrist_turn
        R, p = _flange_pose(spec, above_pick[None, :])
        pick = _solve_ik(spec, above_pick, p - np.array([0.0, 0.0, drop]), R)
        R, p = _flange_pose(spec, above_place[None, :])
        place = _solve_ik(spec, above_place, p - np.array([0.0, 0.0, drop]), R)
        pitch = np.eye(len(q_home))[-2]
        approach = [] if carry_tilt == 0.0 else [q_home - carry_tilt * pitch]
        carry = [] if carry_tilt == 0.0 else [q_home + carry_tilt * pitch]
        self.waypoints = np.array([q_home, *approach, above_pick, pick, pick, above_pick, *carry, above_place, place,
                                   place, above_place, q_home])
        for q in self.waypoints:
            if np.any(q < spec.q_min + POSITION_MARGIN) or np.any(q > spec.q_max - POSITION_MARGIN):
                raise RuntimeError(f"{spec.name}: a pick-and-place waypoint is outside the limits")

        durations = [
            _segment_duration(spec, qa, qb, min_segment) if np.any(qa != qb) else dwell
            for qa, qb in zip(self.waypoints[:-1], self.waypoints[1:])
        ]
        self.segment_durations = np.array(durations)
        self._cycle = MinJerkSegments(self.waypoints, self.segment_durations)
        self.cycle_duration = float(np.sum(self.segment_durations))
        starts = np.concatenate([[0.0], np.cumsum(self.segment_durations)])
        i_pick, i_place = 2 + len(approach), len(self.waypoints) - 4  # the segments that stay at pick, at place
        self.pick_dwell = (float(starts[i_pick]), float(starts[i_pick + 1]))
        self.place_dwell = (float(starts[i_place]), float(starts[i_place + 1]))
        self._duration = self.cycle_duration if duration is None else float(duration)
        if self._duration <= 0.0:
            raise ConfigurationError("duration must be positive")

    @property
    def duration(self) -> float:
        """Total length, s (whole cycles, then home held)."""
        return self._duration

    def __call__(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(q, dq, ddq)`` at times ``t`` (N,), each (N, n)."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        n_cycles = max(int(np.floor(self._duration / self.cycle_duration + 1e-9)), 1)
        in_cycle = np.where(
            t < n_cycles * self.cycle_duration, np.mod(t, self.cycle_duration), self.cycle_duration
        )
        return self._cycle(np.where(t < 0.0, 0.0, in_cycle))


def _segment_duration(spec: RobotSpec, qa: np.ndarray, qb: np.ndarray, min_segment: float) -> float:
    """Shortest rest-to-rest minimum-jerk duration from ``qa`` to ``qb`` within the speed limits, s."""
    # a minimum-jerk segment peaks at 1.875 |delta| / T
    T0 = max(min_segment, float(np.max(1.875 * np.abs(qb - qa) / (JOINT_SPEED_FRACTION * spec.dq_max))))

    def build(scale: float) -> MinJerkSegments:
        return MinJerkSegments(np.array([qa, qb]), np.array([T0 / scale]))

    _, scale, _ = _largest_admissible(spec, build, 1.0)
    return T0 / scale


_MIN_JERK_PEAK_ACCELERATION = 10.0 / np.sqrt(3.0)
"""A rest-to-rest minimum-jerk segment over ``delta`` in ``T`` peaks at this times ``|delta| / T²``."""


class ReturnToStart:
    """``trajectory``, then the rest-to-rest minimum-jerk way back to its first pose.

    A motion that ends where it began, at rest, and so repeats without a jump (the simulator node loops
    its run). The way back is no brisker than the motion itself: no joint goes faster or accelerates
    harder on it than on the motion (a minimum-jerk segment over ``delta`` peaks at ``1.875 |delta| / T``
    and ``5.77 |delta| / T²``), within the speed limits (:data:`TCP_SPEED_LIMIT`,
    :data:`JOINT_SPEED_FRACTION`), and it lasts at least ``min_segment`` s. (A brisk way back shows the
    estimate's small errors where the motion never went: the payload tracker held samples out there.)

    Args:
        trajectory: a motion that ends at rest (every trajectory of this module does).
        spec: the robot.
        min_segment: shortest way back, s.

    Attributes:
        trajectory: the motion. back_duration: the way back, s. name: the motion's name.
    """

    def __init__(self, trajectory: JointTrajectory, spec: RobotSpec, min_segment: float = 1.0) -> None:
        end = np.array([trajectory.duration])
        q_end, dq_end, ddq_end = (x[0] for x in trajectory(end))
        if np.max(np.abs(dq_end)) > 1e-9 or np.max(np.abs(ddq_end)) > 1e-9:
            raise ConfigurationError("the way back to the start needs a motion that ends at rest")
        q_start = trajectory(np.zeros(1))[0][0]
        self.trajectory = trajectory
        self.name = str(getattr(trajectory, "name", type(trajectory).__name__))
        self.back_duration = 0.0
        if np.any(q_end != q_start):
            delta = np.abs(q_end - q_start)
            _, dq, ddq = trajectory(_check_grid(trajectory.duration))
            peak_dq, peak_ddq = np.max(np.abs(dq), axis=0), np.max(np.abs(ddq), axis=0)
            moved = (delta > 0.0) & (peak_dq > 0.0) & (peak_ddq > 0.0)
            gentle = max([min_segment, *(1.875 * delta[moved] / peak_dq[moved]),
                          *np.sqrt(_MIN_JERK_PEAK_ACCELERATION * delta[moved] / peak_ddq[moved])])
            self.back_duration = _segment_duration(spec, q_end, q_start, gentle)
        self._back = MinJerkSegments(np.array([q_end, q_start]), np.array([max(self.back_duration, 1e-9)]))

    @property
    def duration(self) -> float:
        """The motion and the way back, s."""
        return self.trajectory.duration + self.back_duration

    def __call__(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(q, dq, ddq)`` at times ``t`` (N,), each (N, n); the first pose is held after the end."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        first = self.trajectory(np.minimum(t, self.trajectory.duration))
        back = self._back(t - self.trajectory.duration)
        on_the_way_back = (t > self.trajectory.duration)[:, None]
        return tuple(np.where(on_the_way_back, b, a) for a, b in zip(first, back))  # type: ignore[return-value]


# ----------------------------------------------------------------- factory
def make_trajectory(kind: str, spec: RobotSpec, **kw: Any) -> JointTrajectory:
    """Return a trajectory by kind: ``"wrist"``, ``"thesis"`` or ``"pickplace"``.

    ``"wrist"`` is Nadeau et al.'s wrist sinusoids, ``"thesis"`` Lambert's all-joint
    sinusoids, ``"pickplace"`` a pick-and-place cycle.

    Keyword arguments go to :class:`PaperWristSinusoids`, :class:`ThesisSinusoids`
    or :class:`PickAndPlace` (all accept ``duration``).
    """
    if kind == "wrist":
        return PaperWristSinusoids(spec, **kw)
    if kind == "thesis":
        return ThesisSinusoids(spec, **kw)
    if kind == "pickplace":
        return PickAndPlace(spec, **kw)
    raise ConfigurationError(f"unknown trajectory kind {kind!r}; choose one of {', '.join(TRAJECTORY_KINDS)}")
