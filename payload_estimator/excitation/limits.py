"""What an identification motion may do: the arm's joint limits and the motion's own bounds.

Two value types, declared once and read by the design, its checks, the command line and the
node's ``~/identify`` action:

* :class:`ArmLimits`: the robot's joint-space limits (positions, speeds, accelerations, jerks),
  from a built-in robot's vendor table or from any URDF (which carries positions and speeds
  only: accelerations and jerks then get conservative defaults).
* :class:`MotionLimits`: the bounds a user sets for one motion: its duration, the TCP speed,
  the fractions of the joint limits it may use, how far each joint may leave the start, and
  the space it must keep clear of (the floor plane, the robot's base).

Units: rad, rad/s, rad/s², rad/s³, m, m/s, s. "TCP" is the origin of the kinematics' frame (the
flange, or the sensor frame when it is mounted further out); the payload is taken as a sphere
of radius ``payload_radius`` about it for the clearances. The speed limit holds at the TCP and at
the payload's outermost points (``payload_points``, in the TCP frame: a tool's tip, the corners of
a box about the payload), a point ``p`` fixed to the TCP moving at ``v + w x p``. Heights are in the
world frame of the kinematics (its origin is the robot base's; ``z`` up, against gravity).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

import numpy as np

from payload_estimator.errors import ConfigurationError, ExcitationError
from payload_estimator.robots import RobotSpec, get_robot, robot_urdf
from payload_estimator.settings import Settings

if TYPE_CHECKING:  # pinocchio is imported by the functions that need it: the values here need none
    from payload_estimator.pipeline.kinematics import SensorKinematics

__all__ = [
    "ArmLimits",
    "MotionLimits",
    "point_speeds",
    "ExcitationError",
    "flange_kinematics",
    "DEFAULT_ACCELERATION_LIMIT",
    "DEFAULT_JERK_LIMIT",
    "DEFAULT_TOOL_LENGTH",
]

DEFAULT_ACCELERATION_LIMIT = 5.0
"""rad/s², every joint, for an arm known by its URDF alone (URDF has no acceleration limit):
below every published limit of the supported arms (Franka 7.5 to 20, UFACTORY 20)."""
DEFAULT_JERK_LIMIT = 250.0
"""rad/s³, every joint, for an arm known by its URDF alone: 50 x the default acceleration per s."""


_SETTINGS_PREFIX = "identify_"
_FROM_SETTINGS = ("duration", "max_tcp_speed", "max_excursion", "floor_height", "base_clearance", "payload_radius")
"""The bounds users set on the robot (node parameters ``identify_<name>``): their defaults are the
settings' (declared once, in :mod:`payload_estimator.settings`)."""


def _setting_default(name: str) -> float:
    default: Any = Settings.__dataclass_fields__[_SETTINGS_PREFIX + name].default
    return float(default)


def _frozen(values: Any, n: int, what: str) -> np.ndarray:
    arr = np.array(values, dtype=float).reshape(-1)
    if arr.shape != (n,):
        raise ConfigurationError(f"{what} must have {n} entries, got {arr.shape[0]}")
    if not np.all(np.isfinite(arr)):
        raise ConfigurationError(f"{what} must be finite")
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, eq=False)
class ArmLimits:
    """Joint-space limits of an arm, in the order of ``joint_names``.

    Attributes:
        joint_names: the joints a motion drives.
        q_min, q_max: (n,) position limits, rad.
        dq_max: (n,) speed limits, rad/s.
        ddq_max: (n,) acceleration limits, rad/s².
        dddq_max: (n,) jerk limits, rad/s³.
        source: where the numbers come from (shown in summaries).
    """

    joint_names: tuple[str, ...]
    q_min: np.ndarray
    q_max: np.ndarray
    dq_max: np.ndarray
    ddq_max: np.ndarray
    dddq_max: np.ndarray
    source: str = ""

    def __post_init__(self) -> None:
        n = len(self.joint_names)
        if n == 0:
            raise ConfigurationError("an arm needs at least one joint")
        for name in ("q_min", "q_max", "dq_max", "ddq_max", "dddq_max"):
            object.__setattr__(self, name, _frozen(getattr(self, name), n, name))
        if np.any(self.q_max <= self.q_min):
            raise ConfigurationError("every upper position limit must exceed the lower one")
        for name in ("dq_max", "ddq_max", "dddq_max"):
            if np.any(getattr(self, name) <= 0.0):
                raise ConfigurationError(f"{name} must be positive")

    @property
    def n_joints(self) -> int:
        """Number of joints."""
        return len(self.joint_names)

    @classmethod
    def from_robot(cls, robot: str | RobotSpec) -> ArmLimits:
        """Return the vendor limits of a built-in robot (``ConfigurationError`` for an unknown name)."""
        spec = get_robot(robot) if isinstance(robot, str) else robot
        return cls(spec.joint_names, spec.q_min, spec.q_max, spec.dq_max, spec.ddq_max, spec.dddq_max,
                   source=f"{spec.name} vendor limits")

    @classmethod
    def from_kinematics(
        cls,
        kin: SensorKinematics,
        acceleration: float = DEFAULT_ACCELERATION_LIMIT,
        jerk: float = DEFAULT_JERK_LIMIT,
    ) -> ArmLimits:
        """Return the URDF's position and speed limits of ``kin``'s joints, with acceleration and jerk limits.

        ``acceleration`` (rad/s²) and ``jerk`` (rad/s³) are the same for every joint.

        Raises:
            ExcitationError: a joint without finite position or speed limits (a continuous joint
                or a URDF without ``<limit>``): no motion can be planned safely for it.
        """
        model = kin.model
        q_min, q_max, dq_max = [], [], []
        for name in kin.joint_names:
            joint = model.joints[model.getJointId(name)]
            lo = float(model.lowerPositionLimit[joint.idx_q])
            hi = float(model.upperPositionLimit[joint.idx_q])
            v = float(model.velocityLimit[joint.idx_v])
            if joint.nq != 1 or not (np.isfinite(lo) and np.isfinite(hi) and hi > lo) or not v > 0.0:
                raise ExcitationError(
                    f"joint {name} has no finite position and speed limits in the URDF: "
                    "no motion can be planned for it"
                )
            q_min.append(lo)
            q_max.append(hi)
            dq_max.append(v)
        n = kin.n_joints
        return cls(kin.joint_names, np.array(q_min), np.array(q_max), np.array(dq_max),
                   np.full(n, float(acceleration)), np.full(n, float(jerk)),
                   source="URDF limits, default acceleration and jerk limits")


DEFAULT_TOOL_LENGTH = _setting_default("tool_length")
"""How far the tool and payload reach beyond the flange along its z axis when nothing says, m (the
setting ``identify_tool_length``): where the speed limit holds besides the flange."""

_NOT_NUMBERS = ("payload_points", "payload_label")
"""The fields of :class:`MotionLimits` that are no single number."""

MIN_TCP_SPEED = 0.001
"""The slowest top TCP speed a motion is designed for, m/s: slower, the payload hardly moves."""
MIN_EXCURSION = 0.01
"""The smallest joint excursion a motion is designed for, rad."""


@dataclass(frozen=True)
class MotionLimits:
    """The bounds of one identification motion (every one checked on the sampled result).

    The defaults of those users set on the robot come from :class:`~payload_estimator.settings.Settings`
    (``identify_duration``, ...); the fractions of the vendor limits and the position margin are
    fixed here.

    Attributes:
        duration: length of the motion, from rest at the start to rest at the start, s.
        max_tcp_speed: largest linear speed of the TCP, m/s (0.25: the reduced speed of
            ISO 10218-1, the usual figure for collaborative operation under ISO/TS 15066).
        position_margin: every joint stays this far inside its position limits, rad.
        velocity_fraction: joint speeds stay below this fraction of their limits.
        acceleration_fraction: joint accelerations likewise.
        jerk_fraction: joint jerks likewise.
        max_excursion: no joint leaves its start position by more than this, rad.
        floor_height: the payload stays above this height of the world frame, m (a table the
            robot stands on is at 0).
        base_clearance: the payload stays this far from the vertical axis through the robot's
            base, m.
        payload_radius: the payload (and gripper) lies within this distance of the TCP, m.
        payload_points: the payload's outermost points in the TCP frame, m: ``max_tcp_speed`` holds at
            each of them as at the TCP (a point ``p`` fixed to it moves at ``v + w x p``, fastest at a vertex
            of their convex hull); none: at the TCP alone.
        payload_label: what those points are, for the texts that name the fastest one ("the tip of the
            tool (identify_tool_length 0.15 m)", "the payload (payload_shape)").
    """

    duration: float = _setting_default("duration")
    max_tcp_speed: float = _setting_default("max_tcp_speed")
    position_margin: float = 0.1
    velocity_fraction: float = 0.5
    acceleration_fraction: float = 0.5
    jerk_fraction: float = 0.5
    max_excursion: float = _setting_default("max_excursion")
    floor_height: float = _setting_default("floor_height")
    base_clearance: float = _setting_default("base_clearance")
    payload_radius: float = _setting_default("payload_radius")
    payload_points: tuple[tuple[float, float, float], ...] = ()
    payload_label: str = "the payload"

    def __post_init__(self) -> None:
        points = np.array(self.payload_points, dtype=float).reshape(-1, 3) if len(self.payload_points) else \
            np.zeros((0, 3))
        if not np.all(np.isfinite(points)):
            raise ExcitationError("payload_points must be finite")
        object.__setattr__(self, "payload_points", tuple(tuple(float(x) for x in p) for p in points))
        for f in fields(self):
            if f.name in _NOT_NUMBERS:
                continue
            value = getattr(self, f.name)
            if not np.isfinite(value):
                raise ExcitationError(f"{f.name} must be finite, got {value}")
        positive = ("duration", "max_tcp_speed", "velocity_fraction", "acceleration_fraction",
                    "jerk_fraction", "max_excursion")
        for name in positive:
            if getattr(self, name) <= 0.0:
                raise ExcitationError(f"{name} must be positive, got {getattr(self, name)}")
        if self.max_excursion < MIN_EXCURSION:
            raise ExcitationError(f"max_excursion must be at least {MIN_EXCURSION:g} rad, got {self.max_excursion:g}")
        if self.max_tcp_speed < MIN_TCP_SPEED:
            raise ExcitationError(f"max_tcp_speed must be at least {MIN_TCP_SPEED:g} m/s, got {self.max_tcp_speed:g}")
        for name in ("velocity_fraction", "acceleration_fraction", "jerk_fraction"):
            if getattr(self, name) > 1.0:
                raise ExcitationError(f"{name} is a fraction of the vendor limit: at most 1, got {getattr(self, name)}")
        for name in ("position_margin", "base_clearance", "payload_radius"):
            if getattr(self, name) < 0.0:
                raise ExcitationError(f"{name} must not be negative, got {getattr(self, name)}")

    @property
    def speed_points(self) -> np.ndarray:
        """(1 + K, 3) where ``max_tcp_speed`` holds, in the TCP frame, m: the TCP, then :attr:`payload_points`."""
        return np.vstack([np.zeros((1, 3)), np.reshape(self.payload_points, (-1, 3))])

    def speed_point_name(self, k: int) -> str:
        """The name of :attr:`speed_points`' ``k``-th row in texts: "the TCP", or :attr:`payload_label`."""
        return "the TCP" if k == 0 else self.payload_label

    @classmethod
    def from_settings(cls, settings: Settings) -> MotionLimits:
        """The bounds the settings (``identify_*``) give; the rest at their defaults."""
        values: dict[str, Any] = {name: float(getattr(settings, _SETTINGS_PREFIX + name)) for name in _FROM_SETTINGS}
        return cls(**values)

    def with_overrides(self, **overrides: float | None) -> MotionLimits:
        """Return a copy with the given fields replaced.

        ``None`` or 0 keep the current value (a goal's "use the default"); numbers only (the payload's
        points: :func:`dataclasses.replace`).

        Raises:
            ConfigurationError: a field that is not a motion limit (or not a number).
        """
        unknown = (set(overrides) - {f.name for f in fields(self)}) | (set(overrides) & set(_NOT_NUMBERS))
        if unknown:
            raise ConfigurationError(f"unknown motion limits: {sorted(unknown)}")
        kept: dict[str, Any] = {k: float(v) for k, v in overrides.items() if v is not None and v != 0.0}
        return MotionLimits(**{**{f.name: getattr(self, f.name) for f in fields(self)}, **kept})


@functools.lru_cache(maxsize=8)
def flange_kinematics(robot: str | RobotSpec) -> SensorKinematics:
    """Pinocchio kinematics of an arm's flange frame: a built-in robot's name, or any arm's spec (cached)."""
    from payload_estimator.pipeline.kinematics import SensorKinematics

    spec = get_robot(robot) if isinstance(robot, str) else robot
    return SensorKinematics(robot_urdf(robot), spec.flange_frame, joint_names=spec.joint_names)


def point_speeds(lin_vel: np.ndarray, ang_vel: np.ndarray, points: np.ndarray) -> np.ndarray:
    """(N, K) the speeds of ``points`` (K, 3) fixed to a frame that moves at ``lin_vel``, ``ang_vel`` (N, 3), m/s.

    All in the frame's axes: a point ``p`` moves at ``v + w x p``."""
    v = np.asarray(lin_vel, dtype=float)[:, None, :] + np.cross(np.asarray(ang_vel, dtype=float)[:, None, :],
                                                                np.asarray(points, dtype=float)[None, :, :])
    return np.asarray(np.linalg.norm(v, axis=2))
