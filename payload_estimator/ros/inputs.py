"""The estimator node's input subscriptions, taken in bulk by its processing loop.

An rclpy executor takes one message per ready subscription each time it waits,
rebuilds its wait set from every entity of its nodes and makes a Python message
and a task of each: at 1 kHz joint states plus 1 kHz wrench that alone costs most
of a core. The inputs therefore live in a node of their own that no executor
spins (:class:`InputNode`; the payload's cloud, ``cloud_topic``, too: as messages, a small queue),
and the processing loop takes everything that arrived
in bulk on each turn (:class:`InputTaker`) into the
:class:`~payload_estimator.supervision.input_queue.InputQueue`. Receive times are
the monotonic clock, s.
"""

from __future__ import annotations

import time
from typing import Any

from geometry_msgs.msg import WrenchStamped
from rclpy.node import Node
from rclpy.parameter import Parameter
from sensor_msgs.msg import Imu, JointState, PointCloud2

from payload_estimator.io.cdr import SerializedJointState, SerializedWrenchStamped
from payload_estimator.pipeline.payload_cloud import CLOUD
from payload_estimator.pipeline.stream import IMU, JOINTS, WRENCH
from payload_estimator.ros.qos import CLOUD_QOS, INPUT_QOS
from payload_estimator.settings import NODE_NAME
from payload_estimator.supervision.input_queue import InputQueue, ReceiveClock

__all__ = ["InputNode", "InputTaker"]


class InputNode(Node):
    """The input subscriptions, in a node of their own that no executor spins.

    :class:`InputTaker` takes what arrived in bulk. Joint states and the wrench
    are subscribed *raw* (the serialised bytes, read in batches with numpy by
    :func:`~payload_estimator.io.ros_inbound.feed_many`, see
    :mod:`payload_estimator.io.cdr`), the IMU as messages; the callbacks here
    only run where an executor spins this node instead
    (:func:`~payload_estimator.ros.estimator_node.spin_inputs`' fallback).

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
        if topics.get(CLOUD):  # messages, a small queue: clouds are big
            self.inputs.append((CLOUD, self.create_subscription(PointCloud2, topics[CLOUD], self._on_cloud, CLOUD_QOS),
                                None))

    def _on_joint_state(self, data: bytes) -> None:
        self.input_queue.put(JOINTS, SerializedJointState(data), time.monotonic())

    def _on_wrench(self, data: bytes) -> None:
        self.input_queue.put(WRENCH, SerializedWrenchStamped(data), time.monotonic())

    def _on_imu(self, msg: Imu) -> None:
        self.input_queue.put(IMU, msg, time.monotonic())

    def _on_cloud(self, msg: PointCloud2) -> None:
        self.input_queue.put(CLOUD, msg, time.monotonic())


class InputTaker:
    """Moves every input message that arrived into the queue, in bulk (:meth:`take`, once per turn of the loop).

    There is no executor, no callback and no Python message object per joint
    state or wrench. The middleware holds what arrived in each subscription's
    history (``INPUT_QOS``: :data:`~payload_estimator.ros.qos.INPUT_DEPTH`
    messages) until it is taken. Each message is queued with the
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
