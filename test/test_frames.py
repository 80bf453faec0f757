"""Frames the configuration needs, which ones the URDF lacks, and tf poses as extra frames."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from payload_estimator.pipeline.build import build_stream
from payload_estimator.pipeline.kinematics import SensorKinematics
from payload_estimator.robots import get_robot, parse_description, robot_urdf
from payload_estimator.settings import settings_for_robot
from payload_estimator.supervision.frames import extra_frame, frames_to_look_up, required_frames


def test_urdf_links_and_bad_xml():
    links = set(parse_description(robot_urdf("panda")).links)
    assert {"panda_link0", "panda_link8", "ft_sensor"} <= links
    with pytest.raises(ValueError, match="not valid XML"):
        parse_description("<robot")


def test_roles_of_each_wrench_source():
    urdf = robot_urdf("panda")
    s = settings_for_robot("panda")
    assert required_frames(s, urdf) == {"flange": "panda_link8", "sensor": "panda_link8",
                                        "wrench": "panda_link8", "wrench_reference": "panda_link8"}
    base = required_frames(s.with_(wrench_source="franka_base"), urdf)
    assert base["wrench"] == "panda_link0" and base["wrench_reference"] == "panda_link8"
    imu = required_frames(s.with_(motion_source="imu"), urdf, imu_frame="imu_from_msg")
    assert imu["imu"] == "imu_from_msg"
    assert frames_to_look_up(s, urdf) == []


def test_missing_frames_are_listed():
    urdf = robot_urdf("xarm7")
    s = settings_for_robot("xarm7", sensor_frame="my_ft", wrench_frame="my_ft_meas")
    assert frames_to_look_up(s, urdf) == ["my_ft", "my_ft_meas"]


def test_extra_frame_from_a_tf_pose_reproduces_the_pose():
    rpy = (0.1, -0.2, 0.3)
    q = Rotation.from_euler("xyz", rpy).as_quat()
    name, parent, xyz, rpy_out = extra_frame("ft", "panda_link8", [0.0, 0.0, 0.04], q)
    assert (name, parent) == ("ft", "panda_link8")
    assert np.allclose(xyz, [0, 0, 0.04]) and np.allclose(rpy_out, rpy)
    # the stream built with it has the sensor frame at that pose
    s = settings_for_robot("panda", sensor_frame="ft")
    stream = build_stream(s, robot_urdf("panda"), extra_frames=[(name, parent, xyz, rpy_out)])
    assert np.allclose(stream.p_flange_sensor, [0, 0, 0.04])
    assert np.allclose(stream.R_flange_sensor, Rotation.from_euler("xyz", rpy).as_matrix())
    with pytest.raises(ValueError):
        extra_frame("x", "y", [0, 0], q)


def test_rigid_pose():
    kin = SensorKinematics(robot_urdf("panda", sensor_xyz_in_flange=(0, 0, 0.05)), "ft_sensor",
                           get_robot("panda").joint_names)
    R, p = kin.rigid_pose("ft_sensor", "panda_link8")
    assert np.allclose(R, np.eye(3)) and np.allclose(p, [0, 0, 0.05])
    with pytest.raises(ValueError, match="moves relative"):
        kin.rigid_pose("ft_sensor", "panda_link0")
