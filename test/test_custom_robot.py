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


@pytest.mark.slow
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


# ------------------------------------------------- simulating an arm known from its URDF alone


def _inertial(mass: float, com: str, i: float) -> str:
    return (f'<inertial><origin xyz="{com}" rpy="0 0 0"/><mass value="{mass}"/>'
            f'<inertia ixx="{i}" ixy="0" ixz="0" iyy="{i}" iyz="0" izz="{0.5 * i}"/></inertial>')


def _link(name: str, inertial: str = "") -> str:
    geometry = f'<geometry><mesh filename="package://bench_arm_description/meshes/{name}.stl"/></geometry>'
    return f'<link name="{name}">{inertial}<visual>{geometry}</visual><collision>{geometry}</collision></link>'


def _joint(name: str, kind: str, parent: str, child: str, xyz: str, axis: str, limit: str = "") -> str:
    return (f'<joint name="{name}" type="{kind}"><origin xyz="{xyz}" rpy="0 0 0"/><parent link="{parent}"/>'
            f'<child link="{child}"/><axis xyz="{axis}"/>{limit}</joint>')


def bench_arm_urdf() -> str:
    """A 6-DoF arm no preset knows: joints about y and z, a continuous last joint, a gripper finger
    beyond the flange, meshes (which the simulator cannot load) and ROS-only elements."""
    lim = '<limit lower="-2.9" upper="2.9" effort="{}" velocity="2.5"/>'
    parts = [_link("world"), _link("base", _inertial(4.0, "0 0 0.05", 0.02)),
             _joint("world_joint", "fixed", "world", "base", "0 0 0", "1 0 0")]
    chain = [("j1", "0 0 0.15", "0 0 1", 3.7, "0 0 0.05", 0.02, 150),
             ("j2", "0 0 0.10", "0 1 0", 8.4, "0 0 0.2", 0.12, 150),
             ("j3", "0 0 0.40", "0 1 0", 2.3, "0 0 0.15", 0.03, 150),
             ("j4", "0 0 0.35", "0 1 0", 1.2, "0 0 0.05", 0.004, 28),
             ("j5", "0 0 0.10", "0 0 1", 1.2, "0 0 0.05", 0.004, 28),
             ("j6", "0 0 0.10", "0 1 0", 0.25, "0 0 0.02", 0.0005, 28)]
    parent = "base"
    for name, xyz, axis, mass, com, inertia, effort in chain:
        kind, limit = ("continuous", f'<limit effort="{effort}" velocity="3.0"/>') if name == "j6" else \
            ("revolute", lim.format(effort))
        parts += [_link(f"{name}_link", _inertial(mass, com, inertia)),
                  _joint(name, kind, parent, f"{name}_link", xyz, axis, limit)]
        parent = f"{name}_link"
    parts += [_link("tool0"), _joint("tool0_joint", "fixed", parent, "tool0", "0 0 0.05", "1 0 0"),
              _link("finger", _inertial(0.1, "0 0 0.03", 1e-4)),
              _joint("finger_joint", "prismatic", "tool0", "finger", "0 0 0.02", "0 1 0",
                     '<limit lower="0" upper="0.04" effort="20" velocity="0.1"/>'),
              '<transmission name="t1"><type>transmission_interface/SimpleTransmission</type></transmission>',
              '<gazebo reference="base"><material>Gazebo/Grey</material></gazebo>']
    return '<?xml version="1.0"?>\n<robot name="bench_arm">' + "\n".join(parts) + "</robot>"


BENCH_HOME = (0.0, 0.5, 1.2, 1.44, 0.0, 0.0)  # elbow up, the flange pointing down


@pytest.fixture(scope="module")
def bench_arm():
    from payload_estimator.robots import RobotSpec

    return RobotSpec.from_urdf(bench_arm_urdf(), "tool0", acceleration=10.0, jerk=5000.0, q_home=BENCH_HOME)


def test_a_urdf_arm_spec_reads_its_joints_and_limits_from_the_urdf(bench_arm):
    from payload_estimator.errors import ConfigurationError
    from payload_estimator.robots import RobotSpec, robot_urdf
    from payload_estimator.sim.efforts import EffortModel

    spec = bench_arm
    assert spec.name == "bench_arm" and spec.base_frame == "world" and spec.flange_frame == "tool0"
    assert spec.joint_names == ("j1", "j2", "j3", "j4", "j5", "j6") and spec.wrist_joints == (3, 4, 5)
    np.testing.assert_array_equal(spec.tau_max, [150, 150, 150, 28, 28, 28])
    np.testing.assert_array_equal(spec.dq_max, [2.5] * 5 + [3.0])
    assert spec.q_min[0] == -2.9 and spec.q_max[0] == 2.9 and np.isinf(spec.q_min[5]) and np.isinf(spec.q_max[5])
    np.testing.assert_array_equal(spec.ddq_max, 10.0)
    assert spec.table is None and spec.parameters == {"robot": "", "flange_frame": "tool0"}
    assert detect_preset(spec.arm_urdf, ROBOT_NAMES) is None
    urdf = robot_urdf(spec, sensor_xyz_in_flange=(0.0, 0.0, 0.01), imu_xyz_in_sensor=(0.0, 0.0, 0.0))
    assert "mesh" not in urdf and "ft_sensor" in urdf and "imu_link" in urdf and "transmission" in urdf
    assert parse_description(urdf).chain_joints("ft_sensor") == spec.joint_names
    middle = RobotSpec.from_urdf(bench_arm_urdf(), "tool0", acceleration=10.0, jerk=5000.0)
    np.testing.assert_array_equal(middle.q_home, 0.0)
    with pytest.raises(ConfigurationError, match="not in the robot description"):
        RobotSpec.from_urdf(bench_arm_urdf(), "nowhere", acceleration=10.0, jerk=5000.0)
    with pytest.raises(ConfigurationError, match="q_home"):
        RobotSpec.from_urdf(bench_arm_urdf(), "tool0", acceleration=10.0, jerk=5000.0, q_home=(3.0,) * 6)
    with pytest.raises(ConfigurationError, match="jerk must be 6 positive numbers"):
        RobotSpec.from_urdf(bench_arm_urdf(), "tool0", acceleration=10.0, jerk=(1.0, 2.0))
    with pytest.raises(ConfigurationError, match="no effort limit of j1: give tau_max"):
        RobotSpec.from_urdf(bench_arm_urdf().replace('effort="150"', "", 1), "tool0", acceleration=1.0, jerk=1.0)
    with pytest.raises(ValueError, match="no default effort model for robot 'bench_arm'"):
        EffortModel.for_robot(spec)


def test_a_urdf_arm_holding_a_payload_at_rest_weighs_m_g(bench_arm):
    from payload_estimator.core.samples import STANDARD_GRAVITY
    from payload_estimator.sim.mujoco_model import robot_arm_model
    from payload_estimator.sim.trajectories import RampedSinusoids

    drill = get_payload(PAYLOAD)
    still = RampedSinusoids(np.array(BENCH_HOME), np.zeros(6), np.zeros(6), duration=1.0, name="still")
    exact = simulate(robot=bench_arm, payload=PAYLOAD, trajectory=still, duration=1.0, noise="none",
                     ft_bias=np.zeros(6), ft_drift=False)
    weight = drill.mass * STANDARD_GRAVITY
    assert exact.robot == "bench_arm" and exact.joint_names == bench_arm.joint_names
    assert exact.torque_clipped_steps == 0 and np.max(exact.tracking_error_max) < 1e-9
    np.testing.assert_allclose(np.linalg.norm(exact.wrench_in_sensor[:, :3], axis=1), weight, rtol=1e-9)
    f = exact.wrench_in_sensor[:, :3]  # the weight acts at the COM: tau = c x f
    np.testing.assert_allclose(exact.wrench_in_sensor[:, 3:], np.cross(drill.params.com, f), atol=1e-9)
    noisy = simulate(robot=bench_arm, payload=PAYLOAD, trajectory=still, duration=1.0, ft_bias=np.zeros(6),
                     ft_drift=False, seed=4)
    sigma = np.std(noisy.wrench_in_sensor[:, :3] - exact.wrench_in_sensor[:, :3], axis=0)
    mean = np.mean(noisy.wrench_in_sensor[:, :3], axis=0)
    assert np.all(sigma > 0.0)
    assert np.all(np.abs(mean - f[0]) < 4.0 * sigma / np.sqrt(len(noisy.wrench_t)))
    _, arm = robot_arm_model(bench_arm, drill)
    assert arm.model.njnt == 6  # the gripper finger is welded: only the arm moves


def test_a_urdf_arm_follows_the_wrist_motion(bench_arm):
    run = simulate(robot=bench_arm, payload=PAYLOAD, trajectory="wrist", duration=3.0, seed=1)
    assert run.torque_clipped_steps == 0 and np.max(run.tracking_error_max) < 1e-3
    wrist = np.ptp(run.true_q, axis=0)
    assert np.all(wrist[3:] > 0.05) and np.all(wrist[:3] < 1e-6)


@pytest.mark.parametrize("robot", ["panda", "xarm6"])
def test_a_built_in_arm_through_its_urdf_is_its_table(robot):
    """The URDF route is the table route: a built-in arm's spec read back from its own URDF gives
    the same limits and, simulated, the same run."""
    from payload_estimator.robots import RobotSpec, arm_urdf, get_robot
    from payload_estimator.sim.efforts import EffortModel

    table = get_robot(robot)
    spec = RobotSpec.from_urdf(arm_urdf(robot), table.flange_frame, acceleration=table.ddq_max,
                               jerk=table.dddq_max, q_home=table.q_home, wrist_joints=table.wrist_joints,
                               efforts=table.efforts)
    assert (spec.joint_names, spec.base_frame) == (table.joint_names, table.base_frame)
    for limit in ("q_min", "q_max", "dq_max", "tau_max"):
        np.testing.assert_array_equal(getattr(spec, limit), getattr(table, limit))
    kw = dict(payload="hammer", duration=1.5, seed=3, efforts=EffortModel.for_robot(spec))
    by_table, by_urdf = simulate(robot, **kw), simulate(spec, **kw)
    for name in ("true_q", "true_ddq", "joint_q", "joint_effort", "true_wrench_in_sensor", "wrench_in_sensor",
                 "imu_specific_force_in_imu"):
        np.testing.assert_allclose(getattr(by_urdf, name), getattr(by_table, name), rtol=0.0, atol=1e-12,
                                   err_msg=name)


@pytest.mark.slow
def test_demo_and_simulate_take_any_arm_from_its_urdf(tmp_path, capsys):
    """``--urdf FILE --flange-frame LINK``: an arm that is no preset is simulated and estimated end to end, and
    its simulated bag replays from the description it carries; bad input is one line, exit status 2."""
    import json

    from payload_estimator.cli import main
    from payload_estimator.sim.payloads import get_payload

    urdf = tmp_path / "bench_arm.urdf"
    urdf.write_text(bench_arm_urdf())
    truth = get_payload("claw_hammer")
    assert main(["demo", "--urdf", str(urdf), "--flange-frame", "tool0", "--duration", "6", "--no-plot",
                 "--out", str(tmp_path / "demo"), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["robot"] == "bench_arm" and summary["flange_frame"] == "tool0"
    assert summary["estimate"]["mass"] == pytest.approx(truth.mass, rel=0.01)
    bag = tmp_path / "bag"
    assert main(["simulate", "--urdf", str(urdf), "--flange-frame", "tool0", "--duration", "4", "--bag", str(bag)]) == 0
    capsys.readouterr()
    assert main(["replay", str(bag), "--set", "flange_frame=tool0", "--json", "--no-plot",
                 "--out", str(tmp_path / "replay")]) == 0
    replayed = json.loads(capsys.readouterr().out)
    assert replayed["robot"] == "" and replayed["robot_description"] == "bag"
    assert replayed["estimate"]["mass"] == pytest.approx(truth.mass, rel=0.02)
    for argv, words in ((["--urdf", str(urdf)], "--flange-frame"), (["--flange-frame", "tool0"], "--urdf"),
                        (["--urdf", str(urdf), "--flange-frame", "nowhere"], "nowhere"),
                        (["--urdf", str(tmp_path / "missing.urdf"), "--flange-frame", "tool0"], "missing.urdf")):
        status = main(["demo", *argv, "--out", str(tmp_path / "bad")])
        err = capsys.readouterr().err
        assert status == 2 and err.count("\n") == 1 and words in err, (argv, err)
