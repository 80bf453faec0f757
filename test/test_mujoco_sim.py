"""The MuJoCo simulator: sign and frame of every sensor, truth, tracking, shapes, noise, I/O.

The references are independent of MuJoCo's sensors and of the estimator's
regressor:

* statics: ``f = m g_S``, ``tau = m c x g_S`` with ``g_S`` from MuJoCo's body
  orientation of S;
* dynamics: Newton-Euler on a pinocchio ``Inertia`` with the motion of S from
  pinocchio's kinematics of the same URDF at MuJoCo's ``(q, dq, qacc)``, and a
  second time with MuJoCo's own ``mj_objectVelocity`` / ``mj_objectAcceleration``;
* IMU: pinocchio's angular velocity and classical acceleration of the IMU frame.
"""

from __future__ import annotations

import functools

import mujoco
import numpy as np
import pinocchio as pin
import pytest

from payload_estimator.core.inertia import InertialParameters
from payload_estimator.core.noise import get_noise
from payload_estimator.pipeline.kinematics import SensorKinematics
from payload_estimator.robots import get_robot, robot_urdf
from payload_estimator.sim.mujoco_model import (
    GRAVITY_IN_WORLD,
    ArmModel,
    build_model,
    read_imu,
    read_wrench_in_sensor,
)
from payload_estimator.sim.mujoco_sim import simulate
from payload_estimator.sim.payloads import get_payload
from payload_estimator.sim.run import SimulatedRun
from payload_estimator.sim.trajectories import make_trajectory

ROBOTS = ["panda", "xarm7", "ur10e"]
PAYLOAD = "claw_hammer"
# A mount that is neither at the flange nor aligned with it, and a tilted IMU.
SENSOR_XYZ, SENSOR_RPY = (0.01, -0.02, 0.03), (0.2, -0.1, 0.3)
IMU_XYZ, IMU_RPY = (0.012, -0.008, 0.015), (0.1, 0.2, -0.3)


@functools.cache
def setup(robot: str) -> tuple[ArmModel, SensorKinematics]:
    spec = get_robot(robot)
    urdf = robot_urdf(
        robot, sensor_xyz_in_flange=SENSOR_XYZ, sensor_rpy_in_flange=SENSOR_RPY,
        imu_xyz_in_sensor=IMU_XYZ, imu_rpy_in_sensor=IMU_RPY,
    )
    arm = build_model(urdf, spec.joint_names, get_payload(PAYLOAD), spec.tau_max)
    kin = SensorKinematics(urdf, "ft_sensor", joint_names=spec.joint_names)
    return arm, kin


def random_states(robot: str, count: int, seed: int):
    spec = get_robot(robot)
    rng = np.random.default_rng(seed)
    for _ in range(count):
        q = rng.uniform(spec.q_min + 0.1, spec.q_max - 0.1)
        dq = rng.uniform(-1.5, 1.5, spec.n_joints)
        tau = rng.uniform(-0.5, 0.5) * spec.tau_max
        yield q, dq, tau


def forward(arm: ArmModel, q: np.ndarray, dq: np.ndarray, tau: np.ndarray) -> mujoco.MjData:
    d = mujoco.MjData(arm.model)
    d.qpos[arm.qpos_adr] = q
    d.qvel[arm.dof_adr] = dq
    d.ctrl[arm.actuator_ids] = tau
    mujoco.mj_forward(arm.model, d)
    return d


def newton_euler_wrench(
    lin_vel: np.ndarray, ang_vel: np.ndarray, lin_acc_minus_g: np.ndarray, ang_acc: np.ndarray
) -> np.ndarray:
    """Wrench the payload exerts on the sensor, from the motion of S (all in S).

    ``lin_acc_minus_g`` is the classical acceleration of the origin of S minus
    gravity. The sensor's wrench on the payload ``w`` satisfies
    ``I a_spatial + v x* I v = w + I g`` (gravity as a spatial acceleration),
    and the payload pushes back with ``-w``.
    """
    p = get_payload(PAYLOAD).params
    inertia = pin.Inertia(p.mass, p.com, p.inertia_com)
    v = pin.Motion(lin_vel, ang_vel)
    a = pin.Motion(lin_acc_minus_g - np.cross(ang_vel, lin_vel), ang_acc)  # spatial, gravity removed
    return -(inertia * a + v.cross(inertia * v)).vector


# --------------------------------------------------------------------- model truth
@pytest.mark.parametrize("robot", ROBOTS)
def test_payload_body_carries_the_exact_inertial_parameters(robot: str) -> None:
    arm, _ = setup(robot)
    m, b = arm.model, arm.payload_body_id
    truth = get_payload(PAYLOAD).params
    assert m.body_parentid[b] == arm.sensor_body_id
    np.testing.assert_allclose(m.body_pos[b], 0.0, atol=1e-12)  # m
    np.testing.assert_allclose(m.body_quat[b], [1.0, 0.0, 0.0, 0.0], atol=1e-12)  # unit quaternion
    assert m.body_mass[b] == pytest.approx(truth.mass, rel=1e-12)
    np.testing.assert_allclose(m.body_ipos[b], truth.com, atol=1e-12)
    R = np.empty(9)
    mujoco.mju_quat2Mat(R, m.body_iquat[b])
    R = R.reshape(3, 3)
    np.testing.assert_allclose(R @ np.diag(m.body_inertia[b]) @ R.T, truth.inertia_com, atol=1e-10)
    assert m.body_weldid[b] == m.body_weldid[arm.sensor_body_id]  # welded: no joint in between
    np.testing.assert_allclose(m.opt.gravity, GRAVITY_IN_WORLD, atol=1e-12)  # m/s²


# ------------------------------------------------------------------------ statics
@pytest.mark.parametrize("robot", ROBOTS)
def test_static_wrench_is_weight_in_sensor_frame(robot: str) -> None:
    arm, _ = setup(robot)
    truth = get_payload(PAYLOAD).params
    m = arm.model
    for q, _, _ in random_states(robot, 6, seed=1):
        d = forward(arm, q, np.zeros_like(q), np.zeros_like(q))
        d.qacc[:] = 0.0
        mujoco.mj_inverse(m, d)  # the torques that hold the arm still
        tau_hold = d.qfrc_inverse[arm.dof_adr].copy()
        d = forward(arm, q, np.zeros_like(q), tau_hold)
        assert np.max(np.abs(d.qacc)) < 1e-8
        R_world_sensor = d.xmat[arm.sensor_body_id].reshape(3, 3)
        g_in_sensor = R_world_sensor.T @ GRAVITY_IN_WORLD
        expected = np.concatenate([truth.mass * g_in_sensor, truth.mass * np.cross(truth.com, g_in_sensor)])
        wrench = read_wrench_in_sensor(arm, d.sensordata)
        np.testing.assert_allclose(wrench, expected, rtol=0, atol=1e-6 * np.linalg.norm(expected[:3]))
        # and the IMU at rest: no rotation, specific force = -g in the IMU frame
        gyro, specific_force = read_imu(arm, d.sensordata)
        R_world_imu = d.site_xmat[arm.imu_site_id].reshape(3, 3)
        np.testing.assert_allclose(gyro, 0.0, atol=1e-12)
        np.testing.assert_allclose(specific_force, -R_world_imu.T @ GRAVITY_IN_WORLD, atol=1e-9)


@pytest.mark.parametrize("robot", ROBOTS)
def test_ft_site_is_the_sensor_frame(robot: str) -> None:
    arm, kin = setup(robot)
    spec = get_robot(robot)
    d = forward(arm, spec.q_home, np.zeros(spec.n_joints), np.zeros(spec.n_joints))
    R_pin, p_pin = kin.frame_pose(spec.q_home, "ft_sensor", spec.base_frame)
    np.testing.assert_allclose(d.site_xmat[arm.ft_site_id].reshape(3, 3), R_pin[0], atol=1e-12)
    np.testing.assert_allclose(d.site_xpos[arm.ft_site_id], p_pin[0], atol=1e-12)


# ----------------------------------------------------------------------- dynamics
@pytest.mark.parametrize("robot", ROBOTS)
def test_dynamic_wrench_matches_newton_euler_with_pinocchio_kinematics(robot: str) -> None:
    arm, kin = setup(robot)
    for q, dq, tau in random_states(robot, 8, seed=2):
        d = forward(arm, q, dq, tau)
        ddq = d.qacc[arm.dof_adr].copy()
        assert np.max(np.abs(ddq)) > 1.0  # really accelerating
        mo = kin.compute(q, dq, ddq)
        expected = newton_euler_wrench(
            mo.lin_vel_in_sensor[0], mo.ang_vel_in_sensor[0],
            mo.lin_acc_in_sensor[0] - mo.gravity_in_sensor[0], mo.ang_acc_in_sensor[0],
        )
        scale = np.linalg.norm(expected)
        np.testing.assert_allclose(read_wrench_in_sensor(arm, d.sensordata), expected, rtol=0, atol=1e-9 * (1 + scale))


@pytest.mark.parametrize("robot", ROBOTS)
def test_dynamic_wrench_matches_newton_euler_with_mujoco_object_motion(robot: str) -> None:
    arm, _ = setup(robot)
    site = mujoco.mjtObj.mjOBJ_SITE
    for q, dq, tau in random_states(robot, 8, seed=3):
        d = forward(arm, q, dq, tau)
        vel, acc = np.zeros(6), np.zeros(6)
        mujoco.mj_objectVelocity(arm.model, d, site, arm.ft_site_id, vel, 1)  # [omega, v] in S
        mujoco.mj_objectAcceleration(arm.model, d, site, arm.ft_site_id, acc, 1)  # [alpha, a - g] in S
        expected = newton_euler_wrench(vel[3:], vel[:3], acc[3:], acc[:3])
        np.testing.assert_allclose(read_wrench_in_sensor(arm, d.sensordata), expected, rtol=0, atol=1e-9)


@pytest.mark.parametrize("robot", ROBOTS)
def test_imu_reads_angular_velocity_and_specific_force_in_imu_frame(robot: str) -> None:
    arm, kin = setup(robot)
    for q, dq, tau in random_states(robot, 8, seed=4):
        d = forward(arm, q, dq, tau)
        mo = kin.compute(q, dq, d.qacc[arm.dof_adr], frame="imu_link")
        gyro, specific_force = read_imu(arm, d.sensordata)
        np.testing.assert_allclose(gyro, mo.ang_vel_in_sensor[0], rtol=0, atol=1e-10)
        np.testing.assert_allclose(
            specific_force, mo.lin_acc_in_sensor[0] - mo.gravity_in_sensor[0], rtol=0, atol=1e-9
        )


# ------------------------------------------------------------------- simulate()
@functools.cache
def short_run(robot: str, **kw) -> SimulatedRun:
    return simulate(robot, PAYLOAD, "wrist", duration=2.0, **kw)


@pytest.mark.parametrize("robot", ROBOTS)
def test_recorded_signals_are_consistent_with_the_recorded_state(robot: str) -> None:
    """The wrench and IMU samples belong to the state and acceleration recorded at the same time."""
    run = simulate(robot, PAYLOAD, "thesis", duration=2.0, noise="none", ft_bias=np.zeros(6), ft_drift=False,
                   sensor_xyz_in_flange=SENSOR_XYZ, sensor_rpy_in_flange=SENSOR_RPY,
                   imu_xyz_in_sensor=IMU_XYZ, imu_rpy_in_sensor=IMU_RPY)
    kin = SensorKinematics(run.urdf, run.sensor_frame, joint_names=run.joint_names)
    idx = np.arange(0, len(run.joint_t), 37)
    mo = kin.compute(run.true_q[idx], run.true_dq[idx], run.true_ddq[idx])
    mi = kin.compute(run.true_q[idx], run.true_dq[idx], run.true_ddq[idx], frame=run.imu_frame)
    for k, i in enumerate(idx):
        expected = newton_euler_wrench(
            mo.lin_vel_in_sensor[k], mo.ang_vel_in_sensor[k],
            mo.lin_acc_in_sensor[k] - mo.gravity_in_sensor[k], mo.ang_acc_in_sensor[k],
        )
        np.testing.assert_allclose(run.true_wrench_in_sensor[i], expected, atol=1e-9)
        np.testing.assert_allclose(run.imu_gyro_in_imu[i], mi.ang_vel_in_sensor[k], atol=1e-10)
        np.testing.assert_allclose(
            run.imu_specific_force_in_imu[i], mi.lin_acc_in_sensor[k] - mi.gravity_in_sensor[k], atol=1e-9
        )
    # noise "none" and no bias: the measurement is the truth
    np.testing.assert_array_equal(run.wrench_in_sensor, run.true_wrench_in_sensor)
    np.testing.assert_array_equal(run.joint_q, run.true_q)


@pytest.mark.parametrize("robot", ["panda", "ur10e"])
def test_recorded_state_is_the_smooth_motion_through_the_recorded_positions(robot: str) -> None:
    """Speed and acceleration are the positions' central and second differences, and the wrench is theirs.

    Semi-implicit Euler's own speed is the positions' backward difference, half a step late; recorded
    so, the wrench would carry an error no robot has: at 1 kHz it is ``T ddq / 2`` in the speed, and
    least squares on the positions' differences found the inertia about the centre of mass
    0.5 to 2 % off with every input exact."""
    run = simulate(robot, PAYLOAD, "wrist", duration=3.0, noise="none", ft_bias=np.zeros(6),
                   ft_drift=False, imu=False)
    T = 1.0 / run.physics_rate_hz
    q = run.true_q
    central = (q[2:] - q[:-2]) / (2.0 * T)
    second = (q[2:] - 2.0 * q[1:-1] + q[:-2]) / (T * T)
    half_step = 0.5 * T * np.max(np.abs(run.true_ddq))  # what the engine's own speed would be off by
    assert half_step > 1e-4
    np.testing.assert_allclose(run.true_dq[1:-1], central, rtol=0, atol=1e-9)
    np.testing.assert_allclose(run.true_ddq[1:-1], second, rtol=0, atol=1e-5)
    # the wrench from the positions alone: Newton-Euler of their differences
    kin = SensorKinematics(run.urdf, run.sensor_frame, joint_names=run.joint_names)
    idx = np.arange(1, len(q) - 1, 53)
    mo = kin.compute(q[idx], central[idx - 1], second[idx - 1])
    for k, i in enumerate(idx):
        expected = newton_euler_wrench(
            mo.lin_vel_in_sensor[k], mo.ang_vel_in_sensor[k],
            mo.lin_acc_in_sensor[k] - mo.gravity_in_sensor[k], mo.ang_acc_in_sensor[k],
        )
        np.testing.assert_allclose(run.true_wrench_in_sensor[i], expected, atol=1e-8)


@pytest.mark.parametrize("robot", ROBOTS)
def test_tracking_error_is_small_and_torques_within_limits(robot: str) -> None:
    run = short_run(robot)
    spec = get_robot(robot)
    traj = make_trajectory("wrist", spec, duration=2.0)
    q_ref, dq_ref, ddq_ref = traj(run.joint_t)
    assert np.max(np.abs(run.true_q - q_ref)) < 1e-4
    assert np.max(run.tracking_error_max) < 1e-4
    assert np.max(np.abs(run.true_dq - dq_ref)) < 5e-3
    assert np.max(np.abs(run.true_ddq - ddq_ref)) < 0.5
    assert run.torque_clipped_steps == 0
    assert np.all(np.abs(run.joint_effort) <= spec.tau_max + 0.5)  # effort = torque + small noise


def test_run_shapes_and_rates_with_a_slower_wrench() -> None:
    run = short_run("xarm7", wrench_rate_hz=100.0)
    n = 7
    assert run.joint_q.shape == run.joint_dq.shape == run.joint_effort.shape == (2000, n)
    assert run.true_q.shape == run.true_dq.shape == run.true_ddq.shape == (2000, n)
    np.testing.assert_allclose(np.diff(run.joint_t), 1e-3, atol=1e-12)
    assert run.wrench_in_sensor.shape == run.true_wrench_in_sensor.shape == run.true_ft_bias.shape == (200, 6)
    np.testing.assert_allclose(np.diff(run.wrench_t), 1e-2, atol=1e-12)
    # wrench samples coincide with joint samples (same clock, every 10th)
    np.testing.assert_array_equal(run.wrench_t, run.joint_t[::10])
    assert run.imu_gyro_in_imu.shape == run.imu_specific_force_in_imu.shape == (2000, 3)
    assert run.imu_frame == "imu_link" and run.sensor_frame == "ft_sensor"
    assert run.rate_hz == 1000.0 and run.wrench_rate_hz == 100.0 and run.physics_rate_hz == 1000.0
    assert run.joint_names == get_robot("xarm7").joint_names
    assert run.payload_params.mass == pytest.approx(get_payload(PAYLOAD).params.mass)
    assert run.trajectory == "wrist" and run.noise == "moderate"


def test_run_without_imu_has_empty_imu_arrays() -> None:
    reports: list[float] = []
    run = simulate("panda", "hammer", "pickplace", duration=0.5, rate_hz=500.0, imu=False,
                   progress=reports.append)
    assert reports[-1] == 1.0 and np.all(np.diff(reports) >= 0.0) and len(reports) >= 50
    assert run.imu_frame is None and "imu_link" not in run.urdf
    assert run.imu_t.shape == (0,) and run.imu_gyro_in_imu.shape == (0, 3)
    assert run.joint_q.shape == (250, 7) and run.wrench_t.shape == (250,)


def test_same_seed_same_arrays_other_seed_other_noise() -> None:
    a = short_run("panda")
    b = simulate("panda", PAYLOAD, "wrist", duration=2.0)
    c = simulate("panda", PAYLOAD, "wrist", duration=2.0, seed=1)
    for name in ("joint_q", "joint_dq", "joint_effort", "wrench_in_sensor", "imu_gyro_in_imu",
                 "imu_specific_force_in_imu", "true_ft_bias", "true_wrench_in_sensor"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    np.testing.assert_array_equal(a.true_q, c.true_q)  # same motion
    assert not np.array_equal(a.wrench_in_sensor, c.wrench_in_sensor)  # other noise and bias


def test_npz_round_trip(tmp_path) -> None:
    run = short_run("xarm7", wrench_rate_hz=100.0)
    path = tmp_path / "run.npz"
    run.save(path)
    back = SimulatedRun.load(path)
    for name in run.__dataclass_fields__:
        want, got = getattr(run, name), getattr(back, name)
        if isinstance(want, np.ndarray):
            np.testing.assert_array_equal(got, want)
            assert got.dtype == want.dtype
        else:
            assert got == want and type(got) is type(want), name
    no_imu = simulate("panda", "hammer", "wrist", duration=0.1, imu=False)
    no_imu.save(tmp_path / "b.npz")
    assert SimulatedRun.load(tmp_path / "b.npz").imu_frame is None


@pytest.mark.parametrize("level", ["low", "high"])
def test_ft_noise_has_the_requested_std(level: str) -> None:
    run = simulate("panda", PAYLOAD, "wrist", duration=3.0, noise=level, seed=5)
    residual = run.wrench_in_sensor - run.true_wrench_in_sensor - run.true_ft_bias
    std = get_noise(level)
    expected = np.array([std.force] * 3 + [std.torque] * 3)
    np.testing.assert_allclose(residual.std(axis=0), expected, rtol=0.08)  # 3000 samples: ~1.3 % std error
    np.testing.assert_allclose(residual.mean(axis=0), 0.0, atol=4 * np.max(expected) / np.sqrt(3000))
    np.testing.assert_allclose((run.joint_q - run.true_q).std(axis=0), 2e-5, rtol=0.1)


def test_default_bias_is_a_few_percent_of_the_weight_and_drifts() -> None:
    run = short_run("panda")
    weight = run.payload_params.mass * 9.80665
    b = run.true_ft_bias
    assert 0.0 < np.max(np.abs(b[:, :3])) < 0.15 * weight
    assert np.max(np.abs(b[-1] - b[0])) > 0.0  # drifts
    assert np.max(np.abs(b[-1] - b[0])) < 0.05 * weight  # slowly
    fixed = simulate("panda", PAYLOAD, "wrist", duration=0.5, ft_bias=[1, 2, 3, 0.1, 0.2, 0.3],
                     ft_drift=False)
    np.testing.assert_array_equal(fixed.true_ft_bias, np.tile([1, 2, 3, 0.1, 0.2, 0.3], (500, 1)))


def test_point_mass_and_no_payload() -> None:
    """Degenerate payloads compile; at rest at home the wrench is the weight (or nothing)."""
    point = InertialParameters.point_mass(1.5, [0.01, -0.02, 0.1])
    run = simulate("panda", point, "wrist", duration=0.05, noise="none", ft_bias=np.zeros(6),
                   ft_drift=False)
    assert run.payload_name == "custom"
    np.testing.assert_allclose(run.payload_phi, point.phi)
    g_in_sensor = np.array([0.0, 0.0, 9.80665])  # the home flange points down
    expected = np.concatenate([1.5 * g_in_sensor, 1.5 * np.cross(point.com, g_in_sensor)])
    np.testing.assert_allclose(run.true_wrench_in_sensor[0], expected, atol=1e-9)
    empty = simulate("xarm7", InertialParameters.zero(), "wrist", duration=0.05, noise="none",
                     ft_bias=np.zeros(6), ft_drift=False)
    np.testing.assert_allclose(empty.true_wrench_in_sensor, 0.0, atol=1e-12)  # N and N·m


def test_physics_rate_is_a_common_multiple_of_the_sample_rates() -> None:
    run = simulate("panda", "hammer", "wrist", duration=0.2, rate_hz=250.0, wrench_rate_hz=100.0)
    assert run.physics_rate_hz == 1000.0
    assert run.joint_t.shape == (50,) and run.wrench_t.shape == (20,)
    with pytest.raises(ValueError, match="divide"):
        simulate("panda", "hammer", "wrist", duration=0.2, rate_hz=300.0, physics_rate_hz=1000.0)


def test_workshop_tools_are_what_they_say():
    """The workshop tools: 2-4 parts each, 5 g to 1.1 kg, 8-35 cm, every part a solid of positive mass that
    no other overlaps (so the truth is the parts' sum), and a bounding box that holds the whole tool."""
    from payload_estimator.core.shapes import sample_points
    from payload_estimator.sim.workshop import WORKSHOP_TOOLS, bounding_box

    assert len(WORKSHOP_TOOLS) >= 15
    masses = [t.mass for t in WORKSHOP_TOOLS]
    assert min(masses) < 0.01 and 0.9 < max(masses) < 1.2
    for tool in WORKSHOP_TOOLS:
        assert 2 <= len(tool.parts) <= 4 and all(p.mass > 0 for p in tool.parts)
        assert 0.08 <= max(tool.bbox_lengths) <= 0.35 and tool.params.is_physically_consistent()
        points = sample_points(tool.envelope)
        inside = [sum(bool(p.shape.contains(points)[i]) for p in tool.parts) for i in range(len(points))]
        assert max(inside) == 1, f"{tool.name}: parts overlap"
        box = bounding_box(tool)
        assert np.all(box.contains(points))
