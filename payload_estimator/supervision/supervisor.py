"""The estimator node's lifecycle, without ROS: from parameters and a robot description to messages.

The rclpy node (:mod:`payload_estimator.ros.estimator_node`) declares the
parameters, subscribes, publishes, serves and runs its processing loop;
everything it decides is decided here, by a :class:`Supervisor`, so that it can
be tested without ROS:

* **status**: waiting for ``robot_description`` (inputs are dropped and
  counted), waiting for frames the URDF lacks (looked up through the node's
  ``lookup`` callable, tf2 on ROS, for :data:`TF_WAIT_S`; then built without
  them: a missing sensor frame is attached to its parent, by default the
  flange), a configuration error (retried every :data:`TF_RETRY_S` while
  frames are missing; otherwise until the parameters or the description
  change), running (:mod:`payload_estimator.supervision.status`);
* **parameters**: a change is applied live or rebuilds the stream
  (:mod:`payload_estimator.supervision.parameters`);
* **the processing loop**: :meth:`Supervisor.tick` is called on every turn of
  the node's processing loop (:class:`~payload_estimator.supervision.processing_loop.ProcessingLoop`:
  every 100 ms, more often to publish faster than 10 Hz) with everything its
  input queue held. It runs one :class:`~payload_estimator.pipeline.driver.Driver`
  turn (:func:`~payload_estimator.io.ros_inbound.feed_many`, then
  :meth:`~payload_estimator.pipeline.stream.EstimationStream.process`, which
  processes the turn's input by its stamps) and, at ``publish_rate_hz``, returns
  the :class:`~payload_estimator.supervision.node_outputs.Outputs` to publish on
  the topics of :data:`~payload_estimator.supervision.node_outputs.OUTPUT_TOPICS`;
* **stale inputs** (:class:`~payload_estimator.supervision.estimate_publication.EstimatePublication`):
  the last good estimate stays published at ``publish_rate_hz``, with
  ``stale: true`` and its ``age``, while an input the estimate needs is silent
  (longer than ``stale_after_s``), while the node is not estimating (waiting for
  the description or frames, a configuration error) and after a rebuild until
  the new stream has an estimate; an estimate that is not finite is never
  published. While every input is silent no Driver turn runs at all (nothing can
  change the estimate);
* **diagnostics**: the node's own status first, then the stream's;
* **services**: reset, pause, ``save_urdf`` (the frame, the file) and what
  ``~/apply`` sends (:mod:`payload_estimator.supervision.estimate_handover`; the
  robot bridge only sends it); ``~/calibrate``'s recording
  (:class:`~payload_estimator.supervision.calibration_service.JointStateRecorder`, fed every turn, running or not)
  and the arm model it is fitted with;
* **joint torques** (``wrench_source: joint_torques``): a calibration file that is missing or
  another arm's is a configuration error naming the file and what to do (``~/calibrate``), looked
  for again every :data:`TF_RETRY_S`; joint states without efforts make the node's status ERROR.

Messages are made by a :data:`~payload_estimator.io.ros_factories.MessageFactory`:
rclpy messages in the node, ``rosbags`` dataclasses in tests. Times: ``now``
is the clock of the inputs' receive times (the monotonic clock in the node).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from payload_estimator.errors import ConfigurationError
from payload_estimator.io import ros_factories, ros_inbound, ros_outbound
from payload_estimator.io.diagnostic_level import DiagnosticLevel
from payload_estimator.pipeline.build import (
    ExtraFrame,
    arm_joint_names,
    build_stream,
    builtin_description,
    flange_frame,
    load_arm_calibration,
)
from payload_estimator.pipeline.driver import PROCESS_PERIOD_S, SHORTEST_PROCESS_PERIOD_S, Driver
from payload_estimator.pipeline.health import BUFFER_OVERFLOW, LOGGER_NAME, MISSING_EFFORT, SOLVER_FAILURE
from payload_estimator.pipeline.kinematics import SensorKinematics
from payload_estimator.pipeline.stream import IMU, EstimationStream, StreamEstimate
from payload_estimator.robots.description import parse_description
from payload_estimator.settings import NODE_NAME, MotionSource, Settings, WrenchSource
from payload_estimator.supervision.calibration_service import CalibrateRequest, JointStateRecorder
from payload_estimator.supervision.estimate_handover import ApplyDecision, SavedUrdf, apply_decision, save_urdf
from payload_estimator.supervision.estimate_publication import EstimatePublication
from payload_estimator.supervision.frames import frames_to_look_up
from payload_estimator.supervision.node_outputs import Outputs
from payload_estimator.supervision.parameters import (
    LIVE,
    NO_CHANGE,
    REBUILD,
    change_effect,
    changed_fields,
    parameters_refusal,
    settings_with,
)
from payload_estimator.supervision.payload_clouds import start_clouds
from payload_estimator.supervision.status import (
    CONFIGURATION_ERROR,
    RUNNING,
    WAITING_DESCRIPTION,
    WAITING_FRAMES,
    NodeStatus,
    node_status_fields,
)

__all__ = ["Supervisor", "Lookup", "TF_WAIT_S", "TF_RETRY_S", "PROCESS_PERIOD_S"]

TF_WAIT_S = 3.0
"""How long to wait for frames the URDF lacks to appear in tf2 before building without them, s."""
TF_RETRY_S = 5.0
"""While a needed frame exists nowhere, how often to look again, s."""

Lookup = Callable[[list[str], str], tuple[list[ExtraFrame], list[str]]]
"""``lookup(frames, parent) -> (found, not_found)``: the poses of ``frames`` in ``parent`` that are
known (as :func:`~payload_estimator.supervision.frames.extra_frame` gives them) and the names of the others."""


def _frame_id(msg: Any) -> str:
    try:
        return str(msg.header.frame_id).lstrip("/")
    except AttributeError:
        return ""


class Supervisor:
    """The estimator node's state and decisions (module docstring).

    Args:
        parameters: the node's parameter values, one per ``Settings`` field (invalid values: a
            configuration error until :meth:`parameters_changed` brings valid ones).
        factory: makes the messages (``rclpy_factory()`` in the node, ``rosbags_factory`` in tests).
        name: the node's fully qualified name without the leading slash (the diagnostics' names).
        lookup: finds frames the URDF lacks (tf2 on ROS); None: no frame can be found.
        release_lookup: called once the stream is built (the node stops listening to /tf).
        resolve: a topic name as the node resolves it (for log lines and diagnostics).
        log: where the lifecycle is logged (``info``, ``warning``, ``error``): the node's logger.
    """

    def __init__(
        self,
        parameters: Mapping[str, Any],
        factory: Any,
        name: str = NODE_NAME,
        lookup: Lookup | None = None,
        release_lookup: Callable[[], None] | None = None,
        resolve: Callable[[str], str] = str,
        log: Any = None,
    ) -> None:
        self.factory = factory
        self.name = name
        self._lookup = lookup
        self._release_lookup = release_lookup
        self._resolve = resolve
        self.log = log if log is not None else logging.getLogger(LOGGER_NAME)

        self.settings: Settings | None = None
        self.status = NodeStatus(WAITING_DESCRIPTION)
        self.driver: Driver | None = None
        self.description: str | None = None
        self.builtin_description = bool(parameters.get("use_builtin_description", False))
        self.paused = False
        self.publication = EstimatePublication(factory, self.log)
        """What was published: the last good estimate, whether it is stale (and why), its age."""
        self.frames_from_tf: list[str] = []
        self.dropped_while_not_running = 0
        self.calibration_caveats: list[str] = []  # what the arm calibration in use did not determine: a WARN
        self._rebuild_requested = self.builtin_description  # the model is the package's own (made in _build)
        self._previous_counts: dict[str, int] = {}
        self._overflow_since_diagnostics: dict[str, int] = {}
        self._imu_frame_seen: str | None = None
        self._frames_wait_start: float | None = None
        self._next_frames_retry = float("inf")
        self.calibration: JointStateRecorder | None = None
        """``~/calibrate``'s recording while it runs (fed by :meth:`tick`)."""
        self._extra_frames: list[ExtraFrame] = []  # frames from tf2 of the last build (for ~/calibrate's model)

        try:
            self.settings = settings_with(Settings(), parameters)
        except ValueError as exc:
            self._configuration_error(f"invalid parameters: {exc}")
            return
        if not self.builtin_description:
            topic = self._resolve("robot_description")
            self.status = NodeStatus(WAITING_DESCRIPTION, f"on {topic}; inputs are dropped until it arrives")
            self.log.info(f"waiting for the robot model on {topic} (std_msgs/String, transient local); "
                          "inputs are dropped until it arrives")

    # ------------------------------------------------------------------ state
    @property
    def stream(self) -> EstimationStream | None:
        """The running stream, or None while not running."""
        return self.driver.stream if self.driver is not None else None

    @property
    def running(self) -> bool:
        """Whether the stream runs (a Driver exists)."""
        return self.driver is not None

    @property
    def last_output(self) -> StreamEstimate | None:
        """The last good (finite) estimate published, or None.

        It is kept across rebuilds and configuration errors, and republished with ``stale: true``
        meanwhile (``~/apply`` hands it over only while the stream that made it runs, unless forced).
        """
        return self.publication.last_output

    @property
    def stale(self) -> bool:
        """Whether the estimate published last was stale; :attr:`stale_reason` says why."""
        return self.publication.stale

    @property
    def stale_reason(self) -> str:
        """Why the estimate published last was stale ("" when it was not)."""
        return self.publication.stale_reason

    @property
    def solver_interrupted(self) -> bool:
        """Whether the estimator's last solve was interrupted by SIGINT.

        OSQP (PMD's QP) replaces the process's SIGINT handler while it solves, prints "Solver
        interrupted", returns, and the process never sees the signal: whoever runs the loop must hand
        it on (the node raises it again).
        """
        stream = self.stream
        return stream is not None and getattr(stream.estimator, "last_solve_status", "") == "interrupted"

    # ------------------------------------------------------------- parameters
    @staticmethod
    def check_parameters(parameters: Mapping[str, Any]) -> str | None:
        """Why these parameter values are invalid, or None (they are valid)."""
        return parameters_refusal(parameters)

    def parameters_changed(self, parameters: Mapping[str, Any]) -> None:
        """Apply accepted values: live changes at once, the others by rebuilding the stream."""
        try:
            new = settings_with(Settings(), parameters)
        except ValueError:
            return  # declaration in progress (validated as a whole afterwards)
        old, self.settings = self.settings, new
        if old is None:
            self._request_rebuild()
            return
        effect = change_effect(old, new)
        if effect == NO_CHANGE:
            return
        names = ", ".join(changed_fields(old, new))
        if effect == LIVE:
            self.log.info(f"parameters changed: {names}")
        elif effect == REBUILD:
            self.log.info(f"parameters changed: {names}; the estimation restarts")
            self._request_rebuild()

    def on_description(self, urdf: str) -> None:
        """A ``robot_description`` arrived (the same one again changes nothing)."""
        if urdf == self.description:
            return
        previous, self.description = self.description, urdf
        self._request_rebuild()
        if previous is None:
            self.log.info("robot_description received")
            return
        names = [_robot_name(text) for text in (previous, urdf)]
        change = f" (robot {names[1]!r}, was {names[0]!r})" if names[0] != names[1] else ""
        self.log.info(f"robot_description changed{change}: the estimation restarts"
                      + ("; the last estimate is republished as stale until there is a new one"
                         if self.last_output is not None else ""))

    def _request_rebuild(self) -> None:
        self._rebuild_requested = True
        self._frames_wait_start = None  # a new configuration waits for its frames anew

    # ------------------------------------------------------------------- loop
    def tick(self, now: float, items: list[tuple[str, Any, float]],
             overflow: Mapping[str, int] | None = None) -> Outputs | None:
        """One turn of the node's processing loop at ``now`` (one Driver turn).

        Builds the stream when due; while not running, the items are dropped (and counted).

        Args:
            now: s on the receive clock.
            items: the ``(kind, msg, receive time)`` that arrived since the last turn.
            overflow: messages the input queue dropped since the last turn, per stream.

        Returns:
            What to publish on every turn that takes an estimate (at ``publish_rate_hz``) or
            republishes the last good one as stale, else None.
        """
        overflow = {k: int(n) for k, n in (overflow or {}).items() if int(n) > 0}
        if self.calibration is not None:
            self.calibration.add(items)
        for kind, n in overflow.items():
            self._overflow_since_diagnostics[kind] = self._overflow_since_diagnostics.get(kind, 0) + n
        if self._rebuild_requested or self._build_due(now):
            self._build(items, now)
        driver = self.driver
        if driver is None:
            self.dropped_while_not_running += len(items)
            return self._republish(now, self.status.message)
        stream = driver.stream
        items = ros_inbound.take_clouds(stream, items)  # the payload's clouds (cloud_topic): fed on the next turn
        for kind, n in overflow.items():
            stream.health.report(BUFFER_OVERFLOW, f"{n} messages dropped: the input queue was full "
                                 "(processing fell behind)", kind, n)
        silent = stream.stale_streams(now)
        if not items and silent and set(silent) >= set(stream.aligner.stream_names):
            # every input silent for stale_after_s: the aligner released all it could long ago, and
            # solving again would give the same estimate; no turn (the Driver takes up where it was)
            return self._republish(now, _silent_reason(silent, stream))
        out = driver.tick(now, items)
        if out is None:
            if stream.last is None and self.last_output is not None:  # rebuilt or reset: no estimate yet
                return self._republish(now, "the estimation restarted: no new estimate yet")
            return None
        if not (np.all(np.isfinite(out.estimate.phi)) and np.all(np.isfinite(out.params_in_flange.phi))):
            stream.health.report(SOLVER_FAILURE, "estimate not finite: discarded, the last good one is kept", None)
            return self._republish(now, "the estimate is not finite")
        return self.publication.fresh(stream, out, now, _silent_reason(silent, stream) if silent else "")

    def _republish(self, now: float, reason: str) -> Outputs | None:
        """The last good estimate again, flagged stale, at ``publish_rate_hz`` (None when not due or none)."""
        period = 1.0 / self.settings.publish_rate_hz if self.settings is not None else 0.1
        return self.publication.republish(now, reason, period)

    def _build_due(self, now: float) -> bool:
        """Whether to try building again without a new reason: while frames are awaited in tf2."""
        if self.driver is not None:
            return False
        if self.status.state == WAITING_FRAMES:
            return True
        return self.status.state == CONFIGURATION_ERROR and now >= self._next_frames_retry

    def _build(self, items: list[tuple[str, Any, float]], now: float) -> None:
        """(Re)build the stream from the settings, the robot description and the frames looked up."""
        self._rebuild_requested = False
        for kind, msg, _ in items:  # the IMU frame may come from the messages
            if kind == IMU:
                self._imu_frame_seen = _frame_id(msg) or self._imu_frame_seen
        settings = self.settings
        if settings is None:
            return  # configuration error already reported
        urdf = self.description
        if self.builtin_description:
            try:
                urdf = self.description = builtin_description(settings)
            except (ValueError, OSError) as exc:
                self._configuration_error(f"no built-in robot description: {exc}")
                return
        if urdf is None:
            self._set_not_running(NodeStatus(WAITING_DESCRIPTION, f"on {self._resolve('robot_description')}"))
            return
        imu_frame = settings.imu_frame or self._imu_frame_seen
        if settings.motion_source is MotionSource.IMU and not imu_frame:
            self._set_not_running(NodeStatus(WAITING_FRAMES, "the IMU frame (no IMU message yet)"))
            return
        try:
            missing = frames_to_look_up(settings, urdf, imu_frame)
            flange = flange_frame(settings)
        except ValueError as exc:
            self._configuration_error(f"robot_description: {exc}")
            return
        extra: list[ExtraFrame] = []
        not_found = list(missing)
        if missing and self._lookup is not None:
            extra, not_found = self._lookup(missing, flange)
        self._extra_frames = extra
        if not_found:
            if self._frames_wait_start is None:
                self._frames_wait_start = now
                self.log.info(f"frames not in robot_description: {', '.join(missing)}; "
                              f"looking them up in tf2 relative to {flange}")
            if now - self._frames_wait_start < TF_WAIT_S:
                self._set_not_running(NodeStatus(WAITING_FRAMES, ", ".join(not_found)))
                return
        try:
            calibration = load_arm_calibration(settings, arm_joint_names(settings, urdf))
        except ValueError as exc:  # joint torques: a missing file may be written any time (CLI, ~/calibrate)
            hint = "" if "~/calibrate" in str(exc) else (
                "; call ~/calibrate with the arm unloaded and moving to record this arm's, or set arm_calibration")
            self._configuration_error(f"arm calibration: {exc}{hint}")
            self._next_frames_retry = now + TF_RETRY_S
            return
        self.calibration_caveats = calibration.caveats() if calibration is not None else []
        for caveat in self.calibration_caveats:
            self.log.warning(f"arm calibration {settings.arm_calibration}: {caveat}")
        try:
            stream = build_stream(settings, urdf, extra_frames=extra, imu_frame=imu_frame, live=True)
        except Exception as exc:  # noqa: BLE001 - any configuration problem is reported, not raised
            where = f" (not in robot_description nor in tf2: {', '.join(not_found)})" if not_found else ""
            self._configuration_error(f"cannot build the estimator: {exc}{where}")
            self._next_frames_retry = now + TF_RETRY_S if not_found else float("inf")
            return
        self._start(stream, settings, extra, not_found)

    def _start(self, stream: EstimationStream, settings: Settings, extra: list[ExtraFrame],
               not_found: list[str]) -> None:
        """Run the stream just built (``extra``: the frames found in tf2; ``not_found``: those found nowhere)."""
        if settings.sensor_frame in not_found:
            self.log.warning(
                f"sensor frame {settings.sensor_frame!r} is neither in robot_description nor in tf2: attached to "
                f"{settings.sensor_parent_frame or flange_frame(settings)!r} at sensor_xyz={settings.sensor_xyz}, "
                f"sensor_rpy={settings.sensor_rpy}")
        stream.paused = self.paused
        start_clouds(stream, self._lookup)
        # the node's loop sets the turns (one tick each); the Driver's period only sets how early a
        # publication may come (half of it): the shortest, as the loop's turns follow its own timer
        self.driver = Driver(stream, ros_inbound.feed_many, publish_period_s=1.0 / settings.publish_rate_hz,
                             process_period_s=SHORTEST_PROCESS_PERIOD_S)
        self.frames_from_tf = [f[0] for f in extra]
        self._frames_wait_start = None
        self.publication.new_stream()
        self._previous_counts = {}
        if self._release_lookup is not None:
            self._release_lookup()
        self.status = NodeStatus(RUNNING)
        source = (f"the joints' efforts on {self._resolve(settings.joint_states_topic)}, arm calibration "
                  f"{settings.arm_calibration or 'none (the description, no friction)'}"
                  if stream.needs_efforts else self._resolve(settings.wrench_topic))
        self.log.info(
            f"estimating with {settings.estimator} in {settings.sensor_frame} ({settings.wrench_source} wrench from "
            f"{source}, joints {', '.join(stream.joint_names)})"
            + (f"; frames from tf2: {', '.join(self.frames_from_tf)}" if self.frames_from_tf else ""))

    def _set_not_running(self, status: NodeStatus) -> None:
        self.driver = None
        if status.state != self.status.state:
            self.log.info(f"{status.message}; inputs are dropped meanwhile")
        self.status = status

    def _configuration_error(self, message: str) -> None:
        if self.status.state != CONFIGURATION_ERROR or self.status.detail != message:
            self.log.error(f"{message} -- inputs are dropped until the configuration is fixed "
                           "(the last good estimate is kept)")
        self.driver = None
        self.status = NodeStatus(CONFIGURATION_ERROR, message)

    # ------------------------------------------------------------ diagnostics
    def diagnostics(self, now: float, stamp: float, queue_length: int = 0) -> Any:
        """The ``diagnostic_msgs/DiagnosticArray`` for ``/diagnostics``.

        It holds the node's status, then (when running) the stream's inputs, rejected input and estimate.

        Args:
            now: s on the receive clock (input rates, staleness).
            stamp: the message's stamp, s on the node's clock.
            queue_length: the input queue's length.
        """
        overflow, self._overflow_since_diagnostics = self._overflow_since_diagnostics, {}
        settings = self.settings
        status = NodeStatus(self.status.state, self.status.detail, {
            "robot": settings.robot if settings else "?",
            "robot_description": "built-in" if self.builtin_description else self._resolve("robot_description"),
            "frames from tf2": ", ".join(self.frames_from_tf) or "none",
            "inputs dropped while not running": self.dropped_while_not_running,
            "queue length": int(queue_length),
            "estimate stale": f"yes: {self.stale_reason}" if self.stale else "no",
            "estimate age (s)": f"{self.publication.age(now):.1f}" if self.last_output is not None else "no estimate",
        })
        if settings is not None and settings.wrench_source is WrenchSource.JOINT_TORQUES:
            status.values["arm calibration"] = settings.arm_calibration or "none (the description, no friction)"
        recorder = self.calibration
        if recorder is not None:
            status.values["calibrating"] = (f"recording {recorder.elapsed(now):.1f} of {recorder.duration_s:g} s, "
                                            f"{recorder.samples} joint states with efforts, "
                                            f"{recorder.without_efforts} without")
        stream = self.stream
        diagnostics = None
        if stream is not None:
            diagnostics = stream.diagnostics(now)
            diagnostics["recent_counts"] = ros_outbound.recent_counts(self._previous_counts, diagnostics["counts"])
            self._previous_counts = dict(diagnostics["counts"])
        caveats = self.calibration_caveats if "arm calibration" in status.values else []
        if caveats:
            status.values["arm calibration caveats"] = "; ".join(caveats)
        fields = node_status_fields(status, self.name, overflow)
        if caveats and fields["level"] == DiagnosticLevel.OK:
            fields["level"] = DiagnosticLevel.WARN
            fields["message"] += "; the arm calibration did not determine everything the estimate uses (see its " \
                                 "caveats)"
        no_effort = int((diagnostics or {}).get("recent_counts", {}).get(MISSING_EFFORT, 0))
        if no_effort and stream is not None:
            assert settings is not None
            fields["level"] = DiagnosticLevel.ERROR
            fields["message"] = (f"{no_effort} joint states without an effort per joint since the last status (on "
                                 f"{self._resolve(settings.joint_states_topic)}): the wrench comes from joint torques "
                                 "(wrench_source joint_torques): they are dropped, no estimate comes from them")
        node_status = self.factory("diagnostic_msgs/msg/DiagnosticStatus", fields)
        if diagnostics is None:
            msg = self.factory("diagnostic_msgs/msg/DiagnosticArray",
                               {"header": {"stamp": ros_factories.sec_to_stamp_fields(stamp)}, "status": []})
        else:
            msg = ros_outbound.diagnostic_array_msg(self.factory, diagnostics, self.name, stamp)
        msg.status.insert(0, node_status)
        return msg

    # --------------------------------------------------------------- services
    def reset(self) -> tuple[bool, str]:
        """``~/reset``: forget the estimate and start over from new data."""
        driver = self.driver
        if driver is None:
            return False, f"nothing to reset: {self.status.message}"
        driver.stream.reset()
        driver.reset()
        self.publication.forget()
        message = "estimate reset: estimating from new data"
        self.log.info(message)
        return True, message

    def pause(self, paused: bool) -> tuple[bool, str]:
        """``~/pause``: freeze the estimate (True) or let new data in again (False)."""
        self.paused = bool(paused)
        if self.driver is not None:
            self.driver.stream.paused = self.paused
        message = ("paused: the estimate is frozen (inputs are still checked)" if self.paused
                   else "resumed: new data enter the estimate")
        self.log.info(message)
        return True, message

    def save_urdf(self, frame: str = "", path: str = "", force: bool = False) -> SavedUrdf:
        """``~/save_urdf``: the ``<inertial>`` of the last estimate in ``frame``, written to ``path`` if given.

        Refused without an estimate or a running stream; refused too when the estimate may not be handed
        over, unless ``force`` (:func:`~payload_estimator.supervision.estimate_handover.save_urdf`).

        Args:
            frame: "" or "flange": the flange; "sensor": the sensor frame; or any frame fixed to them.
            path: the file to write ("" writes none).
            force: hand over an estimate the checks refuse softly (marked as forced).
        """
        out, stream = self.last_output, self.stream
        if out is None or stream is None:
            return SavedUrdf(False, "no estimate yet" if stream is not None else f"no estimate: {self.status.message}")
        return save_urdf(out, stream, frame, path, force)

    def start_calibration(self, request: CalibrateRequest, now: float) -> str | None:
        """``~/calibrate``: start recording the arm's joint states at ``now`` for ``request.duration_s``.

        Returns:
            Why not ("refused: ..."), or None when the recording started.
        """
        if self.calibration is not None:
            return "refused: a calibration is already recording"
        settings, urdf = self.settings, self.description
        if settings is None:
            return f"refused: {self.status.message}"
        stream = self.stream
        if stream is not None:
            joints = stream.joint_names
        elif urdf is None:
            return f"refused: no robot model yet ({self.status.message})"
        else:
            try:
                joints = arm_joint_names(settings, urdf)
            except ValueError as exc:
                return f"refused: {exc}"
        self.calibration = JointStateRecorder(joints, now, request.duration_s)
        return None

    def stop_calibration(self) -> JointStateRecorder | None:
        """End ``~/calibrate``'s recording; returns it (None when none ran)."""
        recorder, self.calibration = self.calibration, None
        return recorder

    def calibration_kinematics(self) -> SensorKinematics:
        """The arm's model for ``~/calibrate``'s fit.

        It is the running stream's, else one built from the settings and the description without any
        calibration (slow: call it outside the loop).

        Raises:
            ValueError: no robot model (:class:`~payload_estimator.errors.ConfigurationError`), or one the
                settings cannot be built with.
        """
        stream, settings, urdf = self.stream, self.settings, self.description
        if stream is not None:
            return stream.kinematics
        if settings is None or urdf is None:
            raise ConfigurationError(f"no robot model ({self.status.message})")
        uncalibrated = replace(settings, arm_calibration="")
        return build_stream(uncalibrated, urdf, extra_frames=self._extra_frames,
                            imu_frame=settings.imu_frame or self._imu_frame_seen).kinematics

    def reload_calibration(self) -> None:
        """The file of ``arm_calibration`` was (re)written: rebuild the stream with it."""
        self.log.info("arm calibration written: the estimation restarts with it")
        self._request_rebuild()

    def apply(self, force: bool = False, dry_run: bool = False) -> ApplyDecision:
        """``~/apply``: refuse (with the reason), answer a dry run with the request, or say what to send.

        Reads only ``settings`` and ``last_output``, each replaced whole: safe from the service's own thread.
        """
        settings = self.settings
        if settings is None:
            return ApplyDecision(False, f"refused: {self.status.message}")
        out = self.last_output
        if out is not None and self.publication.stream is not self.stream and not force:
            why = self.status.message if self.stream is None else "no new estimate since"
            return ApplyDecision(False, "refused: the last estimate was made before the estimation restarted "
                                 f"(robot_description or parameters changed; {why}); force: true sends it anyway")
        return apply_decision(settings, out, force, dry_run)


def _silent_reason(silent: list[str], stream: EstimationStream) -> str:
    """Why the estimate cannot be updated when ``silent`` inputs are stale."""
    return f"no {', '.join(silent)} for more than {stream.config.stale_after_s:g} s"


def _robot_name(urdf: str) -> str:
    try:
        return parse_description(urdf).name
    except ValueError:
        return "?"
