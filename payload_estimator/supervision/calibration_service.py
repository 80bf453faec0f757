"""``~/calibrate`` without ROS: record the unloaded arm's joint states, check them, fit and write its calibration.

The rclpy node (:mod:`payload_estimator.ros.estimator_node`) serves
``payload_estimator/srv/Calibrate``; what it decides is decided here, so that it can be tested
without ROS:

* :func:`calibrate_request`: the request's duration and file (``~`` expanded, made absolute;
  empty: the ``arm_calibration`` parameter's file), or why it is refused;
* :class:`JointStateRecorder`: the positions and efforts of the arm's joints in every
  ``sensor_msgs/JointState`` received during the recording (serialised messages, what the node
  subscribes to, are read in bulk like the stream reads them, see :mod:`payload_estimator.io.cdr`;
  any message with the same fields works). The node's processing loop feeds it what arrived on each
  turn, whether or not the stream runs (a node in joint-torque mode without a calibration has none);
* :func:`recording_refusal`: why a recording cannot be fitted (no joint states, no efforts, a joint
  that did not move);
* :func:`fit_calibration`: :func:`~payload_estimator.pipeline.arm_dynamics.joint_recording` and
  :func:`~payload_estimator.pipeline.arm_dynamics.calibrate_arm`, then the YAML written atomically
  (:meth:`~payload_estimator.pipeline.arm_dynamics.ArmCalibration.save`; its directories made). Slow
  (about a second): the node runs it in the service's own thread, never in its processing loop;
* :class:`CalibrationService`: one call of the service from the request to the file, one at a time:
  the recording (by the supervisor, which the processing loop feeds), the checks, the fit and, in
  joint-torque mode, the estimator restarted with the file written.

The motion is the user's: the arm, *without payload*, is moved through its range while the service
records (jogged, taught, or a trajectory sent to its controller). Every joint must move (at least
:data:`MIN_JOINT_RANGE_RAD`); the wider and faster, the better the friction and inertias are told apart.

A known payload (``calibrate --known-payload-bag``'s counterpart) takes two calls: one without payload
(its recording is kept), then one with ``known_payload_mass`` > 0 while the arm holds that payload (a point
mass at ``known_payload_com`` in the flange frame) and moves: both recordings are fitted together, so the known
mass fixes the effort scales' common factor and loads the joints (the wrist's) that the arm's own links hardly
load (:func:`~payload_estimator.pipeline.arm_dynamics.calibrate_arm`'s ``loaded``). ``load_friction`` fits
each joint's Coulomb friction growing with its load (``calibrate --load-friction``).

Times: receive times are the node's monotonic clock, s; the samples' times are their header stamps
(an unstamped message: its receive time). Units SI: rad, N·m.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from payload_estimator.core.inertia import InertialParameters
from payload_estimator.errors import InputError
from payload_estimator.io.cdr import JointStateLayout, SerializedJointState, joint_state_layout
from payload_estimator.io.ros_factories import stamp_to_sec
from payload_estimator.pipeline.arm_dynamics import (
    ArmDynamics,
    JointRecording,
    calibrate_arm,
    joint_recording,
)
from payload_estimator.pipeline.effort_check import EffortCheck, check_efforts
from payload_estimator.pipeline.joint_torques import payload_torques, torques_from_efforts
from payload_estimator.pipeline.kinematics import SensorKinematics
from payload_estimator.pipeline.stream import JOINTS
from payload_estimator.settings import WrenchSource

if TYPE_CHECKING:  # the supervisor records for the service, and imports this module
    from payload_estimator.supervision.supervisor import Supervisor

__all__ = [
    "CalibrateRequest",
    "CalibrateResult",
    "JointStateRecorder",
    "calibrate_request",
    "recording_refusal",
    "fit_calibration",
    "CalibrationService",
    "DEFAULT_DURATION_S",
    "MAX_DURATION_S",
    "MIN_JOINT_RANGE_RAD",
    "END_MARGIN_S",
]

DEFAULT_DURATION_S = 15.0
"""Recording time when the request asks for 0 s."""
MAX_DURATION_S = 300.0
"""Longest recording, s (5 min of 1 kHz joint states: 34 MB of positions and efforts)."""
MIN_JOINT_RANGE_RAD = 0.1
"""A joint whose position spans less than this during the recording did not move: its friction and the
inertias it carries cannot be told apart, and the calibration is refused."""
MIN_SECONDS_WITH_EFFORTS = 1.0
"""Seconds of joint states with efforts a fit needs at the very least."""
END_MARGIN_S = 1.0
"""How long after the recording's end the node waits for its loop to hand over the last messages, s."""


@dataclass(frozen=True)
class CalibrateRequest:
    """A valid ``~/calibrate`` request.

    Attributes:
        duration_s: s of recording. path: the file to write. effort_scale: whether to fit effort scales.
        load_friction: whether to fit the load-dependent Coulomb friction.
        known_payload: the payload the arm holds (in the flange frame), or None: the arm unloaded.
    """

    duration_s: float
    path: Path
    effort_scale: bool = False
    load_friction: bool = False
    known_payload: InertialParameters | None = None


@dataclass(frozen=True)
class CalibrateResult:
    """``~/calibrate``'s answer.

    Attributes:
        success, message: whether the file was written; one sentence saying what was done or why not.
        path: the file written ("" when none).
        joint_names: (n,) the joints, the order of the RMS arrays.
        rms_before, rms_after: (n,) effort residual RMS per joint on the recording, N·m: with the robot
            description alone (no friction), and with the calibration.
        samples: samples the fit used (after filtering and decimation; the unloaded recording's).
        recording: the unloaded recording fitted (kept for a known payload's call), or None.
    """

    success: bool
    message: str
    path: str = ""
    joint_names: tuple[str, ...] = ()
    rms_before: tuple[float, ...] = ()
    rms_after: tuple[float, ...] = ()
    samples: int = 0
    recording: JointRecording | None = field(default=None, repr=False, compare=False)


def calibrate_request(
    duration_s: float, path: str, parameter_path: str, effort_scale: bool = False, load_friction: bool = False,
    known_payload_mass: float = 0.0, known_payload_com: Sequence[float] = (),
) -> CalibrateRequest:
    """The ``~/calibrate`` request, checked.

    Args:
        duration_s: the recording time, s (0: :data:`DEFAULT_DURATION_S`).
        path: the file to write (empty: ``parameter_path``); ``~`` is expanded and the path made absolute.
        parameter_path: the ``arm_calibration`` parameter's file.
        effort_scale: whether to fit effort scales.
        load_friction: whether to fit the load-dependent Coulomb friction.
        known_payload_mass: kg; 0: the arm is unloaded; > 0: it holds a point mass at ``known_payload_com``.
        known_payload_com: (3,) m in the flange frame (empty: at the flange's origin).

    Raises:
        InputError: "refused: ..." (a duration that is not positive or too long, no file to write, a known
            payload that is not one).
    """
    duration = float(duration_s) if duration_s else DEFAULT_DURATION_S
    if not np.isfinite(duration) or duration <= 0.0 or duration > MAX_DURATION_S:
        raise InputError(f"refused: duration must be in (0, {MAX_DURATION_S:g}] s (0: {DEFAULT_DURATION_S:g} s), "
                         f"got {duration_s:g}")
    chosen = str(path).strip() or str(parameter_path).strip()
    if not chosen:
        raise InputError("refused: no file to write: give a path, or set the arm_calibration parameter")
    known = None
    mass = float(known_payload_mass)
    com = np.asarray(list(known_payload_com) or [0.0, 0.0, 0.0], dtype=float)
    if not np.isfinite(mass) or mass < 0.0:
        raise InputError(f"refused: known_payload_mass must be 0 (no payload) or a mass in kg, got {mass:g}")
    if mass > 0.0:
        if com.shape != (3,) or not np.all(np.isfinite(com)):
            raise InputError(f"refused: known_payload_com must be 3 numbers (m, flange frame), got {com.size}")
        known = InertialParameters.point_mass(mass, com)
    return CalibrateRequest(duration, Path(chosen).expanduser().absolute(), bool(effort_scale), bool(load_friction),
                            known)


class JointStateRecorder:
    """Records the positions and efforts of ``joint_names`` in the joint states received for a while.

    The recording runs from ``start`` (receive clock, s) for ``duration_s`` s.
    Messages without an effort per position, without one of the joints, or unreadable are counted
    (:attr:`without_efforts`, :attr:`without_joints`, :attr:`malformed`), not recorded.
    """

    def __init__(self, joint_names: Sequence[str], start: float, duration_s: float) -> None:
        self.joint_names = tuple(str(j) for j in joint_names)
        self.start = float(start)
        self.duration_s = float(duration_s)
        self.end = self.start + self.duration_s
        self.messages = 0
        """Joint-state messages received during the recording."""
        self.without_efforts = 0
        self.without_joints = 0
        self.malformed = 0
        self._t: list[np.ndarray] = []
        self._q: list[np.ndarray] = []
        self._effort: list[np.ndarray] = []
        self._last_seen = self.start

    # ------------------------------------------------------------------ state
    def done(self, now: float) -> bool:
        """Whether the recording time is over at ``now`` (receive clock)."""
        return now >= self.end

    def elapsed(self, now: float) -> float:
        """Seconds recorded at ``now`` (receive clock), from 0 to :attr:`duration_s`."""
        return min(max(0.0, now - self.start), self.duration_s)

    @property
    def samples(self) -> int:
        """Joint states recorded (with positions and efforts of every joint)."""
        return int(sum(len(t) for t in self._t))

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Stamps (N,) s, positions (N, n) rad and efforts (N, n) N·m recorded, in arrival order."""
        n = len(self.joint_names)
        if not self._t:
            return np.zeros(0), np.zeros((0, n)), np.zeros((0, n))
        return np.concatenate(self._t), np.concatenate(self._q), np.concatenate(self._effort)

    # ------------------------------------------------------------------ input
    def add(self, items: Iterable[tuple[str, Any, float]]) -> None:
        """Record the joint states among ``(kind, msg, receive time)`` items received within the recording.

        Other kinds and other times are ignored. Serialised messages of one layout are read in bulk.
        """
        run: list[tuple[Any, float]] = []
        run_layout: JointStateLayout | None = None
        for kind, msg, received in items:
            if kind != JOINTS or not self.start <= received < self.end:
                continue
            self.messages += 1
            layout = _layout_of(msg, run_layout)
            if layout is None or layout is not run_layout:
                self._flush(run_layout, run)
                run, run_layout = [], layout
            if layout is None:
                self._add_one(msg, received)
            else:
                run.append((msg, received))
        self._flush(run_layout, run)

    def _index(self, names: Sequence[str]) -> np.ndarray | None:
        where = {str(n): i for i, n in enumerate(names)}
        try:
            return np.array([where[j] for j in self.joint_names], dtype=int)
        except KeyError:
            return None

    def _keep(self, t: np.ndarray, q: np.ndarray, effort: np.ndarray) -> None:
        self._t.append(t)
        self._q.append(q)
        self._effort.append(effort)

    def _flush(self, layout: JointStateLayout | None, run: list[tuple[Any, float]]) -> None:
        if layout is None or not run:
            return
        index = self._index(layout.names)
        if index is None:
            self.without_joints += len(run)
            return
        if layout.n_position != len(layout.names):
            self.malformed += len(run)
            return
        if layout.n_effort != layout.n_position:
            self.without_efforts += len(run)
            return
        try:
            t, q, _, effort = layout.read_arrays([msg.data for msg, _ in run], velocities=False, efforts=True)
        except ValueError:  # counts that differ between the messages: one by one
            for msg, received in run:
                self._add_one(msg, received)
            return
        assert effort is not None
        receive_times = np.array([r for _, r in run])
        self._keep(np.where(t == 0.0, receive_times, t), q[:, index], effort[:, index])

    def _add_one(self, msg: Any, received: float) -> None:
        try:
            names = [str(n) for n in msg.name]
            position = np.asarray(msg.position, dtype=float).reshape(-1)
            effort = np.asarray(msg.effort, dtype=float).reshape(-1)
            t = stamp_to_sec(msg.header.stamp) or float(received)
        except (AttributeError, TypeError, ValueError, IndexError, OverflowError):
            self.malformed += 1
            return
        index = self._index(names)
        if index is None:
            self.without_joints += 1
        elif len(position) != len(names):
            self.malformed += 1
        elif len(effort) != len(names):
            self.without_efforts += 1
        else:
            self._keep(np.array([t]), position[index][None, :], effort[index][None, :])


def _layout_of(msg: Any, previous: JointStateLayout | None) -> JointStateLayout | None:
    """The layout of a serialised JointState (``previous`` when it fits), or None (read one by one)."""
    if type(msg) is not SerializedJointState:
        return None
    data = msg.data
    if previous is not None and previous.fits(data):
        return previous
    try:
        return joint_state_layout(data)
    except ValueError:
        return None


def recording_refusal(recorder: JointStateRecorder, topic: str = "") -> str | None:
    """Why the recording cannot be fitted ("refused: ..."), or None."""
    where = f" on {topic}" if topic else ""
    d = recorder.duration_s
    if recorder.messages == 0:
        return f"refused: no joint states arrived{where} during the {d:g} s recording"
    if recorder.samples == 0:
        if recorder.without_efforts:
            return (f"refused: the joint states{where} carry no efforts ({recorder.without_efforts} messages without "
                    "an effort per joint): the calibration needs the joints' torques")
        if recorder.without_joints:
            return (f"refused: no joint state{where} has every arm joint ({', '.join(recorder.joint_names)}; "
                    f"{recorder.without_joints} messages without)")
        return f"refused: {recorder.malformed} joint states{where} could not be read"
    t, q, _ = recorder.arrays()
    span = float(np.max(t) - np.min(t))
    if span < MIN_SECONDS_WITH_EFFORTS:
        return (f"refused: only {span:.2f} s of joint states with efforts{where} ({recorder.samples} messages; "
                f"{recorder.without_efforts} without efforts)")
    moved = np.ptp(q, axis=0)
    still = [f"{name} ({r:.3f} rad)" for name, r in zip(recorder.joint_names, moved) if not r >= MIN_JOINT_RANGE_RAD]
    if still:
        return (f"refused: too little motion: {', '.join(still)} did not move (each joint must move at least "
                f"{MIN_JOINT_RANGE_RAD:g} rad while recording; move the unloaded arm through its range)")
    return None


def fit_calibration(
    kinematics: SensorKinematics,
    recorder: JointStateRecorder,
    request: CalibrateRequest,
    robot: str = "",
    info: dict[str, Any] | None = None,
    effort_unit: str = "torque",
    torque_constants: Sequence[float] = (),
    unloaded: JointRecording | None = None,
) -> CalibrateResult:
    """Fit the arm's calibration to a recording :func:`recording_refusal` accepts, and write it.

    The file is ``request.path``, written atomically (its directories made). A
    failure (too few samples once filtered, a file that cannot be written) is an
    unsuccessful result, never an exception.

    Args:
        kinematics: the arm's, whose joints are the recorder's (the stream's, or one built for it).
        recorder: the recording.
        request: the request (the file, whether to fit effort scales).
        robot: the robot's name, kept in the file.
        info: more entries for the file's metadata.
        effort_unit: the setting that says what the efforts are (torque or current).
        torque_constants: the setting that converts them to N·m
            (:func:`~payload_estimator.pipeline.joint_torques.torques_from_efforts`).
        unloaded: with a request's known payload (``recorder`` the arm holding it): the unloaded arm's
            recording of an earlier call, fitted with it.
    """
    if tuple(kinematics.joint_names) != recorder.joint_names:
        return CalibrateResult(False, f"refused: the arm's joints {list(kinematics.joint_names)} are not the "
                                      f"recorded ones {list(recorder.joint_names)}")
    t, q, effort = recorder.arrays()
    try:
        effort = torques_from_efforts(effort, effort_unit, torque_constants, scale_calibrated=request.effort_scale)
    except ValueError as exc:
        return CalibrateResult(False, f"refused: {exc}")
    recording = joint_recording(t, q, effort)
    checked: EffortCheck | None = None
    if request.known_payload is None:  # the efforts against the description's torques: units and signs, as calibrate
        checked = check_efforts(ArmDynamics(kinematics), recording,
                                currents=effort_unit == "current" and not len(torque_constants))
        if checked.refusal and (not request.effort_scale or checked.flipped):
            return CalibrateResult(False, f"refused: {checked.refusal}")
    meta = {"source": "~/calibrate", "recorded_s": round(float(np.ptp(t)), 3), "joint_states": int(len(t)),
            "joint_states_without_efforts": int(recorder.without_efforts), **(info or {})}
    known: dict[str, Any] = {}
    payload = request.known_payload
    if payload is not None:
        if unloaded is None or unloaded.q.shape[1:] != recording.q.shape[1:]:
            return CalibrateResult(False, "refused: a known payload's recording is fitted with the unloaded arm's: "
                                          "call ~/calibrate without payload first (known_payload_mass 0)")
        if len(recording) < 10:
            return CalibrateResult(False, f"refused: the known payload's recording has {len(recording)} usable "
                                          "samples; it needs seconds of motion")
        known = {"loaded": recording, "loaded_torques": payload_torques(kinematics, recording.q, recording.dq,
                                                                        recording.ddq, payload.phi)}
        meta = {**meta, "known_payload_mass": round(float(payload.mass), 6),
                "known_payload_com": [round(float(v), 6) for v in payload.com]}
        recording = unloaded
    try:
        calibration, fit = calibrate_arm(kinematics, recording, robot=robot, effort_scale=request.effort_scale,
                                         info=meta, load_friction=request.load_friction, **known)
    except ValueError as exc:
        return CalibrateResult(False, f"refused: {exc} (joint states with gaps longer than 50 ms are split, and "
                                      "each piece loses 0.2 s at both ends)")
    try:
        request.path.parent.mkdir(parents=True, exist_ok=True)
        calibration.save(request.path)
    except OSError as exc:
        return CalibrateResult(False, f"cannot write {request.path}: {exc.strerror or exc}")
    before, after = fit.rms_description, fit.rms_calibrated
    inconsistent = [j for j, ok in zip(calibration.body_joints, calibration.consistent) if not ok]
    with_known = "" if payload is None else (f" and {len(known['loaded'])} holding the known {payload.mass:g} kg "
                                             "payload")
    message = (f"calibrated {len(recorder.joint_names)} joints from {fit.samples} samples{with_known} "
               f"({meta['recorded_s']:g} s): effort residual RMS {float(np.sqrt(np.mean(before ** 2))):.3f} -> "
               f"{float(np.sqrt(np.mean(after ** 2))):.3f} N·m"
               + (f" (bodies on {', '.join(inconsistent)} not physically consistent)" if inconsistent else "")
               + f"; written to {request.path}")
    noted = checked.warning() if checked is not None else None
    if noted:
        message += f"; warning: {noted}"
    return CalibrateResult(True, message, str(request.path), recorder.joint_names,
                           tuple(float(x) for x in before), tuple(float(x) for x in after), int(fit.samples),
                           recording)


class CalibrationService:
    """``~/calibrate`` for the node: record, check, fit, write and, in joint-torque mode, estimate with it.

    It records for the request's duration. One call at a time; a second one
    meanwhile is refused at once. The recording is the supervisor's (the
    processing loop feeds it); this waits for its end in the service's own
    thread, then fits there (slow), never in the loop.

    Args:
        supervisor: the node's supervisor.
        lock: what the node holds around the supervisor (held briefly, never while waiting or fitting).
        set_arm_calibration: sets the ``arm_calibration`` parameter to a file; returns (accepted, why not).
        running: whether the node still runs (a shutdown ends the wait for the recording early).
        resolve: a topic name as the node resolves it (for messages).
        log: where the recording's start is logged (``info``).
        clock: the receive-time clock, s.
        sleep: how the wait for the recording's end sleeps, s.
    """

    def __init__(self, supervisor: Supervisor, lock: Any, set_arm_calibration: Callable[[str], tuple[bool, str]],
                 running: Callable[[], bool], resolve: Callable[[str], str] = str, log: Any = None,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], Any] = time.sleep) -> None:
        self._supervisor = supervisor
        self._lock = lock
        self._set_arm_calibration = set_arm_calibration
        self._running = running
        self._resolve = resolve
        self._log = log if log is not None else supervisor.log
        self._clock = clock
        self._sleep = sleep
        self._busy_lock = threading.Lock()
        self._busy = False
        self._unloaded: tuple[tuple[str, ...], JointRecording] | None = None

    def calibrate(self, duration_s: float, path: str, effort_scale: bool = False, load_friction: bool = False,
                  known_payload_mass: float = 0.0, known_payload_com: Sequence[float] = ()) -> CalibrateResult:
        """Serve one request; a refusal is never raised: the result says why.

        Args:
            duration_s: the recording time, s (0: :data:`DEFAULT_DURATION_S`).
            path: the file to write (empty: the ``arm_calibration`` parameter's).
            effort_scale: whether to fit effort scales.
            load_friction: whether to fit the load-dependent Coulomb friction.
            known_payload_mass: kg: 0, the arm unloaded (its recording is kept for a known payload's call);
                > 0, the arm holds a point mass at ``known_payload_com`` (m, flange frame), fitted with the last
                unloaded call's recording.
            known_payload_com: see ``known_payload_mass``.
        """
        with self._busy_lock:
            if self._busy:
                return CalibrateResult(False, "refused: a calibration is already recording")
            self._busy = True
        try:
            return self._record_and_fit(duration_s, path, effort_scale, load_friction, known_payload_mass,
                                        known_payload_com)
        finally:
            with self._lock:
                self._supervisor.stop_calibration()  # (left early: an error, shutdown)
            with self._busy_lock:
                self._busy = False

    def _record_and_fit(self, duration_s: float, path: str, effort_scale: bool, load_friction: bool,
                        known_payload_mass: float, known_payload_com: Sequence[float]) -> CalibrateResult:
        supervisor = self._supervisor
        with self._lock:
            settings = supervisor.settings
            try:
                request = calibrate_request(duration_s, path, settings.arm_calibration if settings else "",
                                            effort_scale, load_friction, known_payload_mass, known_payload_com)
            except ValueError as exc:
                return CalibrateResult(False, str(exc))
            if request.known_payload is not None and self._unloaded is None:
                return CalibrateResult(False, "refused: a known payload's recording is fitted with the unloaded "
                                              "arm's: call ~/calibrate without payload first (known_payload_mass 0)")
            start = self._clock()
            why = supervisor.start_calibration(request, start)
        if why is not None:
            return CalibrateResult(False, why)
        assert settings is not None
        topic = self._resolve(settings.joint_states_topic)
        holding = ("without payload" if request.known_payload is None
                   else f"holding the known {request.known_payload.mass:g} kg payload")
        self._log.info(f"~/calibrate: recording the joint states on {topic} for {request.duration_s:g} s: "
                       f"move the arm, {holding}, through its range")
        deadline = start + request.duration_s + END_MARGIN_S
        while self._clock() < deadline and self._running():
            self._sleep(0.05)
        with self._lock:
            recorder = supervisor.stop_calibration()
        if recorder is None:
            return CalibrateResult(False, "the recording was lost (internal error)")
        why = recording_refusal(recorder, topic)
        if why is not None:
            return CalibrateResult(False, why)
        try:
            kinematics = supervisor.calibration_kinematics()
        except ValueError as exc:
            return CalibrateResult(False, f"refused: {exc}")
        unloaded = None
        if request.known_payload is not None and self._unloaded is not None:
            joints, unloaded = self._unloaded
            if joints != recorder.joint_names:
                return CalibrateResult(False, f"refused: the unloaded recording kept is of joints {list(joints)}, this "
                                              f"one of {list(recorder.joint_names)}: calibrate without payload again")
        result = fit_calibration(kinematics, recorder, request, robot=settings.robot,
                                 effort_unit=settings.effort_unit, torque_constants=settings.torque_constants,
                                 unloaded=unloaded)
        if result.success and request.known_payload is None and result.recording is not None:
            self._unloaded = (recorder.joint_names, result.recording)  # for a known payload's call
        if result.success:
            result = self._load(result, request.path)
        return result

    def _load(self, result: CalibrateResult, path: Path) -> CalibrateResult:
        """In joint-torque mode, estimate with the calibration just written (the parameter names it)."""
        settings = self._supervisor.settings
        if settings is None or settings.wrench_source is not WrenchSource.JOINT_TORQUES:
            return result
        current = str(Path(settings.arm_calibration).expanduser().absolute()) if settings.arm_calibration else ""
        if current == str(path):
            with self._lock:
                self._supervisor.reload_calibration()
            return replace(result, message=result.message + "; estimating with it")
        accepted, why_not = self._set_arm_calibration(str(path))
        if not accepted:
            return replace(result, message=result.message + f"; not loaded: {why_not}")
        return replace(result, message=result.message + "; arm_calibration now names it and the estimation "
                                                        "restarts with it")
