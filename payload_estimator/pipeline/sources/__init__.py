"""The stream's two strategies, one registry each: where the wrench comes from, and where the motion does.

:data:`WRENCH_SOURCES` maps each :class:`~payload_estimator.settings.WrenchSource` to the function that
makes its spec from the settings, and :data:`MOTION_SOURCES` each
:class:`~payload_estimator.settings.MotionSource`; :mod:`payload_estimator.pipeline.build` looks the
configured one up once. A new wrench source is its module here (a spec with ``create``, a
:class:`~payload_estimator.pipeline.sources.strategies.WrenchInput`, and its ``from_settings``), its name in
:class:`~payload_estimator.settings.WrenchSource` and one line in :data:`WRENCH_SOURCES`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from payload_estimator.errors import CalibrationError
from payload_estimator.pipeline.sources.imu_motion import ImuKinematics
from payload_estimator.pipeline.sources.joint_motion import JointKinematics
from payload_estimator.pipeline.sources.measured_wrench import MeasuredWrench
from payload_estimator.pipeline.sources.robot_wrench import franka_base_wrench, franka_stiffness_wrench
from payload_estimator.pipeline.sources.strategies import (
    IMU,
    JOINTS,
    WRENCH,
    MotionInput,
    MotionSpec,
    WrenchInput,
    WrenchSpec,
)
from payload_estimator.pipeline.wrench import SaturationCheck, WrenchConvention
from payload_estimator.settings import MotionSource, Settings, WrenchSource

if TYPE_CHECKING:
    from payload_estimator.pipeline.arm_dynamics import ArmCalibration

__all__ = [
    "JOINTS",
    "WRENCH",
    "IMU",
    "WrenchInput",
    "WrenchSpec",
    "MotionInput",
    "MotionSpec",
    "SourceContext",
    "WRENCH_SOURCES",
    "MOTION_SOURCES",
    "wrench_spec",
    "motion_spec",
    "load_arm_calibration",
]


class SourceContext(NamedTuple):
    """What a source's configuration needs beyond the settings.

    Attributes:
        base_frame: the description's root link.
        flange_frame: the robot's load interface.
        joint_names: the arm joints the stream reads.
        imu_frame: the IMU's frame when the settings leave it empty (the IMU messages' ``frame_id``), or None.
    """

    base_frame: str
    flange_frame: str
    joint_names: tuple[str, ...]
    imu_frame: str | None = None


def _ft_sensor(settings: Settings, context: SourceContext) -> WrenchSpec:
    saturation = None
    if settings.sensor_force_range > 0 and settings.sensor_torque_range > 0:
        saturation = SaturationCheck(settings.sensor_force_range, settings.sensor_torque_range)
    sign = float(np.sign(settings.wrench_sign) or 1.0)
    return MeasuredWrench(WrenchConvention(settings.wrench_frame or settings.sensor_frame, None, sign), saturation)


def _stiffness_frame(settings: Settings, context: SourceContext) -> str:
    return settings.stiffness_frame or context.flange_frame


def _franka_base(settings: Settings, context: SourceContext) -> WrenchSpec:
    return franka_base_wrench(settings.wrench_frame or context.base_frame, _stiffness_frame(settings, context))


def _franka_stiffness(settings: Settings, context: SourceContext) -> WrenchSpec:
    return franka_stiffness_wrench(settings.wrench_frame or _stiffness_frame(settings, context))


def load_arm_calibration(settings: Settings, joint_names: tuple[str, ...] | list[str]) -> ArmCalibration | None:
    """Load the arm calibration ``settings.arm_calibration`` names, checked against the robot and its joints.

    None when the setting is empty, or for a source without joint torques.

    Raises:
        CalibrationError: the calibration is missing or another arm's (one line).
    """
    from payload_estimator.pipeline.arm_dynamics import ArmCalibration

    if settings.wrench_source is not WrenchSource.JOINT_TORQUES or not settings.arm_calibration:
        return None
    path = Path(settings.arm_calibration).expanduser()
    if not path.exists():
        raise CalibrationError(f"no arm calibration at {path}: record one with the arm unloaded (payload-estimator "
                               "calibrate, or the node's ~/calibrate service), or set arm_calibration to '' "
                               "(uncalibrated)")
    calibration = ArmCalibration.load(path)
    try:
        calibration.check_matches(settings.robot, joint_names)
    except ValueError as exc:
        raise CalibrationError(f"{path}: {exc}") from None
    return calibration


def _joint_torques(settings: Settings, context: SourceContext) -> WrenchSpec:
    from payload_estimator.pipeline.sources.joint_effort import JointEfforts

    return JointEfforts(load_arm_calibration(settings, context.joint_names), effort_unit=settings.effort_unit,
                        torque_constants=tuple(settings.torque_constants))


WRENCH_SOURCES: Mapping[WrenchSource, Callable[[Settings, SourceContext], WrenchSpec]] = MappingProxyType({
    WrenchSource.FT_SENSOR: _ft_sensor,
    WrenchSource.FRANKA_BASE: _franka_base,
    WrenchSource.FRANKA_STIFFNESS: _franka_stiffness,
    WrenchSource.JOINT_TORQUES: _joint_torques,
})
"""Wrench source -> its spec from the settings."""


def _imu(settings: Settings, context: SourceContext) -> MotionSpec:
    return ImuKinematics(imu_frame=settings.imu_frame or context.imu_frame)


MOTION_SOURCES: Mapping[MotionSource, Callable[[Settings, SourceContext], MotionSpec]] = MappingProxyType({
    MotionSource.JOINTS: lambda settings, context: JointKinematics(),
    MotionSource.IMU: _imu,
})
"""Motion source -> its spec from the settings."""


def wrench_spec(settings: Settings, context: SourceContext) -> WrenchSpec:
    """The configured wrench source's spec."""
    return WRENCH_SOURCES[WrenchSource(settings.wrench_source)](settings, context)


def motion_spec(settings: Settings, context: SourceContext) -> MotionSpec:
    """The configured motion source's spec."""
    return MOTION_SOURCES[MotionSource(settings.motion_source)](settings, context)
