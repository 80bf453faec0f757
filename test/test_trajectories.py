"""Excitation trajectories: analytic derivatives, rest start, limits, TCP speed, Nadeau et al.'s speed.

References: central finite differences of the trajectories' own positions, and
of the flange position given by pinocchio's placements (for the TCP speed).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from payload_estimator.robots import ROBOT_NAMES, get_robot
from payload_estimator.sim.trajectories import (
    JOINT_SPEED_FRACTION,
    POSITION_MARGIN,
    TCP_SPEED_LIMIT,
    TRAJECTORY_KINDS,
    JointTrajectory,
    PaperWristSinusoids,
    PickAndPlace,
    ThesisSinusoids,
    flange_kinematics,
    make_trajectory,
    min_jerk,
    ramped_time,
    tcp_speed,
)

DURATION = 12.0


@functools.cache
def trajectory(robot: str, kind: str) -> JointTrajectory:
    return make_trajectory(kind, get_robot(robot), duration=DURATION)


def fine_grid(traj: JointTrajectory, rate_hz: float = 1000.0) -> np.ndarray:
    return np.linspace(0.0, traj.duration, int(traj.duration * rate_hz) + 1)


CASES = [(r, k) for r in ROBOT_NAMES for k in TRAJECTORY_KINDS]


# ---------------------------------------------------------------- building blocks
def test_min_jerk_blend_values_and_derivatives() -> None:
    s, ds, dds = min_jerk(np.array([-1.0, 0.0, 0.5, 1.0, 2.0]))
    np.testing.assert_allclose(s, [0.0, 0.0, 0.5, 1.0, 1.0], atol=1e-15)
    np.testing.assert_allclose(ds, [0.0, 0.0, 1.875, 0.0, 0.0], atol=1e-15)
    np.testing.assert_allclose(dds, [0.0, 0.0, 0.0, 0.0, 0.0], atol=1e-15)


@pytest.mark.parametrize("duration, ramp", [(10.0, 1.0), (1.5, 1.0)])
def test_ramped_time_derivatives_and_ends(duration: float, ramp: float) -> None:
    t = np.linspace(-0.5, duration + 0.5, 2001)
    h = 1e-6
    tau, dtau, ddtau = ramped_time(t, duration, ramp)
    tau_p, dtau_p, _ = ramped_time(t + h, duration, ramp)
    tau_m, dtau_m, _ = ramped_time(t - h, duration, ramp)
    np.testing.assert_allclose(dtau, (tau_p - tau_m) / (2 * h), atol=1e-7)
    np.testing.assert_allclose(ddtau, (dtau_p - dtau_m) / (2 * h), atol=1e-5)
    assert np.all(dtau >= 0.0) and np.all(dtau <= 1.0 + 1e-12)
    # rest before 0 and after the end; full speed in the middle when there is room
    assert np.all(np.abs(dtau[(t <= 0.0) | (t >= duration)]) <= 1e-15)  # dtau is dimensionless, O(1)
    if duration > 2 * ramp:
        mid = (t > ramp) & (t < duration - ramp)
        np.testing.assert_allclose(dtau[mid], 1.0)
        np.testing.assert_allclose(tau[-1], duration - ramp, rtol=1e-12)  # two half-speed blends lose `ramp`


# ------------------------------------------------------------------ each trajectory
@pytest.mark.parametrize("robot, kind", CASES)
def test_analytic_derivatives_match_finite_differences(robot: str, kind: str) -> None:
    traj = trajectory(robot, kind)
    rng = np.random.default_rng(7)
    t = np.concatenate([rng.uniform(0.0, traj.duration, 300), [0.3, 0.99, 1.01, traj.duration - 0.5]])
    h = 1e-5
    q, dq, ddq = traj(t)
    q_p, dq_p, _ = traj(t + h)
    q_m, dq_m, _ = traj(t - h)
    np.testing.assert_allclose(dq, (q_p - q_m) / (2 * h), atol=1e-7)
    np.testing.assert_allclose(ddq, (dq_p - dq_m) / (2 * h), atol=1e-5)


@pytest.mark.parametrize("robot, kind", CASES)
def test_starts_at_rest_at_home_and_is_continuous(robot: str, kind: str) -> None:
    spec = get_robot(robot)
    traj = trajectory(robot, kind)
    q, dq, ddq = traj(np.array([0.0]))
    np.testing.assert_allclose(q[0], spec.q_home, atol=1e-12)
    np.testing.assert_allclose(dq[0], 0.0, atol=1e-12)
    np.testing.assert_allclose(ddq[0], 0.0, atol=1e-12)
    # no jumps anywhere: consecutive samples 0.1 ms apart differ by at most dq_max * 0.1 ms
    t = np.arange(0.0, traj.duration + 1.0, 1e-4)
    q, dq, ddq = traj(t)
    assert np.max(np.abs(np.diff(q, axis=0))) < np.max(spec.dq_max) * 1e-4
    assert np.max(np.abs(np.diff(dq, axis=0))) < 50.0 * 1e-4  # |ddq| well under 50 rad/s²
    assert np.max(np.abs(np.diff(ddq, axis=0))) < 500.0 * 1e-4  # finite jerk: no acceleration steps


@pytest.mark.parametrize("robot, kind", CASES)
def test_joint_limits_respected(robot: str, kind: str) -> None:
    spec = get_robot(robot)
    traj = trajectory(robot, kind)
    q, dq, _ = traj(fine_grid(traj))
    assert np.all(q >= spec.q_min + POSITION_MARGIN - 1e-9)
    assert np.all(q <= spec.q_max - POSITION_MARGIN + 1e-9)
    assert np.all(np.abs(dq) <= JOINT_SPEED_FRACTION * spec.dq_max + 1e-9)


@pytest.mark.parametrize("robot, kind", CASES)
def test_tcp_speed_below_cobot_limit(robot: str, kind: str) -> None:
    spec = get_robot(robot)
    traj = trajectory(robot, kind)
    v = tcp_speed(spec, traj, fine_grid(traj))
    assert np.max(v) <= TCP_SPEED_LIMIT
    assert np.max(v) > 0.02  # it does move the TCP


@pytest.mark.parametrize("robot", ["panda", "xarm7"])
def test_tcp_speed_matches_finite_difference_of_flange_position(robot: str) -> None:
    spec = get_robot(robot)
    traj = trajectory(robot, "thesis")
    kin = flange_kinematics(robot)
    t = np.linspace(1.0, 5.0, 41)
    h = 1e-6
    _, p_plus = kin.frame_pose(traj(t + h)[0], spec.flange_frame, spec.base_frame)
    _, p_minus = kin.frame_pose(traj(t - h)[0], spec.flange_frame, spec.base_frame)
    v_fd = np.linalg.norm((p_plus - p_minus) / (2 * h), axis=1)
    np.testing.assert_allclose(tcp_speed(spec, traj, t), v_fd, atol=1e-7)


# ---------------------------------------------------------------- kind specifics
def _mean_flange_ang_speed(traj: PaperWristSinusoids, robot: str) -> float:
    t = np.linspace(traj.ramp, traj.duration - traj.ramp, 20001)
    q, dq, _ = traj(t)
    motion = flange_kinematics(robot).compute(q, dq, np.zeros_like(dq))
    return float(np.mean(np.linalg.norm(motion.ang_vel_in_sensor, axis=1)))


@pytest.mark.parametrize("robot", ["panda", "xarm7"])
@pytest.mark.parametrize("speed", [0.5, 1.0])
def test_wrist_mean_angular_speed_as_requested(robot: str, speed: float) -> None:
    traj = PaperWristSinusoids(get_robot(robot), mean_ang_vel=speed, duration=20.0)
    assert not traj.capped
    assert _mean_flange_ang_speed(traj, robot) == pytest.approx(speed, rel=0.01)


def test_wrist_moves_only_the_wrist_with_paper_amplitudes_and_ratios() -> None:
    spec = get_robot("panda")
    traj = trajectory("panda", "wrist")
    assert isinstance(traj, PaperWristSinusoids)
    q, _, _ = traj(fine_grid(traj))
    others = [i for i in range(spec.n_joints) if i not in spec.wrist_joints]
    np.testing.assert_array_equal(q[:, others], np.tile(spec.q_home[others], (len(q), 1)))
    np.testing.assert_allclose(traj.amplitude[list(spec.wrist_joints)], np.deg2rad(45.0))
    w = traj.omega[list(spec.wrist_joints)]
    np.testing.assert_allclose(w / w[0], [1.0, 1.3, 1.6])


def test_wrist_fast_request_is_capped_by_tcp_speed() -> None:
    spec = get_robot("panda")
    traj = PaperWristSinusoids(spec, mean_ang_vel=4.0, duration=12.0)
    assert traj.capped
    v = tcp_speed(spec, traj, fine_grid(traj))
    assert np.max(v) <= TCP_SPEED_LIMIT
    assert np.max(v) > 0.9 * TCP_SPEED_LIMIT  # capped at, not far below, the limit
    assert _mean_flange_ang_speed(traj, "panda") < 4.0


def test_thesis_frequencies_drawn_from_seed_within_range() -> None:
    spec = get_robot("panda")
    a = ThesisSinusoids(spec, seed=3, duration=6.0)
    b = ThesisSinusoids(spec, seed=3, duration=6.0)
    c = ThesisSinusoids(spec, seed=4, duration=6.0)
    np.testing.assert_array_equal(a.omega, b.omega)
    assert not np.allclose(a.omega, c.omega)
    assert np.all((a.omega_drawn >= 1.0) & (a.omega_drawn <= 5.0))
    # amplitude and frequency share the speed reduction s (each times sqrt(s))
    np.testing.assert_allclose(a.omega, a.omega_drawn * np.sqrt(a.speed_scale))
    np.testing.assert_allclose(a.amplitude, 0.3 * np.sqrt(a.speed_scale))
    assert 0.0 < a.speed_scale < 1.0  # 0.3 rad at up to 5 rad/s on every joint is too fast for a cobot


@pytest.mark.parametrize("robot", ROBOT_NAMES)
def test_pick_and_place_goes_down_and_up_with_the_flange_pointing_down(robot: str) -> None:
    spec = get_robot(robot)
    traj = PickAndPlace(spec)
    kin = flange_kinematics(robot)
    R, p = kin.frame_pose(traj.waypoints, spec.flange_frame, spec.base_frame)
    home, above_pick, pick = p[0], p[1], p[2]
    np.testing.assert_allclose(pick - above_pick, [0.0, 0.0, -0.12], atol=1e-8)
    np.testing.assert_allclose(p[6] - p[5], [0.0, 0.0, -0.12], atol=1e-8)
    assert above_pick[2] == pytest.approx(home[2], abs=1e-9)
    # the flange z axis keeps its direction at every waypoint; the wrist turns during the transfer
    np.testing.assert_allclose(R[:, :, 2], np.tile(R[0, :, 2], (len(R), 1)), atol=1e-8)
    assert traj.waypoints[5, -1] - traj.waypoints[4, -1] == pytest.approx(1.2)
    # one full cycle returns home at rest; repeated cycles fill the duration
    q, dq, _ = traj(np.array([traj.cycle_duration]))
    np.testing.assert_allclose(q[0], spec.q_home, atol=1e-12)
    np.testing.assert_allclose(dq[0], 0.0, atol=1e-12)
    twice = PickAndPlace(spec, duration=2.5 * traj.cycle_duration)
    t = np.linspace(0.0, traj.cycle_duration, 101)
    np.testing.assert_allclose(twice(t + traj.cycle_duration)[0], traj(t)[0], atol=1e-12)
    # the last blend reaches q_home only to rounding (a + s (b - a), s from the time modulo the cycle):
    # O(1e-16) rad where q_home is 0, e.g. 6.7e-16 for the xarm7 on another machine
    np.testing.assert_allclose(twice(t + 2 * traj.cycle_duration)[0], np.tile(spec.q_home, (101, 1)), atol=1e-12)


def test_make_trajectory_rejects_unknown_kind() -> None:
    with pytest.raises(ValueError, match="wrist"):
        make_trajectory("zigzag", get_robot("panda"))
