"""Robot models: URDFs against the vendors' published kinematics, specs, files, MuJoCo.

References used here are independent of the URDF writer: the DH tables are
transcribed again from the vendors' documents (Franka: FCI docs, Craig's
modified DH; UFACTORY: the *standard* DH tables of the xArm support articles,
a different convention from the modified tables the writer uses), and the
vendor URDF joint origins from ``franka_description`` / ``xarm_description`` /
``ur_description``.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import mujoco
import numpy as np
import pinocchio as pin
import pytest
from vendor_dh import FRANKA_MDH, modified_dh, vendor_flange_pose, vendor_gravity_torques

from payload_estimator.robots import (
    ROBOT_NAMES,
    default_urdf_path,
    detect_preset,
    detect_preset_from_topics,
    get_robot,
    robot_urdf,
)
from payload_estimator.robots.generate import DEFAULT_IMU_XYZ_IN_SENSOR, default_urdf

FRANKA_URDF_ORIGINS = [
    ((0, 0, 0.333), (0, 0, 0)),
    ((0, 0, 0), (-1.5708, 0, 0)),
    ((0, -0.316, 0), (1.5708, 0, 0)),
    ((0.0825, 0, 0), (1.5708, 0, 0)),
    ((-0.0825, 0.384, 0), (-1.5708, 0, 0)),
    ((0, 0, 0), (1.5708, 0, 0)),
    ((0.088, 0, 0), (1.5708, 0, 0)),
    ((0, 0, 0.107), (0, 0, 0)),
]
VENDOR_URDF_ORIGINS = {
    "panda": FRANKA_URDF_ORIGINS,
    "fr3": FRANKA_URDF_ORIGINS,
    "xarm7": [
        ((0, 0, 0.267), (0, 0, 0)),
        ((0, 0, 0), (-1.5708, 0, 0)),
        ((0, -0.293, 0), (1.5708, 0, 0)),
        ((0.0525, 0, 0), (1.5708, 0, 0)),
        ((0.0775, -0.3425, 0), (1.5708, 0, 0)),
        ((0, 0, 0), (1.5708, 0, 0)),
        ((0.076, 0.097, 0), (-1.5708, 0, 0)),
        ((0, 0, 0), (0, 0, 0)),
    ],
    "xarm6": [
        ((0, 0, 0.267), (0, 0, 0)),
        ((0, 0, 0), (-1.5708, 0, 0)),
        ((0.0535, -0.2845, 0), (0, 0, 0)),
        ((0.0775, 0.3425, 0), (-1.5708, 0, 0)),
        ((0, 0, 0), (1.5708, 0, 0)),
        ((0.076, 0.097, 0), (-1.5708, 0, 0)),
        ((0, 0, 0), (0, 0, 0)),
    ],
}
# ur_description config/<model>/default_kinematics.yaml (its ~2e-11 m z residues of the factory calibration
# as 0; wrist_3's rpy there is (pi/2, pi, pi), the same rotation as (-pi/2, 0, 0)); its tool0 is wrist_3_link
# turned by rpy (0, -pi/2, -pi/2) then (pi/2, 0, pi/2): no turn.
for _ur, (_d1, _a2, _a3, _d4, _d5, _d6) in {"ur5e": (0.1625, -0.425, -0.3922, 0.1333, 0.0997, 0.0996),
                                           "ur10e": (0.1807, -0.6127, -0.57155, 0.17415, 0.11985, 0.11655)}.items():
    VENDOR_URDF_ORIGINS[_ur] = [
        ((0, 0, _d1), (0, 0, 0)),
        ((0, 0, 0), (1.5708, 0, 0)),
        ((_a2, 0, 0), (0, 0, 0)),
        ((_a3, 0, _d4), (0, 0, 0)),
        ((0, -_d5, 0), (1.5708, 0, 0)),
        ((0, _d6, 0), (-1.5708, 0, 0)),
        ((0, 0, 0), (0, 0, 0)),
    ]
_UR_JOINTS = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint",
              "wrist_3_joint"]

EXPECTED_NAMES = {
    "panda": ("panda_link0", "panda_link8", [f"panda_joint{i}" for i in range(1, 8)]),
    "fr3": ("fr3_link0", "fr3_link8", [f"fr3_joint{i}" for i in range(1, 8)]),
    "xarm7": ("link_base", "link_eef", [f"joint{i}" for i in range(1, 8)]),
    "xarm6": ("link_base", "link_eef", [f"joint{i}" for i in range(1, 7)]),
    "ur5e": ("base_link_inertia", "tool0", _UR_JOINTS),
    "ur10e": ("base_link_inertia", "tool0", _UR_JOINTS),
}

# Shoulder, elbow and wrist-centre links, for the "elbow up" check.
ARM_POINTS = {
    "panda": ("panda_link2", "panda_link4", "panda_link6"),
    "fr3": ("fr3_link2", "fr3_link4", "fr3_link6"),
    "xarm7": ("link2", "link4", "link6"),
    "xarm6": ("link2", "link3", "link5"),
    "ur5e": ("upper_arm_link", "forearm_link", "wrist_2_link"),
    "ur10e": ("upper_arm_link", "forearm_link", "wrist_2_link"),
}

# Vendor limits, transcribed from the FCI docs, xarm_description and ur_description (joint_limits.yaml).
VENDOR_LIMITS = {
    "panda": dict(
        lower=[-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973],
        upper=[2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973],
        velocity=[2.175, 2.175, 2.175, 2.175, 2.61, 2.61, 2.61],
        effort=[87, 87, 87, 87, 12, 12, 12],
    ),
    "fr3": dict(
        lower=[-2.7437, -1.7837, -2.9007, -3.0421, -2.8065, 0.5445, -3.0159],
        upper=[2.7437, 1.7837, 2.9007, -0.1518, 2.8065, 4.5169, 3.0159],
        velocity=[2.62, 2.62, 2.62, 2.62, 5.26, 4.18, 5.26],
        effort=[87, 87, 87, 87, 12, 12, 12],
    ),
    "xarm7": dict(
        lower=[-2 * math.pi, -2.059, -2 * math.pi, -0.19198, -2 * math.pi, -1.69297, -2 * math.pi],
        upper=[2 * math.pi, 2.0944, 2 * math.pi, 3.927, 2 * math.pi, math.pi, 2 * math.pi],
        velocity=[3.14] * 7,
        effort=[50, 50, 30, 30, 30, 20, 20],
    ),
    "xarm6": dict(
        lower=[-2 * math.pi, -2.059, -3.927, -2 * math.pi, -1.69297, -2 * math.pi],
        upper=[2 * math.pi, 2.0944, 0.19198, 2 * math.pi, math.pi, 2 * math.pi],
        velocity=[3.14] * 6,
        effort=[50, 50, 32, 32, 32, 20],
    ),
    "ur5e": dict(
        lower=[-2 * math.pi, -2 * math.pi, -math.pi, -2 * math.pi, -2 * math.pi, -2 * math.pi],
        upper=[2 * math.pi, 2 * math.pi, math.pi, 2 * math.pi, 2 * math.pi, 2 * math.pi],
        velocity=[math.pi] * 6,
        effort=[150, 150, 150, 28, 28, 28],
    ),
    "ur10e": dict(
        lower=[-2 * math.pi, -2 * math.pi, -math.pi, -2 * math.pi, -2 * math.pi, -2 * math.pi],
        upper=[2 * math.pi, 2 * math.pi, math.pi, 2 * math.pi, 2 * math.pi, 2 * math.pi],
        velocity=[2 * math.pi / 3] * 2 + [math.pi] * 4,
        effort=[330, 330, 150, 54, 54, 54],
    ),
}


def rpy_matrix(rpy) -> np.ndarray:
    r, p, y = rpy
    Rx = np.array([[1, 0, 0], [0, math.cos(r), -math.sin(r)], [0, math.sin(r), math.cos(r)]])
    Ry = np.array([[math.cos(p), 0, math.sin(p)], [0, 1, 0], [-math.sin(p), 0, math.cos(p)]])
    Rz = np.array([[math.cos(y), -math.sin(y), 0], [math.sin(y), math.cos(y), 0], [0, 0, 1]])
    return Rz @ Ry @ Rx


def random_q(name: str, rng: np.random.Generator, n: int) -> np.ndarray:
    spec = get_robot(name)
    lo = np.maximum(spec.q_min, -math.pi)
    hi = np.minimum(spec.q_max, math.pi)
    return rng.uniform(lo, hi, size=(n, spec.n_joints))


def pin_model(xml: str) -> tuple[pin.Model, pin.Data]:
    model = pin.buildModelFromXML(xml)
    return model, model.createData()


def frame_T(model: pin.Model, data: pin.Data, frame: str) -> np.ndarray:
    return data.oMf[model.getFrameId(frame)].homogeneous


# ------------------------------------------------------------------------- specs
def test_robot_names_and_specs() -> None:
    assert ROBOT_NAMES == ("panda", "fr3", "xarm7", "xarm6", "ur5e", "ur10e")
    for name in ROBOT_NAMES:
        spec = get_robot(name)
        base, flange, joints = EXPECTED_NAMES[name]
        assert spec.name == name
        assert spec.base_frame == base and spec.flange_frame == flange
        assert list(spec.joint_names) == joints
        n = spec.n_joints
        assert spec.wrist_joints == (n - 3, n - 2, n - 1)
        for arr in (spec.q_home, spec.q_min, spec.q_max, spec.dq_max, spec.tau_max):
            assert arr.shape == (n,)
            with pytest.raises(ValueError):
                arr[0] = 1.0  # read-only
        assert np.all(spec.q_min < spec.q_home) and np.all(spec.q_home < spec.q_max)
        np.testing.assert_allclose(spec.q_min, VENDOR_LIMITS[name]["lower"], atol=1e-12)
        np.testing.assert_allclose(spec.q_max, VENDOR_LIMITS[name]["upper"], atol=1e-12)
        np.testing.assert_allclose(spec.dq_max, VENDOR_LIMITS[name]["velocity"], atol=1e-12)
        np.testing.assert_allclose(spec.tau_max, VENDOR_LIMITS[name]["effort"], atol=1e-12)
        assert spec.urdf_path == default_urdf_path(name)


def test_every_robot_fact_is_in_its_spec() -> None:
    """Topics, joint-torque sensor and description pattern come from the table modules; the preset's
    parameters repeat the topics, and a description or a recording is recognised from them."""
    for name in ROBOT_NAMES:
        spec = get_robot(name)
        topics = spec.topics
        assert topics.joint_states and topics.wrench and topics.joint_torque_states and topics.trajectory_action
        assert spec.parameters["joint_states_topic"] == topics.joint_states
        assert spec.parameters["wrench_topic"] == topics.wrench
        assert spec.parameters["trajectory_action"] == topics.trajectory_action
        assert spec.efforts is not None and len(spec.efforts.noise_std) == spec.n_joints
        assert spec.detection is not None and spec.detection.matches_name(name.upper())
        assert detect_preset(default_urdf_path(name).read_text(encoding="utf-8"), ROBOT_NAMES) == name
        assert detect_preset(f'<robot name="{name}"/>', ROBOT_NAMES) == name
    assert get_robot("panda").topics.joint_torque_states == "/franka_robot_state_broadcaster/measured_joint_states"
    assert get_robot("xarm6").topics.joint_torque_states == "/xarm/joint_states"
    xarm7 = default_urdf_path("xarm7").read_text(encoding="utf-8").replace('<robot name="xarm7"', '<robot name="a"')
    assert detect_preset(xarm7, ("xarm6",)) is None and detect_preset(xarm7, ROBOT_NAMES) == "xarm7"


def test_a_ur_description_is_told_by_its_torque_limits() -> None:
    """ur_description names the joints of every UR alike and the driver's launch names the robot "ur": the
    shoulder's torque limit tells the UR5e from the UR10e; a recording's joint names alone cannot."""
    for name in ("ur5e", "ur10e"):
        urdf = default_urdf_path(name).read_text(encoding="utf-8").replace(f'<robot name="{name}"', '<robot name="ur"')
        assert detect_preset(urdf, ROBOT_NAMES) == name
        assert detect_preset(urdf, tuple(r for r in ROBOT_NAMES if r != name)) is None
    ur = get_robot("ur5e").topics
    assert ur.joint_states == "/joint_states" and ur.wrench == "/force_torque_sensor_broadcaster/wrench"
    assert get_robot("ur10e").topics == ur
    assert detect_preset_from_topics({ur.joint_states, ur.wrench}, lambda t: get_robot("ur5e").joint_names) is None
    assert detect_preset_from_topics({ur.joint_states, ur.wrench}, lambda t: get_robot("ur5e").joint_names,
                                     presets=("panda", "ur10e")) == "ur10e"


def test_a_recording_is_recognised_from_its_topics() -> None:
    franka = get_robot("fr3").topics
    xarm = get_robot("xarm7").topics

    def no_joint_states(topic: str) -> tuple[str, ...]:
        raise AssertionError("the joint names are not needed")

    assert detect_preset_from_topics({xarm.joint_states, "/tf"}, no_joint_states) is None
    assert detect_preset_from_topics({xarm.joint_states}, lambda t: get_robot("xarm6").joint_names,
                                     wrench=False) == "xarm6"
    assert detect_preset_from_topics({xarm.joint_states, xarm.wrench},
                                     lambda t: (*get_robot("xarm7").joint_names, "gripper")) == "xarm7"
    # the Panda and the FR3 share their topics; the joint names tell them apart
    assert detect_preset_from_topics({franka.joint_states, franka.wrench}, lambda t: get_robot("fr3").joint_names,
                                     presets=("panda", "fr3")) == "fr3"
    assert detect_preset_from_topics({franka.joint_states}, lambda t: ("a", "b"), wrench=False) is None


def test_unknown_robot_lists_valid_names() -> None:
    for call in (get_robot, robot_urdf, default_urdf_path):
        with pytest.raises(ValueError, match="panda, fr3, xarm7, xarm6, ur5e, ur10e"):
            call("ur5")


# -------------------------------------------------------------------------- URDF
@pytest.mark.parametrize("name", ROBOT_NAMES)
def test_urdf_structure_and_limits(name: str) -> None:
    spec = get_robot(name)
    root = ET.fromstring(robot_urdf(name, imu_xyz_in_sensor=(0.0, 0.0, 0.01)))
    joints = {j.get("name"): j for j in root.findall("joint")}
    parent_of = {j.find("child").get("link"): j.find("parent").get("link") for j in joints.values()}
    type_of = {j.find("child").get("link"): j.get("type") for j in joints.values()}
    # base -> ... -> flange -> ft_sensor -> imu_link, fixed joints at the end
    assert parent_of["imu_link"] == "ft_sensor" and type_of["imu_link"] == "fixed"
    assert parent_of["ft_sensor"] == spec.flange_frame and type_of["ft_sensor"] == "fixed"
    assert type_of[spec.flange_frame] == "fixed"
    link = parent_of[spec.flange_frame]
    chain = []
    while link in parent_of:
        chain.append(link)
        link = parent_of[link]
    assert link == spec.base_frame
    revolute = [j for j in root.findall("joint") if j.get("type") == "revolute"]
    assert [j.get("name") for j in revolute] == list(spec.joint_names)
    assert len(chain) == spec.n_joints
    limits = VENDOR_LIMITS[name]
    for i, joint in enumerate(revolute):
        assert joint.find("axis").get("xyz") == "0 0 1"
        lim = joint.find("limit")
        for key in ("lower", "upper", "velocity", "effort"):
            assert float(lim.get(key)) == pytest.approx(limits[key][i], abs=1e-12)
    assert root.find("mujoco/compiler").get("fusestatic") == "false"


@pytest.mark.parametrize("name", ROBOT_NAMES)
def test_joint_origins_are_the_vendor_urdf_frames(name: str) -> None:
    """Our link frames are the vendor's, so tf frames and joint zeros transfer."""
    spec = get_robot(name)
    root = ET.fromstring(robot_urdf(name))
    by_child = {j.find("child").get("link"): j for j in root.findall("joint")}
    chain_joints = [j for j in root.findall("joint") if j.get("name") in spec.joint_names]
    chain_joints.append(by_child[spec.flange_frame])
    for joint, (xyz, rpy) in zip(chain_joints, VENDOR_URDF_ORIGINS[name], strict=True):
        origin = joint.find("origin")
        np.testing.assert_allclose([float(v) for v in origin.get("xyz").split()], xyz, atol=1e-12)
        np.testing.assert_allclose([float(v) for v in origin.get("rpy").split()], rpy, atol=1e-4)


@pytest.mark.parametrize("name", ROBOT_NAMES)
def test_forward_kinematics_matches_vendor_dh(name: str) -> None:
    spec = get_robot(name)
    model, data = pin_model(robot_urdf(name))
    rng = np.random.default_rng(7)
    qs = np.vstack([np.zeros(spec.n_joints), spec.q_home, random_q(name, rng, 6)])
    for q in qs:
        pin.framesForwardKinematics(model, data, q)
        np.testing.assert_allclose(
            frame_T(model, data, spec.flange_frame), vendor_flange_pose(name, q), atol=1e-9
        )
        # zero mount offset: the sensor frame is the flange
        np.testing.assert_allclose(
            frame_T(model, data, "ft_sensor"), vendor_flange_pose(name, q), atol=1e-9
        )


@pytest.mark.parametrize("name", ["panda", "fr3"])
def test_franka_link_frames_are_the_dh_frames(name: str) -> None:
    spec = get_robot(name)
    model, data = pin_model(robot_urdf(name))
    q = random_q(name, np.random.default_rng(3), 1)[0]
    pin.framesForwardKinematics(model, data, q)
    T = np.eye(4)
    for i, ((a, d, alpha), qi) in enumerate(zip(FRANKA_MDH, q), start=1):
        T = T @ modified_dh(a, d, alpha, qi)
        np.testing.assert_allclose(frame_T(model, data, f"{name}_link{i}"), T, atol=1e-12)
    assert spec.base_frame == f"{name}_link0"


@pytest.mark.parametrize("name", ["ur5e", "ur10e"])
def test_ur_gravity_torques_match_the_vendor_dynamics(name: str) -> None:
    """The UR links' masses and centres of mass, in the link frames of ``ur_description``, hold the arm as
    UR's own table (masses and centres of mass in the standard DH frames) says; with the rated payload at
    the flange, the arm stretched out level needs less than the vendor's joint torques."""
    spec = get_robot(name)
    model, data = pin_model(robot_urdf(name))
    model.gravity.linear = np.array([0.0, 0.0, -9.81])
    for q in np.vstack([np.zeros(6), spec.q_home, random_q(name, np.random.default_rng(4), 5)]):
        np.testing.assert_allclose(pin.computeGeneralizedGravity(model, data, q), vendor_gravity_torques(name, q),
                                   atol=1e-9)
    stretched = np.zeros(6)
    tau = pin.computeGeneralizedGravity(model, data, stretched)
    pin.computeJointJacobians(model, data, stretched)
    pin.framesForwardKinematics(model, data, stretched)
    J = pin.getFrameJacobian(model, data, model.getFrameId(spec.flange_frame), pin.LOCAL_WORLD_ALIGNED)[:3]
    tau_payload = J.T @ np.array([0.0, 0.0, spec.parameters["max_payload_mass"] * 9.81])
    assert 0.3 * spec.tau_max[1] < abs(tau[1] + tau_payload[1]) < spec.tau_max[1]
    assert np.all(np.abs(tau + tau_payload) < spec.tau_max)


@pytest.mark.parametrize("name", ROBOT_NAMES)
def test_home_pose_flange_down_elbow_up_not_singular(name: str) -> None:
    spec = get_robot(name)
    model, data = pin_model(robot_urdf(name))
    pin.framesForwardKinematics(model, data, spec.q_home)
    T = frame_T(model, data, spec.flange_frame)
    np.testing.assert_allclose(T[:3, 2], [0.0, 0.0, -1.0], atol=1e-9)  # flange z along gravity
    assert T[2, 3] > 0.1  # flange above the base plane
    shoulder, elbow, wrist = (frame_T(model, data, f)[:3, 3] for f in ARM_POINTS[name])
    d = (wrist - shoulder) / np.linalg.norm(wrist - shoulder)
    up = np.array([0.0, 0.0, 1.0]) - d[2] * d  # world up, normal to the shoulder-wrist line
    assert (elbow - shoulder) @ up > 0.02  # elbow above the shoulder-wrist line
    J = pin.computeFrameJacobian(model, data, spec.q_home, model.getFrameId(spec.flange_frame))
    assert np.linalg.svd(J, compute_uv=False)[-1] > 0.1


@pytest.mark.parametrize("name", ROBOT_NAMES)
def test_link_inertials_are_physical(name: str) -> None:
    root = ET.fromstring(robot_urdf(name))
    moving = 0
    for link in root.findall("link"):
        inertial = link.find("inertial")
        if inertial is None:
            continue
        moving += 1
        assert float(inertial.find("mass").get("value")) > 0.05
        i = {k: float(v) for k, v in inertial.find("inertia").attrib.items()}
        I = np.array(
            [
                [i["ixx"], i["ixy"], i["ixz"]],
                [i["ixy"], i["iyy"], i["iyz"]],
                [i["ixz"], i["iyz"], i["izz"]],
            ]
        )
        ev = np.linalg.eigvalsh(I)
        assert ev[0] > 0 and ev[0] + ev[1] >= ev[2], link.get("name")
    assert moving >= get_robot(name).n_joints


def test_mount_offset_and_imu_in_urdf() -> None:
    xyz, rpy = (0.01, -0.02, 0.035), (0.1, -0.2, 0.3)
    imu_xyz, imu_rpy = (0.005, 0.004, -0.003), (0.0, 0.0, 1.0)
    model, data = pin_model(
        robot_urdf(
            "xarm7",
            sensor_xyz_in_flange=xyz,
            sensor_rpy_in_flange=rpy,
            sensor_frame="wrist_ft",
            imu_xyz_in_sensor=imu_xyz,
            imu_rpy_in_sensor=imu_rpy,
            imu_frame="wrist_imu",
        )
    )
    q = random_q("xarm7", np.random.default_rng(11), 1)[0]
    pin.framesForwardKinematics(model, data, q)
    T_f = frame_T(model, data, "link_eef")
    T_s = frame_T(model, data, "wrist_ft")
    T_i = frame_T(model, data, "wrist_imu")
    np.testing.assert_allclose(T_s[:3, 3] - T_f[:3, 3], T_f[:3, :3] @ xyz, atol=1e-12)
    np.testing.assert_allclose(T_f[:3, :3].T @ T_s[:3, :3], rpy_matrix(rpy), atol=1e-12)
    np.testing.assert_allclose(T_s[:3, :3].T @ (T_i[:3, 3] - T_s[:3, 3]), imu_xyz, atol=1e-12)
    np.testing.assert_allclose(T_s[:3, :3].T @ T_i[:3, :3], rpy_matrix(imu_rpy), atol=1e-12)


def test_writer_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError):
        robot_urdf("panda", sensor_xyz_in_flange=(0.0, 0.0))
    with pytest.raises(ValueError):
        robot_urdf("panda", sensor_rpy_in_flange=(0.0, float("nan"), 0.0))
    with pytest.raises(ValueError, match="already"):
        robot_urdf("panda", sensor_frame="panda_link8")
    with pytest.raises(ValueError, match="already"):
        robot_urdf("xarm6", imu_xyz_in_sensor=(0, 0, 0), imu_frame="ft_sensor")
    with pytest.raises(ValueError):
        robot_urdf("xarm6", sensor_frame="bad name")
    assert "imu_link" not in robot_urdf("fr3")


# ------------------------------------------------------------------------- files
@pytest.mark.parametrize("name", ROBOT_NAMES)
def test_packaged_urdf_equals_writer_output(name: str) -> None:
    text = default_urdf_path(name).read_text(encoding="utf-8")
    assert text == default_urdf(name)
    assert text == robot_urdf(name, imu_xyz_in_sensor=DEFAULT_IMU_XYZ_IN_SENSOR)


# ------------------------------------------------------------------------ MuJoCo
@pytest.mark.parametrize("name", ROBOT_NAMES)
def test_mujoco_loads_urdf_with_sensor_and_imu_bodies(name: str) -> None:
    """MuJoCo, an independent engine, agrees with pinocchio on the fixed frames."""
    spec = get_robot(name)
    xml = default_urdf_path(name).read_text(encoding="utf-8")
    mj = mujoco.MjModel.from_xml_string(xml)
    bodies = [mj.body(i).name for i in range(mj.nbody)]
    for body in (spec.base_frame, spec.flange_frame, "ft_sensor", "imu_link"):
        assert body in bodies
    assert [mj.joint(i).name for i in range(mj.njnt)] == list(spec.joint_names)
    root = ET.fromstring(xml)
    masses = {
        link.get("name"): float(link.find("inertial/mass").get("value"))
        for link in root.findall("link")
        if link.find("inertial") is not None
    }
    for body, mass in masses.items():
        assert mj.body(body).mass[0] == pytest.approx(mass, rel=1e-12)

    model, data = pin_model(xml)
    mjd = mujoco.MjData(mj)
    for q in random_q(name, np.random.default_rng(5), 3):
        mjd.qpos[:] = q
        mujoco.mj_kinematics(mj, mjd)
        pin.framesForwardKinematics(model, data, q)
        for body in ("ft_sensor", "imu_link"):
            T = frame_T(model, data, body)
            np.testing.assert_allclose(mjd.body(body).xpos, T[:3, 3], atol=1e-9)
            np.testing.assert_allclose(mjd.body(body).xmat.reshape(3, 3), T[:3, :3], atol=1e-9)
