"""rosbag2 without ROS: simulated runs written as Jazzy bags (mcap, sqlite3; ``sim.bag_writer``), read (``io.bag``).

What ``ros2 bag play`` relies on is checked on the files themselves:
metadata version, per-topic offered QoS, type hashes, integer-ns stamps and
record order. The wrench is checked to be the exact inverse of the stream's
conversion for every source convention.
"""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from payload_estimator.io import bag as rb
from payload_estimator.io.interfaces import interface_definitions, interface_root, ros_typestore, split_service
from payload_estimator.pipeline.build import stream_config
from payload_estimator.pipeline.kinematics import SensorKinematics
from payload_estimator.pipeline.wrench import wrench_to_sensor
from payload_estimator.settings import settings_for_robot
from payload_estimator.sim import bag_writer as sb
from payload_estimator.sim.mujoco_sim import simulate

EPOCH_NS = 1_700_000_000_000_000_000


# ------------------------------------------------------------------ interfaces


def test_interface_definitions_are_found_and_parse():
    from rosbags.typesys import get_types_from_msg

    defs = interface_definitions()
    assert set(defs) == {"payload_estimator/msg/PayloadEstimate", "payload_estimator/srv/ApplyEstimate",
                         "payload_estimator/srv/SaveUrdf", "payload_estimator/srv/Calibrate"}
    ours = defs["payload_estimator/msg/PayloadEstimate"]
    assert (interface_root() / "msg" / "PayloadEstimate.msg").read_text() == ours
    for name, text in defs.items():
        parts = split_service(text) if "/srv/" in name else (text,)
        for k, part in enumerate(parts):
            assert get_types_from_msg(part, f"payload_estimator/msg/Check{k}")  # valid .msg syntax
    request, response = split_service(defs["payload_estimator/srv/SaveUrdf"])
    assert "string path" in request and "string urdf" in response
    fields = dict(ros_typestore().fielddefs["payload_estimator/msg/PayloadEstimate"][1])
    assert {"header", "phi", "phi_covariance", "inertia_in_flange", "converged", "status"} <= set(fields)


# ------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def panda_run():
    return simulate(robot="panda", payload="claw_hammer", duration=1.0, seed=2)


@pytest.fixture(scope="module")
def xarm_run():
    return simulate(robot="xarm7", payload="drill", duration=1.0, seed=2, wrench_rate_hz=100.0, imu=False)


@pytest.fixture(scope="module")
def panda_bags(panda_run, tmp_path_factory):
    root = tmp_path_factory.mktemp("bags")
    return {s: sb.write_simulated_bag(panda_run, root / f"panda_{s}", storage=s) for s in rb.STORAGES}


# ------------------------------------------------------------------ contents


@pytest.mark.parametrize("storage", rb.STORAGES)
def test_bag_metadata_is_what_jazzy_expects(panda_bags, storage):
    meta = yaml.safe_load((panda_bags[storage] / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert meta["version"] == 9 and meta["storage_identifier"] == storage
    assert meta["starting_time"]["nanoseconds_since_epoch"] == EPOCH_NS
    topics = {t["topic_metadata"]["name"]: t for t in meta["topics_with_message_count"]}
    settings = settings_for_robot("panda")
    assert set(topics) == {settings.joint_states_topic, settings.wrench_topic, sb.DEFAULT_IMU_TOPIC,
                           rb.ROBOT_DESCRIPTION_TOPIC, rb.GROUND_TRUTH_TOPIC}
    for name, t in topics.items():
        md = t["topic_metadata"]
        assert md["serialization_format"] == "cdr" and md["type_description_hash"].startswith("RIHS01_")
        (qos,) = md["offered_qos_profiles"]
        latched = name in (rb.ROBOT_DESCRIPTION_TOPIC, rb.GROUND_TRUTH_TOPIC)
        assert qos["durability"] == ("transient_local" if latched else "volatile")
        assert qos["reliability"] == "reliable" and qos["history"] == "keep_last"
        assert qos["deadline"] == {"sec": 9223372036, "nsec": 854775807}  # infinite, as `ros2 bag record` writes it
    assert topics[settings.joint_states_topic]["message_count"] == 1000
    assert topics[rb.ROBOT_DESCRIPTION_TOPIC]["message_count"] == 1
    assert meta["custom_data"]["payload_estimator.robot"] == "panda"


def test_bag_info_description_and_truth(panda_bags, panda_run):
    info = rb.bag_info(panda_bags["mcap"])
    assert info.topics["/franka_robot_state_broadcaster/external_wrench_in_stiffness_frame"] == (
        "geometry_msgs/msg/WrenchStamped", 1000)
    assert info.start == pytest.approx(1.7e9) and info.duration == pytest.approx(0.9994, abs=1e-6)
    assert info.custom_data["payload_estimator.payload"] == "claw_hammer"
    assert info.custom_data["payload_estimator.payload_shape"].startswith("cylinder:")
    assert rb.bag_robot_description(panda_bags["sqlite3"]) == panda_run.urdf
    truth = rb.bag_ground_truth(panda_bags["mcap"])
    assert truth.frame_id == panda_run.sensor_frame == "ft_sensor"
    np.testing.assert_allclose(truth.params.phi, panda_run.payload_phi, rtol=1e-12, atol=1e-15)


def test_messages_carry_exact_stamps_and_come_in_record_order(panda_bags, panda_run):
    items = list(rb.read_bag(panda_bags["mcap"], settings_for_robot("panda")))
    assert [i.kind for i in items[:2]] == ["joint_states", "wrench"]
    assert {i.kind for i in items} == {"joint_states", "wrench"}  # the IMU is read only when configured
    record = np.array([i.record_time for i in items])
    assert np.all(np.diff(record) >= 0)
    joints = [i.msg for i in items if i.kind == "joint_states"]
    ns = np.array([m.header.stamp.sec * 10**9 + m.header.stamp.nanosec for m in joints], dtype=np.int64)
    np.testing.assert_array_equal(ns - EPOCH_NS, np.round(panda_run.joint_t * 1e9).astype(np.int64))
    first = joints[0]
    assert list(first.name) == list(panda_run.joint_names)
    np.testing.assert_array_equal(first.position, panda_run.joint_q[0])
    np.testing.assert_array_equal(first.velocity, panda_run.joint_dq[0])
    np.testing.assert_array_equal(first.effort, panda_run.joint_effort[0])
    assert items[0].record_time - 1.7e9 == pytest.approx(sb.RECORD_LATENCY_S["joint_states"], abs=1e-6)


def test_both_storages_hold_the_same_messages(panda_bags):
    settings = settings_for_robot("panda", imu_topic=sb.DEFAULT_IMU_TOPIC)
    a = list(rb.read_bag(panda_bags["mcap"], settings))
    b = list(rb.read_bag(panda_bags["sqlite3"], settings))
    assert len(a) == len(b) == 3000
    assert [(x.kind, x.record_time) for x in a] == [(y.kind, y.record_time) for y in b]
    imu = [x.msg for x in a if x.kind == "imu"]
    assert imu[0].header.frame_id == "imu_link" and imu[0].orientation_covariance[0] == -1.0
    for x, y in zip(a[::97], b[::97]):
        assert repr(x.msg) == repr(y.msg)


# --------------------------------------------------------------------- wrench


def _back_to_sensor(run, settings, wrench):
    """What the stream does with a source's wrench, at the run's joint positions."""
    cfg = stream_config(settings, run.urdf)
    conv = cfg.wrench.convention
    kin = SensorKinematics(run.urdf, run.sensor_frame, run.joint_names, extra_frames=cfg.extra_frames)
    q = np.column_stack([np.interp(run.wrench_t, run.joint_t, run.joint_q[:, j]) for j in range(run.n_joints)])
    R, _ = kin.frame_pose(q, conv.expressed_in, run.sensor_frame)
    _, p = kin.frame_pose(q, conv.reference_frame, run.sensor_frame)
    return wrench_to_sensor(wrench[:, :3], wrench[:, 3:], conv, R, p)


@pytest.mark.parametrize("source, frame", [("franka_stiffness", "panda_link8"), ("franka_base", "panda_link0")])
def test_franka_wrench_is_the_exact_inverse_of_the_streams_conversion(panda_run, source, frame):
    settings = settings_for_robot("panda", wrench_source=source, stiffness_frame="panda_link7")
    if source == "franka_stiffness":
        settings = settings.with_(stiffness_frame="")
    wrench, conv = sb.source_wrench(panda_run, settings)
    assert conv.expressed_in == frame and conv.sign == -1.0
    np.testing.assert_allclose(_back_to_sensor(panda_run, settings, wrench), panda_run.wrench_in_sensor,
                               rtol=1e-10, atol=1e-10)
    if source == "franka_base":  # really expressed in the base: the components change with the pose
        assert np.ptp(wrench[:, 2]) > 0.5
    else:  # K = the flange, which is the sensor here: just the reaction
        np.testing.assert_allclose(wrench, -panda_run.wrench_in_sensor, atol=1e-12)


def test_the_written_wrench_is_the_sources(panda_bags, panda_run):
    settings = settings_for_robot("panda")
    wrench, _ = sb.source_wrench(panda_run, settings)
    msgs = [i.msg for i in rb.read_bag(panda_bags["sqlite3"], settings) if i.kind == "wrench"]
    assert {m.header.frame_id for m in msgs} == {"panda_link8"}
    got = np.array([[m.wrench.force.x, m.wrench.force.y, m.wrench.force.z,
                     m.wrench.torque.x, m.wrench.torque.y, m.wrench.torque.z] for m in msgs])
    np.testing.assert_array_equal(got, wrench)


def test_xarm_ft_sensor_keeps_its_frame_rate_and_sign(xarm_run, tmp_path):
    settings = settings_for_robot("xarm7")
    wrench, conv = sb.source_wrench(xarm_run, settings)
    assert (conv.expressed_in, conv.sign) == ("ft_sensor", 1.0)
    np.testing.assert_array_equal(wrench, xarm_run.wrench_in_sensor)
    flipped, _ = sb.source_wrench(xarm_run, settings.with_(wrench_sign=-1.0))
    np.testing.assert_array_equal(flipped, -xarm_run.wrench_in_sensor)
    path = sb.write_simulated_bag(xarm_run, tmp_path / "xarm", storage="sqlite3")
    info = rb.bag_info(path)
    assert info.topics["/xarm/uf_ftsensor_raw_states"] == ("geometry_msgs/msg/WrenchStamped", 100)
    assert info.topics["/xarm/joint_states"] == ("sensor_msgs/msg/JointState", 1000)
    assert sb.DEFAULT_IMU_TOPIC not in info.topics  # the run has no IMU


# --------------------------------------------------------------------- errors


def test_reading_what_is_not_a_bag(tmp_path, panda_bags):
    settings = settings_for_robot("panda")
    with pytest.raises(rb.BagError, match="no such file"):
        rb.bag_info(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(rb.BagError, match="not a readable rosbag2"):
        rb.bag_info(tmp_path / "empty")
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(rb.BagError, match="not a readable rosbag2"):
        rb.read_bag(tmp_path / "notes.txt", settings)
    with pytest.raises(rb.BagError, match=r"no /xarm/joint_states.*its topics: .*/robot_description"):
        rb.read_bag(panda_bags["mcap"], settings_for_robot("xarm7"))
    with pytest.raises(rb.BagError, match="is std_msgs/msg/String, not geometry_msgs/msg/WrenchStamped"):
        rb.read_bag(panda_bags["mcap"], settings.with_(wrench_topic=rb.ROBOT_DESCRIPTION_TOPIC))


def test_writing_never_overwrites(panda_run, panda_bags):
    with pytest.raises(FileExistsError):
        sb.write_simulated_bag(panda_run, panda_bags["mcap"])
    with pytest.raises(ValueError, match="storage"):
        sb.write_simulated_bag(panda_run, panda_bags["mcap"].parent / "other", storage="bag")
