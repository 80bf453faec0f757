"""Settings plus a robot description -> the :class:`EstimationStream` the node and ``replay`` drive.

The one place where :class:`~payload_estimator.settings.Settings` values turn
into pipeline objects: the flange, the arm's joints, the wrench convention of
the configured source, frames the description lacks, the estimator (from the
registry, :data:`~payload_estimator.core.estimators.ESTIMATORS`) and the
stream configuration. A robot is either a built-in preset
(:data:`~payload_estimator.robots.ROBOTS`) or any arm whose URDF arrives on
``robot_description`` (``robot: ""``; then ``flange_frame`` names its flange).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from payload_estimator.core.convergence import ConvergenceCriteria
from payload_estimator.core.estimators import ESTIMATORS, Estimator
from payload_estimator.core.shapes import parse_shape_spec, sample_parts
from payload_estimator.core.tracking import PayloadModel, PayloadTracker
from payload_estimator.pipeline.arm_dynamics import ArmCalibration
from payload_estimator.pipeline.health import InputHealth
from payload_estimator.pipeline.stream import EstimationStream, StreamConfig
from payload_estimator.pipeline.wrench import SaturationCheck, WrenchConvention
from payload_estimator.robots import get_robot, parse_description, robot_urdf
from payload_estimator.settings import Settings

__all__ = [
    "ExtraFrame",
    "flange_frame",
    "arm_joint_names",
    "builtin_description",
    "wrench_convention",
    "build_estimator",
    "stream_config",
    "build_stream",
    "convergence_criteria",
    "load_arm_calibration",
]

ExtraFrame = tuple[str, str, Sequence[float], Sequence[float]]
"""A frame the URDF lacks: ``(name, parent, xyz, rpy)`` (m, rad)."""


def flange_frame(settings: Settings) -> str:
    """The configured flange, or the preset robot's own (``ValueError`` for an arm without a preset)."""
    if settings.flange_frame:
        return settings.flange_frame
    if not settings.robot:
        raise ValueError("flange_frame must be set when robot is empty (an arm known only from its URDF)")
    return get_robot(settings.robot).flange_frame


def arm_joint_names(settings: Settings, urdf: str) -> tuple[str, ...]:
    """The joints the estimator reads: configured, the preset's, or the URDF's chain to the flange."""
    if settings.joint_names:
        return tuple(settings.joint_names)
    if settings.robot:
        return get_robot(settings.robot).joint_names
    return parse_description(urdf).chain_joints(flange_frame(settings))


def builtin_description(settings: Settings) -> str:
    """The package's URDF of the robot, with the sensor frame at ``sensor_xyz``/``sensor_rpy`` on the flange."""
    if not settings.robot:
        raise ValueError("no built-in description: robot is empty (the URDF comes from robot_description)")
    sensor = settings.sensor_frame
    if sensor == flange_frame(settings):
        return robot_urdf(settings.robot)
    return robot_urdf(settings.robot, sensor_xyz_in_flange=tuple(settings.sensor_xyz),
                      sensor_rpy_in_flange=tuple(settings.sensor_rpy), sensor_frame=sensor)


def wrench_convention(settings: Settings, base_frame: str) -> WrenchConvention:
    """The :class:`WrenchConvention` of the configured wrench source (``base_frame``: the URDF root)."""
    if settings.wrench_source == "ft_sensor":
        return WrenchConvention(settings.wrench_frame or settings.sensor_frame, None,
                                float(np.sign(settings.wrench_sign) or 1.0))
    k = settings.stiffness_frame or flange_frame(settings)
    if settings.wrench_source == "franka_base":
        return WrenchConvention(settings.wrench_frame or base_frame, k, -1.0)
    return WrenchConvention(settings.wrench_frame or k, None, -1.0)


def build_estimator(settings: Settings) -> PayloadModel:
    """The configured estimator, its options read from the settings as its class declares them;
    inside a :class:`~payload_estimator.core.tracking.PayloadTracker` when ``track_payload``."""
    cls = ESTIMATORS[settings.estimator]
    points = None
    if cls.needs_points:
        points = sample_parts(parse_shape_spec(settings.payload_shape),
                              density=settings.point_density * 1e6, max_points=settings.max_points)
    options = cls.options_from(settings.to_dict())

    def make(bias: bool) -> Estimator:
        return cls.create(points, bias=bias, **options)

    bias = settings.estimate_bias and settings.wrench_source != "joint_torques"  # no F/T offsets without a sensor
    if settings.track_payload:
        return PayloadTracker(make, bias=bias)
    return make(bias)


def convergence_criteria(settings: Settings) -> ConvergenceCriteria:
    """What "converged" requires, from the settings (``converge_on`` and the uncertainty bounds)."""
    return ConvergenceCriteria(
        mass_rel_std=settings.max_mass_rel_std,
        com_std=settings.max_com_std,
        inertia=settings.converge_on_inertia,
        inertia_rel_std=settings.max_inertia_rel_std,
    )


def load_arm_calibration(settings: Settings, joint_names: Sequence[str]) -> ArmCalibration | None:
    """The arm calibration ``settings.arm_calibration`` names (None: empty, or not the joint-torque source),
    checked against the robot and its joints; ``ValueError`` in one line if it is missing or another arm's."""
    if settings.wrench_source != "joint_torques" or not settings.arm_calibration:
        return None
    path = Path(settings.arm_calibration).expanduser()
    if not path.is_file():
        raise ValueError(f"no arm calibration at {path}: record one with the arm unloaded (payload-estimator "
                         "calibrate, or the node's ~/calibrate service), or set arm_calibration to '' (uncalibrated)")
    calibration = ArmCalibration.load(path)
    try:
        calibration.check_matches(settings.robot, joint_names)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    return calibration


def stream_config(
    settings: Settings,
    urdf: str,
    extra_frames: Sequence[ExtraFrame] = (),
    imu_frame: str | None = None,
    zero_phase: bool = False,
) -> StreamConfig:
    """The :class:`StreamConfig` for ``settings`` and a robot description.

    ``extra_frames`` are frames the URDF lacks (from tf2); the sensor frame, if
    still missing, is attached to ``sensor_parent_frame`` (default: the flange)
    at ``sensor_xyz``/``sensor_rpy``.
    """
    description = parse_description(urdf)
    flange = flange_frame(settings)
    frames = [(str(f[0]), str(f[1]), tuple(f[2]), tuple(f[3])) for f in extra_frames]
    names = {f[0] for f in frames}
    if settings.sensor_frame not in names and not description.has_link(settings.sensor_frame):
        parent = settings.sensor_parent_frame or flange
        frames.append((settings.sensor_frame, parent, tuple(settings.sensor_xyz), tuple(settings.sensor_rpy)))
    joints = arm_joint_names(settings, urdf)
    saturation = None
    if settings.wrench_source == "ft_sensor" and settings.sensor_force_range > 0 and settings.sensor_torque_range > 0:
        saturation = SaturationCheck(settings.sensor_force_range, settings.sensor_torque_range)
    return StreamConfig(
        urdf=urdf,
        sensor_frame=settings.sensor_frame,
        joint_names=joints,
        extra_frames=tuple(frames),  # type: ignore[arg-type]
        flange_frame=flange,
        wrench=wrench_convention(settings, description.root_link),
        saturation=saturation,
        imu_frame=(settings.imu_frame or imu_frame) if settings.motion_source == "imu" else None,
        motion_source=settings.motion_source,
        use_joint_velocities=settings.use_joint_velocities,
        R_world_base=Rotation.from_euler("xyz", settings.base_rpy).as_matrix(),
        gravity=settings.gravity,
        rate_hz=settings.grid_rate_hz,
        cutoff_hz=settings.cutoff_hz,
        filter_order=settings.filter_order,
        estimator_rate_hz=settings.estimator_rate_hz,
        max_gap_s=settings.max_gap_s,
        convergence=convergence_criteria(settings),
        stale_after_s=settings.stale_after_s,
        zero_phase=zero_phase,
        joint_torques=settings.wrench_source == "joint_torques",
        arm_calibration=load_arm_calibration(settings, joints),
    )


def build_stream(
    settings: Settings,
    urdf: str,
    extra_frames: Sequence[ExtraFrame] = (),
    imu_frame: str | None = None,
    health: InputHealth | None = None,
    zero_phase: bool = False,
) -> EstimationStream:
    """The :class:`EstimationStream` for ``settings`` (what the node and ``replay`` both run).

    ``zero_phase`` (recordings only) keeps the aligned data and filters them
    forward and backward at :meth:`EstimationStream.finish`.
    """
    config = stream_config(settings, urdf, extra_frames, imu_frame, zero_phase)
    return EstimationStream(config, build_estimator(settings), health)
