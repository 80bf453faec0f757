"""Parameter tables of the Franka Emika Panda (FER) and Franka Research 3 (FR3).

Kinematics: the Denavit–Hartenberg table of the Franka Control Interface (FCI)
documentation, "Robot and interface specifications", given in Craig's modified
convention; it is the same for Panda and FR3, and the vendor's URDF frames
(``franka_description``) are exactly these DH frames. ``<prefix>_link8`` is the
flange, 0.107 m along ``z`` of link 7.

Limits: FCI documentation, joint-space limits of each robot (q_min/q_max,
dq_max, ddq_max, dddq_max, tau_max).

Inertials, in the URDF link frames:

* Panda: the identified, physically feasible parameters of C. Gaz, M. Cognetti,
  A. Oliva, P. Robuffo Giordano, A. De Luca, "Dynamic Identification of the
  Franka Emika Panda Robot With Retrieval of Feasible Parameters Using
  Penalty-Based Optimization", IEEE RA-L 4(4), 2019, as published by Franka in
  ``franka_ros/franka_description/robots/common/inertial.yaml`` (also used by
  MuJoCo Menagerie). The newer ROS 2 ``franka_description`` values
  (``robots/fer/inertials.yaml``) are not used: their link 4 tensor violates the
  triangle inequality of principal moments, which MuJoCo rejects.
* FR3: the vendor's ROS 2 ``franka_description``, ``robots/fr3/inertials.yaml``.

Facts (:class:`~payload_estimator.robots.tables.RobotFacts`): the topics of
franka_ros2's robot state broadcaster and MoveIt controllers, the preset (the
external-wrench estimate, no F/T sensor), the joint-torque sensor τ_J with the
friction of Gaz et al. (above), and franka_description's joint names.
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

__all__ = ["PANDA", "FR3", "PANDA_FACTS", "FR3_FACTS", "FRANKA_EFFORTS", "FRANKA_TAU_J"]

_PI_2 = math.pi / 2

_DH = (
    ModifiedDH(alpha_prev=0.0, a_prev=0.0, d=0.333),
    ModifiedDH(alpha_prev=-_PI_2, a_prev=0.0, d=0.0),
    ModifiedDH(alpha_prev=_PI_2, a_prev=0.0, d=0.316),
    ModifiedDH(alpha_prev=_PI_2, a_prev=0.0825, d=0.0),
    ModifiedDH(alpha_prev=-_PI_2, a_prev=-0.0825, d=0.384),
    ModifiedDH(alpha_prev=_PI_2, a_prev=0.0, d=0.0),
    ModifiedDH(alpha_prev=_PI_2, a_prev=0.088, d=0.0),
)
_FLANGE_DH = ModifiedDH(alpha_prev=0.0, a_prev=0.0, d=0.107)

# "Ready" pose of the Franka examples: elbow up, flange z-axis pointing down.
_Q_HOME = (0.0, -math.pi / 4, 0.0, -3 * math.pi / 4, 0.0, math.pi / 2, math.pi / 4)
_WRIST = (4, 5, 6)

_SOURCE = (
    "Kinematics: Franka Control Interface docs, Denavit-Hartenberg table (Craig convention). "
    "Limits: FCI docs, joint-space limits. Inertials: {inertials}."
)


def _limits(
    lower: tuple[float, ...], upper: tuple[float, ...], velocity: tuple[float, ...],
    acceleration: tuple[float, ...], jerk: tuple[float, ...],
) -> tuple[JointLimit, ...]:
    effort = (87.0, 87.0, 87.0, 87.0, 12.0, 12.0, 12.0)
    return tuple(JointLimit(lo, hi, v, e, a, j)
                 for lo, hi, v, e, a, j in zip(lower, upper, velocity, effort, acceleration, jerk))


def _names(prefix: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    links = tuple(f"{prefix}_link{i}" for i in range(1, 8))
    joints = tuple(f"{prefix}_joint{i}" for i in range(1, 8))
    return links, joints


_PANDA_LINKS, _PANDA_JOINTS = _names("panda")
_FR3_LINKS, _FR3_JOINTS = _names("fr3")

PANDA = ArmTable(
    name="panda",
    base_link="panda_link0",
    link_names=_PANDA_LINKS,
    joint_names=_PANDA_JOINTS,
    dh=_DH,
    flange_link="panda_link8",
    flange_joint="panda_joint8",
    flange_dh=_FLANGE_DH,
    limits=_limits(
        lower=(-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973),
        upper=(2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973),
        velocity=(2.1750, 2.1750, 2.1750, 2.1750, 2.6100, 2.6100, 2.6100),
        acceleration=(15.0, 7.5, 10.0, 12.5, 15.0, 20.0, 20.0),
        jerk=(7500.0, 3750.0, 5000.0, 6250.0, 7500.0, 10000.0, 10000.0),
    ),
    # Gaz et al. 2019 identification, as published in franka_ros (see module docstring).
    base_inertial=LinkInertial(0.629769, (-0.041018, -0.00014, 0.049974),
                               (0.00315, 8.2904e-07, 0.00015, 0.00388, 8.2299e-06, 0.004285)),
    link_inertials=(
        LinkInertial(4.970684, (0.003875, 0.002081, -0.04762),
                     (0.70337, -0.000139, 0.006772, 0.70661, 0.019169, 0.009117)),
        LinkInertial(0.646926, (-0.003141, -0.02872, 0.003495),
                     (0.007962, -0.003925, 0.010254, 0.02811, 0.000704, 0.025995)),
        LinkInertial(3.228604, (0.027518, 0.039252, -0.066502),
                     (0.037242, -0.004761, -0.011396, 0.036155, -0.012805, 0.01083)),
        LinkInertial(3.587895, (-0.05317, 0.104419, 0.027454),
                     (0.025853, 0.007796, -0.001332, 0.019552, 0.008641, 0.028323)),
        LinkInertial(1.225946, (-0.011953, 0.041065, -0.038437),
                     (0.035549, -0.002117, -0.004037, 0.029474, 0.000229, 0.008627)),
        LinkInertial(1.666555, (0.060149, -0.014117, -0.010517),
                     (0.001964, 0.000109, -0.001158, 0.004354, 0.000341, 0.005433)),
        LinkInertial(0.735522, (0.010517, -0.004252, 0.061597),
                     (0.012516, -0.000428, -0.001196, 0.010027, -0.000741, 0.004815)),
    ),
    q_home=_Q_HOME,
    wrist_joints=_WRIST,
    source=_SOURCE.format(
        inertials="Gaz et al., IEEE RA-L 2019, via frankaemika/franka_ros "
        "franka_description/robots/common/inertial.yaml"
    ),
)

FR3 = ArmTable(
    name="fr3",
    base_link="fr3_link0",
    link_names=_FR3_LINKS,
    joint_names=_FR3_JOINTS,
    dh=_DH,
    flange_link="fr3_link8",
    flange_joint="fr3_joint8",
    flange_dh=_FLANGE_DH,
    limits=_limits(
        lower=(-2.7437, -1.7837, -2.9007, -3.0421, -2.8065, 0.5445, -3.0159),
        upper=(2.7437, 1.7837, 2.9007, -0.1518, 2.8065, 4.5169, 3.0159),
        velocity=(2.62, 2.62, 2.62, 2.62, 5.26, 4.18, 5.26),
        acceleration=(10.0,) * 7,
        jerk=(5000.0,) * 7,
    ),
    base_inertial=LinkInertial(2.3966, (-0.0172, 0.0004, 0.0745),
                               (0.0090, 0.0000, 0.0020, 0.0115, 0.0000, 0.0085)),
    link_inertials=(
        LinkInertial(2.9274653454, (0.0000004128, -0.0181251324, -0.0386035970),
                     (0.023927316485107913, 1.3317903455714081e-05, -0.00011404774918616684,
                      0.0224821613275756, -0.0019950320628240115, 0.006350098258530016)),
        LinkInertial(2.9355370338, (0.0031828864, -0.0743221644, 0.0088146084),
                     (0.041938946257609425, 0.00020257331521090626, 0.004077784227179924,
                      0.02514514885014724, -0.0042252158006570156, 0.06170214472888839)),
        LinkInertial(2.2449013699, (0.0407015686, -0.0048200565, -0.0289730823),
                     (0.02410142547240885, 0.002404694559042109, -0.002856269270114313,
                      0.01974053266708178, -0.002104212683891874, 0.019044494482244823)),
        LinkInertial(2.6155955791, (-0.0459100965, 0.0630492960, -0.0085187868),
                     (0.03452998321913202, 0.01322552265982813, 0.01015142998484113,
                      0.028881621933049058, -0.0009762833870704552, 0.04125471171146641)),
        LinkInertial(2.3271207594, (-0.0016039605, 0.0292536262, -0.0972965990),
                     (0.051610278463662895, -0.005715173387783472, -0.0035673167625872135,
                      0.04787729713371481, 0.010673985108535986, 0.016423625579357254)),
        LinkInertial(1.8170376524, (0.0597131221, -0.0410294666, -0.0101692726),
                     (0.005412333594383447, 0.006193456360285834, 0.0014219289306117652,
                      0.014058329545509979, -0.0013140753741120031, 0.016080817924212554)),
        LinkInertial(0.6271432862, (0.0045225817, 0.0086261921, -0.0161633251),
                     (0.00021092389150104718, -2.433299114461931e-05, 4.564480393778983e-05,
                      0.00017718568002411474, 8.744070223226438e-05, 5.993190599659971e-05)),
    ),
    q_home=_Q_HOME,
    wrist_joints=_WRIST,
    source=_SOURCE.format(
        inertials="frankaemika/franka_description robots/fr3/inertials.yaml"
    ),
)


# Estimator parameters (Settings fields) for a Franka arm on franka_ros2: no F/T sensor, the
# robot's own external-wrench estimate in the stiffness frame K (robot state broadcaster,
# best effort, 1 kHz), the estimate expressed at the flange, which is what SetLoad wants.
_FRANKA_PARAMETERS = dict(
    wrench_source="franka_stiffness",
    estimate_bias=True,
    max_payload_mass=3.0,
    apply_target="franka",
    sensor_force_range=0.0,
    sensor_torque_range=0.0,
)
# The robot state broadcaster's joint states carry the link-side torques tau_J as efforts, so the
# preset and its variant without a wrist sensor read the same topic.
_MEASURED_JOINT_STATES = "/franka_robot_state_broadcaster/measured_joint_states"
_EXTERNAL_WRENCH = "/franka_robot_state_broadcaster/external_wrench_in_stiffness_frame"

FRANKA_TAU_J = "franka_tau_j"
"""Name of the Franka joint-torque model: link-side joint-torque sensors (τ_J of ``measured_joint_states``)."""

# Friction of Gaz et al., IEEE RA-L 2019: the Panda's identified sigmoid
# phi1 / (1 + exp(-phi2 (dq + phi3))) - phi1 / (1 + exp(-phi2 phi3)) per joint, also used for the FR3,
# for which no identification is published. As the smooth Coulomb term of sim.efforts.JointFriction:
# c = phi1 / 2, v_c = 2 / phi2, v_o = phi3; plus a small Stribeck bump (10 % of c, fading by 3 v_c)
# and viscous term (0.01-0.04 N·m·s/rad), chosen. Noise: 0.08 N·m on joints 1-4, 0.05 N·m on 5-7.
_GAZ_PHI1 = (0.54615, 0.87224, 0.64068, 1.2794, 0.83904, 0.30301, 0.56489)
_GAZ_PHI2 = (5.1181, 9.0657, 10.136, 5.5903, 8.3469, 17.133, 10.336)
_GAZ_PHI3 = (0.039533, 0.025882, -0.04607, 0.036194, 0.026226, -0.021047, 0.0035526)
FRANKA_EFFORTS = EffortTable(
    name=FRANKA_TAU_J,
    coulomb=tuple(phi1 / 2.0 for phi1 in _GAZ_PHI1),
    coulomb_velocity=tuple(2.0 / phi2 for phi2 in _GAZ_PHI2),
    velocity_offset=_GAZ_PHI3,
    stribeck=tuple(0.1 * phi1 / 2.0 for phi1 in _GAZ_PHI1),
    stribeck_velocity=tuple(3.0 * (2.0 / phi2) for phi2 in _GAZ_PHI2),
    viscous=(0.04, 0.04, 0.03, 0.03, 0.02, 0.01, 0.01),
    noise_std=(0.08, 0.08, 0.08, 0.08, 0.05, 0.05, 0.05),
)


def _facts(prefix: str, controller: str) -> RobotFacts:
    # trajectory_action: the joint trajectory controller franka_ros2's MoveIt launch files start
    # (franka_moveit_config/config/panda_ros_controllers.yaml, franka_fr3_moveit_config/config/fr3_ros_controllers.yaml)
    return RobotFacts(
        topics=RobotTopics(joint_states=_MEASURED_JOINT_STATES, wrench=_EXTERNAL_WRENCH,
                           joint_torque_states=_MEASURED_JOINT_STATES,
                           trajectory_action=f"/{controller}/follow_joint_trajectory"),
        parameters=dict(_FRANKA_PARAMETERS, sensor_frame=f"{prefix}_link8"),
        efforts=FRANKA_EFFORTS,
        # franka_description names every joint <prefix>_jointN
        detection=DescriptionPattern(robot_names=frozenset({prefix}), joints=frozenset({f"{prefix}_joint1"})),
    )


PANDA_FACTS = _facts("panda", "panda_arm_controller")
FR3_FACTS = _facts("fr3", "fr3_arm_controller")
