"""The sensor frame's motion from an IMU on the sensor's body; gravity still from the joints.

The IMU's gyro and specific force go through the same filter as every other signal
(:class:`~payload_estimator.pipeline.imu.ImuProcessor`); the angular acceleration is their matched
derivative. The IMU must be rigidly attached to the sensor frame: its pose in ``S`` comes from the
description (``imu_frame``) or is given (``imu_mount``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from payload_estimator.errors import ConfigurationError
from payload_estimator.pipeline.health import WRONG_FRAME
from payload_estimator.pipeline.imu import ImuMotion, ImuMount, ImuProcessor
from payload_estimator.pipeline.sources.strategies import IMU, MotionInput

if TYPE_CHECKING:
    from payload_estimator.pipeline.health import InputHealth
    from payload_estimator.pipeline.kinematics import SensorKinematics, SensorMotion

__all__ = ["ImuKinematics", "ImuKinematicsInput", "imu_mount_in_description"]


def imu_mount_in_description(kinematics: SensorKinematics, imu_frame: str, sensor_frame: str) -> ImuMount:
    """Return the pose of ``imu_frame`` in ``sensor_frame``, from the description.

    Raises:
        ConfigurationError: the frame is missing or not rigidly attached to the sensor frame.
    """
    if not kinematics.has_frame(imu_frame):
        raise ConfigurationError(f"IMU frame {imu_frame!r} is not in the robot description")
    q0 = np.zeros((1, kinematics.n_joints))
    R, p = kinematics.frame_pose(q0, imu_frame, sensor_frame)
    if not np.allclose(kinematics.frame_pose(q0 + 0.3, imu_frame, sensor_frame)[1], p):
        raise ConfigurationError("the IMU must be rigidly attached to the sensor frame")
    return ImuMount(R[0], p[0])


@dataclass(frozen=True)
class ImuKinematics:
    """The IMU source's configuration.

    Attributes:
        imu_frame: the IMU's frame in the description (also the frame its messages must carry), or None.
        imu_mount: the IMU's pose in ``S``; overrides ``imu_frame``'s.
    """

    imu_frame: str | None = None
    imu_mount: ImuMount | None = None

    def __post_init__(self) -> None:
        if self.imu_frame is None and self.imu_mount is None:
            raise ConfigurationError("motion_source 'imu' needs imu_frame or imu_mount")

    def create(self, kinematics: SensorKinematics, sensor_frame: str, rate_hz: float, cutoff_hz: float,
               order: int, gravity: float) -> ImuKinematicsInput:
        """The strategy, with the IMU's mount from the description unless given."""
        mount = self.imu_mount
        if mount is None:
            assert self.imu_frame is not None
            mount = imu_mount_in_description(kinematics, self.imu_frame, sensor_frame)
        processor = ImuProcessor(mount, rate_hz, cutoff_hz, order, gravity_magnitude=gravity)
        return ImuKinematicsInput(processor, kinematics, sensor_frame, self.imu_frame)


class ImuKinematicsInput(MotionInput):
    """Angular rate, angular and linear acceleration of ``S`` from the IMU; gravity from the joints."""

    stream = IMU
    compensates_kinematic_noise = False
    supports_zero_phase = False

    def __init__(self, processor: ImuProcessor, kinematics: SensorKinematics, sensor_frame: str,
                 imu_frame: str | None) -> None:
        self.processor = processor
        self.mount = processor.mount
        self.kinematics = kinematics
        self.sensor_frame = sensor_frame
        self.imu_frame = imu_frame

    def reset(self) -> None:
        """Forget the IMU filter and attitude state."""
        self.processor.reset()

    def admit(self, frame_id: str, n: int, health: InputHealth) -> bool:
        """A batch in another frame than the configured IMU frame is dropped (an empty one is taken as it)."""
        if frame_id and self.imu_frame and frame_id != self.imu_frame:
            health.report(WRONG_FRAME, f"IMU in frame {frame_id!r}, expected {self.imu_frame!r}; dropped", IMU, n)
            return False
        return True

    def advance(self, t: np.ndarray, q_raw: np.ndarray, values: np.ndarray | None) -> ImuMotion:
        """The segment's IMU samples through the filter, with gravity in ``S`` from the raw joint positions."""
        assert values is not None
        return self.processor.process(t, values[:, :3], values[:, 3:], self._gravity_in_sensor(q_raw))

    def motion(self, advanced: object, joints: SensorMotion, keep: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The IMU's rows that are kept."""
        assert isinstance(advanced, ImuMotion)
        return advanced.ang_vel_in_sensor[keep], advanced.ang_acc_in_sensor[keep], advanced.lin_acc_in_sensor[keep]

    def _gravity_in_sensor(self, q: np.ndarray) -> np.ndarray:
        """(N, 3) gravity in the sensor frame at joint positions ``q``: forward kinematics only."""
        kin = self.kinematics
        R_base_sensor, _ = kin.frame_pose(q, self.sensor_frame, kin.base_frame)
        R_world_sensor = np.einsum("ij,njk->nik", kin.R_world_base, R_base_sensor)
        return np.einsum("nji,j->ni", R_world_sensor, kin.gravity_in_world)
