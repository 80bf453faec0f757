"""The robot's own estimate of the external wrench (Franka's ``O_F_ext_hat_K`` and ``K_F_ext_hat_K``).

libfranka estimates the wrench at its stiffness frame ``K`` from the joint torques and its model, with
the sign of the wrench the robot applies to the environment (-1 in our convention,
:mod:`payload_estimator.pipeline.wrench`). It is read as a wrench message
(:class:`~payload_estimator.pipeline.sources.measured_wrench.MeasuredWrench`) without a range check.
"""

from __future__ import annotations

from payload_estimator.pipeline.sources.measured_wrench import MeasuredWrench
from payload_estimator.pipeline.wrench import WrenchConvention

__all__ = ["franka_base_wrench", "franka_stiffness_wrench"]


def franka_base_wrench(wrench_frame: str, stiffness_frame: str) -> MeasuredWrench:
    """``O_F_ext_hat_K``: components in the base frame ``wrench_frame``, torque about ``stiffness_frame``."""
    return MeasuredWrench(WrenchConvention(wrench_frame, stiffness_frame, -1.0))


def franka_stiffness_wrench(wrench_frame: str) -> MeasuredWrench:
    """``K_F_ext_hat_K``: components in and torque about the stiffness frame ``wrench_frame``."""
    return MeasuredWrench(WrenchConvention(wrench_frame, None, -1.0))
