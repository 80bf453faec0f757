"""The simulator's tripod camera (``sim/camera_feed.py``) through the estimator's cloud chain, without ROS.

A MuJoCo Panda run holding a claw hammer; the camera placed from the first pose, its pose on a stand-in of
/tf_static; clouds captured at two poses of the moving arm, published as real Jazzy PointCloud2 messages
(rosbags' classes), land on the hammer in the sensor frame.
"""

from __future__ import annotations

import numpy as np
import pytest

from payload_estimator.io import ros_factories, ros_outbound
from payload_estimator.io.interfaces import ros_typestore
from payload_estimator.io.ros_inbound import feed_cloud
from payload_estimator.pipeline.build import build_stream
from payload_estimator.pipeline.payload_cloud import StaticFrames
from payload_estimator.settings import settings_for_robot
from payload_estimator.sim.camera_feed import CAMERA_FRAME, PayloadCamera
from payload_estimator.sim.mujoco_sim import simulate
from payload_estimator.sim.payloads import get_payload

HAMMER = get_payload("claw_hammer")


@pytest.fixture(scope="module")
def run():
    return simulate(robot="panda", payload=HAMMER, duration=3.0, noise="low", seed=2, imu=False)


def test_the_cameras_clouds_land_on_the_payload_in_the_sensor_frame(run):
    make = ros_factories.rosbags_factory(ros_typestore())
    camera = PayloadCamera(run.urdf, run.sensor_frame, run.joint_names, HAMMER.envelope)
    placed = camera.place(run.joint_q[0])
    eye_to_gripper = np.linalg.norm(placed[:3, 3] - camera.T_base_sensor(run.joint_q[0])[:3, 3])
    assert 0.4 < eye_to_gripper < 0.7
    stream = build_stream(settings_for_robot("panda"), run.urdf)
    static = StaticFrames()
    link = camera.link_transform()
    static.add(link.parent, link.child, link.xyz, link.quat_xyzw)
    stream.clouds.frame_lookup = static.lookup
    stream.push_joint_states(run.joint_t, run.joint_q, names=run.joint_names)
    for k in (len(run.joint_t) // 3, 2 * len(run.joint_t) // 3):  # two poses of the moving arm
        view = camera.capture(run.joint_q[k])
        assert len(view.points_in_camera) > 500 and set(np.unique(view.part)) <= {0, 1}
        msg = ros_outbound.point_cloud2_msg(make, float(run.joint_t[k]), CAMERA_FRAME, view.points_in_camera,
                                            part=view.part.astype(np.int32))
        outcome = feed_cloud(stream, msg)
        assert outcome.applied, outcome.reason
        # the points the chain placed are where the camera saw the hammer, in the sensor frame
        seen_in_sensor = view.points_in_sensor
        placed_points = stream.clouds.pose(CAMERA_FRAME, float(run.joint_t[k]))
        moved = view.points_in_camera @ placed_points[:3, :3].T + placed_points[:3, 3]
        np.testing.assert_allclose(moved, seen_in_sensor, atol=1e-6)
    assert stream.diagnostics()["clouds_applied"] == 2
