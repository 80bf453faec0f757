"""Which frames the estimator needs, which of them the robot description lacks, and poses
between frames fixed to one another (ROS-free).

The node builds its :class:`~payload_estimator.pipeline.stream.EstimationStream`
from a URDF. The frames the configuration names (the sensor frame, the frame a
wrench is expressed in and the one its torque is taken about, the IMU frame)
may be missing from that URDF: the node then looks them up once in tf2,
relative to the flange, and passes them to ``build_stream`` as
``extra_frames`` in the form :func:`extra_frame` returns.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

import numpy as np
from scipy.spatial.transform import Rotation

from payload_estimator.settings import Settings, wrench_convention

__all__ = [
    "urdf_links",
    "urdf_root_link",
    "flange_frame",
    "required_frames",
    "frames_to_look_up",
    "extra_frame",
    "rigid_pose",
]


def urdf_links(urdf: str) -> set[str]:
    """Names of the links of a URDF (``ValueError`` if it is not XML)."""
    try:
        root = ET.fromstring(urdf)
    except ET.ParseError as exc:
        raise ValueError(f"robot description is not valid XML: {exc}") from None
    return {str(link.get("name")) for link in root.findall("link")}


def urdf_root_link(urdf: str) -> str:
    """The link that is no joint's child (``ValueError`` unless there is exactly one)."""
    from payload_estimator.pipeline.kinematics import _urdf_root_link

    return _urdf_root_link(urdf)


def flange_frame(settings: Settings) -> str:
    """The configured flange, or the robot's own."""
    from payload_estimator.robots import get_robot

    return settings.flange_frame or get_robot(settings.robot).flange_frame


def required_frames(settings: Settings, urdf: str, imu_frame: str | None = None) -> dict[str, str]:
    """Role -> frame name of every frame the configuration needs.

    Roles: ``"flange"``, ``"sensor"``, ``"wrench"`` (components), ``"wrench_reference"``
    (torque reference point) and, when the IMU drives the motion, ``"imu"``
    (``settings.imu_frame`` or else ``imu_frame``, the IMU messages' frame_id).
    """
    conv = wrench_convention(settings, urdf_root_link(urdf))
    roles = {
        "flange": flange_frame(settings),
        "sensor": settings.sensor_frame,
        "wrench": conv.expressed_in,
        "wrench_reference": conv.reference_frame,
    }
    if settings.motion_source == "imu":
        frame = settings.imu_frame or imu_frame
        if frame:
            roles["imu"] = frame
    return roles


def frames_to_look_up(settings: Settings, urdf: str, imu_frame: str | None = None) -> list[str]:
    """Frames the configuration needs that the URDF lacks, sorted (the flange must be in the URDF)."""
    links = urdf_links(urdf)
    roles = required_frames(settings, urdf, imu_frame)
    return sorted({frame for role, frame in roles.items() if role != "flange" and frame not in links})


def extra_frame(
    name: str, parent: str, translation: Sequence[float], quaternion_xyzw: Sequence[float]
) -> tuple[str, str, tuple[float, float, float], tuple[float, float, float]]:
    """``(name, parent, xyz, rpy)`` for ``build_stream(extra_frames=...)`` from a pose of
    ``name`` in ``parent`` (tf2's ``lookup_transform(parent, name)``: translation in m, unit
    quaternion x, y, z, w). ``rpy`` is URDF roll/pitch/yaw, rad."""
    xyz = tuple(float(v) for v in translation)
    q = np.asarray(quaternion_xyzw, dtype=float)
    if xyz.__len__() != 3 or q.shape != (4,) or not np.all(np.isfinite(q)) or not np.isfinite(xyz).all():
        raise ValueError(f"bad pose for frame {name!r}: {translation}, {quaternion_xyzw}")
    rpy = Rotation.from_quat(q / np.linalg.norm(q)).as_euler("xyz")
    return (name, parent, xyz, tuple(float(v) for v in rpy))  # type: ignore[return-value]


def rigid_pose(kinematics, frame: str, relative_to: str) -> tuple[np.ndarray, np.ndarray]:
    """``(R, p)``: pose of ``frame`` in ``relative_to`` (3x3, (3,) m), two frames fixed to each other.

    ``kinematics``: a :class:`~payload_estimator.pipeline.kinematics.SensorKinematics`.
    ``ValueError`` if either frame is unknown or the joints move one relative to the other.
    """
    n = kinematics.n_joints
    R0, p0 = kinematics.frame_pose(np.zeros((1, n)), frame, relative_to)
    q1 = np.linspace(0.3, -0.4, n)[None, :]
    R1, p1 = kinematics.frame_pose(q1, frame, relative_to)
    if not (np.allclose(R0, R1, atol=1e-9) and np.allclose(p0, p1, atol=1e-9)):
        raise ValueError(f"frame {frame!r} moves relative to {relative_to!r}; choose a frame fixed to the flange")
    return R0[0], p0[0]
