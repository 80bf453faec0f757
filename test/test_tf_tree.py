"""Link-to-link transforms for tf from pinocchio, checked against the kinematics used by the estimator."""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from payload_estimator.pipeline.kinematics import SensorKinematics
from payload_estimator.robots import get_robot, robot_urdf
from payload_estimator.sim.tf_tree import UrdfTransforms


def _chain(transforms, base, tip):
    """Compose parent->child transforms from base to tip."""
    by_child = {t.child: t for t in transforms}
    R, p = np.eye(3), np.zeros(3)
    path = []
    link = tip
    while link != base:
        t = by_child[link]
        path.append(t)
        link = t.parent
    for t in reversed(path):
        Rt = Rotation.from_quat(t.quat_xyzw).as_matrix()
        p = p + R @ t.xyz
        R = R @ Rt
    return R, p


def test_transforms_compose_to_the_forward_kinematics():
    for robot in ("panda", "xarm6"):
        spec = get_robot(robot)
        urdf = robot_urdf(robot, sensor_xyz_in_flange=(0.01, 0.0, 0.03), sensor_rpy_in_flange=(0, 0, 0.5),
                          imu_xyz_in_sensor=(0.0, 0.02, 0.01))
        tree = UrdfTransforms(urdf)
        assert set(spec.joint_names) <= set(tree.joint_names)
        q = np.linspace(-0.5, 0.7, spec.n_joints)
        moving = tree.moving(spec.joint_names, q)
        assert len(moving) == spec.n_joints
        R, p = _chain(tree.fixed() + moving, spec.base_frame, "imu_link")
        kin = SensorKinematics(urdf, "imu_link", spec.joint_names)
        R_ref, p_ref = kin.frame_pose(q[None, :], "imu_link", spec.base_frame)
        assert np.allclose(R, R_ref[0], atol=1e-9) and np.allclose(p, p_ref[0], atol=1e-9)


def test_unknown_joint_names_and_nan_are_ignored():
    tree = UrdfTransforms(robot_urdf("panda"))
    a = tree.moving(["gripper_finger", "panda_joint1"], [0.3, float("nan")])
    b = tree.moving([], [])
    assert all(np.allclose(x.quat_xyzw, y.quat_xyzw) for x, y in zip(a, b))
