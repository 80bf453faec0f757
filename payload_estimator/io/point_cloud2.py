"""``sensor_msgs/PointCloud2`` without ROS: a camera's cloud decoded, and the layout of a cloud to publish.

:func:`cloud_from_message` reads any object with PointCloud2's fields: rclpy's messages (``data`` an
``array.array`` of bytes, ``fields`` a list of ``PointField``), rosbags' deserialised ones (``data`` a numpy
``uint8`` array) or anything duck-typed alike. It returns a :class:`ReceivedCloud`: the positions (fields
``x``, ``y``, ``z``) in the message's frame, the part labels (``part``, ``label`` or ``segment``, the first
present) and volumes (``volume``) when the cloud has them, its frame and stamp, and how many points were
dropped because their position was not finite (a depth camera's holes: dropped, not an error; ``is_dense``
is not trusted, every point is checked). Other fields (colours, normals, intensities) are ignored.

Every layout the message allows is read: any ``PointField`` datatype (INT8 to FLOAT64) for any field, either
byte order (``is_bigendian``), padding between and after fields (``point_step``), organised clouds
(``height`` > 1, read row by row) and padded rows (``row_step``); a field of several values (``count`` > 1)
gives its first. The decoding is one strided numpy view per field over the message's bytes, no loop over the
points (a 640 x 480 depth camera's cloud in a few ms: ``benchmarks/speed.py``).

A message that cannot be a cloud is refused with one line, a :class:`~payload_estimator.errors.ShapeError`:
no ``x``/``y``/``z`` field, an empty cloud, fewer bytes than its points need, no point of finite position,
a part label that is not a whole number or a volume that is not positive (among the points kept), a field
beyond ``point_step`` or of an unknown datatype. Nothing else is ever raised, whatever the message holds.
Whether the cloud may become the payload's shape is :func:`~payload_estimator.core.clouds.check_payload_cloud`'s
to say, once its points are in the sensor frame: :func:`~payload_estimator.core.clouds.cloud_shape` checks them
and makes the candidate point masses of PMD, with the cloud's parts and volumes.

:func:`point_cloud2_layout` is the inverse, for publishing: positions and named per-point values to
PointCloud2's field list, ``point_step`` and little-endian ``data`` bytes; the ROS layer puts them in a
message with its header.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from typing import Any

import numpy as np

from payload_estimator.core.clouds import PART_FIELDS, VOLUME_FIELDS, cloud_columns
from payload_estimator.errors import ShapeError

__all__ = [
    "INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32", "FLOAT32", "FLOAT64",
    "DATATYPES",
    "ReceivedCloud",
    "cloud_from_message",
    "FieldLayout",
    "CloudLayout",
    "point_cloud2_layout",
]

INT8, UINT8, INT16, UINT16, INT32, UINT32, FLOAT32, FLOAT64 = range(1, 9)
"""``sensor_msgs/PointField``'s datatypes."""
DATATYPES: dict[int, np.dtype] = {code: np.dtype(t) for code, t in zip(range(1, 9), "i1 u1 i2 u2 i4 u4 f4 f8".split())}
"""Each PointField datatype's numpy type (little-endian; the message's ``is_bigendian`` decides)."""
_WANTED = ("x", "y", "z", *PART_FIELDS, *VOLUME_FIELDS)
"""The fields a cloud is read for; any other is ignored."""


@dataclass(frozen=True, eq=False)
class ReceivedCloud:
    """A decoded PointCloud2: its points of finite position, their labels and volumes, where and when."""

    points: np.ndarray
    """(N, 3) positions, float64, m, in :attr:`frame_id` (read-only)."""
    part: np.ndarray | None
    """(N,) int64 part labels as the cloud gives them, or None without a part field (read-only)."""
    volume: np.ndarray | None
    """(N,) float64 positive volumes, or None without a volume field (read-only)."""
    frame_id: str
    """The header's frame, a leading ``/`` removed."""
    stamp_s: float
    """The header's stamp, s."""
    non_finite: int
    """How many of the message's points were dropped because their position was not finite."""

    def __len__(self) -> int:
        return len(self.points)


def _read(obj: Any, name: str) -> Any:
    try:
        return getattr(obj, name)
    except AttributeError:
        raise ShapeError(f"not a PointCloud2: no field {name!r}") from None
    except Exception as exc:  # a property of a duck-typed message that fails
        raise ShapeError(f"not a PointCloud2: its {name} cannot be read ({type(exc).__name__})") from None


def _whole(value: Any, name: str) -> int:
    """A message's unsigned integer field as an int."""
    try:
        number = operator.index(value)
    except TypeError:
        raise ShapeError(f"PointCloud2 {name} is not a whole number ({type(value).__name__})") from None
    if number < 0:
        raise ShapeError(f"PointCloud2 {name} is negative ({number})")
    return number


def _header(msg: Any) -> tuple[str, float]:
    header = _read(msg, "header")
    frame_id = str(_read(header, "frame_id")).lstrip("/")
    stamp = _read(header, "stamp")
    try:
        stamp_s = float(_read(stamp, "sec")) + float(_read(stamp, "nanosec")) * 1e-9
    except (TypeError, ValueError, OverflowError):
        raise ShapeError(f"PointCloud2 from {frame_id or 'no frame'}: its stamp is not a time") from None
    if not math.isfinite(stamp_s):
        raise ShapeError(f"PointCloud2 from {frame_id or 'no frame'}: its stamp is not finite")
    return frame_id, stamp_s


def _byte_array(data: Any, where: str) -> np.ndarray:
    """The message's ``data`` as a flat uint8 array, without a copy for bytes-like data."""
    if isinstance(data, np.ndarray):
        if data.dtype.itemsize != 1 or data.dtype.kind not in "uib":
            raise ShapeError(f"{where}data is not bytes (an array of {data.dtype})")
        return np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    try:
        view = memoryview(data)
    except TypeError:  # no buffer: a list of ints, say
        view = None
    if view is not None:
        try:
            if view.itemsize != 1:
                raise TypeError
            return np.frombuffer(view.cast("B") if view.format != "B" or view.ndim != 1 else view, dtype=np.uint8)
        except (TypeError, ValueError):  # items wider than a byte, not contiguous
            raise ShapeError(f"{where}data is not bytes ({type(data).__name__} of {view.format!r})") from None
    try:
        values = np.asarray(data)
        if values.ndim != 1 or not (values.size == 0 or values.dtype.kind in "iu"):
            raise TypeError
        if values.size and (values.min() < 0 or values.max() > 255):
            raise ValueError
        return values.astype(np.uint8)
    except (TypeError, ValueError, OverflowError):
        raise ShapeError(f"{where}data is not bytes ({type(data).__name__})") from None


def _field_table(msg: Any, where: str) -> dict[str, tuple[int, int]]:
    """The wanted fields' (offset, datatype), the first of each name."""
    try:
        fields = list(_read(msg, "fields"))
    except TypeError:
        raise ShapeError(f"{where}fields is not a list of PointField") from None
    table: dict[str, tuple[int, int]] = {}
    for field in fields:
        name = str(_read(field, "name"))
        if name not in _WANTED or name in table:
            continue
        offset, datatype = _whole(_read(field, "offset"), f"field {name}'s offset"), _read(field, "datatype")
        datatype = _whole(datatype, f"field {name}'s datatype")
        if datatype not in DATATYPES:
            raise ShapeError(f"{where}field {name} has datatype {datatype}, not one of PointField's 1 (INT8) to 8 "
                             "(FLOAT64)")
        if _whole(_read(field, "count"), f"field {name}'s count") == 0:
            raise ShapeError(f"{where}field {name} has count 0 (no value)")
        table[name] = (offset, datatype)
    return table


def _geometry(msg: Any, where: str) -> tuple[int, int, int, int]:
    """(height, width, point_step, row stride), checked against each other."""
    height, width = _whole(_read(msg, "height"), "height"), _whole(_read(msg, "width"), "width")
    point_step, row_step = _whole(_read(msg, "point_step"), "point_step"), _whole(_read(msg, "row_step"), "row_step")
    if height * width == 0:
        raise ShapeError(f"{where}an empty cloud (height {height}, width {width})")
    if point_step == 0:
        raise ShapeError(f"{where}point_step is 0")
    if height > 1 and row_step < width * point_step:
        raise ShapeError(f"{where}row_step {row_step} is shorter than a row of {width} points of {point_step} bytes")
    return height, width, point_step, row_step if height > 1 else width * point_step


def cloud_from_message(msg: Any) -> ReceivedCloud:
    """Decode a ``sensor_msgs/PointCloud2`` (module docstring); points of non-finite position dropped.

    Raises:
        ShapeError: one line naming what is wrong (module docstring); nothing else.
    """
    frame_id, stamp_s = _header(msg)
    where = f"PointCloud2 from {frame_id or 'no frame'}: "
    height, width, point_step, row_stride = _geometry(msg, where)
    table = _field_table(msg, where)
    try:
        big = bool(_read(msg, "is_bigendian"))
    except (TypeError, ValueError):
        raise ShapeError(f"{where}is_bigendian is not a bool") from None
    data = _byte_array(_read(msg, "data"), where)
    needed = (height - 1) * row_stride + width * point_step
    if len(data) < needed:
        raise ShapeError(f"{where}data holds {len(data)} bytes, {needed} needed for {height} x {width} points of "
                         f"{point_step} bytes" + (f" in rows of {row_stride}" if height > 1 else ""))
    columns: dict[str, np.ndarray] = {}
    packed = row_stride == width * point_step  # rows back to back: one flat view, no copy of padded rows
    shape, strides = ((height * width,), (point_step,)) if packed else ((height, width), (row_stride, point_step))
    for name, (offset, datatype) in table.items():
        dtype = DATATYPES[datatype].newbyteorder(">" if big else "<")
        if offset + dtype.itemsize > point_step:
            raise ShapeError(f"{where}field {name} at offset {offset} ({dtype.itemsize} bytes) lies beyond "
                             f"point_step {point_step}")
        columns[name] = np.ndarray(shape, dtype=dtype, buffer=data, offset=offset, strides=strides)
    read = cloud_columns(columns, where)
    for array in (read.points, read.part, read.volume):
        if array is not None:
            array.setflags(write=False)
    return ReceivedCloud(read.points, read.part, read.volume, frame_id, stamp_s, read.non_finite)


# ------------------------------------------------------------------ publishing
@dataclass(frozen=True)
class FieldLayout:
    """One ``sensor_msgs/PointField``: its name, byte offset in a point, datatype and count."""

    name: str
    offset: int
    datatype: int
    count: int = 1


@dataclass(frozen=True)
class CloudLayout:
    """What a PointCloud2 holds besides its header: an unorganised cloud (``height`` 1), little-endian."""

    fields: tuple[FieldLayout, ...]
    point_step: int
    width: int
    data: bytes
    is_dense: bool
    """Whether every position is finite."""
    height: int = 1
    is_bigendian: bool = False

    @property
    def row_step(self) -> int:
        """Bytes per row: the whole cloud's one row."""
        return self.point_step * self.width


_NUMPY_TO_DATATYPE = {np.dtype(t).str: code for code, t in zip(range(1, 9), "i1 u1 i2 u2 i4 u4 f4 f8".split())}


def _datatype_of(name: str, values: np.ndarray) -> int:
    """The datatype a per-point value is sent as.

    Floats as FLOAT32, integers in their own type or the narrowest 32-bit one that holds them, booleans as UINT8."""
    kind = values.dtype.kind
    if kind == "f":
        return FLOAT32
    if kind == "b":
        return UINT8
    if kind in "iu":
        code = _NUMPY_TO_DATATYPE.get(values.dtype.newbyteorder("<").str)
        if code is not None:
            return code
        low, high = (int(values.min()), int(values.max())) if values.size else (0, 0)
        if -(2**31) <= low and high < 2**31:
            return INT32
        if 0 <= low and high < 2**32:
            return UINT32
        raise ShapeError(f"field {name}: values {low} to {high} do not fit PointField's 32-bit integers")
    raise ShapeError(f"field {name}: values of type {values.dtype} are not numbers")


def point_cloud2_layout(points: np.ndarray, **scalar_fields: np.ndarray) -> CloudLayout:
    """The fields, ``point_step`` and ``data`` of a PointCloud2 holding ``points`` and one value per point each.

    Positions go first, as FLOAT32 ``x``, ``y``, ``z`` at offsets 0, 4, 8; then each of ``scalar_fields`` in
    the order given (e.g. ``mass=``, ``part=``, ``rgb=``), floats as FLOAT32, integers in their own type (a
    64-bit one as INT32 or UINT32 when its values fit), each at an offset aligned to its size, and
    ``point_step`` a multiple of the largest. PCL's colour is a FLOAT32 field ``rgb`` whose bits are
    ``0x00RRGGBB``: pass ``rgb=packed.view(np.float32)`` for a uint32 array ``packed``.

    Args:
        points: (N, 3) positions, m.
        **scalar_fields: (N,) arrays, one value per point; not named ``x``, ``y`` or ``z``.

    Raises:
        ShapeError: ``points`` not (N, 3), a field of another length or not numbers, integers beyond 32 bits.
    """
    xyz = np.asarray(points, dtype=np.float64)
    if xyz.ndim != 2 or xyz.shape[1] != 3:
        raise ShapeError(f"expected (N, 3) positions, got an array of shape {xyz.shape}")
    n = len(xyz)
    layout = [FieldLayout(axis, 4 * i, FLOAT32) for i, axis in enumerate("xyz")]
    columns: list[np.ndarray] = [xyz[:, 0], xyz[:, 1], xyz[:, 2]]
    end, align = 12, 4
    for name, given in scalar_fields.items():
        if name in ("x", "y", "z"):
            raise ShapeError(f"field {name}: the positions' own field, given by points")
        values = np.asarray(given)
        if values.shape != (n,):
            raise ShapeError(f"field {name}: {values.shape} values for {n} points, expected ({n},)")
        datatype = _datatype_of(name, values)
        size = DATATYPES[datatype].itemsize
        offset = -(-end // size) * size
        layout.append(FieldLayout(name, offset, datatype))
        columns.append(values)
        end, align = offset + size, max(align, size)
    point_step = -(-end // align) * align
    dtype = np.dtype({"names": [f.name for f in layout], "formats": [DATATYPES[f.datatype] for f in layout],
                      "offsets": [f.offset for f in layout], "itemsize": point_step})
    table = np.zeros(n, dtype=dtype)
    for f, values in zip(layout, columns):
        table[f.name] = values
    return CloudLayout(tuple(layout), point_step, n, table.tobytes(), is_dense=bool(np.isfinite(xyz).all()))
