"""The simulator node's schedule and wrench conventions (ROS-free part), and the inverse wrench conversion."""

from __future__ import annotations

import numpy as np
import pytest

from payload_estimator.pipeline.build import build_stream
from payload_estimator.settings import settings_for_robot
from payload_estimator.sim.live import LiveRun


@pytest.fixture(scope="module")
def short_run():
    from payload_estimator.sim.mujoco_sim import simulate

    return simulate(robot="panda", payload="claw_hammer", duration=1.0, noise="low", seed=1)


def test_franka_wrench_is_published_as_the_robot_does(short_run):
    s = settings_for_robot("panda")
    live = LiveRun(short_run, s)
    assert live.wrench_frame_id == "panda_link8"
    # the estimator's own conversion brings it back to the sensor wrench
    stream = build_stream(s, short_run.urdf)
    assert np.array_equal(short_run.wrench_t, short_run.joint_t)  # same rate: q at the wrench instants is joint_q
    back = stream.wrench_in_sensor(np.hstack([live.wrench_force, live.wrench_torque]), short_run.joint_q)
    assert np.allclose(back, short_run.wrench_in_sensor, atol=1e-9)
    # sign -1: a hanging payload reads "up"
    assert np.allclose(live.wrench_force[0], -short_run.wrench_in_sensor[0, :3])


def test_franka_base_frame_source(short_run):
    s = settings_for_robot("panda", wrench_source="franka_base")
    live = LiveRun(short_run, s)
    assert live.wrench_frame_id == "panda_link0"
    stream = build_stream(s, short_run.urdf)
    back = stream.wrench_in_sensor(np.hstack([live.wrench_force, live.wrench_torque]), short_run.joint_q)
    assert np.allclose(back, short_run.wrench_in_sensor, atol=1e-9)


def test_schedule_loops_with_a_gap_and_holds(short_run):
    s = settings_for_robot("panda")
    live = LiveRun(short_run, s, loop=True, loop_gap_s=0.1)
    n = len(short_run.joint_t)
    first = live.due(0.5)
    assert np.array_equal(first["joint_states"].index, np.arange(0, 501))
    rest = live.due(live.period + 0.002)
    js = rest["joint_states"]
    assert js.index[0] == 501 and js.index[n - 501] == 0      # second pass starts over
    t = np.concatenate([first["joint_states"].t, js.t])
    gaps = np.diff(t)
    assert np.all(gaps > 0) and np.isclose(gaps.max(), 0.1 + 0.001)
    hold = LiveRun(short_run, s, loop=False)
    hold.due(10.0, max_backlog_s=100.0)
    d = hold.due(10.1)["joint_states"]
    assert len(d) == 100 and np.all(d.index == n - 1) and np.all(np.diff(d.t) > 0)


def test_backlog_is_capped(short_run):
    live = LiveRun(short_run, settings_for_robot("panda"))
    d = live.due(5.0, max_backlog_s=0.2)["joint_states"]
    assert len(d) == 200 and np.isclose(d.t[-1], 5.0, atol=1e-3)
