"""Serialised ``sensor_msgs/JointState`` and ``geometry_msgs/WrenchStamped``, read without ROS, in batches.

The estimator node subscribes to its 1 kHz inputs *raw*: the middleware hands
over each message as the bytes it received, and nothing builds a Python
message object per sample. :class:`SerializedJointState` and
:class:`SerializedWrenchStamped` wrap those bytes; read field by field (``.header``,
``.name``, ``.position``, ``.wrench`` ...) they decode themselves once and then look
like the messages :mod:`payload_estimator.io.ros_inbound` duck-types, so every
one-by-one path (odd messages, diagnostics, ``~/identify``'s joint reading) works
unchanged. The 1 kHz path does not decode them one by one: consecutive messages
with the same :class:`JointStateLayout` (same frame, joint names and array
lengths: one robot driver) or :class:`WrenchLayout` (same frame) are read as one
strided numpy view over the joined bytes (:meth:`JointStateLayout.read`,
:meth:`JointStateLayout.read_arrays` with the efforts, :meth:`WrenchLayout.read`),
which gives bit for bit the numbers rclpy's deserialisation gives.

The format is the one every ROS 2 middleware puts on the wire for these types:
plain CDR (XCDR version 1, OMG DDS-XTypes 7.4.3.5 "encapsulation CDR"), a 4-byte
encapsulation header (``00 01``: little endian, ``00 00``: big endian, then two
option bytes) and the fields in declaration order, each primitive aligned to its
size (at most 8) counted from the end of that header; a ``string`` is a uint32
length including the terminating NUL, then the bytes; a sequence a uint32 count,
then the elements::

    JointState     Header header (Time stamp: int32 sec, uint32 nanosec; string frame_id)
                   string[] name; float64[] position; float64[] velocity; float64[] effort
    WrenchStamped  Header header; Wrench wrench (Vector3 force, Vector3 torque: float64 x, y, z)

Units are the messages' (rad, rad/s, N·m; N, N·m); stamps are returned in s
(``sec + nanosec * 1e-9``, as :func:`~payload_estimator.io.ros_factories.stamp_to_sec`).
Anything that is not such a message (another encapsulation, a length that runs
past the end, a string without its NUL) raises :class:`ValueError`, which the
inbound adapters count as a malformed message.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "Stamp",
    "Header",
    "Vector3",
    "Wrench",
    "JointStateFields",
    "WrenchStampedFields",
    "JointStateLayout",
    "WrenchLayout",
    "SerializedJointState",
    "SerializedWrenchStamped",
    "joint_state_layout",
    "wrench_layout",
    "decode_joint_state",
    "decode_wrench_stamped",
]

_ENCAPSULATION = {b"\x00\x01": "<", b"\x00\x00": ">"}
"""Encapsulation identifiers of plain CDR: byte order of the payload."""
_ORIGIN = 4
"""Alignment is counted from the end of the encapsulation header, byte offset 4."""
_STAMP_END = 12
"""header.stamp is bytes 4-11 of every stamped message (int32 sec, uint32 nanosec)."""


# ------------------------------------------------------------------ decoded values


@dataclass(frozen=True)
class Stamp:
    """``builtin_interfaces/Time``."""

    sec: int
    nanosec: int


@dataclass(frozen=True)
class Header:
    """``std_msgs/Header``."""

    stamp: Stamp
    frame_id: str


@dataclass(frozen=True)
class Vector3:
    """``geometry_msgs/Vector3``."""

    x: float
    y: float
    z: float


@dataclass(frozen=True)
class Wrench:
    """``geometry_msgs/Wrench``: force, N; torque, N·m."""

    force: Vector3
    torque: Vector3


@dataclass(frozen=True)
class JointStateFields:
    """A decoded ``sensor_msgs/JointState``: rad (or m), rad/s, N·m; arrays (k,) of their own lengths."""

    header: Header
    name: tuple[str, ...]
    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray


@dataclass(frozen=True)
class WrenchStampedFields:
    """A decoded ``geometry_msgs/WrenchStamped``."""

    header: Header
    wrench: Wrench


# --------------------------------------------------------------------- the reader


class _Reader:
    """Reads CDR fields in order from ``data`` (checks every length against the end)."""

    def __init__(self, data: bytes) -> None:
        if len(data) < _STAMP_END + 4:
            raise ValueError(f"{len(data)} bytes: too short for a stamped message")
        order = _ENCAPSULATION.get(bytes(data[:2]))
        if order is None:
            raise ValueError(f"encapsulation {bytes(data[:2]).hex()} is not plain CDR")
        self.data, self.order, self.pos = data, order, _ORIGIN

    def align(self, size: int) -> None:
        self.pos += -(self.pos - _ORIGIN) % size

    def _take(self, fmt: str, size: int) -> Any:
        self.align(size)
        if self.pos + size > len(self.data):
            raise ValueError(f"message ends at byte {len(self.data)}, a field needs bytes up to {self.pos + size}")
        value = struct.unpack_from(self.order + fmt, self.data, self.pos)[0]
        self.pos += size
        return value

    def int32(self) -> int:
        return int(self._take("i", 4))

    def uint32(self) -> int:
        return int(self._take("I", 4))

    def float64(self) -> float:
        return float(self._take("d", 8))

    def string(self) -> str:
        n = self.uint32()
        end = self.pos + n
        if end > len(self.data) or (n and self.data[end - 1] != 0):
            raise ValueError("a string runs past the end of the message or lacks its terminating NUL")
        text = bytes(self.data[self.pos:end - 1]).decode("utf-8", errors="replace") if n else ""
        self.pos = end
        return text

    def float64_sequence(self) -> tuple[int, int, int]:
        """(offset of the count, offset of the first element, count); moves past the elements."""
        count_at = self.pos + (-(self.pos - _ORIGIN) % 4)
        n = self.uint32()
        if n:
            self.align(8)
        start = self.pos
        if start + 8 * n > len(self.data):
            raise ValueError(f"a sequence of {n} float64 runs past the end of the message")
        self.pos = start + 8 * n
        return count_at, start, n

    def header(self) -> Header:
        sec, nanosec = self.int32(), self.uint32()
        return Header(Stamp(sec, nanosec), self.string())


# ------------------------------------------------------------------------ layouts


def _strided(joined: bytes, n: int, size: int, offset: int, dtype: str, columns: int | None = None) -> np.ndarray:
    """Field at ``offset`` of each of the ``n`` messages of ``size`` bytes in ``joined``: (n,) or (n, columns)."""
    if columns == 0:
        return np.zeros((n, 0))
    if columns is not None:
        view = np.ndarray((n, columns), dtype=dtype, buffer=joined, offset=offset, strides=(size, 8))
    else:
        view = np.ndarray((n,), dtype=dtype, buffer=joined, offset=offset, strides=(size,))
    return view.astype(dtype[1:], copy=True)  # native order, contiguous, aligned


def _stamps(joined: bytes, n: int, size: int, order: str) -> np.ndarray:
    """(n,) header stamps, s; exactly ``float(sec) + float(nanosec) * 1e-9`` per message."""
    sec = _strided(joined, n, size, 4, order + "i4").astype(float)
    nanosec = _strided(joined, n, size, 8, order + "u4").astype(float)
    return sec + nanosec * 1e-9


@dataclass(frozen=True)
class JointStateLayout:
    """Where the numbers are in every serialised JointState of one size, frame and name list.

    Two messages share a layout when they have the same size and the same bytes
    from the end of the stamp to the end of the position count (:meth:`fits`);
    the velocity and effort counts, which come after the positions, are checked
    per message by :meth:`read`.
    """

    size: int
    order: str
    frame_id: str
    names: tuple[str, ...]
    prefix: bytes
    """bytes 0-3 (encapsulation) + bytes 12 up to the first position: frame, names, position count."""
    position_at: int
    n_position: int
    velocity_count_at: int
    velocity_at: int
    n_velocity: int
    effort_count_at: int
    effort_at: int
    n_effort: int

    def fits(self, data: bytes) -> bool:
        """Whether ``data`` has this layout up to its velocity and effort counts (cheap: two slices)."""
        return (len(data) == self.size and data[:4] == self.prefix[:4]
                and data[_STAMP_END:_STAMP_END + len(self.prefix) - 4] == self.prefix[4:])

    def read(self, blobs: list[bytes], velocities: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """Return stamps (n,) s, positions (n, k) and velocities (n, k) of messages that all fit this layout.

        Velocities are None unless ``velocities``; every message must :meth:`fits` this layout.

        Raises:
            ValueError: a velocity or effort count differs from this layout's (read those one by one).
        """
        return self.read_arrays(blobs, velocities)[:3]

    def read_arrays(
        self, blobs: list[bytes], velocities: bool = True, efforts: bool = False
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
        """As :meth:`read`, and the efforts (n, :attr:`n_effort`) N·m (None unless ``efforts``).

        Raises:
            ValueError: a velocity or effort count differs from this layout's (read those one by one).
        """
        n, size, order = len(blobs), self.size, self.order
        joined = b"".join(blobs)
        if len(joined) != n * size:
            raise ValueError("messages of different sizes")
        for at, expected in ((self.velocity_count_at, self.n_velocity), (self.effort_count_at, self.n_effort)):
            if np.any(_strided(joined, n, size, at, order + "u4") != expected):
                raise ValueError("velocity or effort counts differ between the messages")
        q = _strided(joined, n, size, self.position_at, order + "f8", self.n_position)
        dq = _strided(joined, n, size, self.velocity_at, order + "f8", self.n_velocity) if velocities else None
        tau = _strided(joined, n, size, self.effort_at, order + "f8", self.n_effort) if efforts else None
        return _stamps(joined, n, size, order), q, dq, tau

    def positions(self, data: bytes) -> np.ndarray:
        """(k,) positions of one message that :meth:`fits` this layout."""
        return np.frombuffer(data, dtype=self.order + "f8", count=self.n_position,
                             offset=self.position_at).astype(float)


@dataclass(frozen=True)
class WrenchLayout:
    """Where the numbers are in every serialised WrenchStamped of one size and frame."""

    size: int
    order: str
    frame_id: str
    prefix: bytes
    """bytes 0-3 (encapsulation) + bytes 12 up to the force: the frame."""
    wrench_at: int

    def fits(self, data: bytes) -> bool:
        """Whether ``data`` has this size, encapsulation and frame (cheap: two slices)."""
        return (len(data) == self.size and data[:4] == self.prefix[:4]
                and data[_STAMP_END:self.wrench_at] == self.prefix[4:])

    def read(self, blobs: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
        """Stamps (n,) s and wrenches (n, 6) [force N, torque N·m] of messages that all :meth:`fits`."""
        n, size = len(blobs), self.size
        joined = b"".join(blobs)
        if len(joined) != n * size:
            raise ValueError("messages of different sizes")
        return _stamps(joined, n, size, self.order), _strided(joined, n, size, self.wrench_at, self.order + "f8", 6)


def joint_state_layout(data: bytes) -> JointStateLayout:
    """The layout of one serialised JointState (its names decoded). Raises ValueError when it is none."""
    r = _Reader(data)
    header = r.header()
    names = tuple(r.string() for _ in range(r.uint32()))
    position_count_at, position_at, n_position = r.float64_sequence()
    velocity_count_at, velocity_at, n_velocity = r.float64_sequence()
    effort_count_at, effort_at, n_effort = r.float64_sequence()
    prefix = bytes(data[:4]) + bytes(data[_STAMP_END:position_count_at + 4])
    return JointStateLayout(len(data), r.order, header.frame_id, names, prefix, position_at, n_position,
                            velocity_count_at, velocity_at, n_velocity, effort_count_at, effort_at, n_effort)


def wrench_layout(data: bytes) -> WrenchLayout:
    """The layout of one serialised WrenchStamped. Raises ValueError when it is none."""
    r = _Reader(data)
    header = r.header()
    r.align(8)
    if r.pos + 48 > len(data):
        raise ValueError("a WrenchStamped needs six float64 after its header")
    return WrenchLayout(len(data), r.order, header.frame_id, bytes(data[:4]) + bytes(data[_STAMP_END:r.pos]), r.pos)


# ------------------------------------------------------------------ one by one


def decode_joint_state(data: bytes) -> JointStateFields:
    """One serialised ``sensor_msgs/JointState``. Raises ValueError when it is none."""
    r = _Reader(data)
    header = r.header()
    names = tuple(r.string() for _ in range(r.uint32()))
    arrays = []
    for _ in range(3):
        _, start, n = r.float64_sequence()
        arrays.append(np.frombuffer(data, dtype=r.order + "f8", count=n, offset=start).astype(float))
    return JointStateFields(header, names, *arrays)


def decode_wrench_stamped(data: bytes) -> WrenchStampedFields:
    """One serialised ``geometry_msgs/WrenchStamped``. Raises ValueError when it is none."""
    r = _Reader(data)
    header = r.header()
    v = [r.float64() for _ in range(6)]
    return WrenchStampedFields(header, Wrench(Vector3(*v[:3]), Vector3(*v[3:])))


class _Serialized:
    """The bytes of one message; its fields, decoded on first use, read like the message's."""

    __slots__ = ("data", "_fields")
    _decode: Any = None

    def __init__(self, data: bytes) -> None:
        self.data = data
        self._fields: Any = None

    def __getattr__(self, name: str) -> Any:  # only for what is not a slot: the message's fields
        if name.startswith("_"):
            raise AttributeError(name)
        if self._fields is None:
            self._fields = type(self)._decode(self.data)
        return getattr(self._fields, name)

    def __len__(self) -> int:
        return len(self.data)


class SerializedJointState(_Serialized):
    """A serialised ``sensor_msgs/JointState`` (``.data``), decoded on demand.

    ``.header``, ``.name``, ``.position``, ``.velocity``, ``.effort`` decode it (ValueError when
    it is not one).

    ``.name`` and ``.position`` alone (the newest joint reading, every turn) are read through the
    layout of the driver's previous message when this one fits it, without decoding the rest.
    """

    __slots__ = ()
    _decode = staticmethod(decode_joint_state)
    _layout: JointStateLayout | None = None  # the last layout read (shared: one driver sends them all)

    def __getattr__(self, name: str) -> Any:
        if name not in ("name", "position") or self._fields is not None:
            return super().__getattr__(name)
        layout = SerializedJointState._layout
        if layout is None or not layout.fits(self.data):
            layout = SerializedJointState._layout = joint_state_layout(self.data)
        return layout.names if name == "name" else layout.positions(self.data)


class SerializedWrenchStamped(_Serialized):
    """A serialised ``geometry_msgs/WrenchStamped`` (``.data``); ``.header``, ``.wrench`` decode it."""

    __slots__ = ()
    _decode = staticmethod(decode_wrench_stamped)
