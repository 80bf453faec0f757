"""The simulator's depth camera on a tripod: the visible cloud of the held payload, as a camera driver sends it.

:class:`PayloadCamera` places a camera (:class:`~payload_estimator.sim.camera.DepthCamera`, MuJoCo ray casting,
Kinect-like range noise) fixed in the robot's base frame, looking at the gripper: from the sensor frame's
pose at the first joint state it is given (:meth:`PayloadCamera.place`), the camera's eye is
:data:`CAMERA_OFFSET_M` from the gripper (:data:`GRIPPER_DEPTH_M` past the sensor face along its z) in the base
frame, aimed at it. :meth:`PayloadCamera.capture` gives what it sees of the payload for the arm at joint
positions ``q``: points in its optical frame :data:`CAMERA_FRAME` (z forward, x right, y down) with the part
each lies on. The node (``ros/sim_node.py``, parameter ``camera``) publishes them on :data:`CAMERA_TOPIC` at
about 1 Hz, stamped with the joint state they were seen at, and the camera's pose in the base frame on
``/tf_static``; the estimator (``cloud_topic``) places them in its sensor frame at their stamps.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.spatial.transform import Rotation

from payload_estimator.core.solids import Shape
from payload_estimator.pipeline.kinematics import SensorKinematics
from payload_estimator.sim.camera import DepthCamera, DepthView, Intrinsics, look_at
from payload_estimator.sim.tf_tree import LinkTransform

__all__ = ["CAMERA_FRAME", "CAMERA_TOPIC", "CAMERA_PERIOD_S", "CAMERA_OFFSET_M", "GRIPPER_DEPTH_M", "PayloadCamera"]

CAMERA_FRAME = "payload_camera_optical_frame"
CAMERA_TOPIC = "/camera/payload/points"
CAMERA_PERIOD_S = 1.0
"""One cloud a second, as a segmentation pipeline might send."""
CAMERA_OFFSET_M = (0.45, 0.25, 0.25)
"""The camera's eye from the gripper at the first pose, m, in the robot's base frame."""
GRIPPER_DEPTH_M = 0.08
"""Where the camera looks: this far past the sensor face along its z, m (the middle of a held tool)."""


class PayloadCamera:
    """A camera fixed in the base frame, looking at the gripper (module docstring).

    Args:
        urdf, sensor_frame, joint_names: the robot (its sensor frame's pose from the joint positions).
        shape: the payload's shape in the sensor frame (its ``envelope``).
        stride: cast every ``stride``-th pixel (2: a quarter of a 640 x 480 image).
        seed: the first capture's range-noise seed (each capture the next one).
    """

    def __init__(self, urdf: str, sensor_frame: str, joint_names: Sequence[str], shape: Shape, stride: int = 2,
                 seed: int = 0) -> None:
        self.kinematics = SensorKinematics(urdf, sensor_frame, list(joint_names))
        self.camera = DepthCamera(shape, intrinsics=Intrinsics(), stride=stride)
        self.T_base_camera: np.ndarray | None = None
        """(4, 4) the camera's pose in the base frame; None until :meth:`place`."""
        self._seed = int(seed)

    def T_base_sensor(self, q: np.ndarray) -> np.ndarray:
        """(4, 4) the sensor frame's pose in the base frame at joint positions ``q``."""
        k = self.kinematics
        R, p = k.frame_pose(np.asarray(q, dtype=float)[None, :], k.sensor_frame, k.base_frame)
        T = np.eye(4)
        T[:3, :3], T[:3, 3] = R[0], p[0]
        return T

    def place(self, q: np.ndarray) -> np.ndarray:
        """Put the camera :data:`CAMERA_OFFSET_M` from the gripper at joint positions ``q``; returns its pose."""
        T = self.T_base_sensor(q)
        target = T[:3, :3] @ np.array([0.0, 0.0, GRIPPER_DEPTH_M]) + T[:3, 3]
        self.T_base_camera = look_at(target + np.asarray(CAMERA_OFFSET_M), target)
        return self.T_base_camera

    def capture(self, q: np.ndarray) -> DepthView:
        """What the camera sees of the payload with the arm at ``q`` (placed there first if not yet placed)."""
        T_base_camera = self.T_base_camera if self.T_base_camera is not None else self.place(q)
        self._seed += 1
        return self.camera.capture(self.T_base_sensor(q), T_base_camera, seed=self._seed)

    def link_transform(self) -> LinkTransform:
        """The camera's pose in the base frame, for ``/tf_static`` (placed: :meth:`place` first)."""
        if self.T_base_camera is None:
            raise ValueError("the camera is not placed yet")
        T = self.T_base_camera
        return LinkTransform(self.kinematics.base_frame, CAMERA_FRAME, T[:3, 3].copy(),
                             Rotation.from_matrix(T[:3, :3]).as_quat())
