"""The estimation stream: raw robot signals in, estimates out.

This is the one object that the ROS node, ``replay``, ``demo`` and the
benchmarks all drive (:mod:`payload_estimator.pipeline.build` makes it from the settings). Messages
(joint states, wrenches, IMU samples) go in with their own stamps, at their own rates;
:meth:`EstimationStream.process` turns whatever can be decided into sensor-frame samples and feeds
the estimator; :meth:`EstimationStream.update_estimate` solves for the current estimate (and
advances the convergence monitor), :attr:`EstimationStream.last` reads it again.

The chain, for every batch the aligner releases::

    aligner (uniform grid, no extrapolation, gaps split segments)
      -> the wrench source's raw signal (a wrench in the sensor frame, or the efforts)
      -> the same low-pass on every signal (causal online, forward and backward for a recording)
      -> sensor-frame kinematics from the filtered joint states (pinocchio), or from an IMU
      -> SensorSamples, decimated to the estimator rate -> estimator.update

Where the wrench and the motion come from are two strategies of the configuration
(:mod:`payload_estimator.pipeline.sources`); the filtering is :mod:`payload_estimator.pipeline.processing`.

Bad input never raises: it is dropped, counted in :attr:`EstimationStream.health` with a clear
log line, and the estimate stays what it was.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from functools import cached_property

import numpy as np

from payload_estimator.core.convergence import ConvergenceMonitor
from payload_estimator.core.estimators import InsufficientData
from payload_estimator.core.payload_shapes import PayloadShapes, ShapeUpdate
from payload_estimator.core.point_clouds import CLOUD_MAX_POINTS
from payload_estimator.core.point_masses import SampledShape
from payload_estimator.core.samples import MAX_ABS_VALUE, SensorSamples
from payload_estimator.core.tracking import PayloadModel, PayloadTracker, TrackingState
from payload_estimator.errors import ConfigurationError
from payload_estimator.pipeline.align import MAX_STAMP_S, StreamAligner
from payload_estimator.pipeline.filters import StepResponse
from payload_estimator.pipeline.health import (
    LENGTH_MISMATCH,
    MISSING_EFFORT,
    MISSING_JOINT,
    NON_FINITE,
    OUT_OF_RANGE,
    SOLVER_FAILURE,
    InputHealth,
)
from payload_estimator.pipeline.imu import ImuMount
from payload_estimator.pipeline.kinematics import SensorKinematics
from payload_estimator.pipeline.payload_cloud import PayloadClouds
from payload_estimator.pipeline.processing import CausalProcessing, SampleMaker, ZeroPhaseProcessing
from payload_estimator.pipeline.sources.imu_motion import ImuKinematicsInput
from payload_estimator.pipeline.sources.measured_wrench import MeasuredWrenchInput
from payload_estimator.pipeline.sources.strategies import IMU, JOINTS, WRENCH
from payload_estimator.pipeline.stream_config import StreamConfig, StreamEstimate
from payload_estimator.pipeline.wrench import WrenchConvention

__all__ = ["StreamConfig", "EstimationStream", "StreamEstimate", "JOINTS", "WRENCH", "IMU"]


def _paired_vectors(t: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """Return (N, 6) ``[a, b]`` for ``N`` stamps ``t``, or None when the shapes do not pair up.

    ``a`` and ``b`` are arrays of 3-vectors, each (N, 3) or, for one stamp, (3,)."""
    n = len(t)
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    shapes = {(n, 3)} | ({(3,)} if n == 1 else set())
    if a.shape not in shapes or b.shape not in shapes:
        return None
    return np.hstack([a.reshape(n, 3), b.reshape(n, 3)])


class EstimationStream:
    """Raw robot signals -> filtered sensor-frame samples -> estimator (module docstring).

    Args:
        config: the robot and signal configuration, with its wrench and motion sources.
        estimator: any estimator of :mod:`payload_estimator.core.estimators`, or a payload tracker.
        health: where to count bad input; a new one if None.
        cloud_max_points: the budget of point masses a cloud is merged down to (:meth:`set_payload_shape`).
    """

    def __init__(
        self, config: StreamConfig, estimator: PayloadModel, health: InputHealth | None = None,
        cloud_max_points: int = CLOUD_MAX_POINTS,
    ) -> None:
        self.config = config
        self.estimator = estimator
        self.shapes = PayloadShapes(estimator, cloud_max_points)
        """The shape the payload's estimator solves with (:meth:`set_payload_shape`)."""
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
        self.wrench_input = config.wrench.create(self.kinematics, config.sensor_frame)
        self.motion_input = config.motion.create(self.kinematics, config.sensor_frame, config.rate_hz,
                                                 config.cutoff_hz, config.filter_order, config.gravity)
        if config.zero_phase and not self.motion_input.supports_zero_phase:
            raise ConfigurationError("zero_phase supports motion_source 'joints' only")
        maker = SampleMaker(config, self.kinematics, self.wrench_input, self.motion_input)
        streams = {JOINTS: maker.joint_columns}
        if self.wrench_input.reads_wrench:
            streams[WRENCH] = 6
        if self.motion_input.stream is not None:
            streams[self.motion_input.stream] = 6
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
        self._processing: CausalProcessing | ZeroPhaseProcessing = (
            ZeroPhaseProcessing(maker) if config.zero_phase else CausalProcessing(maker, estimator.kinematic_noise))
        if isinstance(estimator, PayloadTracker):  # a change of payload reaches it through the filters
            estimator.step_response = StepResponse(config.cutoff_hz, config.rate_hz, config.filter_order)
            estimator.model_error = config.wrench.model_error
        self.convergence = ConvergenceMonitor(config.convergence)
        self.mass_com_convergence = ConvergenceMonitor(replace(config.convergence, inertia=False))
        self.paused = False
        self._break_pending = False
        """An input break (a gap, a restart, samples skipped while paused) the tracker is told of with the
        next samples it takes, never while paused."""
        self.last_sample_time: float | None = None
        self.samples_processed = 0
        self._name_cache: tuple[tuple[str, ...], np.ndarray] | None = None
        self._last: StreamEstimate | None = None
        self.clouds = PayloadClouds(self)
        """A camera's clouds of the payload made its shape at their stamps (the joint history they need)."""

    @cached_property
    def _flange_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """``(R, p)``: the sensor frame's pose in the flange frame."""
        flange = self.config.flange_frame or self.config.sensor_frame
        R, p = self.kinematics.frame_pose(np.zeros((1, len(self.joint_names))), self.config.sensor_frame, flange)
        return R[0], p[0]

    @property
    def R_flange_sensor(self) -> np.ndarray:
        """(3, 3) the sensor frame's orientation in the flange frame."""
        return self._flange_pose[0]

    @property
    def p_flange_sensor(self) -> np.ndarray:
        """(3,) the sensor frame's origin in the flange frame, m."""
        return self._flange_pose[1]

    # ------------------------------------------------------------ the sources
    @property
    def needs_efforts(self) -> bool:
        """Whether joint states must carry an effort per arm joint (the wrench from joint torques)."""
        return self.wrench_input.needs_efforts

    @property
    def reads_wrench(self) -> bool:
        """Whether a wrench message stream is an input."""
        return self.wrench_input.reads_wrench

    @property
    def wrench_convention(self) -> WrenchConvention | None:
        """How the wrench messages report (None: the wrench comes from joint torques)."""
        return self.wrench_input.convention if isinstance(self.wrench_input, MeasuredWrenchInput) else None

    @property
    def imu_mount(self) -> ImuMount | None:
        """Pose of the IMU in the sensor frame when an IMU drives the motion, else None."""
        return self.motion_input.mount if isinstance(self.motion_input, ImuKinematicsInput) else None

    @property
    def settling_s(self) -> float:
        """After every restart of the filters (the start, a gap), their output is held back this long, s."""
        return getattr(self._processing, "settling_s", 0.0)

    @property
    def samples_settling(self) -> int:
        """Samples held back while the restarted filters settled."""
        return self._processing.samples_settling

    def wrench_in_sensor(self, wrench: np.ndarray, q_raw: np.ndarray) -> np.ndarray:
        """(N, 6) wrenches as the source reports them -> the payload's wrench on the sensor, in S.

        ``q_raw`` (N, n) are the joint positions at the same instants (for sources that report in
        another frame).
        """
        return self.wrench_input.raw_signal(q_raw, wrench)

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
        """Push joint states: one, or a batch sharing one ``names`` list.

        One: ``stamps`` a number, ``positions`` (k,); a batch: ``stamps`` (N,),
        ``positions`` (N, k). ``names``: the joint of each column, in any order and possibly with
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
        if self.wrench_input.needs_efforts:
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
        self.clouds.history.add(t, q)
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
        if not self.wrench_input.reads_wrench:
            return 0
        t = np.atleast_1d(np.asarray(stamp, dtype=float)).reshape(-1)
        n = max(len(t), 1)
        if not self.wrench_input.admit_frame(frame_id, n, self.health):
            return 0
        w = _paired_vectors(t, force, torque)
        if w is None:
            self.health.report(LENGTH_MISMATCH, f"wrench batch of {len(t)} stamps with force of shape "
                               f"{np.shape(force)} and torque of shape {np.shape(torque)}; dropped", WRENCH, n)
            return 0
        t, w = self._admit(WRENCH, t, w)
        keep = self.wrench_input.in_range(w, self.health)
        return self._take(WRENCH, t[keep], w[keep], wall_time)

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
        if self.motion_input.stream != IMU:
            return 0
        t = np.atleast_1d(np.asarray(stamp, dtype=float)).reshape(-1)
        n = max(len(t), 1)
        if not self.motion_input.admit(frame_id, n, self.health):
            return 0
        v = _paired_vectors(t, angular_velocity, linear_acceleration)
        if v is None:
            self.health.report(LENGTH_MISMATCH, f"IMU batch of {len(t)} stamps with angular velocity of shape "
                               f"{np.shape(angular_velocity)} and linear acceleration of shape "
                               f"{np.shape(linear_acceleration)}; dropped", IMU, n)
            return 0
        return self._take(IMU, t, v, wall_time)

    def _admit(self, stream: str, t: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return the samples the aligner would keep; the others are dropped and counted here.

        Dropped: a NaN/inf stamp or value (``NON_FINITE``), a value beyond ``MAX_ABS_VALUE`` or a stamp beyond
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

    def set_payload_shape(self, cloud: SampledShape | np.ndarray, t: float, points: int | None = None) -> ShapeUpdate:
        """The payload's shape as a point cloud captured at ``t`` (s, the samples' clock): a camera's, mid-run.

        ``cloud`` is (n, 3) points in the sensor frame, m, or a
        :class:`~payload_estimator.core.point_masses.SampledShape` (parts, volumes); it is checked and merged
        down to ``cloud_max_points`` point masses, and the current payload's estimator solves with them from
        the next estimate on, every sample it holds kept (:class:`~payload_estimator.core.payload_shapes.
        PayloadShapes`: which payload a cloud belongs to, what a new payload uses until its own arrives).
        Never raises: the returned :class:`~payload_estimator.core.payload_shapes.ShapeUpdate` says what
        became of it (applied; refused, and why, the shape in use kept; ignored by an estimator without point
        masses), and :meth:`diagnostics` counts them. ``points``: the camera's points ``cloud`` was made of
        (the diagnostics' count; None: its own). A ``sensor_msgs/PointCloud2`` goes through :attr:`clouds`.
        """
        return self.shapes.set(cloud, t, points)

    # ---------------------------------------------------------------- process
    def process(self) -> int:
        """Run everything the aligner can release through the pipeline; returns samples fed to the estimator."""
        batch = self.aligner.pull()
        if batch is None or len(batch) == 0:
            return 0
        if isinstance(self._processing, ZeroPhaseProcessing):
            self._processing.keep(batch)
            return 0
        return sum(self._feed(samples) for samples in self._processing.process(batch, self._on_break))

    def finish(self) -> int:
        """Zero-phase mode: filter every kept segment forward and backward and feed the estimator.

        Returns the number of samples fed. Does nothing in causal mode.
        """
        if not isinstance(self._processing, ZeroPhaseProcessing):
            return 0
        self.process()
        return sum(self._feed(samples) for samples in self._processing.finish())

    def _on_break(self) -> None:
        self._break_pending = True  # told with the next samples it takes: a pause changes nothing

    def _feed(self, samples: SensorSamples) -> int:
        self.samples_processed += len(samples)
        self.last_sample_time = float(samples.t[-1])
        if self.paused:
            self._break_pending = True  # samples skipped: a break
            return 0
        if self._break_pending:
            self._break_pending = False
            self.estimator.input_break()
        if samples.all_usable():  # the estimator drops none: no count to read (a read takes in what it gathers)
            self.estimator.update(samples)
            return len(samples)
        before = self.estimator.rejected_samples
        self.estimator.update(samples)
        rejected = self.estimator.rejected_samples - before
        if rejected:
            self.health.report(NON_FINITE, f"{rejected} samples with non-finite or out-of-range kinematics dropped",
                               None, rejected)
        return len(samples) - rejected

    # ---------------------------------------------------------------- output
    def update_estimate(self) -> StreamEstimate | None:
        """Solve for the current estimate and advance the convergence monitor with it.

        Returns it (None before the estimator has ``min_samples`` samples; the
        last one if the solve fails, or if no sample has entered since it: a
        silent input or a pause changes nothing, and a solve costs milliseconds).
        Call it at the publish rate: the convergence criteria count estimates.
        :attr:`last` reads without solving.
        """
        self.shapes.follow()  # a new payload: the configured shape, or its cloud
        if self.estimator.samples_used < self.config.min_samples:
            return self._with_tracking(self._last)
        if self.wrench_input.refusal():  # e.g. efforts that are currents read as N·m: no estimate from them
            self._last = None
            return None
        if (self._last is not None and self._last.estimate.samples_used == self.estimator.samples_used
                and not self.shapes.unsolved):
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
        self.shapes.solved()
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
        snap["input_caveats"] = self.wrench_input.caveats()
        snap["input_refusal"] = self.wrench_input.refusal()
        if isinstance(self.estimator, PayloadTracker):
            counts = self.estimator.counts
            snap["payload_changes"] = counts.changes
            snap["contacts"] = counts.contacts
            snap["contact_now"] = self.estimator.contact
            snap["held_out_samples"] = counts.held_out_samples
            snap["offset_shifts"] = counts.offset_shifts
        self.shapes.follow()
        snap.update(self.shapes.diagnostics())
        return snap

    def reset(self) -> None:
        """Forget the estimate and all buffered input (e.g. a new payload was grasped); the configured shape again."""
        self.estimator.reset()
        self.shapes.reset()
        self.aligner.reset()
        self._processing.reset()
        self._break_pending = False
        self.convergence.reset()
        self.mass_com_convergence.reset()
        self._last = None
        self.last_sample_time = None
