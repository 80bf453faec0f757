"""The speed limit where the payload is: at a tool's tip or a shape's farthest corner, not only at the flange.

Every speed here that a test holds against the limit is computed by pinocchio alone
(:func:`frame_point_speeds`: a frame added at each point), never by the code under test.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from frame_point_speed import frame_point_speeds

from payload_estimator.cli import main
from payload_estimator.errors import ConfigurationError
from payload_estimator.excitation import ArmLimits, ExcitationError, FourierExcitation, MotionLimits, check_trajectory
from payload_estimator.excitation.limits import DEFAULT_TOOL_LENGTH, flange_kinematics, point_speeds
from payload_estimator.excitation.trajectory import read_trajectory_csv
from payload_estimator.robots import get_robot, robot_urdf
from payload_estimator.settings import Settings
from payload_estimator.supervision.identify_plan import IdentifyGoal, motion_limits, payload_reach

TIP = np.array([0.0, 0.0, 0.15])
"""The issue's tool: 0.15 m along the flange's z axis."""
LIMIT = 0.25


def _excite(tmp_path, capsys, robot: str, *options: str) -> tuple[dict, np.ndarray, np.ndarray, np.ndarray]:
    """``excite`` from home (its summary, and the written motion at 1 kHz: t, q, central-difference dq)."""
    out = tmp_path / f"{robot}.csv"
    assert main(["excite", "--robot", robot, "--json", "--dt", "0.001", "--out", str(out), *options]) == 0
    summary = json.loads(capsys.readouterr().out)
    names, t, q = read_trajectory_csv(out)
    assert tuple(names) == get_robot(robot).joint_names
    return summary, t, q, np.gradient(q, t, axis=0)


def _speeds(robot: str, q: np.ndarray, dq: np.ndarray, points: np.ndarray) -> np.ndarray:
    spec = get_robot(robot)
    return frame_point_speeds(robot_urdf(robot), spec.flange_frame, spec.joint_names, q, dq, points)


# ------------------------------------------------------------ the speed of a point
def test_the_speed_of_a_point_is_pinocchios(rng):
    """``v + w x p`` in the flange's axes: as pinocchio's frame velocity of a frame at ``p``."""
    spec = get_robot("panda")
    q = spec.q_home + rng.uniform(-0.5, 0.5, (20, 7))
    dq = rng.uniform(-1.0, 1.0, (20, 7))
    points = np.vstack([np.zeros(3), TIP, rng.uniform(-0.3, 0.3, (3, 3))])
    motion = flange_kinematics("panda").compute(q, dq, np.zeros_like(dq))
    np.testing.assert_allclose(point_speeds(motion.lin_vel_in_sensor, motion.ang_vel_in_sensor, points),
                               _speeds("panda", q, dq, points), rtol=1e-9, atol=1e-12)


def test_the_check_names_the_fastest_point_and_where_it_is():
    spec = get_robot("panda")
    arm = ArmLimits.from_robot(spec)
    coefficients = np.zeros((2, 7))
    coefficients[0, 6] = 1.0  # the last joint alone: it turns the flange about its own z axis
    coefficients[0, 4] = 0.3
    motion = FourierExcitation(np.array(spec.q_home), coefficients, 3.0, 0.5)
    tool = MotionLimits(duration=3.0, max_tcp_speed=0.05, payload_points=((0.1, 0.0, 0.15),),
                        payload_label="the tool's tip")
    check = check_trajectory(motion, flange_kinematics("panda"), arm, spec.q_home, tool)
    assert check.peak_speed > check.peak_tcp_speed and check.fastest_point.tolist() == [0.1, 0.0, 0.15]
    assert check.fastest_point_name == "the tool's tip"
    assert any(v.startswith("the tool's tip (0.100, 0.000, 0.150 m in the TCP frame) moves at") for v in
               check.violations), check.violations
    assert check.summary()["fastest_point_xyz_m"] == [0.1, 0.0, 0.15]
    flange = check_trajectory(motion, flange_kinematics("panda"), arm, spec.q_home, replace(tool, payload_points=()))
    assert flange.peak_speed == flange.peak_tcp_speed == pytest.approx(check.peak_tcp_speed)
    assert flange.fastest_point_name == "the TCP" and flange.fastest_point.tolist() == [0.0, 0.0, 0.0]


def test_the_payload_points_are_checked_values():
    assert MotionLimits(payload_points=[[0, 0, 0.2]]).payload_points == ((0.0, 0.0, 0.2),)
    assert MotionLimits().payload_points == ()  # the library's default: the TCP alone
    with pytest.raises(ExcitationError, match="payload_points"):
        MotionLimits(payload_points=((0.0, float("nan"), 0.1),))
    with pytest.raises(ConfigurationError, match="payload_points"):
        MotionLimits().with_overrides(payload_points=0.1)
    kept = MotionLimits(payload_points=(tuple(TIP),)).with_overrides(duration=3.0)
    assert kept.payload_points == (tuple(TIP),) and kept.duration == 3.0


# ------------------------------------------------------------ the node's settings
def test_the_node_holds_the_limit_at_a_tool_tip_unless_a_shape_says_more(tmp_path):
    assert Settings().identify_tool_length == DEFAULT_TOOL_LENGTH == 0.15
    points, label = payload_reach(Settings())
    assert points == ((0.0, 0.0, 0.15),) and label == "the tip of the tool (identify_tool_length 0.15 m)"
    assert payload_reach(Settings(identify_tool_length=0.0))[0] == ()
    assert motion_limits(Settings(), IdentifyGoal()).payload_points == ((0.0, 0.0, 0.15),)
    with pytest.raises(ConfigurationError, match="identify_tool_length"):
        Settings(identify_tool_length=-0.1)
    # a shape set: the corners of its box, from the sensor frame (5 cm out, turned about z) into the flange's
    rod = Settings(payload_shape="box:0.02,0.04,0.3@0,0,0.15", sensor_xyz=[0.0, 0.0, 0.05],
                   sensor_rpy=[0.0, 0.0, np.pi / 2], identify_tool_length=1.0)
    points, label = payload_reach(rod)
    corners = np.array([[x, y, z] for x in (-0.02, 0.02) for y in (-0.01, 0.01) for z in (0.05, 0.35)])
    np.testing.assert_allclose(np.array(sorted(points)), corners, atol=1e-12)  # x and y swapped: the quarter turn
    assert label == "the payload (payload_shape)"
    R = np.array([[1.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, -1.0]])  # the stream's pose wins: a half turn
    flipped = np.array(payload_reach(rod, (R, np.zeros(3)))[0])
    assert flipped[:, 2].min() == pytest.approx(-0.3)
    cloud = tmp_path / "cloud.csv"
    np.savetxt(cloud, np.vstack([np.random.default_rng(1).uniform(-0.02, 0.02, (50, 3)), [[0.0, 0.0, 0.4]]]),
               delimiter=",")
    far = np.array(payload_reach(Settings(payload_shape=f"points:{cloud}"))[0])
    assert len(far) < 51 and [0.0, 0.0, 0.4] in far.tolist()  # the hull's vertices, the farthest point among them
    with pytest.raises(ExcitationError, match="payload_shape"):
        payload_reach(Settings(payload_shape="mesh:/nonexistent.stl"))


# ------------------------------------------------------------ designed motions
@pytest.mark.slow
@pytest.mark.parametrize("robot", ["panda", "xarm7"])
def test_excite_keeps_the_tip_of_a_tool_below_the_limit(tmp_path, capsys, robot):
    """By default ``excite`` designs for a 0.15 m tool: its tip stays below 0.25 m/s; held at the flange
    alone (``--tool-length 0``), the flange runs near the limit and such a tool's tip beyond it."""
    summary, t, q, dq = _excite(tmp_path, capsys, robot)
    tip, flange = _speeds(robot, q, dq, np.array([TIP, np.zeros(3)])).max(axis=0)
    assert tip <= LIMIT and flange <= LIMIT
    assert summary["peak_speed_m_s"] == pytest.approx(max(tip, flange), abs=2e-3)
    if tip > flange:
        assert summary["fastest_point_xyz_m"] == pytest.approx(TIP.tolist())
        assert summary["fastest"].startswith("the tip of the tool (--tool-length 0.15 m) at (0.00, 0.00, 0.15) m in "
                                             "the flange frame: ")

    summary, t, q, dq = _excite(tmp_path, capsys, robot, "--tool-length", "0")
    tip, flange = _speeds(robot, q, dq, np.array([TIP, np.zeros(3)])).max(axis=0)
    assert 0.9 * LIMIT < flange <= LIMIT and summary["peak_speed_m_s"] == summary["peak_tcp_speed_m_s"]
    assert summary["fastest"].startswith("the flange: ")
    assert tip > LIMIT  # what the issue measured: 0.27 m/s (Panda), 0.32 m/s (xArm 7)


def test_excite_keeps_every_corner_of_a_shape_below_the_limit(tmp_path, capsys):
    rod = "box:0.04,0.04,0.3@0,0,0.15"  # a 30 cm rod along the flange's axis
    summary, t, q, dq = _excite(tmp_path, capsys, "xarm7", "--duration", "3", "--shape", rod)
    corners = np.array([[x, y, z] for x in (-0.02, 0.02) for y in (-0.02, 0.02) for z in (0.0, 0.3)])
    speeds = _speeds("xarm7", q, dq, corners).max(axis=0)
    assert np.max(speeds) <= LIMIT
    assert summary["fastest_point"] == "the payload (--shape)"
    assert summary["fastest_point_xyz_m"] in corners.tolist()
    assert summary["fastest_point_xyz_m"][2] == pytest.approx(0.3)  # the far end


def test_excite_takes_one_description_of_the_payload(capsys):
    with pytest.raises(SystemExit):
        main(["excite", "--tool-length", "0.1", "--shape", "sphere:0.05@0,0,0.1"])
    assert "not allowed with argument" in capsys.readouterr().err
    assert main(["excite", "--for", "calibration", "--tool-length", "0.1"]) == 2
    assert "--tool-length applies to --for payload" in capsys.readouterr().err
    assert main(["excite", "--shape", "box:1,2", "--duration", "2"]) == 2
    assert "--shape: box needs 3 sizes" in capsys.readouterr().err
