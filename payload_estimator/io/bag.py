"""rosbag2 recordings read without ROS, through ``rosbags``: robot inputs, description, truth.

:func:`read_bag` yields the input messages of the configured topics
(joint states, wrench, IMU: :data:`INPUT_TYPES`) in record order, as
``rosbags`` dataclasses for :mod:`payload_estimator.io.ros_inbound`;
:func:`bag_info`, :func:`bag_robot_description` and :func:`bag_ground_truth`
read what else a bag holds. Any storage ``rosbags`` reads works (mcap and
sqlite3, :data:`STORAGES`).

A bag as users have it: the storage files themselves are the truth, not
``metadata.yaml``. Each storage file (``.mcap``, ``.db3``) is opened on its
own and the messages of all files are merged in record order, so that

* a bag split by ``ros2 bag record --max-bag-duration/--max-bag-size`` is read
  whole, whatever order its files are listed in;
* a ``metadata.yaml`` that is missing (a recording still being written or
  killed), unreadable, or that lists files which are not there, or topics,
  QoS profiles or counts the files do not hold, changes nothing but a note;
* a storage file that cannot be opened (an MCAP file cut off before its
  footer, a damaged SQLite database) is left out with a note, and the bag is
  refused only when no file can be read; reading that fails in the middle of
  a file (a truncated chunk) ends that file with a note;
* only the wanted topics are ever deserialized, with ROS 2 Jazzy's types: other
  topics, their custom message types and whatever definitions the bag carries
  for them (unparseable, or with hashes ``rosbags`` does not reproduce) are
  never touched. A message that does not deserialize is skipped and counted.

Notes and problems are one line each (:attr:`BagInfo.notes`, :attr:`BagReading.notes`).
Compressed bags (``--compression-mode file`` or ``message``) are read through
``rosbags``' own directory reader, which decompresses them.

The constants name what a bag of this package holds besides the inputs:
``/robot_description`` (``std_msgs/String``), the ground truth
(``geometry_msgs/InertiaStamped``: :data:`GROUND_TRUTH_TOPIC` in simulated bags,
:data:`SIM_NODE_TRUTH_TOPIC` in recordings of the simulator node) and the
``custom_data`` keys describing a simulated run. Simulated bags are written by
:mod:`payload_estimator.sim.bag_writer`.

Times: record times are s since the epoch (rosbag2 stores ns).
"""

from __future__ import annotations

import heapq
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from payload_estimator.core.inertia import InertialParameters, from_ros_inertia_fields
from payload_estimator.errors import BagError
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
STORAGE_SUFFIXES = {".mcap": "mcap", ".db3": "sqlite3"}
"""Storage file name suffix -> storage plugin."""
ROBOT_DESCRIPTION_TOPIC = "/robot_description"
"""The robot's URDF (``std_msgs/String``)."""
GROUND_TRUTH_TOPIC = "/payload_estimator/ground_truth"
"""The simulated payload's inertial parameters (``geometry_msgs/InertiaStamped``, about the COM)."""
SIM_NODE_TRUTH_TOPIC = "/payload_sim/truth"
"""The same, as the simulator node (``payload_sim``) publishes it: found in a ``ros2 bag record`` of it."""

JOINT_STATE_TYPE = "sensor_msgs/msg/JointState"
INPUT_TYPES = {
    JOINTS: JOINT_STATE_TYPE,
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

MCAP_RECOVER_HINT = "`mcap recover FILE -o FIXED.mcap` (the mcap CLI) rewrites its readable part"


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
        """s."""
        return max(0.0, self.end - self.start)


# --------------------------------------------------------------------- opening


def _one_line(text: object, limit: int = 240) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _reason(exc: BaseException, file: str) -> str:
    """Why a storage file cannot be read, for a person: one line."""
    text = _one_line(exc.args[0] if exc.args and isinstance(exc.args[0], str) else exc) or type(exc).__name__
    if file.endswith(".mcap"):
        truncated = isinstance(exc, OSError) and not isinstance(exc, PermissionError)  # seek before the start
        if truncated or "end magic" in text or "footer" in text.lower():
            return ("cut off: no MCAP footer (the recording was interrupted or is still being written); "
                    + MCAP_RECOVER_HINT)
        if "magic is invalid" in text:
            return "not an MCAP file"
        if "seems to be empty" in text:
            return "empty file"
    if file.endswith(".db3") and ("malformed" in text or "not a database" in text or "missing tables" in text):
        return f"not a readable SQLite database, cut off or damaged ({text.split(': ')[-1]})"
    return f"{text} ({type(exc).__name__})" if type(exc).__name__ not in text else text


def _load_metadata(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """(rosbag2_bagfile_information, problem): the metadata when usable, else why not (one line)."""
    meta = path / "metadata.yaml"
    if not meta.is_file():
        return None, "no metadata.yaml"
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's, when PyYAML has it: 20x faster
    try:
        doc = yaml.load(meta.read_bytes().decode("utf-8"), Loader=loader)  # a safe loader
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        return None, f"metadata.yaml unreadable ({_one_line(getattr(exc, 'problem', None) or exc, 80)})"
    info = doc.get("rosbag2_bagfile_information") if isinstance(doc, dict) else None
    if not isinstance(info, dict):
        return None, "metadata.yaml has no rosbag2_bagfile_information"
    return info, None


def _custom_data(info: dict[str, Any] | None) -> dict[str, str]:
    data = (info or {}).get("custom_data") or {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _names(names: list[str], shown: int = 3) -> str:
    return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")


def _natural_key(p: Path) -> tuple[Any, ...]:
    """rec_2.mcap before rec_10.mcap."""
    return tuple(int(s) if s.isdigit() else s for s in re.split(r"(\d+)", p.name))


def _listed_files(path: Path, info: dict[str, Any]) -> list[Path] | None:
    names = info.get("relative_file_paths")
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return None
    return [path / PurePath(n).name for n in names]


def _storage_reader(file: Path, storage: str | None = None):
    """An unopened ``rosbags`` reader of one storage file (by suffix, else by ``storage``)."""
    from rosbags.rosbag2.storage_mcap import McapReader
    from rosbags.rosbag2.storage_sqlite3 import Sqlite3Reader

    kind = STORAGE_SUFFIXES.get(file.suffix, storage)
    if kind == "mcap":
        return McapReader(file)
    if kind == "sqlite3":
        return Sqlite3Reader(file)
    return None


class _Bag:
    """The open storage files of a bag (context manager); see the module docstring."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.notes: list[str] = []
        self.readers: list[Any] = []
        self.names: list[str] = []
        self.custom_data: dict[str, str] = {}
        if not self.path.exists():
            raise BagError(f"{self.path}: no such file or directory")
        try:
            self._open()
        except BaseException:
            self.close()
            raise

    def _open(self) -> None:
        path = self.path
        if path.is_file():
            if path.suffix not in STORAGE_SUFFIXES:
                raise BagError(f"{path}: not a readable rosbag2: a file that is neither .mcap nor .db3 "
                               "(a bag is a directory with metadata.yaml, or one such file)")
            candidates: list[tuple[Path, str | None]] = [(path, None)]
        else:
            info, problem = _load_metadata(path)
            self.custom_data = _custom_data(info)
            compression = str((info or {}).get("compression_mode") or "").lower()
            if info is not None and compression not in ("", "none"):
                self._open_compressed(info)
                return
            candidates = self._candidates(info, problem)
        failures: list[tuple[str, str]] = []
        for file, storage_id in candidates:
            reader = _storage_reader(file, storage_id)
            if reader is None:
                failures.append((file.name, "unknown storage (not .mcap or .db3)"))
                continue
            try:
                reader.open()
            except Exception as exc:  # rosbags raises many kinds on damaged files: all mean "unreadable"
                failures.append((file.name, _reason(exc, file.name)))
                continue
            self.readers.append(reader)
            self.names.append(file.name)
        if not self.readers:
            name, reason = failures[0] if failures else (path.name, "no storage file")
            where = path if path.is_file() else path / name
            more = f" (and {len(failures) - 1} more unreadable file(s))" if len(failures) > 1 else ""
            raise BagError(f"{where}: not a readable rosbag2: {reason}{more}")
        self.notes.extend(f"{name}: left out, {reason}" for name, reason in failures)

    def _candidates(self, info: dict[str, Any] | None, problem: str | None) -> list[tuple[Path, str | None]]:
        """The storage files to open (with the storage metadata.yaml names), and notes on what it gets wrong."""
        path = self.path
        found = sorted((p for p in path.iterdir() if p.suffix in STORAGE_SUFFIXES and p.is_file()),
                       key=_natural_key)
        listed = _listed_files(path, info) if info is not None else None
        if listed is None:
            problem = problem or "metadata.yaml lists no files"
            if not found:
                raise BagError(f"{path}: not a readable rosbag2: {problem}, and no .mcap or .db3 file")
            self.notes.append(f"{problem}: reading the {len(found)} storage file(s) found "
                              "(a recording cut off or still being written?)")
            return [(p, None) for p in found]
        storage = (info or {}).get("storage_identifier")
        storage = storage if isinstance(storage, str) else None
        present = [p for p in listed if p.is_file()]
        if missing := [p.name for p in listed if not p.is_file()]:
            self.notes.append(f"metadata.yaml lists {len(missing)} file(s) that are not there: {_names(missing)}")
        if extra := [p for p in found if p not in present]:
            self.notes.append(f"{len(extra)} storage file(s) not in metadata.yaml also read: "
                              f"{_names([p.name for p in extra])}")
        if not present and not extra:
            raise BagError(f"{path}: not a readable rosbag2: none of the files metadata.yaml lists is there "
                           f"({_names(missing)})")
        return [(p, storage) for p in present] + [(p, None) for p in extra]

    def _open_compressed(self, info: dict[str, Any]) -> None:
        from rosbags.rosbag2.reader import DirectoryReader  # decompresses (zstd) what it reads

        reader = DirectoryReader(self.path)
        try:
            reader.open()
        except Exception as exc:
            raise BagError(f"{self.path}: not a readable compressed rosbag2 "
                           f"({_reason(exc, '')})") from None
        self.readers.append(reader)
        self.names.append(self.path.name)

    def close(self) -> None:
        for reader in self.readers:
            try:
                reader.close()
            except Exception:  # closing a damaged file: nothing left to do
                pass
        self.readers = []

    def __enter__(self) -> _Bag:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ contents

    def connections(self) -> list[Any]:
        return [c for r in self.readers for c in r.connections]

    def topics(self) -> dict[str, tuple[str, int]]:
        types: dict[str, set[str]] = {}
        counts: Counter[str] = Counter()
        for c in self.connections():
            types.setdefault(c.topic, set()).add(c.msgtype)
            counts[c.topic] += int(c.msgcount)
        return {t: (next(iter(ts)) if len(ts) == 1 else "?", counts[t]) for t, ts in types.items()}

    def time_span(self) -> tuple[float, float]:
        spans = [(r.metadata.start_time, r.metadata.end_time) for r in self.readers
                 if r.metadata.message_count and r.metadata.start_time <= r.metadata.end_time]
        if not spans:
            return 0.0, 0.0
        return min(s for s, _ in spans) * 1e-9, max(e for _, e in spans) * 1e-9

    def messages(self, wanted: Iterable[tuple[str, str]], notes: list[str]) -> Iterator[tuple[Any, int, bytes]]:
        """(connection, record time ns, raw CDR) of the (topic, type) pairs ``wanted``, in record order.

        A reader is asked only for its own wanted connections and never with an empty selection
        (which ``rosbags`` reads as "everything"); a file that fails in the middle ends with a note.
        """
        wanted = set(wanted)
        t0_ns = int(self.time_span()[0] * 1e9)
        streams = []
        for reader, name in zip(self.readers, self.names):
            conns = [c for c in reader.connections if (c.topic, c.msgtype) in wanted]
            if conns:
                streams.append(_guarded(reader, conns, name, t0_ns, notes))
        return heapq.merge(*streams, key=lambda item: item[1])


def _guarded(reader: Any, conns: list[Any], name: str, t0_ns: int,
             notes: list[str]) -> Iterator[tuple[Any, int, bytes]]:
    """``reader.messages(conns)``; an error in the middle of the file ends it with a note."""
    last: int | None = None
    n = 0
    try:
        for item in reader.messages(conns):
            last = item[1]
            n += 1
            yield item
    except Exception as exc:  # a truncated chunk, a damaged page: the rest of this file is lost
        where = (f"after {n} message(s), {(last - t0_ns) * 1e-9:.3f} s into the recording" if last is not None
                 else "before its first message")
        notes.append(f"{name}: reading stopped {where}: {_reason(exc, name)}")


def _typestore():
    """ROS 2 Jazzy's types: what the wanted topics are deserialized with (they are the same in every ROS 2)."""
    from rosbags.typesys import Stores, get_typestore

    return get_typestore(Stores.ROS2_JAZZY)


# --------------------------------------------------------------------- reading


def bag_info(path: str | Path) -> BagInfo:
    """Topics, types, counts, time span, custom data and notes of the bag at ``path``.

    Raises:
        BagError: missing, or not a readable rosbag2 (one line).
    """
    with _Bag(path) as bag:
        start, end = bag.time_span()
        return BagInfo(start, max(start, end), bag.topics(), bag.custom_data, tuple(bag.names), tuple(bag.notes))


def input_topics(settings: Settings) -> dict[str, str]:
    """Topic -> input kind for ``settings`` (no wrench when it comes from joint torques; the IMU only when a
    topic is configured)."""
    topics = {settings.joint_states_topic: JOINTS}
    if settings.wrench_source.reads_wrench_topic:
        topics[settings.wrench_topic] = WRENCH
    if settings.imu_topic:
        topics[settings.imu_topic] = IMU
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
        store = _typestore()
        wanted = [(t, INPUT_TYPES[k]) for t, k in self.topics.items()]
        with _Bag(self.path) as bag:
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
    with _Bag(path) as bag:
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


def _first(bag: _Bag, topic: str, msgtype: str) -> Any | None:
    store = _typestore()
    for conn, _, raw in bag.messages([(topic, msgtype)], []):
        try:
            return store.deserialize_cdr(raw, conn.msgtype)
        except Exception:  # a damaged message: try the next one
            continue
    return None


def bag_first_message(path: str | Path, topic: str, msgtype: str) -> Any | None:
    """The first message of ``topic`` with type ``msgtype`` that deserializes, or None (none recorded)."""
    with _Bag(path) as bag:
        return _first(bag, topic, msgtype)


def bag_robot_description(path: str | Path) -> str | None:
    """The first ``/robot_description`` (URDF XML) recorded in the bag, or None."""
    msg = bag_first_message(path, ROBOT_DESCRIPTION_TOPIC, STRING_TYPE)
    return str(msg.data) if msg is not None and msg.data else None


def _last(bag: _Bag, topic: str, msgtype: str) -> Any | None:
    store, last = _typestore(), None
    for conn, _, raw in bag.messages([(topic, msgtype)], []):
        try:
            last = store.deserialize_cdr(raw, conn.msgtype)
        except Exception:  # a damaged message: keep the one before
            continue
    return last


def bag_ground_truth(path: str | Path) -> GroundTruth | None:
    """The truth (inertia about the COM) of the payload held at the end, from the last message
    on :data:`GROUND_TRUTH_TOPIC` or :data:`SIM_NODE_TRUTH_TOPIC` (a work cycle publishes one at
    each change), or None (none recorded, or nothing held at the end)."""
    with _Bag(path) as bag:
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
        return f"name no {_names(missing)} (they name {_names(names) or 'nothing'})"
    if len(msg.position) != len(names):
        return f"have {len(msg.position)} positions for {len(names)} names"
    if len(msg.effort) == 0:
        return "carry no efforts (the effort field is empty): the driver publishes no joint torques"
    if len(msg.effort) != len(names):
        return f"have {len(msg.effort)} efforts for {len(names)} joints: the efforts must be one per name"
    return None


def read_joint_states(path: str | Path, topic: str, joint_names: Iterable[str]) -> JointStateArrays:
    """Positions and efforts of ``joint_names`` from the ``sensor_msgs/JointState`` messages on ``topic``,
    in record order; a message that cannot give them (:func:`effort_problem`) is skipped and counted.

    Raises:
        BagError: the bag is unreadable, lacks ``topic`` (or it has another type), or no message on it gives
            the positions and efforts asked for (one line: the first message's problem).
    """
    from payload_estimator.io.ros_factories import stamp_to_sec

    joints = [str(j) for j in joint_names]
    with _Bag(path) as bag:
        types: dict[str, set[str]] = {}
        for c in bag.connections():
            types.setdefault(c.topic, set()).add(c.msgtype)
        if topic not in types:
            listing = ", ".join(sorted(t for t, ts in types.items() if JOINT_STATE_TYPE in ts))
            raise BagError(f"{path}: no {topic} ({JOINT_STATE_TYPE}) recorded; its joint-state topics: "
                           f"{listing or 'none'}")
        if JOINT_STATE_TYPE not in types[topic]:
            raise BagError(f"{path}: {topic} is {', '.join(sorted(types[topic]))}, not {JOINT_STATE_TYPE}")
        store = _typestore()
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
