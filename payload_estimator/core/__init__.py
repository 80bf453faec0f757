"""The ROS-free estimation core: samples -> regressor -> statistics -> estimators -> estimates."""

from payload_estimator.core.inertia import InertialParameters, check_physical_consistency
from payload_estimator.core.results import Estimate
from payload_estimator.core.samples import STANDARD_GRAVITY, SensorSamples

__all__ = [
    "Estimate",
    "InertialParameters",
    "check_physical_consistency",
    "SensorSamples",
    "STANDARD_GRAVITY",
]
