"""What the estimation stream asks of a wrench source and of a motion source.

The stream (:class:`~payload_estimator.pipeline.stream.EstimationStream`) reads joint states and
whatever else its two sources need, aligns them on one grid and filters every signal with the same
causal low-pass, so that the phase lags cancel. Two strategies, chosen once from the settings in
:mod:`payload_estimator.pipeline.build`, say the rest:

* a :class:`WrenchInput` turns its raw signal (a wrench message, or the joint states' efforts) into
  the payload's wrench on the sensor frame ``S``, with its information;
* a :class:`MotionInput` gives the sensor frame's angular velocity, angular acceleration and linear
  acceleration (joint kinematics, or an IMU).

Each comes as a frozen *spec* (part of :class:`~payload_estimator.pipeline.stream_config.StreamConfig`,
made from the settings) whose ``create`` makes the strategy for one stream. A strategy never raises on
bad input: it drops and counts it in :class:`~payload_estimator.pipeline.health.InputHealth`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:
    from payload_estimator.pipeline.health import InputHealth
    from payload_estimator.pipeline.kinematics import SensorKinematics, SensorMotion

__all__ = ["JOINTS", "WRENCH", "IMU", "WrenchInput", "WrenchSpec", "MotionInput", "MotionSpec"]

JOINTS, WRENCH, IMU = "joint_states", "wrench", "imu"
"""Input stream names, as they appear in diagnostics."""


class WrenchInput(ABC):
    """The payload's wrench from one kind of source, for one stream.

    Attributes:
        reads_wrench: a wrench message stream is an input (:data:`WRENCH`, six channels).
        needs_efforts: every joint state must carry an effort per arm joint.
        compensates_kinematic_noise: its samples take the errors-in-variables compensation of the
            accelerations' noise (the analytic Gram assumes the wrench's six channels unmixed).
    """

    reads_wrench: bool = True
    needs_efforts: bool = False
    compensates_kinematic_noise: bool = True

    @abstractmethod
    def channels(self, n_joints: int) -> int:
        """Width of the raw signal that is filtered beside the joint positions."""

    def admit_frame(self, frame_id: str, n: int, health: InputHealth) -> bool:
        """Tell whether a batch of ``n`` wrench messages in ``frame_id`` is for it (else dropped and counted).

        Only called when :attr:`reads_wrench`."""
        return True

    def in_range(self, w: np.ndarray, health: InputHealth) -> np.ndarray:
        """(N,) which wrench samples (N, 6), finite, are within the source's range (the others counted)."""
        return np.ones(len(w), dtype=bool)

    @abstractmethod
    def raw_signal(self, q_raw: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Return the signal to filter, (N, :meth:`channels`).

        Made from the aligned source values (a wrench as the source reports it, or the efforts)
        and the raw joint positions ``q_raw`` at the same instants."""

    @abstractmethod
    def sample_wrench(
        self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray, filtered: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """Return the samples' wrench on ``S`` (N, 6) and the square root of its information (N, 6, 6).

        The information is None for a wrench measured channel by channel. Both come from the
        filtered joint states and the filtered signal."""

    def caveats(self) -> list[str]:
        """One line per way the samples so far went beyond what the source's model knows (none by default)."""
        return []

    def refusal(self) -> str:
        """One line when the samples so far show the source's input is not what it reads; "" by default.

        A refusal stops the estimates (the stream gives none) until the input is fixed."""
        return ""


class WrenchSpec(Protocol):
    """A wrench source's configuration; ``create`` makes its :class:`WrenchInput` for a stream.

    ``model_error``: whether its wrench carries a model's error (joint torques less a calibrated arm model),
    residuals correlated with the pose and the speed over seconds, which a payload tracker judges changes
    against (:attr:`~payload_estimator.core.tracking.PayloadTracker.model_error`)."""

    @property
    def model_error(self) -> bool:
        """Whether the wrench carries a model's error (class docstring)."""
        ...

    def create(self, kinematics: SensorKinematics, sensor_frame: str) -> WrenchInput:
        """The strategy for a stream whose sensor frame ``sensor_frame`` is in ``kinematics``."""
        ...


class MotionInput(ABC):
    """The sensor frame's motion from one kind of source, for one stream.

    Attributes:
        stream: the input stream it reads besides the joint states (six channels), or None.
        compensates_kinematic_noise: the accelerations come from differentiated joint positions, whose
            noise the estimator compensates (errors in variables).
        supports_zero_phase: it can be filtered forward and backward over a whole recording.
    """

    stream: str | None = None
    compensates_kinematic_noise: bool = True
    supports_zero_phase: bool = True

    def reset(self) -> None:  # noqa: B027 (stateless sources have nothing to forget)
        """Forget the filter state (a discontinuity of the grid)."""

    def admit(self, frame_id: str, n: int, health: InputHealth) -> bool:
        """Whether a batch of ``n`` messages in ``frame_id`` is for it (else dropped and counted)."""
        return True

    def advance(self, t: np.ndarray, q_raw: np.ndarray, values: np.ndarray | None) -> object:
        """Run a whole segment of the grid through its own filters; return what :meth:`motion` picks from.

        Every segment is run, even one whose rows are all held back.

        Args:
            t: (N,) grid times of the segment, s.
            q_raw: (N, n) raw joint positions at ``t``.
            values: (N, 6) this source's aligned stream at ``t``, or None without one.
        """
        return None

    @abstractmethod
    def motion(self, advanced: object, joints: SensorMotion, keep: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return ``(ang_vel, ang_acc, lin_acc)`` in ``S`` of the rows ``keep`` selects.

        ``keep`` selects among the segment's filtered rows; ``joints`` is the joint kinematics of
        those rows, filtered like everything else."""


class MotionSpec(Protocol):
    """A motion source's configuration; ``create`` makes its :class:`MotionInput` for a stream."""

    def create(self, kinematics: SensorKinematics, sensor_frame: str, rate_hz: float, cutoff_hz: float,
               order: int, gravity: float) -> MotionInput:
        """The strategy for a stream filtering at ``cutoff_hz`` (Butterworth ``order``) on a ``rate_hz`` grid."""
        ...
