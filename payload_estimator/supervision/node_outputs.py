"""What the estimator node publishes for an estimate: a table of topics and message builders (ROS-free).

:data:`OUTPUT_TOPICS` lists every topic the node publishes an estimate on, in the order it publishes
them: the topic, the message type (``"pkg/msg/Type"``), its QoS (depth, or latched: reliable and
transient local, depth 1) and the builder that makes its message from an :class:`Outputs`. The node
creates one publisher per row and, for each :class:`Outputs` the supervisor returns, publishes what
each builder makes (a builder may return None: nothing to publish this time). Adding a topic is one
row and its builder. ``/diagnostics`` is not in the table: it is published on a timer of its own
(:meth:`~payload_estimator.supervision.supervisor.Supervisor.diagnostics`), not per estimate.

Messages are made by the :data:`~payload_estimator.io.ros_factories.MessageFactory` the
:class:`Outputs` carries (rclpy messages in the node, ``rosbags`` dataclasses in tests), each at most
once per :class:`Outputs` and only when asked for (:meth:`Outputs.message`): the markers and the point
masses are built only when someone subscribes to them. Poses and inertias are in the stream's sensor frame
unless the field says flange; SI units.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from payload_estimator.io import ros_outbound
from payload_estimator.io.ros_factories import MessageFactory
from payload_estimator.outputs.markers import estimate_markers
from payload_estimator.pipeline.stream import StreamEstimate

__all__ = [
    "Outputs",
    "OutputTopic",
    "OUTPUT_TOPICS",
    "estimate_message",
    "inertia_message",
    "markers_message",
    "point_masses_message",
    "urdf_inertial_message",
]


@dataclass(frozen=True)
class Outputs:
    """One estimate to publish, and the messages made of it (built on first use, then kept).

    Attributes:
        result: the stream's estimate.
        sensor_frame: the frame the estimate is in (the messages' ``frame_id``).
        flange_frame: the frame of ``result.params_in_flange``.
        factory: makes the messages.
        stale: the estimate is the last good one, republished while it cannot be updated (the
            message's ``stale``).
        age: s since the estimate last took in new samples.
        payload_changed: a payload change was detected since the previous message.
        urdf_text: the ``<inertial>`` element for ``~/urdf_inertial``, or None (unchanged: not republished).
    """

    result: StreamEstimate
    sensor_frame: str
    flange_frame: str
    factory: MessageFactory = field(repr=False, compare=False)
    stale: bool = False
    age: float = 0.0
    payload_changed: bool = False
    urdf_text: str | None = None
    _messages: dict[Callable[[Outputs], Any], Any] = field(default_factory=dict, init=False, repr=False,
                                                           compare=False)

    def message(self, build: Callable[[Outputs], Any]) -> Any:
        """What ``build`` makes of these outputs, made once (the loop's thread is the only one to ask)."""
        if build not in self._messages:
            self._messages[build] = build(self)
        return self._messages[build]

    @property
    def estimate(self) -> Any:
        """``payload_estimator/PayloadEstimate`` for ``~/estimate``."""
        return self.message(estimate_message)

    @property
    def inertia(self) -> Any:
        """``geometry_msgs/InertiaStamped`` for ``~/inertia``."""
        return self.message(inertia_message)

    @property
    def markers(self) -> Any:
        """``visualization_msgs/MarkerArray`` for ``~/markers``."""
        return self.message(markers_message)

    @property
    def point_masses(self) -> Any | None:
        """``sensor_msgs/PointCloud2`` for ``~/point_masses``, or None (the estimator has no point masses)."""
        return self.message(point_masses_message)

    @property
    def urdf_inertial(self) -> Any | None:
        """``std_msgs/String`` for ``~/urdf_inertial``, or None (unchanged: not republished)."""
        return self.message(urdf_inertial_message)


def estimate_message(out: Outputs) -> Any:
    """``payload_estimator/PayloadEstimate``: every field of the estimate, with ``stale`` and ``age``."""
    return ros_outbound.payload_estimate_msg(out.factory, out.result, out.sensor_frame, out.flange_frame, out.stale,
                                             out.age, out.payload_changed)


def inertia_message(out: Outputs) -> Any:
    """``geometry_msgs/InertiaStamped``: the estimate's mass, COM and inertia about the COM, stamped ``result.t``."""
    return ros_outbound.inertia_stamped_msg(out.factory, out.result.estimate.params, out.sensor_frame, out.result.t)


def markers_message(out: Outputs) -> Any:
    """``visualization_msgs/MarkerArray``: the estimate's ellipsoid and, when the estimator has them, its points."""
    est = out.result.estimate
    markers = estimate_markers(est.params, est.extras.get("points_in_sensor"), est.extras.get("point_masses"),
                               est.physically_consistent)
    return ros_outbound.marker_array_msg(out.factory, markers, out.sensor_frame, out.result.t)


def point_masses_message(out: Outputs) -> Any | None:
    """``sensor_msgs/PointCloud2``: each point mass PMD solved, in the sensor frame; None without point masses.

    Each point has its ``mass`` (kg) and an ``rgb`` colour by mass (blue: empty, red: the heaviest; the density
    PMD sees)."""
    extras = out.result.estimate.extras
    points, masses = extras.get("points_in_sensor"), extras.get("point_masses")
    if points is None or masses is None or len(points) != len(masses) or not len(points):
        return None
    masses = np.asarray(masses, dtype=float).reshape(-1)
    return ros_outbound.point_cloud2_msg(out.factory, out.result.t, out.sensor_frame, np.asarray(points, dtype=float),
                                         mass=masses.astype(np.float32), rgb=ros_outbound.mass_colours(masses))


def urdf_inertial_message(out: Outputs) -> Any | None:
    """``std_msgs/String`` with the ``<inertial>`` in the flange frame, or None when it is not to be republished."""
    return ros_outbound.string_msg(out.factory, out.urdf_text) if out.urdf_text is not None else None


@dataclass(frozen=True)
class OutputTopic:
    """One row of :data:`OUTPUT_TOPICS`.

    Attributes:
        topic: the topic name (``~/`` is the node's private namespace).
        type_name: the message type, ``"pkg/msg/Type"``.
        build: makes the message from an :class:`Outputs` (None: nothing to publish this time).
        depth: the publisher's history depth (reliable, volatile).
        latched: reliable, transient local, depth 1: a late subscriber gets the last message.
        on_demand: built and published only while someone subscribes (rviz's markers; on a robot PC
            usually nobody).
    """

    topic: str
    type_name: str
    build: Callable[[Outputs], Any]
    depth: int = 10
    latched: bool = False
    on_demand: bool = False


OUTPUT_TOPICS: tuple[OutputTopic, ...] = (
    OutputTopic("~/estimate", "payload_estimator/msg/PayloadEstimate", estimate_message),
    OutputTopic("~/inertia", "geometry_msgs/msg/InertiaStamped", inertia_message),
    OutputTopic("~/markers", "visualization_msgs/msg/MarkerArray", markers_message, on_demand=True),
    OutputTopic("~/point_masses", "sensor_msgs/msg/PointCloud2", point_masses_message, depth=2, on_demand=True),
    OutputTopic("~/urdf_inertial", "std_msgs/msg/String", urdf_inertial_message, latched=True),
)
"""Every topic the node publishes an estimate on, in publishing order (module docstring)."""
