r"""The payload estimator node: joint states, a wrist wrench or the joints' efforts (and an IMU) in, the payload out.

Parameters in (one per :class:`~payload_estimator.settings.Settings` field,
usually from ``config/<robot>.yaml``); a processing loop in a thread of its own
(:class:`~payload_estimator.supervision.processing_loop.ProcessingLoop`, every
100 ms, faster to publish faster than 10 Hz or while ``~/identify`` moves the arm) takes the inputs that arrived in
bulk, serialised (:class:`~payload_estimator.ros.inputs.InputTaker`), queues them,
drains the queue into the :class:`~payload_estimator.supervision.supervisor.Supervisor`
and publishes what it returns::

    joint_states_topic  (sensor_msgs/JointState, raw)      --+
    wrench_topic        (geometry_msgs/WrenchStamped, raw) --+--> InputQueue --(loop)---> Supervisor.tick
      (not with wrench_source joint_torques: the efforts of the joint states)
    imu_topic           (sensor_msgs/Imu, optional)        --+                             (Driver: stream)
    cloud_topic         (sensor_msgs/PointCloud2, optional) -+  (the payload's shape: pipeline/payload_cloud.py)
    robot_description   (std_msgs/String, latched)         ----> Supervisor.on_description (frames from tf2)

    ~/estimate       payload_estimator/PayloadEstimate   \
    ~/inertia        geometry_msgs/InertiaStamped          } publish_rate_hz (stale: the last good one again)
    ~/markers        visualization_msgs/MarkerArray       /  (markers only while someone subscribes)
    ~/point_masses   sensor_msgs/PointCloud2 (PMD's point masses: mass, rgb; only while someone subscribes)
    ~/urdf_inertial  std_msgs/String (latched; when the estimate changes noticeably or converges)
    /diagnostics     diagnostic_msgs/DiagnosticArray (1 Hz)

    ~/reset (std_srvs/Trigger)  ~/pause (std_srvs/SetBool)
    ~/save_urdf (payload_estimator/SaveUrdf)  ~/apply (payload_estimator/ApplyEstimate)
    ~/calibrate (payload_estimator/Calibrate): record the unloaded arm, write arm_calibration, load it
    ~/identify (payload_estimator/action/Identify) --> trajectory_action (control_msgs/action/FollowJointTrajectory)

The estimate's topics are the rows of
:data:`~payload_estimator.supervision.node_outputs.OUTPUT_TOPICS` (topic, type,
QoS, builder). Everything this node decides (status, rebuilds, what to publish,
what the services answer) is decided ROS-free in :mod:`payload_estimator.supervision`;
this module only declares, subscribes, publishes, serves and forwards, with
``~/calibrate`` in :mod:`payload_estimator.ros.calibrate_service` and
``~/identify`` in :mod:`payload_estimator.ros.identify_action`. Bad input never
stops the node: the stream drops it, counts it and logs it (rate-limited),
``/diagnostics`` reports it, and the last good estimate stays: while an input is
silent, the node waits or cannot build its stream, ``~/estimate`` goes on at
``publish_rate_hz`` with the last good estimate and ``stale: true`` (its ``age``
growing). SIGINT and SIGTERM end the node cleanly (status 0).
"""

from __future__ import annotations

import gc
import signal
import threading
import time
from dataclasses import replace
from typing import Any

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from rcl_interfaces.msg import SetParametersResult
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from std_msgs.msg import String
from std_srvs.srv import SetBool, Trigger

from payload_estimator.io.ros_factories import message_class, rclpy_factory
from payload_estimator.pipeline.stream import WRENCH
from payload_estimator.ros.calibrate_service import CalibrateService
from payload_estimator.ros.identify_action import IdentifyAction
from payload_estimator.ros.inputs import InputNode, InputTaker
from payload_estimator.ros.node_parameters import declare_parameters, parameter_values
from payload_estimator.ros.qos import INPUT_QOS, LATCHED_QOS, output_qos
from payload_estimator.ros.robot_bridges import RobotBridge
from payload_estimator.ros.shutdown import NodeProcess, spin_until_shutdown
from payload_estimator.ros.tf_lookup import TfLookup
from payload_estimator.settings import NODE_NAME
from payload_estimator.srv import ApplyEstimate, SaveUrdf
from payload_estimator.supervision.estimate_handover import ApplyDecision
from payload_estimator.supervision.input_queue import InputQueue
from payload_estimator.supervision.node_log import InternalErrors, LogForwarding
from payload_estimator.supervision.node_outputs import OUTPUT_TOPICS, Outputs
from payload_estimator.supervision.parameters import parameters_refusal, subscribed_inputs
from payload_estimator.supervision.processing_loop import LOOP_PERIOD_S, ProcessingLoop, loop_period
from payload_estimator.supervision.supervisor import Supervisor

__all__ = ["EstimatorNode", "spin_inputs", "main", "INPUT_QOS", "LATCHED_QOS", "LOOP_PERIOD_S"]

DIAGNOSTICS_PERIOD_S = 1.0
LOOP_JOIN_S = 2.0
"""Shutting down: how long to wait for the processing loop's turn to end, s."""
EXECUTOR_SHUTDOWN_S = 1.0
"""Shutting down: how long to wait for the executor's callbacks to end, s (Humble waits; Jazzy does not)."""
EXECUTOR_THREADS = 5
"""The node's executor threads: the default group, ~/apply (waits for a service), ~/identify (runs for the
whole motion), ~/calibrate (records for its duration, then fits), and one for the answers they wait for."""


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
        self.errors = InternalErrors(self.get_logger(), self.context.ok)
        self._tf = TfLookup(self)
        self._signal_handed_on = False

        # ---- parameters in
        declare_parameters(self)
        clouds = bool(parameter_values(self).get("cloud_topic"))  # a cloud's frame may be on tf: keep listening
        if clouds:
            try:
                self._tf.listen()
            except ImportError:  # no tf2_ros: clouds in the URDF's frames only (others are refused by name)
                self.get_logger().warning("cloud_topic: no tf2_ros, a cloud's frame must be in robot_description")
        self.supervisor = Supervisor(
            parameter_values(self), rclpy_factory(), name=self.get_fully_qualified_name().lstrip("/"),
            lookup=self._tf.lookup, release_lookup=None if clouds else self._tf.release, resolve=self.resolved,
            log=self.get_logger())
        self._parameters_pending = False
        inputs = subscribed_inputs(parameter_values(self))  # topics are read once, at start-up
        self._wrench_subscribed = WRENCH in inputs
        self.add_on_set_parameters_callback(self._validate_parameters)
        if hasattr(self, "add_post_set_parameters_callback"):  # Jazzy
            self.add_post_set_parameters_callback(self._parameters_changed)

        # ---- the stream's warnings go to this node's log
        self._log_forwarding = LogForwarding(self.get_logger())
        self._log_forwarding.install()

        # ---- inputs: raw subscriptions in self.input_node, taken in bulk by the loop (no executor spins them)
        self.input_node = InputNode(self.input_queue, {kind: self.resolved(topic) for kind, topic in inputs.items()},
                                    self.get_namespace(), context=self.context)
        if not self.supervisor.builtin_description:
            self.create_subscription(String, "robot_description", self._on_robot_description, LATCHED_QOS)

        # ---- outputs: one publisher per row of the table
        self._outputs = [(row, self.create_publisher(message_class(row.type_name), row.topic, output_qos(row)))
                         for row in OUTPUT_TOPICS]
        self._diagnostics_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)

        # ---- services; ~/apply calls other services, so it and their clients get
        # callback groups of their own (run by a MultiThreadedExecutor, see main()).
        guard = self.errors.guard
        self.create_service(Trigger, "~/reset", guard(self._on_reset))
        self.create_service(SetBool, "~/pause", guard(self._on_pause))
        self.create_service(SaveUrdf, "~/save_urdf", guard(self._on_save_urdf))
        self._bridge = RobotBridge(self, MutuallyExclusiveCallbackGroup())
        self.create_service(ApplyEstimate, "~/apply", guard(self._on_apply),
                            callback_group=MutuallyExclusiveCallbackGroup())
        self._calibrate = CalibrateService(self, guard)
        self._identify = IdentifyAction(self, apply=lambda: self._apply(force=False, dry_run=False),
                                        report=self.errors.report)

        # ---- the processing loop runs in a thread of its own (spin_inputs); diagnostics on a timer
        self.create_timer(DIAGNOSTICS_PERIOD_S, self._publish_diagnostics)

    # ================================================================ parameters
    def _validate_parameters(self, parameters: list[Parameter]) -> SetParametersResult:
        """Refuse a change that makes the settings invalid (the reason says which and why)."""
        with self.lock:
            values = {**parameter_values(self), **{p.name: p.value for p in parameters}}
            reason = parameters_refusal(values, self._wrench_subscribed)
        if reason is not None:
            return SetParametersResult(successful=False, reason=reason)
        if not hasattr(self, "add_post_set_parameters_callback"):  # Humble: applied by the next _process()
            self._parameters_pending = True
        return SetParametersResult(successful=True)

    def _parameters_changed(self, parameters: list[Parameter]) -> None:
        """Accepted changes: live ones at once, the others by rebuilding the stream (supervisor)."""
        with self.lock:
            self.supervisor.parameters_changed(parameter_values(self))

    # Humble (no post-set callback): an accepted change is applied before set_parameters returns, as
    # on Jazzy, not one loop turn later (a ~/apply right after it would see the old settings).
    # The parameter services call these two as well.
    def set_parameters(self, parameter_list: list[Parameter]) -> list[SetParametersResult]:
        """Set parameters as :meth:`rclpy.node.Node.set_parameters` does, then apply accepted changes at once.

        Args:
            parameter_list: the parameters to set.

        Returns:
            One result per parameter (accepted, or why not).
        """
        results = super().set_parameters(parameter_list)
        self._apply_pending_parameters()
        return results

    def set_parameters_atomically(self, parameter_list: list[Parameter]) -> SetParametersResult:
        """Set parameters all or none, as rclpy does, then apply an accepted change at once.

        Args:
            parameter_list: the parameters to set.

        Returns:
            Whether they were set, or why not.
        """
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

    @property
    def moving_the_arm(self) -> bool:
        """Whether ``~/identify`` is running (the loop turns faster then: :func:`loop_period`)."""
        return self._identify.run.session.busy

    def process(self) -> None:
        """One turn of the processing loop, holding :attr:`lock`.

        It drains the queue into the supervisor (one Driver turn), publishes what it returns and ticks
        ``~/identify``.
        """
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
                self._publish(out)
            self._identify.tick(now, items, out)
        except Exception as exc:  # noqa: BLE001 - a bug must not take the node down
            self.errors.report("processing input", exc)

    def _publish(self, out: Outputs) -> None:
        for row, publisher in self._outputs:
            if row.on_demand and not publisher.get_subscription_count():
                continue
            msg = out.message(row.build)
            if msg is not None:
                publisher.publish(msg)

    def _publish_diagnostics(self) -> None:
        try:
            stamp = self.get_clock().now().nanoseconds * 1e-9
            with self.lock:
                msg = self.supervisor.diagnostics(time.monotonic(), stamp, len(self.input_queue))
            self._diagnostics_pub.publish(msg)
        except Exception as exc:  # noqa: BLE001
            self.errors.report("publishing diagnostics", exc)

    # ================================================================ services
    def _on_reset(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        with self.lock:
            response.success, response.message = self.supervisor.reset()
        return response

    def _on_pause(self, request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        with self.lock:
            response.success, response.message = self.supervisor.pause(bool(request.data))
        return response

    def _on_save_urdf(self, request: SaveUrdf.Request, response: SaveUrdf.Response) -> SaveUrdf.Response:
        with self.lock:
            saved = self.supervisor.save_urdf(request.frame, request.path, request.force)
        response.success, response.message, response.urdf = saved.success, saved.message, saved.urdf
        return response

    def _on_apply(self, request: ApplyEstimate.Request, response: ApplyEstimate.Response) -> ApplyEstimate.Response:
        done = self._apply(request.force, request.dry_run)
        response.success, response.message, response.request = done.success, done.message, done.request
        return response

    def _apply(self, force: bool, dry_run: bool) -> ApplyDecision:
        """``~/apply``: the decision, with the robot's answer once sent (``send`` cleared); logged."""
        decision = self.supervisor.apply(force=force, dry_run=dry_run)
        if decision.send is not None:
            success, message = self._bridge.send(decision.send)
            decision = replace(decision, success=success, message=message, send=None)
        # (rclpy wants one severity per logging call site)
        if decision.success:
            self.get_logger().info(f"~/apply: {decision.message}")
        else:
            self.get_logger().warning(f"~/apply: {decision.message}")
        return decision

    # ================================================================= helpers
    def resolved(self, topic: str) -> str:
        """``topic`` as this node resolves it (as given when it cannot be resolved)."""
        try:
            return self.resolve_topic_name(topic)
        except Exception:  # noqa: BLE001
            return topic

    def destroy_node(self) -> None:
        """Stop forwarding the package's log, destroy the input node, then this node."""
        self._log_forwarding.remove()
        self.input_node.destroy_node()
        super().destroy_node()


class _Stop:
    """Stops several loops and executors at once (what :func:`spin_inputs` returns)."""

    def __init__(self, *parts: Any) -> None:
        self._parts = parts

    def shutdown(self) -> None:
        for part in self._parts:
            part.shutdown()


def spin_inputs(node: EstimatorNode) -> tuple[Any, threading.Thread]:
    """Start ``node``'s processing loop, which takes its inputs, in a thread of its own.

    Where rclpy cannot take from a subscription directly, an executor of its own
    spins the input node in another thread (its callbacks enqueue).

    Args:
        node: the estimator node.

    Returns:
        What stops the loop (and that executor) with ``.shutdown()``, and the loop's thread.
    """
    taker = InputTaker(node.input_node, node.input_queue)
    parts: list[Any] = []
    if not taker.available():
        executor = SingleThreadedExecutor(context=node.context)
        executor.add_node(node.input_node)
        threading.Thread(target=spin_until_shutdown, args=(executor, node.context),
                         name="payload_estimator_input_callbacks", daemon=True).start()
        parts.append(executor)
    longest = LOOP_PERIOD_S  # this module's, read when called: benchmarks/node_cpu.py sets it before main()
    loop = ProcessingLoop(node.process, lambda: loop_period(node.supervisor.settings, longest, node.moving_the_arm),
                          node.context.ok,
                          take=taker.take if taker.available() else None, on_error=node.errors.report,
                          longest_s=longest)
    thread = threading.Thread(target=loop.run, name="payload_estimator_loop", daemon=True)
    thread.start()
    return _Stop(loop, *parts), thread


def main(args: list[str] | None = None) -> None:
    """``ros2 run payload_estimator estimator_node``.

    One SIGINT or SIGTERM, whenever it comes, ends it with status 0
    (:mod:`payload_estimator.ros.shutdown`).
    """
    with NodeProcess() as process:
        rclpy.init(args=args)
        # What the imports made (rclpy, numpy, scipy ...) lives as long as the process: frozen, out of the
        # cyclic collector's sight, a full collection walks only what the node makes (with them, 26 ms and
        # 0.4 % of a core over a 20 s replay of the node's loop; objects freed by their counts still go)
        gc.freeze()
        node = EstimatorNode()
        process.on_exit(node.destroy_node)
        inputs, thread = spin_inputs(node)
        process.on_exit(lambda: thread.join(timeout=LOOP_JOIN_S))
        process.on_exit(inputs.shutdown)
        # ~/apply waits for another service's answer, ~/identify for the motion: other threads serve the answers.
        executor = MultiThreadedExecutor(num_threads=EXECUTOR_THREADS)
        process.on_exit(lambda: executor.shutdown(timeout_sec=EXECUTOR_SHUTDOWN_S))
        executor.add_node(node)
        spin_until_shutdown(executor, node.context)


if __name__ == "__main__":
    main()
