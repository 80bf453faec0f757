"""SensorKinematics against independent references.

* Poses: a numpy implementation of the vendors' published DH tables.
* Velocities and accelerations: central finite differences of those poses
  along a smooth joint trajectory (sums of sines, derivatives analytic).
* Mount offsets: rigid-body velocity/acceleration transfer formulas.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from scipy.spatial.transform import Rotation
from vendor_dh import HALF_PI, vendor_flange_pose

from payload_estimator.pipeline.kinematics import SensorKinematics
from payload_estimator.robots import ROBOT_NAMES, default_urdf_path, get_robot, robot_urdf
from payload_estimator.robots.generate import DEFAULT_IMU_XYZ_IN_SENSOR

G = 9.80665

MOUNT_XYZ = np.array([0.02, -0.01, 0.06])
MOTION_FIELDS = ("lin_vel_in_sensor", "ang_vel_in_sensor", "ang_acc_in_sensor", "lin_acc_in_sensor")
MOUNT_RPY = (0.3, -0.2, 0.5)


def rot_x(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def rot_y(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def rot_z(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def rpy_matrix(rpy) -> np.ndarray:
    return rot_z(rpy[2]) @ rot_y(rpy[1]) @ rot_x(rpy[0])


def homogeneous(R: np.ndarray, p) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, p
    return T


class SineTrajectory:
    """q(t) = q0 + sum_k A_k sin(w_k t + phi_k), with analytic derivatives."""

    def __init__(self, q0: np.ndarray, rng: np.random.Generator, harmonics: int = 3) -> None:
        n = q0.shape[0]
        self.q0 = q0
        self.A = rng.uniform(0.05, 0.25, size=(harmonics, n))
        self.w = rng.uniform(0.5, 2.5, size=(harmonics, n))
        self.phi = rng.uniform(0.0, 2 * math.pi, size=(harmonics, n))

    def q(self, t: float) -> np.ndarray:
        return self.q0 + np.sum(self.A * np.sin(self.w * t + self.phi), axis=0)

    def dq(self, t: float) -> np.ndarray:
        return np.sum(self.A * self.w * np.cos(self.w * t + self.phi), axis=0)

    def ddq(self, t: float) -> np.ndarray:
        return -np.sum(self.A * self.w**2 * np.sin(self.w * t + self.phi), axis=0)


def mounted_urdf(name: str) -> str:
    return robot_urdf(name, sensor_xyz_in_flange=MOUNT_XYZ, sensor_rpy_in_flange=MOUNT_RPY)


# ------------------------------------------------------------ finite differences
@pytest.mark.parametrize("name", ROBOT_NAMES)
def test_motion_matches_finite_differences_of_dh_pose(name: str) -> None:
    spec = get_robot(name)
    sk = SensorKinematics(mounted_urdf(name), "ft_sensor")
    assert sk.joint_names == spec.joint_names
    traj = SineTrajectory(spec.q_home, np.random.default_rng(42))
    T_flange_sensor = homogeneous(rpy_matrix(MOUNT_RPY), MOUNT_XYZ)

    def pose(t: float) -> np.ndarray:
        return vendor_flange_pose(name, traj.q(t)) @ T_flange_sensor

    def body_omega(t: float, h: float = 1e-5) -> np.ndarray:
        R = pose(t)[:3, :3]
        fwd = Rotation.from_matrix(R.T @ pose(t + h)[:3, :3]).as_rotvec()
        bwd = Rotation.from_matrix(R.T @ pose(t - h)[:3, :3]).as_rotvec()
        return (fwd - bwd) / (2 * h)

    times = np.array([0.0, 0.37, 1.1, 2.9])
    motion = sk.compute(
        np.array([traj.q(t) for t in times]),
        np.array([traj.dq(t) for t in times]),
        np.array([traj.ddq(t) for t in times]),
    )
    assert len(motion) == len(times)
    for k, t in enumerate(times):
        T = pose(t)
        R, p = T[:3, :3], T[:3, 3]
        np.testing.assert_allclose(motion.R_world_sensor[k], R, atol=1e-9)
        np.testing.assert_allclose(motion.p_world_sensor[k], p, atol=1e-9)

        h = 1e-5
        v_ref = R.T @ (pose(t + h)[:3, 3] - pose(t - h)[:3, 3]) / (2 * h)
        np.testing.assert_allclose(motion.lin_vel_in_sensor[k], v_ref, atol=1e-8)
        np.testing.assert_allclose(motion.ang_vel_in_sensor[k], body_omega(t), atol=1e-8)

        H = 1e-3
        a_ref = R.T @ (pose(t + H)[:3, 3] - 2 * p + pose(t - H)[:3, 3]) / H**2
        np.testing.assert_allclose(motion.lin_acc_in_sensor[k], a_ref, atol=2e-5)
        alpha_ref = (body_omega(t + H) - body_omega(t - H)) / (2 * H)
        np.testing.assert_allclose(motion.ang_acc_in_sensor[k], alpha_ref, atol=2e-5)
        # the motion is not trivially small, so the tolerances above mean something
        assert np.linalg.norm(motion.lin_acc_in_sensor[k]) > 0.05
        assert np.linalg.norm(motion.ang_acc_in_sensor[k]) > 0.05


def test_classical_acceleration_differs_from_spatial() -> None:
    """At constant joint speed of joint 1 the sensor origin has centripetal acceleration."""
    spec = get_robot("panda")
    sk = SensorKinematics(robot_urdf("panda"), "ft_sensor")
    w = 1.5
    dq = np.zeros(7)
    dq[0] = w
    m = sk.compute(spec.q_home, dq, np.zeros(7))
    p = m.p_world_sensor[0]
    radius_world = np.array([p[0], p[1], 0.0])
    expected_world = -(w**2) * radius_world  # a = omega x (omega x r)
    np.testing.assert_allclose(
        m.R_world_sensor[0] @ m.lin_acc_in_sensor[0], expected_world, atol=1e-12
    )


# ------------------------------------------------------------------------ gravity
@pytest.mark.parametrize("name", ROBOT_NAMES)
def test_gravity_in_sensor(name: str) -> None:
    spec = get_robot(name)
    sk = SensorKinematics(default_urdf_path(name).read_text(), "ft_sensor")
    zeros = np.zeros(spec.n_joints)
    home = sk.compute(spec.q_home, zeros, zeros)
    # flange z points down at home and the sensor is not rotated: gravity is +z
    np.testing.assert_allclose(home.gravity_in_sensor[0], [0.0, 0.0, G], atol=1e-9)
    np.testing.assert_allclose(home.lin_acc_in_sensor[0], 0.0, atol=1e-15)

    rng = np.random.default_rng(1)
    q = rng.uniform(np.maximum(spec.q_min, -3), np.minimum(spec.q_max, 3), (20, spec.n_joints))
    m = sk.compute(q, np.zeros_like(q), np.zeros_like(q))
    np.testing.assert_allclose(np.linalg.norm(m.gravity_in_sensor, axis=1), G, rtol=1e-12)
    for k in range(len(q)):
        R = vendor_flange_pose(name, q[k])[:3, :3]
        np.testing.assert_allclose(m.gravity_in_sensor[k], R.T @ [0, 0, -G], atol=1e-9)
    for field in MOTION_FIELDS:
        np.testing.assert_allclose(getattr(m, field), 0.0, atol=1e-15)


def test_tilted_base() -> None:
    spec = get_robot("fr3")
    xml = robot_urdf("fr3", sensor_xyz_in_flange=MOUNT_XYZ, sensor_rpy_in_flange=MOUNT_RPY)
    R_wall = rot_y(HALF_PI) @ rot_z(0.4)  # wall mount, base z along world +x
    upright = SensorKinematics(xml, "ft_sensor")
    wall = SensorKinematics(xml, "ft_sensor", R_world_base=R_wall)
    traj = SineTrajectory(spec.q_home, np.random.default_rng(3))
    t = np.linspace(0.0, 1.0, 5)
    q, dq, ddq = (np.array([f(ti) for ti in t]) for f in (traj.q, traj.dq, traj.ddq))
    a, b = upright.compute(q, dq, ddq), wall.compute(q, dq, ddq)
    for k in range(len(t)):
        T_base_sensor = vendor_flange_pose("fr3", q[k]) @ homogeneous(rpy_matrix(MOUNT_RPY), MOUNT_XYZ)
        R_world_sensor = R_wall @ T_base_sensor[:3, :3]
        np.testing.assert_allclose(b.R_world_sensor[k], R_world_sensor, atol=1e-9)
        np.testing.assert_allclose(b.p_world_sensor[k], R_wall @ T_base_sensor[:3, 3], atol=1e-9)
        np.testing.assert_allclose(b.gravity_in_sensor[k], R_world_sensor.T @ [0, 0, -G], atol=1e-9)
    for field in MOTION_FIELDS:
        np.testing.assert_allclose(getattr(b, field), getattr(a, field), atol=1e-12)

    ceiling = SensorKinematics(robot_urdf("fr3"), "ft_sensor", R_world_base=rot_x(math.pi))
    m = ceiling.compute(spec.q_home, np.zeros(7), np.zeros(7))
    np.testing.assert_allclose(m.gravity_in_sensor[0], [0.0, 0.0, -G], atol=1e-9)


def test_custom_gravity_vector() -> None:
    spec = get_robot("xarm6")
    g = (0.1, -0.2, -9.79)
    sk = SensorKinematics(robot_urdf("xarm6"), "ft_sensor", gravity_in_world=g)
    m = sk.compute(spec.q_home, np.zeros(6), np.zeros(6))
    np.testing.assert_allclose(m.R_world_sensor[0] @ m.gravity_in_sensor[0], g, atol=1e-12)


# ------------------------------------------------------------------ mount offset
def test_mount_offset_is_a_rigid_transfer_from_the_flange() -> None:
    spec = get_robot("xarm7")
    sk = SensorKinematics(mounted_urdf("xarm7"), "ft_sensor")
    traj = SineTrajectory(spec.q_home, np.random.default_rng(9))
    t = np.linspace(0.0, 2.0, 6)
    q, dq, ddq = (np.array([f(ti) for ti in t]) for f in (traj.q, traj.dq, traj.ddq))
    s = sk.compute(q, dq, ddq)
    f = sk.compute(q, dq, ddq, frame=spec.flange_frame)
    R_fs = rpy_matrix(MOUNT_RPY)
    r = MOUNT_XYZ  # sensor origin in the flange frame
    for k in range(len(t)):
        w, al = f.ang_vel_in_sensor[k], f.ang_acc_in_sensor[k]
        np.testing.assert_allclose(
            s.p_world_sensor[k] - f.p_world_sensor[k], f.R_world_sensor[k] @ r, atol=1e-12
        )
        np.testing.assert_allclose(s.R_world_sensor[k], f.R_world_sensor[k] @ R_fs, atol=1e-12)
        np.testing.assert_allclose(s.ang_vel_in_sensor[k], R_fs.T @ w, atol=1e-12)
        np.testing.assert_allclose(s.ang_acc_in_sensor[k], R_fs.T @ al, atol=1e-12)
        v_ref = R_fs.T @ (f.lin_vel_in_sensor[k] + np.cross(w, r))
        np.testing.assert_allclose(s.lin_vel_in_sensor[k], v_ref, atol=1e-12)
        a_ref = R_fs.T @ (f.lin_acc_in_sensor[k] + np.cross(al, r) + np.cross(w, np.cross(w, r)))
        np.testing.assert_allclose(s.lin_acc_in_sensor[k], a_ref, atol=1e-11)
        np.testing.assert_allclose(
            s.gravity_in_sensor[k], R_fs.T @ f.gravity_in_sensor[k], atol=1e-12
        )


def test_imu_frame_of_packaged_urdf() -> None:
    spec = get_robot("panda")
    sk = SensorKinematics(default_urdf_path("panda").read_text(), "ft_sensor")
    q = np.vstack([spec.q_home, spec.q_home + 0.3])
    R, p = sk.frame_pose(q, "imu_link", "ft_sensor")
    np.testing.assert_allclose(R, np.broadcast_to(np.eye(3), (2, 3, 3)), atol=1e-15)
    np.testing.assert_allclose(p, np.broadcast_to(DEFAULT_IMU_XYZ_IN_SENSOR, (2, 3)), atol=1e-15)


# ----------------------------------------------------------- frames and names
def test_frame_pose_and_add_frame() -> None:
    spec = get_robot("xarm6")
    sk = SensorKinematics(robot_urdf("xarm6"), "ft_sensor")
    assert sk.base_frame == "link_base"
    q = np.random.default_rng(4).uniform(-1.5, 1.5, (4, 6))
    R, p = sk.frame_pose(q, spec.flange_frame, sk.base_frame)
    for k in range(4):
        T = vendor_flange_pose("xarm6", q[k])
        np.testing.assert_allclose(R[k], T[:3, :3], atol=1e-9)
        np.testing.assert_allclose(p[k], T[:3, 3], atol=1e-9)
    # the inverse relation: base seen from the flange
    R_inv, p_inv = sk.frame_pose(q, sk.base_frame, spec.flange_frame)
    np.testing.assert_allclose(R_inv, np.transpose(R, (0, 2, 1)), atol=1e-12)
    np.testing.assert_allclose(p_inv, -np.einsum("nji,nj->ni", R, p), atol=1e-12)

    xyz, rpy = (0.0, 0.03, 0.12), (0.0, HALF_PI, 0.2)
    sk.add_frame("tcp", "ft_sensor", xyz, rpy)
    R_t, p_t = sk.frame_pose(q, "tcp", "ft_sensor")
    np.testing.assert_allclose(R_t, np.broadcast_to(rpy_matrix(rpy), (4, 3, 3)), atol=1e-12)
    np.testing.assert_allclose(p_t, np.broadcast_to(xyz, (4, 3)), atol=1e-12)
    m = sk.compute(q, np.ones_like(q), np.ones_like(q), frame="tcp")
    for k in range(4):
        T = vendor_flange_pose("xarm6", q[k]) @ homogeneous(rpy_matrix(rpy), xyz)
        np.testing.assert_allclose(m.p_world_sensor[k], T[:3, 3], atol=1e-9)
    sk.add_frame("tcp_child", "tcp", (0.0, 0.0, 0.01), (0.0, 0.0, 0.0))
    _, p_c = sk.frame_pose(q[:1], "tcp_child", "ft_sensor")
    np.testing.assert_allclose(p_c[0], np.array(xyz) + rpy_matrix(rpy) @ [0, 0, 0.01], atol=1e-12)
    with pytest.raises(ValueError, match="already exists"):
        sk.add_frame("tcp", "ft_sensor", xyz, rpy)
    with pytest.raises(ValueError, match="not in the robot description"):
        sk.add_frame("x", "no_such_frame", xyz, rpy)
    with pytest.raises(ValueError, match="not in the robot description"):
        sk.frame_pose(q, "no_such_frame", "link_base")


def test_map_joint_names() -> None:
    spec = get_robot("panda")
    sk = SensorKinematics(robot_urdf("panda"), "ft_sensor")
    rng = np.random.default_rng(0)
    names = [*spec.joint_names, "panda_finger_joint1", "panda_finger_joint2"]
    order = rng.permutation(len(names))
    msg_names = [names[i] for i in order]
    q = rng.normal(size=7)
    msg_position = np.array([np.r_[q, 0.01, 0.02][i] for i in order])
    idx = sk.map_joint_names(msg_names)
    np.testing.assert_array_equal(msg_position[idx], q)
    # works on a batch of messages too
    batch = np.vstack([msg_position, 2 * msg_position])
    np.testing.assert_array_equal(batch[:, idx], np.vstack([q, 2 * q]))

    missing = [n for n in msg_names if n != "panda_joint3"]
    with pytest.raises(ValueError, match="panda_joint3"):
        sk.map_joint_names(missing)
    with pytest.raises(ValueError, match="panda_joint5"):
        sk.map_joint_names([*msg_names, "panda_joint5"])


# ------------------------------------------------- vendor robot_description
HAND = """
  <joint name="panda_hand_joint" type="fixed">
    <parent link="panda_link8"/><child link="panda_hand"/>
    <origin xyz="0 0 0" rpy="0 0 -0.7853981633974483"/>
  </joint>
  <link name="panda_hand">
    <visual>
      <geometry><mesh filename="package://franka_description/meshes/visual/hand.dae"/></geometry>
    </visual>
    <collision>
      <geometry><mesh filename="package://franka_description/meshes/collision/hand.stl"/></geometry>
    </collision>
    <inertial><origin xyz="-0.01 0 0.03"/><mass value="0.73"/>
      <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.0025" iyz="0" izz="0.0017"/></inertial>
  </link>
  <link name="panda_leftfinger">
    <visual>
      <geometry><mesh filename="package://x/y.stl" scale="0.001 0.001 0.001"/></geometry>
    </visual>
  </link>
  <link name="panda_rightfinger">
    <visual>
      <origin rpy="0 0 3.14159"/><geometry><mesh filename="package://x/y.stl"/></geometry>
    </visual>
  </link>
  <joint name="panda_finger_joint1" type="prismatic">
    <parent link="panda_hand"/><child link="panda_leftfinger"/>
    <origin xyz="0 0 0.0584"/><axis xyz="0 1 0"/>
    <limit effort="100" lower="0.0" upper="0.04" velocity="0.2"/>
  </joint>
  <joint name="panda_finger_joint2" type="prismatic">
    <parent link="panda_hand"/><child link="panda_rightfinger"/>
    <origin xyz="0 0 0.0584"/><axis xyz="0 -1 0"/>
    <limit effort="100" lower="0.0" upper="0.04" velocity="0.2"/>
    <mimic joint="panda_finger_joint1"/>
  </joint>
  <transmission name="panda_tran1">
    <type>transmission_interface/SimpleTransmission</type>
    <joint name="panda_joint1">
      <hardwareInterface>hardware_interface/EffortJointInterface</hardwareInterface>
    </joint>
    <actuator name="panda_motor1"><mechanicalReduction>1</mechanicalReduction></actuator>
  </transmission>
  <gazebo reference="panda_link0"><material>Gazebo/White</material></gazebo>
  <ros2_control name="FrankaHardwareInterface" type="system">
    <hardware><plugin>franka_hardware/FrankaHardwareInterface</plugin></hardware>
    <joint name="panda_joint1">
      <command_interface name="effort"/><state_interface name="position"/>
    </joint>
  </ros2_control>
"""


def vendor_like_urdf(world_rpy: tuple[float, float, float] | None = None) -> str:
    """Our Panda URDF plus a hand with meshes, two finger joints and ros2_control/gazebo tags."""
    xml = robot_urdf("panda", sensor_xyz_in_flange=MOUNT_XYZ, sensor_rpy_in_flange=MOUNT_RPY)
    xml = re.sub(r"\s*<mujoco>.*</mujoco>", "", xml)
    extra = HAND
    if world_rpy is not None:
        r, p, y = world_rpy
        extra += f"""
  <link name="world"/>
  <joint name="virtual_joint" type="fixed">
    <parent link="world"/><child link="panda_link0"/><origin xyz="0 0 0" rpy="{r} {p} {y}"/>
  </joint>"""
    return xml.replace("</robot>", extra + "\n</robot>")


def test_vendor_like_robot_description() -> None:
    spec = get_robot("panda")
    xml = vendor_like_urdf()
    plain = SensorKinematics(mounted_urdf("panda"), "ft_sensor")

    everything = SensorKinematics(xml, "ft_sensor")
    fingers = ("panda_finger_joint1", "panda_finger_joint2")
    assert everything.joint_names == (*spec.joint_names, *fingers)

    shuffled = [spec.joint_names[i] for i in (3, 0, 6, 1, 5, 2, 4)]
    arm = SensorKinematics(xml, "ft_sensor", joint_names=shuffled)
    assert arm.joint_names == tuple(shuffled)
    traj = SineTrajectory(spec.q_home, np.random.default_rng(8))
    t = np.linspace(0.0, 1.5, 4)
    q, dq, ddq = (np.array([f(ti) for ti in t]) for f in (traj.q, traj.dq, traj.ddq))
    cols = [spec.joint_names.index(n) for n in shuffled]
    a = plain.compute(q, dq, ddq)
    b = arm.compute(q[:, cols], dq[:, cols], ddq[:, cols])
    zeros2 = np.zeros((len(t), 2))
    c = everything.compute(*(np.hstack([x, zeros2]) for x in (q, dq, ddq)))
    for other in (b, c):
        for field in a.__dataclass_fields__:
            np.testing.assert_allclose(getattr(other, field), getattr(a, field), atol=1e-12)

    # locked fingers sit at zero: rigid poses in the hand frame
    R, p = arm.frame_pose(q, "panda_leftfinger", "panda_hand")
    np.testing.assert_allclose(p, np.broadcast_to([0.0, 0.0, 0.0584], p.shape), atol=1e-12)
    # an open finger moves along its axis when the finger joint is driven
    q_open = np.hstack([q[:1], [[0.03, 0.03]]])
    _, p_open = everything.frame_pose(q_open, "panda_rightfinger", "panda_hand")
    np.testing.assert_allclose(p_open[0], [0.0, -0.03, 0.0584], atol=1e-12)

    idx = arm.map_joint_names([*spec.joint_names, *fingers])
    np.testing.assert_array_equal(idx, cols)


def test_urdf_root_tilt_equals_R_world_base() -> None:
    """A vendor description rooted at a tilted 'world' link acts like R_world_base."""
    spec = get_robot("panda")
    rpy = (0.4, -0.3, 0.2)
    rooted = SensorKinematics(
        vendor_like_urdf(world_rpy=rpy), "ft_sensor", joint_names=spec.joint_names
    )
    assert rooted.base_frame == "world"
    rotated = SensorKinematics(mounted_urdf("panda"), "ft_sensor", R_world_base=rpy_matrix(rpy))
    traj = SineTrajectory(spec.q_home, np.random.default_rng(2))
    q, dq, ddq = (np.array([f(ti) for ti in (0.0, 0.5)]) for f in (traj.q, traj.dq, traj.ddq))
    a, b = rooted.compute(q, dq, ddq), rotated.compute(q, dq, ddq)
    for field in a.__dataclass_fields__:
        np.testing.assert_allclose(getattr(a, field), getattr(b, field), atol=1e-12)


def test_continuous_joint_equals_revolute() -> None:
    spec = get_robot("xarm7")
    xml = mounted_urdf("xarm7")
    continuous_xml = xml
    for joint in ("joint1", "joint7"):
        continuous_xml = continuous_xml.replace(
            f'<joint name="{joint}" type="revolute">', f'<joint name="{joint}" type="continuous">'
        )
    assert continuous_xml.count('type="continuous"') == 2
    rev = SensorKinematics(xml, "ft_sensor")
    cont = SensorKinematics(continuous_xml, "ft_sensor")
    assert cont.model.nq == 9 and cont.model.nv == 7  # (cos, sin) for each continuous joint
    traj = SineTrajectory(spec.q_home, np.random.default_rng(6))
    q, dq, ddq = (np.array([f(ti) for ti in (0.0, 0.8, 1.6)]) for f in (traj.q, traj.dq, traj.ddq))
    q[:, 0] += np.array([4.0, -5.0, 7.5])  # beyond +-pi
    a, b = rev.compute(q, dq, ddq), cont.compute(q, dq, ddq)
    for field in a.__dataclass_fields__:
        np.testing.assert_allclose(getattr(b, field), getattr(a, field), atol=1e-12)


def test_single_sample_as_1d_arrays() -> None:
    spec = get_robot("fr3")
    sk = SensorKinematics(robot_urdf("fr3"), "ft_sensor")
    m = sk.compute(spec.q_home, np.zeros(7), np.zeros(7))
    assert m.R_world_sensor.shape == (1, 3, 3)
    for field in ("p_world_sensor", "lin_vel_in_sensor", "ang_vel_in_sensor",
                  "ang_acc_in_sensor", "lin_acc_in_sensor", "gravity_in_sensor"):
        assert getattr(m, field).shape == (1, 3)


# ------------------------------------------------------------------- rejections
def test_rejects_bad_descriptions_and_inputs() -> None:
    xml = robot_urdf("panda")
    with pytest.raises(ValueError, match="'tool0' is not in the robot description"):
        SensorKinematics(xml, "tool0")
    with pytest.raises(ValueError, match="joint9"):
        SensorKinematics(xml, "ft_sensor", joint_names=["panda_joint1", "joint9"])
    with pytest.raises(ValueError, match="more than once"):
        SensorKinematics(xml, "ft_sensor", joint_names=["panda_joint1", "panda_joint1"])
    with pytest.raises(ValueError, match="XML"):
        SensorKinematics("<robot name='x'><link name='a'>", "a")
    with pytest.raises(ValueError, match="rotation"):
        SensorKinematics(xml, "ft_sensor", R_world_base=np.diag([1.0, 1.0, -1.0]))
    with pytest.raises(ValueError, match="gravity_in_world"):
        SensorKinematics(xml, "ft_sensor", gravity_in_world=(0.0, -9.8))

    extra = """
  <link name="marker"/>
  <joint name="marker_joint" type="floating">
    <parent link="panda_link8"/><child link="marker"/>
  </joint>
  <link name="slider"/>
  <joint name="slider_joint" type="planar"><parent link="panda_link0"/><child link="slider"/>
    <axis xyz="0 0 1"/></joint>
"""
    multi = xml.replace("</robot>", extra + "</robot>")
    arm_joints = get_robot("panda").joint_names
    for joint in ("marker_joint", "slider_joint"):
        with pytest.raises(ValueError, match=f"1-DoF.*{joint}"):
            SensorKinematics(multi, "ft_sensor", joint_names=[*arm_joints, joint])
    # by default multi-DoF joints are locked at identity and the arm still works
    sk = SensorKinematics(multi, "marker")
    assert sk.joint_names == arm_joints
    _, p = sk.frame_pose(np.zeros(7), "marker", "panda_link8")
    np.testing.assert_allclose(p, 0.0, atol=1e-15)

    sk = SensorKinematics(xml, "ft_sensor")
    with pytest.raises(ValueError, match=r"\(N, 7\)"):
        sk.compute(np.zeros((3, 6)), np.zeros((3, 6)), np.zeros((3, 6)))
    with pytest.raises(ValueError, match="same number of rows"):
        sk.compute(np.zeros((3, 7)), np.zeros((2, 7)), np.zeros((3, 7)))
    with pytest.raises(ValueError, match="not in the robot description"):
        sk.compute(np.zeros(7), np.zeros(7), np.zeros(7), frame="nope")
