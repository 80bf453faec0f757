"""Pieces the commands and benchmarks share: estimators from options, streams for simulated runs."""

from __future__ import annotations

from typing import Any

from payload_estimator.core.estimators import C1_PIPELINE, ESTIMATORS, Estimator
from payload_estimator.core.shapes import Shape, sample_points
from payload_estimator.pipeline.playback import Recording
from payload_estimator.pipeline.stream import EstimationStream, StreamConfig
from payload_estimator.pipeline.wrench import SaturationCheck, WrenchConvention
from payload_estimator.robots import get_robot
from payload_estimator.sim.run import SimulatedRun

__all__ = ["build_estimator", "stream_for_run", "recording_from_run", "console_and_progress"]


def build_estimator(
    method: str,
    shape: Shape | None,
    bias: bool = True,
    c1: float = C1_PIPELINE,
    regularization: float = 1.0,
    forgetting: float | None = None,
    density: float | None = None,
    max_points: int | None = None,
) -> Estimator:
    """An estimator of the registry by name, with the pipeline's options; those that need point
    masses (PMD) get points filling ``shape`` (in the sensor frame)."""
    cls = ESTIMATORS[method]
    values = {"c1": c1, "regularization": regularization, "forgetting": forgetting}
    options = {k: v for k, v in cls.options_from(values).items() if v is not None}
    points = None
    if cls.needs_points:
        if shape is None:
            raise ValueError(f"{method} needs the payload's shape")
        sampling: dict[str, Any] = {k: v for k, v in (("density", density), ("max_points", max_points))
                                    if v is not None}
        points = sample_points(shape, **sampling)
    return cls.create(points, bias=bias, **options)


def stream_for_run(run: SimulatedRun, estimator: Estimator, **config: Any) -> EstimationStream:
    """A stream set up for a simulated run: its URDF, joints and F/T sensor (sign +1, FT-300 range)."""
    spec = get_robot(run.robot)
    settings: dict[str, Any] = {
        "urdf": run.urdf,
        "sensor_frame": run.sensor_frame,
        "joint_names": run.joint_names,
        "flange_frame": spec.flange_frame,
        "wrench": WrenchConvention(run.sensor_frame, None, 1.0),
        "saturation": SaturationCheck(),
        "imu_frame": run.imu_frame or None,
    }
    settings.update(config)
    return EstimationStream(StreamConfig(**settings), estimator)


def recording_from_run(run: SimulatedRun, imu: bool = False) -> Recording:
    """The measured signals of a simulated run, as the robot would deliver them."""
    has_imu = imu and len(run.imu_t) > 0
    return Recording(
        joint_t=run.joint_t,
        joint_q=run.joint_q,
        joint_dq=run.joint_dq,
        wrench_t=run.wrench_t,
        wrench=run.wrench_in_sensor,
        imu_t=run.imu_t if has_imu else None,
        imu_gyro=run.imu_gyro_in_imu if has_imu else None,
        imu_specific_force=run.imu_specific_force_in_imu if has_imu else None,
    )


def console_and_progress(json_output: bool):
    """The console for tables (stderr when stdout carries JSON) and a live progress display.

    The progress display, with a free ``status`` field per task, is silent
    under ``--json`` and when neither stream is a terminal (logs, CI).
    """
    import sys

    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=json_output)
    quiet = json_output or (not sys.stderr.isatty() and not sys.stdout.isatty())
    progress = Progress(
        TextColumn("{task.description}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
        TextColumn("{task.fields[status]}"), TimeElapsedColumn(), console=console, disable=quiet,
    )
    return console, progress
