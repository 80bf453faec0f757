"""The payload estimator node: joint states, a wrist wrench (and an IMU) in, the payload out.

Parameters in (one per :class:`~payload_estimator.settings.Settings` field,
usually from ``config/<robot>.yaml``), callbacks enqueue, a timer drains the
queue into the :class:`~payload_estimator.pipeline.stream.EstimationStream`,
publishers out::

    joint_states_topic  (sensor_msgs/JointState)      --+
    wrench_topic        (geometry_msgs/WrenchStamped) --+--> InputQueue --(100 Hz)--> EstimationStream
    imu_topic           (sensor_msgs/Imu, optional)   --+
    robot_description   (std_msgs/String, latched)    ----> build_stream(settings, urdf, frames from tf2)

    ~/estimate       payload_estimator/PayloadEstimate   \\
    ~/inertia        geometry_msgs/InertiaStamped          } publish_rate_hz
    ~/markers        visualization_msgs/MarkerArray       /
    ~/urdf_inertial  std_msgs/String (latched; when the estimate changes noticeably or converges)
    /diagnostics     diagnostic_msgs/DiagnosticArray (1 Hz)

    ~/reset (std_srvs/Trigger)  ~/pause (std_srvs/SetBool)
    ~/save_urdf (payload_estimator/SaveUrdf)  ~/apply (payload_estimator/ApplyEstimate)

Bad input never stops the node: the stream drops it, counts it and logs it
(rate-limited, through this node's logger), ``/diagnostics`` reports it, and
the last good estimate stays.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import InertiaStamped, WrenchStamped
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
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

from payload_estimator.io import ros_messages
from payload_estimator.msg import PayloadEstimate
from payload_estimator.outputs.markers import estimate_markers
from payload_estimator.node.status import (
    CONFIGURATION_ERROR,
    RUNNING,
    WAITING_DESCRIPTION,
    WAITING_FRAMES,
    NodeStatus,
    node_status_fields,
)
from payload_estimator.node.publish_policy import RepublishPolicy
from payload_estimator.outputs.urdf import urdf_inertial
from payload_estimator.node.frames import extra_frame, flange_frame, frames_to_look_up, rigid_pose
from payload_estimator.pipeline.health import BUFFER_OVERFLOW, LOGGER_NAME
from payload_estimator.node.input_queue import InputQueue
from payload_estimator.node.parameters import (
    LIVE,
    NO_CHANGE,
    REBUILD,
    change_effect,
    changed_fields,
    parameter_specs,
    settings_with,
)
from payload_estimator.pipeline.stream import IMU, JOINTS, WRENCH, EstimationStream, StreamEstimate
from payload_estimator.pipeline.build import build_stream, builtin_description
from payload_estimator.settings import NODE_NAME, Settings
from payload_estimator.srv import ApplyEstimate, SaveUrdf

__all__ = ["EstimatorNode", "InputNode", "spin_inputs", "main", "INPUT_QOS", "LATCHED_QOS"]

PROCESS_PERIOD_S = 0.01
"""The queue is drained into the stream at 100 Hz: 10 ms of 1 kHz input per turn."""
DIAGNOSTICS_PERIOD_S = 1.0
TF_WAIT_S = 3.0
"""How long to wait for frames the URDF lacks to appear in tf2 before building without them."""
TF_RETRY_S = 5.0
"""While a needed frame exists nowhere, how often to look again."""

# Inputs: best effort, keep last, depth 100. A best-effort subscription matches
# both best-effort publishers (Franka's convenience topics, most sensor
# drivers) and reliable ones (joint_state_broadcaster, xarm_ros2); a reliable
# subscription would not match the former at all. Depth 100 is 0.1 s of 1 kHz
# input: enough for the middleware to hold messages between two executor turns.
INPUT_QOS = QoSProfile(
    history=HistoryPolicy.KEEP_LAST, depth=100,
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


def _service(callback: Any) -> Any:
    """A service callback that answers "success: false" with the error instead of raising
    (an exception in a callback would stop the executor, and the node with it)."""
    import functools

    @functools.wraps(callback)
    def wrapper(self: "EstimatorNode", request: Any, response: Any) -> Any:
        try:
            return callback(self, request, response)
        except Exception as exc:  # noqa: BLE001
            self._internal_error(f"serving {callback.__name__}", exc)
            response.success = False
            response.message = f"internal error: {type(exc).__name__}: {exc}"
            return response

    return wrapper


class InputNode(Node):
    """The input subscriptions, whose callbacks only enqueue, in a node of their own.

    rclpy takes one message per ready subscription each time its executor
    waits, and builds the wait set from every entity of its nodes: with the
    estimator's thirty-odd entities (parameter services, timers, services,
    publishers) that caps each input near 600 messages/s on a desktop CPU. This
    node holds only the two or three input subscriptions and is spun by an
    executor of its own in a thread (:func:`spin_inputs`), which keeps up with
    1 kHz joint states plus 1 kHz wrench.

    It takes no command-line arguments (a launch file's ``__node:=`` would
    rename it too): the estimator passes the resolved topic names and its namespace.
    """

    def __init__(self, queue: InputQueue, topics: dict[str, str], namespace: str, context: Any = None) -> None:
        super().__init__(f"{NODE_NAME}_inputs", namespace=namespace, context=context,
                         use_global_arguments=False, start_parameter_services=False)
        self._queue = queue
        self.create_subscription(JointState, topics[JOINTS], self._on_joint_state, INPUT_QOS)
        self.create_subscription(WrenchStamped, topics[WRENCH], self._on_wrench, INPUT_QOS)
        if topics.get(IMU):
            self.create_subscription(Imu, topics[IMU], self._on_imu, INPUT_QOS)

    def _on_joint_state(self, msg: JointState) -> None:
        self._queue.put(JOINTS, msg, time.monotonic())

    def _on_wrench(self, msg: WrenchStamped) -> None:
        self._queue.put(WRENCH, msg, time.monotonic())

    def _on_imu(self, msg: Imu) -> None:
        self._queue.put(IMU, msg, time.monotonic())


class EstimatorNode(Node):
    """Estimates the payload of a robot arm online (see the module docstring for the interface).

    Keyword arguments go to :class:`rclpy.node.Node` (e.g. ``parameter_overrides``).
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)
        self._factory = ros_messages.rclpy_factory()
        self._diagnostic_name = self.get_fully_qualified_name().lstrip("/")

        # ---- state (all of it touched only from the default, mutually exclusive callback group,
        # except _last_output and settings, which ~/apply reads: replaced whole, never mutated)
        self.settings: Settings | None = None
        self.status = NodeStatus(WAITING_DESCRIPTION)
        self.stream: EstimationStream | None = None
        self._queue = InputQueue()
        self._description: str | None = None
        self._rebuild_requested = False
        self._paused = False
        self._last_output: StreamEstimate | None = None
        self._urdf_policy = RepublishPolicy()
        self._previous_counts: dict[str, int] = {}
        self._overflow_since_diagnostics: dict[str, int] = {}
        self._dropped_while_not_running = 0
        self._imu_frame_seen: str | None = None
        self._frames_wait_start: float | None = None
        self._next_frames_retry = float("inf")
        self._tf_buffer: Any = None
        self._tf_listener: Any = None
        self._frames_from_tf: list[str] = []
        self._internal_errors: set[str] = set()

        # ---- parameters in
        self._declare_parameters()
        try:
            self.settings = settings_with(Settings(), self._parameter_values())
        except ValueError as exc:
            self._configuration_error(f"invalid parameters: {exc}")
        self._parameters_pending = False
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

        # ---- inputs: the callbacks only enqueue (in self.input_node, spun by spin_inputs())
        topic = self._parameter_value
        topics = {JOINTS: self._resolved(topic("joint_states_topic")), WRENCH: self._resolved(topic("wrench_topic"))}
        if topic("imu_topic"):
            topics[IMU] = self._resolved(topic("imu_topic"))
        self.input_node = InputNode(self._queue, topics, self.get_namespace(), context=self.context)
        self._builtin_description = bool(topic("use_builtin_description"))
        if self._builtin_description:
            self._rebuild_requested = True  # the model is the package's own (made in _build)
        else:
            self.create_subscription(String, "robot_description", self._on_robot_description, LATCHED_QOS)
        if not self._builtin_description and self.settings is not None:
            self.status = NodeStatus(WAITING_DESCRIPTION, f"on {self._resolved('robot_description')}; "
                                                          "inputs are dropped until it arrives")
            self.get_logger().info(f"waiting for the robot model on {self._resolved('robot_description')} "
                                   "(std_msgs/String, transient local); inputs are dropped until it arrives")

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
        from payload_estimator.ros.robot_bridges import RobotBridge

        self._bridge = RobotBridge(self, MutuallyExclusiveCallbackGroup())
        self.create_service(ApplyEstimate, "~/apply", self._on_apply,
                            callback_group=MutuallyExclusiveCallbackGroup())

        # ---- timers
        self.create_timer(PROCESS_PERIOD_S, self._process)
        rate = float(topic("publish_rate_hz"))
        self.create_timer(1.0 / rate if rate > 0 else 0.1, self._publish)
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
        try:
            settings_with(Settings(), {**self._parameter_values(), **{p.name: p.value for p in parameters}})
        except ValueError as exc:
            return SetParametersResult(successful=False, reason=str(exc))
        if not hasattr(self, "add_post_set_parameters_callback"):  # Humble: applied by the next _process()
            self._parameters_pending = True
        return SetParametersResult(successful=True)

    def _parameters_changed(self, parameters: list[Parameter]) -> None:
        """Apply accepted changes: live ones at once, the others by rebuilding the stream."""
        try:
            new = settings_with(Settings(), self._parameter_values())
        except ValueError:
            return  # declaration in progress (validated as a whole afterwards)
        old = self.settings
        self.settings = new
        if old is None:
            self._rebuild_requested = True
            return
        effect = change_effect(old, new)
        if effect == NO_CHANGE:
            return
        names = ", ".join(changed_fields(old, new))
        if effect == LIVE:
            self.get_logger().info(f"parameters changed: {names}")
        elif effect == REBUILD:
            self.get_logger().info(f"parameters changed: {names}; the estimation restarts")
            self._rebuild_requested = True

    # ================================================================== inputs
    def _on_robot_description(self, msg: String) -> None:
        if msg.data == self._description:
            return
        first = self._description is None
        self._description = msg.data
        self._rebuild_requested = True
        self.get_logger().info("robot_description received" if first else "robot_description changed: "
                               "the estimation restarts")

    # ================================================================ the stream
    def _process(self) -> None:
        """Drain the queue into the stream, in arrival order, and run the pipeline once."""
        items = self._queue.drain()
        overflow = self._queue.take_overflow()
        for kind, n in overflow.items():
            self._overflow_since_diagnostics[kind] = self._overflow_since_diagnostics.get(kind, 0) + n
        try:
            if self._parameters_pending:
                self._parameters_pending = False
                self._parameters_changed([])
            if self._rebuild_requested or self._build_due():
                self._build(items)
            stream = self.stream
            if stream is None:
                self._dropped_while_not_running += len(items)
                return
            ros_messages.feed_many(stream, items)
            for kind, n in overflow.items():
                stream.health.report(BUFFER_OVERFLOW, f"{n} messages dropped: the input queue was full "
                                     "(processing fell behind)", kind, n)
            stream.process()
        except Exception as exc:  # noqa: BLE001 - a bug must not take the node down
            self._internal_error("processing input", exc)

    def _build_due(self) -> bool:
        """Whether to try building again without a new reason: while frames are awaited in tf2."""
        if self.stream is not None:
            return False
        if self.status.state == WAITING_FRAMES:
            return True
        return self.status.state == CONFIGURATION_ERROR and time.monotonic() >= self._next_frames_retry

    def _build(self, items: list[tuple[str, Any, float]]) -> None:
        """(Re)build the stream from the settings, the robot description and tf2 (missing frames)."""
        self._rebuild_requested = False
        settings, urdf = self.settings, self._description
        for kind, msg, _ in items:  # the IMU frame may come from the messages
            if kind == IMU:
                self._imu_frame_seen = str(msg.header.frame_id).lstrip("/") or self._imu_frame_seen
        if settings is None:
            return  # configuration error already reported
        if self._builtin_description:
            try:
                urdf = self._description = builtin_description(settings)
            except (ValueError, OSError) as exc:
                self._configuration_error(f"no built-in robot description: {exc}")
                return
        if urdf is None:
            self._set_not_running(NodeStatus(WAITING_DESCRIPTION, f"on {self._resolved('robot_description')}"))
            return
        imu_frame = settings.imu_frame or self._imu_frame_seen
        if settings.motion_source == "imu" and not imu_frame:
            self._set_not_running(NodeStatus(WAITING_FRAMES, "the IMU frame (no IMU message yet)"))
            return
        try:
            missing = frames_to_look_up(settings, urdf, imu_frame)
        except ValueError as exc:
            self._configuration_error(f"robot_description: {exc}")
            return
        flange = flange_frame(settings)
        extra, not_found = self._frames_from_tf2(missing, flange)
        now = time.monotonic()
        if not_found:
            if self._frames_wait_start is None:
                self._frames_wait_start = now
                self.get_logger().info(f"frames not in robot_description: {', '.join(missing)}; "
                                       f"looking them up in tf2 relative to {flange}")
            if now - self._frames_wait_start < TF_WAIT_S:
                self._set_not_running(NodeStatus(WAITING_FRAMES, ", ".join(not_found)))
                return
        try:
            stream = build_stream(settings, urdf, extra_frames=extra, imu_frame=imu_frame)
        except Exception as exc:  # noqa: BLE001 - any configuration problem is reported, not raised
            where = f" (not in robot_description nor in tf2: {', '.join(not_found)})" if not_found else ""
            self._configuration_error(f"cannot build the estimator: {exc}{where}")
            self._next_frames_retry = now + TF_RETRY_S if not_found else float("inf")
            return
        if settings.sensor_frame in not_found:
            self.get_logger().warning(
                f"sensor frame {settings.sensor_frame!r} is neither in robot_description nor in tf2: attached to "
                f"{settings.sensor_parent_frame or flange!r} at sensor_xyz={settings.sensor_xyz}, "
                f"sensor_rpy={settings.sensor_rpy}")
        stream.paused = self._paused
        self.stream = stream
        self._frames_from_tf = [f[0] for f in extra]
        self._frames_wait_start = None
        self._urdf_policy.reset()
        self._previous_counts = {}
        self._release_tf()
        self.status = NodeStatus(RUNNING)
        self.get_logger().info(
            f"estimating with {settings.estimator} in {settings.sensor_frame} ({settings.wrench_source} wrench from "
            f"{self._resolved(settings.wrench_topic)}, joints {', '.join(stream.joint_names)})"
            + (f"; frames from tf2: {', '.join(self._frames_from_tf)}" if self._frames_from_tf else ""))

    def _frames_from_tf2(self, frames: list[str], parent: str) -> tuple[list[tuple], list[str]]:
        """Poses of ``frames`` in ``parent`` from tf2 (each looked up once): (extra frames, not found)."""
        if not frames:
            return [], []
        if self._tf_buffer is None:
            import tf2_ros

            self._tf_buffer = tf2_ros.Buffer()
            self._tf_listener = tf2_ros.TransformListener(self._tf_buffer, self)
        import tf2_ros

        found, not_found = [], []
        for frame in frames:
            try:
                tf = self._tf_buffer.lookup_transform(parent, frame, Time())
            except tf2_ros.TransformException:
                not_found.append(frame)
                continue
            t, r = tf.transform.translation, tf.transform.rotation
            found.append(extra_frame(frame, parent, (t.x, t.y, t.z), (r.x, r.y, r.z, r.w)))
        return found, not_found

    def _release_tf(self) -> None:
        """Stop listening to /tf once the frames are known (it can be a busy topic)."""
        if self._tf_listener is not None:
            for sub in (self._tf_listener.tf_sub, self._tf_listener.tf_static_sub):
                self.destroy_subscription(sub)
        self._tf_listener = None
        self._tf_buffer = None

    def _set_not_running(self, status: NodeStatus) -> None:
        if self.stream is not None:
            self.stream = None
        if status.state != self.status.state:
            self.get_logger().info(f"{status.message}; inputs are dropped meanwhile")
        self.status = status

    def _configuration_error(self, message: str) -> None:
        if self.status.state != CONFIGURATION_ERROR or self.status.detail != message:
            self.get_logger().error(f"{message} -- inputs are dropped until the configuration is fixed "
                                    "(the last good estimate is kept)")
        self.stream = None
        self.status = NodeStatus(CONFIGURATION_ERROR, message)

    def _internal_error(self, what: str, exc: Exception) -> None:
        if not self.context.ok():
            return  # shutting down: publishers and services are going away
        key = f"{what}: {type(exc).__name__}"
        if key not in self._internal_errors:  # once per kind, with the traceback
            self._internal_errors.add(key)
            import traceback

            self.get_logger().error(f"internal error while {what} (the node keeps running): "
                                    f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")

    def _resolved(self, topic: str) -> str:
        try:
            return self.resolve_topic_name(topic)
        except Exception:  # noqa: BLE001
            return topic

    # ================================================================= outputs
    def _publish(self) -> None:
        """The current estimate on ~/estimate, ~/inertia, ~/markers (and ~/urdf_inertial when it changed)."""
        stream = self.stream
        if stream is None:
            return
        try:
            out = stream.update_estimate()
            if out is None:
                return
            self._last_output = out
            sensor, flange = stream.config.sensor_frame, stream.config.flange_frame or stream.config.sensor_frame
            est = out.estimate
            self._estimate_pub.publish(ros_messages.payload_estimate_msg(self._factory, out, sensor, flange))
            self._inertia_pub.publish(ros_messages.inertia_stamped_msg(self._factory, est.params, sensor, out.t))
            markers = estimate_markers(est.params, getattr(stream.estimator, "points", None),
                                       getattr(stream.estimator, "masses", None), est.physically_consistent)
            self._markers_pub.publish(ros_messages.marker_array_msg(self._factory, markers, sensor, out.t))
            if self._urdf_policy.should_publish(out.params_in_flange, out.converged):
                text = urdf_inertial(out.params_in_flange, frame=flange)
                self._urdf_pub.publish(ros_messages.string_msg(self._factory, text))
        except Exception as exc:  # noqa: BLE001
            self._internal_error("publishing the estimate", exc)

    def _publish_diagnostics(self) -> None:
        try:
            stamp = self.get_clock().now().nanoseconds * 1e-9
            overflow, self._overflow_since_diagnostics = self._overflow_since_diagnostics, {}
            status = self.status
            status.values = {
                "robot": self.settings.robot if self.settings else "?",
                "robot_description": "built-in" if self._builtin_description
                else self._resolved("robot_description"),
                "frames from tf2": ", ".join(self._frames_from_tf) or "none",
                "inputs dropped while not running": self._dropped_while_not_running,
                "queue length": len(self._queue),
            }
            node_status = self._factory("diagnostic_msgs/msg/DiagnosticStatus",
                                        node_status_fields(status, self._diagnostic_name, overflow))
            stream = self.stream
            if stream is None:
                msg = self._factory("diagnostic_msgs/msg/DiagnosticArray",
                                    {"header": {"stamp": ros_messages.sec_to_stamp_fields(stamp)}, "status": []})
            else:
                diagnostics = stream.diagnostics(time.monotonic())
                diagnostics["recent_counts"] = ros_messages.recent_counts(self._previous_counts,
                                                                          diagnostics["counts"])
                self._previous_counts = dict(diagnostics["counts"])
                msg = ros_messages.diagnostic_array_msg(self._factory, diagnostics, self._diagnostic_name, stamp)
            msg.status.insert(0, node_status)
            self._diagnostics_pub.publish(msg)
        except Exception as exc:  # noqa: BLE001
            self._internal_error("publishing diagnostics", exc)

    # ================================================================ services
    @_service
    def _on_reset(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        stream = self.stream
        if stream is None:
            response.success = False
            response.message = f"nothing to reset: {self.status.message}"
            return response
        stream.reset()
        self._last_output = None
        self._urdf_policy.reset()
        response.success = True
        response.message = "estimate reset: estimating from new data"
        self.get_logger().info(response.message)
        return response

    @_service
    def _on_pause(self, request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        self._paused = bool(request.data)
        if self.stream is not None:
            self.stream.paused = self._paused
        response.success = True
        response.message = ("paused: the estimate is frozen (inputs are still checked)" if self._paused
                            else "resumed: new data enter the estimate")
        self.get_logger().info(response.message)
        return response

    @_service
    def _on_save_urdf(self, request: SaveUrdf.Request, response: SaveUrdf.Response) -> SaveUrdf.Response:
        out, stream = self._last_output, self.stream
        if out is None or stream is None:
            response.success = False
            response.message = "no estimate yet" if stream is not None else f"no estimate: {self.status.message}"
            return response
        frame = request.frame or "flange"
        sensor = stream.config.sensor_frame
        try:
            if frame == "flange":
                frame, params = stream.config.flange_frame or sensor, out.params_in_flange
            elif frame in ("sensor", sensor):
                frame, params = sensor, out.estimate.params
            else:
                R, p = rigid_pose(stream.kinematics, sensor, frame)
                params = out.estimate.params.transformed(R, p)
        except ValueError as exc:
            response.success = False
            response.message = str(exc)
            return response
        response.urdf = urdf_inertial(params, frame=frame)
        response.success = True
        response.message = f"inertial of the payload in {frame}"
        if request.path:
            path = Path(request.path).expanduser()
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(response.urdf + "\n")
            except OSError as exc:
                response.success = False
                response.message = f"cannot write {path}: {exc}"
                return response
            response.message += f", written to {path}"
        if not out.converged:
            response.message += f" (not converged: {out.reason})"
        return response

    @_service
    def _on_apply(self, request: ApplyEstimate.Request, response: ApplyEstimate.Response) -> ApplyEstimate.Response:
        settings = self.settings
        if settings is None:
            response.success = False
            response.message = f"refused: {self.status.message}"
            return response
        response.success, response.message, response.request = self._bridge.apply(
            settings, self._last_output, force=request.force, dry_run=request.dry_run)
        # (rclpy wants one severity per logging call site)
        if response.success:
            self.get_logger().info(f"~/apply: {response.message}")
        else:
            self.get_logger().warning(f"~/apply: {response.message}")
        return response

    def destroy_node(self) -> None:
        self._py_logger.removeHandler(self._log_handler)
        self._py_logger.setLevel(self._py_logger_was[0])
        self._py_logger.propagate = self._py_logger_was[1]
        self.input_node.destroy_node()
        super().destroy_node()


def spin_inputs(node: EstimatorNode) -> tuple[SingleThreadedExecutor, threading.Thread]:
    """Spin ``node.input_node`` in a thread of its own (see :class:`InputNode`); returns the executor
    (shut it down to stop) and the thread."""
    executor = SingleThreadedExecutor(context=node.context)
    executor.add_node(node.input_node)

    def spin() -> None:
        try:
            executor.spin()
        except (KeyboardInterrupt, ExternalShutdownException):
            pass

    thread = threading.Thread(target=spin, name="payload_estimator_inputs", daemon=True)
    thread.start()
    return executor, thread


def main(args: list[str] | None = None) -> None:
    """``ros2 run payload_estimator estimator_node``."""
    rclpy.init(args=args)
    node = EstimatorNode()
    inputs, thread = spin_inputs(node)
    # ~/apply waits for another service's answer; a second thread serves that answer.
    executor = MultiThreadedExecutor(num_threads=2)
    executor.add_node(node)
    try:
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        try:
            inputs.shutdown()
            executor.shutdown()
            thread.join(timeout=2.0)
            node.destroy_node()
        except KeyboardInterrupt:  # a second Ctrl-C while cleaning up
            pass
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
