"""The front door: settings (plus a robot description) -> the estimator and the stream.

Every way in builds here: the ROS node, every command, the benchmarks and the examples. The settings
(:class:`~payload_estimator.settings.Settings`) say everything; this module turns them into objects:

* :func:`build_estimator`: the configured estimator (by name, through
  :func:`~payload_estimator.core.estimators.make_estimator`, the one place a name becomes an estimator),
  its options as its class declares them, point masses filling the payload's shape when it needs them,
  inside a :class:`~payload_estimator.core.tracking.PayloadTracker` when it follows the payload;
* :func:`stream_config` and :func:`build_stream`: the :class:`EstimationStream` for a robot, with the
  wrench and motion sources chosen once, from their registries (:mod:`payload_estimator.pipeline.sources`).

A robot is either a built-in preset (:data:`~payload_estimator.robots.ROBOTS`) or any arm whose URDF
arrives on ``robot_description`` (``robot: ""``; then ``flange_frame`` names its flange). Only the
estimator's part imports without pinocchio (a core-only install estimates from sample tables).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.spatial.transform import Rotation

from payload_estimator.core.convergence import ConvergenceCriteria
from payload_estimator.core.estimators import ESTIMATORS, Estimator, make_estimator
from payload_estimator.core.point_clouds import voxel_downsample
from payload_estimator.core.shapes import SampledShape, Shape, parse_shape_spec, payload_points, sample_parts
from payload_estimator.core.tracking import PayloadModel, PayloadTracker
from payload_estimator.errors import ConfigurationError
from payload_estimator.pipeline.sources import SourceContext, load_arm_calibration, motion_spec, wrench_spec
from payload_estimator.pipeline.sources.measured_wrench import MeasuredWrench
from payload_estimator.pipeline.stream_config import StreamConfig
from payload_estimator.pipeline.wrench import WrenchConvention
from payload_estimator.robots import get_robot, parse_description, robot_urdf
from payload_estimator.settings import Settings

if TYPE_CHECKING:
    from payload_estimator.pipeline.health import InputHealth
    from payload_estimator.pipeline.kinematics import SensorKinematics
    from payload_estimator.pipeline.stream import EstimationStream

__all__ = [
    "ExtraFrame",
    "PayloadShape",
    "flange_frame",
    "arm_joint_names",
    "builtin_description",
    "build_estimator",
    "estimator_points",
    "wrench_convention",
    "stream_config",
    "build_stream",
    "sensor_kinematics",
    "convergence_criteria",
    "load_arm_calibration",
]

ExtraFrame = tuple[str, str, Sequence[float], Sequence[float]]
"""A frame the URDF lacks: ``(name, parent, xyz, rpy)`` (m, rad)."""

PayloadShape = Shape | SampledShape | np.ndarray
"""What point masses can come from: a shape (sampled at the settings' density), a sampled shape, or
candidate positions (n, 3) in the sensor frame."""


def flange_frame(settings: Settings) -> str:
    """The configured flange, or the preset robot's own (``ConfigurationError`` for an arm without a preset)."""
    if settings.flange_frame:
        return settings.flange_frame
    if not settings.robot:
        raise ConfigurationError("flange_frame must be set when robot is empty (an arm known only from its URDF)")
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
        raise ConfigurationError("no built-in description: robot is empty (the URDF comes from robot_description)")
    sensor = settings.sensor_frame
    if sensor == flange_frame(settings):
        return robot_urdf(settings.robot)
    return robot_urdf(settings.robot, sensor_xyz_in_flange=tuple(settings.sensor_xyz),
                      sensor_rpy_in_flange=tuple(settings.sensor_rpy), sensor_frame=sensor)


def wrench_convention(settings: Settings, base_frame: str) -> WrenchConvention | None:
    """Return how the configured source's wrench messages report, or None without wrench messages.

    ``base_frame`` is the URDF root. A source without wrench messages: joint torques."""
    if not settings.wrench_source.reads_wrench_topic:
        return None
    context = SourceContext(base_frame, flange_frame(settings), tuple(settings.joint_names))
    spec = wrench_spec(settings, context)
    return spec.convention if isinstance(spec, MeasuredWrench) else None


def estimator_points(settings: Settings, shape: PayloadShape | None = None) -> SampledShape | np.ndarray:
    """Return the point masses of an estimator that needs them.

    ``shape`` (default: the setting ``payload_shape``) sampled at ``point_density``, at most
    ``max_points``; positions are taken as they are (a cloud's points within ``cloud_max_distance``). A point
    cloud (``points:FILE``) with more than ``cloud_max_points`` points is merged down to them, voxel by voxel
    and part by part (:func:`~payload_estimator.core.point_clouds.voxel_downsample`)."""
    if isinstance(shape, (SampledShape, np.ndarray)):
        return shape
    if shape is None:
        cloud = payload_points(settings.payload_shape, settings.cloud_max_distance)  # points:FILE
        if cloud is not None:
            return voxel_downsample(cloud, settings.cloud_max_points)
        shape = parse_shape_spec(settings.payload_shape)
    return sample_parts(shape, density=settings.point_density * 1e6, max_points=settings.max_points)


def build_estimator(settings: Settings, shape: PayloadShape | None = None, live: bool = False) -> PayloadModel:
    """Build the configured estimator, its options read from the settings as its class declares them.

    It is inside a :class:`~payload_estimator.core.tracking.PayloadTracker` when ``track_payload``.

    Args:
        settings: the estimator (``estimator``), its options, ``estimate_bias``, ``track_payload`` and,
            for the estimators with point masses, the shape's sampling.
        shape: the payload's shape or point masses, in place of the setting ``payload_shape``.
        live: whether it runs on a live robot (the node): only then may a solve stop at its wall-time
            budget (``solve_time_budget_s``); a recording's estimates do not depend on the machine's load.
    """
    cls = ESTIMATORS[settings.estimator]
    points = estimator_points(settings, shape) if cls.needs_points else None
    if not live:
        settings = replace(settings, solve_time_budget_s=0.0)
    options: dict[str, Any] = {k: v for k, v in cls.options_from(settings.estimator_options()).items()
                               if v is not None}

    def make(bias: bool) -> Estimator:
        return make_estimator(settings.estimator, points, bias=bias, **options)

    if settings.track_payload:
        return PayloadTracker(make, bias=settings.estimates_offsets)
    return make(settings.estimates_offsets)


def convergence_criteria(settings: Settings) -> ConvergenceCriteria:
    """What "converged" requires, from the settings (``converge_on`` and the uncertainty bounds)."""
    return ConvergenceCriteria(
        mass_rel_std=settings.max_mass_rel_std,
        com_std=settings.max_com_std,
        inertia=settings.converge_on_inertia,
        inertia_rel_std=settings.max_inertia_rel_std,
    )


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
    at ``sensor_xyz``/``sensor_rpy``. ``imu_frame``: the IMU messages' frame, when the settings name none.
    """
    description = parse_description(urdf)
    flange = flange_frame(settings)
    frames = [(str(f[0]), str(f[1]), tuple(f[2]), tuple(f[3])) for f in extra_frames]
    names = {f[0] for f in frames}
    if settings.sensor_frame not in names and not description.has_link(settings.sensor_frame):
        parent = settings.sensor_parent_frame or flange
        frames.append((settings.sensor_frame, parent, tuple(settings.sensor_xyz), tuple(settings.sensor_rpy)))
    joints = arm_joint_names(settings, urdf)
    context = SourceContext(description.root_link, flange, joints, imu_frame)
    return StreamConfig(
        urdf=urdf,
        sensor_frame=settings.sensor_frame,
        joint_names=joints,
        extra_frames=tuple(frames),  # type: ignore[arg-type]
        flange_frame=flange,
        wrench_source=wrench_spec(settings, context),
        motion_source=motion_spec(settings, context),
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
    )


def build_stream(
    settings: Settings,
    urdf: str,
    extra_frames: Sequence[ExtraFrame] = (),
    imu_frame: str | None = None,
    health: InputHealth | None = None,
    zero_phase: bool = False,
    shape: PayloadShape | None = None,
    live: bool = False,
) -> EstimationStream:
    """The :class:`EstimationStream` for ``settings`` (what the node, every command and benchmark run).

    ``zero_phase`` (recordings only) keeps the aligned data and filters them forward and backward at
    :meth:`EstimationStream.finish`; ``shape`` replaces the setting ``payload_shape``, ``live`` (the node)
    lets solves stop at their wall-time budget (:func:`build_estimator`).
    """
    from payload_estimator.pipeline.stream import EstimationStream

    config = stream_config(settings, urdf, extra_frames, imu_frame, zero_phase)
    stream = EstimationStream(config, build_estimator(settings, shape, live), health, settings.cloud_max_points)
    clouds = stream.clouds  # a camera's clouds mid-run (pipeline/payload_cloud.py)
    clouds.completion, clouds.max_distance = settings.cloud_completion, settings.cloud_max_distance
    clouds.density, clouds.max_points = settings.point_density * 1e6, settings.max_points  # per cm³ -> per m³
    return stream


def sensor_kinematics(settings: Settings, urdf: str, extra_frames: Sequence[ExtraFrame] = ()) -> SensorKinematics:
    """Return the arm's kinematics with the sensor frame, as the stream for ``settings`` would have them.

    The arm's calibration and ``~/calibrate`` use them without a stream."""
    from payload_estimator.pipeline.kinematics import SensorKinematics

    config = stream_config(settings, urdf, extra_frames)
    return SensorKinematics(urdf, config.sensor_frame, config.joint_names, R_world_base=config.R_world_base,
                            gravity_in_world=(0.0, 0.0, -config.gravity), extra_frames=config.extra_frames)
