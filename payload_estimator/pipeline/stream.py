"""The estimation stream: raw robot signals in, estimates out.

This is the one object that the ROS node, ``replay``, ``demo`` and the
benchmarks all drive. Messages (joint states, wrenches, IMU samples) go in
with their own stamps, at their own rates; :meth:`EstimationStream.process`
turns whatever can be decided into sensor-frame samples and feeds the
estimator; :meth:`EstimationStream.update_estimate` solves for the current
estimate (and advances the convergence monitor), :attr:`EstimationStream.last`
reads it again.

The chain, for every batch the aligner releases::

    aligner (uniform grid, no extrapolation, gaps split segments)
      -> wrench into the sensor frame, with the raw joint positions
      -> the same causal low-pass G on every signal; joint accelerations and
         the IMU's angular acceleration by central differences (one-sample
         delay everywhere, so the phase lags match)
      -> sensor-frame kinematics from the filtered joint states (pinocchio),
         or from the IMU
      -> SensorSamples, decimated to the estimator rate -> estimator.update

Without a force/torque sensor (``joint_torques``) the joint states' efforts take the wrench's place:
filtered like every other signal, less the unloaded arm's own torques, and mapped through the
Jacobian into a wrench with its information (:mod:`payload_estimator.pipeline.joint_torques`).

Bad input never raises: it is dropped, counted in :attr:`health` with a clear
log line, and the estimate stays what it was.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from payload_estimator.core.convergence import ConvergenceCriteria, ConvergenceMonitor
from payload_estimator.core.estimators import InsufficientData
from payload_estimator.core.inertia import InertialParameters
from payload_estimator.core.results import Estimate
from payload_estimator.core.samples import MAX_ABS_VALUE, STANDARD_GRAVITY, SensorSamples
from payload_estimator.core.signal_noise import SignalNoise
from payload_estimator.core.tracking import PayloadModel, PayloadTracker, TrackingState
from payload_estimator.pipeline.align import MAX_STAMP_S, StreamAligner
from payload_estimator.pipeline.arm_dynamics import ArmCalibration, ArmDynamics
from payload_estimator.pipeline.filters import (
    MatchedDelay,
    MatchedDifferentiator,
    PositionVelocityDifferentiator,
    StepResponse,
    second_derivative_noise_gain,
    settling_time_s,
)
from payload_estimator.pipeline.health import (
    LENGTH_MISMATCH,
    MISSING_EFFORT,
    MISSING_JOINT,
    NON_FINITE,
    OUT_OF_RANGE,
    SOLVER_FAILURE,
    WRONG_FRAME,
    InputHealth,
)
from payload_estimator.pipeline.imu import ImuMount, ImuProcessor
from payload_estimator.pipeline.joint_torques import JointTorqueWrench
from payload_estimator.pipeline.kinematics import SensorKinematics
from payload_estimator.pipeline.wrench import SaturationCheck, WrenchConvention, wrench_to_sensor

__all__ = ["StreamConfig", "EstimationStream", "StreamEstimate", "JOINTS", "WRENCH", "IMU"]

JOINTS, WRENCH, IMU = "joint_states", "wrench", "imu"
"""Stream names, as they appear in diagnostics."""


def _paired_vectors(t: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """(N, 6) ``[a, b]`` for ``N`` stamps ``t`` and two arrays of 3-vectors, each (N, 3) or, for one
    stamp, (3,); None when the shapes do not pair up with the stamps."""
    n = len(t)
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    shapes = {(n, 3)} | ({(3,)} if n == 1 else set())
    if a.shape not in shapes or b.shape not in shapes:
        return None
    return np.hstack([a.reshape(n, 3), b.reshape(n, 3)])


@dataclass(frozen=True)
class StreamConfig:
    """Everything the stream needs to know about the robot and its signals.

    Attributes:
        urdf: the robot description (URDF XML).
        sensor_frame: frame the estimate is expressed in (the F/T sensor's
            measurement frame, or the flange when the wrench is the robot's estimate).
        joint_names: the arm joints to use; None: every 1-DoF joint of the URDF.
        extra_frames: frames the URDF lacks, each ``(name, parent, xyz, rpy)``
            (m, rad; e.g. from tf2 or the configuration), added before anything else.
        flange_frame: frame of the robot's load interface (Franka ``SetLoad``,
            xArm ``set_tcp_load``); None: the sensor frame.
        wrench: how the wrench source reports (frame, torque reference, sign).
        saturation: the sensor's range check, or None.
        imu_frame: frame of the IMU in the URDF, or None; ``imu_mount`` overrides it.
        imu_mount: pose of the IMU in the sensor frame, or None.
        motion_source: ``"joints"`` (omega, alpha, a and g from joint kinematics; any
            IMU is ignored) or ``"imu"`` (omega, alpha and a from the IMU, g from the
            joints; the IMU is then a required input like the others).
        use_joint_velocities: filter the driver's joint velocities instead of
            differentiating positions (when they are usable).
        R_world_base: orientation of the robot base in the world (tilted or wall mounts).
        gravity: magnitude of gravity, m/s².
        rate_hz: rate of the common time grid the streams are aligned to, Hz.
        cutoff_hz: cutoff of the low-pass applied to every signal, Hz.
        filter_order: Butterworth order of that low-pass.
        estimator_rate_hz: rate at which filtered samples enter the estimator, Hz.
        max_gap_s, reorder_window_s, clock_jump_s: alignment rules (see :class:`StreamAligner`).
        stale_after_s: a stream silent this long is reported stale.
        zero_phase: offline mode for recordings (bags): aligned data are kept
            and, at :meth:`EstimationStream.finish`, filtered forward and backward
            (no phase lag at all) and differentiated with central differences;
            the estimator sees nothing before ``finish()``.
        min_samples: samples the estimator needs before :meth:`EstimationStream.estimate`
            returns anything (a handful of samples gives meaningless numbers).
        joint_torques: the wrench comes from the joint states' efforts (no wrench input; ``wrench``
            and ``saturation`` are ignored), less the unloaded arm's torques.
        arm_calibration: the unloaded arm's calibration (joint torques only); None: the description's
            inertias and no friction.
        effort_std: (n,) effort noise per joint, N·m, the joints' weights (joint torques only); None:
            the calibration's residual.
        joint_space_rows: joint torques enter as joint-space rows (True, always but to compare), or as
            the plain pseudo-inverse wrench (:class:`~payload_estimator.pipeline.joint_torques.JointTorqueWrench`).
    """

    urdf: str
    sensor_frame: str
    joint_names: tuple[str, ...] | None = None
    extra_frames: tuple[tuple[str, str, tuple[float, float, float], tuple[float, float, float]], ...] = ()
    flange_frame: str | None = None
    wrench: WrenchConvention | None = None
    saturation: SaturationCheck | None = None
    imu_frame: str | None = None
    imu_mount: ImuMount | None = None
    motion_source: str = "joints"
    use_joint_velocities: bool = False
    R_world_base: np.ndarray = field(default_factory=lambda: np.eye(3))
    gravity: float = STANDARD_GRAVITY
    rate_hz: float = 1000.0
    cutoff_hz: float = 10.0
    filter_order: int = 4
    estimator_rate_hz: float = 100.0
    max_gap_s: float = 0.05
    reorder_window_s: float = 0.02
    clock_jump_s: float = 1.0
    stale_after_s: float = 0.5
    zero_phase: bool = False
    min_samples: int = 20
    convergence: ConvergenceCriteria = field(default_factory=ConvergenceCriteria)
    joint_torques: bool = False
    arm_calibration: ArmCalibration | None = None
    effort_std: tuple[float, ...] | None = None
    joint_space_rows: bool = True

    def __post_init__(self) -> None:
        if self.motion_source not in ("joints", "imu"):
            raise ValueError("motion_source must be 'joints' or 'imu'")
        if self.zero_phase and self.motion_source != "joints":
            raise ValueError("zero_phase supports motion_source 'joints' only")
        if self.motion_source == "imu" and self.imu_frame is None and self.imu_mount is None:
            raise ValueError("motion_source 'imu' needs imu_frame or imu_mount")
        if not 0 < self.cutoff_hz < self.rate_hz / 2:
            raise ValueError("cutoff_hz must be between 0 and half of rate_hz")
        if not 0 < self.estimator_rate_hz <= self.rate_hz:
            raise ValueError("estimator_rate_hz must be in (0, rate_hz]")


@dataclass(frozen=True)
class StreamEstimate:
    """An estimate with what the stream knows about it.

    Attributes:
        estimate: the estimator's result, in the sensor frame.
        t: time of the newest sample in it, s (on the input stamps' clock).
        converged: whether the convergence monitor accepts it; ``reason`` says why not.
        params_in_flange: the parameters in the flange frame.
        mass_com_converged: whether mass and COM alone have converged (the same as ``converged``
            when the criteria leave the inertia out).
        tracking: the payload tracker's state when the estimator follows the payload, else None.
    """

    estimate: Estimate
    t: float
    converged: bool
    reason: str
    params_in_flange: InertialParameters
    mass_com_converged: bool = False
    tracking: TrackingState | None = None


class EstimationStream:
    """Raw robot signals -> filtered sensor-frame samples -> estimator (module docstring).

    Args:
        config: the robot and signal configuration.
        estimator: any estimator of :mod:`payload_estimator.core.estimators`.
        health: where to count bad input; a new one if None.
    """

    def __init__(
        self, config: StreamConfig, estimator: PayloadModel, health: InputHealth | None = None
    ) -> None:
        self.config = config
        self.estimator = estimator
        self._changes_seen = 0
        self.kinematics = SensorKinematics(
            config.urdf,
            config.sensor_frame,
            config.joint_names,
            R_world_base=config.R_world_base,
            gravity_in_world=(0.0, 0.0, -config.gravity),
            extra_frames=config.extra_frames,
        )
        self.joint_names = self.kinematics.joint_names
        n = len(self.joint_names)
        self.wrench_convention = config.wrench or WrenchConvention(config.sensor_frame, None, 1.0)
        self.torque_wrench: JointTorqueWrench | None = None
        if config.joint_torques:
            dynamics = ArmDynamics(self.kinematics, config.arm_calibration)
            self.torque_wrench = JointTorqueWrench(
                dynamics, None if config.effort_std is None else np.asarray(config.effort_std, dtype=float),
                config.joint_space_rows)
        else:
            for frame in {self.wrench_convention.expressed_in, self.wrench_convention.reference_frame}:
                if not self.kinematics.has_frame(frame):
                    raise ValueError(f"wrench frame {frame!r} is not in the robot description")
        self.imu_mount = self._imu_mount()
        joint_columns = n * (1 + int(config.use_joint_velocities) + int(config.joint_torques))
        self._effort_columns = slice(joint_columns - n, joint_columns) if config.joint_torques else None
        streams = {JOINTS: joint_columns} if config.joint_torques else {JOINTS: joint_columns, WRENCH: 6}
        if self.imu_mount is not None:
            streams[IMU] = 6
        self.health = health if health is not None else InputHealth(expected_streams=list(streams))
        self.aligner = StreamAligner(
            streams,
            config.rate_hz,
            max_gap_s=config.max_gap_s,
            reorder_window_s=config.reorder_window_s,
            clock_jump_s=config.clock_jump_s,
            health=self.health,
            max_abs_value=MAX_ABS_VALUE,
        )
        args = (config.cutoff_hz, config.rate_hz)
        self._joint_filter: PositionVelocityDifferentiator | MatchedDifferentiator
        if config.use_joint_velocities:
            self._joint_filter = PositionVelocityDifferentiator(*args, n, config.filter_order)
        else:
            self._joint_filter = MatchedDifferentiator(*args, n, config.filter_order)
        self._wrench_filter = MatchedDelay(*args, n if config.joint_torques else 6, config.filter_order)
        """Delays the wrench, or the efforts (joint torques), exactly like the joint filter."""
        # Noise the pipeline puts into the accelerations it differentiates (errors in variables): the
        # encoders' white noise on the grid, through the matched second derivative and the arm.
        self._joint_noise = SignalNoise()
        self._lever_sq: float | None = None
        self._ddq_gain = (second_derivative_noise_gain(config.cutoff_hz, config.rate_hz, config.filter_order)
                          if not config.use_joint_velocities else 0.0)
        self._imu = (
            ImuProcessor(self.imu_mount, config.rate_hz, config.cutoff_hz, config.filter_order,
                         gravity_magnitude=config.gravity)
            if self.imu_mount is not None
            else None
        )
        self._decimation = max(1, int(round(config.rate_hz / config.estimator_rate_hz)))
        if isinstance(estimator, PayloadTracker):  # a change of payload reaches it through the filters
            estimator.step_response = StepResponse(config.cutoff_hz, config.rate_hz, config.filter_order)
        self.settling_s = settling_time_s(config.cutoff_hz, config.rate_hz, config.filter_order)
        """After every restart of the filters (the start, a gap), their output is held back this long."""
        self._settled_from = -np.inf
        self.samples_settling = 0
        self.convergence = ConvergenceMonitor(config.convergence)
        self.mass_com_convergence = ConvergenceMonitor(replace(config.convergence, inertia=False))
        self.paused = False
        self._break_pending = False
        """An input break (a gap, a restart, samples skipped while paused) the tracker is told of with the
        next samples it takes, never while paused."""
        self.last_sample_time: float | None = None
        self.samples_processed = 0
        self._name_cache: tuple[tuple[str, ...], np.ndarray] | None = None
        self._offline: list[list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = []
        self._last: StreamEstimate | None = None
        flange = config.flange_frame or config.sensor_frame
        R, p = self.kinematics.frame_pose(np.zeros((1, n)), config.sensor_frame, flange)
        self.R_flange_sensor, self.p_flange_sensor = R[0], p[0]

    # ------------------------------------------------------------------ set-up
    def _imu_mount(self) -> ImuMount | None:
        if self.config.motion_source != "imu":
            return None  # the IMU is a required stream only when it drives the motion
        if self.config.imu_mount is not None:
            return self.config.imu_mount
        if self.config.imu_frame is None:
            return None
        if not self.kinematics.has_frame(self.config.imu_frame):
            raise ValueError(f"IMU frame {self.config.imu_frame!r} is not in the robot description")
        q0 = np.zeros((1, len(self.joint_names)))
        R, p = self.kinematics.frame_pose(q0, self.config.imu_frame, self.config.sensor_frame)
        if not np.allclose(
            self.kinematics.frame_pose(q0 + 0.3, self.config.imu_frame, self.config.sensor_frame)[1], p
        ):
            raise ValueError("the IMU must be rigidly attached to the sensor frame")
        return ImuMount(R[0], p[0])

    # ------------------------------------------------------------------- input
    #
    # push_joint_states, push_wrench and push_imu are where input enters the pipeline. Each
    # checks what only it can (shapes, joint names, frames; a wrench's NaN/inf and range
    # before its saturation check) and counts what it drops; the rest is counted as received
    # (rates, staleness) and goes to the aligner, which at once drops and counts samples with
    # a NaN/inf or an out-of-range stamp or value. Before the call returns, every sample sent
    # is counted as received or as dropped (by reason), and every received one the aligner
    # dropped is counted too.

    def push_joint_states(
        self,
        stamps: float | np.ndarray,
        positions: np.ndarray,
        names: Sequence[str] | None = None,
        velocities: np.ndarray | None = None,
        wall_time: float | None = None,
        efforts: np.ndarray | None = None,
    ) -> int:
        """Joint states, one (``stamps`` a number, ``positions`` (k,)) or a batch (``stamps`` (N,),
        ``positions`` (N, k)), all sharing one ``names`` list.

        ``names``: the joint of each column, in any order and possibly with
        joints the stream does not use (as ``sensor_msgs/JointState`` has them);
        None: the columns are :attr:`joint_names`. ``velocities`` (same shape)
        are needed when the driver's velocities are used, ``efforts`` (N·m, same shape) when the
        wrench comes from joint torques. ``wall_time`` is the
        receive time for rate and staleness bookkeeping (default: now; playback
        passes the recorded time). Returns how many samples were received (0:
        all dropped, and counted); of those, the aligner drops and counts the ones
        with a NaN/inf or an out-of-range stamp or position.
        """
        t = np.atleast_1d(np.asarray(stamps, dtype=float)).reshape(-1)
        q = np.asarray(positions, dtype=float)
        single = q.ndim == 1
        q = q.reshape(1, -1) if single else q
        columns = tuple(names) if names is not None else self.joint_names
        what = f"{len(columns)} names" if names is not None else f"{len(columns)} joints"
        if q.ndim != 2 or q.shape[1] != len(columns) or len(q) != len(t):
            n = max(len(t), 1)  # a call whose arrays do not pair up drops at least one message
            self.health.report(LENGTH_MISMATCH, f"{what} but positions of shape {np.shape(positions)} for "
                               f"{len(t)} stamps; {n} messages dropped", JOINTS, n)
            return 0
        dq = None
        if self.config.use_joint_velocities:
            if velocities is not None and np.size(velocities) == q.size:
                dq = np.asarray(velocities, dtype=float).reshape(q.shape)
            else:
                self.health.report(LENGTH_MISMATCH, f"{what} but velocities of another length; "
                                   f"{len(t)} messages dropped", JOINTS, len(t))
                return 0
        tau = None
        if self.config.joint_torques:
            if efforts is not None and np.size(efforts) == q.size:
                tau = np.asarray(efforts, dtype=float).reshape(q.shape)
            else:
                got = "no efforts" if efforts is None or np.size(efforts) == 0 else f"{np.size(efforts)} efforts"
                self.health.report(MISSING_EFFORT, f"joint states with {what} but {got}: the wrench comes from joint "
                                   f"torques and needs an effort per joint; {len(t)} messages dropped", JOINTS,
                                   len(t))
                return 0
        if names is not None:
            index = self._joint_index(columns, len(t))
            if index is None:
                return 0
            q = q[:, index]
            dq = None if dq is None else dq[:, index]
            tau = None if tau is None else tau[:, index]
        rows = np.hstack([a for a in (q, dq, tau) if a is not None])
        return self._take(JOINTS, t, rows, wall_time)

    def push_wrench(
        self,
        stamp: float | np.ndarray,
        force: np.ndarray,
        torque: np.ndarray,
        frame_id: str = "",
        wall_time: float | None = None,
    ) -> int:
        """One wrench sample (or a batch: ``stamp`` (N,), ``force``/``torque`` (N, 3)) as the source reports it.

        ``frame_id`` (the message header's) must be the configured wrench frame,
        or empty. Samples with a NaN/inf or an out-of-range value are dropped
        before the saturation check (which would call them saturated). Returns
        how many samples were taken (0: all dropped, and counted; always 0 when the wrench comes
        from joint torques).
        """
        if self.config.joint_torques:
            return 0
        t = np.atleast_1d(np.asarray(stamp, dtype=float)).reshape(-1)
        n = max(len(t), 1)
        if frame_id and frame_id != self.wrench_convention.expressed_in:
            self.health.report(
                WRONG_FRAME,
                f"wrench in frame {frame_id!r}, expected {self.wrench_convention.expressed_in!r}; dropped "
                "(set the wrench frame parameter to the sensor's frame)",
                WRENCH,
                n,
            )
            return 0
        w = _paired_vectors(t, force, torque)
        if w is None:
            self.health.report(LENGTH_MISMATCH, f"wrench batch of {len(t)} stamps with force of shape "
                               f"{np.shape(force)} and torque of shape {np.shape(torque)}; dropped", WRENCH, n)
            return 0
        t, w = self._admit(WRENCH, t, w)
        if self.config.saturation is not None:
            keep = self.config.saturation.keep(w, self.health, WRENCH)
            t, w = t[keep], w[keep]
        return self._take(WRENCH, t, w, wall_time)

    def push_imu(
        self,
        stamp: float | np.ndarray,
        angular_velocity: np.ndarray,
        linear_acceleration: np.ndarray,
        frame_id: str = "",
        wall_time: float | None = None,
    ) -> int:
        """IMU sample(s): gyro (rad/s) and accelerometer specific force (m/s², +g up at rest), IMU frame.

        Returns how many samples were received (0: all dropped and counted, or the stream uses
        no IMU); the aligner drops and counts those with a NaN/inf or an out-of-range value.
        """
        if self._imu is None:
            return 0
        t = np.atleast_1d(np.asarray(stamp, dtype=float)).reshape(-1)
        n = max(len(t), 1)
        expected = self.config.imu_frame
        if frame_id and expected and frame_id != expected:
            self.health.report(WRONG_FRAME, f"IMU in frame {frame_id!r}, expected {expected!r}; dropped", IMU, n)
            return 0
        v = _paired_vectors(t, angular_velocity, linear_acceleration)
        if v is None:
            self.health.report(LENGTH_MISMATCH, f"IMU batch of {len(t)} stamps with angular velocity of shape "
                               f"{np.shape(angular_velocity)} and linear acceleration of shape "
                               f"{np.shape(linear_acceleration)}; dropped", IMU, n)
            return 0
        return self._take(IMU, t, v, wall_time)

    def _admit(self, stream: str, t: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The samples the aligner would keep; the others dropped and counted here: a NaN/inf stamp
        or value (``NON_FINITE``), a value beyond ``MAX_ABS_VALUE`` or a stamp beyond
        ``MAX_STAMP_S`` (``OUT_OF_RANGE``: a glitch or a unit error)."""
        finite = np.isfinite(t) & np.isfinite(rows).all(axis=1)
        in_range = (np.abs(t) <= MAX_STAMP_S) & (np.abs(rows) <= MAX_ABS_VALUE).all(axis=1)
        if in_range.all():  # in range implies finite
            return t, rows
        bad = int((~finite).sum())
        if bad:
            self.health.report(NON_FINITE, f"{bad} samples with NaN/inf dropped", stream, bad)
        far = int((finite & ~in_range).sum())
        if far:
            self.health.report(OUT_OF_RANGE, f"{far} samples with a value beyond {MAX_ABS_VALUE:g} (SI units) "
                               f"or a stamp beyond {MAX_STAMP_S:g} s dropped", stream, far)
        return t[in_range], rows[in_range]

    def _take(self, stream: str, t: np.ndarray, rows: np.ndarray, wall_time: float | None) -> int:
        """Count samples as received and hand them to the aligner; returns how many."""
        if len(t):
            self.health.note_sample(stream, float(t[-1]), self._wall(wall_time), count=len(t))
            self.aligner.push(stream, t, rows)
        return int(len(t))

    def _joint_index(self, names: tuple[str, ...], messages: int) -> np.ndarray | None:
        if self._name_cache is not None and self._name_cache[0] == names:
            return self._name_cache[1]
        try:
            index = self.kinematics.map_joint_names(names)
        except ValueError as exc:
            dropped = "message dropped" if messages == 1 else f"{messages} messages dropped"
            self.health.report(MISSING_JOINT, f"{exc}; {dropped}", JOINTS, messages)
            return None
        self._name_cache = (names, index)
        return index

    @staticmethod
    def _wall(wall_time: float | None) -> float:
        return time.monotonic() if wall_time is None else wall_time

    # ---------------------------------------------------------------- process
    def process(self) -> int:
        """Run everything the aligner can release through the pipeline; returns samples fed to the estimator."""
        batch = self.aligner.pull()
        if batch is None or len(batch) == 0:
            return 0
        if self.config.zero_phase:
            self._keep_for_offline(batch)
            return 0
        fed = 0
        for seg in batch.segments():
            t = batch.t[seg]
            if batch.segment_start[seg.start]:
                self._reset_filters()
                self._settled_from = float(t[0]) + self.settling_s
                if isinstance(self.estimator, PayloadTracker):
                    self._break_pending = True  # told with the next samples it takes: a pause changes nothing
            joints = batch.values[JOINTS][seg]
            n = len(self.joint_names)
            q_raw = joints[:, :n]
            if self._effort_columns is not None:
                w = self._wrench_filter(t, joints[:, self._effort_columns])  # the efforts
            else:
                w = self._wrench_filter(t, self.wrench_in_sensor(batch.values[WRENCH][seg], q_raw))
            if isinstance(self._joint_filter, PositionVelocityDifferentiator):  # use_joint_velocities
                d = self._joint_filter(t, q_raw, joints[:, n:2 * n])
            else:
                d = self._joint_filter(t, q_raw)
            imu_motion = None
            if self._imu is not None:
                g_raw = self._gravity_in_sensor(q_raw)
                imu = batch.values[IMU][seg]
                imu_motion = self._imu.process(t, imu[:, :3], imu[:, 3:], g_raw)
            if len(d.t) == 0:
                continue
            keep = self._decimated(d.t)
            settling = keep & (d.t < self._settled_from)
            if settling.any():  # the restarted filters' transient: wrong accelerations, not data
                self.samples_settling += int(np.sum(settling))
                keep &= ~settling
            if not keep.any():
                continue
            motion = self.kinematics.compute(d.x[keep], d.dx[keep], d.ddx[keep])
            if self.config.motion_source == "imu" and imu_motion is not None:
                ang_vel = imu_motion.ang_vel_in_sensor[keep]
                ang_acc = imu_motion.ang_acc_in_sensor[keep]
                lin_acc = imu_motion.lin_acc_in_sensor[keep]
            else:
                ang_vel, ang_acc, lin_acc = motion.ang_vel_in_sensor, motion.ang_acc_in_sensor, motion.lin_acc_in_sensor
            if self._ddq_gain > 0.0 and self.config.motion_source != "imu" and self.torque_wrench is None:
                # (joint-torque samples are whitened per sample: the errors-in-variables Gram is not theirs)
                if not self._joint_noise.settled:  # the encoders' noise does not change
                    self._joint_noise.update(q_raw)
                self._supply_kinematic_noise(q_raw[-1])
            wrench, information = self._sample_wrench(d.x[keep], d.dx[keep], d.ddx[keep], w.x[keep])
            fed += self._feed(SensorSamples(d.t[keep], lin_acc, ang_vel, ang_acc, motion.gravity_in_sensor, wrench,
                                            information))
        return fed

    def _sample_wrench(
        self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray, filtered: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """The samples' wrench on S and its information: the filtered wrench as is, or the wrench the
        filtered efforts imply (joint torques)."""
        if self.torque_wrench is None:
            return filtered, None
        tw = self.torque_wrench(q, dq, ddq, filtered)
        return tw.wrench_in_sensor, tw.information_sqrt

    def _supply_kinematic_noise(self, q: np.ndarray) -> None:
        """Tell the estimator the noise of the accelerations this pipeline makes.

        The joint positions' white noise ``s_q`` (measured on the grid before filtering,
        :class:`~payload_estimator.core.signal_noise.SignalNoise`) comes out of the matched second
        derivative with variance ``s_q² g`` (:func:`second_derivative_noise_gain`); the sensor's
        angular acceleration sums one unit axis per joint, ``s_alpha² = n s_q² g / 3`` per axis, and
        its linear acceleration adds the lever arms ``r_i`` from each joint to the sensor,
        ``s_a² = sum r_i² s_q² g / 3``. The samples alone would read the filtered noise as almost none.
        """
        s_q = self._joint_noise.std()
        if not np.isfinite(s_q):
            return
        if self._lever_sq is None:
            _, p = self.kinematics.frame_pose(q, self.config.sensor_frame, self.kinematics.base_frame)
            arms = []
            for name in self.joint_names:
                try:
                    _, pj = self.kinematics.frame_pose(q, name, self.kinematics.base_frame)
                except ValueError:
                    continue
                arms.append(float(np.sum((p[0] - pj[0]) ** 2)))
            self._lever_sq = float(np.sum(arms))
        var_ddq = s_q * s_q * self._ddq_gain
        n = len(self.joint_names)
        self.estimator.kinematic_noise.supply(np.sqrt(var_ddq * self._lever_sq / 3.0), np.sqrt(var_ddq * n / 3.0),
                                              self._joint_noise.relative_variance())

    def _gravity_in_sensor(self, q: np.ndarray) -> np.ndarray:
        """(N, 3) gravity in the sensor frame at joint positions ``q``: forward kinematics only."""
        R_base_sensor, _ = self.kinematics.frame_pose(q, self.config.sensor_frame, self.kinematics.base_frame)
        R_world_sensor = np.einsum("ij,njk->nik", self.kinematics.R_world_base, R_base_sensor)
        return np.einsum("nji,j->ni", R_world_sensor, self.kinematics.gravity_in_world)

    def _decimated(self, t: np.ndarray) -> np.ndarray:
        """Rows on the estimator's sub-grid (deterministic whatever the batching)."""
        return np.round(t * self.config.rate_hz).astype(np.int64) % self._decimation == 0

    def _feed(self, samples: SensorSamples) -> int:
        self.samples_processed += len(samples)
        self.last_sample_time = float(samples.t[-1])
        if self.paused:
            self._break_pending = isinstance(self.estimator, PayloadTracker)  # samples skipped: a break
            return 0
        if self._break_pending:
            self._break_pending = False
            assert isinstance(self.estimator, PayloadTracker)
            self.estimator.input_break()
        before = self.estimator.rejected_samples
        self.estimator.update(samples)
        rejected = self.estimator.rejected_samples - before
        if rejected:
            self.health.report(NON_FINITE, f"{rejected} samples with non-finite or out-of-range kinematics dropped",
                               None, rejected)
        return len(samples) - rejected

    # ------------------------------------------------------------- offline
    def _keep_for_offline(self, batch) -> None:
        n = len(self.joint_names)
        for seg in batch.segments():
            if batch.segment_start[seg.start] or not self._offline:
                self._offline.append([])
            joints = batch.values[JOINTS][seg]
            if self._effort_columns is not None:
                self._offline[-1].append((batch.t[seg], joints[:, :n], joints[:, self._effort_columns]))
            else:
                self._offline[-1].append((batch.t[seg], joints[:, :n], batch.values[WRENCH][seg]))

    def finish(self) -> int:
        """Zero-phase mode: filter every kept segment forward and backward and feed the estimator.

        Returns the number of samples fed. Does nothing in causal mode.
        """
        from payload_estimator.pipeline.filters import zero_phase_lowpass

        if not self.config.zero_phase:
            return 0
        self.process()
        fed = 0
        c = self.config
        for pieces in self._offline:
            t = np.concatenate([p[0] for p in pieces])
            if len(t) < 5:
                continue
            q_raw = np.concatenate([p[1] for p in pieces])
            other = np.concatenate([p[2] for p in pieces])  # wrench, or efforts (joint torques)
            wrench = other if self.torque_wrench is not None else self.wrench_in_sensor(other, q_raw)
            q = zero_phase_lowpass(q_raw, c.rate_hz, c.cutoff_hz, c.filter_order)
            w = zero_phase_lowpass(wrench, c.rate_hz, c.cutoff_hz, c.filter_order)
            T = 1.0 / c.rate_hz
            dq = np.gradient(q, T, axis=0)
            ddq = np.gradient(dq, T, axis=0)
            keep = self._decimated(t)
            keep[:2] = keep[-2:] = False  # one-sided differences at the ends
            if not keep.any():
                continue
            motion = self.kinematics.compute(q[keep], dq[keep], ddq[keep])
            wrench_s, information = self._sample_wrench(q[keep], dq[keep], ddq[keep], w[keep])
            fed += self._feed(SensorSamples(t[keep], motion.lin_acc_in_sensor, motion.ang_vel_in_sensor,
                                            motion.ang_acc_in_sensor, motion.gravity_in_sensor, wrench_s, information))
        self._offline = []
        return fed

    def wrench_in_sensor(self, wrench: np.ndarray, q_raw: np.ndarray) -> np.ndarray:
        """(N, 6) wrenches as the source reports them -> the payload's wrench on the sensor, in S.

        ``q_raw`` (N, n) are the joint positions at the same instants (for sources
        that report in another frame).
        """
        conv = self.wrench_convention
        sensor = self.config.sensor_frame
        if conv.expressed_in == sensor and conv.reference_frame == sensor:
            return conv.sign * wrench
        R, _ = self.kinematics.frame_pose(q_raw, conv.expressed_in, sensor)
        _, p = self.kinematics.frame_pose(q_raw, conv.reference_frame, sensor)
        return wrench_to_sensor(wrench[:, :3], wrench[:, 3:], conv, R, p)

    def _reset_filters(self) -> None:
        self._joint_filter.reset()
        self._wrench_filter.reset()
        if self._imu is not None:
            self._imu.reset()

    # ---------------------------------------------------------------- output
    def update_estimate(self) -> StreamEstimate | None:
        """Solve for the current estimate and advance the convergence monitor with it.

        Returns it (None before the estimator has ``min_samples`` samples; the
        last one if the solve fails, or if no sample has entered since it: a
        silent input or a pause changes nothing, and a solve costs milliseconds).
        Call it at the publish rate: the convergence criteria count estimates.
        :attr:`last` reads without solving.
        """
        if self.estimator.samples_used < self.config.min_samples:
            return self._with_tracking(self._last)
        if self._last is not None and self._last.estimate.samples_used == self.estimator.samples_used:
            return self._with_tracking(self._last)  # (a contact holds every sample out: say so)
        if isinstance(self.estimator, PayloadTracker) and self.estimator.counts.changes != self._changes_seen:
            # a new payload: what was converged was the old one's
            self._changes_seen = self.estimator.counts.changes
            self.convergence.reset()
            self.mass_com_convergence.reset()
        try:
            est = self.estimator.estimate()
        except InsufficientData:
            return self._last
        except (np.linalg.LinAlgError, RuntimeError, ValueError) as exc:
            self.health.report(SOLVER_FAILURE, f"estimator failed ({exc}); keeping the last estimate", None)
            return self._last
        t = self.last_sample_time if self.last_sample_time is not None else 0.0
        converged = self.convergence.update(t, est)
        mass_com = self.mass_com_convergence.update(t, est)
        params_in_flange = est.params.transformed(self.R_flange_sensor, self.p_flange_sensor)
        self._last = StreamEstimate(est, t, converged, self.convergence.reason, params_in_flange, mass_com,
                                    self._tracking_state())
        return self._last

    def _tracking_state(self) -> TrackingState | None:
        return self.estimator.state if isinstance(self.estimator, PayloadTracker) else None

    def _with_tracking(self, last: StreamEstimate | None) -> StreamEstimate | None:
        """The last estimate, with the tracker's state as it is now."""
        state = self._tracking_state()
        if last is None or state is None or last.tracking == state:
            return last
        self._last = replace(last, tracking=state)
        return self._last

    @property
    def last(self) -> StreamEstimate | None:
        """The last estimate :meth:`update_estimate` returned (no side effect)."""
        return self._last

    def stale_streams(self, now: float | None = None) -> list[str]:
        """Input streams silent for longer than ``stale_after_s`` (wall clock)."""
        return self.health.stale_streams(self._wall(now), self.config.stale_after_s)

    def diagnostics(self, now: float | None = None) -> dict:
        """A plain dictionary for ``/diagnostics``, logs and tests."""
        snap = self.health.snapshot()
        snap["stale_streams"] = self.stale_streams(now)
        snap["samples_processed"] = self.samples_processed
        snap["samples_used"] = self.estimator.samples_used
        snap["samples_settling"] = self.samples_settling
        snap["buffer_sizes"] = self.aligner.buffer_sizes()
        snap["paused"] = self.paused
        last = self._last
        snap["converged"] = bool(last.converged) if last else False
        snap["convergence"] = last.reason if last else "no estimate yet"
        snap["model_fit"] = last.estimate.model_fit.label if last else "unknown"
        snap["model_fit_cause"] = last.estimate.model_fit.cause if last else ""
        snap["not_identified"] = ", ".join(last.estimate.identification.missing()) if last else ""
        if isinstance(self.estimator, PayloadTracker):
            counts = self.estimator.counts
            snap["payload_changes"] = counts.changes
            snap["contacts"] = counts.contacts
            snap["contact_now"] = self.estimator.contact
            snap["held_out_samples"] = counts.held_out_samples
            snap["offset_shifts"] = counts.offset_shifts
        return snap

    def reset(self) -> None:
        """Forget the estimate and all buffered input (e.g. a new payload was grasped)."""
        self.estimator.reset()
        self.aligner.reset()
        self._reset_filters()
        self._break_pending = False
        self.convergence.reset()
        self.mass_com_convergence.reset()
        self._last = None
        self.last_sample_time = None
        self._offline = []
