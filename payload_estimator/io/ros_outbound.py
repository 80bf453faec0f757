"""Estimates and diagnostics out as ROS 2 messages, and the simulator's sensor messages (ROS-free).

Every builder describes its message as a plain field dictionary and hands it
to a :data:`~payload_estimator.io.ros_factories.MessageFactory`, which makes
the actual message (rclpy for the nodes, ``rosbags`` for bags and tests):

* the estimator's outputs: ``PayloadEstimate``, ``InertiaStamped``,
  ``MarkerArray``, ``DiagnosticArray`` (levels:
  :class:`~payload_estimator.io.diagnostic_level.DiagnosticLevel`),
  ``String``;
* what the simulator publishes or records as a robot's drivers would:
  ``JointState``, ``WrenchStamped``, ``Imu``.

Units are SI (kg, m, kg m², N, N·m, rad, rad/s, m/s²); every pose, vector and
inertia is in the ``frame_id`` the caller names, which goes into the header.
Stamps are given in s or as ``{"sec", "nanosec"}``
(:func:`~payload_estimator.io.ros_factories.stamp_fields`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from payload_estimator.core.inertia import InertialParameters, to_ros_inertia_fields
from payload_estimator.core.tracking import TrackingState
from payload_estimator.io.diagnostic_level import DiagnosticLevel
from payload_estimator.io.point_cloud2 import point_cloud2_layout
from payload_estimator.io.ros_factories import MessageFactory, header_fields, stamp_fields
from payload_estimator.outputs.markers import MarkerSpec
from payload_estimator.pipeline.stream import StreamEstimate

__all__ = [
    "payload_estimate_msg",
    "inertia_stamped_msg",
    "marker_array_msg",
    "diagnostic_array_msg",
    "recent_counts",
    "string_msg",
    "joint_state_msg",
    "wrench_stamped_msg",
    "imu_msg",
    "point_cloud2_msg",
    "mass_colours",
]

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
    return {"m": float(f["m"]), "com": _vector3(f["com"]),
            "ixx": float(f["ixx"]), "ixy": float(f["ixy"]), "ixz": float(f["ixz"]),
            "iyy": float(f["iyy"]), "iyz": float(f["iyz"]), "izz": float(f["izz"])}


# ---------------------------------------------------------- estimator outputs


def payload_estimate_msg(factory: MessageFactory, out: StreamEstimate, frame_id: str, flange_frame: str,
                         stale: bool = False, age: float = 0.0, payload_changed: bool = False) -> Any:
    """``payload_estimator/msg/PayloadEstimate`` of a stream estimate (every field; SI units).

    ``frame_id`` is the frame the estimate is in (the stream's sensor frame);
    ``header.stamp`` is ``out.t``. Unknown uncertainties are NaN. ``stale``: the
    estimate is the last good one, republished while it cannot be updated;
    ``age``: s since it last took in new samples (the node's clock);
    ``payload_changed``: a change was detected since the previous message (the publisher knows).
    """
    est = out.estimate
    known_covariance = est.covariance is not None
    bias = _fixed(est.bias, 6) if est.bias is not None else np.zeros(6)
    fields = {
        "header": header_fields(frame_id, out.t),
        "estimator": est.estimator,
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
        "samples_used": _uint32(est.samples_used),
        "dynamism": float(est.dynamism),
        "condition_number": float(est.condition_number),
        "residual_rms": _fixed(est.residual_rms, 6),
        "inertia_std": _fixed(est.inertia_com_std, 6) if known_covariance else np.full(6, np.nan),
        "inertia_identifiable": bool(est.inertia_identifiable),
        "inertia_source": est.identification.inertia,
        "not_identified": ", ".join(est.identification.missing()),
        "physically_consistent": bool(est.physically_consistent),
        "model_fit": est.model_fit.label,
        "model_fit_cause": est.model_fit.cause,
        "converged": bool(out.converged),
        "mass_com_converged": bool(out.mass_com_converged),
        "status": "converged" if out.converged else (out.reason or "not converged"),
        "stale": bool(stale),
        "age": float(max(age, 0.0)) if math.isfinite(age) else 0.0,
        **_tracking_fields(out.tracking, payload_changed),
    }
    return factory("payload_estimator/msg/PayloadEstimate", fields)


def _tracking_fields(state: TrackingState | None, changed: bool) -> dict[str, Any]:
    if state is None:
        return {"tracking": False, "payload_changed": False, "payload_changes": 0, "change_stamp": stamp_fields(0.0),
                "contact": False, "contacts": 0, "held_out_samples": 0}
    return {
        "tracking": True,
        "payload_changed": bool(changed),
        "payload_changes": _uint32(state.changes),
        "change_stamp": stamp_fields(state.change_t if state.change_t is not None else 0.0),
        "contact": bool(state.contact),
        "contacts": _uint32(state.contacts),
        "held_out_samples": _uint32(state.held_out_samples),
    }


def _uint32(n: int) -> int:
    return int(min(max(n, 0), 2**32 - 1))


def inertia_stamped_msg(
    factory: MessageFactory, params: InertialParameters, frame_id: str, stamp_sec: float | Mapping[str, int]
) -> Any:
    """``geometry_msgs/InertiaStamped``: mass (kg), COM (m) and inertia about the COM (kg m², ``frame_id`` axes)."""
    return factory("geometry_msgs/msg/InertiaStamped",
                   {"header": header_fields(frame_id, stamp_sec), "inertia": _inertia_fields(params)})


_MARKER_TYPES = {"cube": 1, "sphere": 2, "sphere_list": 7}  # visualization_msgs/Marker constants
_MARKER_ADD, _MARKER_DELETEALL = 0, 3


def marker_array_msg(
    factory: MessageFactory, markers: Sequence[MarkerSpec], frame_id: str, stamp_sec: float | Mapping[str, int]
) -> Any:
    """``visualization_msgs/MarkerArray``: a DELETEALL, then one ADD per spec (poses in ``frame_id``, m).

    The markers are frame-locked, so rviz moves them with the frame between updates.
    """
    header = header_fields(frame_id, stamp_sec)
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
        level, message = DiagnosticLevel.STALE, "no input: " + ", ".join(stale)
    elif stale:
        level, message = DiagnosticLevel.WARN, "stale: " + ", ".join(stale)
    else:
        level, message = DiagnosticLevel.OK, "receiving " + ", ".join(
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
    level = DiagnosticLevel.WARN if warn else DiagnosticLevel.OK
    return {"level": level, "name": f"{name}: rejected input", "message": message,
            "hardware_id": hardware_id, "values": _key_values(values)}


def _estimate_status(diag: Mapping[str, Any], name: str, hardware_id: str) -> dict[str, Any]:
    converged = bool(diag.get("converged", False))
    reason = str(diag.get("convergence", ""))
    fit = str(diag.get("model_fit", "unknown"))
    values = {
        "converged": converged,
        "convergence": reason,
        "model fit": fit,
        "not identified": diag.get("not_identified", ""),
        "samples processed": diag.get("samples_processed", 0),
        "samples used": diag.get("samples_used", 0),
        "paused": bool(diag.get("paused", False)),
    }
    for stream, size in (diag.get("buffer_sizes", {}) or {}).items():
        values[f"{stream} buffered"] = size
    if "payload_changes" in diag:  # the payload is being followed (track_payload)
        values["payload changes"] = diag["payload_changes"]
        values["contacts"] = diag.get("contacts", 0)
        values["in contact"] = bool(diag.get("contact_now", False))
        values["held out samples"] = diag.get("held_out_samples", 0)
        values["offset shifts after input gaps"] = diag.get("offset_shifts", 0)
    if "samples_settling" in diag:
        values["samples held back while filters settle"] = diag["samples_settling"]
    if "shape_source" in diag:  # the payload's shape (a camera's cloud mid-run: cloud_topic)
        cloud_points = diag.get("shape_cloud_points", 0)
        values["shape"] = diag["shape_source"] + (f" with {cloud_points} points" if cloud_points else "")
        values["shape point masses"] = diag.get("shape_point_masses", 0)
        values["clouds applied"] = diag.get("clouds_applied", 0)
        values["clouds refused"] = diag.get("clouds_refused", 0)
        values["last cloud refusal"] = diag.get("cloud_refusal", "") or "none"
    message = "converged" if converged else (reason or "not converged")
    if diag.get("paused"):
        message = "paused; " + message
    if diag.get("contact_now"):
        message = "contact: samples held out; " + message
    level = DiagnosticLevel.OK if converged else DiagnosticLevel.WARN
    caveats = list(diag.get("input_caveats", []) or [])
    if caveats:  # the estimate rests on a model used beyond what it knows
        values["caveats"] = "; ".join(caveats)
        level = DiagnosticLevel.WARN
        message += "; " + "; ".join(caveats)
    if fit == "poor":  # not a matter of waiting: something is wrong with the setup or the payload
        level = DiagnosticLevel.ERROR
        message = f"model fit poor: {diag.get('model_fit_cause', '')}"
    refusal = str(diag.get("input_refusal", "") or "")
    if refusal:  # the input is not what the settings say: no estimate
        values["refused"] = refusal
        level = DiagnosticLevel.ERROR
        message = f"no estimate: {refusal}"
    return {"level": level, "name": f"{name}: estimate", "message": message,
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
                   {"header": header_fields("", stamp_sec), "status": statuses})


def string_msg(factory: MessageFactory, text: str) -> Any:
    """``std_msgs/String``."""
    return factory("std_msgs/msg/String", {"data": str(text)})


# ----------------------------------------------- sensor messages (simulator, tests)


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
        "header": header_fields(frame_id, stamp),
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
        "header": header_fields(frame_id, stamp),
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
        "header": header_fields(frame_id, stamp),
        "orientation": {"x": 0.0, "y": 0.0, "z": 0.0, "w": 1.0},
        "orientation_covariance": no_orientation,
        "angular_velocity": _vector3(angular_velocity),
        "linear_acceleration": _vector3(linear_acceleration),
    })


def point_cloud2_msg(factory: MessageFactory, stamp: float | Mapping[str, int], frame_id: str,
                     points: np.ndarray, **fields: np.ndarray) -> Any:
    """``sensor_msgs/PointCloud2``: ``points`` (N, 3) m in ``frame_id``, one value per point of each of ``fields``.

    The layout is :func:`~payload_estimator.io.point_cloud2.point_cloud2_layout`'s (ShapeError for what a field
    cannot carry)."""
    layout = point_cloud2_layout(points, **fields)
    return factory("sensor_msgs/msg/PointCloud2", {
        "header": header_fields(frame_id, stamp),
        "height": layout.height, "width": layout.width,
        "fields": [{"name": f.name, "offset": f.offset, "datatype": f.datatype, "count": f.count}
                   for f in layout.fields],
        "is_bigendian": layout.is_bigendian, "point_step": layout.point_step, "row_step": layout.row_step,
        "data": np.frombuffer(layout.data, dtype=np.uint8), "is_dense": layout.is_dense,
    })


def mass_colours(mass: np.ndarray) -> np.ndarray:
    """PCL's packed ``rgb`` (float32 whose bits are ``0x00RRGGBB``) of each point mass: blue (none) to red (the most).

    The colour is the mass relative to the heaviest point mass (the density PMD sees)."""
    m = np.nan_to_num(np.asarray(mass, dtype=float).reshape(-1), nan=0.0, posinf=0.0, neginf=0.0).clip(min=0.0)
    top = float(m.max()) if m.size else 0.0
    share = m / top if top > 0.0 else np.zeros_like(m)
    red = np.round(255 * share).astype(np.uint32)
    green = np.round(255 * (1.0 - np.abs(2.0 * share - 1.0))).astype(np.uint32)
    blue = np.round(255 * (1.0 - share)).astype(np.uint32)
    return ((red << 16) | (green << 8) | blue).view(np.float32)
