"""The unloaded arm's own joint torques, and their calibration from a recording of it.

The model (:class:`ArmDynamics`: rigid-body dynamics linear in every body's inertial parameters,
viscous and Coulomb friction, an offset and an effort scale per joint) and the parameters it
reads (:class:`ArmCalibration`) are in :mod:`~payload_estimator.pipeline.arm_model`; the fit of
those parameters to a recording of the arm without payload (:func:`calibrate_arm`, a maximum a
posteriori estimate around the robot description) is in
:mod:`~payload_estimator.pipeline.arm_calibration`. Both are importable from here.

Units SI: N·m, rad, rad/s, N·m·s/rad, kg, m, kg·m².
"""

from __future__ import annotations

from payload_estimator.pipeline.arm_calibration import (
    SHAPE_PRIOR_STD,
    ArmPrior,
    CalibrationFit,
    JointRecording,
    calibrate_arm,
    joint_recording,
    residual_rms,
)
from payload_estimator.pipeline.arm_model import (
    CALIBRATION_FORMAT,
    COULOMB_VELOCITIES,
    ArmCalibration,
    ArmDynamics,
    body_is_consistent,
    friction_regressor,
)
from payload_estimator.pipeline.effort_check import effort_check_line

__all__ = [
    "ArmCalibration",
    "ArmDynamics",
    "ArmPrior",
    "CalibrationFit",
    "JointRecording",
    "calibrate_arm",
    "effort_check_line",
    "joint_recording",
    "friction_regressor",
    "residual_rms",
    "COULOMB_VELOCITIES",
    "CALIBRATION_FORMAT",
    "SHAPE_PRIOR_STD",
    "body_is_consistent",
]
