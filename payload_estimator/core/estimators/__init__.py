"""Estimators of the ten inertial parameters, all over sufficient statistics."""

from payload_estimator.core.estimators.base import Estimator, InsufficientData
from payload_estimator.core.estimators.least_squares import (
    OrdinaryLeastSquares,
    WeightedLeastSquares,
)
from payload_estimator.core.estimators.pmd import PointMassDiscretization
from payload_estimator.core.estimators.rls import RecursiveLeastSquares
from payload_estimator.core.estimators.rtls import RecursiveTotalLeastSquares

METHODS = ("ols", "wls", "rls", "rtls", "pmd")
"""Names accepted by :func:`make_estimator`."""

__all__ = [
    "Estimator",
    "InsufficientData",
    "OrdinaryLeastSquares",
    "WeightedLeastSquares",
    "RecursiveLeastSquares",
    "RecursiveTotalLeastSquares",
    "PointMassDiscretization",
    "METHODS",
    "make_estimator",
]


def make_estimator(method: str, points_in_sensor=None, bias: bool = False, **options) -> Estimator:
    """Build an estimator by name; ``pmd`` needs ``points_in_sensor`` (n, 3)."""
    method = method.lower()
    if method == "ols":
        return OrdinaryLeastSquares(bias=bias, **options)
    if method == "wls":
        return WeightedLeastSquares(bias=bias, **options)
    if method == "rls":
        return RecursiveLeastSquares(bias=bias, **options)
    if method == "rtls":
        return RecursiveTotalLeastSquares(bias=bias, **options)
    if method == "pmd":
        if points_in_sensor is None:
            raise ValueError("pmd needs point-mass positions (a shape or a points file)")
        return PointMassDiscretization(points_in_sensor, bias=bias, **options)
    raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
