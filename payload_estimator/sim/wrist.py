"""Sensor-level ground truth: a three-joint wrist carrying a payload, computed by pinocchio.

This reproduces the simulation setting of Nadeau, Giamou and Kelly, "Fast Object Inertial
Parameter Identification for Collaborative Robots" (Section V-A/C): the three
joints nearest the end effector follow sinusoids, the payload is welded to the
F/T sensor, and Gaussian noise of Table II is added to the accelerations and
to the wrench. The wrench comes from pinocchio's recursive Newton-Euler
algorithm (the force transmitted by the last joint to the payload), and the
sensor-frame kinematics from pinocchio's frame accelerations, so the
estimator's own regressor plays no part in producing the signals.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from payload_estimator.core.inertia import InertialParameters
from payload_estimator.core.noise import NoiseLevel
from payload_estimator.core.samples import STANDARD_GRAVITY, SensorSamples

__all__ = ["WristTrajectory", "simulate_wrist", "sensor_rotations", "PAPER_FREQUENCIES_HZ"]

PAPER_FREQUENCIES_HZ = np.array([0.1, 0.13, 0.16])
"""Relative joint frequencies of Nadeau et al.'s excitation (joints 4-6)."""


@dataclass(frozen=True)
class WristTrajectory:
    """Sinusoids ``q_i(t) = q0_i + A_i sin(2 pi k f_i t)`` on the three wrist joints.

    ``k`` is set so that the sensor's mean angular speed over ``duration`` is
    ``mean_ang_vel`` (rad/s); Nadeau et al. use amplitudes of 45°.
    """

    mean_ang_vel: float = 1.0
    amplitude: float = np.deg2rad(45.0)
    q0: tuple[float, float, float] = (0.3, 0.9, -0.4)
    frequencies_hz: tuple[float, float, float] = tuple(PAPER_FREQUENCIES_HZ)


def _build_model(payload: InertialParameters):
    import pinocchio as pin

    model = pin.Model()
    model.gravity = pin.Motion(np.array([0.0, 0.0, -STANDARD_GRAVITY]), np.zeros(3))
    # A tilted base so that every sensor axis sees gravity change.
    base = pin.SE3(pin.rpy.rpyToMatrix(0.4, -0.3, 0.2), np.array([0.3, 0.1, 0.5]))
    j1 = model.addJoint(0, pin.JointModelRZ(), base, "wrist_1")
    j2 = model.addJoint(j1, pin.JointModelRY(), pin.SE3(np.eye(3), np.array([0.0, 0.0, 0.1])), "wrist_2")
    j3 = model.addJoint(j2, pin.JointModelRZ(), pin.SE3(np.eye(3), np.array([0.08, 0.0, 0.1])), "wrist_3")
    for j in (j1, j2, j3):
        model.appendBodyToJoint(j, pin.Inertia.Zero(), pin.SE3.Identity())
    sensor_in_j3 = pin.SE3(pin.rpy.rpyToMatrix(np.pi, 0.0, 0.0), np.array([0.0, 0.0, 0.05]))
    model.addFrame(pin.Frame("sensor", j3, 0, sensor_in_j3, pin.FrameType.OP_FRAME))
    # Payload inertia, given in the sensor frame, moved into joint 3's frame.
    p = payload
    # No payload (mass 0, whose COM is undefined): a zero inertia, so the wrench is exactly zero.
    inertia_s = pin.Inertia.Zero() if p.mass == 0.0 else pin.Inertia(p.mass, p.com, p.inertia_com)
    model.appendBodyToJoint(j3, sensor_in_j3.act(inertia_s), pin.SE3.Identity())
    return model, j3, sensor_in_j3


def simulate_wrist(
    payload: InertialParameters,
    trajectory: WristTrajectory = WristTrajectory(),
    duration: float = 1.5,
    rate_hz: float = 100.0,
    noise: NoiseLevel | None = None,
    ft_bias: np.ndarray | None = None,
    rng: np.random.Generator | None = None,
    t_start: float = 0.0,
) -> tuple[SensorSamples, SensorSamples]:
    """Simulate the wrist; returns (noisy samples, exact samples), sensor frame.

    Args:
        payload: inertial parameters in the sensor frame.
        trajectory: the wrist's sinusoids.
        duration: seconds of data.
        rate_hz: sampling rate, Hz (Nadeau et al.: ~150 samples).
        noise: Table II level added to linear/angular acceleration and wrench (None: exact).
        ft_bias: (6,) constant F/T offset added to the measured wrench.
        rng: draws the noise (default: a fresh, unseeded generator).
        t_start: time of the first sample on the trajectory. The trajectory's time scale is set
            over this call's window, so separate calls do not join up into one motion
            (:mod:`payload_estimator.sim.cycle` simulates one window and cuts it).
    """
    import pinocchio as pin

    rng = np.random.default_rng() if rng is None else rng
    model, j3, sensor_in_j3 = _build_model(payload)
    data = model.createData()
    fid = model.getFrameId("sensor")
    t = _time_grid(duration, rate_hz, t_start)
    q, dq, ddq = _joint_trajectory(model, data, fid, trajectory, t)

    n = len(t)
    a_s, w_s, al_s, g_s = (np.zeros((n, 3)) for _ in range(4))
    wrench = np.zeros((n, 6))
    g_world = model.gravity.linear
    for i in range(n):
        pin.rnea(model, data, q[i], dq[i], ddq[i])
        # Force the joint transmits to the payload, moved to the sensor frame; the sensor feels its opposite.
        wrench[i] = -sensor_in_j3.actInv(data.f[j3]).vector
        pin.forwardKinematics(model, data, q[i], dq[i], ddq[i])
        pin.updateFramePlacements(model, data)
        w_s[i] = pin.getFrameVelocity(model, data, fid, pin.LOCAL).angular
        al_s[i] = pin.getFrameAcceleration(model, data, fid, pin.LOCAL).angular
        a_s[i] = pin.getFrameClassicalAcceleration(model, data, fid, pin.LOCAL).linear
        g_s[i] = data.oMf[fid].rotation.T @ g_world
    exact = SensorSamples(t, a_s, w_s, al_s, g_s, wrench)
    if noise is None and ft_bias is None:
        return exact, exact
    noise = noise or NoiseLevel("none", 0, 0, 0, 0)
    meas_wrench = wrench + np.concatenate(
        [rng.normal(0, noise.force, (n, 3)), rng.normal(0, noise.torque, (n, 3))], axis=1
    )
    if ft_bias is not None:
        meas_wrench = meas_wrench + np.asarray(ft_bias, dtype=float)
    noisy = SensorSamples(
        t,
        a_s + rng.normal(0, noise.lin_acc, (n, 3)),
        w_s,
        al_s + rng.normal(0, noise.ang_acc, (n, 3)),
        g_s,
        meas_wrench,
    )
    return noisy, exact


def _time_grid(duration: float, rate_hz: float, t_start: float) -> np.ndarray:
    return t_start + np.arange(int(round(duration * rate_hz))) / rate_hz


def _joint_trajectory(model, data, fid: int, trajectory: WristTrajectory, t: np.ndarray):
    """Joint positions, velocities and accelerations (each (N, 3)) at the times ``t``.

    The time scale ``k`` is set so that the sensor's mean angular speed over ``[t[0], t[-1]]``
    is ``trajectory.mean_ang_vel``: it depends on the window, so two windows of one trajectory
    only join up when they are cut from one call.
    """
    import pinocchio as pin

    f = np.asarray(trajectory.frequencies_hz, dtype=float)
    A = trajectory.amplitude
    q0 = np.asarray(trajectory.q0, dtype=float)

    def joint_states(k: float, t: np.ndarray):
        w = 2 * np.pi * k * f
        arg = np.outer(t, w)
        return q0 + A * np.sin(arg), A * w * np.cos(arg), -A * w**2 * np.sin(arg)

    def ang_speed(k: float, t: np.ndarray) -> float:
        q, dq, _ = joint_states(k, t)
        speeds = []
        for qi, dqi in zip(q, dq):
            pin.forwardKinematics(model, data, qi, dqi)
            speeds.append(np.linalg.norm(pin.getFrameVelocity(model, data, fid, pin.LOCAL).angular))
        return float(np.mean(speeds))

    # Angular speed is linear in the time scale k: one evaluation sets it.
    k = trajectory.mean_ang_vel / ang_speed(1.0, np.linspace(t[0], t[-1], 200) if len(t) > 1 else t)
    return joint_states(k, t)


def sensor_rotations(
    trajectory: WristTrajectory = WristTrajectory(),
    duration: float = 1.5,
    rate_hz: float = 100.0,
    t_start: float = 0.0,
) -> np.ndarray:
    """Return the (N, 3, 3) orientation ``R_world_sensor`` of the sensor at the samples of :func:`simulate_wrist`.

    For the same trajectory, duration, rate and start (``v_world = R @ v_sensor``)."""
    import pinocchio as pin

    model, _, _ = _build_model(InertialParameters.zero())
    data = model.createData()
    fid = model.getFrameId("sensor")
    t = _time_grid(duration, rate_hz, t_start)
    q, _, _ = _joint_trajectory(model, data, fid, trajectory, t)
    R = np.zeros((len(t), 3, 3))
    for i, qi in enumerate(q):
        pin.framesForwardKinematics(model, data, qi)
        R[i] = data.oMf[fid].rotation
    return R
