"""A simulated run as the estimator sees it: its settings and its recording.

The simulator's robots carry a wrist F/T sensor (our sign, a Robotiq FT 300's range) at the run's sensor
frame; :func:`settings_for_run` says so in :class:`~payload_estimator.settings.Settings`, so that every
run goes through the one front door (:func:`payload_estimator.pipeline.build.build_stream`), exactly as
the node would build it for that robot. :func:`recording_from_run` gives the measured signals as the
robot would deliver them, for :func:`~payload_estimator.pipeline.playback.play`.
"""

from __future__ import annotations

from typing import Any

from payload_estimator.pipeline.playback import Recording
from payload_estimator.robots import ROBOTS, RobotSpec, resolve_robot
from payload_estimator.settings import Settings, WrenchSource
from payload_estimator.sim.run import SimulatedRun

__all__ = ["settings_for_run", "recording_from_run", "stream_for_run", "known_payload_recording"]


def settings_for_run(run: SimulatedRun, robot: str | RobotSpec | None = None, **overrides: Any) -> Settings:
    """Return the settings of an estimator reading ``run``, with ``overrides`` (settings fields) applied.

    Its robot, joints and sensor frame, the wrist F/T sensor's wrench; every other setting at its default.

    Args:
        run: the simulated run.
        robot: the arm simulated: a built-in robot's name (default ``run.robot``), or the spec of an arm
            from its URDF (no preset: its flange is named).
        **overrides: settings fields.
    """
    spec = resolve_robot(robot if robot is not None else run.robot)
    preset = spec.name if spec.name in ROBOTS and ROBOTS[spec.name] is spec else ""
    values: dict[str, Any] = {
        "robot": preset,
        "flange_frame": "" if preset else spec.flange_frame,
        "joint_names": list(run.joint_names),
        "sensor_frame": run.sensor_frame,
        "wrench_source": WrenchSource.FT_SENSOR,
    }
    values.update(overrides)
    return Settings.from_dict(values)


def recording_from_run(run: SimulatedRun, imu: bool = False, wrench: bool = True) -> Recording:
    """Return the measured signals of a simulated run, as the robot would deliver them.

    The IMU's only with ``imu``, the wrench's unless ``wrench`` is False (a robot without a
    wrist sensor)."""
    import numpy as np

    has_imu = imu and len(run.imu_t) > 0
    return Recording(
        joint_t=run.joint_t,
        joint_q=run.joint_q,
        joint_dq=run.joint_dq,
        wrench_t=run.wrench_t if wrench else np.zeros(0),
        wrench=run.wrench_in_sensor if wrench else np.zeros((0, 6)),
        imu_t=run.imu_t if has_imu else None,
        imu_gyro=run.imu_gyro_in_imu if has_imu else None,
        imu_specific_force=run.imu_specific_force_in_imu if has_imu else None,
        joint_effort=run.joint_effort,
    )


def stream_for_run(run: SimulatedRun, shape: Any = None, *, wrench: Any = None, robot: str | RobotSpec | None = None,
                   **overrides: Any) -> Any:
    """Return the stream the node would build for ``run``.

    :func:`~payload_estimator.pipeline.build.build_stream` of :func:`settings_for_run` with
    ``overrides``, the payload's ``shape`` for the estimators that need one.

    ``wrench``: a wrench source's spec in place of the settings' (e.g. a
    :class:`~payload_estimator.pipeline.sources.joint_effort.JointEfforts` with a calibration held in memory);
    ``robot``: the arm's spec when it is no built-in robot (:func:`settings_for_run`).
    """
    from dataclasses import replace

    from payload_estimator.pipeline.build import build_estimator, build_stream, stream_config
    from payload_estimator.pipeline.stream import EstimationStream

    settings = settings_for_run(run, robot, **overrides)
    if wrench is None:
        return build_stream(settings, run.urdf, shape=shape)
    config = replace(stream_config(settings, run.urdf), wrench_source=wrench)
    return EstimationStream(config, build_estimator(settings, shape))


def known_payload_recording(run: SimulatedRun, kinematics: Any) -> dict[str, Any]:
    """``calibrate_arm``'s ``loaded`` and ``loaded_torques`` from a run of the arm holding a payload known exactly.

    What ``calibrate --known-payload-bag BAG --known-payload truth`` reads from a simulated bag: the run's joint
    states and the torques its payload (the run's truth) puts on the joints of ``kinematics`` (the arm's, the
    flange its sensor frame)."""
    from payload_estimator.pipeline.arm_dynamics import joint_recording
    from payload_estimator.pipeline.joint_torques import payload_torques

    known = joint_recording(run.joint_t, run.joint_q, run.joint_effort)
    return {"loaded": known, "loaded_torques": payload_torques(kinematics, known.q, known.dq, known.ddq,
                                                               run.payload_phi)}
