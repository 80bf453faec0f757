"""The sensor frame's motion from joint kinematics: the filtered joint states through the description."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from payload_estimator.pipeline.sources.strategies import MotionInput

if TYPE_CHECKING:
    from payload_estimator.pipeline.kinematics import SensorKinematics, SensorMotion

__all__ = ["JointKinematics", "JointKinematicsInput"]


@dataclass(frozen=True)
class JointKinematics:
    """Motion from the joints alone (nothing to configure)."""

    def create(self, kinematics: SensorKinematics, sensor_frame: str, rate_hz: float, cutoff_hz: float,
               order: int, gravity: float) -> JointKinematicsInput:
        """The strategy (stateless)."""
        return JointKinematicsInput()


class JointKinematicsInput(MotionInput):
    """Angular velocity and accelerations of ``S`` as the filtered joint states give them."""

    def motion(self, advanced: object, joints: SensorMotion, keep: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The joint kinematics' own values."""
        return joints.ang_vel_in_sensor, joints.ang_acc_in_sensor, joints.lin_acc_in_sensor
