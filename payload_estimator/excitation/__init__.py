"""Identification motions: limits, designed motions and the checks before a robot moves.

What the robot may do, a motion designed for the payload's parameters, and the checks every
motion passes before it is sent to a robot.

* :mod:`~payload_estimator.excitation.limits`: :class:`ArmLimits` (the joints' limits) and
  :class:`MotionLimits` (one motion's bounds), :func:`flange_kinematics`;
* :mod:`~payload_estimator.excitation.check`: :func:`check_trajectory`, every constraint on the
  sampled trajectory;
* :mod:`~payload_estimator.excitation.design`: :func:`design_excitation` (a Fourier-series
  motion maximising the information about the ten parameters), made of
  :mod:`~payload_estimator.excitation.fourier` (:class:`FourierExcitation`, the motion),
  :mod:`~payload_estimator.excitation.information` (the Fisher information and
  :func:`predict_uncertainty`) and :mod:`~payload_estimator.excitation.search` (the search for
  the most informative admissible coefficients);
* :mod:`~payload_estimator.excitation.calibration`: :func:`design_calibration_motion` (the same
  family, maximising what a calibration of the unloaded arm learns: its inertial parameters and
  joint friction) and :func:`arm_information`.
"""

from payload_estimator.excitation.calibration import (
    ArmInformation,
    CalibrationMotion,
    arm_information,
    calibration_limits,
    design_calibration_motion,
)
from payload_estimator.excitation.check import CHECK_RATE_HZ, TrajectoryCheck, check_trajectory, trajectory_grid
from payload_estimator.excitation.design import (
    ExcitationDesign,
    FourierExcitation,
    PredictedUncertainty,
    design_excitation,
    information_matrix,
    nominal_payload,
    predict_uncertainty,
    scaled_condition_number,
)
from payload_estimator.excitation.limits import ArmLimits, ExcitationError, MotionLimits, flange_kinematics

__all__ = [
    "ArmLimits",
    "MotionLimits",
    "ExcitationError",
    "flange_kinematics",
    "TrajectoryCheck",
    "check_trajectory",
    "trajectory_grid",
    "CHECK_RATE_HZ",
    "FourierExcitation",
    "ExcitationDesign",
    "PredictedUncertainty",
    "design_excitation",
    "predict_uncertainty",
    "information_matrix",
    "scaled_condition_number",
    "nominal_payload",
    "ArmInformation",
    "CalibrationMotion",
    "arm_information",
    "calibration_limits",
    "design_calibration_motion",
]
