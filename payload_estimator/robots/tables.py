"""Value types for the per-robot tables: the arm the URDF writer reads, and the robot's other facts.

Kinematics are given as Craig's *modified* Denavit–Hartenberg rows, the
convention of Franka's FCI documentation and of UFACTORY's "Modified D-H
Parameters" tables. Row ``i`` describes the transform from the frame of link
``i-1`` to the frame of link ``i``::

    T_{i-1,i} = Rot_x(alpha_{i-1}) Trans_x(a_{i-1}) Rot_z(q_i + theta_offset_i) Trans_z(d_i)

(J. J. Craig, *Introduction to Robotics*, 3rd ed., eq. 3.6); a vendor's *standard* DH
table (Universal Robots') is converted by :func:`modified_from_standard`. Lengths in metres,
angles in radians. Inertials are in the vendor's URDF link frames: centre of
mass in the link frame, inertia tensor about the centre of mass with the axes of
the link frame, kg and kg·m².

Besides its arm (:class:`ArmTable`), a built-in robot's table module gives its
:class:`RobotFacts`: the topics of its ROS 2 driver, the settings of its preset,
its joint-torque sensor (:class:`EffortTable`) and how its description is
recognised (:class:`DescriptionPattern`). Nothing outside the table modules
branches on a robot's name: it reads these.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ModifiedDH",
    "StandardDH",
    "modified_from_standard",
    "JointLimit",
    "LinkInertial",
    "ArmTable",
    "RobotTopics",
    "EffortTable",
    "DescriptionPattern",
    "RobotFacts",
]


@dataclass(frozen=True)
class ModifiedDH:
    """One modified (Craig) DH row; see the module docstring.

    Attributes:
        alpha_prev: twist ``alpha_{i-1}`` about ``x_{i-1}``, rad.
        a_prev: length ``a_{i-1}`` along ``x_{i-1}``, m.
        d: offset ``d_i`` along ``z_i``, m.
        theta_offset: constant added to the joint angle, rad (mechanical zero
            minus DH zero).
    """

    alpha_prev: float
    a_prev: float
    d: float
    theta_offset: float = 0.0


@dataclass(frozen=True)
class StandardDH:
    """One *standard* DH row (Denavit and Hartenberg; Universal Robots' tables), for :func:`modified_from_standard`.

    Row ``i`` is ``T_{i-1,i} = Rot_z(q_i + theta_offset_i) Trans_z(d_i) Trans_x(a_i) Rot_x(alpha_i)``: frame ``i``
    sits at the far end of link ``i`` (on the axis of joint ``i + 1``).

    Attributes:
        d: offset ``d_i`` along ``z_{i-1}``, m.
        a: length ``a_i`` along ``x_i``, m.
        alpha: twist ``alpha_i`` about ``x_i``, rad.
        theta_offset: constant added to the joint angle, rad.
    """

    d: float
    a: float
    alpha: float
    theta_offset: float = 0.0


def modified_from_standard(rows: tuple[StandardDH, ...]) -> tuple[tuple[ModifiedDH, ...], ModifiedDH]:
    """The modified (Craig) rows and the flange row of an arm given in standard DH: the one conversion.

    The chain ``prod_i Rz(q_i + o_i) Tz(d_i) Tx(a_i) Rx(alpha_i)`` regrouped as ``prod_i [Rx(alpha_{i-1})
    Tx(a_{i-1}) Rz(q_i + o_i) Tz(d_i)] . Tx(a_n) Rx(alpha_n)`` (``Tx`` and ``Rx`` commute): modified row ``i``
    takes ``alpha`` and ``a`` of standard row ``i - 1`` (0 for the first) and ``d`` and the offset of row
    ``i``; the flange row is ``Rx(alpha_n) Tx(a_n)``, so the flange is the last standard frame, and the
    modified frame ``i`` is standard frame ``i - 1`` turned by ``q_i + o_i`` and moved by ``d_i`` along its
    ``z``: on the axis of joint ``i``.
    """
    previous = [(0.0, 0.0)] + [(row.alpha, row.a) for row in rows]
    modified = tuple(ModifiedDH(alpha_prev=alpha, a_prev=a, d=row.d, theta_offset=row.theta_offset)
                     for (alpha, a), row in zip(previous, rows))
    alpha_n, a_n = previous[-1]
    return modified, ModifiedDH(alpha_prev=alpha_n, a_prev=a_n, d=0.0)


@dataclass(frozen=True)
class JointLimit:
    """Vendor joint limits: position (rad), speed (rad/s), torque (N·m), acceleration (rad/s²), jerk (rad/s³).

    URDF carries the first three only; acceleration and jerk are the vendors' published
    joint-space limits, which a planned motion (:mod:`payload_estimator.excitation`) respects.
    """

    lower: float
    upper: float
    velocity: float
    effort: float
    acceleration: float
    jerk: float


@dataclass(frozen=True)
class LinkInertial:
    """Rigid-body inertial of one link, in that link's frame.

    Attributes:
        mass: kg.
        com_in_link: (3,) centre of mass in the link frame, m.
        inertia_at_com: ``(ixx, ixy, ixz, iyy, iyz, izz)`` about the centre of
            mass, axes of the link frame, kg·m².
    """

    mass: float
    com_in_link: tuple[float, float, float]
    inertia_at_com: tuple[float, float, float, float, float, float]


@dataclass(frozen=True)
class ArmTable:
    """Everything the URDF writer and :class:`~payload_estimator.robots.spec.RobotSpec` need.

    Attributes:
        name: short robot name (``"panda"``, ...).
        base_link: URDF root link (vendor name).
        link_names: the ``n`` moving links, in chain order (vendor names).
        joint_names: the ``n`` revolute joints, in chain order (vendor names).
        dh: ``n`` modified DH rows, one per joint.
        flange_link: flange link name (vendor name).
        flange_joint: name of the fixed joint from the last link to the flange.
        flange_dh: DH row from the last link to the flange (its ``theta_offset`` is 0).
        limits: ``n`` joint limits.
        base_inertial: inertial of the base link, or ``None`` (a fixed base's
            inertial does not matter for kinematics).
        link_inertials: ``n`` inertials of the moving links.
        q_home: ``n`` home joint angles, rad.
        wrist_joints: indices of the three joints nearest the flange.
        source: where the numbers come from (written into the URDF as a comment).
    """

    name: str
    base_link: str
    link_names: tuple[str, ...]
    joint_names: tuple[str, ...]
    dh: tuple[ModifiedDH, ...]
    flange_link: str
    flange_joint: str
    flange_dh: ModifiedDH
    limits: tuple[JointLimit, ...]
    base_inertial: LinkInertial | None
    link_inertials: tuple[LinkInertial, ...]
    q_home: tuple[float, ...]
    wrist_joints: tuple[int, int, int]
    source: str

    def __post_init__(self) -> None:
        n = len(self.joint_names)
        for field_name in ("link_names", "dh", "limits", "link_inertials", "q_home"):
            if len(getattr(self, field_name)) != n:
                raise ValueError(f"{self.name}: {field_name} must have {n} entries")
        for q, lim, joint in zip(self.q_home, self.limits, self.joint_names):
            if not lim.lower <= q <= lim.upper:
                raise ValueError(f"{self.name}: q_home of {joint} is outside its limits")
        if self.flange_dh.theta_offset != 0.0:
            raise ValueError(f"{self.name}: the flange row cannot have a theta offset")


@dataclass(frozen=True)
class RobotTopics:
    """Where a robot's ROS 2 driver publishes and listens (empty: not known, the settings' defaults apply).

    Attributes:
        joint_states: ``sensor_msgs/JointState`` of the arm, as the robot's preset reads them.
        wrench: ``geometry_msgs/WrenchStamped`` of the preset's wrench source.
        joint_torque_states: the joint states whose efforts are the joint-torque sensor's, read by
            the preset without a wrist sensor (the wrench from joint torques).
        trajectory_action: ``control_msgs/action/FollowJointTrajectory`` of the controller the
            driver starts.
    """

    joint_states: str = ""
    wrench: str = ""
    joint_torque_states: str = ""
    trajectory_action: str = ""

    def as_parameters(self) -> dict[str, str]:
        """The preset's settings these topics give (``Settings`` field names)."""
        return {"joint_states_topic": self.joint_states, "wrench_topic": self.wrench,
                "trajectory_action": self.trajectory_action}


@dataclass(frozen=True)
class EffortTable:
    """A robot's joint-torque readings as the simulator models them (:mod:`payload_estimator.sim.efforts`).

    The friction law per joint is that of :class:`payload_estimator.sim.efforts.JointFriction`;
    each field but ``name`` has one entry per arm joint.

    Attributes:
        name: the sensor model's name (written into simulated recordings).
        coulomb: ``c``, N·m. coulomb_velocity: ``v_c``, rad/s. velocity_offset: ``v_o``, rad/s.
        stribeck: ``s``, N·m. stribeck_velocity: ``v_s``, rad/s. viscous: ``b``, N·m·s/rad.
        noise_std: effort noise std, N·m of joint torque.
        scale: the reported effort per N·m of joint torque: empty for torques (1); for a driver that reports
            motor currents, the reciprocal of each joint's torque constant (gear included), A/(N·m).
    """

    name: str
    coulomb: tuple[float, ...]
    coulomb_velocity: tuple[float, ...]
    velocity_offset: tuple[float, ...]
    stribeck: tuple[float, ...]
    stribeck_velocity: tuple[float, ...]
    viscous: tuple[float, ...]
    noise_std: tuple[float, ...]
    scale: tuple[float, ...] = ()

    def select(self, joints: tuple[int, ...]) -> EffortTable:
        """The table of the joints at indices ``joints`` (a smaller arm built from the same drives)."""
        def pick(values: tuple[float, ...]) -> tuple[float, ...]:
            return tuple(values[i] for i in joints)

        return EffortTable(self.name, pick(self.coulomb), pick(self.coulomb_velocity), pick(self.velocity_offset),
                           pick(self.stribeck), pick(self.stribeck_velocity), pick(self.viscous),
                           pick(self.noise_std), pick(self.scale) if self.scale else ())


@dataclass(frozen=True)
class DescriptionPattern:
    """How a robot description (URDF) is recognised as a robot's.

    Attributes:
        robot_names: ``<robot name>`` values of this robot, lower case.
        joints: joint names every description of this robot has.
        absent_joints: joint names no description of this robot has.
        effort_limits: joint name -> the ``<limit effort>`` (N·m) a description of this robot gives it,
            for robots whose vendor names the joints of several models alike (Universal Robots).
    """

    robot_names: frozenset[str]
    joints: frozenset[str]
    absent_joints: frozenset[str] = frozenset()
    effort_limits: Mapping[str, float] = field(default_factory=dict)

    def matches_name(self, robot_name: str) -> bool:
        """Whether ``<robot name>`` is this robot's (case-insensitive)."""
        return robot_name.lower() in self.robot_names

    def matches_joints(self, joint_names: Collection[str]) -> bool:
        """Whether a description with these joints is this robot's."""
        names = set(joint_names)
        return self.joints <= names and not self.absent_joints & names

    def matches_limits(self, effort_limits: Mapping[str, float | None]) -> bool:
        """Whether a description whose joints have these ``<limit effort>`` values (N·m) can be this robot's.

        Every joint of :attr:`effort_limits` must have its value (within 1 %); True when none are set."""
        for joint, effort in self.effort_limits.items():
            given = effort_limits.get(joint)
            if given is None or abs(given - effort) > 0.01 * effort:
                return False
        return True


@dataclass(frozen=True)
class RobotFacts:
    """What a built-in robot's table module knows beyond the arm (module docstring).

    Attributes:
        topics: its ROS 2 driver's topics.
        parameters: its preset's settings other than the topics (``Settings`` field names).
        efforts: its joint-torque sensor, or None (no default model).
        detection: how its description is recognised.
    """

    topics: RobotTopics
    parameters: Mapping[str, Any] = field(default_factory=dict)
    efforts: EffortTable | None = None
    detection: DescriptionPattern | None = None
