"""An arm that is no built-in preset, known only from its URDF: settings, stream and ``replay --urdf``.

The "lab arm" is the xArm 7 model with every vendor name changed (robot,
joints, flange), so nothing can recognise it as a preset; its recording is
written from scratch with rosbags' own Jazzy message classes, the way
``ros2 bag record`` stores a user's topics: joint states that also carry a
gripper joint, a 1 kHz F/T topic, and no ``robot_description`` in the bag.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from payload_estimator.cli import main
from payload_estimator.core.shapes import format_shape_spec
from payload_estimator.pipeline.build import arm_joint_names, build_stream, flange_frame
from payload_estimator.robots import ROBOT_NAMES, detect_preset, parse_description
from payload_estimator.settings import Settings, settings_for_robot
from payload_estimator.sim.mujoco_sim import simulate
from payload_estimator.sim.payloads import get_payload

PAYLOAD = "drill"


def lab_arm_urdf(xarm_urdf: str) -> str:
    urdf = re.sub(r'<robot name="[^"]*"', '<robot name="lab_arm"', xarm_urdf)
    urdf = re.sub(r'"joint(\d)"', r'"lab_j\1"', urdf)
    return urdf.replace('"link_eef"', '"lab_flange"')


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """(run, URDF path, bag path): 4.5 s of the lab arm holding the drill, recorded from scratch."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    root = tmp_path_factory.mktemp("lab_arm")
    run = simulate(robot="xarm7", payload=PAYLOAD, duration=4.5, seed=3)
    urdf_path = root / "lab_arm.urdf"
    urdf_path.write_text(lab_arm_urdf(run.urdf))

    ts = get_typestore(Stores.ROS2_JAZZY)
    T = ts.types
    Time, Header = T["builtin_interfaces/msg/Time"], T["std_msgs/msg/Header"]
    JointState, WrenchStamped = T["sensor_msgs/msg/JointState"], T["geometry_msgs/msg/WrenchStamped"]
    Wrench, Vector3 = T["geometry_msgs/msg/Wrench"], T["geometry_msgs/msg/Vector3"]
    epoch_ns = 1_731_000_000_000_000_000

    def header(t: float, frame: str):
        ns = epoch_ns + int(round(t * 1e9))
        return Header(stamp=Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000), frame_id=frame)

    names = [f"lab_j{i + 1}" for i in range(7)] + ["lab_gripper"]
    records = []
    for k, t in enumerate(run.joint_t):
        q = np.r_[run.joint_q[k], 0.02]
        msg = JointState(header=header(t, ""), name=names, position=q, velocity=np.zeros(8), effort=np.zeros(8))
        records.append((t + 2e-4, "/joint_states", msg))
    for k, t in enumerate(run.wrench_t):
        f, tau = run.wrench_in_sensor[k, :3], run.wrench_in_sensor[k, 3:]
        msg = WrenchStamped(header=header(t, "ft_sensor"),
                            wrench=Wrench(force=Vector3(x=f[0], y=f[1], z=f[2]),
                                          torque=Vector3(x=tau[0], y=tau[1], z=tau[2])))
        records.append((t + 3e-4, "/ft_sensor/wrench", msg))
    records.sort(key=lambda r: r[0])
    bag = root / "lab_bag"
    with Writer(bag, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        conns = {topic: writer.add_connection(topic, msgtype, typestore=ts)
                 for topic, msgtype in (("/joint_states", "sensor_msgs/msg/JointState"),
                                        ("/ft_sensor/wrench", "geometry_msgs/msg/WrenchStamped"))}
        for t, topic, msg in records:
            conn = conns[topic]
            writer.write(conn, epoch_ns + int(round(t * 1e9)), ts.serialize_cdr(msg, conn.msgtype))
    return run, urdf_path, bag


def test_the_lab_arm_is_no_preset_and_its_joints_come_from_the_chain_to_its_flange(lab):
    _, urdf_path, _ = lab
    urdf = urdf_path.read_text()
    assert detect_preset(urdf, ROBOT_NAMES) is None
    desc = parse_description(urdf)
    assert desc.root_link == "link_base"
    settings = settings_for_robot("", flange_frame="lab_flange")
    assert settings.robot == "" and flange_frame(settings) == "lab_flange"
    assert arm_joint_names(settings, urdf) == tuple(f"lab_j{i + 1}" for i in range(7))
    with pytest.raises(ValueError, match="flange_frame must be set"):
        build_stream(Settings(robot=""), urdf)
    with pytest.raises(ValueError, match="built-in robot preset"):
        Settings(robot="", use_builtin_description=True)


def test_replay_of_a_users_bag_with_the_urdf_alone(lab, tmp_path, capsys):
    run, urdf_path, bag = lab
    shape = format_shape_spec(get_payload(PAYLOAD).envelope)
    assert main(["replay", str(bag), "--urdf", str(urdf_path), "--set", "flange_frame=lab_flange",
                 "--shape", shape, "--out", str(tmp_path), "--no-plot", "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["robot"] == "" and "no preset" in s["settings"] and s["robot_description"] == "urdf file"
    assert s["flange_frame"] == "lab_flange" and s["accepted"]["joint_states"] == len(run.joint_t)
    truth = run.payload_params
    assert s["estimate"]["mass"] == pytest.approx(truth.mass, rel=0.02)
    assert np.linalg.norm(np.array(s["estimate"]["com"]) - truth.com) < 0.005
    assert s["mass_com_converged_after_s"] is not None and s["estimate"]["physically_consistent"]
    assert 'link="lab_flange"' in (tmp_path / "payload_inertial.urdf.xml").read_text() or \
        "lab_flange" in (tmp_path / "payload_inertial.urdf.xml").read_text()


def test_replay_says_what_an_unknown_arm_needs(lab, tmp_path, capsys):
    _, urdf_path, bag = lab
    assert main(["replay", str(bag), "--urdf", str(urdf_path), "--estimator", "ols", "--out", str(tmp_path)]) == 2
    assert "flange_frame" in capsys.readouterr().err


def test_chain_joints_leave_out_a_grippers_fingers_and_detection_reads_xml_not_text():
    from payload_estimator.robots import robot_urdf

    hand = """
  <link name="hand"/><link name="finger_left"/><link name="finger_right"/><link name="tcp"/>
  <joint name="hand_joint" type="fixed"><parent link="panda_link8"/><child link="hand"/></joint>
  <joint name="finger_joint1" type="prismatic"><parent link="hand"/><child link="finger_left"/>
    <axis xyz="0 1 0"/><limit lower="0" upper="0.04" effort="20" velocity="0.2"/></joint>
  <joint name="finger_joint2" type="prismatic"><parent link="hand"/><child link="finger_right"/>
    <axis xyz="0 -1 0"/><limit lower="0" upper="0.04" effort="20" velocity="0.2"/></joint>
  <joint name="tcp_joint" type="fixed"><parent link="hand"/><child link="tcp"/></joint>
</robot>"""
    urdf = robot_urdf("panda").replace("</robot>", hand)
    desc = parse_description(urdf)
    assert desc.chain_joints("tcp") == tuple(f"panda_joint{i}" for i in range(1, 8))
    assert set(desc.movable_joint_names) >= {"finger_joint1", "finger_joint2"}
    with pytest.raises(ValueError, match="not in the robot description"):
        desc.chain_joints("nowhere")
    # a comment that mentions another robot's joints does not fool the detection
    assert detect_preset("<robot name='x'><!-- <joint name='panda_joint1'/> --></robot>", ROBOT_NAMES) is None
    assert detect_preset("<robot", ROBOT_NAMES) is None
