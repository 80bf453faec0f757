"""What an :class:`~payload_estimator.pipeline.stream.EstimationStream` is told, and what it answers.

:class:`StreamConfig` describes the robot and its signals once (frozen; :mod:`payload_estimator.pipeline.build`
makes it from the settings); :class:`StreamEstimate` is an estimate with what the stream knows about it.
Units SI, angles in radians; frames are named as in the robot description.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from payload_estimator.core.convergence import ConvergenceCriteria
from payload_estimator.core.inertia import InertialParameters
from payload_estimator.core.results import Estimate
from payload_estimator.core.samples import STANDARD_GRAVITY
from payload_estimator.core.tracking import TrackingState
from payload_estimator.errors import ConfigurationError
from payload_estimator.pipeline.sources.joint_motion import JointKinematics
from payload_estimator.pipeline.sources.measured_wrench import MeasuredWrench
from payload_estimator.pipeline.sources.strategies import MotionSpec, WrenchSpec
from payload_estimator.pipeline.wrench import WrenchConvention

__all__ = ["StreamConfig", "StreamEstimate"]


@dataclass(frozen=True)
class StreamConfig:
    """Everything the stream needs to know about the robot and its signals.

    Attributes:
        urdf: the robot description (URDF XML).
        sensor_frame: frame the estimate is expressed in (the F/T sensor's
            measurement frame, or the flange when the wrench is the robot's estimate).
        joint_names: the arm joints to use; None: every 1-DoF joint of the URDF.
        extra_frames: frames the URDF lacks, each ``(name, parent, xyz, rpy)``
            (m, rad; e.g. from tf2 or the configuration), added before anything else.
        flange_frame: frame of the robot's load interface (Franka ``SetLoad``,
            xArm ``set_tcp_load``); None: the sensor frame.
        wrench_source: where the payload's wrench comes from (:mod:`payload_estimator.pipeline.sources`);
            None: an F/T sensor in the sensor frame, sign +1, no range check.
        motion_source: where the sensor frame's motion comes from; None: joint kinematics.
        use_joint_velocities: filter the driver's joint velocities instead of
            differentiating positions (when they are usable).
        R_world_base: orientation of the robot base in the world (tilted or wall mounts).
        gravity: magnitude of gravity, m/s².
        rate_hz: rate of the common time grid the streams are aligned to, Hz.
        cutoff_hz: cutoff of the low-pass applied to every signal, Hz.
        filter_order: Butterworth order of that low-pass.
        estimator_rate_hz: rate at which filtered samples enter the estimator, Hz.
        max_gap_s, reorder_window_s, clock_jump_s: alignment rules (see
            :class:`~payload_estimator.pipeline.align.StreamAligner`).
        stale_after_s: a stream silent this long is reported stale.
        zero_phase: offline mode for recordings (bags): aligned data are kept
            and, at :meth:`~payload_estimator.pipeline.stream.EstimationStream.finish`, filtered forward and
            backward (no phase lag at all) and differentiated with central differences;
            the estimator sees nothing before ``finish()``.
        min_samples: samples the estimator needs before an estimate is taken
            (a handful of samples gives meaningless numbers).
        convergence: what "converged" requires.
    """

    urdf: str
    sensor_frame: str
    joint_names: tuple[str, ...] | None = None
    extra_frames: tuple[tuple[str, str, tuple[float, float, float], tuple[float, float, float]], ...] = ()
    flange_frame: str | None = None
    wrench_source: WrenchSpec | None = None
    motion_source: MotionSpec | None = None
    use_joint_velocities: bool = False
    R_world_base: np.ndarray = field(default_factory=lambda: np.eye(3))
    gravity: float = STANDARD_GRAVITY
    rate_hz: float = 1000.0
    cutoff_hz: float = 10.0
    filter_order: int = 4
    estimator_rate_hz: float = 100.0
    max_gap_s: float = 0.05
    reorder_window_s: float = 0.02
    clock_jump_s: float = 1.0
    stale_after_s: float = 0.5
    zero_phase: bool = False
    min_samples: int = 20
    convergence: ConvergenceCriteria = field(default_factory=ConvergenceCriteria)

    def __post_init__(self) -> None:
        if self.wrench_source is None:
            object.__setattr__(self, "wrench_source",
                               MeasuredWrench(WrenchConvention(self.sensor_frame, None, 1.0)))
        if self.motion_source is None:
            object.__setattr__(self, "motion_source", JointKinematics())
        if not 0 < self.cutoff_hz < self.rate_hz / 2:
            raise ConfigurationError("cutoff_hz must be between 0 and half of rate_hz")
        if not 0 < self.estimator_rate_hz <= self.rate_hz:
            raise ConfigurationError("estimator_rate_hz must be in (0, rate_hz]")

    @property
    def wrench(self) -> WrenchSpec:
        """The wrench source's spec (never None once made)."""
        assert self.wrench_source is not None
        return self.wrench_source

    @property
    def motion(self) -> MotionSpec:
        """The motion source's spec (never None once made)."""
        assert self.motion_source is not None
        return self.motion_source


@dataclass(frozen=True)
class StreamEstimate:
    """An estimate with what the stream knows about it.

    Attributes:
        estimate: the estimator's result, in the sensor frame.
        t: time of the newest sample in it, s (on the input stamps' clock).
        converged: whether the convergence monitor accepts it; ``reason`` says why not.
        params_in_flange: the parameters in the flange frame.
        mass_com_converged: whether mass and COM alone have converged (the same as ``converged``
            when the criteria leave the inertia out).
        tracking: the payload tracker's state when the estimator follows the payload, else None.
    """

    estimate: Estimate
    t: float
    converged: bool
    reason: str
    params_in_flange: InertialParameters
    mass_com_converged: bool = False
    tracking: TrackingState | None = None
