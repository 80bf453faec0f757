"""tf2 lookups for the estimator node: the poses of frames the robot description lacks.

The supervisor asks for them while it builds the stream
(:data:`~payload_estimator.supervision.supervisor.Lookup`) and releases the
lookup once it is built: the node listens to ``/tf`` (often a busy topic) only
until then, unless ``cloud_topic`` is set: a payload cloud's camera frame is looked up
for each cloud, and the node listens from its start. Poses are converted by
:func:`~payload_estimator.supervision.frames.extra_frame` (m, URDF roll/pitch/yaw in rad).
"""

from __future__ import annotations

from typing import Any

from rclpy.node import Node
from rclpy.time import Time

from payload_estimator.supervision.frames import extra_frame

__all__ = ["TfLookup"]


class TfLookup:
    """tf2 lookups of frames the robot description lacks; listens to /tf only until :meth:`release`.

    Args:
        node: the node that listens.

    Attributes:
        buffer, listener: tf2's, while listening (else None).
    """

    def __init__(self, node: Node) -> None:
        self._node = node
        self.buffer: Any = None
        self.listener: Any = None

    def listen(self) -> None:
        """Start listening to /tf and /tf_static (now, before any lookup: a payload cloud's camera frame)."""
        import tf2_ros

        if self.buffer is None:
            self.buffer = tf2_ros.Buffer()
            self.listener = tf2_ros.TransformListener(self.buffer, self._node)

    def lookup(self, frames: list[str], parent: str) -> tuple[list[tuple], list[str]]:
        """Poses of ``frames`` in ``parent`` (each looked up once): (extra frames, not found)."""
        import tf2_ros

        self.listen()
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
