"""The QoS of the estimator node's topics.

Inputs are best effort, keep last :data:`INPUT_DEPTH`: a best-effort subscription
matches both best-effort publishers (Franka's convenience topics, most sensor
drivers) and reliable ones (joint_state_broadcaster, xarm_ros2); a reliable
subscription would not match the former at all. ``robot_description`` and the
latched outputs (``~/urdf_inertial``) are one message that late joiners must get.
"""

from __future__ import annotations

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from payload_estimator.supervision.node_outputs import OutputTopic

__all__ = ["CLOUD_QOS", "INPUT_DEPTH", "INPUT_QOS", "LATCHED_QOS", "output_qos"]

INPUT_DEPTH = 1000
"""Messages each input subscription holds until the loop takes them: 1 s of 1 kHz input, far longer
than a turn (100 ms; a rebuild of the stream, the longest, takes a few hundred ms)."""

INPUT_QOS = QoSProfile(
    history=HistoryPolicy.KEEP_LAST, depth=INPUT_DEPTH,
    reliability=ReliabilityPolicy.BEST_EFFORT, durability=DurabilityPolicy.VOLATILE,
)
"""The input subscriptions' QoS (module docstring)."""
CLOUD_QOS = QoSProfile(
    history=HistoryPolicy.KEEP_LAST, depth=2,
    reliability=ReliabilityPolicy.BEST_EFFORT, durability=DurabilityPolicy.VOLATILE,
)
"""The payload cloud's subscription: a camera's cloud is large and comes at about 1 Hz, the newest counts."""
LATCHED_QOS = QoSProfile(
    history=HistoryPolicy.KEEP_LAST, depth=1,
    reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL,
)
"""One message that late joiners get: ``robot_description``, ``~/urdf_inertial``."""


def output_qos(topic: OutputTopic) -> QoSProfile | int:
    """The publisher QoS of a row of :data:`~payload_estimator.supervision.node_outputs.OUTPUT_TOPICS`."""
    return LATCHED_QOS if topic.latched else topic.depth
