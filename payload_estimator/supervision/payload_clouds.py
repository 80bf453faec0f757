"""The estimator node's payload clouds (``cloud_topic``): where a cloud's frame is found, ROS-free.

The chain itself is :class:`~payload_estimator.pipeline.payload_cloud.PayloadClouds` (the stream's
``clouds``): the supervisor hands it the clouds of each turn of the processing loop
(:func:`~payload_estimator.io.ros_inbound.take_clouds`; a cloud is applied on the next turn, with
the joint states that came with it) and, once the stream is built, where frames the URDF lacks are found
(:func:`tf_frame_lookup`: the node's tf2 lookup, which keeps listening while ``cloud_topic`` is set). What
became of the clouds is in the stream's diagnostics (``shape_source``, ``clouds_applied``,
``clouds_refused``, ``cloud_refusal``); each refusal is a rate-limited warning.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from payload_estimator.pipeline.payload_cloud import FrameLookup, transform

__all__ = ["tf_frame_lookup", "start_clouds"]


def tf_frame_lookup(lookup: Callable[[list[str], str], tuple[list, list[str]]] | None,
                    base_frame: str) -> FrameLookup | None:
    """A :data:`~payload_estimator.pipeline.payload_cloud.FrameLookup` over the supervisor's ``lookup``.

    ``lookup(frames, parent)`` gives the poses found as ``(name, parent, xyz, rpy)`` (URDF roll/pitch/yaw);
    the cloud's frame is looked up in the URDF's ``base_frame``. None without a lookup."""
    if lookup is None:
        return None

    def find(frame: str, known: Callable[[str], bool]) -> tuple[str, np.ndarray] | None:
        try:
            found, _ = lookup([frame], base_frame)
        except Exception:  # noqa: BLE001 - a lookup that fails finds nothing; the cloud is refused by name
            return None
        if not found:
            return None
        _, parent, xyz, rpy = found[0]
        return parent, transform(Rotation.from_euler("xyz", list(rpy)).as_matrix(), np.asarray(xyz, dtype=float))

    return find


def start_clouds(stream: Any, lookup: Any) -> None:
    """A stream just built: its clouds' frames the URDF lacks are found through ``lookup`` (tf2 in the node)."""
    stream.clouds.frame_lookup = tf_frame_lookup(lookup, stream.kinematics.base_frame)
