"""``replay`` with a camera's cloud of the payload in a bag: each cloud applied at its stamp, through the node's chain.

A real rosbag2 (mcap) written with rosbags: the simulated Panda's joint states and wrench (MuJoCo, a claw
hammer), ``/tf_static`` placing a camera on a tripod (world -> panda_link0, world -> camera), and a
``sensor_msgs/PointCloud2`` of the hammer in the camera's frame, captured while the arm moves; then a cloud in
a frame that is on no tf. The cloud topic is found by its type (the bag's only PointCloud2 topic).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from payload_estimator.cli import main
from payload_estimator.core.shapes import sample_parts
from payload_estimator.io import ros_factories, ros_outbound
from payload_estimator.pipeline.build import build_stream
from payload_estimator.settings import settings_for_robot
from payload_estimator.sim.bag_writer import _bag_content
from payload_estimator.sim.mujoco_sim import simulate
from payload_estimator.sim.payloads import get_payload

EPOCH = 1.7e9
CLOUD_TOPIC = "/camera/payload/points"
T_WORLD_BASE = (np.array([0.2, 0.1, 0.0]), Rotation.from_euler("z", 0.5))
T_WORLD_CAMERA = (np.array([1.1, -0.3, 0.9]), Rotation.from_euler("xyz", [-2.3, 0.1, 1.2]))
CAPTURED = (1.5, 2.5)
"""s of run time: the tripod camera's cloud, then the ghost camera's."""


def _matrix(pose):
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = pose[1].as_matrix(), pose[0]
    return T


def _tf(make, parent, child, pose, ns):
    q = pose[1].as_quat()
    return {"header": {"stamp": ros_factories.stamp_fields({"sec": ns // 10**9, "nanosec": ns % 10**9}),
                       "frame_id": parent}, "child_frame_id": child,
            "transform": {"translation": dict(zip("xyz", map(float, pose[0]))),
                          "rotation": dict(zip("xyzw", map(float, q)))}}


@pytest.fixture(scope="module")
def bag(tmp_path_factory):
    from rosbags.rosbag2 import StoragePlugin, Writer

    from payload_estimator.io.interfaces import ros_typestore

    payload = get_payload("claw_hammer")
    run = simulate(robot="panda", payload=payload, duration=4.5, noise="low", seed=7)
    settings = settings_for_robot("panda")
    typestore = ros_typestore(ours=False)
    make = ros_factories.rosbags_factory(typestore)
    epoch_ns = int(EPOCH * 1e9)
    records, topics = _bag_content(run, settings, make, epoch_ns)
    kinematics = build_stream(settings, run.urdf).kinematics
    hammer = sample_parts(payload.envelope, density=4e5, max_points=3000).points_in_sensor
    records.append((epoch_ns, "/tf_static", make("tf2_msgs/msg/TFMessage", {"transforms": [
        _tf(make, "world", "panda_link0", T_WORLD_BASE, epoch_ns),
        _tf(make, "world", "tripod_camera", T_WORLD_CAMERA, epoch_ns)]})))
    for t, frame in zip(CAPTURED, ("tripod_camera", "ghost_camera")):
        q = np.array([np.interp(t, run.joint_t, run.joint_q[:, j]) for j in range(run.joint_q.shape[1])])
        R, p = kinematics.frame_pose(q[None], kinematics.sensor_frame, kinematics.base_frame)
        T_base_sensor = np.eye(4)
        T_base_sensor[:3, :3], T_base_sensor[:3, 3] = R[0], p[0]
        T_camera_sensor = np.linalg.inv(_matrix(T_WORLD_CAMERA)) @ _matrix(T_WORLD_BASE) @ T_base_sensor
        in_camera = hammer @ T_camera_sensor[:3, :3].T + T_camera_sensor[:3, 3]
        ns = epoch_ns + int(round(t * 1e9))
        msg = ros_outbound.point_cloud2_msg(make, {"sec": ns // 10**9, "nanosec": ns % 10**9}, frame, in_camera)
        records.append((ns + int(0.3e9), CLOUD_TOPIC, msg))  # delivered 0.3 s after capture
    records.sort(key=lambda r: r[0])
    topics = {**{t: m for t, (m, _) in topics.items()}, "/tf_static": "tf2_msgs/msg/TFMessage",
              CLOUD_TOPIC: "sensor_msgs/msg/PointCloud2"}
    path = tmp_path_factory.mktemp("clouds") / "bag"
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        conns = {t: writer.add_connection(t, m, typestore=typestore) for t, m in topics.items()}
        for ns, topic, msg in records:
            writer.write(conns[topic], ns, typestore.serialize_cdr(msg, msg.__msgtype__))
    return path, run


def test_the_bags_clouds_are_applied_at_their_stamps(bag, tmp_path, capsys):
    path, run = bag
    rc = main(["replay", str(path), "--json", "--no-plot", "--out", str(tmp_path), "--estimator", "pmd"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    summary = json.loads(out.out)
    clouds = summary["clouds"]
    assert clouds["topic"] == CLOUD_TOPIC and clouds["chosen"] == "the bag's only PointCloud2 topic"
    assert clouds["messages"] == 2 and clouds["applied"] == 1 and clouds["refused"] == 1
    assert clouds["shape"] == f"cloud at t = {EPOCH + CAPTURED[0]:.3f} s"
    assert "'ghost_camera' is neither in the robot's description nor in tf" in clouds["last_refusal"]
    assert clouds["point_masses"] > 20
    truth = run.payload_params
    assert summary["estimate"]["mass"] == pytest.approx(truth.mass, rel=0.05)


def test_a_cloud_topic_the_bag_lacks_is_one_line(bag, tmp_path, capsys):
    path, _ = bag
    rc = main(["replay", str(path), "--json", "--no-plot", "--out", str(tmp_path), "--cloud-topic", "/nope"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1
    assert f"cloud topic /nope is not in the bag, not sensor_msgs/msg/PointCloud2; the bag's PointCloud2 topics: " \
           f"{CLOUD_TOPIC}" in err[0]
