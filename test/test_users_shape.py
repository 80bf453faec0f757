"""A user's bag and no shape configured: the default estimator's mass and COM are the data's, on every robot.

A user records the robot's own topics (joint states and the wrench, nothing of this package's: no
``/robot_description``, no ground truth, no IMU) and replays the bag without ``payload_shape``: the preset's
10 cm box stands in for a 28 cm claw hammer it cannot hold. The bags are written from scratch by rosbags'
``Writer`` with the messages of a MuJoCo run (the simulator's own bag, of which only the robot's topics are
copied), so neither the shape nor the truth travels with them.

Before: PMD's mass was 1.458 ± 0.651 kg for the 0.845 kg hammer on a Panda (+72 %; +84 % on an xArm 7) with
status ok and a URDF fragment written. Now the mass and COM are within 3 std of the shape-free estimate's
(and of the truth's 2 %), the model fit is poor and says why and what to set, the inertia, which came from
the wrong box, is not identified, and nothing is handed over.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pytest

from payload_estimator.cli import main
from payload_estimator.sim.payloads import get_payload

ROBOTS = ("panda", "fr3", "xarm7", "xarm6", "ur5e", "ur10e")
PAYLOAD = "claw_hammer"


def robot_topics_only(source: Path, target: Path) -> Path:
    """A rosbag2 of ``source``'s joint states and wrench only, written anew by rosbags' Writer."""
    from rosbags.highlevel import AnyReader
    from rosbags.rosbag2 import Writer
    from rosbags.typesys import Stores, get_typestore

    typestore = get_typestore(Stores.ROS2_JAZZY)
    kept_types = ("sensor_msgs/msg/JointState", "geometry_msgs/msg/WrenchStamped")
    with AnyReader([source]) as reader, Writer(target, version=9) as writer:
        connections = [c for c in reader.connections if c.msgtype in kept_types]
        assert len(connections) == 2, [c.topic for c in reader.connections]
        out = {c.id: writer.add_connection(c.topic, c.msgtype, typestore=typestore) for c in connections}
        for connection, stamp, raw in reader.messages(connections=connections):
            writer.write(out[connection.id], stamp, raw)
    return target


def replay_json(bag: Path, out: Path, *args: str) -> tuple[int, dict | None, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        rc = main(["replay", str(bag), "--json", "--no-plot", "--out", str(out), *args])
    return rc, json.loads(stdout.getvalue()) if rc == 0 else None, stderr.getvalue()


@pytest.mark.slow
@pytest.mark.parametrize("robot", ROBOTS)
def test_a_users_bag_without_a_shape_gives_the_datas_mass_and_says_the_shape_is_wrong(robot, tmp_path):
    simulated = tmp_path / "simulated"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["simulate", "--bag", str(simulated), "--robot", robot, "--payload", PAYLOAD,
                     "--duration", "8", "--seed", "3"]) == 0
    bag = robot_topics_only(simulated, tmp_path / "users")
    truth = get_payload(PAYLOAD).params

    rc, pmd, _ = replay_json(bag, tmp_path / "pmd", "--robot", robot)
    assert rc == 0 and pmd is not None
    rc, wls, _ = replay_json(bag, tmp_path / "wls", "--robot", robot, "--estimator", "wls")
    assert rc == 0 and wls is not None
    est, free = pmd["estimate"], wls["estimate"]
    assert est["estimator"] == "pmd" and pmd["truth"] is None
    # the data's mass and COM: within 2 % and 5 mm of the truth, within 3 std of the shape-free estimate
    assert est["mass"] == pytest.approx(truth.mass, rel=0.02)
    assert np.linalg.norm(np.array(est["com"]) - truth.com) < 0.005
    mass_std = np.hypot(est["mass_std"], free["mass_std"])
    assert abs(est["mass"] - free["mass"]) < 3.0 * mass_std
    com_std = np.hypot(est["com_std"], free["com_std"])
    assert np.all(np.abs(np.array(est["com"]) - np.array(free["com"])) < 3.0 * com_std + 1e-4)
    # said so, in words, with what to set; the box's inertia is nobody's; nothing handed over
    fit = est["model_fit"]
    assert fit["fit"] == "poor" and "the shape cannot hold the payload" in fit["cause"]
    assert "payload_shape" in fit["cause"] and "the mass and centre of mass given are the data's" in fit["cause"]
    assert est["identification"]["inertia"] == "not identified" and est["inertia_com"] is None
    assert est["physically_consistent"]
    assert not pmd["status"].startswith("ok") and pmd["urdf_fragment"] is None


@pytest.mark.slow
def test_a_shape_that_holds_the_payload_is_not_judged_wrong_on_a_short_users_bag(tmp_path):
    """The payload's own shape on an 8 s bag of the 3 kg vise (before: poor in 8 of 12 seeds, its COM's
    std from the data alone 0.01 mm where the fit itself was 0.18 mm off)."""
    simulated = tmp_path / "simulated"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["simulate", "--bag", str(simulated), "--robot", "panda", "--payload", "vise",
                     "--duration", "8", "--seed", "9"]) == 0
    from payload_estimator.core.shapes import format_shape_spec

    shape = format_shape_spec(get_payload("vise").envelope)
    rc, s, _ = replay_json(robot_topics_only(simulated, tmp_path / "users"), tmp_path / "out", "--robot", "panda",
                           "--shape", shape)
    assert rc == 0 and s is not None
    est = s["estimate"]
    assert est["model_fit"]["fit"] == "good", est["model_fit"]
    assert est["mass"] == pytest.approx(get_payload("vise").params.mass, rel=0.01)
    assert s["status"].startswith("ok"), s["status"]
