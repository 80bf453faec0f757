"""MuJoCo simulation of an arm carrying a payload on a wrist F/T sensor: :func:`simulate`.

The arm is a built-in robot (Panda, FR3, xArm) or any arm from its URDF
(:meth:`~payload_estimator.robots.RobotSpec.from_urdf`). One concept per module:

* :mod:`~payload_estimator.sim.mujoco_model`: the compiled model (the arm, the payload welded to
  the F/T sensor, sensors and motors) and how its sensors read;
* :mod:`~payload_estimator.sim.stepper`: the computed-torque controller and the integration,
  with a work cycle's payload changes and contacts;
* :mod:`~payload_estimator.sim.sensor_noise`: the sensors' noise and the F/T offset;
* :mod:`~payload_estimator.sim.efforts`: a joint-torque sensor with its friction, and an arm
  unlike its URDF (both opt-in).

Sampling
--------
The physics runs at ``physics_rate_hz``; joint states and the IMU are every
``physics / rate_hz``-th step, the wrench every ``physics / wrench_rate_hz``-th
(plain decimation, no anti-aliasing filter). The measured signals are drawn from
``np.random.default_rng(seed)`` in a fixed order (F/T offset and drift, F/T noise,
joint positions, speeds and efforts, gyro, accelerometer): that order is part of the
seed's contract. A joint-torque sensor draws from a stream of its own
(``default_rng([seed, EFFORT_STREAM])``), so enabling it moves no other draw.

``irregular_stamps``: the joint states (and IMU) come at irregular intervals instead, as a driver
that publishes from a non-real-time loop delivers them (a UR's currents at 100 Hz every 2 to 30 ms):
each interval is the nominal period times a Gamma draw of mean 1 and std 0.5, within
:data:`IRREGULAR_GAPS` of it (:func:`irregular_steps`, from ``default_rng([seed, STAMP_STREAM])``);
the stamps are the samples' true times.

Joint efforts
-------------
Without an effort model the arm has no friction and ``joint_effort`` is the applied torque plus
the nominal joint noise. With one, its friction acts on the joints and the controller compensates
it (:mod:`~payload_estimator.sim.stepper`); the sensor reports the applied torque scaled and with
its noise. With an :class:`~payload_estimator.sim.efforts.ArmMismatch` the compiled arm is a
perturbed copy of the URDF the estimator is given, and the controller's model is that true arm.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from payload_estimator.core.inertia import InertialParameters
from payload_estimator.core.samples import STANDARD_GRAVITY
from payload_estimator.errors import ConfigurationError
from payload_estimator.robots import RobotSpec, resolve_robot
from payload_estimator.robots.generate import DEFAULT_IMU_XYZ_IN_SENSOR
from payload_estimator.sim.efforts import EFFORT_STREAM, ArmMismatch, EffortModel
from payload_estimator.sim.mujoco_model import (
    IMU_FRAME,
    SENSOR_FRAME,
    ArmModel,
    read_imu,
    read_wrench_in_sensor,
    robot_arm_model,
    set_payload,
)
from payload_estimator.sim.payloads import Payload, get_payload
from payload_estimator.sim.run import SimulatedRun
from payload_estimator.sim.sensor_noise import FtOffset, SensorNoise
from payload_estimator.sim.stepper import ArmStepper, ScheduleHook, StepRecording, WorkSchedule
from payload_estimator.sim.trajectories import JointTrajectory, make_trajectory

STAMP_STREAM = 94
"""Irregular joint-state stamps draw from ``np.random.default_rng([seed, STAMP_STREAM])``."""
IRREGULAR_GAPS = (0.2, 3.0)
"""An irregular stream's intervals stay within these multiples of its mean (a driver's jitter)."""

__all__ = [
    "simulate",
    "sample_stride",
    "default_physics_rate",
    "resolve_payload",
    "NO_PAYLOAD",
    "WorkSchedule",
]

NO_PAYLOAD = "none"
"""Payload name of an unloaded arm (:func:`resolve_payload`): nothing on the F/T sensor."""


def sample_stride(physics_hz: float, rate_hz: float, what: str) -> int:
    """Return the physics steps per sample of a ``rate_hz`` stream; ConfigurationError if it does not divide."""
    ratio = physics_hz / rate_hz
    stride = int(round(ratio))
    if stride < 1 or abs(ratio - stride) > 1e-9 * ratio:
        raise ConfigurationError(f"{what} ({rate_hz} Hz) must divide the physics rate ({physics_hz} Hz)")
    return stride


def default_physics_rate(rates_hz: Sequence[float], at_least_hz: float = 1000.0) -> float:
    """The smallest common multiple of the sample rates that is at least ``at_least_hz``."""
    if all(float(r).is_integer() for r in rates_hz):
        base = float(math.lcm(*(int(r) for r in rates_hz)))
    else:
        base = float(rates_hz[0])
    return base * max(1, math.ceil(at_least_hz / base - 1e-9))


def resolve_payload(
    payload: str | Payload | InertialParameters,
) -> tuple[str, Payload | InertialParameters, InertialParameters]:
    """(name, object for the model, inertial parameters in S).

    :data:`NO_PAYLOAD` ("none") or inertial parameters of zero mass: the unloaded arm (name "none",
    nothing on the payload body), e.g. for an arm calibration run.
    """
    if isinstance(payload, str):
        if payload == NO_PAYLOAD:
            return NO_PAYLOAD, InertialParameters.zero(), InertialParameters.zero()
        payload = get_payload(payload)
    if isinstance(payload, Payload):
        return payload.name, payload, payload.params
    if payload.mass <= 0.0:
        if np.any(payload.phi != 0.0):
            raise ConfigurationError("a payload of zero mass must have all its inertial parameters zero")
        return NO_PAYLOAD, payload, payload
    return "custom", payload, payload


def _resolve_trajectory(
    trajectory: str | JointTrajectory, spec: RobotSpec, duration: float, seed: int
) -> tuple[str, JointTrajectory]:
    """(name, trajectory); a kind is built for ``duration`` (and ``seed`` for "thesis")."""
    if not isinstance(trajectory, str):
        return str(getattr(trajectory, "name", type(trajectory).__name__)), trajectory
    kw: dict[str, object] = {"duration": duration}
    if trajectory == "thesis":
        kw["seed"] = seed
    return trajectory, make_trajectory(trajectory, spec, **kw)


@dataclass(frozen=True)
class _Clock:
    """A run's physics steps and which of them are sampled.

    Attributes:
        physics_rate_hz: integration rate, Hz. wrench_rate_hz: F/T rate, Hz.
        n_steps: physics steps. joints: the steps with a joint state (and IMU sample).
        wrenches: the steps with an F/T sample.
    """

    physics_rate_hz: float
    wrench_rate_hz: float
    n_steps: int
    joints: slice | np.ndarray
    wrenches: slice


def _clock(duration: float, rate_hz: float, wrench_rate_hz: float | None, physics_rate_hz: float | None,
           irregular_stamps: bool = False, seed: int = 0) -> _Clock:
    wrench_hz = float(rate_hz if wrench_rate_hz is None else wrench_rate_hz)
    physics_hz = default_physics_rate([rate_hz, wrench_hz]) if physics_rate_hz is None else physics_rate_hz
    joint_stride = sample_stride(physics_hz, rate_hz, "rate_hz")
    wrench_stride = sample_stride(physics_hz, wrench_hz, "wrench_rate_hz")
    n_steps = int(round(duration * rate_hz)) * joint_stride
    joints: slice | np.ndarray = slice(0, n_steps, joint_stride)
    if irregular_stamps:
        joints = irregular_steps(n_steps, joint_stride, np.random.default_rng([int(seed), STAMP_STREAM]))
    return _Clock(float(physics_hz), wrench_hz, n_steps, joints, slice(0, n_steps, wrench_stride))


def irregular_steps(n_steps: int, stride: int, rng: np.random.Generator) -> np.ndarray:
    """Physics steps sampled at irregular intervals of ``stride`` steps on average (module docstring).

    Each interval is ``stride`` times a Gamma(4, 1/4) draw (mean 1, std 0.5) kept within
    :data:`IRREGULAR_GAPS` of it and at least one step: at 100 Hz, 2 to 30 ms."""
    gaps = np.clip(rng.gamma(4.0, 0.25, n_steps // max(stride, 1) + 16), *IRREGULAR_GAPS) * stride
    steps = np.cumsum(np.maximum(np.round(gaps), 1).astype(int)) - int(max(round(gaps[0]), 1))
    return steps[steps < n_steps]


def _integrate(
    arm: ArmModel, traj: JointTrajectory, clock: _Clock, bandwidth_hz: float, damping_ratio: float,
    schedule: WorkSchedule | None, efforts: EffortModel | None, progress: Callable[[float], None] | None,
) -> StepRecording:
    """Every physics step of the run, from rest at ``traj(0)``, under computed-torque control."""
    t_steps = np.arange(clock.n_steps) / clock.physics_rate_hz
    w = 2.0 * np.pi * bandwidth_hz
    hook = ScheduleHook(arm, schedule) if schedule is not None else None
    stepper = ArmStepper(arm, kp=w * w, kd=2.0 * damping_ratio * w, hook=hook,
                         friction=efforts.friction if efforts is not None else None)
    q_ref, dq_ref, ddq_ref = traj(t_steps)
    stepper.reset(q_ref[0], dq_ref[0])
    return stepper.run(t_steps, q_ref, dq_ref, ddq_ref, progress=progress)


def _wrench_signals(
    rng: np.random.Generator, arm: ArmModel, rec: StepRecording, clock: _Clock, levels: SensorNoise,
    heaviest: float, ft_bias: Sequence[float] | None, ft_drift: bool | float,
) -> dict[str, Any]:
    """The F/T samples: the true wrench plus the sensor's offset (drawn first) and noise."""
    wrench_t = rec.t[clock.wrenches]
    true_wrench = read_wrench_in_sensor(arm, rec.sensordata[clock.wrenches])
    offset = FtOffset.draw(rng, heaviest * STANDARD_GRAVITY, ft_bias, ft_drift if len(wrench_t) > 0 else False)
    bias, _ = offset.series(rng, wrench_t, float(wrench_t[0]) if len(wrench_t) else 0.0)
    ft_std = np.array([levels.force] * 3 + [levels.torque] * 3)
    wrench = true_wrench + bias + rng.normal(0.0, 1.0, true_wrench.shape) * ft_std
    return {"wrench_t": wrench_t, "wrench_in_sensor": wrench, "true_wrench_in_sensor": true_wrench,
            "true_ft_bias": bias}


def _joint_signals(
    rng: np.random.Generator, rec: StepRecording, clock: _Clock, levels: SensorNoise, n: int,
) -> dict[str, Any]:
    """The joint states with the nominal noise (positions, speeds, efforts) and their truth."""
    js = clock.joints
    true_q, true_dq = rec.q[js], rec.dq[js]
    joint_q = true_q + rng.normal(0.0, levels.joint_position, true_q.shape)
    joint_dq = true_dq + rng.normal(0.0, levels.joint_velocity, true_dq.shape)
    joint_effort = rec.tau[js] + rng.normal(0.0, levels.joint_effort, true_q.shape)
    return {"joint_t": rec.t[js], "joint_q": joint_q, "joint_dq": joint_dq, "joint_effort": joint_effort,
            "true_q": true_q, "true_dq": true_dq, "true_ddq": rec.ddq[js], "true_joint_torque": rec.tau[js],
            "tracking_error_max": np.max(np.abs(rec.q_ref - rec.q), axis=0) if clock.n_steps else np.zeros(n)}


def _effort_signals(
    rec: StepRecording, clock: _Clock, levels: SensorNoise, efforts: EffortModel | None, noise: str, seed: int,
    n: int,
) -> dict[str, Any]:
    """What the joint-torque sensor reports (its own random stream), or the nominal noise's description."""
    if efforts is None:
        return {"true_joint_friction": np.zeros((0, n)), "effort_model": "",
                "effort_noise_std": np.full(n, levels.joint_effort), "effort_scale": np.ones(n)}
    sensor = efforts if noise != "none" else efforts.without_noise()
    tau_friction = rec.tau_friction[clock.joints] if rec.tau_friction is not None else np.zeros((0, n))
    js = clock.joints
    effort = sensor.measure(rec.tau[js], np.random.default_rng([int(seed), EFFORT_STREAM]), rec.t[js], rec.q[js],
                            rec.dq[js], tau_friction if len(tau_friction) else None)
    return {"joint_effort": effort,
            "true_joint_friction": tau_friction, "effort_model": efforts.name,
            "effort_noise_std": sensor.noise_std, "effort_scale": efforts.scale,
            **({"effort_load_friction": efforts.friction.load} if efforts.friction.load_dependent else {})}


def _imu_signals(
    rng: np.random.Generator, arm: ArmModel, rec: StepRecording, clock: _Clock, levels: SensorNoise, imu: bool,
) -> dict[str, Any]:
    """The IMU samples (gyro, then accelerometer noise), at the joint states' steps; empty without an IMU."""
    if not imu:
        return {"imu_frame": None, "imu_t": np.zeros(0), "imu_gyro_in_imu": np.zeros((0, 3)),
                "imu_specific_force_in_imu": np.zeros((0, 3))}
    gyro, specific_force = read_imu(arm, rec.sensordata[clock.joints])
    gyro += rng.normal(0.0, levels.gyro, gyro.shape)
    specific_force += rng.normal(0.0, levels.accelerometer, specific_force.shape)
    return {"imu_frame": IMU_FRAME, "imu_t": rec.t[clock.joints], "imu_gyro_in_imu": gyro,
            "imu_specific_force_in_imu": specific_force}


def _schedule_truth(schedule: WorkSchedule) -> dict[str, Any]:
    """A work cycle's changes of the held payload and its contacts, as the run records them."""
    return {"truth_change_t": np.array([t for t, _ in schedule.changes]),
            "truth_phis": np.array([p.phi for _, p in schedule.changes]).reshape(-1, 10),
            "contact_spans": np.array([[c.t_start, c.t_end] for c in schedule.contacts]).reshape(-1, 2)}


def simulate(
    robot: str | RobotSpec = "panda", payload: str | Payload | InertialParameters = "hammer",
    trajectory: str | JointTrajectory = "wrist", duration: float = 10.0, rate_hz: float = 1000.0,
    wrench_rate_hz: float | None = None, noise: str = "moderate", seed: int = 0,
    ft_bias: Sequence[float] | None = None, ft_drift: bool | float = True,
    sensor_xyz_in_flange: Sequence[float] = (0.0, 0.0, 0.0), sensor_rpy_in_flange: Sequence[float] = (0.0, 0.0, 0.0),
    imu: bool = True, progress: Callable[[float], None] | None = None,
    imu_xyz_in_sensor: Sequence[float] = DEFAULT_IMU_XYZ_IN_SENSOR,
    imu_rpy_in_sensor: Sequence[float] = (0.0, 0.0, 0.0),
    physics_rate_hz: float | None = None, bandwidth_hz: float = 12.0, damping_ratio: float = 1.0,
    schedule: WorkSchedule | None = None, efforts: EffortModel | None = None, arm_mismatch: ArmMismatch | None = None,
    irregular_stamps: bool = False,
) -> SimulatedRun:
    """Simulate ``robot`` carrying ``payload`` along ``trajectory``; returns a :class:`SimulatedRun`.

    Args:
        robot: a name of :data:`~payload_estimator.robots.ROBOT_NAMES`, or any arm's spec
            (:meth:`~payload_estimator.robots.RobotSpec.from_urdf`).
        payload: catalogue name, :class:`Payload`, or inertial parameters in S; :data:`NO_PAYLOAD`
            ("none") or zero inertial parameters for the unloaded arm.
        trajectory: a kind for :func:`~payload_estimator.sim.trajectories.make_trajectory`
            (built with ``duration``; ``"thesis"`` also with ``seed``) or a trajectory.
        duration: simulated time, s (a shorter trajectory's last pose is held).
        rate_hz: joint-state and IMU sample rate, Hz.
        wrench_rate_hz: F/T sample rate, Hz (default ``rate_hz``; e.g. 100 for the xArm's sensor).
        noise: F/T noise level (none/low/moderate/high, :func:`~payload_estimator.core.noise.get_noise`);
            joint and IMU noise are nominal (:class:`SensorNoise`), and zero for "none".
        seed: seeds every random draw (module docstring).
        ft_bias: (6,) constant F/T offset [N, N·m]; None draws one with std
            :data:`~payload_estimator.sim.sensor_noise.FT_BIAS_FRACTION` of the payload weight per
            axis (times 5 cm for torques).
        ft_drift: add a slow drift to the offset (random linear trend plus random walk); a number: that
            many times the default drift.
        sensor_xyz_in_flange: sensor origin in the flange frame, m.
        sensor_rpy_in_flange: sensor orientation in the flange frame, roll/pitch/yaw, rad.
        imu: include an IMU (frame ``imu_link``).
        progress: called with the completed fraction (0 to 1) about 100 times.
        imu_xyz_in_sensor: IMU origin in S, m.
        imu_rpy_in_sensor: IMU orientation in S, roll/pitch/yaw, rad.
        physics_rate_hz: integration rate (default: the smallest common
            multiple of the sample rates of at least 1 kHz).
        bandwidth_hz: computed-torque bandwidth ``w / 2 pi``, Hz (``Kp = w²``).
        damping_ratio: computed-torque damping ``zeta`` (``Kd = 2 zeta w``).
        schedule: a work cycle: payload changes and contacts (:class:`WorkSchedule`); the
            controller knows the payload held at every instant (its model is the simulated one).
        efforts: a joint-torque sensor (e.g. ``EffortModel.for_robot(robot)``): its friction acts
            on the joints (the controller compensates it) and ``joint_effort`` is ``scale * tau +
            noise`` (zero noise for ``noise="none"``). None: no friction, ``joint_effort`` is the
            applied torque plus the nominal joint noise.
        arm_mismatch: simulate an arm whose links differ from the URDF (the run's ``urdf`` stays
            the nominal one, ``true_urdf`` is the one simulated). None: the arm is its URDF.
        irregular_stamps: joint states at irregular intervals, ``1 / rate_hz`` on average (module docstring).
    """
    spec = resolve_robot(robot)
    payload_name, payload_model, params = resolve_payload(payload)
    traj_name, traj = _resolve_trajectory(trajectory, spec, duration, seed)
    levels = SensorNoise.from_level(noise)
    clock = _clock(duration, rate_hz, wrench_rate_hz, physics_rate_hz, irregular_stamps, seed)
    urdf, arm = robot_arm_model(spec, payload_model, clock.physics_rate_hz, imu, sensor_xyz_in_flange,
                                sensor_rpy_in_flange, imu_xyz_in_sensor, imu_rpy_in_sensor, arm_mismatch)
    n = spec.n_joints
    if efforts is not None and efforts.n_joints != n:
        raise ConfigurationError(f"the effort model is for {efforts.n_joints} joints, the {spec.name} has {n}")
    rec = _integrate(arm, traj, clock, bandwidth_hz, damping_ratio, schedule, efforts, progress)
    if schedule is not None:
        set_payload(arm, params)  # the model as built
    schedule = schedule or WorkSchedule()
    heaviest = max([params.mass] + [p.mass for _, p in schedule.changes])
    rng = np.random.default_rng(seed)  # drawn in the order of the module docstring
    wrench = _wrench_signals(rng, arm, rec, clock, levels, heaviest, ft_bias, ft_drift)
    joints = _joint_signals(rng, rec, clock, levels, n)
    efforts_read = _effort_signals(rec, clock, levels, efforts, noise, seed, n)
    imu_read = _imu_signals(rng, arm, rec, clock, levels, imu)
    return SimulatedRun(
        robot=spec.name, urdf=urdf, sensor_frame=SENSOR_FRAME, joint_names=spec.joint_names,
        payload_name=payload_name, payload_phi=params.phi, trajectory=traj_name, noise=noise, seed=int(seed),
        rate_hz=float(rate_hz), wrench_rate_hz=clock.wrench_rate_hz, physics_rate_hz=clock.physics_rate_hz,
        torque_clipped_steps=rec.clipped_steps, true_urdf=arm.urdf if arm_mismatch is not None else "",
        **wrench, **{**joints, **efforts_read}, **imu_read, **_schedule_truth(schedule),
    )
