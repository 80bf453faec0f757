"""A wrench message: a wrist force/torque sensor, or the robot's own external-wrench estimate.

The source reports a wrench in its own convention (:class:`~payload_estimator.pipeline.wrench.WrenchConvention`:
components in one frame, torque about another's origin, a sign); it is converted once to the payload's
wrench on the sensor frame ``S`` (:func:`~payload_estimator.pipeline.wrench.wrench_to_sensor`), with the
raw joint positions of the same instants, before it is filtered. A sensor's range check
(:class:`~payload_estimator.pipeline.wrench.SaturationCheck`) applies to the raw reading, in the sensor's
own axes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from payload_estimator.errors import ConfigurationError
from payload_estimator.pipeline.health import WRONG_FRAME
from payload_estimator.pipeline.sources.strategies import WRENCH, WrenchInput
from payload_estimator.pipeline.wrench import SaturationCheck, WrenchConvention, wrench_to_sensor

if TYPE_CHECKING:
    from payload_estimator.pipeline.health import InputHealth
    from payload_estimator.pipeline.kinematics import SensorKinematics

__all__ = ["MeasuredWrench", "MeasuredWrenchInput"]


@dataclass(frozen=True)
class MeasuredWrench:
    """A wrench message stream's configuration.

    Attributes:
        convention: how the source reports (frame, torque reference, sign).
        saturation: the sensor's range check, or None (a robot's estimate has no range).
    """

    convention: WrenchConvention
    saturation: SaturationCheck | None = None
    model_error: ClassVar[bool] = False
    """A sensor's wrench (or a robot's estimate, whose drift the tracker follows): no arm model's error."""

    def create(self, kinematics: SensorKinematics, sensor_frame: str) -> MeasuredWrenchInput:
        """Return the strategy for a stream.

        Raises:
            ConfigurationError: a frame of the convention is not in the description.
        """
        for frame in {self.convention.expressed_in, self.convention.reference_frame}:
            if not kinematics.has_frame(frame):
                raise ConfigurationError(f"wrench frame {frame!r} is not in the robot description")
        return MeasuredWrenchInput(self, kinematics, sensor_frame)


class MeasuredWrenchInput(WrenchInput):
    """A wrench message, converted to the payload's wrench on ``S`` and filtered like the joints."""

    def __init__(self, spec: MeasuredWrench, kinematics: SensorKinematics, sensor_frame: str) -> None:
        self.convention = spec.convention
        self.saturation = spec.saturation
        self.kinematics = kinematics
        self.sensor_frame = sensor_frame

    def channels(self, n_joints: int) -> int:
        """Six: force and torque."""
        return 6

    def admit_frame(self, frame_id: str, n: int, health: InputHealth) -> bool:
        """A batch in another frame than the convention's is dropped (an empty ``frame_id`` is taken as it)."""
        if frame_id and frame_id != self.convention.expressed_in:
            health.report(
                WRONG_FRAME,
                f"wrench in frame {frame_id!r}, expected {self.convention.expressed_in!r}; dropped "
                "(set the wrench frame parameter to the sensor's frame)",
                WRENCH,
                n,
            )
            return False
        return True

    def in_range(self, w: np.ndarray, health: InputHealth) -> np.ndarray:
        """The samples clear of the sensor's range (all, without a range check)."""
        if self.saturation is None:
            return np.ones(len(w), dtype=bool)
        return self.saturation.keep(w, health, WRENCH)

    def raw_signal(self, q_raw: np.ndarray, values: np.ndarray) -> np.ndarray:
        """The reported wrenches (N, 6) as the payload's wrench on ``S``."""
        conv = self.convention
        sensor = self.sensor_frame
        if conv.expressed_in == sensor and conv.reference_frame == sensor:
            return conv.sign * values
        R, _ = self.kinematics.frame_pose(q_raw, conv.expressed_in, sensor)
        _, p = self.kinematics.frame_pose(q_raw, conv.reference_frame, sensor)
        return wrench_to_sensor(values[:, :3], values[:, 3:], conv, R, p)

    def sample_wrench(
        self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray, filtered: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """The filtered wrench as it is: measured channel by channel."""
        return filtered, None
