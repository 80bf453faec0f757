"""IMU kinematics in the sensor frame (pipeline/imu.py).

Reference: a rigid-body trajectory given by smooth closed-form functions
(orientation from Euler angles, position of the sensor origin), differentiated
with fourth-order finite-difference stencils at a step far below the sample
period (errors ~1e-9), independently of the rigid-body formulas under test.
The IMU sits at a lever arm with a tilted mount; its readings are built from
the world-frame acceleration of the IMU point itself.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import signal
from scipy.spatial.transform import Rotation

from payload_estimator.pipeline.filters import butter_lowpass_sos
from payload_estimator.pipeline.imu import GravityTracker, ImuMount, ImuProcessor

RATE = 500.0
CUTOFF = 15.0
G = 9.80665
GRAVITY_IN_WORLD = np.array([0.0, 0.0, -G])
MOUNT = ImuMount(
    Rotation.from_euler("xyz", [0.3, -0.5, 1.2]).as_matrix(), np.array([0.03, -0.05, 0.08])
)
EULER_AMP = np.array([0.15, 0.1, 0.12])  # rad, times (1 - cos)^2 in [0, 4]
EULER_W = 2 * np.pi * np.array([0.5, 0.8, 1.1])
POS_AMP = np.array([0.05, -0.04, 0.03])  # m
POS_W = 2 * np.pi * np.array([0.6, 0.9, 0.4])
H = 1e-3  # finite-difference step, s


def bump(t: np.ndarray, amp: np.ndarray, w: np.ndarray) -> np.ndarray:
    """amp (1 - cos w t)^2: zero value, velocity and acceleration at t = 0."""
    return amp * (1.0 - np.cos(np.outer(t, w))) ** 2


def R_world_sensor(t: np.ndarray) -> np.ndarray:
    return Rotation.from_euler("ZYX", bump(t, EULER_AMP, EULER_W)).as_matrix()


def p_world_sensor(t: np.ndarray) -> np.ndarray:
    return bump(t, POS_AMP, POS_W)


def d1(f, t: np.ndarray) -> np.ndarray:
    return (f(t - 2 * H) - 8 * f(t - H) + 8 * f(t + H) - f(t + 2 * H)) / (12 * H)


def d2(f, t: np.ndarray) -> np.ndarray:
    return (-f(t - 2 * H) + 16 * f(t - H) - 30 * f(t) + 16 * f(t + H) - f(t + 2 * H)) / (12 * H * H)


def ang_vel_in_sensor(t: np.ndarray) -> np.ndarray:
    W = np.einsum("nji,njk->nik", R_world_sensor(t), d1(R_world_sensor, t))  # R^T dR/dt
    return np.stack([W[:, 2, 1] - W[:, 1, 2], W[:, 0, 2] - W[:, 2, 0], W[:, 1, 0] - W[:, 0, 1]], 1) / 2


def truth(t: np.ndarray) -> dict[str, np.ndarray]:
    R = R_world_sensor(t)
    Rt = np.transpose(R, (0, 2, 1))
    p_imu = MOUNT.p_sensor_imu
    acc_imu_world = d2(p_world_sensor, t) + d2(R_world_sensor, t) @ p_imu
    f_in_sensor = np.einsum("nij,nj->ni", Rt, acc_imu_world - GRAVITY_IN_WORLD)
    return {
        "ang_vel": ang_vel_in_sensor(t),
        "ang_acc": d1(ang_vel_in_sensor, t),
        "lin_acc": np.einsum("nij,nj->ni", Rt, d2(p_world_sensor, t)),
        "gravity": np.einsum("nij,j->ni", Rt, GRAVITY_IN_WORLD),
        "gyro_in_imu": ang_vel_in_sensor(t) @ MOUNT.R_sensor_imu,  # R^T omega, row-wise
        "specific_force_in_imu": f_in_sensor @ MOUNT.R_sensor_imu,
    }


def filtered_delayed(x: np.ndarray) -> np.ndarray:
    """G (steady-state start) applied to a whole record, rows 1 .. N-2."""
    sos = butter_lowpass_sos(CUTOFF, RATE, 4)
    zi = signal.sosfilt_zi(sos)[:, :, None] * x[0][None, None, :]
    return signal.sosfilt(sos, x, axis=0, zi=zi)[0][1:-1]


T = np.arange(int(6 * RATE)) / RATE
TRUTH = truth(T)


def test_truth_is_self_consistent() -> None:
    """The reference obeys the rigid-body relation the processor relies on."""
    w, al, p = TRUTH["ang_vel"], TRUTH["ang_acc"], MOUNT.p_sensor_imu
    f_s = TRUTH["specific_force_in_imu"] @ MOUNT.R_sensor_imu.T
    a = f_s + TRUTH["gravity"] - np.cross(al, p) - np.cross(w, np.cross(w, p))
    np.testing.assert_allclose(a, TRUTH["lin_acc"], atol=1e-6)
    assert np.abs(TRUTH["lin_acc"]).max() > 1.0 and np.abs(al).max() > 1.0


@pytest.mark.parametrize("given_gravity", [True, False])
def test_recovers_motion_of_sensor_origin(given_gravity: bool) -> None:
    proc = ImuProcessor(MOUNT, RATE, CUTOFF, attitude_gain=0.0)
    out = proc.process(
        T,
        TRUTH["gyro_in_imu"],
        TRUTH["specific_force_in_imu"],
        TRUTH["gravity"] if given_gravity else None,
    )
    np.testing.assert_array_equal(out.t, T[1:-1])
    np.testing.assert_allclose(out.ang_vel_in_sensor, filtered_delayed(TRUTH["ang_vel"]), atol=1e-9)
    acc_tol = 2e-4 * np.abs(TRUTH["ang_acc"]).max()  # central difference, ~(w T)^2 / 6
    np.testing.assert_allclose(out.ang_acc_in_sensor, filtered_delayed(TRUTH["ang_acc"]), atol=acc_tol)
    g_tol = 1e-9 if given_gravity else 2e-4  # gyro-only attitude: integration error
    np.testing.assert_allclose(out.gravity_in_sensor, filtered_delayed(TRUTH["gravity"]), atol=g_tol)
    np.testing.assert_allclose(
        out.lin_acc_in_sensor, filtered_delayed(TRUTH["lin_acc"]), atol=2e-4 + g_tol
    )
    # not vacuous: the lever-arm terms and the filter lag are far bigger than the tolerances
    assert np.abs(np.cross(TRUTH["ang_acc"], MOUNT.p_sensor_imu)).max() > 0.05
    assert np.abs(out.ang_vel_in_sensor - TRUTH["ang_vel"][1:-1]).max() > 1e-2


def test_default_attitude_gain_tracks_gravity_during_motion() -> None:
    proc = ImuProcessor(MOUNT, RATE, CUTOFF)  # default gain, complementary filter active
    out = proc.process(T, TRUTH["gyro_in_imu"], TRUTH["specific_force_in_imu"])
    err = np.linalg.norm(out.gravity_in_sensor - filtered_delayed(TRUTH["gravity"]), axis=1)
    # the motion's accelerations (up to ~3 m/s²) leak in only through the slow correction
    assert err.max() < 0.3
    np.testing.assert_allclose(np.linalg.norm(out.gravity_in_sensor, axis=1), G, rtol=1e-3)


def test_batch_split_invariance() -> None:
    n = 700
    args = (T[:n], TRUTH["gyro_in_imu"][:n], TRUTH["specific_force_in_imu"][:n])
    whole = ImuProcessor(MOUNT, RATE, CUTOFF).process(*args)
    proc = ImuProcessor(MOUNT, RATE, CUTOFF)
    cuts = [0, 1, 2, 3, 50, 51, 333, 699, n]
    parts = [proc.process(*(a[i:j] for a in args)) for i, j in zip(cuts[:-1], cuts[1:])]
    for field in ("t", "ang_vel_in_sensor", "ang_acc_in_sensor", "lin_acc_in_sensor", "gravity_in_sensor"):
        got = np.concatenate([getattr(p, field) for p in parts])
        np.testing.assert_allclose(got, getattr(whole, field), rtol=0, atol=1e-10)


def test_reset_starts_over() -> None:
    proc = ImuProcessor(MOUNT, RATE, CUTOFF)
    args = (T[:300], TRUTH["gyro_in_imu"][:300], TRUTH["specific_force_in_imu"][:300])
    first = proc.process(*args)
    proc.reset()
    again = proc.process(*args)
    np.testing.assert_array_equal(first.lin_acc_in_sensor, again.lin_acc_in_sensor)


def test_at_rest_gives_zero_motion_and_gravity_from_accelerometer() -> None:
    R_ws = Rotation.from_euler("xyz", [0.4, -0.3, 2.0]).as_matrix()
    g_s = R_ws.T @ GRAVITY_IN_WORLD
    n = 200
    f_imu = np.tile(MOUNT.R_sensor_imu.T @ (-g_s), (n, 1))
    out = ImuProcessor(MOUNT, RATE, CUTOFF).process(np.arange(n) / RATE, np.zeros((n, 3)), f_imu)
    np.testing.assert_allclose(out.gravity_in_sensor, np.tile(g_s, (n - 2, 1)), atol=1e-9)
    np.testing.assert_allclose(out.lin_acc_in_sensor, 0.0, atol=1e-9)
    np.testing.assert_allclose(out.ang_acc_in_sensor, 0.0, atol=1e-9)


def test_tracker_converges_with_documented_time_constant() -> None:
    """Static, tilted; the first accelerometer sample is off by 10 degrees."""
    gain = 2.0  # 1/s, time constant 0.5 s
    tracker = GravityTracker(RATE, G, attitude_gain=gain)
    assert tracker.time_constant_s == pytest.approx(0.5)
    g_true = Rotation.from_euler("xy", [0.2, -0.6]).apply(GRAVITY_IN_WORLD)
    n = int(3.0 * RATE)
    f = np.tile(-g_true, (n, 1))
    axis = np.cross(g_true, [1.0, 0.0, 0.0])
    f[0] = Rotation.from_rotvec(np.deg2rad(10.0) * axis / np.linalg.norm(axis)).apply(-g_true)
    g = tracker(np.zeros((n, 3)), f)
    cos = np.clip(g @ g_true / (np.linalg.norm(g, axis=1) * G), -1, 1)
    err_deg = np.rad2deg(np.arccos(cos))
    assert err_deg[0] == pytest.approx(10.0, rel=1e-6)
    at_tau = err_deg[int(0.5 * RATE)]
    assert 10.0 * np.exp(-1) * 0.95 < at_tau < 10.0 * np.exp(-1) * 1.05
    assert err_deg[int(2.5 * RATE)] < 10.0 * np.exp(-5) * 1.1
    np.testing.assert_allclose(np.linalg.norm(g, axis=1), G, rtol=1e-12)


def test_tracker_follows_pure_rotation() -> None:
    """Gyro-only propagation: rotating about x at 1 rad/s turns g about x the other way."""
    n = int(2 * RATE)
    t = np.arange(n) / RATE
    tracker = GravityTracker(RATE, G, attitude_gain=0.0)
    g0 = np.array([0.0, 0.0, -G])
    omega = np.tile([1.0, 0.0, 0.0], (n, 1))
    f = np.tile(-g0, (n, 1))  # only the first sample is used (gain 0)
    g = tracker(omega, f)
    expected = Rotation.from_rotvec(-np.outer(t, [1.0, 0.0, 0.0])).apply(g0)
    np.testing.assert_allclose(g, expected, atol=1e-9)


def test_mount_validation() -> None:
    with pytest.raises(ValueError, match="rotation"):
        ImuMount(np.diag([1.0, 1.0, -1.0]), np.zeros(3))
    with pytest.raises(ValueError):
        ImuMount(np.eye(3), np.zeros(2))
    m = ImuMount.identity()
    assert np.array_equal(m.R_sensor_imu, np.eye(3))


def test_bad_input_shapes_rejected() -> None:
    proc = ImuProcessor(MOUNT, RATE, CUTOFF)
    with pytest.raises(ValueError):
        proc.process(T[:5], np.zeros((5, 2)), np.zeros((5, 3)))
    with pytest.raises(ValueError):
        proc.process(T[:5], np.zeros((5, 3)), np.zeros((4, 3)))
