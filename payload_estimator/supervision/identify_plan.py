"""``~/identify``'s preconditions and motions, without ROS.

Whether a goal may start, the identification motion it runs, and the way back
to where it started:

* :func:`refusal`: why a goal cannot start (no robot model or stream yet, the
  estimator paused, no joint state or a stale one, no trajectory action
  configured, another identification running). A start within the position
  margin of a joint limit is refused by the design itself
  (:class:`~payload_estimator.excitation.ExcitationError`);
* :func:`plan_identification`: the motion from the current joint state
  (:func:`~payload_estimator.excitation.design_excitation`; arm limits from the
  robot preset when the joints are the preset's, else from the URDF), with the
  settings' motion limits and the goal's overrides, sampled into the points sent
  to the controller. The speed limit holds at the flange and at the payload's
  farthest points (:func:`payload_reach`: ``payload_shape``'s, else the tip of a
  tool of ``identify_tool_length``); the plan names the fastest one. With
  ``wrench_source: joint_torques`` it is the all-joint sinusoids the design
  picks for the payload as the joint torques see it
  (:func:`joint_torque_noise`: the arm calibration's residual and friction;
  slow sinusoids on every joint keep the calibrated arm model's own error low:
  on 6 simulated xArm 7 arms the worst COM error of the club hammer after 15 s
  was 19.6 mm with the motion optimised for the joint torques, 11.5 mm with the
  F/T sensor's, 4.0 mm with these), else for the F/T sensor; the goal's
  ``motion`` asks for a short shake instead (:func:`parse_motion`). Slow (an
  optimisation): the node runs it in the action's own thread, never in its
  processing loop;
* :func:`return_move`: the minimum-jerk motion back to the start after the
  identification motion was stopped, within every limit (the speed at the
  payload's points too).

Times: ``now`` and a reading's ``received`` are the clock of the inputs' receive
times (the node's monotonic clock), s; motion times are s from the start of a
trajectory. Joint vectors are in the stream's joint order
(:attr:`IdentifyPlan.joint_names`), rad.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import yaml
from scipy.spatial.transform import Rotation

from payload_estimator.core.shapes import outermost_points, rpy_to_matrix
from payload_estimator.errors import CalibrationError, ShapeError
from payload_estimator.excitation import (
    ArmLimits,
    ExcitationError,
    MotionLimits,
    design_excitation,
)
from payload_estimator.excitation.check import fastest_point_text
from payload_estimator.excitation.design import SHAKE_DURATIONS, design_shake
from payload_estimator.excitation.information import JointTorqueNoise
from payload_estimator.excitation.limits import point_speeds
from payload_estimator.excitation.trajectory import JointTrajectory, MinJerkSegments, sample_points
from payload_estimator.pipeline.kinematics import SensorKinematics
from payload_estimator.pipeline.stream import JOINTS
from payload_estimator.robots import ROBOTS
from payload_estimator.settings import Settings, WrenchSource

__all__ = [
    "IdentifyGoal",
    "JointReading",
    "IdentifyPlan",
    "refusal",
    "plan_identification",
    "parse_motion",
    "joint_torque_noise",
    "MOTIONS",
    "motion_limits",
    "payload_reach",
    "joint_reading",
    "newest_joint_reading",
    "return_move",
    "MIN_RETURN_S",
]

MIN_RETURN_S = 0.5
"""Shortest motion back to the start, s."""
_TCP_TARGET_FRACTION = 0.95  # the motion back keeps this fraction of max_tcp_speed
MOTIONS = ("designed", *(f"shake {d:g}" for d in SHAKE_DURATIONS))
"""The goal's ``motion``: the motion designed for ``duration`` (also ""), or a short shake of 0.5 s or 1 s
("shake" alone: 0.5 s)."""


# ------------------------------------------------------------------ values
@dataclass(frozen=True)
class IdentifyGoal:
    """An ``Identify`` goal.

    Attributes:
        duration: the motion's length, s (0: the settings' ``identify_duration``).
        max_tcp_speed: the top speed of the flange and the payload's farthest points, m/s (0: the settings'
            ``identify_max_tcp_speed``).
        apply: hand a converged estimate over (``~/apply``).
        dry_run: design and check the motion only.
        motion: "" or "designed": the designed motion; "shake 0.5", "shake 1" (or "shake"): a short shake
            (:data:`MOTIONS`, :func:`parse_motion`).
    """

    duration: float = 0.0
    max_tcp_speed: float = 0.0
    apply: bool = False
    dry_run: bool = False
    motion: str = ""


@dataclass(frozen=True)
class JointReading:
    """The arm's measured joint positions.

    Attributes:
        positions: (n,) rad, in the stream's joint order.
        received: when the joint state was received, s on the receive clock.
    """

    positions: np.ndarray
    received: float


def joint_reading(names: Sequence[str], positions: Sequence[float], received: float,
                  joint_names: Sequence[str]) -> JointReading | None:
    """The reading of ``joint_names`` in a ``sensor_msgs/JointState``, or None.

    None when the message lacks one of them (a gripper's own message, say),
    when its names and positions differ in number, or when one of the positions
    is not finite.

    Args:
        names: the message's joint names.
        positions: the message's positions, rad.
        received: its receive time, s.
        joint_names: the arm's joints, in the stream's order.
    """
    if len(names) != len(positions):
        return None
    index = {str(n): i for i, n in enumerate(names)}
    try:
        q = np.array([float(positions[index[j]]) for j in joint_names])
    except KeyError:
        return None
    return JointReading(q, float(received)) if np.all(np.isfinite(q)) else None


def newest_joint_reading(items: Sequence[tuple[str, Any, float]], joint_names: Sequence[str]) -> JointReading | None:
    """The reading of ``joint_names`` in the newest joint state that has them all (None: none has).

    ``items`` are ``(kind, msg, receive time)``; each joint state is read as
    :func:`joint_reading` reads it. A message whose bytes are no ``JointState``
    is skipped (the stream counts it as malformed).
    """
    for kind, msg, received in reversed(items):
        if kind == JOINTS:
            try:
                reading = joint_reading(msg.name, msg.position, received, joint_names)
            except ValueError:
                continue
            if reading is not None:
                return reading
    return None


@dataclass(frozen=True)
class IdentifyPlan:
    """A designed identification motion, ready to send.

    Attributes:
        joint_names: (n,) the arm joints, the columns of every array.
        q_start: (n,) where the motion starts and ends, rad.
        trajectory: the designed :class:`JointTrajectory`.
        t, q, dq, ddq: the points sent to the controller: (K,) s from the start, (K, n) rad, rad/s, rad/s².
        limits: the motion limits it was designed for.
        arm_limits: the arm's limits.
        kinematics: the flange kinematics it was designed with.
        summary: the design's summary (peaks as fractions of the limits, information ...).
        peak_tcp_speed: the flange's top linear speed along the motion, m/s.
        fastest: where the motion is fastest (the flange or a payload's point, in the flange frame) and
            how fast, in words (:func:`~payload_estimator.excitation.check.fastest_point_text`).
    """

    joint_names: tuple[str, ...]
    q_start: np.ndarray
    trajectory: JointTrajectory
    t: np.ndarray
    q: np.ndarray
    dq: np.ndarray
    ddq: np.ndarray
    limits: MotionLimits
    arm_limits: ArmLimits
    kinematics: SensorKinematics = field(repr=False)
    summary: Mapping[str, Any] = field(default_factory=dict)
    peak_tcp_speed: float = math.nan
    fastest: str = ""

    @property
    def duration(self) -> float:
        """The designed motion's length, s."""
        return float(self.trajectory.duration)

    @property
    def summary_yaml(self) -> str:
        """:attr:`summary` as YAML (numbers as plain floats)."""
        return yaml.safe_dump(_plain(dict(self.summary)), sort_keys=False, default_flow_style=None).strip()


# ------------------------------------------------------------ preconditions
def refusal(settings: Settings | None, running: bool, status: str, paused: bool, reading: JointReading | None,
            now: float, busy: bool, dry_run: bool = False) -> str | None:
    """Why an identification cannot start now (one sentence), or None.

    Args:
        settings: the node's settings (None: invalid parameters).
        running: the estimator has its stream (robot model and frames known); ``status`` says why not.
        status: the node's status message.
        paused: the estimator is paused (``~/pause``).
        reading: the newest joint state of the arm (None: none yet).
        now: s on the receive clock.
        busy: another identification is running.
        dry_run: the goal only designs (needs neither the controller nor the arm to itself).
    """
    if busy and not dry_run:
        return "refused: another identification is running"
    if settings is None or not running:
        return f"refused: the estimator is not running ({status})"
    if not settings.trajectory_action and not dry_run:
        return "refused: no trajectory controller configured (parameter trajectory_action is empty)"
    if paused:
        return "refused: the estimator is paused (~/pause false resumes it)"
    if reading is None:
        return "refused: no joint state of the arm received yet"
    age = now - reading.received
    if age > settings.stale_after_s:
        return f"refused: the joint states are stale (the last one is {age:.2f} s old, stale_after_s " \
               f"{settings.stale_after_s:g} s)"
    return None


# ------------------------------------------------------------------- design
def motion_limits(settings: Settings, goal: IdentifyGoal,
                  sensor_pose: tuple[np.ndarray, np.ndarray] | None = None) -> MotionLimits:
    """The motion limits of the settings (``identify_*``), with the goal's duration and speed when non-zero.

    The speed limit holds at the payload's farthest points too (:func:`payload_reach`, ``sensor_pose``).

    Raises:
        ExcitationError: a negative or non-finite value, or a ``payload_shape`` that cannot be read.
    """
    points, label = payload_reach(settings, sensor_pose)
    configured = replace(MotionLimits.from_settings(settings), payload_points=points, payload_label=label)
    return configured.with_overrides(duration=goal.duration, max_tcp_speed=goal.max_tcp_speed)


_DEFAULT_SHAPE = str(Settings.__dataclass_fields__["payload_shape"].default)


def payload_reach(settings: Settings, sensor_pose: tuple[np.ndarray, np.ndarray] | None = None
                  ) -> tuple[tuple[tuple[float, float, float], ...], str]:
    """The payload's farthest points in the flange frame (m), where the speed limit holds too, and what they are.

    With ``payload_shape`` set (not its default): the corners of the box about each of its solids, or
    its point cloud's outermost points; else the tip of a tool of ``identify_tool_length`` on the flange's
    z axis (none for 0). ``sensor_pose``: ``(R, p)`` of the sensor frame (the shape's) in the flange
    frame; None: ``sensor_xyz``, ``sensor_rpy`` (the sensor attached to the flange).

    Raises:
        ExcitationError: ``payload_shape`` cannot be read (one line).
    """
    if settings.payload_shape.strip() == _DEFAULT_SHAPE:
        length = float(settings.identify_tool_length)
        return (((0.0, 0.0, length),) if length > 0 else ()), f"the tip of the tool (identify_tool_length {length:g} m)"
    try:
        in_sensor = outermost_points(settings.payload_shape)
    except ShapeError as exc:
        raise ExcitationError(f"payload_shape: {exc}") from None
    R, p = sensor_pose if sensor_pose is not None else (rpy_to_matrix(settings.sensor_rpy),
                                                         np.asarray(settings.sensor_xyz, dtype=float))
    in_flange = in_sensor @ np.asarray(R, dtype=float).T + np.asarray(p, dtype=float)
    return tuple((float(x), float(y), float(z)) for x, y, z in in_flange), "the payload (payload_shape)"


def parse_motion(text: str) -> float | None:
    """Return the shake's duration a goal's ``motion`` asks for (s), or None for the designed motion.

    Raises:
        ExcitationError: not one of :data:`MOTIONS` (one line).
    """
    words = " ".join(str(text).lower().replace("_", " ").replace("-", " ").split())
    if words in ("", "designed"):
        return None
    if words == "shake":
        return SHAKE_DURATIONS[0]
    if words.startswith("shake "):
        try:
            seconds = float(words.split(" ", 1)[1].rstrip("s").strip())
        except ValueError:
            seconds = math.nan
        for d in SHAKE_DURATIONS:
            if abs(seconds - d) < 1e-9:
                return d
    raise ExcitationError(f"unknown motion {text!r}: one of {', '.join(repr(m) for m in MOTIONS)} (or empty)")


def joint_torque_noise(settings: Settings, joint_names: Sequence[str]) -> JointTorqueNoise | None:
    """Return what the joint torques' payload residual is uncertain by, or None for an F/T sensor's source.

    With ``wrench_source: joint_torques``: the residual and friction of the arm calibration the settings
    name (``arm_calibration``), else the robot preset's effort noise and friction, else a default per joint.

    Raises:
        ExcitationError: the arm calibration is missing or another arm's (one line).
    """
    if settings.wrench_source is not WrenchSource.JOINT_TORQUES:
        return None
    from payload_estimator.pipeline.sources import load_arm_calibration

    try:
        calibration = load_arm_calibration(settings, tuple(joint_names))
    except CalibrationError as exc:
        raise ExcitationError(str(exc)) from None
    if calibration is not None:
        return JointTorqueNoise.from_calibration(calibration)
    spec = ROBOTS.get(settings.robot)
    if spec is not None and tuple(spec.joint_names) == tuple(joint_names):
        return JointTorqueNoise.for_robot(spec)
    return JointTorqueNoise.default(len(joint_names))


def _arm(settings: Settings, urdf: str, flange: str, joint_names: tuple[str, ...]
         ) -> tuple[SensorKinematics, ArmLimits]:
    """The flange kinematics of the robot description in use, and the arm limits.

    The arm is mounted as the settings say (``base_rpy``, ``gravity``: a
    wall-mounted arm's floor and gravity are not an upright one's). The limits
    are the preset's vendor limits when the joints and flange are its own, else
    the URDF's.
    """
    kin = SensorKinematics(urdf, flange, joint_names=joint_names,
                           R_world_base=Rotation.from_euler("xyz", settings.base_rpy).as_matrix(),
                           gravity_in_world=(0.0, 0.0, -settings.gravity))
    spec = ROBOTS.get(settings.robot)
    if spec is not None and tuple(spec.joint_names) == joint_names and spec.flange_frame == flange:
        return kin, ArmLimits.from_robot(spec)
    return kin, ArmLimits.from_kinematics(kin)


def plan_identification(settings: Settings, goal: IdentifyGoal, urdf: str, flange: str,
                        joint_names: Sequence[str], q_start: np.ndarray,
                        sensor_pose: tuple[np.ndarray, np.ndarray] | None = None) -> IdentifyPlan:
    """Design and check the identification motion from ``q_start`` (module docstring).

    For the settings' wrench source (:func:`joint_torque_noise`), the goal's ``motion``
    (:func:`parse_motion`: the designed motion of the goal's or the settings' duration, or a shake), the
    speed limit at the payload's farthest points (:func:`payload_reach`; ``sensor_pose``: the sensor
    frame's ``(R, p)`` in the flange frame, as the stream knows it).

    Raises:
        ExcitationError: why no safe motion can be designed (a start outside or within the margin of a
            limit, a duration too short ...), or which check the designed motion fails.
    """
    names = tuple(joint_names)
    shake = parse_motion(goal.motion)
    if shake is not None and goal.duration:
        raise ExcitationError(f"a shake lasts {shake:g} s: leave the goal's duration at 0")
    kin, arm = _arm(settings, urdf, flange, names)
    limits = motion_limits(settings, goal, sensor_pose)
    noise = joint_torque_noise(settings, names)
    q0 = np.asarray(q_start, dtype=float)
    if shake is not None:
        design = design_shake(kin, arm, q0, shake, limits, seed=0, estimate_offsets=settings.estimates_offsets,
                              joint_torques=noise)
        limits = design.limits
    else:
        design = design_excitation(kin, arm, q0, limits=limits, seed=0, estimate_offsets=settings.estimates_offsets,
                                   joint_torques=noise)
    if not design.check.ok:
        raise ExcitationError("the designed motion fails its checks: " + "; ".join(design.check.violations))
    t, q, dq, ddq = sample_points(design.trajectory, settings.identify_point_spacing)
    fastest = fastest_point_text(design.check, "flange")
    return IdentifyPlan(names, np.asarray(q_start, dtype=float).copy(), design.trajectory, t, q, dq, ddq,
                        limits, arm, kin, {**design.summary(), "fastest": fastest}, float(design.check.peak_tcp_speed),
                        fastest)


# -------------------------------------------------------- the way back
def return_move(plan: IdentifyPlan, q_from: np.ndarray) -> MinJerkSegments:
    """The shortest minimum-jerk motion from ``q_from`` back to the plan's start, within every limit.

    It keeps every joint's speed, acceleration and jerk within the plan's
    fractions of the arm's limits (peaks of the blend: 1.875 d/T, 5.77 d/T²,
    60 d/T³ for a joint moving d), lasts at least :data:`MIN_RETURN_S`, and keeps
    the flange and the payload's points below ``max_tcp_speed`` with a 5 % margin.
    """
    lim, arm = plan.limits, plan.arm_limits
    d = np.abs(plan.q_start - q_from)
    T = max(MIN_RETURN_S,
            float(np.max(1.875 * d / (lim.velocity_fraction * arm.dq_max))),
            float(np.max(np.sqrt(10.0 / math.sqrt(3.0) * d / (lim.acceleration_fraction * arm.ddq_max)))),
            float(np.max(np.cbrt(60.0 * d / (lim.jerk_fraction * arm.dddq_max)))))
    ends = np.array([q_from, plan.q_start], dtype=float)
    q, dq, _ = MinJerkSegments(ends, np.array([T]))(np.linspace(0.0, T, 201))
    motion = plan.kinematics.compute(q, dq, np.zeros_like(dq))
    peak = float(np.max(point_speeds(motion.lin_vel_in_sensor, motion.ang_vel_in_sensor, lim.speed_points)))
    target = _TCP_TARGET_FRACTION * lim.max_tcp_speed
    if peak > target:  # every speed scales with 1/T
        T *= peak / target
    return MinJerkSegments(ends, np.array([T]))


def _plain(value: Any) -> Any:
    """Numpy scalars and arrays as plain Python numbers and lists (for YAML)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    return value
