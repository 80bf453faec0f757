"""Helpers of the ROS tests: a private rclpy context, an estimator node spun as ``main()`` spins it,
a simulated run published at it, and readers of /diagnostics.

Nothing here imports rclpy at import time: without ROS (CI), the test modules
skip themselves (``pytest.importorskip``) before using these.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Any


def payload_shape(payload: str = "claw_hammer") -> str:
    """The ``payload_shape`` parameter for a catalogue payload (its envelope, as sim_demo.launch.py gives it)."""
    from payload_estimator.core.shapes import format_shape_spec
    from payload_estimator.sim.payloads import get_payload

    return format_shape_spec(get_payload(payload).envelope)


def wait_for(condition: Callable[[], Any], timeout: float, period: float = 0.05) -> Any:
    """Poll ``condition`` until it returns something truthy (returned) or ``timeout`` s pass (None)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(period)
    return None


class RosHarness:
    """A private context with the estimator (and any helper nodes) spinning in background threads."""

    def __init__(self) -> None:
        import rclpy
        from rclpy.executors import MultiThreadedExecutor

        self.rclpy = rclpy
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.executor = MultiThreadedExecutor(num_threads=3, context=self.context)
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._started = False
        self.errors: list[BaseException] = []
        self._input_executors: list[Any] = []
        self.nodes: list[Any] = []

    def _spin(self) -> None:
        from rclpy.executors import ExternalShutdownException

        while self.context.ok():
            try:
                self.executor.spin_once(timeout_sec=0.05)
            except ExternalShutdownException:
                return
            except Exception as exc:  # noqa: BLE001 - a callback raised: the node would have died
                self.errors.append(exc)

    def add(self, node: Any) -> Any:
        self.executor.add_node(node)
        self.nodes.append(node)
        if not self._started:
            self._started = True
            self._thread.start()
        return node

    def estimator(self, **parameters: Any) -> Any:
        """An EstimatorNode with ``parameters`` overriding the Panda preset, spun as main() does."""
        from rclpy.parameter import Parameter

        from payload_estimator.ros.estimator_node import EstimatorNode, spin_inputs
        from payload_estimator.settings import settings_for_robot

        namespace = parameters.pop("_namespace", "")
        values = {**settings_for_robot("panda").to_dict(), **parameters}
        overrides = [Parameter(k, value=v) for k, v in values.items() if v != []]
        node = EstimatorNode(context=self.context, parameter_overrides=overrides, namespace=namespace)
        executor, _ = spin_inputs(node)
        self._input_executors.append(executor)
        return self.add(node)

    def node(self, name: str) -> Any:
        from rclpy.node import Node

        return self.add(Node(name, context=self.context))

    def close(self) -> None:
        for executor in self._input_executors:
            executor.shutdown()
        self.executor.shutdown()
        for node in self.nodes:
            node.destroy_node()
        self.rclpy.try_shutdown(context=self.context)



class RunPublisher:
    """Publishes a simulated Panda run the way franka_ros2 would (joint states, stiffness-frame wrench)."""

    def __init__(self, node: Any, payload: str = "claw_hammer", duration: float = 6.0, seed: int = 3) -> None:
        from geometry_msgs.msg import WrenchStamped
        from sensor_msgs.msg import JointState
        from std_msgs.msg import String

        from payload_estimator.ros.qos import INPUT_QOS, LATCHED_QOS
        from payload_estimator.settings import settings_for_robot
        from payload_estimator.sim.live import LiveRun
        from payload_estimator.sim.mujoco_sim import simulate

        self.settings = settings_for_robot("panda")
        self.run = simulate(robot="panda", payload=payload, duration=duration, noise="low", seed=seed, imu=False)
        self.live = LiveRun(self.run, self.settings, loop=False)
        self.node = node
        self.joints = node.create_publisher(JointState, self.settings.joint_states_topic, INPUT_QOS)
        self.wrench = node.create_publisher(WrenchStamped, self.settings.wrench_topic, INPUT_QOS)
        self.description = node.create_publisher(String, "robot_description", LATCHED_QOS)
        self.t0 = 100.0  # stamps: 100 s + run time
        self.next = 0

    def publish_description(self, urdf: str | None = None) -> None:
        from std_msgs.msg import String

        self.description.publish(String(data=urdf if urdf is not None else self.run.urdf))

    def joint_msg(self, i: int, names: list[str] | None = None) -> Any:
        from builtin_interfaces.msg import Time
        from sensor_msgs.msg import JointState

        t = self.t0 + float(self.run.joint_t[i])
        msg = JointState()
        msg.header.stamp = Time(sec=int(t), nanosec=int(round((t - int(t)) * 1e9)) % 1_000_000_000)
        msg.name = names if names is not None else list(self.run.joint_names)
        msg.position = self.run.joint_q[i].tolist()
        msg.velocity = self.run.joint_dq[i].tolist()
        return msg

    def wrench_msg(self, i: int, frame: str | None = None, nan: bool = False) -> Any:
        from builtin_interfaces.msg import Time
        from geometry_msgs.msg import WrenchStamped

        t = self.t0 + float(self.run.wrench_t[i])
        msg = WrenchStamped()
        msg.header.stamp = Time(sec=int(t), nanosec=int(round((t - int(t)) * 1e9)) % 1_000_000_000)
        msg.header.frame_id = self.live.wrench_frame_id if frame is None else frame
        f, tau = self.live.wrench_force[i], self.live.wrench_torque[i]
        msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z = (float(v) for v in f)
        msg.wrench.torque.x, msg.wrench.torque.y, msg.wrench.torque.z = (float(v) for v in tau)
        if nan:
            msg.wrench.force.z = float("nan")
        return msg

    def publish(self, seconds: float, pace: float = 2.0, wrench: bool = True, **bad: Any) -> None:
        """Publish the next ``seconds`` of the run, ``pace`` times faster than real time.

        ``wrench=False``: joint states only (the wrench driver is down).
        ``bad``: ``names=[...]`` (joint names), ``frame="..."`` or ``nan=True`` (wrench).
        """
        n = min(len(self.run.joint_t), self.next + int(round(seconds * self.run.rate_hz)))
        batch = 10
        for start in range(self.next, n, batch):
            for i in range(start, min(start + batch, n)):
                self.joints.publish(self.joint_msg(i, bad.get("names")))
                if wrench:
                    self.wrench.publish(self.wrench_msg(i, bad.get("frame"), bad.get("nan", False)))
            time.sleep(batch / self.run.rate_hz / pace)
        self.next = n

    def restart(self) -> None:
        """The simulator restarts: the run begins again, with its stamps (the clock jumps back)."""
        self.next = 0


class Listener:
    """The last message of each subscribed topic (and a count), from a helper node."""

    def __init__(self, node: Any) -> None:
        self.node = node
        self.last: dict[str, Any] = {}
        self.count: dict[str, int] = {}
        self.all: dict[str, list[Any]] = {}

    def listen(self, msg_type: Any, topic: str, qos: Any = 10, keep: bool = False) -> None:
        def callback(msg: Any, topic: str = topic) -> None:
            self.last[topic] = msg
            self.count[topic] = self.count.get(topic, 0) + 1
            if keep:
                self.all.setdefault(topic, []).append(msg)

        self.node.create_subscription(msg_type, topic, callback, qos)


def node_status(diagnostic_array: Any, suffix: str) -> Any:
    """The status whose name ends with ``suffix`` (e.g. ": node", ": rejected input")."""
    for status in diagnostic_array.status:
        if status.name.endswith(suffix):
            return status
    return None


def status_values(status: Any) -> dict[str, str]:
    return {kv.key: kv.value for kv in status.values}


def level(status: Any) -> int:
    value = status.level
    return value[0] if isinstance(value, (bytes, bytearray)) else int(value)


def call(node: Any, srv_type: Any, name: str, request: Any, timeout: float = 30.0) -> Any:
    """Call a service from the test thread (the node is spun by the harness)."""
    client = node.create_client(srv_type, name)
    assert client.wait_for_service(timeout_sec=10.0), f"service {name} not available"
    future = client.call_async(request)
    assert wait_for(future.done, timeout), f"no answer from {name}"
    return future.result()


class SpinningTestCase:
    """Mixin for a launch test's ``unittest.TestCase``: one test node in a private context, spun in
    a background thread for the whole class. A subclass names its node (``NODE_NAME``) and creates
    its subscriptions and clients on ``cls.node`` in :meth:`set_up_node`; ``self.wait(condition,
    timeout)`` polls."""

    NODE_NAME = "launch_test"
    SPIN_PERIOD_S = 0.05

    @classmethod
    def setUpClass(cls) -> None:
        import rclpy
        from rclpy.executors import SingleThreadedExecutor

        cls.context = rclpy.Context()
        rclpy.init(context=cls.context)
        cls.node = rclpy.create_node(cls.NODE_NAME, context=cls.context)
        cls.executor = SingleThreadedExecutor(context=cls.context)
        cls.executor.add_node(cls.node)
        cls.set_up_node()
        cls._spinning = True
        cls._thread = threading.Thread(target=cls._spin, daemon=True)
        cls._thread.start()

    @classmethod
    def set_up_node(cls) -> None:
        """Subscriptions, clients and the lists they fill, on ``cls.node`` (before spinning starts)."""

    @classmethod
    def _spin(cls) -> None:
        while cls._spinning and cls.context.ok():
            cls.executor.spin_once(timeout_sec=cls.SPIN_PERIOD_S)

    @classmethod
    def tearDownClass(cls) -> None:
        import rclpy

        cls._spinning = False
        cls._thread.join(timeout=2.0)
        cls.executor.shutdown()
        cls.node.destroy_node()
        rclpy.try_shutdown(context=cls.context)

    def wait(self, condition: Callable[[], Any], timeout: float) -> Any:
        """:func:`wait_for` at the spin period."""
        return wait_for(condition, timeout, period=self.SPIN_PERIOD_S)


MAX_GAP_S = 0.05
"""A silence longer than this between two published samples is no motion (the estimator's default
``max_gap_s``: its aligner starts a new segment there; the simulator's loop has no such gap)."""


class StampMonitor:
    """What a simulator published on a stamped topic, from its messages' header stamps.

    The simulator stamps each sample with its run time (``sim_node``: the steady clock since it started,
    plus an origin), so the stamps say what it published whatever the test's own timing: the sample
    time it has published (:meth:`sample_time`), its rate (:meth:`rate_hz`) and how fast it runs
    against the wall clock (:meth:`real_time_factor`). The subscription is raw (no deserialisation:
    the stamp is read from the CDR bytes) with a deep queue, so that the test keeps up with a 1 kHz
    stream; the messages it still misses under load only make its figures lower, i.e. the
    assertions built on them more lenient, never stricter.
    """

    def __init__(self, node: Any, msg_type: Any, topic: str, depth: int = 2000) -> None:
        from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

        self.topic = topic
        self._lock = threading.Lock()
        self._arrivals: list[float] = []  # monotonic s
        self._stamp_ns: list[int] = []
        qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth, reliability=ReliabilityPolicy.BEST_EFFORT,
                         durability=DurabilityPolicy.VOLATILE)  # as the simulator publishes (SENSOR_QOS)
        node.create_subscription(msg_type, topic, self._on_message, qos, raw=True)

    def _on_message(self, data: bytes) -> None:
        import struct

        # CDR: a 4-byte encapsulation header (byte 1: 1 little-endian, 0 big-endian), then header.stamp
        sec, nanosec = struct.unpack_from("<iI" if data[1] & 1 else ">iI", data, 4)
        with self._lock:
            self._arrivals.append(time.monotonic())
            self._stamp_ns.append(sec * 1_000_000_000 + nanosec)

    def _stamps(self, since: float = -math.inf, until: float = math.inf, stamp_until_ns: float = math.inf) -> Any:
        """Distinct stamps (ns, sorted int64 array) of the messages that arrived in [since, until] (monotonic s)."""
        import numpy as np

        with self._lock:
            n = len(self._stamp_ns)
            arrivals = np.array(self._arrivals[:n], dtype=float)
            stamps = np.array(self._stamp_ns[:n], dtype=np.int64)
        keep = (arrivals >= since) & (arrivals <= until) & (stamps <= stamp_until_ns)
        return np.unique(stamps[keep])

    def sample_time(self, until_stamp: float = math.inf, since: float = -math.inf, until: float = math.inf) -> float:
        """Sample time published, s: the stamps' span less every silence longer than :data:`MAX_GAP_S` (the
        simulator fell behind and skipped samples, or restarts its loop), up to the stamp ``until_stamp``
        (s) and of the messages that arrived in [``since``, ``until``] (monotonic s)."""
        import numpy as np

        steps = np.diff(self._stamps(since, until, until_stamp * 1e9))
        return float(np.sum(steps[steps <= MAX_GAP_S * 1e9])) * 1e-9

    def rate_hz(self, since: float = -math.inf, until: float = math.inf) -> float:
        """Samples published per second of stamp time by the messages that arrived in [since, until]
        (monotonic s): distinct stamps over their span (the simulator's stamps advance with the wall
        clock, so a simulator that skips samples publishes fewer per second). NaN with fewer than two."""
        stamps = self._stamps(since, until)
        if len(stamps) < 2 or stamps[-1] <= stamps[0]:
            return math.nan
        return (len(stamps) - 1) / (float(stamps[-1] - stamps[0]) * 1e-9)

    def real_time_factor(self, since: float = -math.inf, until: float | None = None) -> float:
        """Sample time published per wall second, from ``since`` (default: the first arrival) to ``until``
        (default: now), monotonic s; 1: the simulator keeps up with real time. NaN before any message."""
        with self._lock:
            first = next((t for t in self._arrivals if t >= since), None)
        until = time.monotonic() if until is None else until
        if first is None or until <= first:
            return math.nan
        return self.sample_time(since=first, until=until) / (until - first)

    def stretch(self, wall_s: float) -> float:
        """``wall_s`` divided by the real-time factor (at most 1, at least 0.1; 1 before any message): a wall
        time limit that a simulator slower than real time stretches."""
        rtf = self.real_time_factor()
        return wall_s / min(1.0, max(rtf, 0.1)) if math.isfinite(rtf) else wall_s


def wait_within_sample_time(condition: Callable[[], Any], latest_stamp: Callable[[], float | None],
                            clock: StampMonitor, sample_time_s: float, guard_s: float, period: float = 0.05) -> Any:
    """Poll ``condition`` until it returns something truthy (returned), or until it can no longer come in
    time (None): the node has answered for samples (``latest_stamp()``, s, e.g. its newest message's
    header stamp) more than ``sample_time_s`` of published sample time after the simulator's first one
    (``clock``), or ``guard_s`` wall seconds divided by the simulator's real-time factor (at most 1,
    measured meanwhile) have passed: a generous outer guard that a slow machine stretches."""
    start = checked = time.monotonic()
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() - checked > 0.5:  # the stamps: twice a second (sorting them costs)
            checked = time.monotonic()
            stamp = latest_stamp()
            if stamp is not None and clock.sample_time(until_stamp=stamp) > sample_time_s:
                return None
            if checked - start > clock.stretch(guard_s):
                return None
        time.sleep(period)


def stamp_s(stamp: Any) -> float:
    """A builtin_interfaces/Time in s."""
    return stamp.sec + stamp.nanosec * 1e-9
