"""ROS 2 messages in and out of the estimation stream, without importing ROS.

The rclpy node and ``payload-estimator replay`` share this module, so a bag
replayed offline runs exactly the pipeline the node runs live.

Inbound (``feed_*``) adapters are duck-typed: they read the fields of
``sensor_msgs/JointState``, ``geometry_msgs/WrenchStamped`` and
``sensor_msgs/Imu`` from rclpy messages, ``rosbags`` dataclasses or anything
with the same attributes, and push them into an
:class:`~payload_estimator.pipeline.stream.EstimationStream`. They never
raise on bad data: what the stream can judge (lengths, NaN, missing joints,
wrong frames, saturation) it counts; what only the message layer sees is
counted here under :data:`UNSTAMPED`, :data:`IMU_FIELD_ABSENT` and
:data:`MALFORMED`.

Outbound builders turn estimates, markers and diagnostics into plain field
dictionaries and hand them to a :data:`MessageFactory`, which makes the
actual message: :func:`rclpy_factory` for the node, :func:`rosbags_factory`
for bags and tests.

Times: a message stamp (``builtin_interfaces/Time``) is read as seconds on
the publisher's clock; a zero stamp means "unstamped" and falls back to the
receive time ``wall_time`` when one is given.
"""

from __future__ import annotations

import keyword
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from payload_estimator.core.inertia import InertialParameters, to_ros_inertia_fields
from payload_estimator.outputs.markers import MarkerSpec
from payload_estimator.pipeline.health import NON_FINITE
from payload_estimator.pipeline.stream import IMU, JOINTS, WRENCH, EstimationStream, StreamEstimate

__all__ = [
    "MessageFactory",
    "KINDS",
    "UNSTAMPED",
    "IMU_FIELD_ABSENT",
    "MALFORMED",
    "OK",
    "WARN",
    "ERROR",
    "STALE",
    "stamp_to_sec",
    "sec_to_stamp_fields",
    "feed_joint_state",
    "feed_wrench",
    "feed_imu",
    "feed",
    "feed_many",
    "rclpy_factory",
    "rosbags_factory",
    "payload_estimate_msg",
    "inertia_stamped_msg",
    "marker_array_msg",
    "diagnostic_array_msg",
    "recent_counts",
    "string_msg",
    "joint_state_msg",
    "wrench_stamped_msg",
    "imu_msg",
]

MessageFactory = Callable[[str, dict[str, Any]], Any]
"""``(type name "pkg/msg/Type", fields) -> message``; nested dicts are nested messages."""

KINDS: tuple[str, ...] = (JOINTS, WRENCH, IMU)
"""The input kinds :func:`feed` accepts (the stream names of the diagnostics)."""

UNSTAMPED = "unstamped"
"""A message whose header stamp is zero; its receive time is used, or it is dropped without one."""
IMU_FIELD_ABSENT = "imu_field_absent"
"""An IMU message whose gyro or accelerometer covariance[0] is -1 (the field is absent); dropped."""
MALFORMED = "malformed_message"
"""A message whose fields cannot be read as numbers of the expected shape; dropped."""

OK, WARN, ERROR, STALE = 0, 1, 2, 3
"""``diagnostic_msgs/DiagnosticStatus`` levels."""

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


def _stamp_fields(stamp: float | Mapping[str, int]) -> dict[str, int]:
    if isinstance(stamp, Mapping):
        return {"sec": int(stamp["sec"]), "nanosec": int(stamp["nanosec"])}
    return sec_to_stamp_fields(stamp)


def _header(frame_id: str, stamp: float | Mapping[str, int]) -> dict[str, Any]:
    return {"stamp": _stamp_fields(stamp), "frame_id": str(frame_id)}


# ---------------------------------------------------------------------- inbound


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
    (gripper fingers); velocities are read only when the stream uses them.

    Args:
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
    except (AttributeError, TypeError, ValueError) as exc:
        return _malformed(stream, JOINTS, "JointState", exc)
    try:
        return stream.push_joint_states(stamp, positions, names, velocities, wall_time=wall_time)
    except (TypeError, ValueError, IndexError) as exc:
        return _malformed(stream, JOINTS, "JointState", exc)


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
    except (AttributeError, TypeError, ValueError) as exc:
        return _malformed(stream, WRENCH, "WrenchStamped", exc)
    if not (np.all(np.isfinite(force)) and np.all(np.isfinite(torque))):
        # counted here: the saturation check would otherwise call a NaN sample saturated
        stream.health.report(NON_FINITE, "1 samples with NaN/inf dropped", WRENCH)
        return False
    try:
        return stream.push_wrench(stamp, force, torque, frame_id=frame_id, wall_time=wall_time)
    except (TypeError, ValueError, IndexError) as exc:
        return _malformed(stream, WRENCH, "WrenchStamped", exc)


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
    except (AttributeError, TypeError, ValueError, IndexError) as exc:
        return _malformed(stream, IMU, "Imu", exc)
    try:
        return stream.push_imu(stamp, gyro, accel, frame_id=frame_id, wall_time=wall_time)
    except (TypeError, ValueError, IndexError) as exc:
        return _malformed(stream, IMU, "Imu", exc)


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


# -------------------------------------------------------------------- factories

_SEQUENCE_OF = re.compile(r"^sequence<(\w+)/(\w+)(?:, *\d+)?>$")
_ARRAY_OF = re.compile(r"^(\w+)/(\w+)\[\d+\]$")


def feed_many(stream: EstimationStream, items: Iterable[tuple[str, Any, float | None]]) -> dict[str, int]:
    """Feed ``(kind, msg, wall_time)`` items in order; returns how many of each kind were accepted.

    The same samples and the same counted problems as calling :func:`feed` on
    each, several times cheaper at 1 kHz: consecutive joint states with the
    same name list, and consecutive wrenches in the same frame, go into the
    stream as one batch. Anything unusual (an unstamped or unreadable message,
    uneven arrays, an IMU sample) takes the one-by-one path.
    """
    accepted = {kind: 0 for kind in KINDS}
    run: list[tuple[Any, float | None]] = []
    run_kind: str | None = None
    run_key: Any = None

    def flush() -> None:
        nonlocal accepted, run, run_kind, run_key
        if run:
            if run_kind == JOINTS:
                accepted[JOINTS] += _flush_joint_states(stream, run_key, run)
            else:
                accepted[WRENCH] += _flush_wrenches(stream, run_key, run)
        run, run_kind, run_key = [], None, None

    for kind, msg, wall_time in items:
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


def _batch_key(kind: str, msg: Any) -> Any:
    """What messages must share to go into the stream as one batch, or None for the one-by-one path."""
    try:
        if msg.header.stamp.sec == 0 and msg.header.stamp.nanosec == 0:
            return None  # unstamped: the single path counts it
        if kind == JOINTS:
            return tuple(msg.name)
        if kind == WRENCH:
            return _frame(msg.header.frame_id)
    except (AttributeError, TypeError):
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
    except (AttributeError, TypeError, ValueError):
        return sum(bool(feed_joint_state(stream, msg, wall)) for msg, wall in run)
    ok = stream.push_joint_states(stamps, q, [str(x) for x in names], dq, wall_time=run[-1][1])
    return len(run) if ok else 0


def _flush_wrenches(stream: EstimationStream, frame_id: str, run: list) -> int:
    try:
        stamps = np.array([stamp_to_sec(msg.header.stamp) for msg, _ in run])
        w = np.array([(m.wrench.force.x, m.wrench.force.y, m.wrench.force.z,
                       m.wrench.torque.x, m.wrench.torque.y, m.wrench.torque.z) for m, _ in run], dtype=float)
    except (AttributeError, TypeError, ValueError):
        return sum(bool(feed_wrench(stream, msg, wall)) for msg, wall in run)
    finite = np.all(np.isfinite(w), axis=1)
    bad = int((~finite).sum())
    if bad:
        # counted here, as feed_wrench does: the saturation check would call NaN saturated
        stream.health.report(NON_FINITE, f"{bad} samples with NaN/inf dropped", WRENCH, bad)
        stamps, w = stamps[finite], w[finite]
    if len(stamps) == 0:
        return 0
    return stream.push_wrench(stamps, w[:, :3], w[:, 3:], frame_id=frame_id, wall_time=run[-1][1])


def rclpy_factory() -> MessageFactory:
    """A factory of rclpy messages (needs a sourced ROS 2; imported lazily).

    Only the given fields are set (``rosidl_runtime_py.set_message_fields``);
    integers for ``byte``/``octet`` fields become the one-byte ``bytes`` rclpy
    wants, numpy scalars become Python numbers and numpy arrays fill sequences.
    """
    from rosidl_runtime_py.set_message import set_message_fields
    from rosidl_runtime_py.utilities import get_message

    def element_template(msg: Any, name: str) -> Any | None:
        typ = msg.get_fields_and_field_types().get(name, "")
        match = _SEQUENCE_OF.match(typ) or _ARRAY_OF.match(typ)
        return get_message(f"{match.group(1)}/msg/{match.group(2)}")() if match else None

    def for_rclpy(template: Any, values: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, value in values.items():
            current = getattr(template, name)
            if isinstance(value, Mapping):
                value = for_rclpy(current, value)
            elif isinstance(current, bytes) and isinstance(value, (int, np.integer)):
                value = bytes([int(value)])
            elif isinstance(value, (list, tuple)) and value and isinstance(value[0], Mapping):
                element = element_template(template, name)
                value = [for_rclpy(element, v) for v in value] if element is not None else list(value)
            elif isinstance(value, np.ndarray) and not isinstance(current, np.ndarray):
                value = value.tolist()
            elif isinstance(value, np.generic):
                value = value.item()
            out[name] = value
        return out

    def make(typename: str, fields: dict[str, Any]) -> Any:
        msg = get_message(typename)()
        set_message_fields(msg, for_rclpy(msg, fields))
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


# ---------------------------------------------------------------- field helpers


def _vector3(v: Sequence[float] | np.ndarray) -> dict[str, float]:
    x, y, z = (float(c) for c in np.asarray(v, dtype=float).reshape(3))
    return {"x": x, "y": y, "z": z}


def _quaternion(xyzw: Sequence[float] | np.ndarray) -> dict[str, float]:
    x, y, z, w = (float(c) for c in np.asarray(xyzw, dtype=float).reshape(4))
    return {"x": x, "y": y, "z": z, "w": w}


def _color(rgba: Sequence[float] | np.ndarray) -> dict[str, float]:
    r, g, b, a = (float(c) for c in np.asarray(rgba, dtype=float).reshape(4))
    return {"r": r, "g": g, "b": b, "a": a}


def _fixed(values: Any, n: int) -> np.ndarray:
    """``n`` floats; NaN when ``values`` is missing or of another size."""
    arr = np.full(n, np.nan) if values is None else np.asarray(values, dtype=float).reshape(-1)
    return arr if arr.shape == (n,) else np.full(n, np.nan)


def _inertia_fields(params: InertialParameters) -> dict[str, Any]:
    """``geometry_msgs/Inertia``: mass, COM and the inertia about the COM (frame axes)."""
    f = to_ros_inertia_fields(params)
    return {"m": float(f["m"]), "com": _vector3(f["com"]), **{k: float(f[k]) for k in
            ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}}


# --------------------------------------------------------------------- outbound


def payload_estimate_msg(factory: MessageFactory, out: StreamEstimate, frame_id: str, flange_frame: str) -> Any:
    """``payload_estimator/msg/PayloadEstimate`` of a stream estimate (every field; SI units).

    ``frame_id`` is the frame the estimate is in (the stream's sensor frame);
    ``header.stamp`` is ``out.t``. Unknown uncertainties are NaN.
    """
    est = out.estimate
    known_covariance = est.covariance is not None
    bias = _fixed(est.bias, 6) if est.bias is not None else np.zeros(6)
    fields = {
        "header": _header(frame_id, out.t),
        "estimator": est.method,
        "mass": float(est.mass),
        "com": _vector3(est.com),
        "inertia": _inertia_fields(est.params),
        "phi": _fixed(est.phi, 10),
        "phi_covariance": _fixed(est.covariance, 100) if known_covariance else np.full(100, np.nan),
        "mass_std": float(est.mass_std),
        "com_std": _vector3(est.com_std),
        "flange_frame": flange_frame,
        "inertia_in_flange": _inertia_fields(out.params_in_flange),
        "bias_estimated": est.bias is not None,
        "bias": {"force": _vector3(bias[:3]), "torque": _vector3(bias[3:])},
        "samples_used": int(min(max(est.samples_used, 0), 2**32 - 1)),
        "dynamism": float(est.dynamism),
        "condition_number": float(est.condition_number),
        "residual_rms": _fixed(est.residual_rms, 6),
        "inertia_identifiable": bool(est.inertia_identifiable),
        "physically_consistent": bool(est.physically_consistent),
        "converged": bool(out.converged),
        "status": "converged" if out.converged else (out.reason or "not converged"),
    }
    return factory("payload_estimator/msg/PayloadEstimate", fields)


def inertia_stamped_msg(
    factory: MessageFactory, params: InertialParameters, frame_id: str, stamp_sec: float | Mapping[str, int]
) -> Any:
    """``geometry_msgs/InertiaStamped``: mass (kg), COM (m) and inertia about the COM (kg m², ``frame_id`` axes)."""
    return factory("geometry_msgs/msg/InertiaStamped",
                   {"header": _header(frame_id, stamp_sec), "inertia": _inertia_fields(params)})


_MARKER_TYPES = {"cube": 1, "sphere": 2, "sphere_list": 7}  # visualization_msgs/Marker constants
_MARKER_ADD, _MARKER_DELETEALL = 0, 3


def marker_array_msg(
    factory: MessageFactory, markers: Sequence[MarkerSpec], frame_id: str, stamp_sec: float | Mapping[str, int]
) -> Any:
    """``visualization_msgs/MarkerArray``: a DELETEALL, then one ADD per spec (poses in ``frame_id``, m).

    The markers are frame-locked, so rviz moves them with the frame between updates.
    """
    header = _header(frame_id, stamp_sec)
    items: list[dict[str, Any]] = [{"header": header, "action": _MARKER_DELETEALL}]
    for spec in markers:
        try:
            kind = _MARKER_TYPES[spec.kind]
        except KeyError:
            raise ValueError(f"unknown marker kind {spec.kind!r}") from None
        items.append({
            "header": header,
            "ns": spec.ns,
            "id": int(spec.marker_id),
            "type": kind,
            "action": _MARKER_ADD,
            "pose": {"position": _vector3(spec.position), "orientation": _quaternion(spec.orientation_xyzw)},
            "scale": _vector3(spec.scale),
            "color": _color(spec.color),
            "frame_locked": True,
            "points": [_vector3(p) for p in np.asarray(spec.points, dtype=float).reshape(-1, 3)],
            "colors": [_color(c) for c in np.asarray(spec.colors, dtype=float).reshape(-1, 4)],
        })
    return factory("visualization_msgs/msg/MarkerArray", {"markers": items})


def recent_counts(previous: Mapping[str, int], current: Mapping[str, int]) -> dict[str, int]:
    """Problems counted since ``previous`` (a former ``diagnostics()["counts"]``), per reason, positive only.

    A node that keeps the counts of its last publication passes this as
    ``diagnostics["recent_counts"]`` to :func:`diagnostic_array_msg`.
    """
    return {k: int(v) - int(previous.get(k, 0)) for k, v in current.items() if int(v) > int(previous.get(k, 0))}


def _number(x: Any, digits: int = 1) -> str:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return str(x)
    return f"{x:.{digits}f}" if math.isfinite(x) else "n/a"


def _key_values(pairs: Mapping[str, Any]) -> list[dict[str, str]]:
    return [{"key": str(k), "value": str(v)} for k, v in pairs.items()]


def _inputs_status(diag: Mapping[str, Any], name: str, hardware_id: str) -> dict[str, Any]:
    streams: Mapping[str, Mapping[str, Any]] = diag.get("streams", {}) or {}
    stale = list(diag.get("stale_streams", []) or [])
    values: dict[str, Any] = {}
    for stream, info in streams.items():
        values[f"{stream} rate (Hz)"] = _number(info.get("rate_hz"))
        values[f"{stream} samples"] = info.get("samples", 0)
        values[f"{stream} last stamp (s)"] = _number(info.get("last_stamp"), 3)
    values["stale"] = ", ".join(stale) or "none"
    values["paused"] = bool(diag.get("paused", False))
    if stale and streams and set(stale) >= set(streams):
        level, message = STALE, "no input: " + ", ".join(stale)
    elif stale:
        level, message = WARN, "stale: " + ", ".join(stale)
    else:
        level, message = OK, "receiving " + ", ".join(
            f"{s} at {_number(i.get('rate_hz'), 0)} Hz" for s, i in streams.items())
    return {"level": level, "name": f"{name}: inputs", "message": message, "hardware_id": hardware_id,
            "values": _key_values(values)}


def _rejected_status(diag: Mapping[str, Any], name: str, hardware_id: str) -> dict[str, Any]:
    counts: Mapping[str, int] = diag.get("counts", {}) or {}
    recent: Mapping[str, int] | None = diag.get("recent_counts")
    stale = list(diag.get("stale_streams", []) or [])
    values = {f"total {reason}": n for reason, n in sorted(counts.items())}
    if recent is not None:
        values.update({f"recent {reason}": n for reason, n in sorted(recent.items())})
    warn = bool(stale) or (recent is not None and any(int(n) > 0 for n in recent.values()))
    if recent:
        message = "rejected recently: " + ", ".join(f"{n} {r}" for r, n in sorted(recent.items()) if int(n) > 0)
    elif counts:
        message = f"{sum(int(n) for n in counts.values())} input problems in total"
    else:
        message = "no input rejected"
    if stale and not recent:
        message += "; stale: " + ", ".join(stale)
    return {"level": WARN if warn else OK, "name": f"{name}: rejected input", "message": message,
            "hardware_id": hardware_id, "values": _key_values(values)}


def _estimate_status(diag: Mapping[str, Any], name: str, hardware_id: str) -> dict[str, Any]:
    converged = bool(diag.get("converged", False))
    reason = str(diag.get("convergence", ""))
    values = {
        "converged": converged,
        "convergence": reason,
        "samples processed": diag.get("samples_processed", 0),
        "samples used": diag.get("samples_used", 0),
        "paused": bool(diag.get("paused", False)),
    }
    for stream, size in (diag.get("buffer_sizes", {}) or {}).items():
        values[f"{stream} buffered"] = size
    message = "converged" if converged else (reason or "not converged")
    if diag.get("paused"):
        message = "paused; " + message
    return {"level": OK if converged else WARN, "name": f"{name}: estimate", "message": message,
            "hardware_id": hardware_id, "values": _key_values(values)}


def diagnostic_array_msg(
    factory: MessageFactory, diagnostics: Mapping[str, Any], node_name: str, stamp_sec: float | Mapping[str, int]
) -> Any:
    """``diagnostic_msgs/DiagnosticArray`` of :meth:`EstimationStream.diagnostics` (three statuses).

    * ``<node>: inputs``: rate, samples and last stamp per stream; STALE when
      every stream is stale, WARN when some are, else OK.
    * ``<node>: rejected input``: total counts per reason (and ``recent_counts``
      when the caller adds them, see :func:`recent_counts`); WARN when a stream
      is stale or a recent count is positive, else OK. Totals alone never warn:
      a snapshot cannot tell old problems from new ones.
    * ``<node>: estimate``: OK when converged, else WARN with the reason.
    """
    hardware_id = node_name
    statuses = [
        _inputs_status(diagnostics, node_name, hardware_id),
        _rejected_status(diagnostics, node_name, hardware_id),
        _estimate_status(diagnostics, node_name, hardware_id),
    ]
    return factory("diagnostic_msgs/msg/DiagnosticArray",
                   {"header": _header("", stamp_sec), "status": statuses})


def string_msg(factory: MessageFactory, text: str) -> Any:
    """``std_msgs/String``."""
    return factory("std_msgs/msg/String", {"data": str(text)})


# ------------------------------------------------ inbound types (sim, bags, tests)


def joint_state_msg(
    factory: MessageFactory,
    stamp: float | Mapping[str, int],
    names: Sequence[str],
    positions: Sequence[float] | np.ndarray,
    velocities: Sequence[float] | np.ndarray = (),
    efforts: Sequence[float] | np.ndarray = (),
    frame_id: str = "",
) -> Any:
    """``sensor_msgs/JointState`` (rad, rad/s, N m); ``stamp`` in s or as ``{"sec", "nanosec"}``."""
    return factory("sensor_msgs/msg/JointState", {
        "header": _header(frame_id, stamp),
        "name": [str(n) for n in names],
        "position": np.asarray(positions, dtype=float),
        "velocity": np.asarray(velocities, dtype=float),
        "effort": np.asarray(efforts, dtype=float),
    })


def wrench_stamped_msg(
    factory: MessageFactory,
    stamp: float | Mapping[str, int],
    frame_id: str,
    force: Sequence[float] | np.ndarray,
    torque: Sequence[float] | np.ndarray,
) -> Any:
    """``geometry_msgs/WrenchStamped``: force (N) and torque (N m), components in ``frame_id``."""
    return factory("geometry_msgs/msg/WrenchStamped", {
        "header": _header(frame_id, stamp),
        "wrench": {"force": _vector3(force), "torque": _vector3(torque)},
    })


def imu_msg(
    factory: MessageFactory,
    stamp: float | Mapping[str, int],
    frame_id: str,
    angular_velocity: Sequence[float] | np.ndarray,
    linear_acceleration: Sequence[float] | np.ndarray,
) -> Any:
    """``sensor_msgs/Imu`` without orientation (``orientation_covariance[0] = -1``), covariances unknown (0).

    ``angular_velocity`` in rad/s and ``linear_acceleration`` (specific force, +g up at rest)
    in m/s², both in ``frame_id``.
    """
    no_orientation = np.zeros(9)
    no_orientation[0] = -1.0
    return factory("sensor_msgs/msg/Imu", {
        "header": _header(frame_id, stamp),
        "orientation": {"x": 0.0, "y": 0.0, "z": 0.0, "w": 1.0},
        "orientation_covariance": no_orientation,
        "angular_velocity": _vector3(angular_velocity),
        "linear_acceleration": _vector3(linear_acceleration),
    })
