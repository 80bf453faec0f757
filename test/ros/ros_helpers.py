"""Helpers of the ROS tests: a private rclpy context, an estimator node spun as ``main()`` spins it,
a simulated run published at it, and readers of /diagnostics.

Nothing here imports rclpy at import time: without ROS (CI), the test modules
skip themselves (``pytest.importorskip``) before using these.
"""

from __future__ import annotations

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
