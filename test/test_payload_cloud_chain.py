"""A camera's cloud through the one chain (``pipeline/payload_cloud.py``): placed at its stamp, checked, applied.

Real Panda kinematics (pinocchio), real Jazzy PointCloud2 messages (rosbags' classes), the stream's own
PMD tracker. The arm moves between the cloud's capture and its use: the cloud must land where the payload
was in the sensor frame at its stamp, not where the frames are when it is used.
"""

from __future__ import annotations

import numpy as np
import pytest
from rosbags.typesys import Stores, get_typestore
from scipy.spatial.transform import Rotation

from payload_estimator.core.estimators import PointMassDiscretization
from payload_estimator.io.point_cloud2 import point_cloud2_layout
from payload_estimator.io.ros_inbound import feed_cloud, take_clouds
from payload_estimator.pipeline.build import build_stream, builtin_description
from payload_estimator.pipeline.payload_cloud import CLOUD, JointHistory, StaticFrames, transform
from payload_estimator.settings import Settings

TYPESTORE = get_typestore(Stores.ROS2_JAZZY)
T = TYPESTORE.types
CAMERA = "camera_optical_frame"
BOX_CENTRE_IN_SENSOR = np.array([0.0, 0.0, 0.08])  # centred on the gripper axis, as mirror_gripper takes it
BOX_SIZE = np.array([0.06, 0.08, 0.10])
T_WORLD_CAMERA = transform(Rotation.from_euler("xyz", [-2.2, 0.1, 1.4]).as_matrix(), np.array([0.9, 0.3, 0.7]))
T_WORLD_BASE = transform(Rotation.from_euler("z", 0.3).as_matrix(), np.array([0.1, -0.05, 0.0]))


def q_at(t):
    """Panda joint positions moving in time (rad)."""
    t = np.asarray(t, dtype=float).reshape(-1, 1)
    q0 = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8])
    return q0 + 0.4 * np.sin(0.8 * t + np.arange(7))


def box_surface(n_side=12):
    """Points on the surface of the payload box, in the sensor frame (m)."""
    g = np.linspace(-0.5, 0.5, n_side)
    a, b = (x.ravel() for x in np.meshgrid(g, g))
    faces = []
    for axis in range(3):
        for sign in (-0.5, 0.5):
            face = np.empty((len(a), 3))
            others = [i for i in range(3) if i != axis]
            face[:, axis], face[:, others[0]], face[:, others[1]] = sign, a, b
            faces.append(face)
    return np.concatenate(faces) * BOX_SIZE + BOX_CENTRE_IN_SENSOR


def cloud_msg(points, frame, t, **fields):
    layout = point_cloud2_layout(points, **fields)
    sec = int(np.floor(t))
    stamp = T["builtin_interfaces/msg/Time"](sec=sec, nanosec=int(round((t - sec) * 1e9)))
    return T["sensor_msgs/msg/PointCloud2"](
        header=T["std_msgs/msg/Header"](stamp=stamp, frame_id=frame),
        height=1, width=layout.width,
        fields=[T["sensor_msgs/msg/PointField"](name=f.name, offset=f.offset, datatype=f.datatype, count=f.count)
                for f in layout.fields],
        is_bigendian=False, point_step=layout.point_step, row_step=layout.row_step,
        data=np.frombuffer(layout.data, dtype=np.uint8), is_dense=layout.is_dense)


def tf_static():
    """world -> panda_link0 and world -> camera, as a /tf_static TFMessage."""
    def stamped(parent, child, T_):
        q = Rotation.from_matrix(T_[:3, :3]).as_quat()
        return T["geometry_msgs/msg/TransformStamped"](
            header=T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](sec=0, nanosec=0), frame_id=parent),
            child_frame_id=child,
            transform=T["geometry_msgs/msg/Transform"](
                translation=T["geometry_msgs/msg/Vector3"](x=T_[0, 3], y=T_[1, 3], z=T_[2, 3]),
                rotation=T["geometry_msgs/msg/Quaternion"](x=q[0], y=q[1], z=q[2], w=q[3])))
    return T["tf2_msgs/msg/TFMessage"](transforms=[stamped("world", "panda_link0", T_WORLD_BASE),
                                                     stamped("/world", CAMERA, T_WORLD_CAMERA)])


@pytest.fixture
def stream():
    settings = Settings(robot="panda", estimator="pmd")
    return build_stream(settings, builtin_description(settings))


def pmd_points(stream):
    (pmd,) = [e for e in stream.estimator.payload_estimators() if isinstance(e, PointMassDiscretization)]
    return pmd.points


def push_joints(stream, t0, t1, rate=200.0):
    t = np.arange(t0, t1, 1.0 / rate)
    stream.push_joint_states(t, q_at(t), names=stream.joint_names)


def camera_cloud_at(stream, t):
    """The box's points in the camera frame, as the camera saw them at ``t`` (the arm then at q_at(t))."""
    k = stream.kinematics
    R, p = k.frame_pose(q_at(t), k.sensor_frame, k.base_frame)
    T_camera_sensor = np.linalg.inv(T_WORLD_CAMERA) @ T_WORLD_BASE @ transform(R[0], p[0])
    pts = box_surface()
    return pts @ T_camera_sensor[:3, :3].T + T_camera_sensor[:3, 3]


def test_a_tripod_cameras_cloud_lands_where_the_payload_was_at_its_stamp(stream):
    static = StaticFrames()
    static.add_message(tf_static())
    stream.clouds.frame_lookup = static.lookup
    push_joints(stream, 0.0, 3.0)
    msg = cloud_msg(camera_cloud_at(stream, 1.25), CAMERA, 1.25)  # captured at 1.25 s, used at 3 s
    outcome = feed_cloud(stream, msg)
    assert outcome.applied, outcome.reason
    assert outcome.points == len(box_surface()) and outcome.point_masses == len(pmd_points(stream))
    points = pmd_points(stream)
    lo, hi = BOX_CENTRE_IN_SENSOR - BOX_SIZE / 2, BOX_CENTRE_IN_SENSOR + BOX_SIZE / 2
    assert np.all(points >= lo - 0.01) and np.all(points <= hi + 0.01)
    np.testing.assert_allclose(points.mean(axis=0), BOX_CENTRE_IN_SENSOR, atol=0.005)
    diagnostics = stream.diagnostics()
    assert diagnostics["shape_source"] == "cloud at t = 1.250 s" and diagnostics["clouds_applied"] == 1

    # the same points taken at the time of use (3 s) would not be the box: the check above can fail
    wrong = feed_cloud(stream, cloud_msg(camera_cloud_at(stream, 1.25), CAMERA, 2.9))
    assert not wrong.applied or not np.all(pmd_points(stream) <= hi + 0.01)


def test_a_cloud_in_a_frame_fixed_to_the_sensor_needs_no_joint_states(stream):
    k = stream.kinematics
    R, p = k.rigid_pose(k.sensor_frame, "panda_link8")
    in_flange = box_surface() @ R.T + p
    outcome = feed_cloud(stream, cloud_msg(in_flange, "panda_link8", 0.5))
    assert outcome.applied, outcome.reason
    np.testing.assert_allclose(pmd_points(stream).mean(axis=0), BOX_CENTRE_IN_SENSOR, atol=0.005)


def test_bad_clouds_are_refused_with_one_line_and_the_shape_is_kept(stream):
    static = StaticFrames()
    static.add_message(tf_static())
    stream.clouds.frame_lookup = static.lookup
    push_joints(stream, 0.0, 2.0)
    assert feed_cloud(stream, cloud_msg(camera_cloud_at(stream, 1.0), CAMERA, 1.0)).applied
    kept = pmd_points(stream).copy()
    cases = [
        (cloud_msg(camera_cloud_at(stream, 1.0), "tripod_cam", 1.0), "'tripod_cam' is neither in the robot"),
        (cloud_msg(camera_cloud_at(stream, 1.0), CAMERA, 7.0), "after the newest joint state"),
        (cloud_msg(camera_cloud_at(stream, 1.0), CAMERA, -9.0), "before the oldest joint state"),
        (cloud_msg(camera_cloud_at(stream, 1.0), "", 1.0), "names no frame"),
        (cloud_msg(np.full((20, 3), np.nan), CAMERA, 1.0), "has a finite position"),
        (cloud_msg(camera_cloud_at(stream, 1.0)[:, :0].reshape(-1, 3), CAMERA, 1.0), "empty cloud"),
        (cloud_msg(box_surface() * 10.0, "panda_link8", 1.0), "farther than 0.5 m"),
    ]
    for msg, expected in cases:
        outcome = feed_cloud(stream, msg)
        assert not outcome.applied and expected in outcome.reason and "\n" not in outcome.reason, outcome.reason
    np.testing.assert_array_equal(pmd_points(stream), kept)
    diagnostics = stream.diagnostics()
    assert diagnostics["clouds_refused"] == len(cases) and diagnostics["clouds_applied"] == 1
    assert "farther than 0.5 m" in diagnostics["cloud_refusal"]
    assert diagnostics["shape_source"] == "cloud at t = 1.000 s"
    assert stream.health.counts.get("cloud_refused") == len(cases)


def test_the_loop_applies_a_cloud_one_turn_later_with_the_joint_states_it_came_with(stream):
    k = stream.kinematics
    R, p = k.rigid_pose(k.sensor_frame, "panda_link8")
    msg = cloud_msg(box_surface() @ R.T + p, "panda_link8", 0.5)
    others = [("joint_states", object(), 0.0)]
    assert take_clouds(stream, [*others, (CLOUD, msg, 0.0)]) == others
    assert stream.diagnostics()["clouds_applied"] == 0
    assert take_clouds(stream, others) == others
    assert stream.diagnostics()["clouds_applied"] == 1


def test_the_joint_history_is_bounded_and_interpolated():
    history = JointHistory(span_s=2.0)
    for k in range(100):
        t = np.array([0.1 * k])
        history.add(t, np.array([[0.1 * k, -0.1 * k]]))
    assert history.span() == pytest.approx((7.9, 9.9))
    np.testing.assert_allclose(history.at(8.05), [8.05, -8.05])
    with pytest.raises(Exception, match="before the oldest"):
        history.at(1.0)
    history.add(np.array([0.5, 0.6]), np.array([[1.0, 2.0], [3.0, 4.0]]))  # the clock jumped back: a new history
    assert history.span() == pytest.approx((0.5, 0.6))
    np.testing.assert_allclose(history.at(0.55), [2.0, 3.0])
