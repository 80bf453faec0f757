"""rosbag2 recordings read without ROS, through ``rosbags``: robot inputs, description, truth.

:func:`read_bag` yields the input messages of the configured topics
(joint states, wrench, IMU: :data:`INPUT_TYPES`) in record order, as
``rosbags`` dataclasses for :mod:`payload_estimator.io.ros_inbound`;
:func:`bag_info`, :func:`bag_robot_description` and :func:`bag_ground_truth`
read what else a bag holds. Any storage ``rosbags`` reads works (mcap and
sqlite3, :data:`STORAGES`); message types come from the bag's own
definitions, else from ROS 2 Jazzy's plus this package's.

The constants name what a bag of this package holds besides the inputs:
``/robot_description`` (``std_msgs/String``), the simulator's ground truth
(``geometry_msgs/InertiaStamped``) and the ``custom_data`` keys describing a
simulated run. Simulated bags are written by :mod:`payload_estimator.sim.bag`.

Times: record times are s since the epoch (rosbag2 stores ns).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from payload_estimator.core.inertia import InertialParameters, from_ros_inertia_fields
from payload_estimator.pipeline.stream import IMU, JOINTS, WRENCH

if TYPE_CHECKING:
    from payload_estimator.settings import Settings

__all__ = [
    "BagError",
    "BagMessage",
    "BagInfo",
    "GroundTruth",
    "STORAGES",
    "ROBOT_DESCRIPTION_TOPIC",
    "GROUND_TRUTH_TOPIC",
    "INPUT_TYPES",
    "STRING_TYPE",
    "INERTIA_STAMPED_TYPE",
    "CUSTOM_DATA_PREFIX",
    "input_topics",
    "read_bag",
    "bag_info",
    "bag_robot_description",
    "bag_ground_truth",
]

log = logging.getLogger("payload_estimator")

STORAGES: tuple[str, ...] = ("mcap", "sqlite3")
"""rosbag2 storage plugins (read, and written by :func:`payload_estimator.sim.bag.write_simulated_bag`)."""
ROBOT_DESCRIPTION_TOPIC = "/robot_description"
"""The robot's URDF (``std_msgs/String``)."""
GROUND_TRUTH_TOPIC = "/payload_estimator/ground_truth"
"""The simulated payload's inertial parameters (``geometry_msgs/InertiaStamped``, about the COM)."""

INPUT_TYPES = {
    JOINTS: "sensor_msgs/msg/JointState",
    WRENCH: "geometry_msgs/msg/WrenchStamped",
    IMU: "sensor_msgs/msg/Imu",
}
"""Message type of each input kind."""
STRING_TYPE = "std_msgs/msg/String"
"""Message type of :data:`ROBOT_DESCRIPTION_TOPIC`."""
INERTIA_STAMPED_TYPE = "geometry_msgs/msg/InertiaStamped"
"""Message type of :data:`GROUND_TRUTH_TOPIC`."""

CUSTOM_DATA_PREFIX = "payload_estimator."
"""Keys of the bag's ``custom_data`` that describe a simulated run (robot, payload, payload_shape ...)."""


class BagError(ValueError):
    """The path is not a readable rosbag2, or lacks what was asked of it; the message says which."""


class BagMessage(NamedTuple):
    """One input message of a bag, in record order.

    Attributes:
        kind: ``"joint_states"``, ``"wrench"`` or ``"imu"``.
        msg: the deserialized message (a ``rosbags`` dataclass).
        record_time: when the recorder received it, s since the epoch.
    """

    kind: str
    msg: Any
    record_time: float


@dataclass(frozen=True)
class GroundTruth:
    """The payload's true inertial parameters, from a simulated bag.

    Attributes:
        params: about the origin of ``frame_id``, in its axes.
        frame_id: the frame they are expressed in (the run's sensor frame).
    """

    params: InertialParameters
    frame_id: str


@dataclass(frozen=True)
class BagInfo:
    """What a bag holds.

    Attributes:
        start, end: record time of the first and last message, s since the epoch.
        topics: topic -> (message type, message count).
        custom_data: the metadata's ``custom_data`` (empty when absent).
    """

    start: float
    end: float
    topics: dict[str, tuple[str, int]]
    custom_data: dict[str, str] = field(default_factory=dict)

    @property
    def duration(self) -> float:
        """s."""
        return max(0.0, self.end - self.start)


# --------------------------------------------------------------------- reading


def _open(path: str | Path):
    """An open ``rosbags`` AnyReader (types from the bag's own definitions, else Jazzy + ours)."""
    from rosbags.highlevel import AnyReader, AnyReaderError

    from payload_estimator.io.interfaces import InterfacesNotFound, ros_typestore

    path = Path(path)
    if not path.exists():
        raise BagError(f"{path}: no such file or directory")
    try:
        default = ros_typestore()
    except InterfacesNotFound:
        default = ros_typestore(ours=False)
    try:
        reader = AnyReader([path], default_typestore=default)
        reader.open()
    except (AnyReaderError, FileNotFoundError, OSError, ValueError, KeyError) as exc:
        raise BagError(f"{path}: not a readable rosbag2 ({exc})") from None
    return reader


def _read_custom_data(path: Path) -> dict[str, str]:
    meta = path / "metadata.yaml"
    if not meta.is_file():
        return {}
    import yaml

    try:
        info = (yaml.safe_load(meta.read_text()) or {}).get("rosbag2_bagfile_information", {})
    except yaml.YAMLError:
        return {}
    data = info.get("custom_data") or {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def bag_info(path: str | Path) -> BagInfo:
    """Topics, types, counts, time span and custom data of the bag at ``path``.

    Raises:
        BagError: missing, or not a rosbag2.
    """
    reader = _open(path)
    try:
        topics = {name: (info.msgtype or "?", int(info.msgcount)) for name, info in reader.topics.items()}
        start, end = reader.start_time * 1e-9, reader.end_time * 1e-9
    finally:
        reader.close()
    if not topics:
        start = end = 0.0
    return BagInfo(start, max(start, end), topics, _read_custom_data(Path(path)))


def input_topics(settings: Settings) -> dict[str, str]:
    """Topic -> input kind for ``settings`` (the IMU only when a topic is configured)."""
    topics = {settings.joint_states_topic: JOINTS, settings.wrench_topic: WRENCH}
    if settings.imu_topic:
        topics[settings.imu_topic] = IMU
    return topics


def read_bag(path: str | Path, settings: Settings) -> Iterator[BagMessage]:
    """The input messages of the bag at ``path``, in record order, for the topics of ``settings``.

    Checked before the first message: the joint-state and wrench topics (and
    the IMU topic when the motion comes from the IMU) must be in the bag with
    the right types. A message that does not deserialize is skipped and logged.

    Raises:
        BagError: missing, not a rosbag2, or without the required topics.
    """
    wanted = input_topics(settings)
    info = bag_info(path)
    required = {JOINTS, WRENCH} | ({IMU} if settings.motion_source == "imu" else set())
    problems = []
    for topic, kind in wanted.items():
        if topic not in info.topics:
            if kind in required:
                problems.append(f"no {topic} ({INPUT_TYPES[kind]})")
        elif info.topics[topic][0] != INPUT_TYPES[kind]:
            problems.append(f"{topic} is {info.topics[topic][0]}, not {INPUT_TYPES[kind]}")
    if problems:
        listing = ", ".join(f"{t} ({m})" for t, (m, _) in sorted(info.topics.items())) or "none"
        raise BagError(f"{path}: {'; '.join(problems)}; its topics: {listing}")
    return _messages(Path(path), {t: k for t, k in wanted.items() if t in info.topics})


def _messages(path: Path, topics: dict[str, str]) -> Iterator[BagMessage]:
    from rosbags.highlevel import AnyReaderError

    reader = _open(path)
    try:
        connections = [c for c in reader.connections if c.topic in topics]
        for conn, t_ns, raw in reader.messages(connections=connections):
            try:
                msg = reader.deserialize(raw, conn.msgtype)
            except AnyReaderError as exc:
                log.warning("%s: a %s message at %d ns does not deserialize (%s); skipped", path, conn.topic, t_ns, exc)
                continue
            yield BagMessage(topics[conn.topic], msg, t_ns * 1e-9)
    finally:
        reader.close()


def _first(path: str | Path, topic: str, msgtype: str) -> Any | None:
    reader = _open(path)
    try:
        connections = [c for c in reader.connections if c.topic == topic and c.msgtype == msgtype]
        if not connections:  # (rosbags reads every topic when given no connection)
            return None
        for conn, _, raw in reader.messages(connections=connections):
            return reader.deserialize(raw, conn.msgtype)
        return None
    finally:
        reader.close()


def bag_robot_description(path: str | Path) -> str | None:
    """The first ``/robot_description`` (URDF XML) recorded in the bag, or None."""
    msg = _first(path, ROBOT_DESCRIPTION_TOPIC, STRING_TYPE)
    return str(msg.data) if msg is not None and msg.data else None


def bag_ground_truth(path: str | Path) -> GroundTruth | None:
    """The payload's truth from ``/payload_estimator/ground_truth`` (inertia about the COM), or None."""
    msg = _first(path, GROUND_TRUTH_TOPIC, INERTIA_STAMPED_TYPE)
    if msg is None:
        return None
    i = msg.inertia
    params = from_ros_inertia_fields(i.m, (i.com.x, i.com.y, i.com.z), i.ixx, i.ixy, i.ixz, i.iyy, i.iyz, i.izz)
    return GroundTruth(params, str(msg.header.frame_id))
