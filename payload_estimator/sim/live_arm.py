"""A simulated arm driven live: a MuJoCo arm holding a payload that follows references as they come.

Where :class:`~payload_estimator.sim.live.LiveRun` replays a run simulated beforehand, a
:class:`LiveArm` is integrated as time goes on, so that a controller's commands can change its
motion: the simulator node advances it in real time (:meth:`LiveArm.advance`) and swaps its
reference when a ``FollowJointTrajectory`` goal arrives or is cancelled.

* It starts at rest at a pose (the robot's home by default), holding the payload.
* Its reference is one of: *hold* (rest at a pose), *follow* (a
  :class:`~payload_estimator.excitation.trajectory.JointTrajectory` from a start time), *stop*
  (:func:`~payload_estimator.excitation.trajectory.braking_trajectory` from the reference state at
  that moment, within the joint acceleration and jerk limits of the robot, as a controller does
  when its goal is cancelled). Whatever follows, the pose is then held.
* Physics, controller and sensors are those of :func:`~payload_estimator.sim.mujoco_sim.simulate`
  (the same :class:`~payload_estimator.sim.stepper.ArmStepper`, model, noise levels and F/T
  offset with drift, opt-in joint friction, effort sensor and model mismatch), so a trajectory
  followed from the start pose gives the very states of a batch run of that trajectory.
* The wrench is also given as the robot's configured source reports it
  (:class:`~payload_estimator.sim.bag_writer.SourceWrench`, as for simulated bags and the replay), at
  the measured joint positions of the same physics step.

Times are "arm time", s, from the arm's creation: step ``k`` of the physics is at ``k / physics_rate_hz``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from payload_estimator.core.inertia import InertialParameters
from payload_estimator.core.samples import STANDARD_GRAVITY
from payload_estimator.errors import ConfigurationError, InputError
from payload_estimator.excitation.trajectory import JointTrajectory, braking_trajectory
from payload_estimator.robots import RobotSpec, resolve_robot
from payload_estimator.settings import Settings, settings_for_robot
from payload_estimator.sim.bag_writer import SourceWrench
from payload_estimator.sim.efforts import EFFORT_STREAM, ArmMismatch, EffortModel
from payload_estimator.sim.mujoco_model import SENSOR_FRAME, read_imu, read_wrench_in_sensor, robot_arm_model
from payload_estimator.sim.mujoco_sim import default_physics_rate, resolve_payload, sample_stride
from payload_estimator.sim.payloads import Payload
from payload_estimator.sim.sensor_noise import FtOffset, SensorNoise
from payload_estimator.sim.stepper import ArmStepper, StepRecording

__all__ = ["LiveArm", "LiveSamples", "ArmState", "HOLD", "FOLLOW", "STOP", "START_TOLERANCE"]

HOLD, FOLLOW, STOP = "hold", "follow", "stop"
"""The kinds of reference."""
START_TOLERANCE = 0.01
"""Largest distance (rad, any joint) between a trajectory followed and the current reference."""


@dataclass(frozen=True)
class ArmState:
    """The arm at one physics step.

    Attributes:
        t: arm time, s.
        q_ref, dq_ref, ddq_ref: (n,) the reference, rad, rad/s, rad/s².
        q, dq: (n,) the simulated joint state (noise-free), rad, rad/s.
        mode: :data:`HOLD`, :data:`FOLLOW` or :data:`STOP`.
        finished: the reference has reached its end (always True when holding).
    """

    t: float
    q_ref: np.ndarray
    dq_ref: np.ndarray
    ddq_ref: np.ndarray
    q: np.ndarray
    dq: np.ndarray
    mode: str
    finished: bool

    @property
    def tracking_error(self) -> np.ndarray:
        """(n,) ``q_ref - q``, rad."""
        return self.q_ref - self.q


@dataclass(frozen=True, eq=False)
class LiveSamples:
    """The samples of one :meth:`LiveArm.advance`, each stream in time order.

    Joint states (rate ``rate_hz``):
        joint_t: (N,) s. joint_q: (N, n) rad. joint_dq: (N, n) rad/s. joint_effort: (N, n) N·m
        (measured, with noise). q_ref: (N, n) the reference, rad. true_q, true_dq, true_ddq: (N, n)
        the simulated state and acceleration, rad, rad/s, rad/s². true_joint_torque: (N, n) the
        motors' torque (friction included), N·m.
    Wrench (rate ``wrench_rate_hz``):
        wrench_t: (M,) s. wrench_in_sensor: (M, 6) [f N, tau N·m], the payload on the sensor, in S,
        with offset and noise. wrench: (M, 6) the same as the configured source reports it.
        true_wrench_in_sensor: (M, 6) noise- and offset-free. ft_bias: (M, 6) the offset added.
    IMU (rate ``rate_hz``, empty without an IMU):
        imu_t: (K,) s. imu_gyro_in_imu: (K, 3) rad/s. imu_specific_force_in_imu: (K, 3) m/s².
    """

    joint_t: np.ndarray
    joint_q: np.ndarray
    joint_dq: np.ndarray
    joint_effort: np.ndarray
    q_ref: np.ndarray
    true_q: np.ndarray
    true_dq: np.ndarray
    true_ddq: np.ndarray
    wrench_t: np.ndarray
    wrench_in_sensor: np.ndarray
    wrench: np.ndarray
    true_wrench_in_sensor: np.ndarray
    ft_bias: np.ndarray
    imu_t: np.ndarray
    imu_gyro_in_imu: np.ndarray
    imu_specific_force_in_imu: np.ndarray
    true_joint_torque: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))


class _Hold:
    """Rest at ``q`` for ever."""

    name = HOLD

    def __init__(self, q: np.ndarray) -> None:
        self.q = np.array(q, dtype=float)

    @property
    def duration(self) -> float:
        return 0.0

    def __call__(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n = len(np.atleast_1d(t))
        zeros = np.zeros((n, len(self.q)))
        return np.tile(self.q, (n, 1)), zeros, zeros.copy()


class LiveArm:
    """A robot holding a payload, integrated as time goes on (module docstring).

    Args:
        robot: one of :data:`~payload_estimator.robots.ROBOT_NAMES`, or any arm's spec
            (:meth:`~payload_estimator.robots.RobotSpec.from_urdf`).
        payload: catalogue name, :class:`Payload`, or inertial parameters in S.
        q_start: (n,) the pose it starts from at rest, rad (default: the robot's home).
        settings: the robot's configuration, for the wrench's convention (default: its preset;
            required for an arm without one).
        noise: F/T noise level of Nadeau et al.'s Table II (joint and IMU noise nominal, 0 for "none").
        seed: seeds every random draw.
        rate_hz: joint-state and IMU rate, Hz. wrench_rate_hz: F/T rate, Hz (default ``rate_hz``).
        imu: simulate an IMU (frame ``imu_link``).
        ft_bias: (6,) constant F/T offset [N, N·m]; None draws one (as :func:`simulate`).
        ft_drift: let the offset drift.
        bandwidth_hz, damping_ratio: computed-torque gains.
        physics_rate_hz: integration rate (default: as :func:`simulate`).
        efforts: a joint-torque sensor with its friction (as :func:`simulate`; its noise drawn from
            ``default_rng([seed, EFFORT_STREAM])``), or None.
        arm_mismatch: simulate an arm unlike its URDF (as :func:`simulate`), or None.

    Attributes:
        spec (the arm), robot (its name), joint_names, urdf (the nominal URDF, what the estimator
        gets), true_urdf (the one simulated), sensor_frame, imu_frame (None without an IMU), truth (the payload's
        inertial parameters in S), wrench_frame_id (the frame the source's wrench is expressed in),
        ddq_max, dddq_max (n,) the limits a stop respects, rad/s², rad/s³.
    """

    def __init__(
        self,
        robot: str | RobotSpec = "panda",
        payload: str | Payload | InertialParameters = "claw_hammer",
        q_start: ArrayLike | None = None,
        settings: Settings | None = None,
        noise: str = "moderate",
        seed: int = 0,
        rate_hz: float = 1000.0,
        wrench_rate_hz: float | None = None,
        imu: bool = False,
        ft_bias: Sequence[float] | None = None,
        ft_drift: bool = True,
        bandwidth_hz: float = 12.0,
        damping_ratio: float = 1.0,
        physics_rate_hz: float | None = None,
        efforts: EffortModel | None = None,
        arm_mismatch: ArmMismatch | None = None,
    ) -> None:
        spec = resolve_robot(robot)
        self.spec = spec
        self.robot = spec.name
        self.joint_names = spec.joint_names
        self.ddq_max = np.array(spec.ddq_max, dtype=float)
        self.dddq_max = np.array(spec.dddq_max, dtype=float)
        self.payload_name, payload_model, self.truth = resolve_payload(payload)
        settings = settings if settings is not None else settings_for_robot(spec.name)
        if settings.robot != spec.parameters.get("robot", ""):
            raise ConfigurationError(f"settings are for {settings.robot or 'an arm without a preset'}, "
                             f"the arm is a {spec.name}")
        self.rate_hz = float(rate_hz)
        self.wrench_rate_hz = float(rate_hz if wrench_rate_hz is None else wrench_rate_hz)
        self.physics_rate_hz = float(physics_rate_hz or default_physics_rate([self.rate_hz, self.wrench_rate_hz]))
        self._joint_stride = sample_stride(self.physics_rate_hz, self.rate_hz, "rate_hz")
        self._wrench_stride = sample_stride(self.physics_rate_hz, self.wrench_rate_hz, "wrench_rate_hz")
        self.urdf, self._model = robot_arm_model(spec, payload_model, self.physics_rate_hz, imu,
                                                 arm_mismatch=arm_mismatch)
        self.true_urdf = self._model.urdf
        if efforts is not None and efforts.residual is not None:
            raise ConfigurationError("the live arm has no arm residual (simulate and demo have: --real-arm)")
        if efforts is not None and efforts.n_joints != spec.n_joints:
            raise ConfigurationError(
                f"the effort model is for {efforts.n_joints} joints, the {spec.name} has {spec.n_joints}")
        self.efforts = efforts if efforts is None or noise != "none" else efforts.without_noise()
        self._effort_rng = np.random.default_rng([int(seed), EFFORT_STREAM])
        self.sensor_frame = SENSOR_FRAME
        self.imu_frame = "imu_link" if imu else None
        self._convert = SourceWrench(settings, self.urdf, SENSOR_FRAME, self.joint_names)
        self.wrench_frame_id = self._convert.convention.expressed_in
        self.noise = SensorNoise.from_level(noise)
        self._rng = np.random.default_rng(seed)
        self._offset = FtOffset.draw(self._rng, self.truth.mass * STANDARD_GRAVITY, ft_bias, ft_drift)
        self._walk: tuple[float, np.ndarray] | None = None

        q0 = np.array(spec.q_home if q_start is None else q_start, dtype=float)
        if q0.shape != (spec.n_joints,):
            raise ConfigurationError(f"q_start must have {spec.n_joints} entries, got shape {q0.shape}")
        if np.any(q0 < spec.q_min) or np.any(q0 > spec.q_max):
            raise ConfigurationError("q_start is outside the joint limits")
        w = 2.0 * np.pi * bandwidth_hz
        self._stepper = ArmStepper(self._model, kp=w * w, kd=2.0 * damping_ratio * w,
                                   friction=efforts.friction if efforts is not None else None)
        self._stepper.reset(q0, np.zeros_like(q0))
        self._k = 0  # next physics step
        self._ref: JointTrajectory = _Hold(q0)
        self._ref_start = 0.0
        self._mode = HOLD
        self._last_q = q0.copy()
        self._last_dq = np.zeros_like(q0)

    # ------------------------------------------------------------- reference
    @property
    def t(self) -> float:
        """Arm time of the next physics step: how far the arm has been advanced, s."""
        return self._k / self.physics_rate_hz

    def reference(self, t: float | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(n,) reference ``(q, dq, ddq)`` at arm time ``t`` (default :attr:`t`), rad, rad/s, rad/s²."""
        t = self.t if t is None else float(t)
        q, dq, ddq = self._ref(np.array([t - self._ref_start]))
        return q[0], dq[0], ddq[0]

    def hold(self, q: ArrayLike | None = None) -> None:
        """Rest at ``q`` (n,) rad, default the current reference position.

        Use :meth:`stop` to come to rest from a motion: holding a pose while moving asks for a
        step in speed."""
        self._set(_Hold(self.reference()[0] if q is None else np.asarray(q, dtype=float)), self.t, HOLD)

    def follow(self, traj: JointTrajectory, t_start: float | None = None,
               tolerance: float = START_TOLERANCE) -> None:
        """Follow ``traj`` from arm time ``t_start`` (default: the current time :attr:`t`).

        Before ``t_start``, its first pose is held.

        Raises:
            InputError: the trajectory is not for this arm's joints, or where it is now (its
                pose at ``t - t_start``) is more than ``tolerance`` rad from the current reference.
        """
        t_start = self.t if t_start is None else float(t_start)
        q_new = traj(np.array([self.t - t_start]))[0][0]
        if q_new.shape != (len(self.joint_names),):
            raise InputError(f"the trajectory has {q_new.shape[-1]} joints, the arm {len(self.joint_names)}")
        gap = float(np.max(np.abs(q_new - self.reference()[0])))
        if gap > tolerance:
            raise InputError(f"the trajectory starts {gap:.3g} rad from the current reference "
                             f"(tolerance {tolerance:g} rad)")
        self._set(traj, t_start, FOLLOW)

    def stop(self) -> JointTrajectory:
        """Brake smoothly to rest from the current reference state within the acceleration and jerk limits.

        Returns the braking trajectory; its time 0 is the current time."""
        q, dq, ddq = self.reference()
        braking = braking_trajectory(q, dq, ddq, self.ddq_max, self.dddq_max)
        self._set(braking, self.t, STOP)
        return braking

    def _set(self, ref: JointTrajectory, t_start: float, mode: str) -> None:
        self._ref, self._ref_start, self._mode = ref, float(t_start), mode

    @property
    def mode(self) -> str:
        """:data:`HOLD`, :data:`FOLLOW` or :data:`STOP`."""
        return self._mode

    @property
    def end_time(self) -> float:
        """Arm time when the current reference ends, s (its start for a hold)."""
        return self._ref_start + float(self._ref.duration)

    @property
    def finished(self) -> bool:
        """The current reference has ended (a hold always has)."""
        return self._mode == HOLD or self.t >= self.end_time

    def state(self) -> ArmState:
        """The reference and the simulated state at the last step taken (the start before any)."""
        t_last = max(self._k - 1, 0) / self.physics_rate_hz
        q_ref, dq_ref, ddq_ref = self.reference(t_last)
        return ArmState(t_last, q_ref, dq_ref, ddq_ref, self._last_q.copy(), self._last_dq.copy(), self._mode,
                        self.finished)

    # ------------------------------------------------------------- stepping
    def advance(self, t_until: float) -> LiveSamples:
        """Integrate every physics step up to arm time ``t_until`` (included), s; the samples taken."""
        k_end = int(np.floor(float(t_until) * self.physics_rate_hz + 1e-9)) + 1
        k = np.arange(self._k, max(self._k, k_end))
        t = k / self.physics_rate_hz
        q_ref, dq_ref, ddq_ref = self._ref(t - self._ref_start)
        rec = self._stepper.run(t, q_ref, dq_ref, ddq_ref)
        self._k = max(self._k, k_end)
        if len(k):
            self._last_q, self._last_dq = rec.q[-1].copy(), rec.dq[-1].copy()
        return self._samples(k, rec)

    def _samples(self, k: np.ndarray, rec: StepRecording) -> LiveSamples:
        levels, rng, n = self.noise, self._rng, len(self.joint_names)
        js = k % self._joint_stride == 0
        ws = k % self._wrench_stride == 0
        joint_t = rec.t[js]
        true_q, true_dq = rec.q[js], rec.dq[js]
        joint_q = true_q + rng.normal(0.0, levels.joint_position, true_q.shape)
        joint_dq = true_dq + rng.normal(0.0, levels.joint_velocity, true_dq.shape)
        joint_effort = rec.tau[js] + rng.normal(0.0, levels.joint_effort, true_q.shape)
        if self.efforts is not None:  # its own stream: the draw above stays, so later draws do not move
            joint_effort = self.efforts.measure(rec.tau[js], self._effort_rng)
        # the wrench source's conversion at the measured joint positions of the same step
        q_meas = rec.q.copy()
        q_meas[js] = joint_q
        wrench_t = rec.t[ws]
        true_wrench = read_wrench_in_sensor(self._model, rec.sensordata[ws]).reshape(-1, 6)
        bias, self._walk = self._offset.series(rng, wrench_t, 0.0, self._walk)
        ft_std = np.array([levels.force] * 3 + [levels.torque] * 3)
        wrench_S = true_wrench + bias + rng.normal(0.0, 1.0, true_wrench.shape) * ft_std
        wrench = self._convert(wrench_S, q_meas[ws]) if len(wrench_t) else np.zeros((0, 6))
        if self.imu_frame is not None:
            imu_t = joint_t
            gyro, specific_force = read_imu(self._model, rec.sensordata[js])
            gyro = gyro.reshape(-1, 3) + rng.normal(0.0, levels.gyro, (len(imu_t), 3))
            specific_force = specific_force.reshape(-1, 3) + rng.normal(0.0, levels.accelerometer, (len(imu_t), 3))
        else:
            imu_t, gyro, specific_force = np.zeros(0), np.zeros((0, 3)), np.zeros((0, 3))
        return LiveSamples(
            joint_t=joint_t, joint_q=joint_q.reshape(-1, n), joint_dq=joint_dq.reshape(-1, n),
            joint_effort=joint_effort.reshape(-1, n), q_ref=rec.q_ref[js].reshape(-1, n),
            true_q=true_q.reshape(-1, n), true_dq=true_dq.reshape(-1, n), true_ddq=rec.ddq[js].reshape(-1, n),
            wrench_t=wrench_t, wrench_in_sensor=wrench_S, wrench=wrench,
            true_wrench_in_sensor=true_wrench, ft_bias=bias, imu_t=imu_t, imu_gyro_in_imu=gyro,
            imu_specific_force_in_imu=specific_force, true_joint_torque=rec.tau[js].reshape(-1, n),
        )
