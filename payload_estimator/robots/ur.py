"""Parameter tables of the Universal Robots UR5e and UR10e (e-Series).

Kinematics: Universal Robots' support article "DH parameters for calculations of
kinematics and dynamics" (universal-robots.com), e-Series rows ``d1, a2, a3, d4,
d5, d6`` and ``alpha = (pi/2, 0, 0, pi/2, -pi/2, 0)``, given in the *standard*
Denavit–Hartenberg convention with no joint offsets; converted by
:func:`~payload_estimator.robots.tables.modified_from_standard`. The link
frames this gives (frame ``i`` on the axis of joint ``i``) are exactly the link
frames of the vendor's ``ur_description`` (UniversalRobots/Universal_Robots_ROS2_Description,
``config/<model>/default_kinematics.yaml``), whose root of the arm is
``base_link_inertia`` (the controller's "Base" frame; ``ur_description``'s
``base_link`` is it turned by pi about ``z``) and whose ``tool0`` is the last
standard DH frame, the controller's tool flange frame with a zero TCP.

Limits: ``ur_description`` ``config/<model>/joint_limits.yaml`` (from the e-Series
user manuals and UR's "Max. joint torques" article): positions ±2π (the elbow
±π), speeds 180°/s (the UR10e's base and shoulder 120°/s), torques 150/150/150/28/28/28 N·m
(UR5e) and 330/330/150/54/54/54 N·m (UR10e). UR publishes no joint acceleration
or jerk limits; ours are chosen (:data:`_ACCELERATION`, :data:`_JERK`).

Inertials: ``ur_description`` ``config/<model>/physical_parameters.yaml``: the
masses and centres of mass of UR's DH article re-expressed in the link frames;
inertia tensors there given in axes turned by ``rotation`` (roll, pitch, yaw) from
the link frame, turned into the link axes here (:func:`_inertial`). The UR5e's
tensors are ``ur_description``'s cylinder approximations (UR's article calls the
UR5e's negligible); the UR10e's are the matrices ``ur_description`` tabulates in the
standard DH frames' axes (UR's article gives inertia matrices from the UR10 up).
The base's (4 kg, a cylinder) does not matter for a fixed base.

Facts (:class:`~payload_estimator.robots.tables.RobotFacts`): the topics of the UR
ROS 2 driver (``ur_robot_driver``: ``/joint_states`` from the joint state
broadcaster, the e-Series' built-in force/torque sensor on
``/force_torque_sensor_broadcaster/wrench`` in ``tool0``, the
``scaled_joint_trajectory_controller``), the preset (the built-in F/T sensor; ``~/apply`` calls the driver's
``/io_and_status_controller/set_payload``, ``ur_msgs/srv/SetPayload``: mass, centre of gravity and, with
ur_msgs 2.6 on, the inertia), a joint-effort model of our own (:data:`UR_EFFORTS`) and ``ur_description``'s joint names.
The driver's joint-state efforts are the motor currents (A): the preset says
``effort_unit: current``, and as UR publishes no torque constants, the joint-torque
variant needs ``torque_constants`` or ``calibrate --effort-scale``; the simulator
reports currents through torque constants of our choosing.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.spatial.transform import Rotation

from payload_estimator.robots.tables import (
    ArmTable,
    DescriptionPattern,
    EffortTable,
    JointLimit,
    LinkInertial,
    RobotFacts,
    RobotTopics,
    StandardDH,
    modified_from_standard,
)

__all__ = ["UR5E", "UR10E", "UR5E_FACTS", "UR10E_FACTS", "UR_EFFORTS", "UR_CURRENT", "UR_JOINT_NAMES"]

_PI_2 = math.pi / 2
_TWO_PI = 2 * math.pi
_DEG = math.pi / 180.0
_ACCELERATION = 10.0
"""rad/s², every joint: UR publishes none (its controller's default joint acceleration is 80°/s², the
teach pendant allows far more); a moderate choice for the designed motions."""
_JERK = 500.0
"""rad/s³, every joint: UR publishes none; 50 x the acceleration limit per second, as the xArm's."""

UR_JOINT_NAMES = ("shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint",
                  "wrist_1_joint", "wrist_2_joint", "wrist_3_joint")
"""The joints of ``ur_description`` (without a ``tf_prefix``), base to flange."""
_LINK_NAMES = ("shoulder_link", "upper_arm_link", "forearm_link", "wrist_1_link", "wrist_2_link", "wrist_3_link")

_SOURCE = (
    "Kinematics: Universal Robots, 'DH parameters for calculations of kinematics and dynamics', {model} "
    "(standard DH, converted to modified DH). Limits: UniversalRobots/Universal_Robots_ROS2_Description "
    "config/{key}/joint_limits.yaml. Inertials: ibid. config/{key}/physical_parameters.yaml."
)


def _standard_rows(d1: float, a2: float, a3: float, d4: float, d5: float, d6: float) -> tuple[StandardDH, ...]:
    """The e-Series standard DH table: (d, a, alpha) per joint, no joint offsets."""
    return (
        StandardDH(d=d1, a=0.0, alpha=_PI_2),
        StandardDH(d=0.0, a=a2, alpha=0.0),
        StandardDH(d=0.0, a=a3, alpha=0.0),
        StandardDH(d=d4, a=0.0, alpha=_PI_2),
        StandardDH(d=d5, a=0.0, alpha=-_PI_2),
        StandardDH(d=d6, a=0.0, alpha=0.0),
    )


UR5E_STANDARD_DH = _standard_rows(0.1625, -0.425, -0.3922, 0.1333, 0.0997, 0.0996)
"""UR5e, UR's DH article (m, rad)."""
UR10E_STANDARD_DH = _standard_rows(0.1807, -0.6127, -0.57155, 0.17415, 0.11985, 0.11655)
"""UR10e, UR's DH article (m, rad)."""


def _inertial(
    mass: float, com: tuple[float, float, float], rpy: tuple[float, float, float],
    tensor: tuple[float, float, float, float, float, float],
) -> LinkInertial:
    """A link's inertial from ``ur_description``, its tensor turned into the link's axes.

    The tensor ``(ixx, ixy, ixz, iyy, iyz, izz)`` about the COM is given in axes turned by ``rpy`` (URDF
    roll, pitch, yaw) from the link frame."""
    ixx, ixy, ixz, iyy, iyz, izz = tensor
    inertia = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    R = Rotation.from_euler("xyz", rpy).as_matrix()
    m = np.round(R @ inertia @ R.T, 12)  # cos(pi/2) = 6e-17 kinds of noise away
    return LinkInertial(mass, com, (float(m[0, 0]), float(m[0, 1]), float(m[0, 2]),
                                    float(m[1, 1]), float(m[1, 2]), float(m[2, 2])))


def _cylinder(mass: float, radius: float, length: float) -> LinkInertial:
    """``ur_description``'s base inertial: a solid cylinder about its centre, axis ``z``."""
    side = mass * (3 * radius**2 + length**2) / 12.0
    return LinkInertial(mass, (0.0, 0.0, 0.0), (side, 0.0, 0.0, side, 0.0, 0.5 * mass * radius**2))


def _limits(speed: tuple[float, ...], effort: tuple[float, ...]) -> tuple[JointLimit, ...]:
    """Positions ±2π, the elbow ±π (``ur_description``: the shoulder gets in the way beyond)."""
    bounds = ((-_TWO_PI, _TWO_PI), (-_TWO_PI, _TWO_PI), (-math.pi, math.pi)) + ((-_TWO_PI, _TWO_PI),) * 3
    return tuple(JointLimit(lo, hi, v * _DEG, e, _ACCELERATION, _JERK)
                 for (lo, hi), v, e in zip(bounds, speed, effort))


# Upper arm up, forearm level, flange z-axis down (q2 + q3 + q4 = -pi/2), wrist 2 at -pi/2 (away from the
# wrist singularity q5 = 0); bent a little off the vertical upper arm.
_Q_HOME = (0.0, -1.3, 1.3, -_PI_2, -_PI_2, 0.0)


def _arm(name: str, model: str, rows: tuple[StandardDH, ...], limits: tuple[JointLimit, ...],
         base: LinkInertial, links: tuple[LinkInertial, ...]) -> ArmTable:
    dh, flange = modified_from_standard(rows)
    return ArmTable(
        name=name,
        base_link="base_link_inertia",
        link_names=_LINK_NAMES,
        joint_names=UR_JOINT_NAMES,
        dh=dh,
        flange_link="tool0",
        flange_joint="wrist_3_link-tool0_fixed_joint",
        flange_dh=flange,
        limits=limits,
        base_inertial=base,
        link_inertials=links,
        q_home=_Q_HOME,
        wrist_joints=(3, 4, 5),
        source=_SOURCE.format(model=model, key=name),
    )


_NO_TURN = (0.0, 0.0, 0.0)

UR5E = _arm(
    "ur5e", "UR5e", UR5E_STANDARD_DH,
    _limits(speed=(180.0,) * 6, effort=(150.0, 150.0, 150.0, 28.0, 28.0, 28.0)),
    _cylinder(4.0, 0.06, 0.05),
    (
        _inertial(3.761, (0.0, -0.00193, -0.02561), _NO_TURN, (0.0102675, 0.0, 0.0, 0.0102675, 0.0, 0.00666)),
        _inertial(8.058, (-0.2125, 0.0, 0.11336), (0.0, _PI_2, 0.0),
                  (0.13388583541666665, 0.0, 0.0, 0.13388583541666665, 0.0, 0.0151074)),
        _inertial(2.846, (-0.2422, 0.0, 0.0265), (0.0, _PI_2, 0.0),
                  (0.03120936758333333, 0.0, 0.0, 0.03120936758333333, 0.0, 0.004095)),
        _inertial(1.37, (0.0, -0.01634, -0.0018), _NO_TURN, (0.0025599, 0.0, 0.0, 0.0025599, 0.0, 0.0021942)),
        _inertial(1.3, (0.0, 0.01634, -0.0018), _NO_TURN, (0.0025599, 0.0, 0.0, 0.0025599, 0.0, 0.0021942)),
        _inertial(0.365, (0.0, 0.0, -0.001159), _NO_TURN,
                  (9.890414008333333e-05, 0.0, 0.0, 9.890414008333333e-05, 0.0, 0.0001321171875)),
    ),
)

UR10E = _arm(
    "ur10e", "UR10e", UR10E_STANDARD_DH,
    _limits(speed=(120.0, 120.0, 180.0, 180.0, 180.0, 180.0), effort=(330.0, 330.0, 150.0, 54.0, 54.0, 54.0)),
    _cylinder(4.0, 0.075, 0.038),
    (
        _inertial(7.369, (0.021, -0.027, 0.0), (_PI_2, 0.0, 0.0),
                  (0.03408, 0.00002, -0.00425, 0.03529, 0.00008, 0.02156)),
        _inertial(13.051, (-0.2327, 0.0, 0.158), _NO_TURN, (0.02814, 0.00005, -0.01561, 0.77068, 0.00002, 0.76943)),
        _inertial(3.989, (-0.33155, 0.0, 0.068), _NO_TURN, (0.01014, 0.00008, 0.00916, 0.30928, 0.0, 0.30646)),
        _inertial(2.1, (0.0, -0.018, 0.007), (_PI_2, 0.0, 0.0),
                  (0.00296, -0.00001, 0.0, 0.00222, -0.00024, 0.00258)),
        _inertial(1.98, (0.0, 0.018, -0.007), (-_PI_2, 0.0, 0.0),
                  (0.00296, -0.00001, 0.0, 0.00222, -0.00024, 0.00258)),
        _inertial(0.615, (0.0, 0.0, -0.026), _NO_TURN, (0.0004, 0.0, 0.0, 0.00041, 0.0, 0.00034)),
    ),
)


# Estimator parameters (Settings fields) for an e-Series arm on ur_robot_driver with its built-in
# F/T sensor. The driver publishes the controller's TCP wrench turned into the tool frame (tool0 with no
# TCP offset), from which the controller has taken the payload it is configured with: set the payload
# to zero on the robot while estimating, or the estimate is the difference. UR's data sheets give the
# sensor's accuracy over ±50 N / ±10 N·m (UR5e), ±100 N / ±10 N·m (UR10e), not a saturation: no
# range check.
# The joint states' efforts are the motor currents (A, RTDE actual_current): the joint-torque variant needs
# torque_constants, or calibrate --effort-scale.
_UR_PARAMETERS = dict(
    wrench_source="ft_sensor",
    effort_unit="current",
    sensor_frame="tool0",
    estimate_bias=True,
    apply_target="ur",
    sensor_force_range=0.0,
    sensor_torque_range=0.0,
)
_JOINT_STATES = "/joint_states"
"""ur_robot_driver's joint state broadcaster; positions, velocities and the motors' currents (A) as efforts."""

UR_CURRENT = "ur_current"
"""Name of the UR joint-effort model: the motor currents, A (gearbox friction included)."""

# The motor currents, gearbox friction included; values chosen as plausible for the e-Series' harmonic
# drives (UR publishes no identification): Coulomb 1-4 N·m, viscous 0.5-3 N·m·s/rad, Stribeck 0.3-1 N·m
# fading by 0.08 rad/s, about 10 % asymmetric; noise 0.2-0.8 N·m of torque. Reported as currents through
# torque constants (joint torque per motor ampere, gear included) of our choosing, as UR publishes none:
# 18 N·m/A for the UR10e's size-4 base and shoulder, 13 for size 3, 9 for the wrists. Joints 1..6 of the
# UR10e; the UR5e's drives are smaller (size 3 base, shoulder and elbow).
UR_EFFORTS = EffortTable(
    name=UR_CURRENT,
    coulomb=(3.8, 4.0, 2.6, 1.2, 1.1, 1.0),
    coulomb_velocity=(0.02,) * 6,
    velocity_offset=(0.002, -0.0025, 0.002, 0.0015, -0.002, 0.002),
    stribeck=(1.0, 1.0, 0.8, 0.4, 0.35, 0.3),
    stribeck_velocity=(0.08,) * 6,
    viscous=(3.0, 3.0, 2.0, 0.8, 0.7, 0.6),
    noise_std=(0.8, 0.8, 0.6, 0.3, 0.3, 0.25),
    scale=tuple(1.0 / k for k in (18.0, 18.0, 13.0, 9.0, 9.0, 9.0)),
)
_UR5E_EFFORTS = EffortTable(
    name=UR_CURRENT,
    coulomb=(2.4, 2.5, 1.8, 0.9, 0.8, 0.8),
    coulomb_velocity=UR_EFFORTS.coulomb_velocity,
    velocity_offset=UR_EFFORTS.velocity_offset,
    stribeck=(0.7, 0.7, 0.5, 0.3, 0.25, 0.25),
    stribeck_velocity=UR_EFFORTS.stribeck_velocity,
    viscous=(1.8, 1.8, 1.2, 0.6, 0.5, 0.5),
    noise_std=(0.5, 0.5, 0.4, 0.25, 0.25, 0.2),
    scale=tuple(1.0 / k for k in (13.0, 13.0, 13.0, 9.0, 9.0, 9.0)),
)


def _facts(name: str, max_payload_mass: float, efforts: EffortTable, shoulder_effort: float) -> RobotFacts:
    return RobotFacts(
        topics=RobotTopics(joint_states=_JOINT_STATES, wrench="/force_torque_sensor_broadcaster/wrench",
                           joint_torque_states=_JOINT_STATES,
                           trajectory_action="/scaled_joint_trajectory_controller/follow_joint_trajectory"),
        parameters=dict(_UR_PARAMETERS, max_payload_mass=max_payload_mass),
        efforts=efforts,
        # ur_description names the joints alike on every model (and its <robot name> is the launch's "ur"):
        # the shoulder's torque limit tells a UR5e from a UR10e.
        detection=DescriptionPattern(frozenset({name}), frozenset(UR_JOINT_NAMES),
                                     effort_limits={"shoulder_pan_joint": shoulder_effort}),
    )


UR5E_FACTS = _facts("ur5e", 5.0, _UR5E_EFFORTS, 150.0)
UR10E_FACTS = _facts("ur10e", 12.5, UR_EFFORTS, 330.0)
