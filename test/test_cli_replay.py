"""``payload-estimator replay``: simulated bags through the node's pipeline, end to end, and its errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from pypcd4 import PointCloud

from payload_estimator.cli import main
from payload_estimator.commands.replay import detect_robot
from payload_estimator.io.bag import STORAGES, bag_info
from payload_estimator.settings import settings_for_robot
from payload_estimator.sim.bag_writer import write_simulated_bag
from payload_estimator.sim.mujoco_sim import simulate

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def bags(tmp_path_factory):
    """4.5 s runs written as mcap and sqlite3: a Panda (franka_stiffness, sign -1, 1 kHz) and an
    xArm 7 (F/T sensor at 100 Hz)."""
    root = tmp_path_factory.mktemp("replay")
    runs = {
        "panda": simulate(robot="panda", payload="claw_hammer", duration=4.5, seed=7),
        "xarm7": simulate(robot="xarm7", payload="drill", duration=4.5, seed=7, wrench_rate_hz=100.0),
    }
    return {(robot, s): write_simulated_bag(run, root / f"{robot}_{s}", storage=s)
            for robot, run in runs.items() for s in STORAGES}


def replay_json(capsys, *args) -> dict:
    assert main(["replay", *map(str, args), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("robot, wrench_messages", [("panda", 4500), ("xarm7", 450)])
@pytest.mark.slow
def test_replay_recovers_the_payload_from_either_storage(bags, robot, wrench_messages, tmp_path, capsys):
    # converge_on=mass_com: what an xArm SetTcpLoad takes; the inertia of these short runs stays uncertain
    mcap = replay_json(capsys, bags[robot, "mcap"], "--out", tmp_path / "a", "--set", "converge_on=mass_com")
    sqlite = replay_json(capsys, bags[robot, "sqlite3"], "--out", tmp_path / "b", "--no-plot",
                         "--set", "converge_on=mass_com")
    for s in (mcap, sqlite):
        assert s["robot"] == robot and "from the bag's robot_description" in s["settings"]
        assert s["robot_description"] == "bag"
        assert s["messages"] == {"joint_states": 4500, "wrench": wrench_messages, "imu": 0}
        assert s["accepted"] == s["messages"]
        assert s["input_problems"] == {}
        assert s["errors_percent"]["mass"] < 1.0 and s["errors_percent"]["com"] < 5.0
        assert s["estimate"]["physically_consistent"] and s["converged"] and s["status"] == "ok"
    assert mcap["estimate"] == sqlite["estimate"]  # bit-identical: same messages, same order
    assert mcap["converged_after_s"] == sqlite["converged_after_s"]
    png = tmp_path / "a" / "convergence.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and sqlite["plot"] is None
    flange = "panda_link8" if robot == "panda" else "link_eef"
    assert f"'{flange}'" in (tmp_path / "b" / "payload_inertial.urdf.xml").read_text()


@pytest.mark.slow
def test_replay_tables_with_overrides(bags, tmp_path, capsys):
    assert main(["replay", str(bags["panda", "mcap"]), "--estimator", "wls", "--set", "cutoff_hz=8",
                 "--set", "publish_rate_hz=5", "--out", str(tmp_path), "--no-plot"]) == 0
    text = capsys.readouterr().out
    assert "Payload estimate (wls" in text and "truth" in text and "errors (Nadeau et al." in text
    assert "input problems: none" in text and "URDF <inertial> in 'panda_link8'" in text


@pytest.mark.slow
def test_replay_with_a_parameter_file_and_shape(bags, tmp_path, capsys):
    config = REPO / "config" / "xarm7.yaml"
    s = replay_json(capsys, bags["xarm7", "mcap"], "--config", config,
                    "--shape", "box:0.2,0.08,0.16@0.02,0,0.08", "--out", tmp_path, "--no-plot")
    assert s["settings"] == f"config {config}" and s["payload_shape"] == "box:0.2,0.08,0.16@0.02,0,0.08"
    assert s["errors_percent"]["mass"] < 2.0


def test_replay_counts_what_it_cannot_use(bags, tmp_path, capsys):
    # the wrench recorded in ft_sensor, but the configuration expects it in link_eef: all dropped
    assert main(["replay", str(bags["xarm7", "sqlite3"]), "--set", "wrench_frame=link_eef",
                 "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "no estimate" in err and "450 wrong_frame" in err


@pytest.mark.parametrize(
    "args, message",
    [
        (["{missing}"], "no such bag"),
        (["{file}"], "not a readable rosbag2"),
        (["{empty}"], "not a readable rosbag2"),
        (["{bag}", "--robot", "xarm7"], "no /xarm/joint_states"),
        (["{bag}", "--set", "cutof_hz=3"], "unknown setting(s): cutof_hz"),
        (["{bag}", "--set", "cutoff_hz"], "NAME=VALUE"),
        (["{bag}", "--set", "cutoff_hz=fast"], "cutoff_hz"),
        (["{bag}", "--shape", "pyramid:1"], "unknown shape kind"),
        (["{bag}", "--shape", "points:{scene}"], "scene.pcd: 1 of its 5 points are farther than 0.5 m from the sensor "
                                                 "origin (the farthest 1.15 m)"),
        (["{bag}", "--shape", "points:{file}"], "notes.txt: no rows of numbers"),
        (["{bag}", "--config", "{missing}"], "no such file"),
        (["{bag}", "--config", "{bad_yaml}"], "bad.yaml: not valid YAML: expected ',' or ']', but got '<stream end>' "
                                              "at line 3, column 1"),
        (["{bag}", "--config", "{file}"], "notes.txt: no 'payload_estimator: ros__parameters:' section"),
        (["{bag}", "--config", "{binary}"], "blob.yaml: not a text file"),
        (["{bag}", "--config", "{empty}"], "empty: a directory"),
        (["{bag}", "--robot", "ur5"], "argument --robot: invalid choice: 'ur5'"),
        (["{bag}", "--estimator", "magic"], "argument --estimator: invalid choice: 'magic'"),
    ],
)
def test_replay_errors_are_one_line_and_exit_2(bags, tmp_path, capsys, args, message):
    (tmp_path / "notes.txt").write_text("not a bag")
    (tmp_path / "empty").mkdir()
    (tmp_path / "bad.yaml").write_text("payload_estimator:\n  ros__parameters: {robot: [panda\n")
    (tmp_path / "blob.yaml").write_bytes(bytes(range(256)))
    scene = np.array([[0, 0, 0.1], [0.01, 0, 0.1], [0, 0.01, 0.1], [0, 0, 0.12], [0.9, -0.4, 0.6]], np.float32)
    PointCloud.from_xyz_points(scene).save(tmp_path / "scene.pcd")  # a payload's cloud and a point of the table
    paths = {"missing": tmp_path / "nope", "file": tmp_path / "notes.txt", "empty": tmp_path / "empty",
             "bag": bags["panda", "mcap"], "bad_yaml": tmp_path / "bad.yaml", "binary": tmp_path / "blob.yaml",
             "scene": tmp_path / "scene.pcd"}
    argv = ["replay", *(a.format(**paths) for a in args), "--out", str(tmp_path / "out")]
    try:
        status = main(argv)
    except SystemExit as exc:  # argparse's own errors (one line too: cli.OneLineErrorParser)
        status = exc.code
    assert status == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("payload-estimator replay: error:") and "\n" not in err
    assert message in err


def test_an_out_that_cannot_hold_files_fails_before_the_replay(bags, tmp_path, capsys, monkeypatch):
    """Before: the replay ran to the end, then writing the results raised FileExistsError (a traceback)."""
    import os

    from payload_estimator.io import bag as io_bag

    started = []
    real_iter = io_bag.BagReading.__iter__
    monkeypatch.setattr(io_bag.BagReading, "__iter__", lambda self: started.append(self) or real_iter(self))
    results = tmp_path / "results.txt"
    results.write_text("keep me")
    cases = [(results, "exists and is not a directory"), (results / "sub", "results.txt is not a directory")]
    if os.geteuid() != 0:  # root writes anywhere: a permission check cannot fail for root
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        cases.append((locked, "is not writable"))
    for out, message in cases:
        with pytest.raises(SystemExit) as exit_:
            main(["replay", str(bags["panda", "mcap"]), "--out", str(out), "--no-plot"])
        assert exit_.value.code == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and err.startswith("payload-estimator replay: error: argument --out: ")
        assert message in err
    assert started == [] and results.read_text() == "keep me"


def test_detect_robot():
    assert detect_robot('<robot name="fr3"><link name="base"/></robot>') == "fr3"
    xarm = '<robot name="UF_ROBOT">' + "".join(f'<joint name="joint{i}" type="revolute"/>' for i in range(1, 8))
    assert detect_robot(xarm + "</robot>") == "xarm7"
    assert detect_robot(xarm.replace('<joint name="joint7" type="revolute"/>', "") + "</robot>") == "xarm6"
    assert detect_robot('<robot name="arm"><joint name="panda_joint1"/></robot>') == "panda"
    assert detect_robot('<robot name="ur5"/>') is None and detect_robot(None) is None


def test_simulate_writes_a_bag(tmp_path, capsys):
    path = tmp_path / "sim"
    assert main(["simulate", "--bag", str(path), "--storage", "sqlite3", "--robot", "xarm6", "--duration", "0.5",
                 "--no-imu"]) == 0
    info = bag_info(path)
    settings = settings_for_robot("xarm6")
    assert info.topics[settings.joint_states_topic] == ("sensor_msgs/msg/JointState", 500)
    assert (path / "sim.db3").is_file()
    assert main(["simulate", "--bag", str(path), "--duration", "0.5"]) == 2
    assert "exists" in capsys.readouterr().err


@pytest.mark.parametrize("robot", ["panda", "xarm7"])
@pytest.mark.slow
def test_zero_phase_replay_is_at_least_as_accurate(bags, robot, tmp_path, capsys):
    causal = replay_json(capsys, bags[robot, "mcap"], "--out", tmp_path / "c", "--no-plot")
    offline = replay_json(capsys, bags[robot, "mcap"], "--out", tmp_path / "z", "--no-plot", "--zero-phase")
    assert offline["estimate"]["physically_consistent"]
    assert offline["errors_percent"]["mass"] < 1.0 and offline["errors_percent"]["com"] < 5.0
    assert offline["errors_percent"]["com"] <= causal["errors_percent"]["com"] + 0.5
    assert offline["estimate"]["samples_used"] > 300


@pytest.mark.slow
def test_a_shape_too_short_for_the_payload_is_not_handed_over(bags, tmp_path, capsys):
    """A shape that misses part of the payload: the Panda's claw hammer (28 cm, its head 10 cm wide)
    replayed with a 20 cm box that misses the head. The estimate must not look converged and consistent
    with its COM 59 mm off: the model fit is poor, nothing converges, no URDF fragment is written, and
    --force writes one marked as forced."""
    short = "box:0.1,0.04,0.2@0,0,0.1"
    s = replay_json(capsys, bags["panda", "mcap"], "--shape", short, "--out", tmp_path / "a", "--no-plot")
    assert s["estimate"]["model_fit"]["fit"] == "poor" and "shape" in s["estimate"]["model_fit"]["cause"]
    assert not s["converged"] and s["convergence"].startswith("model fit poor")
    assert s["status"].startswith("refused: ") and s["urdf_fragment"] is None
    assert not (tmp_path / "a" / "payload_inertial.urdf.xml").exists()
    forced = replay_json(capsys, bags["panda", "mcap"], "--shape", short, "--out", tmp_path / "b", "--no-plot",
                         "--force")
    assert forced["status"].startswith("forced: ") and forced["forced"] is True
    assert "<!-- FORCED: " in (tmp_path / "b" / "payload_inertial.urdf.xml").read_text()


@pytest.mark.slow
def test_replay_track_follows_the_payload(bags, tmp_path, capsys):
    """--track: the tracker runs inside the robot pipeline; a steady run has no change, and the
    summary lists the counts (contacts held out, if any, leave the mass right)."""
    s = replay_json(capsys, bags["panda", "mcap"], "--out", tmp_path / "t", "--no-plot", "--track",
                    "--set", "converge_on=mass_com")
    assert s["tracking"]["changes"] == 0 and isinstance(s["tracking"]["events"], list)
    assert s["errors_percent"]["mass"] < 1.0
    plain = replay_json(capsys, bags["panda", "mcap"], "--out", tmp_path / "p", "--no-plot", "--no-track")
    assert "tracking" not in plain
    assert main(["replay", str(bags["panda", "mcap"]), "--out", str(tmp_path / "q"), "--no-plot"]) == 0  # default
    assert "followed the payload: 0 change(s)" in capsys.readouterr().out


@pytest.mark.slow
def test_a_work_cycle_that_ends_on_an_empty_gripper_says_so_once(tmp_path, capsys):
    """The simulated work cycle ends with the gripper empty: the table shows no COM (not nan), and the
    model fit's cause is printed once, in the "not converged (...)" line, not again as a warning."""
    bag = tmp_path / "cycle"
    assert main(["simulate", "--bag", str(bag), "--scenario", "cycle", "--robot", "panda"]) == 0
    capsys.readouterr()
    assert main(["replay", str(bag), "--no-plot", "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "change at" in out  # the tracker followed the picks and places
    assert "+nan" not in out
    fit_causes = [line for line in out.splitlines() if "follow the motion" in line]
    assert len(fit_causes) <= 1, fit_causes
