"""The simulated arm's joint trajectory controller: what it refuses, follows, preempts and cancels."""

from __future__ import annotations

import numpy as np
import pytest

from payload_estimator.sim.live_arm import LiveArm
from payload_estimator.sim.trajectory_controller import (
    ABORTED,
    GOAL_TOLERANCE_VIOLATED,
    INVALID_GOAL,
    INVALID_JOINTS,
    OLD_HEADER_TIMESTAMP,
    PATH_TOLERANCE_VIOLATED,
    RUNNING,
    SUCCEEDED,
    GoalError,
    TrajectoryController,
    TrajectoryGoal,
)

QUIET = dict(noise="none", ft_bias=np.zeros(6), ft_drift=False)
WRIST = np.array([0.0, 0.0, 0.0, 0.0, 0.25, -0.3, 0.4])


def controller(**kw) -> TrajectoryController:
    return TrajectoryController(LiveArm("panda", "claw_hammer", **QUIET), **kw)


def wrist_goal(arm: LiveArm, T: float = 1.5, K: int = 31, **kw) -> TrajectoryGoal:
    """A small wrist motion out and back, sampled with velocities and accelerations (as ~/identify sends)."""
    t = np.linspace(0.0, T, K)
    s = np.sin(np.pi * t / T) ** 2
    ds = np.pi / T * np.sin(2 * np.pi * t / T)
    dds = 2 * (np.pi / T) ** 2 * np.cos(2 * np.pi * t / T)
    q0 = arm.reference()[0]
    return TrajectoryGoal(arm.joint_names, t, q0 + np.outer(s, WRIST), np.outer(ds, WRIST),
                          np.outer(dds, WRIST), **kw)


def run(ctl: TrajectoryController, until: float, dt: float = 0.02):
    progress = []
    while ctl.arm.t < until:
        ctl.arm.advance(ctl.arm.t + dt)
        progress.append(ctl.progress(ctl.arm.t))
    return progress


def test_a_goal_is_followed_and_succeeds_at_its_end():
    ctl = controller()
    arm = ctl.arm
    goal = wrist_goal(arm)
    traj = ctl.start(goal, arm.t)
    assert traj.duration == pytest.approx(1.5)
    progress = run(ctl, 1.0)
    assert progress[-1].status == RUNNING
    mid = progress[-1].state
    assert np.max(np.abs(mid.q - arm.reference(mid.t)[0])) < 1e-3  # tracking
    assert np.max(np.abs(mid.q - goal.positions[0])) > 0.1  # moving
    progress = run(ctl, 1.6)
    assert progress[-1].status == SUCCEEDED and progress[-1].code == 0
    assert not ctl.active
    np.testing.assert_allclose(arm.state().q, goal.positions[-1], atol=1e-4)


def test_joints_in_another_order_are_mapped():
    ctl = controller()
    goal = wrist_goal(ctl.arm)
    order = np.arange(7)[::-1]
    shuffled = TrajectoryGoal(tuple(np.array(goal.joint_names)[order]), goal.time_from_start,
                              goal.positions[:, order], goal.velocities[:, order], goal.accelerations[:, order])
    ctl.start(shuffled, 0.0)
    run(ctl, 0.75)
    np.testing.assert_allclose(ctl.arm.reference(0.75)[0], goal.positions[0] + WRIST, atol=1e-9)  # the peak


def test_positions_only_goal_starts_from_the_current_state():
    ctl = controller()
    arm = ctl.arm
    q0 = arm.reference()[0]
    goal = TrajectoryGoal(arm.joint_names, np.array([1.0, 2.0]), np.vstack([q0 + 0.5 * WRIST, q0 + WRIST]))
    ctl.start(goal, arm.t)
    progress = run(ctl, 2.1)
    assert progress[-1].status == SUCCEEDED
    np.testing.assert_allclose(arm.state().q, q0 + WRIST, atol=1e-4)


@pytest.mark.parametrize("change, code, message", [
    (dict(joint_names=("a",) * 7), INVALID_JOINTS, "twice"),
    (dict(joint_names=("panda_joint1", "x", "panda_joint3", "panda_joint4", "panda_joint5", "panda_joint6",
                       "panda_joint7")), INVALID_JOINTS, "unknown joints x; missing joints panda_joint2"),
    (dict(time_from_start=np.zeros(0), positions=np.zeros((0, 7)), velocities=None, accelerations=None),
     INVALID_GOAL, "no point"),
    (dict(time_from_start=np.r_[0.0, np.full(30, 1.0)]), INVALID_GOAL, "must increase"),
    (dict(velocities=np.zeros((31, 6))), INVALID_GOAL, "needs 7 velocities"),
    (dict(velocities=None), INVALID_GOAL, "accelerations without velocities"),
    (dict(start_time=-10.0), OLD_HEADER_TIMESTAMP, "ended"),
])
def test_bad_goals_are_refused_with_a_code_and_a_reason(change, code, message):
    ctl = controller()
    goal = wrist_goal(ctl.arm)
    fields = {k: getattr(goal, k) for k in ("joint_names", "time_from_start", "positions", "velocities",
                                             "accelerations", "start_time")}
    with pytest.raises(GoalError, match=message) as info:
        ctl.start(TrajectoryGoal(**{**fields, **change}), 0.0)
    assert info.value.code == code
    assert not ctl.active


def test_a_first_point_far_from_the_arm_is_refused():
    ctl = controller()
    arm = ctl.arm
    q0 = arm.reference()[0]
    with pytest.raises(GoalError, match="time 0 but 0.2 rad from the current position of panda_joint5") as info:
        ctl.start(TrajectoryGoal(arm.joint_names, np.array([0.0, 1.0]), np.vstack([q0 + [0, 0, 0, 0, 0.2, 0, 0],
                                                                                   q0])), 0.0)
    assert info.value.code == INVALID_GOAL
    with pytest.raises(GoalError, match="needs .* rad/s of panda_joint1"):
        ctl.start(TrajectoryGoal(arm.joint_names, np.array([0.1]), (q0 + [2.0, 0, 0, 0, 0, 0, 0])[None]), 0.0)
    with pytest.raises(GoalError, match="outside its limits"):
        ctl.start(TrajectoryGoal(arm.joint_names, np.array([5.0]), (q0 + [0, 0, 0, 0, 0, 0, 9.0])[None]), 0.0)


def test_a_new_goal_preempts_the_running_one_without_a_jump():
    ctl = controller()
    arm = ctl.arm
    ctl.start(wrist_goal(arm, T=2.0), 0.0)
    run(ctl, 0.7)
    _, dq, _ = arm.reference()
    assert np.max(np.abs(dq)) > 0.2
    q_before = arm.reference()[0]
    second = TrajectoryGoal(arm.joint_names, np.array([1.5]), (arm.reference()[0] - 0.5 * WRIST)[None],
                            np.zeros((1, 7)), np.zeros((1, 7)))
    ctl.start(second, arm.t)
    q_after, dq_after, _ = arm.reference()
    np.testing.assert_allclose(q_after, q_before, atol=1e-12)
    np.testing.assert_allclose(dq_after, dq, atol=1e-12)  # continuous velocity
    progress = run(ctl, arm.t + 1.6)
    assert progress[-1].status == SUCCEEDED
    np.testing.assert_allclose(arm.state().q, second.positions[0], atol=1e-4)


def test_cancel_brakes_to_rest_within_the_limits():
    ctl = controller()
    arm = ctl.arm
    ctl.start(wrist_goal(arm, T=2.0), 0.0)
    run(ctl, 0.6)
    at_rest = ctl.cancel()
    assert not ctl.active and at_rest > arm.t
    samples = []
    while arm.t < at_rest + 0.3:
        samples.append(arm.advance(arm.t + 0.02))
    dq = np.concatenate([s.true_dq for s in samples])
    ddq = np.concatenate([s.true_ddq for s in samples])
    assert np.max(np.abs(dq[-50:])) < 1e-4
    assert np.all(np.max(np.abs(ddq), axis=0) <= 1.1 * arm.ddq_max)
    assert arm.finished


def test_path_and_goal_tolerances():
    ctl = controller()
    arm = ctl.arm
    goal = wrist_goal(arm, path_tolerance={"panda_joint7": 1e-7})  # tighter than any tracking
    ctl.start(goal, 0.0)
    progress = run(ctl, 0.5)
    assert progress[-1].status == ABORTED and progress[-1].code == PATH_TOLERANCE_VIOLATED
    assert "panda_joint7" in progress[-1].message
    assert arm.mode == "stop"
    ctl2 = controller(goal_time_tolerance=0.1)
    goal = wrist_goal(ctl2.arm, goal_tolerance={"panda_joint6": 1e-9})
    ctl2.start(goal, 0.0)
    progress = run(ctl2, 1.8)
    assert progress[-1].status == ABORTED and progress[-1].code == GOAL_TOLERANCE_VIOLATED
