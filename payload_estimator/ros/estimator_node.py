"""The payload estimator node: joint states, a wrist wrench or the joints' efforts (and an IMU) in, the payload out.

Parameters in (one per :class:`~payload_estimator.settings.Settings` field,
usually from ``config/<robot>.yaml``); a 20 Hz loop in a thread of its own
(:class:`Loop`) takes the inputs that arrived in bulk, serialised
(:class:`InputTaker`), queues them, drains the queue into the
:class:`~payload_estimator.supervision.supervisor.Supervisor` and publishes what it returns::

    joint_states_topic  (sensor_msgs/JointState, raw)      --+
    wrench_topic        (geometry_msgs/WrenchStamped, raw) --+--> InputQueue --(20 Hz)---> Supervisor.tick
      (not with wrench_source joint_torques: the efforts of the joint states)
    imu_topic           (sensor_msgs/Imu, optional)        --+                              (Driver: stream)
    robot_description   (std_msgs/String, latched)         ----> Supervisor.on_description (frames from tf2)

    ~/estimate       payload_estimator/PayloadEstimate   \\
    ~/inertia        geometry_msgs/InertiaStamped          } publish_rate_hz (stale: the last good one again)
    ~/markers        visualization_msgs/MarkerArray       /
    ~/urdf_inertial  std_msgs/String (latched; when the estimate changes noticeably or converges)
    /diagnostics     diagnostic_msgs/DiagnosticArray (1 Hz)

    ~/reset (std_srvs/Trigger)  ~/pause (std_srvs/SetBool)
    ~/save_urdf (payload_estimator/SaveUrdf)  ~/apply (payload_estimator/ApplyEstimate)
    ~/calibrate (payload_estimator/Calibrate): record the unloaded arm, write arm_calibration, load it
    ~/identify (payload_estimator/action/Identify) --> trajectory_action (control_msgs/action/FollowJointTrajectory)

Everything this node decides (status, rebuilds, the processing loop, what to
publish, what the services answer) is decided ROS-free by the supervisor (and,
for ``~/identify``, by :class:`~payload_estimator.supervision.identify.IdentifySession`); this
module only declares, subscribes, publishes, serves, looks frames up in tf2
and forwards the package's log to rclpy. Bad input never stops the node: the
stream drops it, counts it and logs it (rate-limited), ``/diagnostics``
reports it, and the last good estimate stays: while an input is silent, the
node waits or cannot build its stream, ``~/estimate`` goes on at
``publish_rate_hz`` with the last good estimate and ``stale: true`` (its
``age`` growing). SIGINT and SIGTERM end the node cleanly (status 0).
"""

from __future__ import annotations

import functools
import gc
import logging
import signal
import threading
import time
import traceback
from dataclasses import replace
from pathlib import Path
from typing import Any

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import InertiaStamped, WrenchStamped
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.action import ActionClient, ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.exceptions import ParameterUninitializedException
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.time import Time
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import String
from std_srvs.srv import SetBool, Trigger
from visualization_msgs.msg import MarkerArray

from payload_estimator.action import Identify
from payload_estimator.excitation import ExcitationError
from payload_estimator.io import ros_factories
from payload_estimator.io.cdr import SerializedJointState, SerializedWrenchStamped
from payload_estimator.msg import PayloadEstimate
from payload_estimator.pipeline.build import flange_frame
from payload_estimator.pipeline.health import LOGGER_NAME, SATURATED
from payload_estimator.pipeline.stream import IMU, JOINTS, WRENCH
from payload_estimator.ros.robot_bridges import RobotBridge
from payload_estimator.settings import NODE_NAME, WrenchSource
from payload_estimator.srv import ApplyEstimate, Calibrate, SaveUrdf
from payload_estimator.supervision.calibration_service import (
    END_MARGIN_S,
    CalibrateResult,
    calibrate_request,
    fit_calibration,
    recording_refusal,
)
from payload_estimator.supervision.frames import extra_frame
from payload_estimator.supervision.identify import (
    ABORTED,
    CANCELED,
    DESIGNING,
    SUCCEEDED,
    Feedback,
    IdentifyGoal,
    IdentifySession,
    Outcome,
    dry_run_outcome,
    joint_reading,
    plan_identification,
    refusal,
)
from payload_estimator.supervision.input_queue import InputQueue, ReceiveClock
from payload_estimator.supervision.parameters import parameter_specs
from payload_estimator.supervision.supervisor import PROCESS_PERIOD_S, Supervisor

__all__ = ["EstimatorNode", "InputNode", "InputTaker", "spin_inputs", "main", "INPUT_QOS", "LATCHED_QOS"]

DIAGNOSTICS_PERIOD_S = 1.0
TRAJECTORY_SERVER_WAIT_S = 2.0
"""How long ~/identify waits for the FollowJointTrajectory server before refusing, s."""
EXECUTOR_THREADS = 5
"""The node's executor threads: the default group, ~/apply (waits for a service), ~/identify (runs for the
whole motion), ~/calibrate (records for its duration, then fits), and one for the answers they wait for."""

LOOP_PERIOD_S = 5 * PROCESS_PERIOD_S
"""Longest period of the node's loop (:class:`Loop`), s: 50 ms of input per turn, or less to publish
faster than ``1 / LOOP_PERIOD_S``. The Driver processes by the inputs' stamps whatever a turn holds, so
the estimate is the same as with 10 ms turns (within 1e-5, the split of the input). Each turn costs the
stream a fixed share: at 1 kHz + 1 kHz the whole process took 33 % of a core with 10 ms turns, 26 % with
20 ms, 23 % with 40 ms and 21 % with 50 ms (benchmarks/node_cpu.py, an idle 2-core machine)."""
INPUT_DEPTH = 1000
"""Messages each input subscription holds until the loop takes them: 1 s of 1 kHz input, far longer
than a turn (10 ms; a rebuild of the stream, the longest, takes a few hundred ms)."""

# Inputs: best effort, keep last, depth INPUT_DEPTH. A best-effort subscription matches
# both best-effort publishers (Franka's convenience topics, most sensor
# drivers) and reliable ones (joint_state_broadcaster, xarm_ros2); a reliable
# subscription would not match the former at all.
INPUT_QOS = QoSProfile(
    history=HistoryPolicy.KEEP_LAST, depth=INPUT_DEPTH,
    reliability=ReliabilityPolicy.BEST_EFFORT, durability=DurabilityPolicy.VOLATILE,
)
# robot_description and ~/urdf_inertial: one message that late joiners must get.
LATCHED_QOS = QoSProfile(
    history=HistoryPolicy.KEEP_LAST, depth=1,
    reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL,
)

_PARAMETER_TYPES = {
    "bool": Parameter.Type.BOOL,
    "integer": Parameter.Type.INTEGER,
    "double": Parameter.Type.DOUBLE,
    "string": Parameter.Type.STRING,
    "string_array": Parameter.Type.STRING_ARRAY,
    "double_array": Parameter.Type.DOUBLE_ARRAY,
}


_STATUS_SUCCEEDED = 4
_GOAL_STATUS = {4: "succeeded", 5: "canceled", 6: "aborted"}
"""action_msgs/GoalStatus terminal states, for messages."""


class _RclpyLogHandler(logging.Handler):
    """Forwards the ``payload_estimator`` Python logger (the stream's rate-limited warnings) to rclpy."""

    def __init__(self, logger: Any) -> None:
        super().__init__(level=logging.INFO)
        self._logger = logger

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
            if record.levelno >= logging.ERROR:
                self._logger.error(text)
            elif record.levelno >= logging.WARNING:
                self._logger.warning(text)
            elif record.levelno >= logging.INFO:
                self._logger.info(text)
            else:
                self._logger.debug(text)
        except Exception:  # noqa: BLE001 - logging must never raise into the pipeline
            pass


class _TfFrames:
    """tf2 lookups of frames the robot description lacks; listens to /tf only until the stream is built."""

    def __init__(self, node: Node) -> None:
        self._node = node
        self.buffer: Any = None
        self.listener: Any = None

    def lookup(self, frames: list[str], parent: str) -> tuple[list[tuple], list[str]]:
        """Poses of ``frames`` in ``parent`` (each looked up once): (extra frames, not found)."""
        import tf2_ros

        if self.buffer is None:
            self.buffer = tf2_ros.Buffer()
            self.listener = tf2_ros.TransformListener(self.buffer, self._node)
        found, not_found = [], []
        for frame in frames:
            try:
                tf = self.buffer.lookup_transform(parent, frame, Time())
            except tf2_ros.TransformException:
                not_found.append(frame)
                continue
            t, r = tf.transform.translation, tf.transform.rotation
            found.append(extra_frame(frame, parent, (t.x, t.y, t.z), (r.x, r.y, r.z, r.w)))
        return found, not_found

    def release(self) -> None:
        """Stop listening to /tf once the frames are known (it can be a busy topic)."""
        if self.listener is not None:
            for sub in (self.listener.tf_sub, self.listener.tf_static_sub):
                self._node.destroy_subscription(sub)
        self.listener = None
        self.buffer = None


def _service(callback: Any) -> Any:
    """A service callback that answers "success: false" with the error instead of raising
    (an exception in a callback would stop the executor, and the node with it)."""

    @functools.wraps(callback)
    def wrapper(self: EstimatorNode, request: Any, response: Any) -> Any:
        try:
            return callback(self, request, response)
        except Exception as exc:  # noqa: BLE001
            self._internal_error(f"serving {callback.__name__}", exc)
            response.success = False
            response.message = f"internal error: {type(exc).__name__}: {exc}"
            return response

    return wrapper


class InputNode(Node):
    """The input subscriptions, in a node of their own that no executor spins: :class:`InputTaker` takes
    what arrived in bulk.

    An rclpy executor takes one message per ready subscription each time it
    waits, rebuilds its wait set from every entity of its nodes and makes a
    Python message and a task of each: at 1 kHz joint states plus 1 kHz wrench
    that alone was most of a core. Joint states and the wrench are therefore
    subscribed *raw* (the serialised bytes, read in batches with numpy by
    :func:`~payload_estimator.io.ros_inbound.feed_many`, see
    :mod:`payload_estimator.io.cdr`), the IMU as messages; the callbacks here only
    run where an executor spins this node instead (:func:`spin_inputs`' fallback).

    It takes no command-line arguments (a launch file's ``__node:=`` would
    rename it too): the estimator passes the resolved topic names and its namespace.
    """

    def __init__(self, queue: InputQueue, topics: dict[str, str], namespace: str, context: Any = None) -> None:
        # no service either (Jazzy's ~/get_type_description): nothing would ever answer it
        super().__init__(f"{NODE_NAME}_inputs", namespace=namespace, context=context,
                         use_global_arguments=False, start_parameter_services=False,
                         parameter_overrides=[Parameter("start_type_description_service", value=False)])
        self.input_queue = queue
        self.inputs: list[tuple[str, Any, Any]] = [
            (JOINTS, self.create_subscription(JointState, topics[JOINTS], self._on_joint_state, INPUT_QOS,
                                              raw=True), SerializedJointState),
        ]
        """(kind, subscription, what wraps a message taken from it)"""
        if topics.get(WRENCH):  # none when the wrench comes from the joints' efforts
            self.inputs.append((WRENCH, self.create_subscription(
                WrenchStamped, topics[WRENCH], self._on_wrench, INPUT_QOS, raw=True), SerializedWrenchStamped))
        if topics.get(IMU):
            self.inputs.append((IMU, self.create_subscription(Imu, topics[IMU], self._on_imu, INPUT_QOS), None))

    def _on_joint_state(self, data: bytes) -> None:
        self.input_queue.put(JOINTS, SerializedJointState(data), time.monotonic())

    def _on_wrench(self, data: bytes) -> None:
        self.input_queue.put(WRENCH, SerializedWrenchStamped(data), time.monotonic())

    def _on_imu(self, msg: Imu) -> None:
        self.input_queue.put(IMU, msg, time.monotonic())


class InputTaker:
    """Moves every input message that arrived into the queue, in bulk (:meth:`take`, once per turn of the
    loop): no executor, no callback, no Python message object per joint state or wrench.

    The middleware holds what arrived in each subscription's history (``INPUT_QOS``:
    :data:`INPUT_DEPTH` messages) until it is taken. Each message is queued with the
    time the middleware reports for it (:class:`~payload_estimator.supervision.input_queue.ReceiveClock`).
    """

    def __init__(self, node: InputNode, queue: InputQueue) -> None:
        self._inputs = node.inputs
        self._queue = queue

    def available(self) -> bool:
        """Whether this rclpy lets a subscription be taken from directly (Humble and Jazzy do)."""
        return all(hasattr(sub.handle, "take_message") for _, sub, _ in self._inputs)

    def take(self) -> int:
        """Queue everything that arrived; returns how many messages."""
        taken = 0
        put = self._queue.put
        for kind, sub, wrap in self._inputs:
            clock = ReceiveClock.now()
            with sub.handle:
                take = sub.handle.take_message  # what rclpy's executors call for each message
                while True:
                    got = take(sub.msg_type, sub.raw)
                    if got is None:
                        break
                    msg, info = got
                    put(kind, wrap(msg) if wrap is not None else msg,
                        clock.receive_time(info.get("source_timestamp", 0), info.get("received_timestamp", 0)))
                    taken += 1
        return taken


class EstimatorNode(Node):
    """Estimates the payload of a robot arm online (see the module docstring for the interface).

    Keyword arguments go to :class:`rclpy.node.Node` (e.g. ``parameter_overrides``).
    ``supervisor`` holds the state (settings, status, stream); only the loop and the
    default, mutually exclusive callback group touch it, each holding :attr:`lock`,
    except ``~/apply`` and ``~/identify``, which read its settings, stream and last
    estimate (each replaced whole, never mutated) and must not wait for a loop turn.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)
        self.input_queue = InputQueue()
        self.lock = threading.RLock()
        """Held by the loop's turns and by every callback of the default group (the supervisor's users)."""
        self._tf = _TfFrames(self)
        self._internal_errors: set[str] = set()
        self._signal_handed_on = False

        # ---- parameters in
        self._declare_parameters()
        self.supervisor = Supervisor(
            self._parameter_values(), ros_factories.rclpy_factory(),
            name=self.get_fully_qualified_name().lstrip("/"), lookup=self._tf.lookup,
            release_lookup=self._tf.release, resolve=self._resolved, log=self.get_logger())
        self._parameters_pending = False
        self._wrench_subscribed = WrenchSource(self._parameter_value("wrench_source")).reads_wrench_topic
        """Whether the input node subscribes to wrench_topic (topics are read once, at start-up)."""
        self.add_on_set_parameters_callback(self._validate_parameters)
        if hasattr(self, "add_post_set_parameters_callback"):  # Jazzy
            self.add_post_set_parameters_callback(self._parameters_changed)

        # ---- the stream's warnings go to this node's log
        self._log_handler = _RclpyLogHandler(self.get_logger())
        self._py_logger = logging.getLogger(LOGGER_NAME)
        self._py_logger_was = (self._py_logger.level, self._py_logger.propagate)
        self._py_logger.addHandler(self._log_handler)
        self._py_logger.setLevel(logging.INFO)
        self._py_logger.propagate = False  # printed once, by rclpy

        # ---- inputs: raw subscriptions in self.input_node, taken in bulk by the loop (no executor spins them)
        topic = self._parameter_value
        topics = {JOINTS: self._resolved(topic("joint_states_topic"))}
        if self._wrench_subscribed:
            topics[WRENCH] = self._resolved(topic("wrench_topic"))
        if topic("imu_topic"):
            topics[IMU] = self._resolved(topic("imu_topic"))
        self.input_node = InputNode(self.input_queue, topics, self.get_namespace(), context=self.context)
        if not self.supervisor.builtin_description:
            self.create_subscription(String, "robot_description", self._on_robot_description, LATCHED_QOS)

        # ---- outputs
        self._estimate_pub = self.create_publisher(PayloadEstimate, "~/estimate", 10)
        self._inertia_pub = self.create_publisher(InertiaStamped, "~/inertia", 10)
        self._markers_pub = self.create_publisher(MarkerArray, "~/markers", 10)
        self._urdf_pub = self.create_publisher(String, "~/urdf_inertial", LATCHED_QOS)
        self._diagnostics_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)

        # ---- services; ~/apply calls other services, so it and their clients get
        # callback groups of their own (run by a MultiThreadedExecutor, see main()).
        self.create_service(Trigger, "~/reset", self._on_reset)
        self.create_service(SetBool, "~/pause", self._on_pause)
        self.create_service(SaveUrdf, "~/save_urdf", self._on_save_urdf)
        self._bridge = RobotBridge(self, MutuallyExclusiveCallbackGroup())
        self.create_service(ApplyEstimate, "~/apply", self._on_apply,
                            callback_group=MutuallyExclusiveCallbackGroup())
        # ~/calibrate records for seconds: a reentrant group of its own, so a second call is answered
        # (refused) at once instead of waiting behind the first
        self._calibrate_lock = threading.Lock()
        self._calibrating = False
        self.create_service(Calibrate, "~/calibrate", self._on_calibrate, callback_group=ReentrantCallbackGroup())

        # ---- ~/identify: its goals run in threads of their own (reentrant group; they wait for the motion),
        # the processing loop ticks the session, the trajectory client's answers come in a group of their own.
        # Every call into the session holds _identify_lock (none of them waits for anything).
        self._identify = IdentifySession()
        self._identify_lock = threading.Lock()
        self._identify_claimed = False  # a goal is past its preconditions (designing or running)
        self._identify_done = threading.Event()
        self._identify_apply = threading.Event()
        self._identify_outcome: Outcome | None = None
        self._identify_handle: Any = None
        self._joint_reading: Any = None  # the arm's newest JointReading (replaced whole)
        self._last_estimate_msg: Any = None  # the PayloadEstimate published last
        self._trajectory_clients: dict[str, Any] = {}
        self._trajectory_client_now: Any = None  # the client of the running identification
        self._trajectory_group = MutuallyExclusiveCallbackGroup()
        self._trajectory_token = 0  # which trajectory the client's answers are about
        self._trajectory_goal: Any = None  # its goal handle once accepted
        self._trajectory_cancel_pending = False
        self._identify_server = ActionServer(
            self, Identify, "~/identify", execute_callback=self._identify_execute,
            goal_callback=lambda goal: GoalResponse.ACCEPT, cancel_callback=self._identify_cancel,
            callback_group=ReentrantCallbackGroup())

        # ---- the processing loop (it publishes the estimate at publish_rate_hz) runs in a thread of its own
        # (spin_inputs); diagnostics on a timer
        self.create_timer(DIAGNOSTICS_PERIOD_S, self._publish_diagnostics)

    # ================================================================ parameters
    def _declare_parameters(self) -> None:
        for spec in parameter_specs():
            descriptor = ParameterDescriptor(description=spec.description, read_only=spec.read_only)
            if spec.choices:
                descriptor.additional_constraints = "one of: " + ", ".join(spec.choices)
            if isinstance(spec.default, list) and not spec.default:
                # rclpy cannot infer the type of an empty list: declare the type, value set below
                self.declare_parameter(spec.name, _PARAMETER_TYPES[spec.type], descriptor)
            else:
                self.declare_parameter(spec.name, spec.default, descriptor)
            if self._parameter_value(spec.name) is None:  # no default, or "[]" in a parameter file
                self.set_parameters([Parameter(spec.name, _PARAMETER_TYPES[spec.type], [])])

    def _parameter_value(self, name: str) -> Any:
        try:
            return self.get_parameter(name).value
        except ParameterUninitializedException:
            return None

    def _parameter_values(self) -> dict[str, Any]:
        return {spec.name: self._parameter_value(spec.name) for spec in parameter_specs()}

    def _validate_parameters(self, parameters: list[Parameter]) -> SetParametersResult:
        """Refuse a change that makes the settings invalid (the reason says which and why)."""
        with self.lock:
            values = {**self._parameter_values(), **{p.name: p.value for p in parameters}}
            reason = self.supervisor.check_parameters(values)
        wants_wrench = reason is None and WrenchSource(values["wrench_source"]).reads_wrench_topic
        if wants_wrench and not self._wrench_subscribed:
            reason = ("the node started with wrench_source joint_torques and has no wrench subscription: "
                      "restart it to use another wrench source")
        if reason is not None:
            return SetParametersResult(successful=False, reason=reason)
        if not hasattr(self, "add_post_set_parameters_callback"):  # Humble: applied by the next _process()
            self._parameters_pending = True
        return SetParametersResult(successful=True)

    def _parameters_changed(self, parameters: list[Parameter]) -> None:
        """Accepted changes: live ones at once, the others by rebuilding the stream (supervisor)."""
        with self.lock:
            self.supervisor.parameters_changed(self._parameter_values())

    # Humble (no post-set callback): an accepted change is applied before set_parameters returns, as
    # on Jazzy, not one loop turn later (a ~/apply right after it would see the old settings).
    # The parameter services call these two as well.
    def set_parameters(self, parameter_list: list[Parameter]) -> list[SetParametersResult]:
        results = super().set_parameters(parameter_list)
        self._apply_pending_parameters()
        return results

    def set_parameters_atomically(self, parameter_list: list[Parameter]) -> SetParametersResult:
        result = super().set_parameters_atomically(parameter_list)
        self._apply_pending_parameters()
        return result

    def _apply_pending_parameters(self) -> None:
        if getattr(self, "_parameters_pending", False):  # (False while __init__ declares them)
            with self.lock:
                if self._parameters_pending:
                    self._parameters_pending = False
                    self._parameters_changed([])

    # ============================================================ inputs, loop
    def _on_robot_description(self, msg: String) -> None:
        with self.lock:
            self.supervisor.on_description(msg.data)

    def process(self) -> None:
        """One turn of the loop (:class:`Loop`, every :data:`LOOP_PERIOD_S`): drain the queue into the
        supervisor (one Driver turn) and publish the estimate when it has one."""
        with self.lock:
            self._process()

    def _process(self) -> None:
        items = self.input_queue.drain()
        try:
            if self._parameters_pending:
                self._parameters_pending = False
                self._parameters_changed([])
            now = time.monotonic()
            out = self.supervisor.tick(now, items, self.input_queue.take_overflow())
            if self.supervisor.solver_interrupted and not self._signal_handed_on:
                # Ctrl-C (or ros2 launch's SIGINT) landed while OSQP solved, which took it: hand it on
                self._signal_handed_on = True
                self.get_logger().info("SIGINT arrived during a solve: shutting down")
                signal.raise_signal(signal.SIGINT)
                return
            if out is not None:
                self._last_estimate_msg = out.estimate
            self._note_joints(items)
            self._identify_tick(now)
            if out is None:
                return
            self._estimate_pub.publish(out.estimate)
            self._inertia_pub.publish(out.inertia)
            if self._markers_pub.get_subscription_count():  # rviz; on a robot PC usually nobody
                self._markers_pub.publish(out.markers)
            if out.urdf_inertial is not None:
                self._urdf_pub.publish(out.urdf_inertial)
        except Exception as exc:  # noqa: BLE001 - a bug must not take the node down
            self._internal_error("processing input", exc)

    def _publish_diagnostics(self) -> None:
        try:
            stamp = self.get_clock().now().nanoseconds * 1e-9
            with self.lock:
                msg = self.supervisor.diagnostics(time.monotonic(), stamp, len(self.input_queue))
            self._diagnostics_pub.publish(msg)
        except Exception as exc:  # noqa: BLE001
            self._internal_error("publishing diagnostics", exc)

    # ================================================================ services
    @_service
    def _on_reset(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        with self.lock:
            response.success, response.message = self.supervisor.reset()
        return response

    @_service
    def _on_pause(self, request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        with self.lock:
            response.success, response.message = self.supervisor.pause(bool(request.data))
        return response

    @_service
    def _on_save_urdf(self, request: SaveUrdf.Request, response: SaveUrdf.Response) -> SaveUrdf.Response:
        with self.lock:
            saved = self.supervisor.save_urdf(request.frame, request.path, request.force)
        response.success, response.message, response.urdf = saved.success, saved.message, saved.urdf
        return response

    @_service
    def _on_apply(self, request: ApplyEstimate.Request, response: ApplyEstimate.Response) -> ApplyEstimate.Response:
        response.success, response.message, response.request = self._apply(request.force, request.dry_run)
        return response

    def _apply(self, force: bool, dry_run: bool) -> tuple[bool, str, str]:
        """``~/apply``: (success, message, the request as YAML); logged."""
        decision = self.supervisor.apply(force=force, dry_run=dry_run)
        success, message = decision.success, decision.message
        if decision.send is not None:
            success, message = self._bridge.send(decision.send)
        # (rclpy wants one severity per logging call site)
        if success:
            self.get_logger().info(f"~/apply: {message}")
        else:
            self.get_logger().warning(f"~/apply: {message}")
        return success, message, decision.request

    # ================================================================ ~/calibrate
    @_service
    def _on_calibrate(self, request: Calibrate.Request, response: Calibrate.Response) -> Calibrate.Response:
        result = self._calibrate(float(request.duration), str(request.path), bool(request.effort_scale))
        response.success, response.message, response.path = result.success, result.message, result.path
        response.joint_names = list(result.joint_names)
        response.rms_before, response.rms_after = list(result.rms_before), list(result.rms_after)
        response.samples = int(result.samples)
        if result.success:
            self.get_logger().info(f"~/calibrate: {result.message}")
        else:
            self.get_logger().warning(f"~/calibrate: {result.message}")
        return response

    def _calibrate(self, duration: float, path: str, effort_scale: bool) -> CalibrateResult:
        """Record for ``duration`` s (the loop feeds the supervisor's recorder), fit here, in the service's
        own thread (never in the loop), write the file and, in joint-torque mode, load it."""
        with self._calibrate_lock:
            if self._calibrating:
                return CalibrateResult(False, "refused: a calibration is already recording")
            self._calibrating = True
        try:
            with self.lock:
                settings = self.supervisor.settings
                try:
                    request = calibrate_request(duration, path, settings.arm_calibration if settings else "",
                                                effort_scale)
                except ValueError as exc:
                    return CalibrateResult(False, str(exc))
                start = time.monotonic()
                why = self.supervisor.start_calibration(request, start)
            if why is not None:
                return CalibrateResult(False, why)
            assert settings is not None
            topic = self._resolved(settings.joint_states_topic)
            self.get_logger().info(f"~/calibrate: recording the joint states on {topic} for {request.duration_s:g} s: "
                                   "move the arm, without payload, through its range")
            deadline = start + request.duration_s + END_MARGIN_S
            while time.monotonic() < deadline and self.context.ok():
                time.sleep(0.05)
            with self.lock:
                recorder = self.supervisor.stop_calibration()
            if recorder is None:
                return CalibrateResult(False, "the recording was lost (internal error)")
            why = recording_refusal(recorder, topic)
            if why is not None:
                return CalibrateResult(False, why)
            try:
                kinematics = self.supervisor.calibration_kinematics()
            except ValueError as exc:
                return CalibrateResult(False, f"refused: {exc}")
            result = fit_calibration(kinematics, recorder, request, robot=settings.robot)
            if result.success:
                result = self._load_calibration(result, request.path)
            return result
        finally:
            with self.lock:
                self.supervisor.stop_calibration()  # (left early: an error, shutdown)
            with self._calibrate_lock:
                self._calibrating = False

    def _load_calibration(self, result: CalibrateResult, path: Any) -> CalibrateResult:
        """In joint-torque mode, estimate with the calibration just written (the parameter names it)."""
        settings = self.supervisor.settings
        if settings is None or settings.wrench_source is not WrenchSource.JOINT_TORQUES:
            return result
        current = str(Path(settings.arm_calibration).expanduser().absolute()) if settings.arm_calibration else ""
        if current == str(path):
            with self.lock:
                self.supervisor.reload_calibration()
            return replace(result, message=result.message + "; estimating with it")
        outcome = self.set_parameters([Parameter("arm_calibration", value=str(path))])[0]
        if not outcome.successful:
            return replace(result, message=result.message + f"; not loaded: {outcome.reason}")
        return replace(result, message=result.message + "; arm_calibration now names it and the estimation "
                                                        "restarts with it")

    # ================================================================ ~/identify
    def _note_joints(self, items: list[tuple[str, Any, float]]) -> None:
        """Keep the arm's newest joint positions (for ~/identify)."""
        stream = self.supervisor.stream
        if stream is None:
            return
        for kind, msg, received in reversed(items):
            if kind == JOINTS:
                try:
                    reading = joint_reading(msg.name, msg.position, received, stream.joint_names)
                except ValueError:  # bytes that are no JointState (counted by the stream as malformed)
                    continue
                if reading is not None:
                    self._joint_reading = reading
                    return

    def _identify_tick(self, now: float) -> None:
        """One turn of a running identification (in the loop, which owns the supervisor)."""
        if not self._identify.busy:
            return
        stream = self.supervisor.stream
        saturated = stream.health.counts_for(WRENCH).get(SATURATED, 0) if stream is not None else 0
        with self._identify_lock:
            step = self._identify.tick(now, self._joint_reading, self.supervisor.last_output, saturated,
                                       self.supervisor.paused)
        if step.reset:
            self.supervisor.reset()
            self._last_estimate_msg = None
        if step.cancel_trajectory:
            self._cancel_trajectory()
        if step.send is not None:
            self._send_trajectory(*step.send)
        handle = self._identify_handle
        if step.feedback is not None and handle is not None:
            handle.publish_feedback(self._feedback_msg(step.feedback))
        if step.apply:
            self._identify_apply.set()
        if step.outcome is not None:
            self._identify_outcome = step.outcome
            self._identify_done.set()

    def _identify_cancel(self, goal_handle: Any) -> CancelResponse:
        with self._identify_lock:
            if goal_handle is self._identify_handle:
                self._identify.cancel()
        return CancelResponse.ACCEPT

    def _identify_execute(self, goal_handle: Any) -> Any:
        try:
            return self._run_identify(goal_handle)
        except Exception as exc:  # noqa: BLE001 - a bug must not take the node down
            self._internal_error("running ~/identify", exc)
            return self._finish_identify(goal_handle, Outcome(ABORTED, f"internal error: {type(exc).__name__}: {exc}"))

    def _run_identify(self, goal_handle: Any) -> Any:
        """Preconditions and the design (slow) here, in the goal's own thread; then the loop runs the session
        while this thread applies (when asked) and waits for the outcome."""
        request = goal_handle.request
        goal = IdentifyGoal(float(request.duration), float(request.max_tcp_speed), bool(request.apply),
                            bool(request.dry_run))
        settings, stream, reading = self.supervisor.settings, self.supervisor.stream, self._joint_reading
        with self._identify_lock:
            why = refusal(settings, stream is not None, self.supervisor.status.message, self.supervisor.paused,
                          reading, time.monotonic(), self._identify_claimed, goal.dry_run)
            claimed = why is None and not goal.dry_run
            if claimed:
                self._identify_claimed = True
        if why is not None:
            return self._finish_identify(goal_handle, Outcome(ABORTED, why))
        assert settings is not None and stream is not None and reading is not None
        try:
            goal_handle.publish_feedback(Identify.Feedback(phase=DESIGNING, tracking_error=float("nan")))
            try:
                plan = plan_identification(settings, goal, self.supervisor.description or "", flange_frame(settings),
                                           stream.joint_names, reading.positions)
            except ExcitationError as exc:
                return self._finish_identify(goal_handle, Outcome(ABORTED, f"refused: {exc}"))
            if goal.dry_run:
                return self._finish_identify(goal_handle, dry_run_outcome(plan))
            if goal_handle.is_cancel_requested:
                return self._finish_identify(goal_handle, Outcome(CANCELED, "identification cancelled before "
                                                                            "the robot moved"))
            client = self._trajectory_client(settings.trajectory_action)
            if not client.wait_for_server(timeout_sec=TRAJECTORY_SERVER_WAIT_S):
                return self._finish_identify(goal_handle, Outcome(
                    ABORTED, f"refused: no FollowJointTrajectory server at {settings.trajectory_action} "
                             "(parameter trajectory_action)"))
            self._identify_done.clear()
            self._identify_apply.clear()
            self._identify_outcome = None
            self._trajectory_client_now = client
            with self._identify_lock:
                self._identify_handle = goal_handle
                self._identify.start(plan, goal, settings, time.monotonic())
            self.get_logger().info(f"~/identify: a {plan.duration:.1f} s identification motion through "
                                   f"{settings.trajectory_action}")
            while not self._identify_done.wait(0.02):
                if self._identify_apply.is_set():
                    self._identify_apply.clear()
                    success, message, _ = self._apply(force=False, dry_run=False)
                    with self._identify_lock:
                        self._identify.on_applied(success, message)
                if not self.context.ok():
                    return self._finish_identify(goal_handle, Outcome(ABORTED, "the node is shutting down"))
            outcome = self._identify_outcome
            assert outcome is not None
            return self._finish_identify(goal_handle, outcome)
        finally:
            with self._identify_lock:
                if claimed:
                    self._identify_claimed = False
                if self._identify_handle is goal_handle:
                    self._identify_handle = None
                    self._identify.cancel()  # left early (an error, shutdown): the loop stops the arm

    def _finish_identify(self, goal_handle: Any, outcome: Outcome) -> Any:
        """End the goal with ``outcome``; returns its result."""
        result = Identify.Result(converged=outcome.converged, applied=outcome.applied, message=outcome.message,
                                 motion_time=float(outcome.motion_time), motion_summary=outcome.summary_yaml,
                                 planned_duration=float(outcome.planned_duration))
        if outcome.estimate is not None:
            result.mass_com_converged = bool(outcome.estimate.mass_com_converged)
            if self._last_estimate_msg is not None:
                result.estimate = self._last_estimate_msg
        if outcome.status == SUCCEEDED:
            goal_handle.succeed()
            self.get_logger().info(f"~/identify: {outcome.message}")
        elif outcome.status == CANCELED and goal_handle.is_cancel_requested:
            goal_handle.canceled()
            self.get_logger().info(f"~/identify: {outcome.message}")
        else:
            goal_handle.abort()
            self.get_logger().warning(f"~/identify: {outcome.message}")
        return result

    def _feedback_msg(self, feedback: Feedback) -> Any:
        msg = Identify.Feedback(phase=feedback.phase, progress=float(feedback.progress),
                                elapsed=float(feedback.elapsed), tracking_error=float(feedback.tracking_error))
        out = feedback.estimate
        if out is not None:
            params = out.estimate.params
            msg.has_estimate = True
            msg.mass = params.mass
            msg.com.x, msg.com.y, msg.com.z = (float(v) for v in params.com)
            stream = self.supervisor.stream
            msg.com_frame = stream.config.sensor_frame if stream is not None else ""
            msg.converged, msg.mass_com_converged = bool(out.converged), bool(out.mass_com_converged)
            msg.status = "converged" if out.converged else out.reason
        return msg

    def _trajectory_client(self, name: str) -> Any:
        """The FollowJointTrajectory client of action ``name`` (made once per name)."""
        client = self._trajectory_clients.get(name)
        if client is None:
            from control_msgs.action import FollowJointTrajectory

            client = ActionClient(self, FollowJointTrajectory, name, callback_group=self._trajectory_group)
            self._trajectory_clients[name] = client
        return client

    def _send_trajectory(self, names: tuple[str, ...], t: Any, q: Any, dq: Any, ddq: Any) -> None:
        """Send the points as a FollowJointTrajectory goal that starts at once; the answers go to the session."""
        from control_msgs.action import FollowJointTrajectory
        from trajectory_msgs.msg import JointTrajectoryPoint

        goal = FollowJointTrajectory.Goal()
        goal.trajectory.joint_names = list(names)
        for k in range(len(t)):
            point = JointTrajectoryPoint(positions=[float(v) for v in q[k]], velocities=[float(v) for v in dq[k]],
                                         accelerations=[float(v) for v in ddq[k]])
            sec, nanosec = divmod(int(round(float(t[k]) * 1e9)), 1_000_000_000)
            point.time_from_start.sec, point.time_from_start.nanosec = sec, nanosec
            goal.trajectory.points.append(point)
        self._trajectory_token += 1
        token = self._trajectory_token
        self._trajectory_goal, self._trajectory_cancel_pending = None, False
        future = self._trajectory_client_now.send_goal_async(
            goal, feedback_callback=functools.partial(self._on_trajectory_feedback, token))
        future.add_done_callback(functools.partial(self._on_trajectory_response, token))

    def _cancel_trajectory(self) -> None:
        goal = self._trajectory_goal
        if goal is not None:
            goal.cancel_goal_async()
        else:  # not accepted yet: cancelled as soon as it is
            self._trajectory_cancel_pending = True

    def _on_trajectory_response(self, token: int, future: Any) -> None:
        if token != self._trajectory_token:
            return
        try:
            handle = future.result()
            accepted, why = bool(handle.accepted), ""
        except Exception as exc:  # noqa: BLE001
            handle, accepted, why = None, False, f"{type(exc).__name__}: {exc}"
        with self._identify_lock:
            self._identify.on_trajectory_response(accepted, time.monotonic(), why)
        if not accepted:
            return
        self._trajectory_goal = handle
        if self._trajectory_cancel_pending:
            handle.cancel_goal_async()
        handle.get_result_async().add_done_callback(functools.partial(self._on_trajectory_result, token))

    def _on_trajectory_feedback(self, token: int, feedback: Any) -> None:
        if token == self._trajectory_token:
            with self._identify_lock:
                self._identify.on_trajectory_feedback(feedback.feedback.error.positions, time.monotonic())

    def _on_trajectory_result(self, token: int, future: Any) -> None:
        if token != self._trajectory_token:
            return
        try:
            response = future.result()
            status, result = int(response.status), response.result
            succeeded = status == _STATUS_SUCCEEDED and result.error_code == 0
            message = result.error_string or (f"error code {result.error_code}" if result.error_code
                                              else _GOAL_STATUS.get(status, f"status {status}"))
        except Exception as exc:  # noqa: BLE001
            succeeded, message = False, f"{type(exc).__name__}: {exc}"
        with self._identify_lock:
            self._identify.on_trajectory_result(succeeded, message)

    # ================================================================= helpers
    def _internal_error(self, what: str, exc: Exception) -> None:
        if not self.context.ok():
            return  # shutting down: publishers and services are going away
        key = f"{what}: {type(exc).__name__}"
        if key not in self._internal_errors:  # once per kind, with the traceback
            self._internal_errors.add(key)
            self.get_logger().error(f"internal error while {what} (the node keeps running): "
                                    f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")

    def _resolved(self, topic: str) -> str:
        try:
            return self.resolve_topic_name(topic)
        except Exception:  # noqa: BLE001
            return topic

    def destroy_node(self) -> None:
        self._py_logger.removeHandler(self._log_handler)
        self._py_logger.setLevel(self._py_logger_was[0])
        self._py_logger.propagate = self._py_logger_was[1]
        self.input_node.destroy_node()
        super().destroy_node()


class Loop:
    """The node's processing loop in a thread of its own: every :data:`LOOP_PERIOD_S` (monotonic clock) it
    takes the inputs that arrived (:class:`InputTaker`) and runs :meth:`EstimatorNode.process`.

    Out of the executor, a turn costs no wait-set rebuild and no task: the
    executor wakes only for services, the action, parameters and the 1 Hz
    diagnostics. A turn that ends after the next was due skips the missed ones
    (as an rclpy timer does). ``taker`` None: the inputs arrive through callbacks.
    """

    def __init__(self, node: EstimatorNode, taker: InputTaker | None) -> None:
        self._node = node
        self._taker = taker
        self._stop = threading.Event()

    def run(self) -> None:
        node, taker = self._node, self._taker
        due = time.monotonic()
        while node.context.ok():
            due += loop_period(node.supervisor.settings)
            wait = due - time.monotonic()
            if wait < -LOOP_PERIOD_S:
                due = time.monotonic()  # fell behind (a rebuild, a loaded PC): no catching up
            elif wait > 0 and self._stop.wait(wait):
                return
            if self._stop.is_set():
                return
            if taker is not None:
                try:
                    taker.take()
                except Exception as exc:  # noqa: BLE001 - shutting down, or a bug: the node keeps running
                    node._internal_error("taking input", exc)
            node.process()

    def shutdown(self) -> None:
        self._stop.set()


def loop_period(settings: Any) -> float:
    """The loop's period, s: :data:`LOOP_PERIOD_S`, shorter to publish at ``publish_rate_hz``, never shorter
    than the Driver's turn."""
    rate = getattr(settings, "publish_rate_hz", 0.0) or 0.0
    return max(PROCESS_PERIOD_S, min(LOOP_PERIOD_S, 1.0 / rate if rate > 0 else LOOP_PERIOD_S))


class _Stop:
    """Stops several loops and executors at once (what :func:`spin_inputs` returns)."""

    def __init__(self, *parts: Any) -> None:
        self._parts = parts

    def shutdown(self) -> None:
        for part in self._parts:
            part.shutdown()


def spin_inputs(node: EstimatorNode) -> tuple[Any, threading.Thread]:
    """Start ``node``'s processing loop (:class:`Loop`), which takes its inputs, in a thread of its own;
    returns what stops it (``.shutdown()``) and the thread. Where rclpy cannot take from a
    subscription directly, an executor of its own spins the input node in another thread
    (its callbacks enqueue)."""
    taker = InputTaker(node.input_node, node.input_queue)
    parts: list[Any] = []
    if not taker.available():
        executor = SingleThreadedExecutor(context=node.context)
        executor.add_node(node.input_node)

        threading.Thread(target=_spin_until_shutdown, args=(executor, node.context),
                         name="payload_estimator_input_callbacks", daemon=True).start()
        parts.append(executor)
    loop = Loop(node, taker if taker.available() else None)
    thread = threading.Thread(target=loop.run, name="payload_estimator_loop", daemon=True)
    thread.start()
    return _Stop(loop, *parts), thread


def _spin_until_shutdown(executor: Any, context: Any) -> None:
    """Spin ``executor`` until Ctrl-C or the context's shutdown, which end it cleanly. A shutdown (SIGTERM)
    between the executor's check and its wait makes rcl report an invalid context instead of
    ExternalShutdownException: a clean shutdown all the same; anything else while the context is valid
    is raised."""
    try:
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception:
        if rclpy.ok(context=context):
            raise


def main(args: list[str] | None = None) -> None:
    """``ros2 run payload_estimator estimator_node``."""
    rclpy.init(args=args)
    node = EstimatorNode()
    inputs, thread = spin_inputs(node)
    # ~/apply waits for another service's answer, ~/identify for the motion: other threads serve the answers.
    executor = MultiThreadedExecutor(num_threads=EXECUTOR_THREADS)
    executor.add_node(node)
    try:
        _spin_until_shutdown(executor, node.context)
    finally:
        try:
            inputs.shutdown()
            executor.shutdown()
            thread.join(timeout=2.0)
            node.destroy_node()
        except KeyboardInterrupt:  # a second Ctrl-C while cleaning up
            pass
        rclpy.try_shutdown()
        # Exit at once: nothing is left to clean up, and the interpreter's last garbage collection
        # of every module's objects (numpy, scipy, pinocchio, trimesh ...) takes most of a second on
        # a loaded robot PC; frozen objects are skipped (SIGINT and SIGTERM end the node within 0.1 s).
        gc.freeze()


if __name__ == "__main__":
    main()
