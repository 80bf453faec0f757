"""ROS 2 input messages into an :class:`~payload_estimator.pipeline.stream.EstimationStream`, without importing ROS.

The rclpy node and ``payload-estimator replay`` share this module, so a bag
replayed offline runs exactly the pipeline the node runs live.

The adapters are duck-typed: they read the fields of ``sensor_msgs/JointState``,
``geometry_msgs/WrenchStamped`` and ``sensor_msgs/Imu`` from rclpy messages,
``rosbags`` dataclasses or anything with the same attributes, and push them
into the stream. They never raise on bad data: what the stream can judge
(lengths, NaN, ranges, missing joints, wrong frames, saturation) it counts where
its input enters (``push_*``); what only the message layer sees is counted here
under :data:`UNSTAMPED`, :data:`IMU_FIELD_ABSENT` and :data:`MALFORMED`.

Units are the messages' (SI): rad, rad/s, N, N·m, m/s². Frames: a wrench or
IMU sample is in its ``header.frame_id`` (a leading ``/`` is ignored), which
the stream checks against its configuration.

Times: a header stamp (``builtin_interfaces/Time``) is read as seconds on the
publisher's clock; a zero stamp means "unstamped" and falls back to the
receive time ``wall_time`` when one is given.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from payload_estimator.errors import ShapeError
from payload_estimator.io.cdr import (
    JointStateLayout,
    SerializedJointState,
    SerializedWrenchStamped,
    WrenchLayout,
    joint_state_layout,
    wrench_layout,
)
from payload_estimator.io.point_cloud2 import cloud_from_message
from payload_estimator.io.ros_factories import stamp_to_sec
from payload_estimator.pipeline.payload_cloud import CloudOutcome
from payload_estimator.pipeline.stream import IMU, JOINTS, WRENCH, EstimationStream

__all__ = [
    "feed_cloud",
    "take_clouds",
    "KINDS",
    "UNSTAMPED",
    "IMU_FIELD_ABSENT",
    "MALFORMED",
    "feed_joint_state",
    "feed_wrench",
    "feed_imu",
    "feed",
    "feed_many",
]

KINDS: tuple[str, ...] = (JOINTS, WRENCH, IMU)
"""The input kinds :func:`feed` accepts (the stream names of the diagnostics)."""

UNSTAMPED = "unstamped"
"""A message whose header stamp is zero; its receive time is used, or it is dropped without one."""
IMU_FIELD_ABSENT = "imu_field_absent"
"""An IMU message whose gyro or accelerometer covariance[0] is -1 (the field is absent); dropped."""
MALFORMED = "malformed_message"
"""A message whose fields cannot be read as numbers of the expected shape; dropped."""

_UNREADABLE = (AttributeError, TypeError, ValueError, IndexError, OverflowError)
"""What reading a field that is absent, None, not a number or a sequence of another shape raises
(OverflowError: an integer beyond any float, e.g. a stamp's ``sec``)."""

# ----------------------------------------------------------------- one by one


def _input_stamp(stream: EstimationStream, header: Any, wall_time: float | None, kind: str) -> float | None:
    """The header stamp in s, the receive time for an unstamped message, or None (dropped)."""
    t = stamp_to_sec(header.stamp)
    if t != 0.0:
        return t
    if wall_time is not None:
        stream.health.report(UNSTAMPED, "message with a zero header stamp; its receive time is used", kind)
        return float(wall_time)
    stream.health.report(UNSTAMPED, "message with a zero header stamp and no receive time; dropped", kind)
    return None


def _floats(values: Any) -> np.ndarray:
    return np.asarray(values, dtype=float).reshape(-1)


def _xyz(v: Any) -> np.ndarray:
    return np.array([float(v.x), float(v.y), float(v.z)])


def _frame(frame_id: Any) -> str:
    # tf2 frame ids carry no leading slash; some drivers still send one
    return str(frame_id).lstrip("/")


def _malformed(stream: EstimationStream, kind: str, what: str, exc: Exception) -> bool:
    stream.health.report(MALFORMED, f"unreadable {what} ({type(exc).__name__}: {exc}); dropped", kind)
    return False


def feed_joint_state(stream: EstimationStream, msg: Any, wall_time: float | None = None) -> bool:
    """Push a ``sensor_msgs/JointState`` into ``stream``; False when it was dropped (and counted).

    Names may come in any order and include joints the stream does not use
    (gripper fingers); velocities are read only when the stream uses them, efforts only when the
    wrench comes from joint torques.

    Args:
        stream: the stream to push into.
        msg: the ``sensor_msgs/JointState`` (or anything with its fields).
        wall_time: receive time, s, on the clock used for rates and staleness
            (the record time when replaying); also the stamp of unstamped messages.
    """
    try:
        stamp = _input_stamp(stream, msg.header, wall_time, JOINTS)
        if stamp is None:
            return False
        names = [str(n) for n in msg.name]
        positions = _floats(msg.position)
        velocities = _floats(msg.velocity) if stream.config.use_joint_velocities else None
        efforts = _floats(msg.effort) if stream.needs_efforts else None
    except _UNREADABLE as exc:
        return _malformed(stream, JOINTS, "JointState", exc)
    return stream.push_joint_states(stamp, positions, names, velocities, wall_time=wall_time, efforts=efforts) > 0


def feed_wrench(stream: EstimationStream, msg: Any, wall_time: float | None = None) -> bool:
    """Push a ``geometry_msgs/WrenchStamped`` (N, N·m, components in ``header.frame_id``); False when dropped.

    The frame must be the configured wrench frame (or empty); the stream counts others.
    """
    try:
        stamp = _input_stamp(stream, msg.header, wall_time, WRENCH)
        if stamp is None:
            return False
        force, torque = _xyz(msg.wrench.force), _xyz(msg.wrench.torque)
        frame_id = _frame(msg.header.frame_id)
    except _UNREADABLE as exc:
        return _malformed(stream, WRENCH, "WrenchStamped", exc)
    return stream.push_wrench(stamp, force, torque, frame_id=frame_id, wall_time=wall_time) > 0


def feed_imu(stream: EstimationStream, msg: Any, wall_time: float | None = None) -> bool:
    """Push a ``sensor_msgs/Imu`` (gyro rad/s, specific force m/s², IMU frame); False when dropped or unused.

    Ignored (uncounted) when the stream does not use an IMU. A message whose
    ``angular_velocity_covariance[0]`` or ``linear_acceleration_covariance[0]``
    is -1 lacks that field (REP 145) and is dropped under :data:`IMU_FIELD_ABSENT`;
    an absent orientation does not matter.
    """
    if stream.imu_mount is None:
        return False
    try:
        if float(msg.angular_velocity_covariance[0]) == -1.0 or float(msg.linear_acceleration_covariance[0]) == -1.0:
            stream.health.report(
                IMU_FIELD_ABSENT, "IMU message without angular velocity or linear acceleration; dropped", IMU
            )
            return False
        stamp = _input_stamp(stream, msg.header, wall_time, IMU)
        if stamp is None:
            return False
        gyro, accel = _xyz(msg.angular_velocity), _xyz(msg.linear_acceleration)
        frame_id = _frame(msg.header.frame_id)
    except _UNREADABLE as exc:
        return _malformed(stream, IMU, "Imu", exc)
    return stream.push_imu(stamp, gyro, accel, frame_id=frame_id, wall_time=wall_time) > 0


_FEEDERS: dict[str, Callable[[EstimationStream, Any, float | None], bool]] = {
    JOINTS: feed_joint_state,
    WRENCH: feed_wrench,
    IMU: feed_imu,
}


def feed(stream: EstimationStream, kind: str, msg: Any, wall_time: float | None = None) -> bool:
    """Dispatch ``msg`` by ``kind`` (``"joint_states"``, ``"wrench"`` or ``"imu"``).

    Raises:
        ValueError: unknown ``kind`` (a programming error, not bad data).
    """
    try:
        feeder = _FEEDERS[kind]
    except KeyError:
        raise ValueError(f"unknown input kind {kind!r}; expected one of {', '.join(KINDS)}") from None
    return feeder(stream, msg, wall_time)

# -------------------------------------------------------------------- batches


def feed_many(stream: EstimationStream, items: Iterable[tuple[str, Any, float | None]]) -> dict[str, int]:
    """Feed ``(kind, msg, wall_time)`` items in order; returns how many of each kind were accepted.

    The same samples and the same counted problems as calling :func:`feed` on
    each, several times cheaper at 1 kHz: the items are taken kind by kind (each
    kind in its order: the stream buffers each input on its own and aligns them
    only when it processes, so interleaving does not matter), and consecutive joint
    states with the same name list, and consecutive wrenches in the same frame, go
    into the stream as one batch. Serialised messages (:mod:`payload_estimator.io.cdr`, what the
    node subscribes to) batch by their layout and are read with numpy without being
    decoded one by one. Anything unusual (an unstamped or unreadable message,
    uneven arrays, an IMU sample) takes the one-by-one path.
    """
    accepted = {kind: 0 for kind in KINDS}
    run: list[tuple[Any, float | None]] = []
    run_kind: str | None = None
    run_key: Any = None

    def flush() -> None:
        nonlocal accepted, run, run_kind, run_key
        if run:
            if isinstance(run_key, JointStateLayout):
                accepted[JOINTS] += _flush_serialized_joint_states(stream, run_key, run)
            elif isinstance(run_key, WrenchLayout):
                accepted[WRENCH] += _flush_serialized_wrenches(stream, run_key, run)
            elif run_kind == JOINTS:
                accepted[JOINTS] += _flush_joint_states(stream, run_key, run)
            else:
                accepted[WRENCH] += _flush_wrenches(stream, run_key, run)
        run, run_kind, run_key = [], None, None

    by_kind: dict[str, list[tuple[str, Any, float | None]]] = {}
    for item in items:
        by_kind.setdefault(item[0], []).append(item)
    for kind, msg, wall_time in (item for same in by_kind.values() for item in same):
        key = _batch_key(kind, msg)
        if key is None:
            flush()
            accepted[kind] = accepted.get(kind, 0) + bool(feed(stream, kind, msg, wall_time))
            continue
        if kind != run_kind or key != run_key:
            flush()
            run_kind, run_key = kind, key
        run.append((msg, wall_time))
    flush()
    return accepted


_UNSTAMPED_CDR = bytes(8)
"""header.stamp of a serialised message that has none (bytes 4-11: sec 0, nanosec 0)."""
_SERIALIZED: dict[str, type] = {JOINTS: SerializedJointState, WRENCH: SerializedWrenchStamped}
_layouts: dict[str, Any] = {}
"""The last layout seen per input kind: the next message of the same driver fits it (no parsing)."""


def _serialized_key(kind: str, msg: Any) -> Any:
    """The layout a serialised message batches by, or None for the one-by-one path."""
    data = msg.data
    if data[4:12] == _UNSTAMPED_CDR:
        return None  # unstamped: the single path counts it
    layout = _layouts.get(kind)
    if layout is not None and layout.fits(data):
        return layout
    try:
        layout = joint_state_layout(data) if kind == JOINTS else wrench_layout(data)
    except ValueError:
        return None  # the single path counts it as malformed
    _layouts[kind] = layout
    return layout


def _batch_key(kind: str, msg: Any) -> Any:
    """What messages must share to go into the stream as one batch, or None for the one-by-one path."""
    if type(msg) is _SERIALIZED.get(kind):
        return _serialized_key(kind, msg)
    try:
        if msg.header.stamp.sec == 0 and msg.header.stamp.nanosec == 0:
            return None  # unstamped: the single path counts it
        if kind == JOINTS:
            return tuple(msg.name)
        if kind == WRENCH:
            return _frame(msg.header.frame_id)
    except _UNREADABLE:
        return None
    return None


def _flush_joint_states(stream: EstimationStream, names: tuple[str, ...], run: list) -> int:
    n = len(names)
    try:
        positions = [msg.position for msg, _ in run]
        if any(len(p) != n for p in positions):
            raise ValueError("uneven")
        stamps = np.array([stamp_to_sec(msg.header.stamp) for msg, _ in run])
        q = np.array(positions, dtype=float).reshape(len(run), n)
        dq = None
        if stream.config.use_joint_velocities:
            velocities = [msg.velocity for msg, _ in run]
            if any(len(v) != n for v in velocities):
                raise ValueError("uneven")
            dq = np.array(velocities, dtype=float).reshape(len(run), n)
        tau = None
        if stream.needs_efforts:
            efforts = [msg.effort for msg, _ in run]
            if any(len(e) != n for e in efforts):
                raise ValueError("uneven")
            tau = np.array(efforts, dtype=float).reshape(len(run), n)
    except _UNREADABLE:
        return sum(bool(feed_joint_state(stream, msg, wall)) for msg, wall in run)
    return stream.push_joint_states(stamps, q, [str(x) for x in names], dq, wall_time=run[-1][1], efforts=tau)


def _flush_wrenches(stream: EstimationStream, frame_id: str, run: list) -> int:
    try:
        stamps = np.array([stamp_to_sec(msg.header.stamp) for msg, _ in run])
        w = np.array([(m.wrench.force.x, m.wrench.force.y, m.wrench.force.z,
                       m.wrench.torque.x, m.wrench.torque.y, m.wrench.torque.z) for m, _ in run], dtype=float)
    except _UNREADABLE:
        return sum(bool(feed_wrench(stream, msg, wall)) for msg, wall in run)
    return stream.push_wrench(stamps, w[:, :3], w[:, 3:], frame_id=frame_id, wall_time=run[-1][1])


def _flush_serialized_joint_states(stream: EstimationStream, layout: JointStateLayout, run: list) -> int:
    n = len(layout.names)
    velocities = stream.config.use_joint_velocities
    efforts = stream.needs_efforts
    try:
        if layout.n_position != n or (velocities and layout.n_velocity != n):
            raise ValueError("uneven")
        stamps, q, dq, tau = layout.read_arrays([msg.data for msg, _ in run], velocities, efforts)
    except ValueError:
        return sum(bool(feed_joint_state(stream, msg, wall)) for msg, wall in run)
    # efforts of another length than the names (none at all, often): the stream counts the whole run at once
    return stream.push_joint_states(stamps, q, list(layout.names), dq, wall_time=run[-1][1], efforts=tau)


def _flush_serialized_wrenches(stream: EstimationStream, layout: WrenchLayout, run: list) -> int:
    try:
        stamps, w = layout.read([msg.data for msg, _ in run])
    except ValueError:
        return sum(bool(feed_wrench(stream, msg, wall)) for msg, wall in run)
    return stream.push_wrench(stamps, w[:, :3], w[:, 3:], frame_id=_frame(layout.frame_id), wall_time=run[-1][1])


def feed_cloud(stream: EstimationStream, msg: Any) -> CloudOutcome:
    """A ``sensor_msgs/PointCloud2`` of the payload made its shape at its stamp; never raises.

    Decoded (:func:`~payload_estimator.io.point_cloud2.cloud_from_message`), then
    :meth:`~payload_estimator.pipeline.payload_cloud.PayloadClouds.receive`."""
    try:
        cloud = cloud_from_message(msg)
    except ShapeError as exc:
        return stream.clouds.unreadable(str(exc))
    return stream.clouds.receive(cloud)


def take_clouds(stream: EstimationStream, items: list[tuple[str, Any, float]]) -> list[tuple[str, Any, float]]:
    """One turn of a loop (the node's, ``replay``'s); returns the items that are not clouds.

    The clouds of the last turn are fed (:func:`feed_cloud`), this turn's kept for the next (with the joint
    states that came with them)."""
    items, due = stream.clouds.take(items)
    for msg in due:
        feed_cloud(stream, msg)
    return items
