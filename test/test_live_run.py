"""The simulator node's schedule and wrench conventions (ROS-free part), and the inverse wrench conversion."""

from __future__ import annotations

import numpy as np
import pytest

from payload_estimator.pipeline.build import build_stream
from payload_estimator.pipeline.health import GAP
from payload_estimator.settings import settings_for_robot
from payload_estimator.sim.live import JOINTS, LOOP_GAP_S, WRENCH, LiveRun, ends_where_it_began, looping_trajectory


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


@pytest.fixture(scope="module")
def looping_run():
    """What the simulator node replays: the wrist motion, then back to its start."""
    from payload_estimator.sim.mujoco_sim import simulate

    trajectory = looping_trajectory("panda", "wrist", 3.0)
    return simulate(robot="panda", payload="claw_hammer", trajectory=trajectory, duration=trajectory.duration,
                    noise="moderate", seed=1)


def test_the_way_back_closes_the_motion():
    trajectory = looping_trajectory("panda", "thesis", 4.0, seed=3)
    assert 4.0 + 1.0 <= trajectory.duration < 4.0 + 5.0  # a way back of at least 1 s
    t = np.array([0.0, trajectory.duration, trajectory.duration + 1.0])
    q, dq, ddq = trajectory(t)
    np.testing.assert_allclose(q[1], q[0], atol=1e-12)
    np.testing.assert_allclose(q[2], q[0], atol=1e-12)  # held afterwards
    assert np.abs(dq).max() < 1e-12 and np.abs(ddq).max() < 1e-9
    # continuous where the way back begins (no step in q, dq or ddq)
    end = trajectory.trajectory.duration
    before, after = trajectory(np.array([end - 1e-6])), trajectory(np.array([end + 1e-6]))
    for a, b in zip(before, after):
        np.testing.assert_allclose(a, b, atol=1e-4)
    # no brisker than the motion itself
    _, dq_motion, ddq_motion = trajectory(np.linspace(0.0, end, 2001))
    _, dq_back, ddq_back = trajectory(np.linspace(end, trajectory.duration, 2001))
    assert np.all(np.abs(dq_back).max(axis=0) <= np.abs(dq_motion).max(axis=0) * 1.001 + 1e-12)
    assert np.all(np.abs(ddq_back).max(axis=0) <= np.abs(ddq_motion).max(axis=0) * 1.001 + 1e-12)
    # a motion that already ends where it began is left as it is
    assert type(looping_trajectory("panda", "pickplace", 20.0)).__name__ == "PickAndPlace"


def test_a_run_that_ends_where_it_began_loops_without_a_gap(looping_run, short_run):
    s = settings_for_robot("panda")
    assert ends_where_it_began(looping_run) and not ends_where_it_began(short_run)
    assert LiveRun(short_run, s).loop_gap_s == LOOP_GAP_S  # an open run keeps its pause
    live = LiveRun(looping_run, s)
    assert live.loop_gap_s == 0.0
    passes = 3.5
    stream = build_stream(s, looping_run.urdf)
    stamps = []
    for t_now in np.arange(0.01, passes * live.period, 0.01):  # the node's 10 ms turns
        due = live.due(float(t_now))
        joints, wrench = due[JOINTS], due[WRENCH]
        stamps.append(joints.t)
        stream.push_joint_states(1.7e9 + joints.t, looping_run.joint_q[joints.index],
                                 velocities=looping_run.joint_dq[joints.index], wall_time=float(t_now))
        stream.push_wrench(1.7e9 + wrench.t, live.wrench_force[wrench.index], live.wrench_torque[wrench.index],
                           frame_id=live.wrench_frame_id, wall_time=float(t_now))
        stream.process()
    t = np.concatenate(stamps)
    np.testing.assert_allclose(np.diff(t), 1.0 / looping_run.rate_hz, rtol=1e-6)  # one rate across the seams
    assert t[-1] > 3 * live.period
    assert GAP not in stream.health.counts, stream.health.counts
    # the F/T offsets end where they began (their net drift taken out along the run): no step in the wrench
    drift = looping_run.true_ft_bias[-1] - looping_run.true_ft_bias[0]
    assert np.max(np.abs(drift[:3])) > 0.01  # the simulated sensor drifts ...
    np.testing.assert_allclose(live.run.true_ft_bias[-1], live.run.true_ft_bias[0], atol=1e-12)  # ... and comes back
    np.testing.assert_allclose(live.run.wrench_in_sensor - looping_run.wrench_in_sensor,
                               live.run.true_ft_bias - looping_run.true_ft_bias, atol=1e-12)
    assert stream.diagnostics().get("payload_changes", 0) == 0  # one payload all along
