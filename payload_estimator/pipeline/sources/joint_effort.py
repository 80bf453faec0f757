"""No wrist sensor: the payload's wrench from the joint states' efforts.

The efforts are filtered like the joint positions (so their phase lags match), then the unloaded arm's
own torques (:class:`~payload_estimator.pipeline.arm_dynamics.ArmDynamics`: its description, or its
calibration) are taken away and the rest is mapped through the sensor frame's Jacobian into a wrench
with its information (:class:`~payload_estimator.pipeline.joint_torques.JointTorqueWrench`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from payload_estimator.errors import ConfigurationError
from payload_estimator.pipeline.arm_dynamics import ArmCalibration, ArmDynamics
from payload_estimator.pipeline.effort_check import effort_check_ratios, effort_ratio_from_sums, effort_ratio_sums
from payload_estimator.pipeline.joint_torques import JointTorqueWrench, torques_from_efforts
from payload_estimator.pipeline.sources.strategies import WrenchInput

if TYPE_CHECKING:
    from payload_estimator.pipeline.kinematics import SensorKinematics

__all__ = ["JointEfforts", "JointEffortInput"]


@dataclass(frozen=True)
class JointEfforts:
    """The joint-torque source's configuration.

    Attributes:
        calibration: the unloaded arm's calibration; None: the description's inertias and no friction.
        effort_std: (n,) effort noise per joint, N·m, the joints' weights; None: the calibration's residual.
        joint_space_rows: the efforts enter as joint-space rows (True, always but to compare), or as the
            plain pseudo-inverse wrench.
    """

    calibration: ArmCalibration | None = None
    effort_std: tuple[float, ...] | None = None
    joint_space_rows: bool = True
    effort_unit: str = "torque"
    torque_constants: tuple[float, ...] = ()
    model_error: ClassVar[bool] = True
    """The efforts less the calibrated arm: what the arm model does not fit stays in the wrench."""

    def create(self, kinematics: SensorKinematics, sensor_frame: str) -> JointEffortInput:
        """The strategy for a stream whose kinematics' sensor frame is the estimate's.

        Raises:
            ConfigurationError: efforts in units the settings cannot convert (:func:`torques_from_efforts`).
        """
        dynamics = ArmDynamics(kinematics, self.calibration)
        std = None if self.effort_std is None else np.asarray(self.effort_std, dtype=float)
        calibrated = bool(self.calibration is not None and self.calibration.info.get("effort_scale_calibrated"))
        if self.calibration is not None:  # its scales are relative to the efforts as it converted them
            unit = self.calibration.info.get("effort_unit", "torque")
            constants = [float(v) for v in self.calibration.info.get("torque_constants", [])]
            if unit != self.effort_unit or constants != [float(v) for v in self.torque_constants]:
                raise ConfigurationError(
                    f"the arm calibration was made with effort_unit {unit} and torque_constants {constants}, the "
                    f"settings have {self.effort_unit} and {list(self.torque_constants)}: set them alike, or "
                    "calibrate again")
        # the settings checked once, on a row of zeros
        torques_from_efforts(np.zeros((1, kinematics.n_joints)), self.effort_unit, self.torque_constants,
                             scale_calibrated=calibrated)
        return JointEffortInput(JointTorqueWrench(dynamics, std, self.joint_space_rows), self.effort_unit,
                                self.torque_constants, calibrated)


class JointEffortInput(WrenchInput):
    """The efforts of the joint states, less the unloaded arm's torques, as a wrench with its information."""

    reads_wrench = False
    needs_efforts = True
    compensates_kinematic_noise = False  # whitened per sample: the analytic errors-in-variables Gram is not theirs

    def __init__(self, torque_wrench: JointTorqueWrench, effort_unit: str = "torque",
                 torque_constants: tuple[float, ...] = (), scale_calibrated: bool = False) -> None:
        self.torque_wrench = torque_wrench
        self.effort_unit, self.torque_constants, self.scale_calibrated = effort_unit, torque_constants, scale_calibrated
        speed_range = torque_wrench.dynamics.speed_range
        self.speed_range = None if speed_range is None else np.asarray(speed_range, dtype=float)
        n = torque_wrench.dynamics.n_joints
        self.samples = 0
        self.beyond = np.zeros(n, dtype=np.int64)  # samples faster than the calibration saw, per joint
        self.fastest = np.zeros(n)  # rad/s, the fastest |speed| per joint
        self.ratio_sums = np.zeros((6, n))  # the efforts against the model's torques (effort_ratio_sums)

    def channels(self, n_joints: int) -> int:
        """One effort per joint."""
        return n_joints

    def raw_signal(self, q_raw: np.ndarray, values: np.ndarray) -> np.ndarray:
        """The efforts (N, n) as torques at the joints (:func:`torques_from_efforts`)."""
        return torques_from_efforts(values, self.effort_unit, self.torque_constants,
                                    scale_calibrated=self.scale_calibrated)

    def sample_wrench(
        self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray, filtered: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """The wrench the filtered efforts imply, with its information."""
        tw = self.torque_wrench(q, dq, ddq, filtered)
        if len(dq):  # the efforts (corrected) against the arm model's torques: the payload's are in them
            corrected = self.torque_wrench.dynamics.corrected_effort(filtered)
            self.ratio_sums += effort_ratio_sums(corrected - tw.payload_torques, corrected)
        if self.speed_range is not None and len(dq):
            self.samples += len(dq)
            margin = CALIBRATED_SPEED_MARGIN
            beyond = (dq < margin * self.speed_range[0]) | (dq > margin * self.speed_range[1])
            self.beyond += np.count_nonzero(beyond, axis=0)
            self.fastest = np.maximum(self.fastest, np.abs(dq).max(axis=0))
        return tw.wrench_in_sensor, tw.information_sqrt

    def refusal(self) -> str:
        """The efforts' check on the samples so far, in one line: currents read as N·m, or a sign flipped.

        :func:`effort_check_ratios` of the corrected efforts against the arm model's torques; not their scale (the
        payload's torques are in the efforts). "" while they look like torques or the samples do not yet tell
        (:data:`EFFORT_CHECK_SAMPLES`)."""
        if self.ratio_sums[0, 0] < EFFORT_CHECK_SAMPLES:
            return ""
        ratio, determined = effort_ratio_from_sums(self.ratio_sums, centred=False)
        # the payload's torques are in the efforts and add to the arm's: a ratio above 1 is no sign of other units
        line = effort_check_ratios(np.minimum(ratio, 1.0), determined,
                                   self.torque_wrench.dynamics.kinematics.joint_names)
        return line or ""

    def caveats(self) -> list[str]:
        """The joints that moved faster than the arm calibration saw, in one line.

        Named when beyond its recording's speeds (by :data:`CALIBRATED_SPEED_MARGIN`) in more than
        :data:`EXTRAPOLATED_SHARE` of the samples: their friction is extrapolated there. None when none did."""
        if self.speed_range is None or not self.samples:
            return []
        share = self.beyond / self.samples
        names = self.torque_wrench.dynamics.kinematics.joint_names
        joints = [f"{names[j]} ({100 * share[j]:.0f} % of the samples, up to {self.fastest[j]:.2f} rad/s, the "
                  f"calibration {max(-self.speed_range[0][j], self.speed_range[1][j]):.2f})"
                  for j in np.flatnonzero(share > EXTRAPOLATED_SHARE)]
        if not joints:
            return []
        return [f"faster than the arm calibration's recording: {', '.join(joints)}; their friction is extrapolated "
                "there: calibrate on a motion as fast (excite --for calibration)"]


EFFORT_CHECK_SAMPLES = 200
"""Samples (2 s at the default estimator rate, 100 Hz) before :meth:`JointEffortInput.refusal` judges the efforts
(and then only the joints whose ratio the samples determine: :func:`effort_ratio_from_sums`)."""
CALIBRATED_SPEED_MARGIN = 1.2
"""A joint moving faster than this times the fastest speed of the calibration's recording (that direction) is
beyond what the calibration saw: its friction there is extrapolated."""
EXTRAPOLATED_SHARE = 0.05
"""The share of the samples beyond the calibrated speeds from which :meth:`JointEffortInput.caveats` names a
joint (a motion's peaks a little beyond are harmless; a motion mostly beyond is not)."""
