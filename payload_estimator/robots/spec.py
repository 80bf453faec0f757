"""The robots: one registry of the built-in arms, and any other arm from its URDF.

All angles in rad, speeds in rad/s, torques in N·m. Frame and joint names are
the vendors' (``franka_description``, ``xarm_description``, ``ur_description``), so a configuration
written against a :class:`RobotSpec` transfers to the real robot's
``robot_description`` and ``joint_states``.

:data:`ROBOTS` is the only list of built-in robots: the settings' choices,
the command line, the launch files, the packaged URDFs and preset detection
all read it. Everything known of a robot (its limits, its driver's topics, its
joint-torque sensor, how its description is recognised) is a field of its
:class:`RobotSpec`: no code outside the table modules branches on a robot's name.
To add a built-in robot, write its table module (like ``franka.py``) and add
one line to :data:`_BUILTIN`.

Any other arm needs no entry here: the estimator takes its URDF from
``robot_description`` (or ``--urdf``) once its flange frame is named, and
:meth:`RobotSpec.from_urdf` makes the spec the simulator and the motions need
from that URDF and the limits it lacks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from payload_estimator.errors import ConfigurationError
from payload_estimator.robots import franka, ur, xarm
from payload_estimator.robots.description import RobotDescription, UrdfJoint, parse_description
from payload_estimator.robots.tables import ArmTable, DescriptionPattern, EffortTable, RobotFacts, RobotTopics

__all__ = ["RobotSpec", "ROBOTS", "ROBOT_NAMES", "get_robot", "resolve_robot", "default_urdf_path", "frozen_per_joint"]

_BUILTIN: tuple[tuple[ArmTable, RobotFacts], ...] = (
    (franka.PANDA, franka.PANDA_FACTS),
    (franka.FR3, franka.FR3_FACTS),
    (xarm.XARM7, xarm.XARM7_FACTS),
    (xarm.XARM6, xarm.XARM6_FACTS),
    (ur.UR5E, ur.UR5E_FACTS),
    (ur.UR10E, ur.UR10E_FACTS),
)
_URDF_DIR = Path(__file__).resolve().parent / "urdf"


def frozen_per_joint(values: ArrayLike, n: int | None = None, what: str = "the values", *,
                     finite: bool = False) -> np.ndarray:
    """A read-only float copy of ``values``, one entry per joint: the arrays of the frozen dataclasses.

    Args:
        values: one value per joint; with ``n``, also one value for every joint.
        n: the number of joints, checked when given (``ConfigurationError`` naming ``what``).
        what: the values' name in the error.
        finite: a NaN or an infinite entry is an error too.
    """
    arr = np.array(values, dtype=float)
    if n is not None:
        arr = np.full(n, float(arr)) if arr.ndim == 0 else arr.reshape(-1)
        if arr.shape != (n,):
            raise ConfigurationError(f"{what} must have {n} entries, got {arr.size}")
    if finite and not np.all(np.isfinite(arr)):
        raise ConfigurationError(f"{what} must be finite")
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, eq=False)
class RobotSpec:
    """Static description of one arm: a built-in one (:data:`ROBOTS`) or one from a URDF (:meth:`from_urdf`).

    Attributes:
        name: short name, a key of :data:`ROBOTS` for a built-in arm.
        joint_names: the arm joints, base to flange (the order of ``q`` vectors).
        base_frame: URDF root link (the robot's base frame).
        flange_frame: the flange link.
        q_home: (n,) home configuration: elbow up, flange ``z`` axis pointing
            down (along gravity) for an upright base, away from singularities, rad.
        q_min: (n,) lower position limits, rad.
        q_max: (n,) upper position limits, rad.
        dq_max: (n,) speed limits, rad/s.
        ddq_max: (n,) acceleration limits, rad/s².
        dddq_max: (n,) jerk limits, rad/s³.
        tau_max: (n,) torque limits, N·m.
        wrist_joints: indices (into ``joint_names``) of the three joints nearest
            the flange, used for excitation.
        table: the DH and inertia table the packaged URDF is written from; None for an arm
            from a URDF (``arm_urdf``).
        parameters: the estimator settings of this robot's preset (topics, wrench
            source, apply target, payload limit; ``Settings`` field names).
        topics: its ROS 2 driver's topics (empty when not known).
        efforts: its joint-torque sensor as the simulator models it, or None.
        detection: how its description is recognised, or None (never recognised).
        arm_urdf: the URDF of an arm without a table ("" for a built-in arm).
    """

    name: str
    joint_names: tuple[str, ...]
    base_frame: str
    flange_frame: str
    q_home: np.ndarray
    q_min: np.ndarray
    q_max: np.ndarray
    dq_max: np.ndarray
    ddq_max: np.ndarray
    dddq_max: np.ndarray
    tau_max: np.ndarray
    wrist_joints: tuple[int, int, int]
    table: ArmTable | None = field(repr=False)
    parameters: Mapping[str, Any] = field(repr=False)
    topics: RobotTopics = field(default=RobotTopics(), repr=False)
    efforts: EffortTable | None = field(default=None, repr=False)
    detection: DescriptionPattern | None = field(default=None, repr=False)
    arm_urdf: str = field(default="", repr=False)

    @property
    def n_joints(self) -> int:
        """Number of arm joints."""
        return len(self.joint_names)

    @property
    def urdf_path(self) -> Path:
        """The packaged default URDF of a built-in arm (see :func:`default_urdf_path`)."""
        return default_urdf_path(self.name)

    @classmethod
    def from_urdf(
        cls, urdf: str, flange_frame: str, *, acceleration: ArrayLike, jerk: ArrayLike, name: str = "",
        q_home: ArrayLike | None = None, wrist_joints: Sequence[int] | None = None,
        dq_max: ArrayLike | None = None, tau_max: ArrayLike | None = None,
        efforts: EffortTable | None = None, parameters: Mapping[str, Any] | None = None,
    ) -> RobotSpec:
        """The spec of any arm from its URDF: what the simulator and the motions need.

        The arm joints are the 1-DoF joints from the root link to ``flange_frame`` (a gripper's
        fingers beyond it are not); their position, speed and torque limits are the URDF's
        ``<limit>`` (a ``continuous`` joint has no position limit), which ``dq_max`` and
        ``tau_max`` replace.

        Args:
            urdf: the robot description (URDF XML); its inertials are the arm simulated.
            flange_frame: the link the F/T sensor is mounted on.
            acceleration: acceleration limits, rad/s², one value for every joint or (n,) (URDF
                carries none).
            jerk: jerk limits, rad/s³, one value for every joint or (n,).
            name: the robot's name (default: the URDF's ``<robot name>``).
            q_home: (n,) home pose, rad (default: the middle of each joint's range, 0 for a
                continuous joint); the motions start there.
            wrist_joints: the three joints the wrist motion moves (default: the last three).
            dq_max: speed limits, rad/s, one value or (n,); default the URDF's.
            tau_max: torque limits, N·m, one value or (n,); default the URDF's.
            efforts: its joint-torque sensor (for ``EffortModel.for_robot``), or None.
            parameters: its estimator settings (``Settings`` fields); default: no preset
                (``robot: ""``) with this ``flange_frame``.

        Raises:
            ConfigurationError: the URDF cannot be read, the flange is not one of its links, a
                limit is missing or not positive, or the home pose is outside the limits.
        """
        desc = _description(urdf)
        try:
            joint_names = desc.chain_joints(flange_frame)
            base_frame = desc.root_link
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from None
        if len(joint_names) < 3:
            raise ConfigurationError(f"the URDF has {len(joint_names)} movable joints up to {flange_frame!r}; "
                                     "an arm needs at least 3")
        joints = [desc.joint(j) for j in joint_names]
        n = len(joints)
        q_min, q_max = _position_limits(joints)
        q0 = _home(q_min, q_max) if q_home is None else np.asarray(q_home, dtype=float)
        if q0.shape != (n,) or np.any(q0 < q_min) or np.any(q0 > q_max):
            raise ConfigurationError(f"q_home must be {n} joint positions within the joints' limits")
        return cls(
            name=name or desc.name or "arm", joint_names=joint_names, base_frame=base_frame,
            flange_frame=flange_frame, q_home=frozen_per_joint(q0), q_min=frozen_per_joint(q_min),
            q_max=frozen_per_joint(q_max),
            dq_max=frozen_per_joint(_limit(dq_max, joints, "velocity", "dq_max")),
            ddq_max=frozen_per_joint(_limit(acceleration, joints, "", "acceleration")),
            dddq_max=frozen_per_joint(_limit(jerk, joints, "", "jerk")),
            tau_max=frozen_per_joint(_limit(tau_max, joints, "effort", "tau_max")),
            wrist_joints=_wrist(wrist_joints, n), table=None,
            parameters=MappingProxyType(dict(parameters) if parameters is not None
                                        else {"robot": "", "flange_frame": flange_frame}),
            efforts=efforts, arm_urdf=urdf,
        )


def _description(urdf: str) -> RobotDescription:
    try:
        return parse_description(urdf)
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None


def _position_limits(joints: Sequence[UrdfJoint]) -> tuple[np.ndarray, np.ndarray]:
    """(q_min, q_max) of the joints' ``<limit>``; a continuous joint's are infinite."""
    lower, upper = [], []
    for joint in joints:
        if joint.type == "continuous":
            lower.append(-math.inf)
            upper.append(math.inf)
        elif joint.lower is None or joint.upper is None or not joint.lower < joint.upper:
            raise ConfigurationError(f"joint {joint.name!r} has no position limits (<limit lower upper>)")
        else:
            lower.append(joint.lower)
            upper.append(joint.upper)
    return np.array(lower), np.array(upper)


def _home(q_min: np.ndarray, q_max: np.ndarray) -> np.ndarray:
    """The middle of each joint's range, 0 where it has none."""
    bounded = np.isfinite(q_min) & np.isfinite(q_max)
    home = np.zeros(len(q_min))
    home[bounded] = 0.5 * (q_min[bounded] + q_max[bounded])
    return home


def _limit(given: ArrayLike | None, joints: Sequence[UrdfJoint], attribute: str, what: str) -> np.ndarray:
    """(n,) positive limits: ``given`` (one value or one per joint), else the URDF's ``attribute``."""
    n = len(joints)
    if given is None:
        values = [getattr(joint, attribute) for joint in joints]
        missing = [joint.name for joint, v in zip(joints, values) if v is None]
        if missing:
            raise ConfigurationError(f"the URDF gives no {attribute} limit of {', '.join(missing)}: give {what}")
        arr = np.array(values, dtype=float)
    else:
        arr = np.broadcast_to(np.asarray(given, dtype=float), (n,)) if np.ndim(given) == 0 else \
            np.asarray(given, dtype=float)
    if arr.shape != (n,) or not np.all(np.isfinite(arr) & (arr > 0.0)):
        raise ConfigurationError(f"{what} must be {n} positive numbers (or one), got {arr.tolist()}")
    return arr


def _wrist(wrist_joints: Sequence[int] | None, n: int) -> tuple[int, int, int]:
    wrist = tuple(int(i) for i in (range(n - 3, n) if wrist_joints is None else wrist_joints))
    if len(wrist) != 3 or len(set(wrist)) != 3 or not all(0 <= i < n for i in wrist):
        raise ConfigurationError(f"wrist_joints must be 3 different joint indices in 0..{n - 1}, got {wrist}")
    return (wrist[0], wrist[1], wrist[2])


def _spec(table: ArmTable, facts: RobotFacts) -> RobotSpec:
    return RobotSpec(
        name=table.name,
        joint_names=table.joint_names,
        base_frame=table.base_link,
        flange_frame=table.flange_link,
        q_home=frozen_per_joint(table.q_home),
        q_min=frozen_per_joint(tuple(lim.lower for lim in table.limits)),
        q_max=frozen_per_joint(tuple(lim.upper for lim in table.limits)),
        dq_max=frozen_per_joint(tuple(lim.velocity for lim in table.limits)),
        ddq_max=frozen_per_joint(tuple(lim.acceleration for lim in table.limits)),
        dddq_max=frozen_per_joint(tuple(lim.jerk for lim in table.limits)),
        tau_max=frozen_per_joint(tuple(lim.effort for lim in table.limits)),
        wrist_joints=table.wrist_joints,
        table=table,
        parameters=MappingProxyType({"robot": table.name, **facts.parameters, **facts.topics.as_parameters()}),
        topics=facts.topics,
        efforts=facts.efforts,
        detection=facts.detection,
    )


ROBOTS: Mapping[str, RobotSpec] = MappingProxyType({t.name: _spec(t, f) for t, f in _BUILTIN})
"""Name -> :class:`RobotSpec` of every built-in robot."""
ROBOT_NAMES: tuple[str, ...] = tuple(ROBOTS)
"""Names accepted by :func:`get_robot` and :func:`~payload_estimator.robots.robot_urdf`."""


def get_robot(name: str) -> RobotSpec:
    """Return the :class:`RobotSpec` of ``name``; ``ConfigurationError`` listing the valid names if unknown."""
    try:
        return ROBOTS[name]
    except (KeyError, TypeError):
        raise ConfigurationError(f"unknown robot {name!r}; valid names: {', '.join(ROBOT_NAMES)}") from None


def resolve_robot(robot: str | RobotSpec) -> RobotSpec:
    """The spec of a built-in robot's name (:func:`get_robot`), or ``robot`` itself if it is a spec."""
    return robot if isinstance(robot, RobotSpec) else get_robot(robot)


def default_urdf_path(name: str) -> Path:
    """Path of the packaged URDF of ``name`` (zero mount offset, IMU frame included)."""
    return _URDF_DIR / f"{get_robot(name).name}.urdf"
