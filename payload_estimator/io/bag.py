"""rosbag2 recordings read without ROS, through ``rosbags``: robot inputs, description, truth.

:func:`read_bag` yields the input messages of the configured topics
(joint states, wrench, IMU: :data:`INPUT_TYPES`) in record order, as
``rosbags`` dataclasses for :mod:`payload_estimator.io.ros_inbound`;
:func:`bag_info`, :func:`bag_robot_description` and :func:`bag_ground_truth`
read what else a bag holds. Any storage ``rosbags`` reads works (mcap and
sqlite3, :data:`STORAGES`), a bag as users have it: split, without or with a wrong
``metadata.yaml``, partly damaged, compressed (the storage files are opened by
:class:`~payload_estimator.io.bag_files.BagFiles`).

The constants name what a bag of this package holds besides the inputs:
``/robot_description`` (``std_msgs/String``), the ground truth
(``geometry_msgs/InertiaStamped``: :data:`GROUND_TRUTH_TOPIC` in simulated bags,
:data:`SIM_NODE_TRUTH_TOPIC` in recordings of the simulator node) and the
``custom_data`` keys describing a simulated run. Simulated bags are written by
:mod:`payload_estimator.sim.bag_writer`.

Times: record times are s since the epoch (rosbag2 stores ns).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from payload_estimator.core.inertia import InertialParameters, from_ros_inertia_fields
from payload_estimator.errors import BagError
from payload_estimator.io.bag_files import BagFiles, jazzy_typestore, name_list
from payload_estimator.pipeline.payload_cloud import CLOUD, StaticFrames
from payload_estimator.pipeline.stream import IMU, JOINTS, WRENCH
from payload_estimator.settings import MotionSource

if TYPE_CHECKING:
    from payload_estimator.settings import Settings

__all__ = [
    "BagError",
    "BagMessage",
    "BagInfo",
    "BagReading",
    "GroundTruth",
    "STORAGES",
    "ROBOT_DESCRIPTION_TOPIC",
    "GROUND_TRUTH_TOPIC",
    "SIM_NODE_TRUTH_TOPIC",
    "INPUT_TYPES",
    "STRING_TYPE",
    "INERTIA_STAMPED_TYPE",
    "JOINT_STATE_TYPE",
    "POINT_CLOUD2_TYPE",
    "TF_STATIC_TOPIC",
    "bag_static_frames",
    "CUSTOM_DATA_PREFIX",
    "input_topics",
    "read_bag",
    "bag_info",
    "bag_robot_description",
    "bag_ground_truth",
    "bag_first_message",
    "JointStateArrays",
    "read_joint_states",
    "effort_problem",
]

STORAGES: tuple[str, ...] = ("mcap", "sqlite3")
"""rosbag2 storage plugins (read, and written by :func:`payload_estimator.sim.bag_writer.write_simulated_bag`)."""
ROBOT_DESCRIPTION_TOPIC = "/robot_description"
"""The robot's URDF (``std_msgs/String``)."""
GROUND_TRUTH_TOPIC = "/payload_estimator/ground_truth"
"""The simulated payload's inertial parameters (``geometry_msgs/InertiaStamped``, about the COM)."""
SIM_NODE_TRUTH_TOPIC = "/payload_sim/truth"
"""The same, as the simulator node (``payload_sim``) publishes it: found in a ``ros2 bag record`` of it."""

JOINT_STATE_TYPE = "sensor_msgs/msg/JointState"
POINT_CLOUD2_TYPE = "sensor_msgs/msg/PointCloud2"
TF_STATIC_TOPIC, TF_MESSAGE_TYPE = "/tf_static", "tf2_msgs/msg/TFMessage"
INPUT_TYPES = {
    JOINTS: JOINT_STATE_TYPE,
    WRENCH: "geometry_msgs/msg/WrenchStamped",
    IMU: "sensor_msgs/msg/Imu",
    CLOUD: POINT_CLOUD2_TYPE,
}
"""Message type of each input kind."""
STRING_TYPE = "std_msgs/msg/String"
"""Message type of :data:`ROBOT_DESCRIPTION_TOPIC`."""
INERTIA_STAMPED_TYPE = "geometry_msgs/msg/InertiaStamped"
"""Message type of :data:`GROUND_TRUTH_TOPIC`."""

CUSTOM_DATA_PREFIX = "payload_estimator."
"""Keys of the bag's ``custom_data`` that describe a simulated run (robot, payload, payload_shape ...)."""



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
        topic: the topic it was recorded on.
    """

    params: InertialParameters
    frame_id: str
    topic: str = GROUND_TRUTH_TOPIC


@dataclass(frozen=True)
class BagInfo:
    """What a bag holds.

    Attributes:
        start, end: record time of the first and last message, s since the epoch (0 without messages).
        topics: topic -> (message type, message count), from the storage files (type ``"?"`` when a
            topic was recorded with several types).
        custom_data: the metadata's ``custom_data`` (empty when absent).
        files: the storage files read.
        notes: what was odd about the bag and was worked around, one line each (no metadata.yaml,
            a file left out ...).
    """

    start: float
    end: float
    topics: dict[str, tuple[str, int]]
    custom_data: dict[str, str] = field(default_factory=dict)
    files: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def duration(self) -> float:
        """Time from the first to the last message, s."""
        return max(0.0, self.end - self.start)


# --------------------------------------------------------------------- reading


def bag_info(path: str | Path) -> BagInfo:
    """Topics, types, counts, time span, custom data and notes of the bag at ``path``.

    Raises:
        BagError: missing, or not a readable rosbag2 (one line).
    """
    with BagFiles(path) as bag:
        start, end = bag.time_span()
        return BagInfo(start, max(start, end), bag.topics(), bag.custom_data, tuple(bag.names), tuple(bag.notes))


def input_topics(settings: Settings) -> dict[str, str]:
    """Return topic -> input kind for ``settings``.

    No wrench when it comes from joint torques; the IMU only when a topic is configured."""
    topics = {settings.joint_states_topic: JOINTS}
    if settings.wrench_source.reads_wrench_topic:
        topics[settings.wrench_topic] = WRENCH
    if settings.imu_topic:
        topics[settings.imu_topic] = IMU
    if settings.cloud_topic:  # a camera's cloud of the payload (pipeline/payload_cloud.py)
        topics[settings.cloud_topic] = CLOUD
    return topics


class BagReading:
    """The input messages of a bag, in record order (iterate once), and what could not be read.

    Attributes:
        expected: topic -> messages the storage files' own indexes announce.
        delivered: topic -> messages read (whether or not they deserialize).
        undecodable: topic -> messages skipped because they do not deserialize.
        notes: after iterating, one line per problem met: a file whose reading stopped early,
            messages announced but not read (damaged data), messages that do not deserialize.
    """

    def __init__(self, path: Path, topics: dict[str, str], expected: dict[str, int]) -> None:
        self.path = path
        self.topics = topics
        self.expected = expected
        self.delivered: Counter[str] = Counter()
        self.undecodable: Counter[str] = Counter()
        self.notes: list[str] = []

    def __iter__(self) -> Iterator[BagMessage]:
        store = jazzy_typestore()
        wanted = [(t, INPUT_TYPES[k]) for t, k in self.topics.items()]
        with BagFiles(self.path) as bag:
            for conn, t_ns, raw in bag.messages(wanted, self.notes):
                self.delivered[conn.topic] += 1
                try:
                    msg = store.deserialize_cdr(raw, conn.msgtype)
                except Exception:  # damaged bytes: any of several errors from the CDR decoder
                    self.undecodable[conn.topic] += 1
                    continue
                yield BagMessage(self.topics[conn.topic], msg, t_ns * 1e-9)
        for topic in self.topics:
            missing = self.expected.get(topic, 0) - self.delivered[topic]
            if missing > 0:  # rosbags skips what it cannot parse in a damaged chunk without a word
                self.notes.append(f"{missing} of {self.expected[topic]} message(s) on {topic} could not be read "
                                  "(damaged or cut off)")
        self.notes.extend(f"{n} message(s) on {topic} do not deserialize: skipped"
                          for topic, n in sorted(self.undecodable.items()))


def read_bag(path: str | Path, settings: Settings) -> BagReading:
    """The input messages of the bag at ``path``, in record order, for the topics of ``settings``.

    Checked before the first message: the joint-state and wrench topics (no wrench
    when it comes from joint torques; the IMU topic when the motion comes from the IMU) must be in the bag with
    the right types. A message that does not deserialize is skipped and
    counted (:class:`BagReading`).

    Raises:
        BagError: missing, not a rosbag2, or without the required topics (one line).
    """
    wanted = input_topics(settings)
    with BagFiles(path) as bag:
        types: dict[str, set[str]] = {}
        expected: Counter[str] = Counter()
        for c in bag.connections():
            types.setdefault(c.topic, set()).add(c.msgtype)
            if c.topic in wanted and c.msgtype == INPUT_TYPES[wanted[c.topic]]:
                expected[c.topic] += int(c.msgcount)
        topics = bag.topics()
    if not topics:
        raise BagError(f"{path}: no topics recorded (yet: a recording still being written?)")
    imu = settings.motion_source is MotionSource.IMU
    required = {kind for kind in wanted.values() if kind != IMU} | ({IMU} if imu else set())
    problems = []
    for topic, kind in wanted.items():
        if topic not in types:
            if kind in required:
                problems.append(f"no {topic} ({INPUT_TYPES[kind]})")
        elif INPUT_TYPES[kind] not in types[topic]:
            problems.append(f"{topic} is {', '.join(sorted(types[topic]))}, not {INPUT_TYPES[kind]}")
    if problems:
        listing = ", ".join(f"{t} ({m})" for t, (m, _) in sorted(topics.items())) or "none"
        raise BagError(f"{path}: {'; '.join(problems)}; its topics: {listing}")
    return BagReading(Path(path), {t: k for t, k in wanted.items() if t in types}, dict(expected))


def _first(bag: BagFiles, topic: str, msgtype: str) -> Any | None:
    store = jazzy_typestore()
    for conn, _, raw in bag.messages([(topic, msgtype)], []):
        try:
            return store.deserialize_cdr(raw, conn.msgtype)
        except Exception:  # a damaged message: try the next one
            continue
    return None


def bag_first_message(path: str | Path, topic: str, msgtype: str) -> Any | None:
    """The first message of ``topic`` with type ``msgtype`` that deserializes, or None (none recorded)."""
    with BagFiles(path) as bag:
        return _first(bag, topic, msgtype)


def bag_robot_description(path: str | Path) -> str | None:
    """The first ``/robot_description`` (URDF XML) recorded in the bag, or None."""
    msg = bag_first_message(path, ROBOT_DESCRIPTION_TOPIC, STRING_TYPE)
    return str(msg.data) if msg is not None and msg.data else None


def _last(bag: BagFiles, topic: str, msgtype: str) -> Any | None:
    store, last = jazzy_typestore(), None
    for conn, _, raw in bag.messages([(topic, msgtype)], []):
        try:
            last = store.deserialize_cdr(raw, conn.msgtype)
        except Exception:  # a damaged message: keep the one before
            continue
    return last


def bag_static_frames(path: str | Path) -> StaticFrames:
    """Every transform recorded on ``/tf_static`` (none when the bag has no such topic)."""
    frames, store = StaticFrames(), jazzy_typestore()
    with BagFiles(path) as bag:
        for conn, _, raw in bag.messages([(TF_STATIC_TOPIC, TF_MESSAGE_TYPE)], []):
            try:
                frames.add_message(store.deserialize_cdr(raw, conn.msgtype))
            except Exception:  # noqa: BLE001 - a damaged message: the others still count
                continue
    return frames


def bag_ground_truth(path: str | Path) -> GroundTruth | None:
    """Return the truth (inertia about the COM) of the payload held at the end of the bag, or None.

    From the last message on :data:`GROUND_TRUTH_TOPIC` or :data:`SIM_NODE_TRUTH_TOPIC` (a work
    cycle publishes one at each change); None when none is recorded, or nothing is held at the
    end."""
    with BagFiles(path) as bag:
        for topic in (GROUND_TRUTH_TOPIC, SIM_NODE_TRUTH_TOPIC):
            msg = _last(bag, topic, INERTIA_STAMPED_TYPE)
            if msg is None:
                continue
            i = msg.inertia
            if not i.m > 0.0:  # nothing held at the end
                return None
            try:
                params = from_ros_inertia_fields(i.m, (i.com.x, i.com.y, i.com.z),
                                                 i.ixx, i.ixy, i.ixz, i.iyy, i.iyz, i.izz)
            except ValueError:  # not a payload: no truth
                continue
            return GroundTruth(params, str(msg.header.frame_id), topic)
    return None


# ------------------------------------------------------------ joint states as arrays


@dataclass(frozen=True, eq=False)
class JointStateArrays:
    """The joint states of one topic of a bag as arrays, columns in the order asked for.

    Attributes:
        t: (N,) header stamps, s (the record time for a message stamped zero).
        q: (N, n) positions, rad. effort: (N, n) efforts, N·m (joint torques).
        skipped: messages left out (another name list without the joints, no or too few efforts,
            not deserializable), with :attr:`notes` saying why, one line per reason.
    """

    t: np.ndarray
    q: np.ndarray
    effort: np.ndarray
    skipped: int = 0
    notes: tuple[str, ...] = ()


def effort_problem(msg: Any, joint_names: Iterable[str]) -> str | None:
    """Why a ``sensor_msgs/JointState`` cannot give the efforts of ``joint_names`` (one line), or None.

    The reasons, in the order checked: an arm joint it does not name, positions or efforts not one
    per name (an empty ``effort``: the driver does not report torques).
    """
    names = [str(x) for x in msg.name]
    missing = [j for j in joint_names if j not in names]
    if missing:
        return f"name no {name_list(missing)} (they name {name_list(names) or 'nothing'})"
    if len(msg.position) != len(names):
        return f"have {len(msg.position)} positions for {len(names)} names"
    if len(msg.effort) == 0:
        return "carry no efforts (the effort field is empty): the driver publishes no joint torques"
    if len(msg.effort) != len(names):
        return f"have {len(msg.effort)} efforts for {len(names)} joints: the efforts must be one per name"
    return None


def read_joint_states(path: str | Path, topic: str, joint_names: Iterable[str]) -> JointStateArrays:
    """Read the positions and efforts of ``joint_names`` from the ``sensor_msgs/JointState`` messages on ``topic``.

    In record order; a message that cannot give them (:func:`effort_problem`) is skipped and counted.

    Raises:
        BagError: the bag is unreadable, lacks ``topic`` (or it has another type), or no message on it gives
            the positions and efforts asked for (one line: the first message's problem).
    """
    from payload_estimator.io.ros_factories import stamp_to_sec

    joints = [str(j) for j in joint_names]
    with BagFiles(path) as bag:
        types: dict[str, set[str]] = {}
        for c in bag.connections():
            types.setdefault(c.topic, set()).add(c.msgtype)
        if topic not in types:
            listing = ", ".join(sorted(t for t, ts in types.items() if JOINT_STATE_TYPE in ts))
            raise BagError(f"{path}: no {topic} ({JOINT_STATE_TYPE}) recorded; its joint-state topics: "
                           f"{listing or 'none'}")
        if JOINT_STATE_TYPE not in types[topic]:
            raise BagError(f"{path}: {topic} is {', '.join(sorted(types[topic]))}, not {JOINT_STATE_TYPE}")
        store = jazzy_typestore()
        notes: list[str] = []
        t: list[float] = []
        rows_q: list[list[float]] = []
        rows_e: list[list[float]] = []
        reasons: Counter[str] = Counter()
        first_problem: str | None = None
        index: dict[tuple[str, ...], list[int]] = {}
        for conn, t_ns, raw in bag.messages([(topic, JOINT_STATE_TYPE)], notes):
            try:
                msg = store.deserialize_cdr(raw, conn.msgtype)
            except Exception:  # damaged bytes
                reasons["do not deserialize"] += 1
                continue
            key = tuple(str(x) for x in msg.name)
            columns = index.get(key)
            if columns is None:
                problem = effort_problem(msg, joints)
                if problem is not None:
                    first_problem = first_problem or problem
                    reasons[problem] += 1
                    continue
                columns = index[key] = [key.index(j) for j in joints]
            if len(msg.position) != len(key) or len(msg.effort) != len(key):
                problem = effort_problem(msg, joints) or "have positions or efforts of another length"
                first_problem = first_problem or problem
                reasons[problem] += 1
                continue
            stamp = stamp_to_sec(msg.header.stamp)
            t.append(stamp if stamp != 0.0 else t_ns * 1e-9)
            rows_q.append([float(msg.position[c]) for c in columns])
            rows_e.append([float(msg.effort[c]) for c in columns])
    skipped = sum(reasons.values())
    if not t:
        if first_problem is None:
            raise BagError(f"{path}: no readable message on {topic}" + (f" ({notes[0]})" if notes else ""))
        raise BagError(f"{path}: the joint states on {topic} {first_problem}")
    notes.extend(f"{n} message(s) on {topic} skipped: they {reason}" for reason, n in sorted(reasons.items()))
    n = len(joints)
    return JointStateArrays(np.array(t), np.array(rows_q, dtype=float).reshape(-1, n),
                            np.array(rows_e, dtype=float).reshape(-1, n), skipped, tuple(notes))
