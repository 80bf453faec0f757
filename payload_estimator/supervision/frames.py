"""The frames the estimator needs, those the robot description lacks, and poses between them (ROS-free).

The node builds its :class:`~payload_estimator.pipeline.stream.EstimationStream`
from a URDF. The frames the configuration names (the sensor frame, the frame a
wrench is expressed in and the one its torque is taken about, the IMU frame)
may be missing from that URDF: the node then looks them up once in tf2,
relative to the flange, and passes them to ``build_stream`` as
``extra_frames`` in the form :func:`extra_frame` returns.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.spatial.transform import Rotation

from payload_estimator.errors import InputError
from payload_estimator.pipeline.build import ExtraFrame, flange_frame, wrench_convention
from payload_estimator.robots import parse_description
from payload_estimator.settings import MotionSource, Settings

__all__ = [
    "required_frames",
    "frames_to_look_up",
    "extra_frame",
]


def required_frames(settings: Settings, urdf: str, imu_frame: str | None = None) -> dict[str, str]:
    """Role -> frame name of every frame the configuration needs.

    Roles: ``"flange"``, ``"sensor"``, ``"wrench"`` (components) and ``"wrench_reference"``
    (torque reference point) of a source of wrench messages, and, when the IMU drives the motion, ``"imu"``
    (``settings.imu_frame`` or else ``imu_frame``, the IMU messages' frame_id).
    """
    conv = wrench_convention(settings, parse_description(urdf).root_link)
    roles = {"flange": flange_frame(settings), "sensor": settings.sensor_frame}
    if conv is not None:  # a source of wrench messages (not joint torques)
        roles.update(wrench=conv.expressed_in, wrench_reference=conv.reference_frame)
    if settings.motion_source is MotionSource.IMU:
        frame = settings.imu_frame or imu_frame
        if frame:
            roles["imu"] = frame
    return roles


def frames_to_look_up(settings: Settings, urdf: str, imu_frame: str | None = None) -> list[str]:
    """Frames the configuration needs that the URDF lacks, sorted (the flange must be in the URDF)."""
    description = parse_description(urdf)
    roles = required_frames(settings, urdf, imu_frame)
    return sorted({frame for role, frame in roles.items() if role != "flange" and not description.has_link(frame)})


def extra_frame(name: str, parent: str, translation: Sequence[float], quaternion_xyzw: Sequence[float]) -> ExtraFrame:
    """``(name, parent, xyz, rpy)`` for ``build_stream(extra_frames=...)`` from a pose of ``name`` in ``parent``.

    The pose is tf2's ``lookup_transform(parent, name)``. ``rpy`` is URDF
    roll/pitch/yaw, rad.

    Args:
        name: the frame.
        parent: the frame its pose is in.
        translation: ``name``'s origin in ``parent``, m.
        quaternion_xyzw: ``name``'s orientation in ``parent``, a unit quaternion x, y, z, w.

    Raises:
        InputError: a pose that is not finite, or not three coordinates and four quaternion components.
    """
    xyz = tuple(float(v) for v in translation)
    q = np.asarray(quaternion_xyzw, dtype=float)
    if len(xyz) != 3 or q.shape != (4,) or not np.all(np.isfinite(q)) or not np.isfinite(xyz).all():
        raise InputError(f"bad pose for frame {name!r}: {translation}, {quaternion_xyzw}")
    rpy = Rotation.from_quat(q / np.linalg.norm(q)).as_euler("xyz")
    return (name, parent, xyz, tuple(float(v) for v in rpy))
