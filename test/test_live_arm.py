"""The live arm: the batch simulator's physics, references swapped on the fly, braking to rest."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from payload_estimator.core.noise import get_noise
from payload_estimator.core.regressor import regressor
from payload_estimator.excitation.trajectory import PointTrajectory
from payload_estimator.pipeline.kinematics import SensorKinematics
from payload_estimator.robots import get_robot
from payload_estimator.sim.live_arm import FOLLOW, HOLD, STOP, LiveArm, LiveSamples
from payload_estimator.sim.mujoco_model import SENSOR_FRAME
from payload_estimator.sim.mujoco_sim import simulate
from payload_estimator.sim.payloads import get_payload
from payload_estimator.sim.trajectories import make_trajectory

QUIET = dict(noise="none", ft_bias=np.zeros(6), ft_drift=False)


@functools.cache
def wrist(robot: str, duration: float = 3.0):
    return make_trajectory("wrist", get_robot(robot), duration=duration)


def run_until(arm: LiveArm, t_end: float, chunk: float = 0.004) -> list[LiveSamples]:
    chunks = [arm.advance(t) for t in np.arange(arm.t + chunk, t_end, chunk)]
    return chunks + [arm.advance(t_end)]


def stack(chunks: list[LiveSamples], name: str) -> np.ndarray:
    return np.concatenate([getattr(c, name) for c in chunks])


def test_following_a_trajectory_from_its_start_is_the_batch_simulation():
    traj = wrist("panda", 1.5)
    run = simulate("panda", "claw_hammer", traj, duration=1.5, **QUIET)
    arm = LiveArm("panda", "claw_hammer", **QUIET)
    arm.follow(traj, t_start=0.0)
    chunks = run_until(arm, 1.5 - 1e-3, chunk=0.0037)  # chunks that do not line up with the samples
    t = stack(chunks, "joint_t")
    np.testing.assert_allclose(t, run.joint_t)
    np.testing.assert_allclose(stack(chunks, "true_q"), run.true_q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(stack(chunks, "true_ddq"), run.true_ddq, rtol=0, atol=1e-9)
    np.testing.assert_allclose(stack(chunks, "true_wrench_in_sensor"), run.true_wrench_in_sensor, rtol=0, atol=1e-9)
    assert np.ptp(stack(chunks, "true_q")[:, 6]) > 0.5  # it really moved


@pytest.mark.parametrize("robot, payload", [("xarm7", "drill"), ("panda", "claw_hammer")])
def test_measured_wrench_is_the_payloads_rigid_body_wrench_within_noise(robot, payload):
    arm = LiveArm(robot, payload, noise="moderate", seed=4)
    arm.follow(wrist(robot))
    chunks = run_until(arm, 3.0)
    # the wrench samples coincide with joint samples at 1 kHz
    assert np.array_equal(stack(chunks, "wrench_t"), stack(chunks, "joint_t"))
    kin = SensorKinematics(arm.urdf, SENSOR_FRAME, joint_names=arm.joint_names)
    motion = kin.compute(stack(chunks, "true_q"), stack(chunks, "true_dq"), stack(chunks, "true_ddq"))
    Y = regressor(motion.lin_acc_in_sensor, motion.ang_vel_in_sensor, motion.ang_acc_in_sensor,
                  motion.gravity_in_sensor)
    expected = Y @ get_payload(payload).params.phi
    residual = stack(chunks, "wrench_in_sensor") - stack(chunks, "ft_bias") - expected
    level = get_noise("moderate")
    std = np.array([level.force] * 3 + [level.torque] * 3)
    np.testing.assert_allclose(np.std(residual, axis=0) / std, 1.0, atol=0.1)
    assert np.all(np.abs(np.mean(residual, axis=0)) < 4 * std / np.sqrt(len(residual)))
    assert np.max(np.abs(expected[:, :3])) > 5.0  # a real load
    # the offset is a few percent of the weight, and drifts
    bias = stack(chunks, "ft_bias")
    assert 0 < np.max(np.abs(bias[:, :3])) < 0.2 * arm.truth.mass * 9.81 + 1
    assert np.max(np.abs(bias[-1] - bias[0])) > 0


def test_the_source_wrench_is_the_configured_convention():
    arm = LiveArm("xarm7", "drill", noise="low", seed=1)  # the xArm's sensor: its own frame
    samples = arm.advance(0.1)
    assert arm.wrench_frame_id != ""
    np.testing.assert_allclose(np.abs(samples.wrench), np.abs(samples.wrench_in_sensor), atol=1e-12)
    panda = LiveArm("panda", "claw_hammer", noise="none", ft_bias=np.zeros(6), ft_drift=False)
    at_rest = panda.advance(0.05)  # Franka: the external wrench, reaction sign, in the stiffness frame
    assert panda.wrench_frame_id != SENSOR_FRAME
    weight = panda.truth.mass * 9.80665
    np.testing.assert_allclose(np.linalg.norm(at_rest.wrench[:, :3], axis=1), weight, rtol=1e-6)


def test_holding_at_rest_keeps_the_pose_and_reads_the_weight():
    spec = get_robot("fr3")
    arm = LiveArm("fr3", "claw_hammer", **QUIET)
    assert arm.mode == HOLD and arm.finished
    chunks = run_until(arm, 0.5)
    q = stack(chunks, "true_q")
    np.testing.assert_allclose(q, np.tile(spec.q_home, (len(q), 1)), atol=1e-9)
    f = stack(chunks, "true_wrench_in_sensor")[:, :3]
    np.testing.assert_allclose(np.linalg.norm(f, axis=1), arm.truth.mass * 9.80665, rtol=1e-9)
    assert stack(chunks, "imu_t").size == 0


def test_swapping_the_reference_mid_motion_has_no_velocity_jump():
    arm = LiveArm("panda", "claw_hammer", **QUIET)
    arm.follow(wrist("panda"))
    before = run_until(arm, 1.5)
    q, dq, ddq = arm.reference()
    assert np.max(np.abs(dq)) > 0.2  # moving
    goal = q + np.array([0.0, 0.0, 0.0, 0.0, 0.2, -0.2, 0.3])
    # a controller's preemption: the new trajectory starts from the reference state now
    new = PointTrajectory([0.0, 1.5], [q, goal], [dq, np.zeros(7)], [ddq, np.zeros(7)])
    with pytest.raises(ValueError, match="rad from the current reference"):
        arm.follow(PointTrajectory([0.0, 1.0], [q + 0.1, goal]))
    arm.follow(new)
    assert arm.mode == FOLLOW and not arm.finished
    after = run_until(arm, 3.5)
    assert arm.finished
    chunks = before + after
    dq_meas = stack(chunks, "true_dq")
    q_ref = stack(chunks, "q_ref")
    # no jump: successive measured speeds differ by no more than the largest acceleration allows
    step = np.max(np.abs(np.diff(dq_meas, axis=0)))
    assert step < 1e-3 * (np.max(np.abs(stack(chunks, "true_ddq"))) + 1.0)
    dt = 1e-3
    assert np.max(np.abs(np.diff(q_ref, 2, axis=0))) < 2 * np.max(np.abs(stack(chunks, "true_ddq"))) * dt**2
    np.testing.assert_allclose(stack(after, "true_q")[-1], goal, atol=1e-4)
    # tracking error stays small through the swap
    assert np.max(np.abs(q_ref - stack(chunks, "true_q"))) < 2e-3
    state = arm.state()
    np.testing.assert_allclose(state.q_ref, goal, atol=1e-12)
    assert np.max(np.abs(state.tracking_error)) < 1e-4


def test_stop_brings_the_arm_to_rest_within_its_acceleration_limits():
    arm = LiveArm("xarm7", "drill", **QUIET)
    arm.follow(wrist("xarm7", 6.0))
    run_until(arm, 2.0)
    _, dq0, _ = arm.reference()
    assert np.max(np.abs(dq0)) > 0.2
    braking = arm.stop()
    assert arm.mode == STOP and not arm.finished
    t_stop = arm.t
    chunks = run_until(arm, t_stop + braking.duration + 0.5)
    assert arm.finished
    t = np.linspace(0.0, braking.duration, 500)
    _, dq_ref, ddq_ref = braking(t)
    np.testing.assert_allclose(dq_ref[0], dq0, atol=1e-12)  # continuous
    assert np.all(np.abs(ddq_ref) <= arm.ddq_max * (1 + 1e-6))
    dq = stack(chunks, "true_dq")
    assert np.max(np.abs(dq[-100:])) < 1e-4  # at rest
    q = stack(chunks, "true_q")
    np.testing.assert_allclose(q[-1], q[-100], atol=1e-6)
    # the measured motion respects the limits too (with the controller's small corrections)
    assert np.all(np.max(np.abs(stack(chunks, "true_ddq")), axis=0) <= 1.1 * arm.ddq_max)


def test_physics_does_not_depend_on_how_time_is_chunked():
    a = LiveArm("panda", "claw_hammer", noise="moderate", seed=2)
    b = LiveArm("panda", "claw_hammer", noise="moderate", seed=2)
    for arm in (a, b):
        arm.follow(wrist("panda"))
    qa = stack(run_until(a, 0.8, chunk=0.004), "true_q")
    qb = stack([b.advance(0.3), b.advance(0.3), b.advance(0.8)], "true_q")
    np.testing.assert_array_equal(qa, qb)
    assert b.advance(0.5).joint_t.size == 0  # time does not go back


def test_bad_arguments():
    with pytest.raises(ValueError, match="entries"):
        LiveArm("panda", q_start=[0.0, 0.0])
    with pytest.raises(ValueError, match="outside the joint limits"):
        LiveArm("panda", q_start=[10.0] * 7)
    with pytest.raises(ValueError, match="divide"):
        LiveArm("panda", rate_hz=1000.0, wrench_rate_hz=300.0, physics_rate_hz=1000.0)
