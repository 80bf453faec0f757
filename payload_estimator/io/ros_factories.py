"""Message factories and stamps: what both directions of the ROS message layer share (ROS-free).

Builders (:mod:`payload_estimator.io.ros_outbound`) describe a message as a
plain field dictionary and hand it to a :data:`MessageFactory`, which makes
the actual message: :func:`rclpy_factory` for the nodes (rclpy messages,
imported lazily), :func:`rosbags_factory` for bags and tests (``rosbags``
dataclasses). Adapters (:mod:`payload_estimator.io.ros_inbound`) read stamps
with :func:`stamp_to_sec`.

Times: a ``builtin_interfaces/Time`` stamp is ``{"sec", "nanosec"}`` with
``0 <= nanosec < 1e9``, read as seconds on the publisher's clock; a zero
stamp means "unstamped". Builders accept a stamp either as seconds (float)
or as those fields (:func:`stamp_fields`), so an exact integer-ns stamp
survives unrounded.
"""

from __future__ import annotations

import array
import functools
import importlib
import keyword
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

__all__ = [
    "MessageFactory",
    "stamp_to_sec",
    "sec_to_stamp_fields",
    "stamp_fields",
    "header_fields",
    "message_class",
    "fill_message",
    "rclpy_factory",
    "rosbags_factory",
]

MessageFactory = Callable[[str, dict[str, Any]], Any]
"""``(type name "pkg/msg/Type", fields) -> message``; nested dicts are nested messages."""

_NS_PER_S = 1_000_000_000

# ----------------------------------------------------------------------- stamps


def stamp_to_sec(stamp: Any) -> float:
    """A ``builtin_interfaces/Time``-like stamp (``.sec``, ``.nanosec``) in seconds."""
    return float(stamp.sec) + float(stamp.nanosec) * 1e-9


def sec_to_stamp_fields(t: float) -> dict[str, int]:
    """Seconds -> ``{"sec", "nanosec"}`` with ``0 <= nanosec < 1e9`` (negative times have negative ``sec``).

    Raises:
        ValueError: ``t`` is not finite.
    """
    t = float(t)
    if not math.isfinite(t):
        raise ValueError(f"cannot stamp a non-finite time {t}")
    sec = math.floor(t)
    nanosec = int(round((t - sec) * _NS_PER_S))
    if nanosec >= _NS_PER_S:  # rounding reached the next second
        sec, nanosec = sec + 1, nanosec - _NS_PER_S
    return {"sec": int(sec), "nanosec": nanosec}


def stamp_fields(stamp: float | Mapping[str, int]) -> dict[str, int]:
    """``builtin_interfaces/Time`` fields of a stamp given in s or already as ``{"sec", "nanosec"}``."""
    if isinstance(stamp, Mapping):
        return {"sec": int(stamp["sec"]), "nanosec": int(stamp["nanosec"])}
    return sec_to_stamp_fields(stamp)


def header_fields(frame_id: str, stamp: float | Mapping[str, int]) -> dict[str, Any]:
    """``std_msgs/Header`` fields: ``stamp`` (s, or ``{"sec", "nanosec"}``) and ``frame_id``."""
    return {"stamp": stamp_fields(stamp), "frame_id": str(frame_id)}


# -------------------------------------------------------------------- factories

_SEQUENCE_OF = re.compile(r"^sequence<(\w+)/(\w+)(?:, *\d+)?>$")
_ARRAY_OF = re.compile(r"^(\w+)/(\w+)\[\d+\]$")


def message_class(type_name: str) -> Any:
    """The rclpy class of ``"pkg/msg/Type"`` (or ``pkg/srv/...``, ``pkg/action/...``), imported from ``pkg.msg``.

    What ``rosidl_runtime_py.utilities.get_message`` does, without needing that
    package (it has no wheel). Raises ``ImportError`` when the package is not
    installed (no sourced ROS 2), ``AttributeError`` when it has no such type.
    """
    package, kind, name = type_name.split("/")
    return _message_class(package, kind, name)


@functools.cache
def _message_class(package: str, kind: str, name: str) -> Any:
    return getattr(importlib.import_module(f"{package}.{kind}"), name)


_ELEMENTS: dict[tuple[type, str], Any] = {}


def _element_class(owner: type, name: str) -> Any | None:
    """The message class of the elements of ``owner``'s sequence or array field ``name`` (None: not messages)."""
    key = (owner, name)
    if key not in _ELEMENTS:
        typ = owner.get_fields_and_field_types().get(name, "")  # type: ignore[attr-defined]
        match = _SEQUENCE_OF.match(typ) or _ARRAY_OF.match(typ)
        _ELEMENTS[key] = message_class(f"{match.group(1)}/msg/{match.group(2)}") if match else None
    return _ELEMENTS[key]


_BASIC = (bool, int, float, str, bytes)


def fill_message(msg: Any, values: Mapping[str, Any]) -> None:
    """Set the fields ``values`` names on the rclpy message (or service request) ``msg``; the others keep theirs.

    The conversions of ``rosidl_runtime_py.set_message_fields``: a value of
    another basic type is converted to the field's, nested messages come from
    mappings (and sequences of them from lists of mappings); integers for
    ``byte``/``octet`` fields become the one-byte ``bytes`` rclpy wants, numpy
    scalars become Python numbers and numpy arrays fill sequences. Raises
    ``AttributeError`` for a field the type lacks, and ``TypeError``,
    ``ValueError`` or rclpy's ``AssertionError`` for a value the field refuses.
    """
    for name, value in values.items():
        current = getattr(msg, name)  # AttributeError: no such field
        if isinstance(value, Mapping):
            nested = type(current)()
            fill_message(nested, value)
            value = nested
        elif isinstance(current, bytes) and isinstance(value, (int, np.integer)):
            value = bytes([int(value)])
        elif isinstance(value, (list, tuple)) and value and isinstance(value[0], Mapping):
            cls = _element_class(type(msg), name)
            if cls is not None:
                built = []
                for v in value:
                    element = cls()
                    fill_message(element, v)
                    built.append(element)
                value = built
            else:
                value = list(value)
        elif isinstance(value, np.ndarray) and not isinstance(current, np.ndarray):
            value = value.tolist()
        elif isinstance(value, np.generic):
            value = value.item()
        kind = type(current)
        if kind is array.array:
            value = array.array(current.typecode, value)
        elif kind is np.ndarray:
            value = np.array(value, dtype=current.dtype)
        elif kind is list:
            value = list(value)
        elif kind in _BASIC and type(value) is not kind:
            value = kind(value)
        setattr(msg, name, value)


def rclpy_factory() -> MessageFactory:
    """A factory of rclpy messages (needs ROS 2's Python packages; imported lazily, ``ImportError`` without rclpy).

    Only the given fields are set, by :func:`fill_message`. Message classes and
    the element types of sequences are looked up once per type (the node builds
    its markers, estimate and diagnostics with it at publish_rate_hz).
    """
    import rclpy  # noqa: F401 - a clear ImportError here rather than at the first message

    def make(typename: str, fields: dict[str, Any]) -> Any:
        msg = message_class(typename)()
        fill_message(msg, fields)
        return msg

    return make


_ROSBAGS_DTYPES = {"bool": "bool", "byte": "uint8", "char": "uint8", "octet": "uint8"}

_NONZERO_DEFAULTS: dict[str, dict[str, Any]] = {
    "geometry_msgs/msg/Quaternion": {"w": 1.0},
    "sensor_msgs/msg/NavSatStatus": {"status": -2},
}
"""Field defaults of the Jazzy definitions that are not zero (``rosbags`` type stores drop defaults;
found with a grep of ``share/*/msg/*.msg``), so both factories build the same message."""


def rosbags_factory(typestore: Any) -> MessageFactory:
    """A factory of ``rosbags`` message dataclasses from ``typestore``.

    Every field not given gets its default, recursively (0, "", False, empty
    sequences, zero-filled fixed arrays, default nested messages; the few
    non-zero defaults of the definitions, like ``Quaternion.w = 1``), so builders
    name only the fields they mean and work across distros (Jazzy's ``Marker``
    has fields Humble's lacks). Numbers are converted to the field's type and
    numeric arrays to numpy arrays of its dtype.

    Raises (on use):
        KeyError: unknown type; AttributeError: a field the type does not have;
        ValueError: a fixed-size array of the wrong length.
    """
    from rosbags.interfaces import Nodetype

    def base_value(basetype: str, value: Any) -> Any:
        if basetype in ("string", "wstring"):
            return "" if value is None else str(value)
        if basetype == "bool":
            return bool(value) if value is not None else False
        if basetype.startswith("float"):
            return float(value) if value is not None else 0.0
        if isinstance(value, (bytes, bytearray)):
            return int(value[0]) if len(value) else 0
        return int(value) if value is not None else 0

    def field_value(desc: Any, value: Any) -> Any:
        node, detail = desc
        if node == Nodetype.BASE:
            return base_value(detail[0], value)
        if node == Nodetype.NAME:
            if value is not None and hasattr(value, "__msgtype__"):
                return value
            return build(detail, value or {})
        (inner_node, inner), size = detail
        fixed = size if node == Nodetype.ARRAY else None
        if inner_node == Nodetype.BASE and inner[0] not in ("string", "wstring"):
            dtype = np.dtype(_ROSBAGS_DTYPES.get(inner[0], inner[0]))
            if value is None:
                return np.zeros(fixed or 0, dtype=dtype)
            arr = np.array(value, dtype=dtype).reshape(-1)
            if fixed is not None and len(arr) != fixed:
                raise ValueError(f"fixed array of {fixed} elements given {len(arr)}")
            return arr
        items = list(value) if value is not None else [None] * (fixed or 0)
        if fixed is not None and len(items) != fixed:
            raise ValueError(f"fixed array of {fixed} elements given {len(items)}")
        return [field_value((inner_node, inner), v) for v in items]

    def build(typename: str, fields: Mapping[str, Any]) -> Any:
        _, fielddefs = typestore.fielddefs[typename]
        known = {name for name, _ in fielddefs}
        unknown = sorted(set(fields) - known)
        if unknown:
            raise AttributeError(f"{typename} has no field(s) {', '.join(unknown)}")
        defaults = _NONZERO_DEFAULTS.get(typename, {})
        kwargs = {}
        for name, desc in fielddefs:
            key = f"{name}_" if keyword.iskeyword(name) else name  # as rosbags names them
            kwargs[key] = field_value(desc, fields.get(name, defaults.get(name)))
        return typestore.types[typename](**kwargs)

    return build
