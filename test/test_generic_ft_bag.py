"""``replay`` of a Panda recorded with a generic F/T sensor: inputs found by their message types.

The recording is written from scratch with rosbags' own ``Writer`` and ROS 2 Jazzy message classes,
on the topics a user's ros2_control setup publishes (none of this package's or a preset's names):
``/joint_states`` (the arm joints and the gripper's fingers) and a
``geometry_msgs/WrenchStamped`` from ``/force_torque_sensor_broadcaster/wrench`` in the sensor's
frame. No robot description is recorded. The simulated sensor sits 3 cm above the flange, turned
45 degrees about its axis (the way F/T adapters often mount one), so a replay that assumed it at
the flange would be wrong: the mounting is the one thing the bag cannot tell.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
from pathlib import Path

import numpy as np
import pytest

from payload_estimator.cli import main
from payload_estimator.sim.mujoco_sim import simulate

JOINTS, WRENCH = "/joint_states", "/force_torque_sensor_broadcaster/wrench"
MOUNT_XYZ, MOUNT_RPY = (0.0, 0.0, 0.03), (0.0, 0.0, np.pi / 4)
PREFIX = "payload-estimator replay: "
EPOCH_NS = 1_731_000_000_000_000_000


def write_bag(path: Path, run, frame: str, wrench_topics: tuple[str, ...] = (WRENCH,)) -> Path:
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    ts = get_typestore(Stores.ROS2_JAZZY)
    T = ts.types
    Time, Header = T["builtin_interfaces/msg/Time"], T["std_msgs/msg/Header"]
    Vector3, Wrench = T["geometry_msgs/msg/Vector3"], T["geometry_msgs/msg/Wrench"]

    def header(t: float, frame_id: str):
        ns = EPOCH_NS + int(round(t * 1e9))
        return Header(stamp=Time(sec=ns // 10**9, nanosec=ns % 10**9), frame_id=frame_id)

    names = [*run.joint_names, "panda_finger_joint1", "panda_finger_joint2"]
    records = []
    for k, t in enumerate(run.joint_t):
        msg = T["sensor_msgs/msg/JointState"](
            header=header(t, ""), name=names, position=np.r_[run.joint_q[k], 0.04, 0.04],
            velocity=np.r_[run.joint_dq[k], 0.0, 0.0], effort=np.r_[run.joint_effort[k], 0.0, 0.0])
        records.append((t + 2e-4, JOINTS, msg))
    for k, t in enumerate(run.wrench_t):
        f, tau = run.wrench_in_sensor[k, :3], run.wrench_in_sensor[k, 3:]
        msg = T["geometry_msgs/msg/WrenchStamped"](
            header=header(t, frame),
            wrench=Wrench(force=Vector3(x=f[0], y=f[1], z=f[2]), torque=Vector3(x=tau[0], y=tau[1], z=tau[2])))
        records.extend((t + 3e-4, topic, msg) for topic in wrench_topics)
    records.sort(key=lambda r: r[0])
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        conns = {}
        for _, topic, msg in records:
            if topic not in conns:
                conns[topic] = writer.add_connection(topic, msg.__msgtype__, typestore=ts)
        for t, topic, msg in records:
            writer.write(conns[topic], EPOCH_NS + int(round(t * 1e9)), ts.serialize_cdr(msg, msg.__msgtype__))
    return path


def replay(bag: Path, out: Path, *args: str) -> tuple[int, dict | None, list[str]]:
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        rc = main(["replay", str(bag), "--json", "--no-plot", "--out", str(out), "--estimator", "ols", *args])
    return rc, json.loads(stdout.getvalue()) if rc == 0 else None, stderr.getvalue().splitlines()


@pytest.fixture(scope="module")
def mounted(tmp_path_factory):
    """(run, bag): the sensor 3 cm above the flange, turned 45 degrees; its frame ft_sensor."""
    run = simulate(robot="panda", payload="claw_hammer", duration=4.5, seed=7,
                   sensor_xyz_in_flange=MOUNT_XYZ, sensor_rpy_in_flange=MOUNT_RPY)
    return run, write_bag(tmp_path_factory.mktemp("ft") / "bag", run, "ft_sensor")


def assert_recovers(summary: dict, run) -> None:
    truth = run.payload_params  # in the sensor frame
    est = summary["estimate"]
    assert est["mass"] == pytest.approx(truth.mass, rel=0.01)
    assert np.linalg.norm(np.array(est["com"]) - truth.com) < 0.003


def test_the_first_replay_names_every_setting_to_give(mounted, tmp_path):
    """Before: the Panda preset's Franka topics were looked for, and the user found four settings by
    trial, none of the messages naming wrench_source. Now the one line gives them all, filled in
    from the bag, and asks for the mounting (which no bag holds); the command it gives works."""
    run, bag = mounted
    rc, _, err = replay(bag, tmp_path / "out")
    assert rc == 2 and len(err) == 1, err
    line = err[0]
    assert line.startswith(f"{PREFIX}error: {bag}: not recorded: /franka_robot_state_broadcaster/")
    assert f"read by their types: joint states on {JOINTS}, an F/T sensor's wrench on {WRENCH} (frame ft_sensor)" \
        in line
    assert "its frame ft_sensor is not in the robot description" in line and "panda_link8" in line
    given = re.search(r"run again with (.*) \(the origin of", line).group(1)
    assert given == (f"--set joint_states_topic={JOINTS} --set wrench_topic={WRENCH} --set wrench_source=ft_sensor "
                     "--set sensor_frame=ft_sensor --set 'sensor_xyz=[X,Y,Z]' --set 'sensor_rpy=[ROLL,PITCH,YAW]'")
    # the user fills in the mounting and runs the command as the line gives it
    filled = given.replace("X,Y,Z", ",".join(map(str, MOUNT_XYZ))).replace(
        "ROLL,PITCH,YAW", ",".join(map(str, MOUNT_RPY)))
    rc, s, err = replay(bag, tmp_path / "out", *shlex.split(filled))
    assert rc == 0, err
    assert not any("read by their types" in w for w in err)  # everything was given
    assert s["robot"] == "panda" and s["settings"] == "panda preset (from the joint names recorded)"
    assert s["messages"]["joint_states"] == len(run.joint_t) and s["messages"]["wrench"] == len(run.wrench_t)
    assert s["sensor_frame"] == "ft_sensor" and s["flange_frame"] == "panda_link8"
    assert_recovers(s, run)


def test_with_the_mounting_alone_the_topics_are_found_and_said(mounted, tmp_path):
    run, bag = mounted
    rc, s, err = replay(bag, tmp_path / "out", "--set", "sensor_xyz=[0,0,0.03]",
                        "--set", f"sensor_rpy=[0,0,{np.pi / 4!r}]")
    assert rc == 0, err
    found = [w for w in err if "read by their types" in w]
    assert found == [f"{PREFIX}warning: not recorded: /franka_robot_state_broadcaster/measured_joint_states, "
                     "/franka_robot_state_broadcaster/external_wrench_in_stiffness_frame; read by their types: "
                     f"joint states on {JOINTS}, an F/T sensor's wrench on {WRENCH} (frame ft_sensor), as with "
                     f"--set joint_states_topic={JOINTS} --set wrench_topic={WRENCH} --set wrench_source=ft_sensor "
                     "--set sensor_frame=ft_sensor"]
    assert s["settings"] == "panda preset (from the joint names recorded), inputs found by their types"
    assert found[0].removeprefix(PREFIX + "warning: ") in s["bag_warnings"]
    assert_recovers(s, run)


def test_the_mounting_matters(mounted, tmp_path):
    """Why the replay asks rather than assumes the sensor at the flange: with that guess the
    least-squares fit of this recording determines no mass at all."""
    run, bag = mounted
    rc, s, _ = replay(bag, tmp_path / "out", "--set", "sensor_xyz=[0,0,0]", "--set", "sensor_rpy=[0,0,0]")
    assert rc == 0
    assert s["estimate"]["mass"] is None or abs(s["estimate"]["mass"] - run.payload_params.mass) > 0.05


def test_a_sensor_frame_of_the_description_needs_nothing(tmp_path):
    """The wrench in panda_link8 (the flange: the sensor's frame is one the description has): the
    replay runs at once and says in one line what it took."""
    run = simulate(robot="panda", payload="claw_hammer", duration=4.5, seed=7)
    bag = write_bag(tmp_path / "bag", run, "panda_link8")
    rc, s, err = replay(bag, tmp_path / "out")
    assert rc == 0, err
    (found,) = [w for w in err if "read by their types" in w]
    assert found.endswith(f"--set joint_states_topic={JOINTS} --set wrench_topic={WRENCH} "
                          "--set wrench_source=ft_sensor --set sensor_frame=panda_link8")
    assert s["sensor_frame"] == "panda_link8"
    assert_recovers(s, run)


def test_several_wrench_topics_are_one_line_listing_them(tmp_path):
    run = simulate(robot="panda", payload="claw_hammer", duration=0.5, seed=1)
    bag = write_bag(tmp_path / "bag", run, "ft_sensor", ("/ft/raw", "/ft/filtered"))
    rc, _, err = replay(bag, tmp_path / "out")
    assert rc == 2 and len(err) == 1
    assert err[0] == (f"{PREFIX}error: {bag}: no /franka_robot_state_broadcaster/external_wrench_in_stiffness_frame "
                      "(geometry_msgs/msg/WrenchStamped), and several geometry_msgs/msg/WrenchStamped topics: "
                      "/ft/filtered, /ft/raw (choose with --set wrench_topic=TOPIC)")


def test_a_wrench_topic_given_alone_brings_its_source_and_frame(mounted, tmp_path):
    """``--set wrench_topic`` alone used to leave the preset's Franka source reading an F/T sensor."""
    _, bag = mounted
    rc, _, err = replay(bag, tmp_path / "out", "--set", f"wrench_topic={WRENCH}")
    assert rc == 2 and len(err) == 1
    assert "--set wrench_source=ft_sensor --set sensor_frame=ft_sensor --set 'sensor_xyz=[X,Y,Z]'" in err[0]


def test_another_robots_joint_states_are_not_taken(mounted, tmp_path):
    _, bag = mounted
    rc, _, err = replay(bag, tmp_path / "out", "--robot", "xarm7")
    assert rc == 2 and len(err) == 1
    assert err[0] == (f"{PREFIX}error: {bag}: no /xarm/joint_states (sensor_msgs/msg/JointState), and the joint "
                      f"states recorded ({JOINTS}) do not name the xarm7's arm joints (another robot? --robot or "
                      "--urdf)")


def test_calibrate_finds_the_joint_states_and_the_robot_too(tmp_path):
    """A recording of the unloaded arm (every joint moving: a calibration refuses less) on /joint_states."""
    run = simulate(robot="panda", payload="none", trajectory="thesis", duration=8.0, seed=1)
    bag = write_bag(tmp_path / "bag", run, "ft_sensor")
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(io.StringIO()):
        rc = main(["calibrate", str(bag), "--out", str(tmp_path / "cal.yaml"), "--json"])
    assert rc == 0
    s = json.loads(stdout.getvalue())
    assert s["joint_states_topic"] == JOINTS
    assert s["settings"] == ("panda joint-torque preset (from the joint names recorded), joint states found by "
                             f"their type on {JOINTS}")


def test_a_bag_without_joint_states_is_one_line_listing_its_topics(tmp_path):
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    ts = get_typestore(Stores.ROS2_JAZZY)
    bag = tmp_path / "chatter"
    with Writer(bag, version=9, storage_plugin=StoragePlugin.SQLITE3) as writer:
        conn = writer.add_connection("/chatter", "std_msgs/msg/String", typestore=ts)
        for k in range(10):
            msg = ts.types["std_msgs/msg/String"](data=f"hello {k}")
            writer.write(conn, EPOCH_NS + k * 10**7, ts.serialize_cdr(msg, "std_msgs/msg/String"))
    rc, _, err = replay(bag, tmp_path / "out")
    assert rc == 2 and err == [
        f"{PREFIX}error: {bag}: no /franka_robot_state_broadcaster/measured_joint_states (sensor_msgs/msg/JointState); "
        "no /franka_robot_state_broadcaster/external_wrench_in_stiffness_frame (geometry_msgs/msg/WrenchStamped); its "
        "topics: /chatter (std_msgs/msg/String)"]
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        assert main(["calibrate", str(bag), "--out", str(tmp_path / "cal.yaml")]) == 2
    assert stderr.getvalue().splitlines() == [
        f"payload-estimator calibrate: error: {bag}: no robot description, and neither a preset's joint-state topic "
        "nor its joint names recorded: name the robot with --robot, or give its URDF with --urdf FILE"]


def test_a_franka_wrench_under_another_namespace_keeps_its_source_and_an_imu_is_found(mounted):
    """find_inputs on the bag's joint states and topics as another recording would list them."""
    from payload_estimator.commands.bag_topics import find_inputs
    from payload_estimator.settings import Settings, settings_for_robot

    _, bag = mounted
    franka = "/fr3_left/franka_robot_state_broadcaster/external_wrench_in_stiffness_frame"
    topics = {JOINTS: ("sensor_msgs/msg/JointState", 4500), franka: ("geometry_msgs/msg/WrenchStamped", 4500),
              "/imu/data": ("sensor_msgs/msg/Imu", 4500)}
    panda = settings_for_robot("panda")
    changed, line = find_inputs(bag, topics, panda, set(), None)
    assert changed == {"joint_states_topic": JOINTS, "wrench_topic": franka}  # franka_stiffness already
    assert line.endswith(f"as with --set joint_states_topic={JOINTS} --set wrench_topic={franka} "
                         "--set wrench_source=franka_stiffness")
    imu = Settings.from_dict({**panda.to_dict(), "motion_source": "imu"})
    changed, line = find_inputs(bag, topics, imu, {"joint_states_topic", "wrench_topic"}, None)
    assert changed == {"imu_topic": "/imu/data"} and "the IMU on /imu/data" in line
    # the configured topics recorded: nothing to find
    recorded = {panda.joint_states_topic: ("sensor_msgs/msg/JointState", 1),
                panda.wrench_topic: ("geometry_msgs/msg/WrenchStamped", 1)}
    assert find_inputs(bag, recorded, panda, set(), None) == ({}, None)


@pytest.fixture(scope="module")
def ur5e_bag(tmp_path_factory):
    """(run, bag): a UR5e with the wrist wrench in tool0 on the UR driver's topics, no robot description."""
    run = simulate(robot="ur5e", payload="drill", duration=4.5, seed=3)
    return run, write_bag(tmp_path_factory.mktemp("ur") / "bag", run, "tool0")


def test_a_ur_recording_without_its_description_asks_which_ur(ur5e_bag, tmp_path):
    """The UR5e and UR10e share the driver's topics and joint names: the replay says so in one line and
    asks for --robot; given it, the payload is recovered in tool0."""
    run, bag = ur5e_bag
    rc, _, err = replay(bag, tmp_path / "out")
    assert rc == 2 and len(err) == 1, err
    assert err[0] == (f"{PREFIX}error: the joint states on {JOINTS} fit ur10e and ur5e alike: give --robot "
                      "(or record /robot_description)")
    rc, s, err = replay(bag, tmp_path / "out", "--robot", "ur5e")
    assert rc == 0, err
    assert s["robot"] == "ur5e" and s["sensor_frame"] == "tool0" and s["flange_frame"] == "tool0"
    assert_recovers(s, run)
