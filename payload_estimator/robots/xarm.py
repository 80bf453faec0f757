"""Parameter tables of the UFACTORY xArm 7 and xArm 6.

Kinematics: UFACTORY's "Kinematic and Dynamic Parameters" support articles
(docs.ufactory.cc, xArm series), "Modified D-H Parameters" tables. For the
xArm 6, ``a2 = sqrt(284.5² + 53.5²) mm`` and the offsets
``T2_offset = -atan(284.5/53.5)``, ``T3_offset = -T2_offset`` map the DH zero to
the mechanical zero. The flange ``link_eef`` coincides with the last link frame
(as in the vendor's ``xarm_description``).

Limits: the vendor's ``xarm_description`` URDF (xArm-Developer/xarm_ros2):
positions as in the spec sheet (e.g. J2 -118°..120°), 3.14 rad/s, and the
per-joint efforts of the URDF; 20 rad/s² (``xarm_moveit_config`` joint_limits.yaml)
and a jerk limit of our own (UFACTORY publishes none).

Inertials: ``xarm_description/config/link_inertial/xarm7_type7_HT_BR2.yaml`` and
``xarm6_type6_HT_BR2.yaml`` (the URDF's defaults), base links from the URDFs.
Values are in the URDF link frames.

Facts (:class:`~payload_estimator.robots.tables.RobotFacts`): xarm_ros2's
topics and controllers, the preset (the F/T sensor's raw reading), a
current-based joint-torque model (values chosen, see :data:`XARM_EFFORTS`), and
xarm_description's joint names.
"""

from __future__ import annotations

import math

from payload_estimator.robots.tables import (
    ArmTable,
    DescriptionPattern,
    EffortTable,
    JointLimit,
    LinkInertial,
    ModifiedDH,
    RobotFacts,
    RobotTopics,
)

__all__ = ["XARM7", "XARM6", "XARM7_FACTS", "XARM6_FACTS", "XARM_EFFORTS", "XARM_CURRENT"]

_PI_2 = math.pi / 2
_TWO_PI = 2 * math.pi
_SPEED = 3.14  # rad/s, every joint (vendor URDF; spec sheet: 180 deg/s)
_ACCELERATION = 20.0  # rad/s², every joint (xarm_moveit_config joint_limits.yaml)
_JERK = 500.0
"""rad/s³, every joint: UFACTORY publishes no joint jerk limit; 25 x the acceleration limit per second,
a conservative choice (Franka's are 500 x)."""

_SOURCE = (
    "Kinematics: UFACTORY 'Kinematic and Dynamic Parameters of {model}', modified D-H table. "
    "Limits: xArm-Developer/xarm_ros2 xarm_description URDF. "
    "Inertials: xarm_description config/link_inertial/{inertials}.yaml."
)

# T2_offset of the xArm 6 (and 5): the upper arm is bent by atan(284.5/53.5).
_XARM6_T2 = -math.atan2(284.5, 53.5)
_XARM6_A2 = math.hypot(0.2845, 0.0535)


def _lim(lower: float, upper: float, effort: float) -> JointLimit:
    return JointLimit(lower, upper, _SPEED, effort, _ACCELERATION, _JERK)


XARM7 = ArmTable(
    name="xarm7",
    base_link="link_base",
    link_names=tuple(f"link{i}" for i in range(1, 8)),
    joint_names=tuple(f"joint{i}" for i in range(1, 8)),
    dh=(
        ModifiedDH(alpha_prev=0.0, a_prev=0.0, d=0.267),
        ModifiedDH(alpha_prev=-_PI_2, a_prev=0.0, d=0.0),
        ModifiedDH(alpha_prev=_PI_2, a_prev=0.0, d=0.293),
        ModifiedDH(alpha_prev=_PI_2, a_prev=0.0525, d=0.0),
        ModifiedDH(alpha_prev=_PI_2, a_prev=0.0775, d=0.3425),
        ModifiedDH(alpha_prev=_PI_2, a_prev=0.0, d=0.0),
        ModifiedDH(alpha_prev=-_PI_2, a_prev=0.076, d=0.097),
    ),
    flange_link="link_eef",
    flange_joint="joint_eef",
    flange_dh=ModifiedDH(alpha_prev=0.0, a_prev=0.0, d=0.0),
    limits=(
        _lim(-_TWO_PI, _TWO_PI, 50.0),
        _lim(-2.059, 2.0944, 50.0),
        _lim(-_TWO_PI, _TWO_PI, 30.0),
        _lim(-0.19198, 3.927, 30.0),
        _lim(-_TWO_PI, _TWO_PI, 30.0),
        _lim(-1.69297, math.pi, 20.0),
        _lim(-_TWO_PI, _TWO_PI, 20.0),
    ),
    base_inertial=LinkInertial(0.88556, (-0.021131, -0.0016302, 0.056488),
                               (0.0030595, 0.00012259, -0.00062705,
                                0.0037783, 0.00027023, 0.0020125)),
    link_inertials=(
        LinkInertial(2.382, (-0.0002, 0.02905, -0.01233),
                     (0.0056905, -1.579e-05, 5.125e-06, 0.0049566, -0.000873378, 0.003316654)),
        LinkInertial(1.869, (0.00022, -0.12856, 0.01735),
                     (0.0095989, 1.541e-06, 5.56e-06, 0.00382472, -0.00317156, 0.007565669)),
        LinkInertial(1.6383, (0.0466, -0.02463, -0.00768),
                     (0.00310955, 0.00030837, -0.00058453, 0.00264483, 0.000338893, 0.0026624)),
        LinkInertial(1.7269, (0.07047, -0.11575, 0.012),
                     (0.005889, 0.00137112, 0.00088143, 0.00359703, -0.001762155, 0.00543244)),
        LinkInertial(1.3203, (-0.00032, 0.01604, -0.026),
                     (0.00534665, 1.5117e-05, -3.69e-07, 0.0049779, -0.00022132, 0.0013624)),
        LinkInertial(1.325, (0.06469, 0.03278, 0.02141),
                     (0.0014745, -0.000488, 0.0002953, 0.0019037, 0.00014749, 0.0023652)),
        LinkInertial(0.17, (0.0, -0.00677, -0.01098),
                     (9.3e-05, 0.0, 0.0, 5.87e-05, -3.6e-06, 0.000132)),
    ),
    # Elbow up, flange z-axis down (q6 = q4 - q2); q = 0 is singular (J1 and J3 aligned).
    q_home=(0.0, -0.3, 0.0, 0.6, 0.0, 0.9, 0.0),
    wrist_joints=(4, 5, 6),
    source=_SOURCE.format(model="xArm 7", inertials="xarm7_type7_HT_BR2"),
)

XARM6 = ArmTable(
    name="xarm6",
    base_link="link_base",
    link_names=tuple(f"link{i}" for i in range(1, 7)),
    joint_names=tuple(f"joint{i}" for i in range(1, 7)),
    dh=(
        ModifiedDH(alpha_prev=0.0, a_prev=0.0, d=0.267),
        ModifiedDH(alpha_prev=-_PI_2, a_prev=0.0, d=0.0, theta_offset=_XARM6_T2),
        ModifiedDH(alpha_prev=0.0, a_prev=_XARM6_A2, d=0.0, theta_offset=-_XARM6_T2),
        ModifiedDH(alpha_prev=-_PI_2, a_prev=0.0775, d=0.3425),
        ModifiedDH(alpha_prev=_PI_2, a_prev=0.0, d=0.0),
        ModifiedDH(alpha_prev=-_PI_2, a_prev=0.076, d=0.097),
    ),
    flange_link="link_eef",
    flange_joint="joint_eef",
    flange_dh=ModifiedDH(alpha_prev=0.0, a_prev=0.0, d=0.0),
    limits=(
        _lim(-_TWO_PI, _TWO_PI, 50.0),
        _lim(-2.059, 2.0944, 50.0),
        _lim(-3.927, 0.19198, 32.0),
        _lim(-_TWO_PI, _TWO_PI, 32.0),
        _lim(-1.69297, math.pi, 32.0),
        _lim(-_TWO_PI, _TWO_PI, 20.0),
    ),
    base_inertial=LinkInertial(2.7, (0.0, 0.0, 0.09103),
                               (0.00494875, -3.5e-06, 1.25e-05, 0.00494174, 1.67e-06, 0.002219)),
    link_inertials=(
        LinkInertial(2.3814, (0.00022, 0.02951, -0.0124),
                     (0.0058562, -1.79e-05, 3.55e-06, 0.0050316, -0.000888336, 0.003536652)),
        LinkInertial(2.2675, (0.03881, -0.22783, 0.03496),
                     (0.028315776, 0.005, 0.00066546, 0.0058, -0.0045741, 0.0273447)),
        LinkInertial(1.875, (0.07041, 0.11631, 0.0107),
                     (0.0063483, -0.0015397, 0.00096858, 0.00379758, 0.00186567, 0.00595768)),
        LinkInertial(1.3192, (-0.00018, 0.01798, -0.02291),
                     (0.004896, -6.925e-06, -1.418e-05, 0.00445694, -0.00023186, 0.00134332)),
        LinkInertial(1.33854, (0.0651, 0.03096, 0.00315),
                     (0.00146378, -0.000450624, 0.000284306, 0.00184192, 0.000130866, 0.002333524)),
        LinkInertial(0.17, (0.0, -0.00677, -0.01098),
                     (9.3e-05, 0.0, 0.0, 5.87e-05, -3.6e-06, 0.000132)),
    ),
    # Elbow up, flange z-axis down (q5 = -q2 - q3); q = 0 is singular.
    q_home=(0.0, -0.3, -0.6, 0.0, 0.9, 0.0),
    wrist_joints=(3, 4, 5),
    source=_SOURCE.format(model="xArm 6", inertials="xarm6_type6_HT_BR2"),
)


# Estimator parameters (Settings fields) for a uFactory xArm on xarm_ros2 with its F/T
# sensor: the raw reading (the "ext" topic has a load model subtracted).
_XARM_PARAMETERS = dict(
    wrench_source="ft_sensor",
    sensor_frame="ft_sensor",
    apply_target="xarm",
    sensor_force_range=150.0,
    sensor_torque_range=4.0,
)
_JOINT_STATES = "/xarm/joint_states"
"""xarm_ros2's joint states; their efforts are the joint torques the controller estimates from the motor currents."""

XARM_CURRENT = "xarm_current"
"""Name of the xArm joint-torque model: efforts estimated from the motor currents (gearbox friction included)."""

# Efforts from the motor currents, gearbox friction included; values chosen as plausible for harmonic
# drives of that size (no published identification): Coulomb 1-2.8 N·m, viscous 0.5-1.8 N·m·s/rad,
# Stribeck 0.3-0.9 N·m fading by 0.08 rad/s, Coulomb levels about 10 % asymmetric; noise 0.3-0.6 N·m
# (larger on the big joints). Joints 1..7 of the xArm 7.
XARM_EFFORTS = EffortTable(
    name=XARM_CURRENT,
    coulomb=(2.6, 2.8, 1.8, 1.9, 1.2, 1.1, 1.0),
    coulomb_velocity=(0.02,) * 7,
    velocity_offset=(0.002, -0.0025, 0.002, 0.0015, -0.002, 0.002, -0.0015),
    stribeck=(0.8, 0.9, 0.6, 0.6, 0.4, 0.35, 0.3),
    stribeck_velocity=(0.08,) * 7,
    viscous=(1.6, 1.8, 1.1, 1.1, 0.7, 0.6, 0.5),
    noise_std=(0.6, 0.6, 0.45, 0.45, 0.35, 0.3, 0.3),
)


def _facts(model: str, max_payload_mass: float, efforts: EffortTable, detection: DescriptionPattern) -> RobotFacts:
    # trajectory_action: the joint trajectory controller xarm_ros2 starts
    # (xarm_controller/config/xarmN_controllers.yaml)
    return RobotFacts(
        topics=RobotTopics(joint_states=_JOINT_STATES, wrench="/xarm/uf_ftsensor_raw_states",
                           joint_torque_states=_JOINT_STATES,
                           trajectory_action=f"/{model}_traj_controller/follow_joint_trajectory"),
        parameters=dict(_XARM_PARAMETERS, max_payload_mass=max_payload_mass),
        efforts=efforts,
        detection=detection,
    )


# xarm_description names the joints joint1 ... jointN: joint7 tells the xArm 7 from the xArm 6.
_XARM6_JOINTS = frozenset({"joint1", "joint6"})
XARM7_FACTS = _facts("xarm7", 3.5, XARM_EFFORTS,
                     DescriptionPattern(frozenset({"xarm7"}), _XARM6_JOINTS | {"joint7"}))
# the xArm 6 has the 7's joints 1, 2, 4, 5, 6, 7 (drive sizes alike)
XARM6_FACTS = _facts("xarm6", 5.0, XARM_EFFORTS.select((0, 1, 3, 4, 5, 6)),
                     DescriptionPattern(frozenset({"xarm6"}), _XARM6_JOINTS, absent_joints=frozenset({"joint7"})))
